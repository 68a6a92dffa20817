//! The instance pool under slow clients, for real on loopback: requests to one route whose
//! bodies never finish hold all but one of the server's instances, and a request to
//! another route still gets the last one. Alone in its test binary: the pool is the
//! process's (every server of a [`tripgate_edge::Runtime`] shares its engine), so no other
//! test may hold instances meanwhile. The wait is on a real server event (the instance
//! count), under a limit; no assertion is on wall time.

mod common;

use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{serve_with, settings, unfinished, wait_for, Behaviour, Upstream};
use tripgate_edge::client::Client;
use tripgate_edge::server::MAX_INSTANCES;
use tripgate_edge::{Handler, KeyValue};

#[test]
fn slow_bodies_on_one_route_do_not_starve_another() {
    // All but one of the server's instances are held by requests to /a whose bodies
    // never come: a request to /b still gets the last one.
    let a = Upstream::start(Behaviour::Healthy);
    let b = Upstream::start(Behaviour::Healthy);
    let mut env = settings(&a.url());
    env[0].1 = format!("/a={},/b={}", a.url(), b.url());
    env.push(("TRIPGATE_BODY_TIMEOUT_MS", "60000".into()));
    let server = serve_with(Handler::Guard, &env, &KeyValue::new(), None);
    let held = usize::try_from(MAX_INSTANCES).unwrap() - 1;
    let slow: Vec<TcpStream> = (0..held).map(|_| unfinished(server.addr(), "/a")).collect();
    let stats = server.stats();
    let started = || stats.instances.load(Ordering::SeqCst) + stats.failures.load(Ordering::SeqCst);
    assert!(
        wait_for(Duration::from_secs(30), || started() >= held as u64),
        "{} of {held} slow requests started",
        started()
    );
    assert_eq!(
        stats.failures.load(Ordering::SeqCst),
        0,
        "the pool holds {held} guards"
    );
    let answer = Client::new(server.addr()).get("/b").unwrap();
    assert_eq!(answer.status, 200, "{}", answer.text());
    drop(slow);
}
