//! The breaker's state across instances: every request is served by a fresh instance of
//! the composed guard, and what one request's breaker did, the next one's knows.

mod common;

use std::time::Duration;

use common::{rejected, serve_with, settings, trip, Behaviour, Upstream};
use tripgate_edge::client::Client;
use tripgate_edge::{FakeClock, Handler, KeyValue, Server};

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
    assert_eq!(&stored[..4], b"tge2");

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
    // That read stamped the state with the stepped clock: time counts from there, not
    // from when the wall clock is past W again, a minute later.
    clock.advance(Duration::from_secs(2));
    let answer = client.get("/").unwrap();
    assert!(rejected(&answer));
    assert_eq!(
        answer.header("retry-after"),
        Some("3"),
        "2 s since that read"
    );
    assert_eq!(
        upstream
            .counts()
            .received
            .load(std::sync::atomic::Ordering::SeqCst),
        5
    );
}

/// Two guards on one store, `ahead`'s wall clock 20 s later than `behind`'s (`clock`).
fn two_hosts(env: &[(&str, String)], kv: &KeyValue, clock: &FakeClock) -> (Server, Server) {
    let later = clock.ahead(Duration::from_secs(20));
    let ahead = serve_with(Handler::Guard, env, kv, Some(&later));
    (ahead, serve_with(Handler::Guard, env, kv, Some(clock)))
}

#[test]
fn a_flipped_bit_in_the_stamp_cannot_hold_the_breaker_open() {
    let upstream = Upstream::start(Behaviour::Status(503));
    let kv = KeyValue::new();
    let clock = FakeClock::new();
    let server = serve_with(
        Handler::Guard,
        &settings(&upstream.url()),
        &kv,
        Some(&clock),
    );
    trip(server.addr());
    // Bit 62 of the stamp (after the 4-byte magic): the export now claims to be from
    // 146 years ahead, so no time would ever pass for it.
    let mut stored = kv.get(BUCKET, &key(&upstream)).unwrap();
    stored[4 + 7] ^= 0x40;
    kv.set(BUCKET, &key(&upstream), stored);
    clock.advance(Duration::from_secs(30 * 24 * 3600));
    upstream.phase(Behaviour::Healthy);
    let answer = Client::new(server.addr()).get("/").unwrap();
    assert_eq!(answer.status, 200, "{}", answer.text());
}

#[test]
fn a_host_whose_clock_is_behind_counts_the_cooldown_from_its_first_read() {
    // Host `ahead`'s wall clock reads 20 s later than host `behind`'s. `ahead` trips the
    // breaker; `behind` reads the stamp 20 s in its future. It counts no time from it, but
    // takes the state as of its own clock: 1.5 s later the 1 s cooldown is over there too.
    let upstream = Upstream::start(Behaviour::Status(503));
    let kv = KeyValue::new();
    let clock = FakeClock::new();
    let (ahead, behind) = two_hosts(&settings(&upstream.url()), &kv, &clock);
    trip(ahead.addr());
    let mut client = Client::new(behind.addr());
    assert!(rejected(&client.get("/").unwrap()), "open on both hosts");
    clock.advance(Duration::from_millis(1_500));
    upstream.phase(Behaviour::Healthy);
    let answer = client.get("/").unwrap();
    assert_eq!(answer.status, 200, "a probe: {}", answer.text());
}

