//! The guard's rules one at a time: the composition, one breaker per authority,
//! compare-and-swap under concurrency, connection errors, bad settings, a damaged or
//! missing store.

mod common;

use std::net::TcpListener;
use std::sync::atomic::Ordering;

use common::{
    assert_no_outcome_lost, burst, rejected, runtime, serve_with, settings, trip, Behaviour,
    Upstream,
};
use tripgate_edge::client::Client;
use tripgate_edge::{FakeClock, Handler, KeyValue};

#[test]
fn the_composed_guard_imports_no_breaker_and_serves_wasi_http() {
    let imports = runtime().imports(Handler::Guard);
    // The breaker is inside: wac plugged the tripgate component into the guard.
    assert!(
        !imports.iter().any(|name| name.starts_with("tripgate:")),
        "{imports:?}"
    );
    for wanted in [
        "wasi:http/outgoing-handler@0.2.12",
        "wasi:http/types@0.2.12",
        "wasi:keyvalue/store@0.2.0-draft2",
        "wasi:keyvalue/atomics@0.2.0-draft2",
        "wasi:clocks/wall-clock@0.2.12",
        "wasi:clocks/monotonic-clock@0.2.12",
        "wasi:cli/environment@0.2.12",
    ] {
        assert!(
            imports.iter().any(|name| name == wanted),
            "{wanted} in {imports:?}"
        );
    }
    assert_eq!(
        runtime().exports(Handler::Guard),
        vec!["wasi:http/incoming-handler@0.2.12".to_string()]
    );
    let bare = runtime().imports(Handler::Bare);
    assert!(
        !bare.iter().any(|name| name.starts_with("wasi:keyvalue")),
        "{bare:?}"
    );
    // The composed component holds both: it is larger than the guard alone by about
    // the tripgate component.
    assert!(tripgate_edge::GUARD.len() > tripgate_edge::BARE.len() + 50_000);
}

#[test]
fn each_upstream_authority_has_its_own_breaker() {
    let failing = Upstream::start(Behaviour::Status(500));
    let healthy = Upstream::start(Behaviour::Healthy);
    let kv = KeyValue::new();
    let mut env = settings(&failing.url());
    env[0].1 = format!("/a={},/b={}", failing.url(), healthy.url());
    let server = serve_with(Handler::Guard, &env, &kv, Some(&FakeClock::new()));
    let mut client = Client::new(server.addr());
    for _ in 0..5 {
        assert_eq!(client.get("/a/x").unwrap().status, 500);
    }
    assert!(rejected(&client.get("/a/y").unwrap()), "a is open");
    for _ in 0..5 {
        assert_eq!(client.get("/b/x?q=1").unwrap().status, 200, "b is not");
    }
    assert!(kv
        .get("tripgate", &format!("tripgate/breaker/{}", failing.addr()))
        .is_some());
    assert!(kv
        .get("tripgate", &format!("tripgate/breaker/{}", healthy.addr()))
        .is_some());
    let unrouted = client.get("/c").unwrap();
    assert_eq!(unrouted.status, 404);
    assert!(
        unrouted.text().contains("no upstream for `/c`"),
        "{}",
        unrouted.text()
    );
}

#[test]
fn concurrent_instances_lose_no_outcome() {
    // Eight clients against a failing upstream, threshold 20: the instances record into
    // states other instances have written meanwhile. A lost outcome would let more calls
    // through before the trip; none is lost, so at most 20 + 7 reach it.
    let upstream = Upstream::start(Behaviour::Status(503));
    let kv = KeyValue::new();
    let mut env = settings(&upstream.url());
    env.push(("TRIPGATE_FAILURE_THRESHOLD", "20".into()));
    env.push(("TRIPGATE_MIN_CALLS", "20".into()));
    let server = serve_with(Handler::Guard, &env, &kv, Some(&FakeClock::new()));
    assert_no_outcome_lost(server.addr(), &upstream);
}

