//! The store's answers to a member's commands: what each reply, read back, does to the
//! member and its breaker.

use alloc::vec::Vec;

use super::super::lease::{Held, Lease};
use super::super::{Link, Reply};
use super::{Awaiting, Protocol, Publishing, GENERATION_TRIES};
use crate::fleet::wire::{self, Ignored, Signer};
use crate::fleet::{Announcement, AnnouncementKind, FleetEventKind};
use crate::time::{Nanos, MILLISECOND};

impl Protocol {
    /// Takes in the reply to the command in flight.
    pub(super) fn reply(
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
                self.voted(link, signer, mine, now_ms, &votes);
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
            (awaiting @ (Awaiting::Take { .. } | Awaiting::Renew { .. }), reply) => {
                self.leased(awaiting, reply, link, now);
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
            (_, _) => {}
        }
    }

    /// The answer to a take or a renew of the lease.
    fn leased(&mut self, awaiting: Awaiting, reply: Reply<'_>, link: &mut impl Link, now: Nanos) {
        let length = self.settings.probe_timeout;
        match (awaiting, reply) {
            (Awaiting::Take { sent }, Reply::Lease { held: true, .. }) => {
                let lease = Held::taken(sent, now, length, link.view().admitted);
                self.lease = Lease::Held(lease);
                self.counts.leases = self.counts.leases.saturating_add(1);
                link.store(true, Some(lease.until.saturating_sub(now)));
            }
            (
                Awaiting::Take { .. },
                Reply::Lease {
                    held: false,
                    ttl_ms,
                },
            ) => {
                // Another member holds it: ask again no sooner than it runs out.
                let wait = u64::try_from(ttl_ms)
                    .unwrap_or(0)
                    .saturating_mul(MILLISECOND)
                    .clamp(MILLISECOND, length);
                self.lease_retry_at = now.saturating_add(wait);
            }
            // Refused, or a reply of another shape: not asked again at once.
            (Awaiting::Take { .. }, _) => {
                self.lease_retry_at = now.saturating_add(length / 3);
            }
            (Awaiting::Renew { sent }, Reply::Renewed(true)) if self.lease_held() => {
                if let Lease::Held(lease) = self.lease {
                    let lease = lease.renewed(sent, now, length);
                    self.lease = Lease::Held(lease);
                    link.store(true, Some(lease.until.saturating_sub(now)));
                }
            }
            // Another member's by now (it ran out first), or refused: nothing to give back.
            _ => {
                self.lease = Lease::Free;
                link.store(true, None);
            }
        }
    }

    /// The votes the store holds: with this member's, do they reach the quorum?
    fn voted(
        &mut self,
        link: &mut impl Link,
        signer: Option<&dyn Signer>,
        mine: u64,
        now_ms: u64,
        votes: &[(&[u8], u64)],
    ) {
        let mut ages: Vec<(u64, Nanos)> = Vec::with_capacity(votes.len());
        for &(entry, at_ms) in votes {
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
