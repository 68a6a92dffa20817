//! The thread-safe breaker's closed pair beside failsafe's and recloser's, timed in
//! alternating rounds: each round runs every breaker once, in an order that rotates, so a
//! burst of load on a shared machine lands on one timing of each rather than on all the
//! timings of one. Criterion runs each workload for seconds, one after another; on a VM
//! with noisy neighbours a ratio of two of its medians also carries what the neighbours
//! did in between.
//!
//!     cargo run --release -p tripgate-bench --example alternating [rounds=400]
//!
//! Prints, per thread count (1, 2 and 8 threads on one breaker; wall time per pair of
//! throughput, as `benches/native.rs` reports it), each breaker's min, p10 and median
//! over the rounds, and the median of the per-round ratios peer / tripgate (above 1: the
//! peer costs more).

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use tripgate_bench::{
    failsafe_breaker, failsafe_pair, recloser_breaker, recloser_pair, threaded, timed, tripgate,
    tripgate_pair,
};

const NAMES: [&str; 3] = ["tripgate", "failsafe", "recloser"];

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(400);
    let b = Arc::new(tripgate());
    let f = Arc::new(failsafe_breaker());
    let r = Arc::new(recloser_breaker());
    for threads in [1u32, 2, 8] {
        // About 2 ms per timing on one thread, a little more with threads.
        let iters: u64 = if threads == 1 { 100_000 } else { 50_000 };
        let rounds = if threads == 1 { rounds } else { rounds / 4 }.max(5);
        let time = |which: usize| -> Duration {
            match (which, threads) {
                (0, 1) => timed(iters, |_| tripgate_pair(black_box(&b))),
                (1, 1) => timed(iters, |_| failsafe_pair(black_box(&*f))),
                (2, 1) => timed(iters, |_| recloser_pair(black_box(&r))),
                (0, n) => threaded(&b, n, iters, tripgate_pair),
                (1, n) => threaded(&f, n, iters, failsafe_pair),
                (_, n) => threaded(&r, n, iters, recloser_pair),
            }
        };
        for which in 0..NAMES.len() {
            time(which); // warm-up
        }
        let mut ns: [Vec<f64>; 3] = Default::default();
        let mut ratios: [Vec<f64>; 2] = Default::default();
        for round in 0..rounds {
            let mut this = [0.0; 3];
            for k in 0..NAMES.len() {
                let which = (round + k) % NAMES.len();
                this[which] = time(which).as_secs_f64() * 1e9 / iters as f64;
            }
            for which in 0..NAMES.len() {
                ns[which].push(this[which]);
            }
            ratios[0].push(this[1] / this[0]);
            ratios[1].push(this[2] / this[0]);
        }
        println!(
            "{threads} thread{} on one breaker, {rounds} rounds of {iters} pairs{}:",
            if threads == 1 { "" } else { "s" },
            if threads == 1 { "" } else { " per thread" }
        );
        for (name, v) in NAMES.iter().zip(ns.iter_mut()) {
            let (min, p10, p50) = quantiles(v);
            println!("  {name:9} min {min:6.2} ns  p10 {p10:6.2} ns  median {p50:6.2} ns");
        }
        for (name, v) in NAMES[1..].iter().zip(ratios.iter_mut()) {
            let (_, _, p50) = quantiles(v);
            println!("  {name} / tripgate, median of the rounds' ratios: {p50:.2}");
        }
    }
}

/// Min, p10 and median.
fn quantiles(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[0], v[v.len() / 10], v[v.len() / 2])
}
