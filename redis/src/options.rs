//! A process's options for its store: validated up front, with errors that name the
//! option. The bounds are the core's (`tripgate_core::fleet::options`), so every adapter
//! refuses the same values.

use std::fmt;
use std::time::Duration;

use redis::{ConnectionInfo, IntoConnectionInfo};
use tripgate_core::fleet::options::{FleetOption, MIN_KEY_BYTES};
use tripgate_core::fleet::wire;
use tripgate_core::Nanos;

/// Where the fleets live, and how a process takes part in them. Only the address has no
/// default.
///
/// ```
/// use tripgate_redis::Options;
/// let options = Options::new("redis://127.0.0.1:6379")
///     .key(b"a shared secret of 32 bytes!!!!")
///     .member("checkout-7f9c");
/// assert!(options.validate().is_ok());
/// let refused = Options::new("redis://127.0.0.1:6379/2").validate().unwrap_err();
/// assert_eq!(refused.option, "url");
/// ```
#[derive(Clone)]
pub struct Options {
    /// One server, or a cluster's nodes.
    pub(crate) target: Target,
    /// The shared HMAC key: with one, messages and votes are signed, and unsigned or
    /// forged ones ignored. At least 16 bytes.
    pub key: Option<Vec<u8>>,
    /// This process's stable name in its fleets (a pod or host name): its id is derived
    /// from it, so a member that restarts keeps its trip vote instead of casting a second
    /// one. Default: a random id per process.
    pub member: Option<String>,
    /// How often each member reads its fleet's state back from the keys (pub/sub drops
    /// messages while a process is disconnected). Default 1 s; 10 ms – 1 h.
    pub reconcile_interval: Duration,
    /// A store command that takes longer than this makes the process's members degraded.
    /// Default 250 ms; 1 ms – 60 s.
    pub store_timeout: Duration,
    /// The longest wait between reconnection attempts (from 10 ms, doubling). Default
    /// 1 s; 10 ms – 60 s.
    pub max_backoff: Duration,
    /// For `rediss://` (feature `tls`): the PEM certificate of the CA that signed the
    /// server's, when the webpki roots do not trust it (a private CA).
    pub tls_root_cert: Option<Vec<u8>>,
}

/// The store's address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// `redis://…`: one server (or a proxy in front of several).
    Server(String),
    /// A Redis Cluster's seed nodes: keys go to their slot's master, events over sharded
    /// pub/sub (`SPUBLISH`/`SSUBSCRIBE`).
    Cluster(Vec<String>),
}

impl fmt::Debug for Options {
    /// The key and the URL's password stay out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let urls: Vec<String> = self.urls().iter().map(|url| redact(url)).collect();
        f.debug_struct("Options")
            .field("urls", &urls)
            .field("cluster", &matches!(self.target, Target::Cluster(_)))
            .field("key", &self.key.as_ref().map(|_| "<set>"))
            .field("member", &self.member)
            .field("reconcile_interval", &self.reconcile_interval)
            .field("store_timeout", &self.store_timeout)
            .field("max_backoff", &self.max_backoff)
            .field("tls_root_cert", &self.tls_root_cert.as_ref().map(Vec::len))
            .finish()
    }
}

fn default_of(option: FleetOption) -> Duration {
    let ns = option.bounds().map_or(0, |(default, _, _)| default);
    Duration::from_nanos(ns)
}

impl Options {
    /// One Redis server at `url` (`redis://[user:password@]host:port`, `rediss://…` with
    /// feature `tls`, `redis+unix:///path`), database 0.
    pub fn new(url: impl Into<String>) -> Self {
        Self::at(Target::Server(url.into()))
    }

    /// A Redis Cluster, reached through any of `nodes` (URLs as for [`Self::new`]).
    pub fn cluster<S: Into<String>>(nodes: impl IntoIterator<Item = S>) -> Self {
        Self::at(Target::Cluster(nodes.into_iter().map(Into::into).collect()))
    }

    fn at(target: Target) -> Self {
        Self {
            target,
            key: None,
            member: None,
            reconcile_interval: default_of(FleetOption::ReconcileInterval),
            store_timeout: default_of(FleetOption::StoreTimeout),
            max_backoff: default_of(FleetOption::MaxBackoff),
            tls_root_cert: None,
        }
    }

