//! [`Protocol`]: one member's state and its steps, as the module's docs describe them.

use alloc::string::String;
use alloc::vec::Vec;

use super::lease::{Held, Lease, Step};
use super::{Command, Counts, Input, Link, Reply, Settings};
use crate::fleet::wire::{self, Ignored, Keys, Line, Message, Signer};
use crate::fleet::{Announcement, AnnouncementKind, FleetApplied, FleetEvent, FleetEventKind};
use crate::state::State;
use crate::time::{Nanos, MILLISECOND};

/// How many times a publish asks for a generation before it gives up (each miss repairs
/// the counter first).
const GENERATION_TRIES: u8 = 3;

/// The command in flight, and what its reply continues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Awaiting {
    Read,
    Vote(Announcement),
    Generation(Publishing),
    Publish(Publishing),
    Take { sent: Nanos },
    Renew { sent: Nanos },
    Release,
    Repair,
}

/// An event on its way out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Publishing {
    /// The announcement it tells, to keep if the store fails first.
    announcement: Announcement,
    kind: FleetEventKind,
    tries: u8,
}

/// One member of one fleet: the protocol's state.
#[derive(Clone, Debug)]
pub struct Protocol {
    settings: Settings,
    holder: String,
    keys: Keys,
    up: bool,
    awaiting: Option<Awaiting>,
    outgoing: Option<Command>,
    /// When to read the keys back; `None` once the store is down.
    reconcile_at: Option<Nanos>,
    reconciled: bool,
    repair: Option<u64>,
    /// An event to publish once a generation is had.
    publishing: Option<Publishing>,
    /// The newest announcement the store did not take.
    unsent: Option<Announcement>,
    lease: Lease,
    /// No lease is asked for before this (the holder keeps it until then).
    lease_retry_at: Nanos,
    /// The breaker wanted the lease, when last seen.
    wants_lease: bool,
    /// The stored event last read, to count a bad one once, not at every reconcile.
    last_stored: Option<u64>,
    counts: Counts,
}

impl Protocol {
    /// A member with `settings`, with the store not yet reached.
    pub fn new(settings: Settings) -> Self {
        Self {
            holder: wire::member_hex(settings.member),
            keys: Keys::new(&settings.name),
            settings,
            up: false,
            awaiting: None,
            outgoing: None,
            reconcile_at: None,
            reconciled: false,
            repair: None,
            publishing: None,
            unsent: None,
            lease: Lease::Free,
            lease_retry_at: 0,
            wants_lease: false,
            last_stored: None,
            counts: Counts::default(),
        }
    }

    /// The fleet's keys and channel.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// This member's own channel, which the adapter subscribes to beside the fleet's:
    /// a lease-free notice meant for this member alone comes there.
    pub fn wake_channel(&self) -> String {
        self.keys.wake_channel(self.settings.member)
    }

    /// The settings it runs with.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Whether the store answers.
    pub fn up(&self) -> bool {
        self.up
    }

    /// Whether the store answers and the member has read its fleet's state back since it
    /// came up: the breaker follows the fleet.
    pub fn synced(&self) -> bool {
        self.up && self.reconciled
    }

    /// Whether this member holds the store's probe lease.
    pub fn lease_held(&self) -> bool {
        matches!(self.lease, Lease::Held(_))
    }

    /// Whether the breaker asked for the probe lease, when last looked at (an adapter that
    /// wakes on the breaker's asks need not be woken again while it does).
    pub fn wants_lease(&self) -> bool {
        self.wants_lease
    }

    /// What the member has counted.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// The command to execute next, if any (at most one is in flight).
    pub fn poll(&mut self) -> Option<Command> {
        self.outgoing.take()
    }

