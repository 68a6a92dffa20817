//! The thread-safe breaker (`tripgate::Breaker`, its own quanta clock) against failsafe
//! 1.3 and recloser 1.4, which are also shared objects reading their own clocks: one
//! thread, 2 and 8 threads on one breaker, rejection while open; and the tower layer over
//! a bare tower service.
//!
//! Threaded workloads report wall time divided by the thread count: the time per pair of
//! throughput while the threads share the breaker (this machine has 2 cores).
//!
//! Results are consumed as a caller reads them (a verdict, a rejection's `retry_after`),
//! each through `black_box`, as the peers' results are.

use std::convert::Infallible;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use criterion::{criterion_group, criterion_main, Criterion};
use tower::{Layer, Service};
use tripgate::tower::CircuitBreakerLayer;
use tripgate::Outcome;
use tripgate_bench::{
    failsafe_breaker, failsafe_pair, peers_rejecting, recloser_breaker, recloser_pair, threaded,
    timed, tripgate, tripgate_pair,
};

fn one_thread(c: &mut Criterion) {
    let mut g = c.benchmark_group("shared breaker, acquire+record success, 1 thread");
    let b = tripgate();
    g.bench_function("tripgate", |bench| {
        bench.iter_custom(|iters| timed(iters, |_| tripgate_pair(&b)))
    });
    let f = failsafe_breaker();
    g.bench_function("failsafe", |bench| {
        bench.iter_custom(|iters| timed(iters, |_| failsafe_pair(&f)))
    });
    let r = recloser_breaker();
    g.bench_function("recloser", |bench| {
        bench.iter_custom(|iters| timed(iters, |_| recloser_pair(&r)))
    });
    g.finish();
}

fn threads(c: &mut Criterion) {
    for n in [2, 8] {
        let mut g = c.benchmark_group(format!(
            "shared breaker, acquire+record success, {n} threads, per pair"
        ));
        let b = Arc::new(tripgate());
        g.bench_function("tripgate", |bench| {
            bench.iter_custom(|iters| threaded(&b, n, iters, tripgate_pair))
        });
        let f = Arc::new(failsafe_breaker());
        g.bench_function("failsafe", |bench| {
            bench.iter_custom(|iters| threaded(&f, n, iters, failsafe_pair))
        });
        let r = Arc::new(recloser_breaker());
        g.bench_function("recloser", |bench| {
            bench.iter_custom(|iters| threaded(&r, n, iters, recloser_pair))
        });
        g.finish();
    }
}

fn reject_open(c: &mut Criterion) {
    let mut g = c.benchmark_group("shared breaker, reject while open");
    let b = tripgate();
    for _ in 0..5 {
        b.acquire().unwrap().record(Outcome::Timeout);
    }
    g.bench_function("tripgate", |bench| {
        bench.iter_custom(|iters| {
            timed(iters, |_| match b.acquire() {
                // What a caller reads off a rejection: when to come back.
                Err(rejection) => drop(black_box(rejection.retry_after)),
                Ok(_) => unreachable!("the breaker is open for an hour"),
            })
        })
    });
    peers_rejecting(&mut g);
    g.finish();
}

/// Readies, calls and polls `service` once; every service here answers at once.
fn request<S>(service: &mut S, cx: &mut Context<'_>)
where
    S: Service<http::Request<()>, Response = http::Response<()>>,
{
    assert!(service.poll_ready(cx).is_ready());
    let future = pin!(service.call(http::Request::new(())));
    match future.poll(cx) {
        Poll::Ready(response) => drop(black_box(response.is_ok())),
        Poll::Pending => unreachable!("the bare service answers at once"),
    }
}

fn tower_layer(c: &mut Criterion) {
    let mut g = c.benchmark_group("tower request, ready service");
    let mut cx = Context::from_waker(Waker::noop());
    let bare = || {
        tower::service_fn(|_: http::Request<()>| async {
            Ok::<_, Infallible>(http::Response::new(()))
        })
    };
    let mut service = bare();
    g.bench_function("bare service", |bench| {
        bench.iter_custom(|iters| timed(iters, |_| request(&mut service, &mut cx)))
    });
    let mut guarded = CircuitBreakerLayer::new(Arc::new(tripgate())).layer(bare());
    g.bench_function("with CircuitBreakerLayer", |bench| {
        bench.iter_custom(|iters| timed(iters, |_| request(&mut guarded, &mut cx)))
    });
    g.finish();
}

criterion_group!(benches, one_thread, threads, reject_open, tower_layer);
criterion_main!(benches);
