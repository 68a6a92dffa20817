//! The breaker's state across instances: every request is served by a fresh instance of
//! the composed guard, and what one request's breaker did, the next one's knows.

mod common;

use std::time::Duration;

use common::{rejected, serve_with, settings, Behaviour, Upstream};
use tripgate_edge::client::Client;
use tripgate_edge::{FakeClock, Handler, KeyValue};

const BUCKET: &str = "tripgate";

fn key(upstream: &Upstream) -> String {
    format!("tripgate/breaker/{}", upstream.addr())
}

#[test]
fn a_trip_seen_by_one_request_rejects_the_next_in_a_fresh_instance() {
    let upstream = Upstream::start(Behaviour::Status(503));
    let kv = KeyValue::new();
    let clock = FakeClock::new();
    let mut env = settings(&upstream.url());
    env.push(("TRIPGATE_COOLDOWN_MS", "5000".into()));
    let server = serve_with(Handler::Guard, &env, &kv, Some(&clock));
    let mut client = Client::new(server.addr());

    for n in 1..=5 {
        let answer = client.get("/").unwrap();
        assert_eq!(
            answer.status, 503,
            "request {n}: the upstream's 503, relayed"
        );
        assert!(!rejected(&answer), "request {n} reached the upstream");
    }
    assert_eq!(
        upstream
            .counts()
            .received
            .load(std::sync::atomic::Ordering::SeqCst),
        5
    );

    // Request 5 tripped the breaker in its instance and wrote the state; request 6, in
    // an instance of its own, is turned away without reaching the upstream.
    let sixth = client.get("/").unwrap();
    assert!(rejected(&sixth), "request 6 is rejected: {sixth:?}");
    assert_eq!(sixth.header("retry-after"), Some("5"));
    assert_eq!(
        sixth.header("x-tripgate"),
        Some("rejected; state=open; reason=open")
    );
    assert_eq!(
        upstream
            .counts()
            .received
            .load(std::sync::atomic::Ordering::SeqCst),
        5
    );
    assert_eq!(
        server
            .stats()
            .instances
            .load(std::sync::atomic::Ordering::SeqCst),
        6,
        "one instance per request"
    );

    // The stored value is the guard's: a magic, a wall-clock stamp, the breaker's export.
    let stored = kv
        .get(BUCKET, &key(&upstream))
        .expect("the breaker's state is stored");
    assert_eq!(&stored[..4], b"tge1");

    // Time passes by the wall clock the state is stamped with: 2 s of the 5 s cooldown
    // are gone for the next instance, though its monotonic clock starts elsewhere.
    clock.advance(Duration::from_secs(2));
    let later = client.get("/").unwrap();
    assert!(rejected(&later));
    assert_eq!(later.header("retry-after"), Some("3"));

    // Past the cooldown the next request is a half-open probe.
    clock.advance(Duration::from_secs(3));
    upstream.phase(Behaviour::Healthy);
    let probe = client.get("/").unwrap();
    assert_eq!(probe.status, 200);
    let counts = upstream.counts();
    assert_eq!(counts.probes.load(std::sync::atomic::Ordering::SeqCst), 1);
    // M = 2: a second probe closes it, then calls are plain again.
    assert_eq!(client.get("/").unwrap().status, 200);
    assert_eq!(client.get("/").unwrap().status, 200);
    assert_eq!(*counts.arrivals.lock().unwrap(), vec![true, true, false]);
}

#[test]
fn a_wall_clock_stepped_back_counts_as_no_time() {
    let upstream = Upstream::start(Behaviour::Status(503));
    let kv = KeyValue::new();
    let clock = FakeClock::new();
    let mut env = settings(&upstream.url());
    env.push(("TRIPGATE_COOLDOWN_MS", "5000".into()));
    let server = serve_with(Handler::Guard, &env, &kv, Some(&clock));
    let mut client = Client::new(server.addr());
    for _ in 0..5 {
        client.get("/").unwrap();
    }
    // The trip was stamped at wall time W. The wall clock is stepped back a minute: the
    // time since W is negative, so it counts as none, not as a minute the other way.
    clock.step_wall_back(Duration::from_secs(60));
    clock.advance(Duration::from_secs(1));
    let answer = client.get("/").unwrap();
    assert!(rejected(&answer));
    assert_eq!(
        answer.header("retry-after"),
        Some("5"),
        "the whole cooldown"
    );
    // Once the wall clock is past W again, time counts from there.
    clock.advance(Duration::from_secs(61));
    let answer = client.get("/").unwrap();
    assert!(rejected(&answer));
    assert_eq!(answer.header("retry-after"), Some("3"), "2 s past W");
    assert_eq!(
        upstream
            .counts()
            .received
            .load(std::sync::atomic::Ordering::SeqCst),
        5
    );
}