    /// When to feed [`Input::Tick`], if the member waits on time at all.
    pub fn deadline(&self) -> Option<Nanos> {
        if !self.up || self.awaiting.is_some() {
            return None;
        }
        let renew = match self.lease {
            Lease::Held(held) => Some(held.deadline()),
            Lease::Free => None,
        };
        let retry =
            (self.wants_lease && matches!(self.lease, Lease::Free)).then_some(self.lease_retry_at);
        [self.reconcile_at, renew, retry]
            .into_iter()
            .flatten()
            .min()
    }

    /// Takes in what happened, and decides what comes next.
    pub fn handle(
        &mut self,
        input: Input<'_>,
        link: &mut impl Link,
        signer: Option<&dyn Signer>,
        now: Nanos,
    ) {
        match input {
            Input::Up => {
                self.up = true;
                self.reconciled = false;
                self.reconcile_at = Some(now);
                self.awaiting = None;
                self.outgoing = None;
                link.store(true, None);
            }
            Input::Down => self.down(link),
            Input::Changed | Input::Tick => {}
            Input::Message(line) => {
                self.counts.received = self.counts.received.saturating_add(1);
                match wire::decode_line(line, &self.settings.name, signer) {
                    Ok(Line::Event(message)) => self.apply(link, &message, message.remaining()),
                    Ok(Line::LeaseFree { origin }) => {
                        // Waiting for the holder's lease to run out: ask at once instead.
                        if origin != self.settings.member && self.lease == Lease::Free {
                            self.lease_retry_at = self.lease_retry_at.min(now);
                        }
                    }
                    Err(why) => self.counts.ignore(why),
                }
            }
            Input::Reply(reply) => self.reply(reply, link, signer, now),
        }
        self.advance(link, signer, now);
    }

    /// The store is gone: decide locally, keep what was on its way out.
    fn down(&mut self, link: &mut impl Link) {
        match self.awaiting {
            Some(Awaiting::Generation(p) | Awaiting::Publish(p)) => {
                self.unsent = Some(p.announcement);
            }
            Some(Awaiting::Vote(announcement)) => self.unsent = Some(announcement),
            _ => {}
        }
        if let Some(p) = self.publishing.take() {
            self.unsent = Some(p.announcement);
        }
        self.up = false;
        self.awaiting = None;
        self.outgoing = None;
        self.reconcile_at = None;
        self.lease = Lease::Free;
        link.store(false, None);
    }

    fn apply(&mut self, link: &mut impl Link, message: &Message, remaining: Nanos) {
        let event = FleetEvent {
            generation: message.generation,
            kind: message.kind,
            remaining,
        };
        match link.apply(event) {
            FleetApplied::Applied | FleetApplied::Held => {
                self.counts.applied = self.counts.applied.saturating_add(1);
            }
            FleetApplied::Stale => self.counts.ignore(Ignored::Stale),
            FleetApplied::NotInFleet => {}
        }
    }

