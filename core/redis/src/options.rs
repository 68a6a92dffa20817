//! Joining options, validated up front with errors that name the option.

use std::fmt;
use std::time::Duration;

use crate::wire;

/// How a member joins its fleet. Only `url` and `name` have no default.
///
/// ```
/// use tripgate_redis::Options;
/// let options = Options::new("redis://127.0.0.1:6379", "payments").key(b"a shared secret of 32 bytes!!!!");
/// assert!(options.validate().is_ok());
/// assert_eq!(
///     Options::new("redis://127.0.0.1:6379", "bad name").validate().unwrap_err().option,
///     "name"
/// );
/// ```
#[derive(Clone)]
pub struct Options {
    /// `redis://[user:password@]host:port[/db]`, `rediss://…` (feature `tls`), or
    /// `redis+unix:///path/to/socket`.
    pub url: String,
    /// The fleet's name: 1–128 characters of `A–Z a–z 0–9 . _ - :`.
    pub name: String,
    /// The shared HMAC key: with one, messages are signed and unsigned or forged ones
    /// dropped. At least 16 bytes when set.
    pub key: Option<Vec<u8>>,
    /// How often the member re-reads the fleet's state from the keys (pub/sub drops
    /// messages while a member is disconnected). Default 1 s; 10 ms – 1 h.
    pub reconcile_interval: Duration,
    /// A store command that takes longer than this makes the member degraded. Default
    /// 250 ms; 1 ms – 60 s.
    pub store_timeout: Duration,
    /// How often the background task looks at the breaker for something to publish or a
    /// lease to take: the lag it adds to propagation. Default 2 ms; 100 µs – 1 s.
    pub poll_interval: Duration,
    /// Longest wait between reconnection attempts (they back off from 10 ms up to this).
    /// Default 1 s; 10 ms – 60 s.
    pub max_backoff: Duration,
    /// This member's id (16 lowercase hex digits on the wire, not 0). Default: random.
    pub member_id: Option<u64>,
    /// For `rediss://` (feature `tls`): the PEM certificate of the CA that signed the
    /// server's, when it is not one the webpki roots trust (a private CA).
    pub tls_root_cert: Option<Vec<u8>>,
}

impl fmt::Debug for Options {
    /// The key and the URL's password stay out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("url", &redact(&self.url))
            .field("name", &self.name)
            .field("key", &self.key.as_ref().map(|_| "<set>"))
            .field("reconcile_interval", &self.reconcile_interval)
            .field("store_timeout", &self.store_timeout)
            .field("poll_interval", &self.poll_interval)
            .field("max_backoff", &self.max_backoff)
            .field("member_id", &self.member_id.map(wire::member_hex))
            .field("tls_root_cert", &self.tls_root_cert.as_ref().map(Vec::len))
            .finish()
    }
}

