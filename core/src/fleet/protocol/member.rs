//! [`Protocol`]: one member's state and its steps, as the module's docs describe them.

use alloc::string::String;

use super::lease::{Lease, Step};
use super::{Command, Counts, Input, Link, Settings, View};
use crate::fleet::scripts::Script;
use crate::fleet::store::{self, Fault};
use crate::fleet::wire::{self, Ignored, Keys, Line, Message, Signer};
use crate::fleet::{Announcement, AnnouncementKind, FleetApplied, FleetEvent, FleetEventKind};
use crate::state::State;
use crate::time::{Nanos, MILLISECOND};

mod reply;

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
    /// The generation of the last event this member published, until its echo on the
    /// channel comes back: that copy is no news, not a stale event (a second copy is).
    echo: Option<u64>,
    counts: Counts,
}

impl Protocol {
    /// A member with `settings`, with the store not yet reached.
    pub fn new(settings: Settings) -> Self {
        Self {
            holder: wire::holder_hex(settings.member, settings.session),
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
            echo: None,
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
        self.keys.wake_channel(&self.holder)
    }

    /// Who holds the lease when this member does ([`wire::holder_hex`]).
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// The settings it runs with.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The breaker's `cooldown` and `probe-timeout` now, which a reconfiguration may have
    /// changed: votes count within the new cooldown, and the next lease lasts the new
    /// probe timeout (a lease shorter than a probe would let a second member probe).
    /// Adapters hand them over before each step.
    pub fn retune(&mut self, cooldown: Nanos, probe_timeout: Nanos) {
        self.settings.cooldown = cooldown;
        self.settings.probe_timeout = probe_timeout;
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

    /// The store's error reply to the command in flight, read ([`store::fault`]): bad
    /// data goes back as [`Reply::Refused`](super::Reply::Refused); anything else is the store down, with this
    /// explanation for the adapter's last error.
    pub fn fault(&self, message: &str) -> Fault {
        let script = match self.awaiting {
            Some(Awaiting::Read) => Some(Script::Read),
            Some(Awaiting::Vote(_)) => Some(Script::Vote),
            Some(Awaiting::Generation(_)) | None => None,
            Some(Awaiting::Publish(_)) => Some(Script::Publish),
            Some(Awaiting::Take { .. }) => Some(Script::Take),
            Some(Awaiting::Renew { .. }) => Some(Script::Renew),
            Some(Awaiting::Release) => Some(Script::Release),
            Some(Awaiting::Repair) => Some(Script::Repair),
        };
        store::fault(script, message)
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
                    Ok(Line::LeaseFree { .. }) => {
                        // Waiting for the holder's lease to run out: ask at once instead.
                        // Whoever sent it: a process that shares this member's name holds
                        // leases of its own, and this member's own notice changes nothing
                        // unless a caller is waiting, when asking at once is right.
                        if self.lease == Lease::Free {
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
            // Its own event's first copy back is no news; a second is a replay.
            FleetApplied::Stale if self.echo == Some(message.generation) => self.echo = None,
            FleetApplied::Stale => self.counts.ignore(Ignored::Stale),
            FleetApplied::NotInFleet => {}
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
        let view = link.view();
        let remaining_ms = match p.kind {
            FleetEventKind::Close => 0,
            FleetEventKind::Open => {
                // What is left of this breaker's own opening: nothing to tell once it ended.
                if view.state != State::Open || view.cooldown_remaining == 0 {
                    return;
                }
                view.cooldown_remaining
                    .div_ceil(MILLISECOND)
                    .min(wire::MAX_NUMBER)
            }
        };
        self.author(link, &view, generation, p.kind);
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

    /// Takes `generation` as applied on this member's own breaker, which already stands
    /// where the event it publishes puts it (an open with its own cooldown, a close), so
    /// that neither the event's echo nor the stored copy read back moves it later: a
    /// tripper half-open by then would otherwise open again on its own news.
    fn author(&mut self, link: &mut impl Link, view: &View, generation: u64, kind: FleetEventKind) {
        let stands = match kind {
            FleetEventKind::Open => view.state == State::Open,
            FleetEventKind::Close => view.state == State::Closed,
        };
        if stands {
            let remaining = match kind {
                FleetEventKind::Open => view.cooldown_remaining,
                FleetEventKind::Close => 0,
            };
            link.apply(FleetEvent {
                generation,
                kind,
                remaining,
            });
            self.echo = Some(generation);
        }
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