    fn reply(
        &mut self,
        reply: Reply<'_>,
        link: &mut impl Link,
        signer: Option<&dyn Signer>,
        now: Nanos,
    ) {
        let Some(awaiting) = self.awaiting.take() else {
            return;
        };
        if reply == Reply::Refused {
            self.counts.refused = self.counts.refused.saturating_add(1);
        }
        let mine = link.view().status.generation;
        match (awaiting, reply) {
            (
                Awaiting::Read,
                Reply::Read {
                    event,
                    event_ttl_ms,
                    generation,
                },
            ) => self.reconciled(link, signer, now, mine, event, event_ttl_ms, generation),
            (Awaiting::Vote(_), Reply::Voted { now_ms, votes }) => {
                let mut ages: Vec<(u64, Nanos)> = Vec::with_capacity(votes.len());
                for (entry, at_ms) in votes {
                    match wire::decode_vote(entry, &self.settings.name, mine, signer) {
                        Ok(member) if !ages.iter().any(|&(m, _)| m == member) => {
                            let age = now_ms.saturating_sub(at_ms).saturating_mul(MILLISECOND);
                            ages.push((member, age));
                        }
                        Ok(_) => {}
                        Err(why) => self.counts.ignore(why),
                    }
                }
                if link.votes(&ages) {
                    let announcement = Announcement {
                        kind: AnnouncementKind::Tripped,
                        remaining: 0,
                    };
                    self.publish(announcement, FleetEventKind::Open);
                }
            }
            (Awaiting::Generation(p), Reply::Generation(generation)) => {
                match u64::try_from(generation)
                    .ok()
                    .filter(|&g| (1..=wire::MAX_NUMBER).contains(&g) && g > mine)
                {
                    Some(generation) => self.send(link, signer, p, generation),
                    None => self.missed_generation(p, mine, generation > 0),
                }
            }
            (Awaiting::Generation(p), Reply::Refused) => self.missed_generation(p, mine, false),
            (Awaiting::Publish(_), Reply::Published) => {
                self.counts.published = self.counts.published.saturating_add(1);
            }
            (Awaiting::Take { sent }, Reply::Lease { held, ttl_ms }) => {
                let length = self.settings.probe_timeout;
                if held {
                    let lease = Held::taken(sent, now, length, link.view().admitted);
                    self.lease = Lease::Held(lease);
                    self.counts.leases = self.counts.leases.saturating_add(1);
                    link.store(true, Some(lease.until.saturating_sub(now)));
                } else {
                    // Another member holds it: ask again no sooner than it runs out.
                    let wait = u64::try_from(ttl_ms)
                        .unwrap_or(0)
                        .saturating_mul(MILLISECOND)
                        .clamp(MILLISECOND, length);
                    self.lease_retry_at = now.saturating_add(wait);
                }
            }
            (Awaiting::Renew { sent }, Reply::Renewed(renewed)) => {
                if let (true, Lease::Held(lease)) = (renewed, self.lease) {
                    let lease = lease.renewed(sent, now, self.settings.probe_timeout);
                    self.lease = Lease::Held(lease);
                    link.store(true, Some(lease.until.saturating_sub(now)));
                } else {
                    // Another member's by now (it ran out first): nothing to give back.
                    self.lease = Lease::Free;
                    link.store(true, None);
                }
            }
            (Awaiting::Release, _) => self.lease = Lease::Free,
            (Awaiting::Repair, reply) => {
                // Tried once: a refusal waits for the next read to find it again.
                self.repair = None;
                if reply == Reply::Repaired {
                    self.counts.repairs = self.counts.repairs.saturating_add(1);
                }
            }
            // An answer that does not fit the question (a refused read, vote or publish):
            // the data behind it is bad, but the store is up. It is counted and not asked
            // again at once: the next read back finds what can be repaired.
            (Awaiting::Read, _) => {
                self.reconcile_at = Some(now.saturating_add(self.settings.reconcile_interval));
            }
            (Awaiting::Take { .. }, _) => {
                self.lease_retry_at = now.saturating_add(self.settings.probe_timeout / 3);
            }
            (Awaiting::Renew { .. }, _) => {
                self.lease = Lease::Free;
                link.store(true, None);
            }
            (_, _) => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn reconciled(
        &mut self,
        link: &mut impl Link,
        signer: Option<&dyn Signer>,
        now: Nanos,
        mine: u64,
        event: Option<&[u8]>,
        event_ttl_ms: i64,
        generation: Option<&[u8]>,
    ) {
        self.counts.reconciles = self.counts.reconciles.saturating_add(1);
        self.reconcile_at = Some(now.saturating_add(self.settings.reconcile_interval));
        // The counter: absent is 0 (a store restarted empty); anything else that is not a
        // generation is repaired to this member's, as is one below it.
        let stored = match generation {
            None => Some(0),
            Some(text) => wire::decode_generation(text),
        };
        match stored {
            Some(stored) if stored >= mine => {}
            Some(_) => self.repair = Some(mine),
            None => {
                self.counts.ignore(Ignored::MalformedGeneration);
                self.repair = Some(mine);
            }
        }
        if self.repair.is_some() && link.view().probes_out == 0 {
            // The store lost the fleet's state (restarted empty, failed over without it),
            // and with it whose lease it was: a round may still be out under a lease held
            // before, for up to a probe timeout. A member with probes of its own out asks
            // at once: its breaker admits no more than K.
            let until = now.saturating_add(self.settings.probe_timeout);
            self.lease_retry_at = self.lease_retry_at.max(until);
        }
        if let Some(text) = event {
            let fingerprint = fingerprint(text);
            let new = self.last_stored != Some(fingerprint);
            self.last_stored = Some(fingerprint);
            match wire::decode(text, &self.settings.name, signer) {
                Err(why) if new => self.counts.ignore(why),
                Err(_) => {}
                Ok(message) if message.generation > mine => {
                    // An open lasts the least of the store's TTL and its signed time (and
                    // the breaker caps it at its longest opening); one stored without a
                    // TTL is not a shape the format writes: absent.
                    let remaining = match message.kind {
                        FleetEventKind::Close => Some(0),
                        FleetEventKind::Open => u64::try_from(event_ttl_ms)
                            .ok()
                            .filter(|&ms| ms > 0)
                            .map(|ms| ms.saturating_mul(MILLISECOND).min(message.remaining())),
                    };
                    if let Some(remaining) = remaining {
                        self.apply(link, &message, remaining);
                    }
                }
                Ok(_) => {}
            }
        }
        if !self.reconciled {
            self.reconciled = true;
            // Back from an outage: the announcement the store did not take goes out, if it
            // still describes the breaker (an event just applied may have made it untrue).
            if let Some(announcement) = self.unsent.take() {
                if announcement.kind.holds_in(link.view().state) {
                    self.announce(announcement);
                }
            }
        }
    }

    /// A generation the counter should not have given (it held garbage, or is behind
    /// this member): repair it, then ask again, a few times at most.
    fn missed_generation(&mut self, p: Publishing, mine: u64, counted: bool) {
        if !counted {
            self.counts.ignore(Ignored::MalformedGeneration);
        }
        self.repair = Some(mine);
        if p.tries < GENERATION_TRIES {
            self.publishing = Some(Publishing {
                tries: p.tries.saturating_add(1),
                ..p
            });
        } else {
            self.unsent = Some(p.announcement);
        }
    }

    /// The event for `p` under `generation`, as the breaker stands now.
    fn send(
        &mut self,
        link: &mut impl Link,
        signer: Option<&dyn Signer>,
        p: Publishing,
        generation: u64,
    ) {
        let remaining_ms = match p.kind {
            FleetEventKind::Close => 0,
            FleetEventKind::Open => {
                // What is left of this breaker's own opening: nothing to tell once it ended.
                let view = link.view();
                if view.state != State::Open || view.cooldown_remaining == 0 {
                    return;
                }
                view.cooldown_remaining
                    .div_ceil(MILLISECOND)
                    .min(wire::MAX_NUMBER)
            }
        };
        let message = Message {
            generation,
            kind: p.kind,
            remaining_ms,
            origin: self.settings.member,
        };
        let line = wire::encode(&self.settings.name, &message, signer);
        let expire_ms = (p.kind == FleetEventKind::Open).then_some(remaining_ms);
        self.ask(Command::Publish { line, expire_ms }, Awaiting::Publish(p));
    }

    fn publish(&mut self, announcement: Announcement, kind: FleetEventKind) {
        self.publishing = Some(Publishing {
            announcement,
            kind,
            tries: 1,
        });
    }

    /// What an announcement asks of the store.
    fn announce(&mut self, announcement: Announcement) {
        match announcement.kind {
            AnnouncementKind::Tripped => {
                self.unsent = Some(announcement);
            }
            AnnouncementKind::Reopened => self.publish(announcement, FleetEventKind::Open),
            AnnouncementKind::Closed => self.publish(announcement, FleetEventKind::Close),
        }
    }

    fn ask(&mut self, command: Command, awaiting: Awaiting) {
        self.outgoing = Some(command);
        self.awaiting = Some(awaiting);
    }

    /// Picks the next command, when the store is up and none is in flight.
    fn advance(&mut self, link: &mut impl Link, signer: Option<&dyn Signer>, now: Nanos) {
        let view = link.view();
        self.wants_lease = view.status.wants_lease;
        if !self.up || self.awaiting.is_some() {
            return;
        }
        // Reading back comes first: after an outage, before anything is published.
        if self.reconcile_at.is_some_and(|at| now >= at) {
            return self.ask(Command::Read, Awaiting::Read);
        }
        if let Some(floor) = self.repair {
            return self.ask(Command::Repair { floor }, Awaiting::Repair);
        }
        if self.publishing.is_none() {
            if let Some(announcement) = link.take_announcement() {
                self.announce(announcement);
            }
        }
        if let Some(p) = self.publishing.take() {
            return self.ask(Command::NextGeneration, Awaiting::Generation(p));
        }
        if let Some(announcement) = self.unsent.take() {
            if announcement.kind == AnnouncementKind::Tripped {
                let entry = wire::vote_entry(
                    &self.settings.name,
                    self.settings.member,
                    view.status.generation,
                    signer,
                );
                let window_ms = self.settings.cooldown.div_ceil(MILLISECOND).max(1);
                return self.ask(
                    Command::Vote { entry, window_ms },
                    Awaiting::Vote(announcement),
                );
            }
            self.announce(announcement);
            return self.advance(link, signer, now);
        }
        let holder = self.holder.clone();
        match self.lease {
            Lease::Held(mut lease) => {
                let step = lease.step(&view, now, self.settings.probe_timeout);
                self.lease = Lease::Held(lease);
                match step {
                    Step::Keep => {}
                    Step::Release { over } => {
                        if !over {
                            link.store(true, None);
                        }
                        let notice = self.notice(view.status.generation, signer);
                        self.ask(Command::ReleaseLease { holder, notice }, Awaiting::Release);
                    }
                    Step::Renew => {
                        let ms = self.settings.probe_timeout.div_ceil(MILLISECOND).max(1);
                        self.ask(
                            Command::RenewLease { holder, ms },
                            Awaiting::Renew { sent: now },
                        );
                    }
                }
            }
            Lease::Free => {
                if view.status.wants_lease && now >= self.lease_retry_at {
                    let ms = self.settings.probe_timeout.div_ceil(MILLISECOND).max(1);
                    self.ask(
                        Command::TakeLease { holder, ms },
                        Awaiting::Take { sent: now },
                    );
                }
            }
        }
    }
}

impl Protocol {
    /// The command that gives the lease back when the member leaves its fleet, if it
    /// holds it (the adapter sends it on its way out; nobody waits for the answer).
    pub fn leave(&mut self, link: &mut impl Link, signer: Option<&dyn Signer>) -> Option<Command> {
        if !self.lease_held() {
            return None;
        }
        self.lease = Lease::Free;
        let notice = self.notice(link.view().status.generation, signer);
        Some(Command::ReleaseLease {
            holder: self.holder.clone(),
            notice,
        })
    }

    fn notice(&self, generation: u64, signer: Option<&dyn Signer>) -> String {
        wire::encode_free(
            &self.settings.name,
            generation,
            self.settings.member,
            signer,
        )
    }
}

/// A short fingerprint of a stored value (FNV-1a), to tell one read from the last.
fn fingerprint(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes.iter().take(wire::MAX_LINE.saturating_add(1)) {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash ^ u64::try_from(bytes.len()).unwrap_or(u64::MAX)
}
