//! The guard's settings, from the environment the host gives each instance
//! (`wasi:cli/environment`; `wasmtime serve --env`, a runtime's manifest). Read on every
//! request: an instance serves one request, so there is nothing to cache.

use std::fmt;

/// One upstream: the scheme and authority requests under a path prefix go to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Upstream {
    /// `true` for `https`.
    pub https: bool,
    /// `host:port` (or `host`): also the name of this upstream's breaker.
    pub authority: String,
}

/// What the guard was told.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Path prefixes and their upstreams, longest prefix first.
    routes: Vec<(String, Upstream)>,
    /// The caller's deadline for the upstream's first byte (and for connecting and
    /// sending the body), ns.
    pub timeout: u64,
    /// How long a client has to send its request body, from the request's arrival, ns.
    pub body_timeout: u64,
    /// How far the wall clocks of the hosts that share the store may disagree, ns: time
    /// read from another host's stamp is counted this much short.
    #[cfg_attr(feature = "bare", allow(dead_code))]
    pub clock_skew: u64,
    /// The key-value bucket that holds the breakers' states.
    #[cfg_attr(feature = "bare", allow(dead_code))]
    pub bucket: String,
    /// `TRIPGATE_COSTS=1`: answers carry `x-tripgate-cost`, the time (ns) the breaker's
    /// steps took in this request (for measurements).
    #[cfg_attr(feature = "bare", allow(dead_code))]
    pub costs: bool,
    /// Breaker settings, each `None` for the core's default.
    #[cfg_attr(feature = "bare", allow(dead_code))]
    pub breaker: BreakerSettings,
}

/// The breaker settings the environment can give (the rest keep the core's defaults).
#[derive(Clone, Debug, Default)]
#[cfg_attr(feature = "bare", allow(dead_code))]
pub struct BreakerSettings {
    pub failure_threshold: Option<u32>,
    pub min_calls: Option<u32>,
    pub failure_rate: Option<u8>,
    pub window: Option<u64>,
    pub cooldown: Option<u64>,
    pub half_open_max_probes: Option<u8>,
    pub half_open_required_successes: Option<u32>,
    pub probe_timeout: Option<u64>,
    pub fault_statuses: Option<Vec<u16>>,
}

/// A setting the guard cannot use: the variable and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingError {
    pub variable: &'static str,
    pub problem: String,
}

impl fmt::Display for SettingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.variable, self.problem)
    }
}

pub const UPSTREAMS: &str = "TRIPGATE_UPSTREAMS";
const TIMEOUT_MS: &str = "TRIPGATE_TIMEOUT_MS";
const BODY_TIMEOUT_MS: &str = "TRIPGATE_BODY_TIMEOUT_MS";
const CLOCK_SKEW_MS: &str = "TRIPGATE_CLOCK_SKEW_MS";
const BUCKET: &str = "TRIPGATE_BUCKET";
const MS: u64 = 1_000_000;

