//! The background task: connect, resync, then follow the fleet and tell it what this
//! member's breaker announces; on any store failure, degrade and reconnect with backoff.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use redis::Client;
use tokio::time::MissedTickBehavior;
use tripgate_core::{
    Announcement, AnnouncementKind, FleetApplied, FleetEvent, FleetEventKind, State, MILLISECOND,
};

use crate::status::Shared;
use crate::store::{Session, StoreError};
use crate::wire::{self, Keys, Message};
use tripgate_host::fleet::Member;

/// Everything the task needs, fixed at join.
pub(crate) struct Task<M> {
    pub(crate) member: M,
    pub(crate) client: Client,
    pub(crate) name: String,
    pub(crate) key: Option<Vec<u8>>,
    pub(crate) reconcile_interval: Duration,
    pub(crate) store_timeout: Duration,
    pub(crate) poll_interval: Duration,
    pub(crate) max_backoff: Duration,
    pub(crate) shared: Arc<Shared>,
    /// The announcement the store failed to take, published after the next reconcile if
    /// it still describes the breaker and nothing newer has been announced.
    pub(crate) unsent: Mutex<Option<Announcement>>,
}

/// A breaker error ends the task: the breaker is gone or broken, nothing to follow.
struct MemberGone;

enum Ended {
    Store(StoreError),
    Member,
}

impl From<StoreError> for Ended {
    fn from(e: StoreError) -> Self {
        Self::Store(e)
    }
}

impl From<MemberGone> for Ended {
    fn from(_: MemberGone) -> Self {
        Self::Member
    }
}

/// Per-session state of the probe lease this member holds.
#[derive(Default)]
struct Lease {
    /// The store's lease may be this member's: taken, and not given back or lost since.
    taken: bool,
    /// When it was last taken or renewed, and for how long, while it is being renewed (a
    /// holder with no probes out stops renewing but still gives it back).
    renewed: Option<(Instant, Duration)>,
}

