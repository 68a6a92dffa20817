//! The store's side of the member protocol: one connection per process (a multiplexed
//! RESP3 connection, or a cluster connection), the fleets' channels subscribed on it, and
//! each protocol [`Command`] executed as one script or command, bounded by
//! `store-timeout` so that a slow store counts as an unreachable one.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::{AsyncConnectionConfig, Client, ErrorKind, PushInfo, RedisError, Script, Value};
use tokio::sync::mpsc::UnboundedSender;
use tripgate_core::fleet::protocol::{Command, Reply};
use tripgate_core::fleet::scripts::Script as FleetScript;
use tripgate_core::fleet::store::{self, FaultKind};
use tripgate_core::fleet::wire::Keys;

use crate::options::{connection_info, Options, Target};

/// Why a command did not get its answer.
#[derive(Debug)]
pub(crate) enum StoreError {
    /// The store is unreachable, failing or slower than `store-timeout`: the session ends.
    Down(String),
    /// The store answered, refusing what a key holds (a counter that is no integer, a key
    /// of the wrong type) or with a reply of the wrong shape: up, but holding bad data.
    Refused,
    /// An error reply, as the store wrote it (`CODE detail`), until the core reads it for
    /// the command it answers ([`StoreError::read`]).
    Reply(String),
}

pub(crate) type StoreResult<T> = Result<T, StoreError>;

impl From<RedisError> for StoreError {
    fn from(e: RedisError) -> Self {
        match (e.kind(), e.code()) {
            // A reply of a shape no script returns: the data is not ours.
            (ErrorKind::Parse | ErrorKind::UnexpectedReturnType, _) => Self::Refused,
            (ErrorKind::Server(_) | ErrorKind::Extension, Some(code)) => {
                Self::Reply(format!("{code} {}", e.detail().unwrap_or_default()))
            }
            _ => Self::Down(format!("redis: {e}")),
        }
    }
}

impl StoreError {
    /// An error reply to `command`, read by the core (`fleet::store::fault`): bad data is
    /// a refusal; a denial by the store's ACL or a store that cannot serve now is the
    /// store down, with the core's explanation.
    fn read(self, command: Option<FleetScript>) -> Self {
        match self {
            Self::Reply(text) => {
                let fault = store::fault(command, &text);
                match fault.kind {
                    FaultKind::BadData => Self::Refused,
                    FaultKind::Denied | FaultKind::Unavailable => Self::Down(fault.explanation),
                }
            }
            other => other,
        }
    }
}

/// The scripts, hashed once per process.
pub(crate) struct Scripts([Script; FleetScript::ALL.len()]);

impl Scripts {
    /// The script the core names.
    fn get(&self, script: FleetScript) -> &Script {
        let at = FleetScript::ALL.iter().position(|&s| s == script);
        &self.0[at.unwrap_or(0)]
    }

    pub(crate) fn new() -> Self {
        Self(FleetScript::ALL.map(|s| Script::new(s.source())))
    }
}

/// The connection a session runs on; cloned into each command (both kinds multiplex).
#[derive(Clone)]
pub(crate) enum Connection {
    Server(MultiplexedConnection),
    Cluster(ClusterConnection),
}

/// How a process reaches its store, built once from the options.
#[derive(Clone)]
pub(crate) enum Clients {
    Server(Box<Client>),
    Cluster(Box<redis::cluster::ClusterClient>),
}

impl Clients {
    /// The clients for `options` (validated already, so an error here is unexpected, but
    /// stays an error naming the option).
    pub(crate) fn new(options: &Options) -> Result<Self, crate::OptionError> {
        let bad = |rule: String| crate::OptionError {
            option: "url",
            rule,
        };
        let resp3 = |url: &str| {
            let info = connection_info(url).map_err(bad)?;
            let settings = info
                .redis_settings()
                .clone()
                .set_protocol(redis::ProtocolVersion::RESP3);
            Ok::<_, crate::OptionError>(info.set_redis_settings(settings))
        };
        match &options.target {
            Target::Server(url) => {
                let info = resp3(url)?;
                #[cfg(feature = "tls")]
                if let Some(pem) = &options.tls_root_cert {
                    // rustls needs a process-wide crypto provider; another may be installed.
                    let _ = rustls::crypto::ring::default_provider().install_default();
                    let certificates = redis::TlsCertificates {
                        client_tls: None,
                        root_cert: Some(pem.clone()),
                    };
                    return Client::build_with_tls(info, certificates)
                        .map(|client| Self::Server(Box::new(client)))
                        .map_err(|e| crate::OptionError {
                            option: "tls_root_cert",
                            rule: format!("does not work: {e}"),
                        });
                }
                #[cfg(feature = "tls")]
                let _ = rustls::crypto::ring::default_provider().install_default();
                Client::open(info)
                    .map(|client| Self::Server(Box::new(client)))
                    .map_err(|e| bad(format!("does not work: {e}")))
            }
            Target::Cluster(nodes) => {
                let infos = nodes
                    .iter()
                    .map(|url| resp3(url))
                    .collect::<Result<Vec<_>, _>>()?;
                redis::cluster::ClusterClientBuilder::new(infos)
                    .use_protocol(redis::ProtocolVersion::RESP3)
                    // The member reconnects on its own, with its backoff and a read back
                    // first: the client must fail fast rather than retry for long.
                    .retries(0)
                    .build()
                    .map(|client| Self::Cluster(Box::new(client)))
                    .map_err(|e| bad(format!("does not work: {e}")))
            }
        }
    }