    /// With a shared HMAC key.
    pub fn key(mut self, key: impl AsRef<[u8]>) -> Self {
        self.key = Some(key.as_ref().to_vec());
        self
    }

    /// With a stable member name.
    pub fn member(mut self, name: impl Into<String>) -> Self {
        self.member = Some(name.into());
        self
    }

    /// With another reconcile interval.
    pub fn reconcile_interval(mut self, interval: Duration) -> Self {
        self.reconcile_interval = interval;
        self
    }

    /// With another store timeout.
    pub fn store_timeout(mut self, timeout: Duration) -> Self {
        self.store_timeout = timeout;
        self
    }

    /// With another cap on the reconnection backoff.
    pub fn max_backoff(mut self, backoff: Duration) -> Self {
        self.max_backoff = backoff;
        self
    }

    /// With a private CA's PEM certificate for `rediss://`.
    pub fn tls_root_cert(mut self, pem: impl AsRef<[u8]>) -> Self {
        self.tls_root_cert = Some(pem.as_ref().to_vec());
        self
    }

    pub(crate) fn urls(&self) -> &[String] {
        match &self.target {
            Target::Server(url) => std::slice::from_ref(url),
            Target::Cluster(nodes) => nodes,
        }
    }

    /// The first option that breaks its rule.
    pub fn validate(&self) -> Result<(), OptionError> {
        let fail = |option, rule: String| Err(OptionError { option, rule });
        if self.urls().is_empty() {
            return fail("url", "must name at least one node".into());
        }
        for url in self.urls() {
            connection_info(url).map_err(|rule| OptionError {
                option: "url",
                rule,
            })?;
        }
        if self
            .key
            .as_ref()
            .is_some_and(|key| key.len() < MIN_KEY_BYTES)
        {
            return fail("key", format!("must be at least {MIN_KEY_BYTES} bytes"));
        }
        if let Some(member) = &self.member {
            if member.is_empty() || member.len() > 256 {
                return fail("member", "must be 1-256 bytes".into());
            }
        }
        let durations = [
            (FleetOption::ReconcileInterval, self.reconcile_interval),
            (FleetOption::StoreTimeout, self.store_timeout),
            (FleetOption::MaxBackoff, self.max_backoff),
        ];
        for (option, value) in durations {
            let ns = Nanos::try_from(value.as_nanos()).unwrap_or(Nanos::MAX);
            if let Err(e) = option.duration(Some(ns)) {
                let rule = e.to_string().replacen(option.name(), "", 1);
                return fail(field(option), rule.trim_start().to_string());
            }
        }
        if self.tls_root_cert.is_some() && !self.urls().iter().all(|u| u.starts_with("rediss://")) {
            return fail("tls_root_cert", "is only for rediss:// URLs".into());
        }
        Ok(())
    }

    /// This process's member id: from its name, else random.
    pub(crate) fn member_id(&self) -> u64 {
        self.member
            .as_deref()
            .map_or_else(random_id, wire::member_id)
    }
}

/// The option's name as [`Options`] spells its field.
fn field(option: FleetOption) -> &'static str {
    match option {
        FleetOption::Name => "name",
        FleetOption::Key => "key",
        FleetOption::ReconcileInterval => "reconcile_interval",
        FleetOption::StoreTimeout => "store_timeout",
        FleetOption::MaxBackoff => "max_backoff",
        FleetOption::Member => "member",
    }
}

/// `url` parsed, or the rule it breaks. Fleet mode runs on database 0 only: Redis
/// pub/sub ignores the database while keys do not, so fleets of one name on two databases
/// would read separate keys yet hear each other's events.
pub(crate) fn connection_info(url: &str) -> Result<ConnectionInfo, String> {
    let scheme = url.split("://").next().unwrap_or("");
    match scheme {
        "redis" | "redis+unix" | "unix" => {}
        "rediss" if cfg!(feature = "tls") => {}
        "rediss" => {
            return Err("is rediss:// (TLS), which needs tripgate-redis's `tls` feature".into())
        }
        _ => {
            return Err(format!(
                "must start with redis://, rediss:// or redis+unix:// (got {:?})",
                truncated(&redact(url))
            ))
        }
    }
    let info = url
        .into_connection_info()
        .map_err(|e| format!("does not parse: {e}"))?;
    match info.redis_settings().db() {
        0 => Ok(info),
        db => Err(format!(
            "names database {db}: fleet mode runs on database 0 only (Redis pub/sub ignores \
             the database, so fleets on two databases would hear each other); give each \
             environment its own server or fleet names"
        )),
    }
}