impl<M: Member> Task<M> {
    pub(crate) async fn run(self) {
        let first = Duration::from_millis(10);
        let mut backoff = first;
        loop {
            let began = self.shared.snapshot().connects;
            match self.session().await {
                Err(Ended::Member) => return,
                Err(Ended::Store(error)) => {
                    self.shared.failed(error.to_string());
                    self.shared.session_lost();
                    // Decide locally until the store is back (K probes, no lease).
                    if self.member.store(false, None).is_err() {
                        return;
                    }
                }
                Ok(()) => return,
            }
            // A session that got going starts the backoff over.
            if self.shared.snapshot().connects != began {
                backoff = first;
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(self.max_backoff);
        }
    }

    /// One connection, from connecting to losing it.
    async fn session(&self) -> Result<(), Ended> {
        let keys = Keys::new(&self.name);
        let (mut session, mut messages) =
            Session::open(&self.client, keys, self.store_timeout).await?;
        // Back: tell the breaker, and resynchronise before anything else.
        self.member.store(true, None).map_err(|_| MemberGone)?;
        let mut last_stored = None;
        self.reconcile(&mut session, &mut last_stored).await?;
        self.shared.session_began();
        let unsent = self
            .unsent
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let newest = self.member.take_announcement().map_err(|_| MemberGone)?;
        if let Some(announcement) = newest.or(unsent) {
            if self.still_true(announcement)? {
                self.announce(&mut session, announcement).await?;
            }
        }

        let mut poll = tokio::time::interval(self.poll_interval);
        poll.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut reconcile = tokio::time::interval(self.reconcile_interval);
        reconcile.set_missed_tick_behavior(MissedTickBehavior::Delay);
        reconcile.tick().await;
        let mut lease = Lease::default();
        loop {
            tokio::select! {
                message = messages.next() => match message {
                    Some(message) => self.on_message(message.get_payload_bytes())?,
                    None => return Err(StoreError::SubscriptionEnded.into()),
                },
                _ = poll.tick() => self.step(&mut session, &mut lease).await?,
                _ = reconcile.tick() => self.reconcile(&mut session, &mut last_stored).await?,
            }
        }
    }

    /// A message from the channel: parse and check it, then let the core fence it.
    fn on_message(&self, payload: &[u8]) -> Result<(), MemberGone> {
        let text = std::str::from_utf8(payload).unwrap_or("");
        match wire::decode(text, &self.name, self.key.as_deref()) {
            Ok(message) => self.apply(&message, message.remaining_ns()),
            Err(why) => {
                self.shared.ignored(why);
                Ok(())
            }
        }
    }

    fn apply(&self, message: &Message, remaining: u64) -> Result<(), MemberGone> {
        let event = FleetEvent {
            generation: message.generation,
            kind: message.kind,
            remaining,
        };
        match self.member.apply(event).map_err(|_| MemberGone)? {
            FleetApplied::Stale => self.shared.stale(),
            FleetApplied::Applied | FleetApplied::Held => self.shared.applied(),
            FleetApplied::NotInFleet => {}
        }
        Ok(())
    }

    /// Reads the fleet's state from its keys and applies what is newer than this
    /// member's generation (an open for the time the store says is left). A stored value
    /// that does not parse is counted once, not at every reconcile.
    async fn reconcile(
        &self,
        session: &mut Session,
        last_stored: &mut Option<String>,
    ) -> Result<(), Ended> {
        let stored = session.read().await?;
        let mine = self.status()?.generation;
        if stored.generation < mine {
            session.raise(mine).await?;
        }
        let Some(text) = stored.event else {
            return Ok(());
        };
        let new = last_stored.as_deref() != Some(text.as_str());
        match wire::decode(&text, &self.name, self.key.as_deref()) {
            Err(why) if new => self.shared.ignored(why),
            Err(_) => {}
            Ok(message) if message.generation > mine => {
                let remaining = match (message.kind, stored.pttl_ms) {
                    (FleetEventKind::Close, _) => Some(0),
                    (FleetEventKind::Open, ms) if ms > 0 => {
                        Some(u64::try_from(ms).unwrap_or(0).saturating_mul(MILLISECOND))
                    }
                    // Gone between the reads, or stored without an expiry (not as the
                    // format publishes it): nothing left to open for.
                    _ => None,
                };
                if let Some(remaining) = remaining {
                    self.apply(&message, remaining)?;
                }
            }
            Ok(_) => {}
        }
        *last_stored = Some(text);
        Ok(())
    }

    /// Whatever the breaker asks for: an announcement to publish, a lease to take, renew
    /// or let go.
    async fn step(&self, session: &mut Session, lease: &mut Lease) -> Result<(), Ended> {
        // Published before the lease is given up (below): until the event arrives,
        // nobody else may start a round.
        if let Some(announcement) = self.member.take_announcement().map_err(|_| MemberGone)? {
            self.announce(session, announcement).await?;
        }
        let status = self.member.status().map_err(|_| MemberGone)?;
        let length = Duration::from_nanos(self.member.probe_timeout());
        if lease.taken && !status.lease_held {
            // The round ended (announced or not), a fleet event ended it (the core drops
            // the lease when it fences a new generation), or it ran out: give the store's
            // lease back too, or it would hold off the fleet's next round (this member's
            // own included).
            *lease = Lease::default();
            session.release_lease(self.shared.member_id).await?;
        }
        if status.wants_lease {
            let sent = Instant::now();
            let ms = ceil_ms(self.member.probe_timeout());
            if session.take_lease(self.shared.member_id, ms).await? {
                // The store's lease started when it answered or earlier: the breaker's
                // must not outlast it.
                let held = length.saturating_sub(sent.elapsed());
                self.member
                    .store(true, Some(nanos(held)))
                    .map_err(|_| MemberGone)?;
                *lease = Lease {
                    taken: true,
                    renewed: Some((Instant::now(), held)),
                };
                self.shared.leased();
            }
        } else if let Some((at, held)) = lease.renewed {
            if at.elapsed() >= held / 3 {
                self.renew(session, lease, length).await?;
            }
        }
        Ok(())
    }

    /// Renews the lease while its round goes on (probes out); a holder with no probes out
    /// lets it run out, so that an idle member does not keep the fleet from recovering.
    async fn renew(
        &self,
        session: &mut Session,
        lease: &mut Lease,
        length: Duration,
    ) -> Result<(), Ended> {
        if self.member.view().map_err(|_| MemberGone)?.probes_out == 0 {
            lease.renewed = None;
            return Ok(());
        }
        let sent = Instant::now();
        let ms = ceil_ms(self.member.probe_timeout());
        if session.renew_lease(self.shared.member_id, ms).await? {
            let held = length.saturating_sub(sent.elapsed());
            self.member
                .store(true, Some(nanos(held)))
                .map_err(|_| MemberGone)?;
            lease.renewed = Some((Instant::now(), held));
        } else {
            // Another member's by now (it ran out first): nothing to give back.
            *lease = Lease::default();
            self.member.store(true, None).map_err(|_| MemberGone)?;
        }
        Ok(())
    }

    /// Publishes what the breaker announced; kept for the next session if the store
    /// fails first.
    async fn announce(
        &self,
        session: &mut Session,
        announcement: Announcement,
    ) -> Result<(), Ended> {
        let published = match announcement.kind {
            AnnouncementKind::Tripped => self.tripped(session).await,
            AnnouncementKind::Reopened => self.publish_open(session).await,
            AnnouncementKind::Closed => self.publish(session, FleetEventKind::Close, 0).await,
        };
        if let Err(Ended::Store(_)) = published {
            *self.unsent.lock().unwrap_or_else(PoisonError::into_inner) = Some(announcement);
        }
        published
    }

    /// Whether `announcement` still describes the breaker (the core's rule), so that it is
    /// worth publishing after an outage.
    fn still_true(&self, announcement: Announcement) -> Result<bool, MemberGone> {
        let state = self.member.view().map_err(|_| MemberGone)?.state;
        Ok(announcement.kind.holds_in(state))
    }

    /// A local trip: vote, and open the fleet when the votes reach the quorum.
    async fn tripped(&self, session: &mut Session) -> Result<(), Ended> {
        let cooldown_ms = ceil_ms(self.member.cooldown());
        let (votes, unreadable) = session.vote(self.shared.member_id, cooldown_ms).await?;
        for _ in 0..unreadable {
            self.shared.ignored(wire::Ignored::Garbage);
        }
        let ages: Vec<(u64, u64)> = votes
            .iter()
            .map(|&(id, age_ms)| (id, age_ms.saturating_mul(MILLISECOND)))
            .collect();
        if self.member.votes(&ages).map_err(|_| MemberGone)? {
            self.publish_open(session).await?;
        }
        Ok(())
    }

    /// Publishes an open for what is left of this breaker's own opening (nothing, if it
    /// has already ended).
    async fn publish_open(&self, session: &mut Session) -> Result<(), Ended> {
        let view = self.member.view().map_err(|_| MemberGone)?;
        if view.state == State::Open && view.cooldown_remaining > 0 {
            let ms = ceil_ms(view.cooldown_remaining);
            self.publish(session, FleetEventKind::Open, ms).await?;
        }
        Ok(())
    }

    async fn publish(
        &self,
        session: &mut Session,
        kind: FleetEventKind,
        remaining_ms: u64,
    ) -> Result<(), Ended> {
        let mine = self.status()?.generation;
        let mut generation = session.next_generation().await?;
        if generation <= mine {
            // The store lost its keys since this member last saw a generation.
            session.raise(mine).await?;
            generation = session.next_generation().await?;
        }
        let message = Message {
            generation,
            kind,
            remaining_ms,
            origin: self.shared.member_id,
        };
        let text = wire::encode(&self.name, &message, self.key.as_deref());
        let expire = (kind == FleetEventKind::Open).then_some(remaining_ms);
        session.publish(&text, expire).await?;
        self.shared.published();
        Ok(())
    }

    fn status(&self) -> Result<tripgate_core::FleetStatus, MemberGone> {
        self.member.status().map_err(|_| MemberGone)
    }
}

fn ceil_ms(ns: u64) -> u64 {
    ns.div_ceil(MILLISECOND)
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
