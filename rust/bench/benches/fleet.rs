//! Fleet mode's cost on the call path: acquire + record on the native breaker, closed,
//! with fleet mode off, and on (joined through tripgate-redis to a live redis-server
//! that this bench starts, its task polling the breaker every 2 ms). The call path does
//! no I/O, so the two should cost the same within noise.

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use tripgate::{Breaker, Config, Outcome};
use tripgate_redis::server::RedisServer;
use tripgate_redis::{Options, Store};

fn pair(b: &Breaker) {
    if let Ok(permit) = b.acquire() {
        black_box(permit.record(Outcome::Success));
    }
}

fn bench(c: &mut Criterion) {
    let redis = RedisServer::start(&[]).unwrap_or_else(|e| panic!("{e}"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime");

    let off = Breaker::new(Config::default()).expect("default config");
    let on = Arc::new(
        Breaker::new(Config {
            fleet_quorum: Some(1),
            ..Config::default()
        })
        .expect("fleet config"),
    );
    let options = Options::new(redis.url(None)).key("a shared key of 32 bytes, really");
    let fleet = runtime
        .block_on(async { Store::connect(options)?.join("bench", Arc::clone(&on)) })
        .expect("joined");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !fleet.status().connected {
        assert!(Instant::now() < deadline, "the member never connected");
        std::thread::sleep(Duration::from_millis(5));
    }

    let mut group = c.benchmark_group("fleet");
    group.bench_function("acquire+record, fleet off", |b| b.iter(|| pair(&off)));
    group.bench_function("acquire+record, fleet on (joined)", |b| {
        b.iter(|| pair(&on))
    });
    group.finish();
    assert!(
        fleet.status().connected,
        "the member lost Redis during the bench"
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