impl Options {
    /// Options for fleet `name` on the Redis at `url`, everything else at its default.
    pub fn new(url: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            name: name.into(),
            key: None,
            reconcile_interval: Duration::from_secs(1),
            store_timeout: Duration::from_millis(250),
            poll_interval: Duration::from_millis(2),
            max_backoff: Duration::from_secs(1),
            member_id: None,
            tls_root_cert: None,
        }
    }

    /// With a private CA's PEM certificate for `rediss://`.
    pub fn tls_root_cert(mut self, pem: impl AsRef<[u8]>) -> Self {
        self.tls_root_cert = Some(pem.as_ref().to_vec());
        self
    }

    /// With a shared HMAC key.
    pub fn key(mut self, key: impl AsRef<[u8]>) -> Self {
        self.key = Some(key.as_ref().to_vec());
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

    /// With another poll interval.
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval;
        self
    }

    /// With another cap on reconnection backoff.
    pub fn max_backoff(mut self, backoff: Duration) -> Self {
        self.max_backoff = backoff;
        self
    }

    /// With a chosen member id.
    pub fn member_id(mut self, id: u64) -> Self {
        self.member_id = Some(id);
        self
    }

    /// The first option that breaks its rule.
    pub fn validate(&self) -> Result<(), OptionError> {
        let fail = |option, rule: String| Err(OptionError { option, rule });
        if !wire::valid_name(&self.name) {
            return fail(
                "name",
                format!(
                    "must be 1-128 characters of A-Z a-z 0-9 . _ - : (got {:?})",
                    truncated(&self.name)
                ),
            );
        }
        if let Err(rule) = check_url(&self.url) {
            return fail("url", rule);
        }
        if self.key.as_ref().is_some_and(|key| key.len() < 16) {
            return fail("key", "must be at least 16 bytes".into());
        }
        let within = |d: Duration, low: Duration, high: Duration| d >= low && d <= high;
        let ms = Duration::from_millis;
        if !within(self.reconcile_interval, ms(10), Duration::from_secs(3600)) {
            return fail("reconcile_interval", "must be between 10 ms and 1 h".into());
        }
        if !within(self.store_timeout, ms(1), Duration::from_secs(60)) {
            return fail("store_timeout", "must be between 1 ms and 60 s".into());
        }
        if !within(
            self.poll_interval,
            Duration::from_micros(100),
            Duration::from_secs(1),
        ) {
            return fail("poll_interval", "must be between 100 us and 1 s".into());
        }
        if !within(self.max_backoff, ms(10), Duration::from_secs(60)) {
            return fail("max_backoff", "must be between 10 ms and 60 s".into());
        }
        if self.tls_root_cert.is_some() && !self.url.starts_with("rediss://") {
            return fail("tls_root_cert", "is only for rediss:// URLs".into());
        }
        if self.member_id == Some(0) {
            return fail("member_id", "must not be 0".into());
        }
        Ok(())
    }
}

fn check_url(url: &str) -> Result<(), String> {
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
    redis::Client::open(url)
        .map(|_| ())
        .map_err(|e| format!("does not parse: {e}"))
}

/// The URL with any password replaced, for messages and logs.
fn redact(url: &str) -> String {
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

fn truncated(text: &str) -> String {
    text.chars().take(40).collect()
}

/// An option that breaks its rule: `Display` says which and why (`name must be …`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionError {
    /// The option, as the field of [`Options`] is named.
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
        let ok = || Options::new("redis://127.0.0.1:6379", "payments");
        assert_eq!(option_of(ok()), "ok");
        assert_eq!(option_of(Options::new("http://x", "payments")), "url");
        assert_eq!(option_of(Options::new("redis://[::1", "payments")), "url");
        assert_eq!(option_of(Options::new("redis://h:1", "")), "name");
        assert_eq!(option_of(ok().key(b"short")), "key");
        assert_eq!(
            option_of(ok().reconcile_interval(Duration::ZERO)),
            "reconcile_interval"
        );
        assert_eq!(
            option_of(ok().store_timeout(Duration::from_secs(61))),
            "store_timeout"
        );
        assert_eq!(
            option_of(ok().poll_interval(Duration::ZERO)),
            "poll_interval"
        );
        assert_eq!(option_of(ok().max_backoff(Duration::ZERO)), "max_backoff");
        assert_eq!(option_of(ok().member_id(0)), "member_id");
        assert_eq!(
            option_of(Options::new("redis://u:p@127.0.0.1:1/0", "a:b")),
            "ok"
        );
    }

    #[test]
    fn passwords_stay_out_of_messages() {
        let o =
            Options::new("redis://app:hunter2@127.0.0.1:6379", "payments").key(b"0123456789abcdef");
        let shown = format!("{o:?}");
        assert!(
            !shown.contains("hunter2") && !shown.contains("0123456789abcdef"),
            "{shown}"
        );
        let e = Options::new("ftp://app:hunter2@x", "p")
            .validate()
            .unwrap_err();
        assert!(!e.to_string().contains("hunter2"), "{e}");
    }
}