/// A random id (a member's without a name, a session): the system's randomness, so that
/// processes started together, or forked, never draw the same.
pub(crate) fn random_id() -> u64 {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        // No system randomness: the process id and the time are as unique as it gets.
        let pid = u64::from(std::process::id());
        let nanos = std::time::UNIX_EPOCH
            .elapsed()
            .map_or(0, |d| d.as_nanos() as u64);
        return (pid.rotate_left(32) ^ nanos).max(1);
    }
    u64::from_le_bytes(bytes).max(1)
}

/// The URL with any password replaced, for messages and logs.
pub(crate) fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    match rest.rsplit_once('@') {
        Some((credentials, host)) => {
            let user = credentials.split(':').next().unwrap_or("");
            format!("{scheme}://{user}:***@{host}")
        }
        None => url.to_string(),
    }
}

pub(crate) fn truncated(text: &str) -> String {
    text.chars().take(40).collect()
}

/// An option that breaks its rule: `Display` says which and why (`key must be …`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionError {
    /// The option, as the field of [`Options`] is named (`name` for a fleet's name).
    pub option: &'static str,
    /// The rule, in words.
    pub rule: String,
}

impl fmt::Display for OptionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.option, self.rule)
    }
}

impl std::error::Error for OptionError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn option_of(o: Options) -> &'static str {
        o.validate().map_or_else(|e| e.option, |()| "ok")
    }

    #[test]
    fn every_option_is_named() {
        let ok = || Options::new("redis://127.0.0.1:6379");
        assert_eq!(option_of(ok()), "ok");
        assert_eq!(option_of(Options::new("http://x")), "url");
        assert_eq!(option_of(Options::new("redis://[::1")), "url");
        assert_eq!(option_of(Options::new("redis://h:1/3")), "url");
        assert_eq!(option_of(Options::cluster(Vec::<String>::new())), "url");
        assert_eq!(option_of(ok().key(b"short")), "key");
        assert_eq!(option_of(ok().member("")), "member");
        assert_eq!(
            option_of(ok().reconcile_interval(Duration::ZERO)),
            "reconcile_interval"
        );
        assert_eq!(
            option_of(ok().reconcile_interval(Duration::from_secs(3601))),
            "reconcile_interval"
        );
        assert_eq!(
            option_of(ok().store_timeout(Duration::from_secs(61))),
            "store_timeout"
        );
        assert_eq!(option_of(ok().max_backoff(Duration::ZERO)), "max_backoff");
        assert_eq!(option_of(ok().tls_root_cert(b"pem")), "tls_root_cert");
        assert_eq!(option_of(Options::new("redis://u:p@127.0.0.1:1/0")), "ok");
    }

    #[test]
    fn rules_read_as_sentences() {
        let e = Options::new("redis://h:1")
            .store_timeout(Duration::ZERO)
            .validate()
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "store_timeout must be between 1 ms and 60000 ms"
        );
        let e = Options::new("redis://h:1/2").validate().unwrap_err();
        assert!(
            e.to_string()
                .starts_with("url names database 2: fleet mode runs on database 0 only"),
            "{e}"
        );
    }

    #[test]
    fn a_member_name_is_a_stable_id() {
        let a = Options::new("redis://h:1").member("pod-7");
        assert_eq!(a.member_id(), a.clone().member_id());
        assert_ne!(
            a.member_id(),
            Options::new("redis://h:1").member("pod-8").member_id()
        );
    }

    #[test]
    fn passwords_stay_out_of_messages() {
        let o = Options::new("redis://app:hunter2@127.0.0.1:6379").key(b"0123456789abcdef");
        let shown = format!("{o:?}");
        assert!(
            !shown.contains("hunter2") && !shown.contains("0123456789abcdef"),
            "{shown}"
        );
        let e = Options::new("ftp://app:hunter2@x").validate().unwrap_err();
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }
}
