//! Soak: 10⁸ acquire/record pairs through ONE instance of the component in wasmtime, on
//! a fake clock that moves 1 µs per pair, cycling a healthy upstream into a brownout and
//! back, so that every path stays busy for the whole run: permit resources and raw
//! permits, leaked permits of both kinds (dropped resources; raw permits never recorded),
//! rejections (open, probing, saturated), trips, cooldowns with backoff, probes, probe
//! timeouts and recovery. Linear memory and process RSS are printed at the start, every
//! tenth of the run and at the end: both must stay flat.
//!
//! `cargo run --release -p tripgate-wasmtime-bench --bin soak [PAIRS]`

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use tripgate_wasmtime::{
    Breaker, Clock, Config, FakeClock, Metrics, Outcome, RawPermit, RejectReason, Runtime,
    MILLISECOND,
};

/// Pairs in one cycle of the upstream: healthy, then a brownout (503s and timeouts).
const CYCLE: u64 = 20_000;
const BROWNOUT: u64 = 5_000;

/// Resident set size of this process, in bytes (`/proc/self/statm`, 4 KiB pages).
fn rss() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn main() -> Result<()> {
    let pairs: u64 = std::env::args()
        .nth(1)
        .map(|n| n.parse())
        .transpose()?
        .unwrap_or(100_000_000);
    let clock = Arc::new(FakeClock::new(0));
    let runtime = Runtime::new()?.with_clock(Arc::clone(&clock) as Arc<dyn Clock + Send + Sync>);
    let instance = runtime.instantiate()?;
    let mut soak = Soak {
        breaker: instance.breaker(&config())?,
        // A second breaker in the same instance, so the allocator sees more than one owner.
        other: instance.breaker(&Config::default())?,
        held_raw: Vec::with_capacity(64),
    };

    let start_memory = instance.memory_bytes();
    let start_rss = rss();
    println!(
        "start: linear memory {} ({start_memory} bytes), RSS {}",
        mib(start_memory as u64),
        mib(start_rss)
    );
    let started = Instant::now();
    for i in 0..pairs {
        clock.advance(1_000);
        soak.pair(i)?;
        if (i + 1) % (pairs / 10).max(1) == 0 {
            let m = soak.breaker.metrics()?;
            println!(
                "{:>11} pairs: memory {} RSS {}, {:?}, {} transitions, admitted {}, \
                 rejected open {} probing {} saturated {}, stale {}",
                i + 1,
                mib(instance.memory_bytes() as u64),
                mib(rss()),
                m.state,
                m.transitions_total,
                m.admitted_total,
                m.rejected(RejectReason::Open),
                m.rejected(RejectReason::Probing),
                m.rejected(RejectReason::Saturated),
                m.stale_total,
            );
        }
    }
    let elapsed = started.elapsed();
    let end_memory = instance.memory_bytes();
    println!(
        "end: linear memory {} ({end_memory} bytes), RSS {}",
        mib(end_memory as u64),
        mib(rss())
    );
    let m = soak.breaker.metrics()?;
    verdict(pairs, elapsed, &m)?;
    ensure!(
        end_memory == start_memory,
        "linear memory grew from {start_memory} to {end_memory} bytes"
    );
    Ok(())
}

/// Short times, so that a brownout of 5 ms (5,000 pairs) trips, backs off, probes and
/// recovers many times over.
fn config() -> Config {
    Config {
        failure_threshold: 20,
        min_calls: 20,
        window: 4 * MILLISECOND,
        buckets: 8,
        cooldown: MILLISECOND,
        backoff_factor: 2.0,
        max_cooldown: Some(4 * MILLISECOND),
        probe_timeout: MILLISECOND / 2,
        half_open_max_probes: 1,
        half_open_required_successes: 3,
        max_in_flight: Some(64),
        ..Config::default()
    }
}

/// The upstream's answer to pair `i`: a brownout's 503s and timeouts, or mostly successes
/// with some 404s.
fn outcome(i: u64) -> Outcome {
    let brownout = i % CYCLE >= CYCLE - BROWNOUT;
    if brownout {
        if i.is_multiple_of(3) {
            Outcome::Timeout
        } else {
            Outcome::Status(503)
        }
    } else if i.is_multiple_of(5) {
        Outcome::Status(404)
    } else {
        Outcome::Success
    }
}

/// The breakers under soak, and the raw permits held back.
struct Soak {
    breaker: Breaker,
    other: Breaker,
    held_raw: Vec<RawPermit>,
}

impl Soak {
    /// Pair `i`, and whatever else falls due with it: a burst, a late record.
    fn pair(&mut self, i: u64) -> Result<()> {
        let (breaker, outcome) = (&self.breaker, outcome(i));
        if i.is_multiple_of(2) {
            // A permit resource: recorded, or (1 in 97) dropped without an outcome.
            if let Ok(permit) = breaker.acquire()?.decision {
                if !i.is_multiple_of(97) {
                    permit.record(outcome)?;
                }
            }
        } else if let Ok(permit) = breaker.acquire_raw()?.decision {
            // A raw permit: recorded now, or (1 in 89) held back and recorded much later,
            // often after the state changed (stale), or never (the list is capped).
            if i % 89 == 1 && self.held_raw.len() < 64 {
                self.held_raw.push(permit);
            } else {
                breaker.record_raw(permit, outcome)?;
            }
        }
        if i % CYCLE == 1_000 {
            // A burst of concurrent calls past `max-in-flight` (64): the rest are
            // rejected as saturated; then they all answer.
            let burst: Vec<_> = (0..72)
                .filter_map(|_| breaker.acquire_raw().ok()?.decision.ok())
                .collect();
            for permit in burst {
                breaker.record_raw(permit, Outcome::Success)?;
            }
        }
        if i.is_multiple_of(499) {
            if let Some(permit) = self.held_raw.pop() {
                breaker.record_raw(permit, Outcome::Success)?;
            }
            if let Ok(permit) = self.other.acquire()?.decision {
                permit.record(Outcome::Success)?;
            }
        }
        Ok(())
    }
}

/// The run's figures; every kind of decision happened.
fn verdict(pairs: u64, elapsed: Duration, m: &Metrics) -> Result<()> {
    println!(
        "{pairs} pairs in {:.1} s: {:.0} pairs/s ({:.0} ns a pair); {} transitions, \
         {} admitted, {} rejected",
        elapsed.as_secs_f64(),
        pairs as f64 / elapsed.as_secs_f64(),
        elapsed.as_nanos() as f64 / pairs as f64,
        m.transitions_total,
        m.admitted_total,
        m.rejected(RejectReason::Open)
            + m.rejected(RejectReason::Probing)
            + m.rejected(RejectReason::Saturated)
            + m.rejected(RejectReason::Isolated),
    );
    ensure!(pairs < CYCLE * 10 || m.transitions_total >= pairs / CYCLE * 3);
    ensure!(
        pairs < CYCLE * 10
            || (m.rejected(RejectReason::Open) > 0
                && m.rejected(RejectReason::Probing) > 0
                && m.rejected(RejectReason::Saturated) > 0
                && m.stale_total > 0)
    );
    Ok(())
}