    /// A new connection whose pushes (messages, and the news of a lost connection) go to
    /// `pushes`, within `timeout`.
    pub(crate) async fn connect(
        &self,
        pushes: UnboundedSender<PushInfo>,
        timeout: Duration,
    ) -> StoreResult<Connection> {
        match self {
            Self::Server(client) => {
                let config = AsyncConnectionConfig::new()
                    .set_connection_timeout(Some(timeout))
                    .set_response_timeout(Some(timeout))
                    .set_push_sender(pushes);
                let connect = client.get_multiplexed_async_connection_with_config(&config);
                Ok(Connection::Server(bounded(timeout, connect).await?))
            }
            Self::Cluster(client) => {
                let config = redis::cluster::ClusterConfig::new()
                    .set_connection_timeout(timeout)
                    .set_response_timeout(timeout)
                    .set_push_sender(pushes);
                let connect = client.get_async_connection_with_config(config);
                Ok(Connection::Cluster(bounded(timeout, connect).await?))
            }
        }
    }
}

impl Connection {
    fn sharded(&self) -> bool {
        matches!(self, Self::Cluster(_))
    }

    /// Subscribes to a fleet's channel (sharded on a cluster).
    pub(crate) async fn subscribe(&mut self, channel: &str, timeout: Duration) -> StoreResult<()> {
        match self {
            Self::Server(conn) => bounded(timeout, conn.subscribe(channel)).await,
            Self::Cluster(conn) => bounded(timeout, conn.ssubscribe(channel)).await,
        }
    }

    /// Unsubscribes from a fleet's channel.
    pub(crate) async fn unsubscribe(
        &mut self,
        channel: &str,
        timeout: Duration,
    ) -> StoreResult<()> {
        match self {
            Self::Server(conn) => bounded(timeout, conn.unsubscribe(channel)).await,
            Self::Cluster(conn) => bounded(timeout, conn.sunsubscribe(channel)).await,
        }
    }

    /// Executes `command` for the fleet with `keys`.
    pub(crate) async fn execute(
        mut self,
        scripts: Arc<Scripts>,
        keys: Arc<Keys>,
        command: Command,
        timeout: Duration,
    ) -> StoreResult<Answer> {
        let sharded = self.sharded();
        let script = command.script();
        let answer = match self {
            Self::Server(ref mut conn) => {
                run(conn, &scripts, &keys, command, sharded, timeout).await
            }
            Self::Cluster(ref mut conn) => {
                run(conn, &scripts, &keys, command, sharded, timeout).await
            }
        };
        answer.map_err(|e| e.read(script))
    }

    /// The core's warning if the store's eviction policy may evict the probe lease; none
    /// if it keeps it, or does not let this member's user read its config.
    pub(crate) async fn eviction_warning(&mut self, timeout: Duration) -> Option<String> {
        let policy = self.config(timeout, "maxmemory-policy").await?;
        let maxmemory = self.config(timeout, "maxmemory").await?;
        store::eviction(&policy, maxmemory.parse().ok()?)
    }

    async fn config(&mut self, timeout: Duration, name: &str) -> Option<String> {
        let mut get = redis::cmd("CONFIG");
        get.arg("GET").arg(name);
        let reply: Value = match self {
            Self::Server(conn) => bounded(timeout, get.query_async(conn)).await.ok()?,
            Self::Cluster(conn) => bounded(timeout, get.query_async(conn)).await.ok()?,
        };
        config_value(reply, name)
    }
}

/// A store's answer, owned until the protocol reads it as a [`Reply`].
#[derive(Debug)]
pub(crate) enum Answer {
    Read {
        event: Option<Vec<u8>>,
        event_ttl_ms: i64,
        generation: Option<Vec<u8>>,
    },
    Voted {
        now_ms: u64,
        votes: Vec<(Vec<u8>, u64)>,
    },
    Generation(i64),
    Published,
    Lease {
        held: bool,
        ttl_ms: i64,
    },
    Renewed(bool),
    Released,
    Repaired,
    Refused,
}