impl Settings {
    /// The settings in `vars` (name, value pairs).
    pub fn from_vars(vars: &[(String, String)]) -> Result<Self, SettingError> {
        let get = |name: &str| {
            vars.iter()
                .rev()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.trim())
        };
        let routes = parse_routes(get(UPSTREAMS).ok_or_else(|| SettingError {
            variable: UPSTREAMS,
            problem: "not set: give `/prefix=http://host:port` pairs, separated by commas".into(),
        })?)?;
        // Milliseconds (more than 0 unless `zero` is allowed), in ns.
        let millis_or = |name: &'static str, zero: bool| -> Result<Option<u64>, SettingError> {
            get(name)
                .map(|value| {
                    value
                        .parse::<u64>()
                        .ok()
                        .filter(|ms| zero || *ms > 0)
                        .and_then(|ms| ms.checked_mul(MS))
                        .ok_or_else(|| SettingError {
                            variable: name,
                            problem: format!(
                                "`{value}` is not a number of milliseconds {}",
                                if zero { ">= 0" } else { "> 0" }
                            ),
                        })
                })
                .transpose()
        };
        let millis = |name: &'static str| millis_or(name, false);
        fn number<N: std::str::FromStr>(
            name: &'static str,
            value: Option<&str>,
        ) -> Result<Option<N>, SettingError> {
            value
                .map(|value| {
                    value.parse::<N>().map_err(|_| SettingError {
                        variable: name,
                        problem: format!("`{value}` is not a number in range"),
                    })
                })
                .transpose()
        }
        let fault_statuses = get("TRIPGATE_FAULT_STATUSES")
            .map(|list| {
                list.split(',')
                    .map(|status| {
                        status.trim().parse::<u16>().map_err(|_| SettingError {
                            variable: "TRIPGATE_FAULT_STATUSES",
                            problem: format!("`{status}` is not an HTTP status"),
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        let breaker = BreakerSettings {
            failure_threshold: number(
                "TRIPGATE_FAILURE_THRESHOLD",
                get("TRIPGATE_FAILURE_THRESHOLD"),
            )?,
            min_calls: number("TRIPGATE_MIN_CALLS", get("TRIPGATE_MIN_CALLS"))?,
            failure_rate: number("TRIPGATE_FAILURE_RATE", get("TRIPGATE_FAILURE_RATE"))?,
            window: millis("TRIPGATE_WINDOW_MS")?,
            cooldown: millis("TRIPGATE_COOLDOWN_MS")?,
            half_open_max_probes: number("TRIPGATE_PROBES", get("TRIPGATE_PROBES"))?,
            half_open_required_successes: number("TRIPGATE_SUCCESSES", get("TRIPGATE_SUCCESSES"))?,
            probe_timeout: millis("TRIPGATE_PROBE_TIMEOUT_MS")?,
            fault_statuses,
        };
        Ok(Settings {
            routes,
            timeout: millis(TIMEOUT_MS)?.unwrap_or(1_000 * MS),
            body_timeout: millis(BODY_TIMEOUT_MS)?.unwrap_or(10_000 * MS),
            clock_skew: millis_or(CLOCK_SKEW_MS, true)?.unwrap_or(0),
            bucket: get(BUCKET).unwrap_or("tripgate").to_owned(),
            costs: get("TRIPGATE_COSTS") == Some("1"),
            breaker,
        })
    }

    /// The upstream for a request path: the longest prefix that matches.
    pub fn route(&self, path: &str) -> Option<&Upstream> {
        self.routes
            .iter()
            .find(|(prefix, _)| path.starts_with(prefix.as_str()))
            .map(|(_, upstream)| upstream)
    }
}

fn parse_routes(value: &str) -> Result<Vec<(String, Upstream)>, SettingError> {
    let bad = |problem: String| SettingError {
        variable: UPSTREAMS,
        problem,
    };
    let mut routes = Vec::new();
    for pair in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (prefix, url) = pair
            .split_once('=')
            .ok_or_else(|| bad(format!("`{pair}` is not `/prefix=http://host:port`")))?;
        let prefix = prefix.trim();
        if !prefix.starts_with('/') {
            return Err(bad(format!(
                "the prefix `{prefix}` does not start with `/`"
            )));
        }
        let url = url.trim();
        let (https, rest) = if let Some(rest) = url.strip_prefix("http://") {
            (false, rest)
        } else if let Some(rest) = url.strip_prefix("https://") {
            (true, rest)
        } else {
            return Err(bad(format!(
                "`{url}` does not start with http:// or https://"
            )));
        };
        let authority = rest.trim_end_matches('/');
        if authority.is_empty() || authority.contains(['/', '?', '#', '@', ' ']) {
            return Err(bad(format!(
                "`{url}` must be a scheme and an authority only (no path, no user)"
            )));
        }
        routes.push((
            prefix.to_owned(),
            Upstream {
                https,
                authority: authority.to_owned(),
            },
        ));
    }
    if routes.is_empty() {
        return Err(bad("names no upstream".into()));
    }
    routes.sort_by_key(|(prefix, _)| std::cmp::Reverse(prefix.len()));
    Ok(routes)
}
