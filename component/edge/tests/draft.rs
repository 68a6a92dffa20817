//! The guard's draft build (`wasi:keyvalue@0.2.0-draft`: `increment`, no
//! compare-and-swap) on the two kinds of host that have only that draft: a store shared
//! by every instance, as wasmCloud's key-value providers are, and wasmtime-wasi-keyvalue's
//! store per request, the one `wasmtime serve -S keyvalue` links.

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{assert_no_outcome_lost, rejected, runtime, settings, Behaviour, Upstream};
use tripgate_edge::client::Client;
use tripgate_edge::{DraftStore, FakeClock, Handler, KeyValue, Options, Server};

fn serve_draft(
    env: &[(&str, String)],
    kv: &KeyValue,
    store: DraftStore,
    clock: &FakeClock,
) -> Server {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut options = Options::new(Handler::GuardDraft, &env);
    options.kv = kv.clone();
    options.clock = Some(clock.clone());
    options.draft_store = store;
    Server::start(runtime(), options).expect("the server starts")
}

fn key(upstream: &Upstream) -> String {
    format!("tripgate/breaker/{}", upstream.addr())
}

#[test]
fn the_draft_build_imports_the_earlier_draft_only() {
    let imports = runtime().imports(Handler::GuardDraft);
    let keyvalue: Vec<&String> = imports
        .iter()
        .filter(|name| name.starts_with("wasi:keyvalue/"))
        .collect();
    assert_eq!(
        keyvalue,
        [
            "wasi:keyvalue/store@0.2.0-draft",
            "wasi:keyvalue/atomics@0.2.0-draft"
        ]
    );
    assert!(!imports.iter().any(|name| name.starts_with("tripgate:")));
    assert_eq!(
        runtime().exports(Handler::GuardDraft),
        ["wasi:http/incoming-handler@0.2.12"]
    );
}

#[test]
fn on_a_shared_draft_store_the_breaker_trips_rejects_and_recovers_across_instances() {
    let upstream = Upstream::start(Behaviour::Status(503));
    let kv = KeyValue::new();
    let clock = FakeClock::new();
    let mut env = settings(&upstream.url());
    env.push(("TRIPGATE_COOLDOWN_MS", "5000".into()));
    let server = serve_draft(&env, &kv, DraftStore::Shared, &clock);
    let mut client = Client::new(server.addr());
    for n in 1..=5 {
        let answer = client.get("/").unwrap();
        assert_eq!(answer.status, 503, "request {n}");
        assert!(!rejected(&answer), "request {n} reached the upstream");
    }
    let sixth = client.get("/").unwrap();
    assert!(rejected(&sixth), "{sixth:?}");
    assert_eq!(sixth.header("retry-after"), Some("5"));
    assert_eq!(upstream.counts().received.load(Ordering::SeqCst), 5);

    clock.advance(Duration::from_secs(2));
    assert_eq!(client.get("/").unwrap().header("retry-after"), Some("3"));
    clock.advance(Duration::from_secs(3));
    let counts = upstream.phase(Behaviour::Healthy);
    for _ in 0..4 {
        assert_eq!(client.get("/").unwrap().status, 200);
    }
    assert_eq!(
        *counts.arrivals.lock().unwrap(),
        vec![true, true, false, false]
    );
}

#[test]
fn on_a_shared_draft_store_concurrent_instances_lose_no_outcome() {
    let upstream = Upstream::start(Behaviour::Status(503));
    let kv = KeyValue::new();
    let mut env = settings(&upstream.url());
    env.push(("TRIPGATE_FAILURE_THRESHOLD", "20".into()));
    env.push(("TRIPGATE_MIN_CALLS", "20".into()));
    let server = serve_draft(&env, &kv, DraftStore::Shared, &FakeClock::new());
    assert_no_outcome_lost(server.addr(), &upstream);
    // Every write took a version; the store keeps at most 64 values of the breaker.
    let counter = kv.get("tripgate", &format!("{}/version", key(&upstream)));
    let versions: u64 = String::from_utf8(counter.expect("the version counter"))
        .unwrap()
        .parse()
        .unwrap();
    let kept = (1..=versions)
        .filter(|v| {
            kv.get("tripgate", &format!("{}/{v}", key(&upstream)))
                .is_some()
        })
        .count();
    assert!(
        (1..=64).contains(&kept),
        "{kept} of {versions} versions kept"
    );
}

#[test]
fn a_version_taken_by_an_instance_that_died_is_skipped() {
    let upstream = Upstream::start(Behaviour::Status(503));
    let kv = KeyValue::new();
    let server = serve_draft(
        &settings(&upstream.url()),
        &kv,
        DraftStore::Shared,
        &FakeClock::new(),
    );
    let mut client = Client::new(server.addr());
    for _ in 0..3 {
        client.get("/").unwrap();
    }
    // An instance took the next version and died before storing its value.
    let counter = format!("{}/version", key(&upstream));
    let taken: u64 = String::from_utf8(kv.get("tripgate", &counter).unwrap())
        .unwrap()
        .parse()
        .unwrap();
    kv.set("tripgate", &counter, (taken + 1).to_string().into_bytes());
    // The three faults before it still count: two more trip the breaker.
    client.get("/").unwrap();
    client.get("/").unwrap();
    assert!(rejected(&client.get("/").unwrap()));
    assert_eq!(upstream.counts().received.load(Ordering::SeqCst), 5);
}

#[test]
fn on_wasmtime_serves_store_nothing_outlives_a_request_and_the_guard_never_trips() {
    // wasmtime-wasi-keyvalue opens only the bucket "", a fresh copy in every request.
    let upstream = Upstream::start(Behaviour::Status(503));
    let mut env = settings(&upstream.url());
    env.push(("TRIPGATE_BUCKET", String::new()));
    let server = serve_draft(
        &env,
        &KeyValue::new(),
        DraftStore::PerRequest,
        &FakeClock::new(),
    );
    let mut client = Client::new(server.addr());
    for _ in 0..12 {
        let answer = client.get("/").unwrap();
        assert_eq!(answer.status, 503);
        assert!(!rejected(&answer));
        assert_eq!(answer.header("x-tripgate-unguarded"), None);
    }
    assert_eq!(upstream.counts().received.load(Ordering::SeqCst), 12);
}

#[test]
fn on_wasmtime_serves_store_another_bucket_is_named() {
    let upstream = Upstream::start(Behaviour::Healthy);
    let server = serve_draft(
        &settings(&upstream.url()),
        &KeyValue::new(),
        DraftStore::PerRequest,
        &FakeClock::new(),
    );
    let answer = Client::new(server.addr()).get("/").unwrap();
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.header("x-tripgate-unguarded"),
        Some("the store failed: opening the bucket `tripgate`: no such store")
    );
}
