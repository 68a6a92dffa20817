//! The store's side of `wit/fleet.md`: one session's commands and scripts, each bounded
//! by `store-timeout` so that a slow store counts as an unreachable one.

use std::future::Future;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig, PubSubStream};
use redis::{AsyncCommands, Client, RedisError, Script};

use crate::wire::{self, Keys};

// The scripts are part of the wire format, shared with the Node adapter: each file says
// its keys, arguments and reply.
const VOTE: &str = include_str!("../lua/vote.lua");
const RENEW: &str = include_str!("../lua/renew.lua");
const RELEASE: &str = include_str!("../lua/release.lua");
const RAISE: &str = include_str!("../lua/raise.lua");

/// A store failure: the command failed, or took longer than `store-timeout`.
#[derive(Debug)]
pub(crate) enum StoreError {
    Redis(RedisError),
    Timeout,
    SubscriptionEnded,
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Redis(e) => write!(f, "redis: {e}"),
            Self::Timeout => f.write_str("the store did not answer within store-timeout"),
            Self::SubscriptionEnded => f.write_str("the subscription ended"),
        }
    }
}

impl From<RedisError> for StoreError {
    fn from(e: RedisError) -> Self {
        Self::Redis(e)
    }
}

pub(crate) type StoreResult<T> = Result<T, StoreError>;

/// What reconciling read: the stored event, its remaining time, and the generation.
pub(crate) struct Stored {
    pub(crate) event: Option<String>,
    /// `PTTL event`: ms left, -1 without expiry, -2 gone.
    pub(crate) pttl_ms: i64,
    pub(crate) generation: u64,
}

/// One connection's worth of talking to the store.
pub(crate) struct Session {
    conn: ConnectionManager,
    keys: Keys,
    timeout: Duration,
    vote: Script,
    renew: Script,
    release: Script,
    raise: Script,
}

