//! The composed guard on the host that stands in for Spin (`tripgate_edge::spin`): only
//! Spin's platform world to import from, Spin's default key-value store (granted labels
//! only; swaps compare values and upsert on an absent key), and Spin's outbound
//! allow-list. Every request in a fresh instance, as Spin's HTTP trigger does.

mod common;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use common::{assert_no_outcome_lost, rejected, runtime, settings, Behaviour, Upstream};
use tripgate_edge::client::Client;
use tripgate_edge::{spin, FakeClock, Handler, KeyValue, Options, Server};

/// The guard on Spin with `env`, the default store granted, `upstream` allowed.
fn serve_on_spin(
    env: &[(&str, String)],
    kv: &KeyValue,
    allowed: &[String],
    clock: &FakeClock,
) -> Server {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut options = Options::new(Handler::Guard, &env);
    options.kv = kv.clone();
    options.clock = Some(clock.clone());
    options.allowed_outbound = Some(Arc::new(allowed.to_vec()));
    Server::start(runtime(), options).expect("the server starts")
}

fn on_default_store(upstream: &Upstream) -> Vec<(&'static str, String)> {
    let mut env = settings(&upstream.url());
    env.push(("TRIPGATE_BUCKET", "default".into()));
    env
}

#[test]
fn the_guard_imports_nothing_spins_platform_world_lacks() {
    let imports = runtime().imports(Handler::Guard);
    assert!(imports.len() >= 10, "{imports:?}");
    let missing: Vec<&String> = imports
        .iter()
        .filter(|name| !spin::provides(name))
        .collect();
    assert!(missing.is_empty(), "not in Spin's world: {missing:?}");
    assert_eq!(
        runtime().exports(Handler::Guard),
        ["wasi:http/incoming-handler@0.2.12"],
        "Spin's HTTP trigger runs a component that exports wasi:http/incoming-handler@0.2.x"
    );
}

#[test]
fn on_spins_store_the_breaker_trips_rejects_and_recovers_across_instances() {
    let upstream = Upstream::start(Behaviour::Status(503));
    let kv = KeyValue::spin(&["default"]);
    let clock = FakeClock::new();
    let mut env = on_default_store(&upstream);
    env.push(("TRIPGATE_COOLDOWN_MS", "5000".into()));
    let server = serve_on_spin(&env, &kv, &[upstream.url()], &clock);
    let mut client = Client::new(server.addr());
    for n in 1..=5 {
        let answer = client.get("/").unwrap();
        assert_eq!(answer.status, 503, "request {n}");
        assert!(!rejected(&answer), "request {n} reached the upstream");
        assert_eq!(answer.header("x-tripgate-unguarded"), None);
    }
    let sixth = client.get("/").unwrap();
    assert!(rejected(&sixth), "{sixth:?}");
    assert_eq!(sixth.header("retry-after"), Some("5"));
    assert_eq!(upstream.counts().received.load(Ordering::SeqCst), 5);
    assert!(kv
        .get("default", &format!("tripgate/breaker/{}", upstream.addr()))
        .is_some_and(|value| value.starts_with(b"tge2")));

    clock.advance(Duration::from_secs(5));
    let counts = upstream.phase(Behaviour::Healthy);
    for _ in 0..4 {
        assert_eq!(client.get("/").unwrap().status, 200);
    }
    // M = 2 probes closed it; the calls after are plain.
    assert_eq!(
        *counts.arrivals.lock().unwrap(),
        vec![true, true, false, false]
    );
    assert_eq!(
        server.stats().instances.load(Ordering::SeqCst),
        10,
        "one instance per request"
    );
}

#[test]
fn concurrent_first_requests_on_spins_store_lose_no_outcome() {
    // Spin's swap on a key nobody wrote is an upsert, so the guard writes the fresh state
    // at admission: every outcome's write is then a compare-and-swap on a value that
    // exists. Eight clients, threshold 20: no more than 20 + 7 calls reach the upstream.
    let upstream = Upstream::start(Behaviour::Status(503));
    let kv = KeyValue::spin(&["default"]);
    let mut env = on_default_store(&upstream);
    env.push(("TRIPGATE_FAILURE_THRESHOLD", "20".into()));
    env.push(("TRIPGATE_MIN_CALLS", "20".into()));
    let server = serve_on_spin(&env, &kv, &[upstream.url()], &FakeClock::new());
    assert_no_outcome_lost(server.addr(), &upstream);
}

#[test]
fn the_state_is_written_before_the_first_call_leaves() {
    let upstream = Upstream::start(Behaviour::Hang(Duration::from_secs(5)));
    let kv = KeyValue::spin(&["default"]);
    let server = serve_on_spin(
        &on_default_store(&upstream),
        &kv,
        &[upstream.url()],
        &FakeClock::new(),
    );
    let key = format!("tripgate/breaker/{}", upstream.addr());
    let addr = server.addr();
    let call = std::thread::spawn(move || Client::new(addr).get("/").unwrap());
    let started = std::time::Instant::now();
    while upstream.counts().received.load(Ordering::SeqCst) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "no call arrived"
        );
        std::thread::yield_now();
    }
    assert!(
        kv.get("default", &key).is_some(),
        "the call reached the upstream before any state was stored"
    );
    assert_eq!(call.join().unwrap().status, 504);
}

#[test]
fn a_bucket_spin_does_not_grant_is_named_and_the_guard_fails_open() {
    // The guard's default bucket, `tripgate`, while the manifest grants only `default`.
    let upstream = Upstream::start(Behaviour::Status(503));
    let kv = KeyValue::spin(&["default"]);
    let server = serve_on_spin(
        &settings(&upstream.url()),
        &kv,
        &[upstream.url()],
        &FakeClock::new(),
    );
    let mut client = Client::new(server.addr());
    for _ in 0..8 {
        let answer = client.get("/").unwrap();
        assert_eq!(answer.status, 503);
        assert!(!rejected(&answer));
        assert_eq!(
            answer.header("x-tripgate-unguarded"),
            Some("the store failed: opening the bucket `tripgate`: access denied")
        );
    }
    assert_eq!(upstream.counts().received.load(Ordering::SeqCst), 8);
}

#[test]
fn a_call_spin_denies_is_a_502_that_says_so_and_no_outcome() {
    let upstream = Upstream::start(Behaviour::Healthy);
    let kv = KeyValue::spin(&["default"]);
    let clock = FakeClock::new();
    let env = on_default_store(&upstream);
    let denying = serve_on_spin(&env, &kv, &["http://127.0.0.1:1".into()], &clock);
    let mut client = Client::new(denying.addr());
    for _ in 0..8 {
        let answer = client.get("/").unwrap();
        assert_eq!(answer.status, 502);
        let text = answer.text();
        assert!(
            text.contains("HTTP-request-denied") && text.contains("allowed_outbound_hosts"),
            "{text}"
        );
        assert!(text.contains(&upstream.url()), "{text}");
    }
    assert_eq!(upstream.counts().received.load(Ordering::SeqCst), 0);
    // Eight denials tripped nothing: with the upstream allowed, the next call goes out.
    let allowing = serve_on_spin(&env, &kv, &[upstream.url()], &clock);
    assert_eq!(Client::new(allowing.addr()).get("/").unwrap().status, 200);
    assert_eq!(upstream.counts().received.load(Ordering::SeqCst), 1);
}