#[test]
fn with_the_skew_set_a_host_ahead_does_not_cut_the_cooldown_short() {
    // `behind` trips the breaker; `ahead`'s clock reads 20 s later, so by the stamp the
    // 1 s cooldown is long over there. With TRIPGATE_CLOCK_SKEW_MS at 20 s, it still waits.
    let upstream = Upstream::start(Behaviour::Status(503));
    let kv = KeyValue::new();
    let clock = FakeClock::new();
    let mut env = settings(&upstream.url());
    env.push(("TRIPGATE_CLOCK_SKEW_MS", "20000".into()));
    let (ahead, behind) = two_hosts(&env, &kv, &clock);
    trip(behind.addr());
    upstream.phase(Behaviour::Healthy);
    let mut client = Client::new(ahead.addr());
    let answer = client.get("/").unwrap();
    assert!(rejected(&answer), "{}", answer.text());
    assert_eq!(answer.header("retry-after"), Some("1"));
    clock.advance(Duration::from_millis(1_500));
    assert_eq!(client.get("/").unwrap().status, 200, "a probe");
    assert_eq!(
        upstream
            .counts()
            .probes
            .load(std::sync::atomic::Ordering::SeqCst),
        1
    );
}

#[test]
fn a_lowered_cooldown_takes_effect_at_the_next_request() {
    // Tripped under a one-hour cooldown; the guard is redeployed with one second.
    let upstream = Upstream::start(Behaviour::Status(503));
    let kv = KeyValue::new();
    let clock = FakeClock::new();
    let mut env = settings(&upstream.url());
    env.push(("TRIPGATE_COOLDOWN_MS", "3600000".into()));
    let before = serve_with(Handler::Guard, &env, &kv, Some(&clock));
    trip(before.addr());
    drop(before);
    env.push(("TRIPGATE_COOLDOWN_MS", "1000".into()));
    let after = serve_with(Handler::Guard, &env, &kv, Some(&clock));
    let mut client = Client::new(after.addr());
    let answer = client.get("/").unwrap();
    assert!(rejected(&answer));
    assert_eq!(answer.header("retry-after"), Some("1"), "{}", answer.text());
    clock.advance(Duration::from_millis(1_500));
    upstream.phase(Behaviour::Healthy);
    assert_eq!(client.get("/").unwrap().status, 200, "a probe");
}

/// The stored value with its breaker state replaced by `snapshot` (the guard's header
/// kept as it is).
fn with_state(stored: &[u8], snapshot: &[u8]) -> Vec<u8> {
    let at = stored
        .windows(4)
        .position(|w| w == &snapshot[..4])
        .expect("the stored value holds a breaker state");
    [&stored[..at], snapshot].concat()
}

#[test]
fn an_isolated_or_disabled_state_is_released() {
    use tripgate_core::{Breaker, Config, MAX_EXPORT_LEN};
    // The guard cannot isolate, disable or release; a state in one of those two, put in
    // its store by something else, would hold it there for good. It releases it.
    let upstream = Upstream::start(Behaviour::Healthy);
    let kv = KeyValue::new();
    let clock = FakeClock::new();
    let server = serve_with(
        Handler::Guard,
        &settings(&upstream.url()),
        &kv,
        Some(&clock),
    );
    let mut client = Client::new(server.addr());
    assert_eq!(client.get("/").unwrap().status, 200);
    for disable in [false, true] {
        let mut manual = Breaker::new(Config::default(), 0).unwrap();
        let _ = if disable {
            manual.disable(0)
        } else {
            manual.isolate(0)
        };
        let mut bytes = [0u8; MAX_EXPORT_LEN];
        let len = manual.export(0, &mut bytes).unwrap();
        let stored = kv.get(BUCKET, &key(&upstream)).unwrap();
        kv.set(BUCKET, &key(&upstream), with_state(&stored, &bytes[..len]));
        upstream.phase(Behaviour::Status(503));
        for n in 0..5 {
            let answer = client.get("/").unwrap();
            assert!(
                !rejected(&answer),
                "disabled {disable}, #{n}: {}",
                answer.text()
            );
        }
        assert!(
            rejected(&client.get("/").unwrap()),
            "trips as a closed breaker does"
        );
        clock.advance(Duration::from_secs(1));
        upstream.phase(Behaviour::Healthy);
        for _ in 0..3 {
            assert_eq!(client.get("/").unwrap().status, 200);
        }
    }
}
