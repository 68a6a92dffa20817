//! Export and import on a watched breaker: a round trip changes nothing, and an import
//! into a breaker leaves it consistent with the donor.

use arbitrary::{Result, Unstructured};
use tripgate_core::{Breaker, Metrics, Transition};

use crate::input;

use super::{all_stale, export, oldest_span, stored_age, Counts, Watch};

impl Watch {
    /// Export at `now`, import into a fresh breaker: exact; and with time passed in
    /// transit, the same as that time passing after an import.
    pub(super) fn round_trip(&mut self, u: &mut Unstructured<'_>, now: u64) -> Result<()> {
        let bytes = export(&self.b, now);
        assert_eq!(bytes, export(&self.b, now), "export is deterministic");
        let mut fresh = Breaker::new(self.config, self.latest).expect("valid config");
        fresh
            .import(&bytes, 0, now)
            .unwrap_or_else(|e| panic!("own export refused: {e}"));
        assert_eq!(export(&fresh, now), bytes, "round trip is exact");
        if self.span >= 1 << 62 {
            return Ok(());
        }
        let (m, f) = (self.b.metrics(now), fresh.metrics(now));
        if m.probes_out == 0
            && m.in_flight == 0
            && !self.forged
            && self.span < 1 << 62
            && oldest_span(&m, now).max(stored_age(&bytes)) < input::HALF_CIRCLE - 1
        {
            // Nothing out that an import forgets, and no span the bytes store as the
            // longest there is: the same breaker.
            assert_eq!(f, m, "imported state reads differently");
        }
        // Time in transit: importing after `elapsed` is the same as importing at once
        // and then letting `elapsed` pass — while every span stays under half the circle,
        // beyond which a span is stored as the longest there is.
        let elapsed = input::duration(u)? % (1 << 62);
        let later = now.wrapping_add(elapsed);
        if stored_age(&bytes).saturating_add(elapsed) >= input::HALF_CIRCLE
            || self.config.window >= 1 << 62
        {
            return Ok(());
        }
        let mut delayed = Breaker::new(self.config, later).expect("valid config");
        delayed
            .import(&bytes, elapsed, later)
            .unwrap_or_else(|e| panic!("own export refused after {elapsed} ns: {e}"));
        assert_eq!(
            delayed.metrics(later),
            fresh.metrics(later),
            "{elapsed} ns in transit"
        );
        assert_eq!(export(&delayed, later), export(&fresh, later));
        Ok(())
    }

    pub(super) fn import(&mut self, u: &mut Unstructured<'_>, donor: &[u8]) -> Result<()> {
        let (reading, now) = self.reading(u)?;
        let own = export(&self.b, now);
        let source = if u.arbitrary()? { &own[..] } else { donor };
        let bytes = input::snapshot(u, source)?;
        let elapsed = if u.arbitrary()? {
            input::duration(u)?
        } else {
            input::number(u)?
        };
        let before = self.b.clone();
        let mut fresh = Breaker::new(self.config, self.latest).expect("valid config");
        let fresh_result = fresh.import(&bytes, elapsed, reading);
        let result = self.b.import(&bytes, elapsed, reading);
        assert_eq!(
            result, fresh_result,
            "import depends on more than the bytes and the window's shape"
        );
        match result {
            Err(_) => {
                assert_eq!(self.b, before, "refused bytes changed the breaker");
                assert_eq!(export(&self.b, now), own);
            }
            Ok(()) => {
                assert_eq!(self.b.latest(), now, "import observes its instant");
                self.span = stored_age(&bytes).saturating_add(elapsed);
                self.latest = now;
                all_stale(&self.b, &self.held, now);
                let (m, f) = (self.b.metrics(now), fresh.metrics(now));
                // The same state but for the epoch a used breaker starts past its own
                // (which a projected transition carries too).
                let last_transition = m.last_transition.map(|t| Transition {
                    epoch: if t.epoch == m.epoch { f.epoch } else { t.epoch },
                    ..t
                });
                assert_eq!(
                    Metrics {
                        epoch: f.epoch,
                        last_transition,
                        ..m
                    },
                    f,
                    "import into a used breaker"
                );
                assert!(m.epoch >= f.epoch);
                assert_eq!((m.in_flight, m.probes_out), (0, 0), "permits carried over");
                // Transitions that fell due in transit are made by the next call.
                self.synced = None;
                self.imported = true;
                self.counts = Counts {
                    admitted: m.admitted_total,
                    rejected: m.rejected_total,
                    stale: m.stale_total,
                };
                self.round_trip(u, now)?;
            }
        }
        Ok(())
    }
}