impl Answer {
    pub(crate) fn reply(&self) -> Reply<'_> {
        match self {
            Self::Read {
                event,
                event_ttl_ms,
                generation,
            } => Reply::Read {
                event: event.as_deref(),
                event_ttl_ms: *event_ttl_ms,
                generation: generation.as_deref(),
            },
            Self::Voted { now_ms, votes } => Reply::Voted {
                now_ms: *now_ms,
                votes: votes.iter().map(|(e, at)| (e.as_slice(), *at)).collect(),
            },
            Self::Generation(g) => Reply::Generation(*g),
            Self::Published => Reply::Published,
            Self::Lease { held, ttl_ms } => Reply::Lease {
                held: *held,
                ttl_ms: *ttl_ms,
            },
            Self::Renewed(renewed) => Reply::Renewed(*renewed),
            Self::Released => Reply::Released,
            Self::Repaired => Reply::Repaired,
            Self::Refused => Reply::Refused,
        }
    }
}

async fn run<C: ConnectionLike + Send>(
    conn: &mut C,
    scripts: &Scripts,
    keys: &Keys,
    command: Command,
    sharded: bool,
    timeout: Duration,
) -> StoreResult<Answer> {
    // The call is the core's; only the reply's type is read here, per script.
    let call = command.call(keys, sharded);
    let Some(script) = call.script else {
        let mut incr = redis::cmd("INCR");
        incr.arg(&call.keys);
        return Ok(Answer::Generation(
            bounded(timeout, incr.query_async(conn)).await?,
        ));
    };
    let mut invocation = scripts.get(script).prepare_invoke();
    for key in &call.keys {
        invocation.key(key);
    }
    for arg in &call.args {
        invocation.arg(arg);
    }
    Ok(match script {
        FleetScript::Read => {
            let (event, event_ttl_ms, generation): (Option<Vec<u8>>, i64, Option<Vec<u8>>) =
                bounded(timeout, invocation.invoke_async(conn)).await?;
            Answer::Read {
                event,
                event_ttl_ms,
                generation,
            }
        }
        FleetScript::Vote => {
            voted(&bounded::<Vec<Vec<u8>>>(timeout, invocation.invoke_async(conn)).await?)
        }
        FleetScript::Publish => {
            bounded::<i64>(timeout, invocation.invoke_async(conn)).await?;
            Answer::Published
        }
        FleetScript::Take => {
            let (held, ttl_ms): (i64, i64) =
                bounded(timeout, invocation.invoke_async(conn)).await?;
            Answer::Lease {
                held: held == 1,
                ttl_ms,
            }
        }
        FleetScript::Renew => {
            Answer::Renewed(bounded::<i64>(timeout, invocation.invoke_async(conn)).await? == 1)
        }
        FleetScript::Release => {
            bounded::<i64>(timeout, invocation.invoke_async(conn)).await?;
            Answer::Released
        }
        FleetScript::Repair => {
            bounded::<Value>(timeout, invocation.invoke_async(conn)).await?;
            Answer::Repaired
        }
    })
}

/// The vote script's reply: the store's time, then entry, time pairs. Anything else in it
/// is not a vote (the protocol counts the entries it cannot read).
fn voted(reply: &[Vec<u8>]) -> Answer {
    let number = |bytes: &[u8]| -> Option<u64> {
        let text = std::str::from_utf8(bytes).ok()?;
        text.parse::<u64>()
            .ok()
            .or_else(|| text.parse::<f64>().ok().map(|f| f as u64))
    };
    let Some(now_ms) = reply.first().and_then(|t| number(t)) else {
        return Answer::Refused;
    };
    let votes = reply
        .get(1..)
        .unwrap_or_default()
        .chunks_exact(2)
        .filter_map(|pair| match pair {
            [entry, at] => Some((entry.clone(), number(at)?)),
            _ => None,
        })
        .collect();
    Answer::Voted { now_ms, votes }
}

/// A `CONFIG GET` reply's value of `name`: a pair (RESP2), a map (RESP3), or on a cluster
/// each node's reply (the first that has it).
fn config_value(reply: Value, name: &str) -> Option<String> {
    let text = |v: &Value| match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).ok(),
        Value::SimpleString(s) | Value::VerbatimString { text: s, .. } => Some(s.clone()),
        _ => None,
    };
    match reply {
        Value::Array(items) => match items.as_slice() {
            [key, value] if text(key).as_deref() == Some(name) => text(value),
            _ => items.into_iter().find_map(|v| config_value(v, name)),
        },
        Value::Map(pairs) => pairs.iter().find_map(|(k, v)| {
            if text(k).as_deref() == Some(name) {
                text(v)
            } else {
                config_value(v.clone(), name)
            }
        }),
        _ => None,
    }
}

/// `future` within `timeout`; a late answer is the store being down.
pub(crate) async fn bounded<T>(
    timeout: Duration,
    future: impl Future<Output = Result<T, RedisError>>,
) -> StoreResult<T> {
    match tokio::time::timeout(timeout, future).await {
        Ok(result) => Ok(result?),
        Err(_) => Err(StoreError::Down(
            "the store did not answer within store-timeout".into(),
        )),
    }
}
