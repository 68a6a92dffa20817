//! The brownout demo's phases, served through the composed guard over real HTTP on
//! 127.0.0.1, a fresh instance per request, the breaker's state in the shared store.
//!
//! The breaker is the demo's (threshold 5, K = 2 probes, M = 2 successes) with a 1 s
//! cooldown on a scripted clock: the test moves time past the cooldown instead of
//! waiting for it. The upstream's phases run in real time (the 300 ms deadline, the cold
//! fills), kept short.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{burst, rejected, serve_with, settings, until, Behaviour, Upstream};
use tripgate_edge::{FakeClock, Handler, KeyValue};

const THRESHOLD: u64 = 5;
const K: u32 = 2;
const M: usize = 2;

#[test]
fn the_demo_phases_through_the_composed_guard() {
    let upstream = Upstream::start(Behaviour::Healthy);
    let kv = KeyValue::new();
    let clock = FakeClock::new();
    let server = serve_with(
        Handler::Guard,
        &settings(&upstream.url()),
        &kv,
        Some(&clock),
    );
    let addr = server.addr();

    // Healthy: everything passes.
    let answers = burst(addr, "/", 4, 5);
    assert!(answers.iter().all(|a| a.status == 200), "healthy: all 200");
    let mut served = answers.len();
    served += storm(addr, &upstream);
    // Recovery: the cooldown passes.
    clock.advance(Duration::from_secs(1));
    served += recovery(addr, &upstream);
    served += flood(addr, &upstream);
    served += hang(addr, &upstream);
    upstream.phase(Behaviour::Healthy);

    assert_eq!(
        server.stats().instances.load(Ordering::SeqCst) as usize,
        served,
        "a fresh instance for every request"
    );
    assert_eq!(
        server.stats().failures.load(Ordering::SeqCst),
        0,
        "no instance failed"
    );
}

/// The 503 storm trips the breaker. Four clients each have at most one call out, so at
/// most THRESHOLD + 3 calls reach the upstream: the ones admitted before the trip was
/// written, and no outcome lost between instances. Returns the requests served.
fn storm(addr: SocketAddr, upstream: &Upstream) -> usize {
    let counts = upstream.phase(Behaviour::Status(503));
    let answers = burst(addr, "/", 4, 10);
    let received = counts.received.load(Ordering::SeqCst);
    let turned_away = answers.iter().filter(|a| rejected(a)).count();
    assert!(
        (THRESHOLD..=THRESHOLD + 3).contains(&received),
        "503 storm: {received} calls reached the upstream"
    );
    assert_eq!(
        turned_away as u64,
        40 - received,
        "every other call was rejected"
    );
    for answer in answers.iter().filter(|a| rejected(a)) {
        assert_eq!(
            answer.header("retry-after"),
            Some("1"),
            "the rest of the 1 s cooldown"
        );
    }
    answers.len()
}

/// Past the cooldown, the upstream restarts cold (4 fills of 80 ms, 2 at a time). Six
/// clients press on until each has had 3 answers from the upstream.
fn recovery(addr: SocketAddr, upstream: &Upstream) -> usize {
    let counts = upstream.phase(Behaviour::Cold {
        fill: Duration::from_millis(80),
        slots: 2,
        fills: 4,
    });
    let answers = until(addr, 6, 3, Duration::from_secs(10), |a| a.status == 200);
    let arrivals = counts.arrivals.lock().unwrap().clone();
    let peak_probes = counts.peak_probes.load(Ordering::SeqCst);
    assert!(
        (1..=K).contains(&peak_probes),
        "recovery: at most K = {K} probes at once, saw {peak_probes}"
    );
    assert!(
        arrivals.len() > M && arrivals[..M].iter().all(|&probe| probe),
        "recovery: the first M = {M} calls to reach the upstream are probes: {arrivals:?}"
    );
    assert_eq!(
        arrivals.iter().filter(|&&probe| probe).count(),
        M,
        "recovery: M probe successes close the breaker; no probe after"
    );
    assert!(
        answers.iter().filter(|a| a.status == 200).count() >= 18,
        "recovery: every client got its answers"
    );
    answers.len()
}

/// The 404 flood: the upstream answers, so nothing trips.
fn flood(addr: SocketAddr, upstream: &Upstream) -> usize {
    let counts = upstream.phase(Behaviour::Status(404));
    let answers = burst(addr, "/", 4, 15);
    assert!(
        answers.iter().all(|a| a.status == 404 && !rejected(a)),
        "404 flood: all relayed"
    );
    assert_eq!(counts.received.load(Ordering::SeqCst), 60);
    answers.len()
}

/// The hang: the upstream stalls past the 300 ms deadline. Hang detection needs the calls
/// in flight, and an instance sees only its own, so the breaker trips on the timeouts
/// themselves: THRESHOLD calls time out (504) before the first rejection.
fn hang(addr: SocketAddr, upstream: &Upstream) -> usize {
    let counts = upstream.phase(Behaviour::Hang(Duration::from_secs(3)));
    let answers = burst(addr, "/", 5, 4);
    let timed_out = answers.iter().filter(|a| a.status == 504).count() as u64;
    eprintln!(
        "{:?}",
        answers
            .iter()
            .map(|a| (a.status, a.text()))
            .collect::<Vec<_>>()
    );
    let received = counts.received.load(Ordering::SeqCst);
    assert_eq!(
        timed_out, received,
        "hang: every call that reached the upstream timed out"
    );
    assert!(
        (THRESHOLD..=THRESHOLD + 4).contains(&timed_out),
        "hang: the breaker tripped after {timed_out} timeouts"
    );
    assert_eq!(
        answers.iter().filter(|a| rejected(a)).count() as u64,
        20 - timed_out,
        "hang: the rest were rejected"
    );
    answers.len()
}