impl Session {
    /// Connects for commands, subscribes to the fleet's channel, and gives back the
    /// session and the stream of its messages.
    pub(crate) async fn open(
        client: &Client,
        keys: Keys,
        timeout: Duration,
    ) -> StoreResult<(Self, PubSubStream)> {
        // The adapter reconnects on its own (with its backoff, and a resync first), so
        // the manager need not retry for long: a failure ends the session.
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(timeout))
            .set_connection_timeout(Some(timeout))
            .set_number_of_retries(1)
            .set_max_delay(timeout);
        let conn = bounded(timeout, client.get_connection_manager_with_config(config)).await?;
        let mut pubsub = bounded(timeout, client.get_async_pubsub()).await?;
        bounded(timeout, pubsub.subscribe(&keys.channel)).await?;
        let session = Self {
            conn,
            keys,
            timeout,
            vote: Script::new(VOTE),
            renew: Script::new(RENEW),
            release: Script::new(RELEASE),
            raise: Script::new(RAISE),
        };
        Ok((session, pubsub.into_on_message()))
    }

    /// `GET event`, `PTTL event` and `GET gen` in one transaction, so the time left
    /// belongs to the event read.
    pub(crate) async fn read(&mut self) -> StoreResult<Stored> {
        let mut pipe = redis::pipe();
        pipe.atomic()
            .get(&self.keys.event)
            .pttl(&self.keys.event)
            .get(&self.keys.gen);
        let (event, pttl_ms, generation): (Option<String>, i64, Option<String>) =
            bounded(self.timeout, pipe.query_async(&mut self.conn)).await?;
        Ok(Stored {
            event,
            pttl_ms,
            generation: generation.and_then(|g| g.parse().ok()).unwrap_or(0),
        })
    }

    /// Raises the fleet generation to at least `at_least`.
    pub(crate) async fn raise(&mut self, at_least: u64) -> StoreResult<()> {
        let mut call = self.raise.key(&self.keys.gen);
        call.arg(at_least);
        let _: i64 = bounded(self.timeout, call.invoke_async(&mut self.conn)).await?;
        Ok(())
    }

    /// Votes for `member` and answers every vote as (member, age in ms); unreadable
    /// entries (not a member id) are skipped, and counted by the caller as garbage.
    pub(crate) async fn vote(
        &mut self,
        member: u64,
        cooldown_ms: u64,
    ) -> StoreResult<(Vec<(u64, u64)>, usize)> {
        let mut call = self.vote.key(&self.keys.votes);
        call.arg(wire::member_hex(member)).arg(cooldown_ms.max(1));
        let reply: Vec<String> = bounded(self.timeout, call.invoke_async(&mut self.conn)).await?;
        let now: u64 = reply.first().and_then(|t| t.parse().ok()).unwrap_or(0);
        let mut votes = Vec::new();
        let mut unreadable = 0;
        for pair in reply.get(1..).unwrap_or_default().chunks(2) {
            let parsed = match pair {
                [id, at] => wire::parse_member(id).zip(at.parse::<u64>().ok()),
                _ => None,
            };
            match parsed {
                Some((id, at)) => votes.push((id, now.saturating_sub(at))),
                None => unreadable += 1,
            }
        }
        Ok((votes, unreadable))
    }

    /// The next generation (`INCR gen`).
    pub(crate) async fn next_generation(&mut self) -> StoreResult<u64> {
        let gen = self.keys.gen.clone();
        bounded(self.timeout, self.conn.incr(gen, 1u64)).await
    }

    /// Publishes `message`: in one `MULTI`, the stored event (expiring with an open's
    /// cooldown), the votes cleared, and the message on the channel.
    pub(crate) async fn publish(
        &mut self,
        message: &str,
        expire_ms: Option<u64>,
    ) -> StoreResult<()> {
        let mut pipe = redis::pipe();
        pipe.atomic();
        match expire_ms {
            Some(ms) => pipe.pset_ex(&self.keys.event, message, ms.max(1)).ignore(),
            None => pipe.set(&self.keys.event, message).ignore(),
        };
        pipe.del(&self.keys.votes)
            .ignore()
            .publish(&self.keys.channel, message)
            .ignore();
        let () = bounded(self.timeout, pipe.query_async(&mut self.conn)).await?;
        Ok(())
    }

    /// `SET lease <member> NX PX <ms>`: whether this member now holds the lease.
    pub(crate) async fn take_lease(&mut self, member: u64, ms: u64) -> StoreResult<bool> {
        let mut cmd = redis::cmd("SET");
        cmd.arg(&self.keys.lease)
            .arg(wire::member_hex(member))
            .arg("NX")
            .arg("PX")
            .arg(ms.max(1));
        let reply: Option<String> = bounded(self.timeout, cmd.query_async(&mut self.conn)).await?;
        Ok(reply.is_some())
    }

    /// Extends this member's lease to `ms` from now: whether it still held it.
    pub(crate) async fn renew_lease(&mut self, member: u64, ms: u64) -> StoreResult<bool> {
        let mut call = self.renew.key(&self.keys.lease);
        call.arg(wire::member_hex(member)).arg(ms.max(1));
        let renewed: i64 = bounded(self.timeout, call.invoke_async(&mut self.conn)).await?;
        Ok(renewed == 1)
    }

    /// Gives this member's lease up (nothing if another member holds it by now).
    pub(crate) async fn release_lease(&mut self, member: u64) -> StoreResult<()> {
        let mut call = self.release.key(&self.keys.lease);
        call.arg(wire::member_hex(member));
        let _: i64 = bounded(self.timeout, call.invoke_async(&mut self.conn)).await?;
        Ok(())
    }
}

async fn bounded<T>(
    timeout: Duration,
    future: impl Future<Output = Result<T, RedisError>>,
) -> StoreResult<T> {
    match tokio::time::timeout(timeout, future).await {
        Ok(result) => Ok(result?),
        Err(_) => Err(StoreError::Timeout),
    }
}