#[test]
fn a_lost_swap_is_read_again_and_recorded_once() {
    let upstream = Upstream::start(Behaviour::Status(503));
    let kv = KeyValue::new();
    let server = serve_with(
        Handler::Guard,
        &settings(&upstream.url()),
        &kv,
        Some(&FakeClock::new()),
    );
    let mut client = Client::new(server.addr());
    // Each of the first five requests loses its first swap, reads the newer value and
    // records there: five faults, exactly.
    for _ in 0..5 {
        kv.collide_next_swaps(1);
        assert!(!rejected(&client.get("/").unwrap()));
    }
    assert_eq!(kv.stats().conflicts, 5);
    assert!(rejected(&client.get("/").unwrap()), "tripped at the fifth");
    assert_eq!(upstream.counts().received.load(Ordering::SeqCst), 5);

    // Past the cooldown, a probe's admission is written before its call: it loses seven
    // swaps, wins the eighth, and is still the only probe.
    let clock = FakeClock::new();
    let kv = KeyValue::new();
    let server = serve_with(
        Handler::Guard,
        &settings(&upstream.url()),
        &kv,
        Some(&clock),
    );
    let mut client = Client::new(server.addr());
    for _ in 0..5 {
        client.get("/").unwrap();
    }
    clock.advance(std::time::Duration::from_secs(1));
    let counts = upstream.phase(Behaviour::Healthy);
    kv.collide_next_swaps(7);
    assert_eq!(client.get("/").unwrap().status, 200);
    assert_eq!(*counts.arrivals.lock().unwrap(), vec![true]);

    // A store that loses every swap: the admission gives up after eight tries with a
    // 503 that says why, and nothing reaches the upstream.
    clock.advance(std::time::Duration::from_secs(1));
    kv.collide_next_swaps(u64::MAX);
    let answer = client.get("/").unwrap();
    assert_eq!(answer.status, 503);
    assert!(
        answer.text().contains("changed 8 times"),
        "{}",
        answer.text()
    );
    assert_eq!(counts.received.load(Ordering::SeqCst), 1);
    assert_eq!(server.stats().failures.load(Ordering::SeqCst), 0);
}

#[test]
fn connection_errors_trip_the_breaker() {
    // A port nothing listens on.
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let kv = KeyValue::new();
    let server = serve_with(
        Handler::Guard,
        &settings(&format!("http://{addr}")),
        &kv,
        Some(&FakeClock::new()),
    );
    let mut client = Client::new(server.addr());
    for _ in 0..5 {
        let answer = client.get("/").unwrap();
        assert_eq!(answer.status, 502, "{}", answer.text());
    }
    assert!(rejected(&client.get("/").unwrap()));
}

#[test]
fn bad_settings_are_answered_with_the_reason() {
    let upstream = Upstream::start(Behaviour::Healthy);
    let kv = KeyValue::new();
    let cases: [(Vec<(&str, String)>, &str); 4] = [
        (vec![], "TRIPGATE_UPSTREAMS: not set"),
        (
            vec![("TRIPGATE_UPSTREAMS", "/=ftp://x".into())],
            "does not start with http:// or https://",
        ),
        (
            vec![
                ("TRIPGATE_UPSTREAMS", format!("/={}", upstream.url())),
                ("TRIPGATE_TIMEOUT_MS", "soon".into()),
            ],
            "TRIPGATE_TIMEOUT_MS: `soon` is not a number of milliseconds > 0",
        ),
        (
            vec![
                ("TRIPGATE_UPSTREAMS", format!("/={}", upstream.url())),
                ("TRIPGATE_PROBES", "0".into()),
            ],
            // The core's own words for the rule.
            "half-open-max-probes must be between 1 and 64",
        ),
    ];
    for (env, words) in cases {
        let server = serve_with(Handler::Guard, &env, &kv, None);
        let answer = Client::new(server.addr()).get("/").unwrap();
        assert_eq!(answer.status, 500);
        assert!(
            answer.text().contains(words),
            "{:?} in {}",
            words,
            answer.text()
        );
        assert_eq!(server.stats().failures.load(Ordering::SeqCst), 0, "no trap");
    }
    assert_eq!(upstream.counts().received.load(Ordering::SeqCst), 0);
}

#[test]
fn a_damaged_state_is_replaced_by_a_fresh_breaker() {
    let upstream = Upstream::start(Behaviour::Status(503));
    let kv = KeyValue::new();
    let key = format!("tripgate/breaker/{}", upstream.addr());
    let server = serve_with(
        Handler::Guard,
        &settings(&upstream.url()),
        &kv,
        Some(&FakeClock::new()),
    );
    let mut client = Client::new(server.addr());
    for garbage in [b"not a state".to_vec(), b"tge2\x01\x02".to_vec(), {
        let mut v = b"tge2".to_vec();
        v.extend_from_slice(&[0xff; 64]);
        v
    }] {
        kv.set("tripgate", &key, garbage);
        let answer = client.get("/").unwrap();
        assert_eq!(
            answer.status,
            503,
            "relayed, not rejected: {}",
            answer.text()
        );
        assert!(!rejected(&answer));
        let stored = kv.get("tripgate", &key).unwrap();
        assert_eq!(&stored[..4], b"tge2", "replaced by a real state");
        assert!(stored.len() > 64);
    }
    assert_eq!(server.stats().failures.load(Ordering::SeqCst), 0);
}

#[test]
fn without_its_store_the_guard_fails_open() {
    let upstream = Upstream::start(Behaviour::Status(503));
    let kv = KeyValue::new();
    kv.set_unavailable(true);
    let server = serve_with(
        Handler::Guard,
        &settings(&upstream.url()),
        &kv,
        Some(&FakeClock::new()),
    );
    let mut client = Client::new(server.addr());
    for _ in 0..10 {
        let answer = client.get("/").unwrap();
        assert_eq!(answer.status, 503);
        assert!(
            !rejected(&answer),
            "no state kept, so no trip across requests"
        );
    }
    assert_eq!(upstream.counts().received.load(Ordering::SeqCst), 10);

    // Back: state is kept again from the next request on.
    kv.set_unavailable(false);
    trip(server.addr());
}

#[test]
fn the_bare_handler_proxies_without_a_breaker() {
    let upstream = Upstream::start(Behaviour::Status(503));
    let kv = KeyValue::new();
    let server = serve_with(Handler::Bare, &settings(&upstream.url()), &kv, None);
    let answers = burst(server.addr(), "/", 2, 10);
    assert!(answers.iter().all(|a| a.status == 503 && !rejected(a)));
    assert_eq!(upstream.counts().received.load(Ordering::SeqCst), 20);
    assert_eq!(kv.stats().reads, 0);
}

#[test]
fn statuses_outside_http_are_failures() {
    // HTTP libraries pass statuses up to 999; none is an HTTP answer, so each is a
    // failure (SPEC.md § Outcomes), and five of them trip the breaker.
    let upstream = Upstream::start(Behaviour::Status(999));
    let kv = KeyValue::new();
    let clock = FakeClock::new();
    let mut env = settings(&upstream.url());
    env.push(("TRIPGATE_PROBE_TIMEOUT_MS", "6000".into()));
    let server = serve_with(Handler::Guard, &env, &kv, Some(&clock));
    let mut client = Client::new(server.addr());
    for status in [600, 700, 800, 900, 999] {
        upstream.phase(Behaviour::Status(status));
        let answer = client.get("/").unwrap();
        assert_eq!(answer.status, status, "relayed as it came");
        assert!(!rejected(&answer));
    }
    let answer = client.get("/").unwrap();
    assert!(rejected(&answer), "tripped: {}", answer.text());

    // A probe answered 999 fails the round at once: open again for the 1 s cooldown,
    // not until the 6 s probe timeout.
    clock.advance(std::time::Duration::from_secs(1));
    let counts = upstream.phase(Behaviour::Status(999));
    assert_eq!(client.get("/").unwrap().status, 999);
    assert_eq!(*counts.arrivals.lock().unwrap(), vec![true]);
    let answer = client.get("/").unwrap();
    assert!(rejected(&answer));
    assert_eq!(answer.header("retry-after"), Some("1"), "{}", answer.text());
    clock.advance(std::time::Duration::from_secs(1));
    upstream.phase(Behaviour::Healthy);
    assert_eq!(client.get("/").unwrap().status, 200, "the next probe");
    assert_eq!(server.stats().failures.load(Ordering::SeqCst), 0);
}

#[test]
fn a_request_without_a_usable_host_is_a_bad_request() {
    use std::io::{BufReader, Write};
    let upstream = Upstream::start(Behaviour::Healthy);
    let kv = KeyValue::new();
    let server = serve_with(Handler::Guard, &settings(&upstream.url()), &kv, None);
    for (request, why) in [
        (b"GET / HTTP/1.1\r\n\r\n".to_vec(), "no Host"),
        (
            b"GET / HTTP/1.1\r\nhost: \xc3\xa9\r\n\r\n".to_vec(),
            "not ASCII",
        ),
    ] {
        let mut stream = std::net::TcpStream::connect(server.addr()).unwrap();
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        stream.write_all(&request).unwrap();
        let answer = tripgate_edge::client::read_answer(&mut BufReader::new(stream)).unwrap();
        assert_eq!(answer.status, 400, "{why}: {}", answer.text());
        assert!(answer.text().contains("Host"), "{}", answer.text());
    }
    assert_eq!(server.stats().failures.load(Ordering::SeqCst), 0);
    assert_eq!(upstream.counts().received.load(Ordering::SeqCst), 0);
}
