//! Slow clients, for real on loopback: requests whose bodies never finish are cut off at
//! the body deadline, an open breaker turns them away without reading them, and a head
//! that never ends is cut off too. (That they cannot starve other routes is `pool.rs`.)
//! The waits below are on real server events (an answer), each under a limit; no
//! assertion is on wall time.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{answer_to, rejected, serve_with, settings, unfinished, Behaviour, Upstream};
use tripgate_edge::client::Client;
use tripgate_edge::{FakeClock, Handler, KeyValue, Options, Server};

#[test]
fn an_unfinished_body_is_cut_off_at_the_body_deadline() {
    let upstream = Upstream::start(Behaviour::Healthy);
    let mut env = settings(&upstream.url());
    env.push(("TRIPGATE_BODY_TIMEOUT_MS", "200".into()));
    let server = serve_with(Handler::Guard, &env, &KeyValue::new(), None);
    let slow: Vec<TcpStream> = (0..20).map(|_| unfinished(server.addr(), "/")).collect();
    for stream in slow {
        let answer = answer_to(stream);
        assert_eq!(answer.status, 408, "{}", answer.text());
        assert!(answer.text().contains("200 ms"), "{}", answer.text());
    }
    assert_eq!(upstream.counts().received.load(Ordering::SeqCst), 0);
    // The instances are free again, and no outcome was counted against the upstream.
    for _ in 0..10 {
        let answer = Client::new(server.addr()).get("/").unwrap();
        assert_eq!(answer.status, 200, "{}", answer.text());
    }
    assert_eq!(server.stats().failures.load(Ordering::SeqCst), 0);
}

#[test]
fn an_open_breaker_turns_a_body_away_unread() {
    let upstream = Upstream::start(Behaviour::Status(503));
    let mut env = settings(&upstream.url());
    env.push(("TRIPGATE_BODY_TIMEOUT_MS", "60000".into()));
    let server = serve_with(
        Handler::Guard,
        &env,
        &KeyValue::new(),
        Some(&FakeClock::new()),
    );
    let mut client = Client::new(server.addr());
    for _ in 0..5 {
        client.get("/").unwrap();
    }
    // The body never comes, and the deadline for it is a minute away: the breaker
    // answers first.
    let answer = answer_to(unfinished(server.addr(), "/"));
    assert!(rejected(&answer), "{}", answer.text());
    assert_eq!(upstream.counts().received.load(Ordering::SeqCst), 5);
}

#[test]
fn a_head_that_never_ends_is_cut_off() {
    // A client that never finishes its request head holds no instance, but would hold its
    // connection forever without the server's header deadline.
    let upstream = Upstream::start(Behaviour::Healthy);
    let env: Vec<(&str, String)> = settings(&upstream.url());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut options = Options::new(Handler::Guard, &env);
    options.header_timeout = Duration::from_millis(200);
    let server = Server::start(common::runtime(), options).unwrap();
    let mut stream = TcpStream::connect(server.addr()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    stream.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n").unwrap();
    let mut rest = Vec::new();
    // The server closes the connection (after a 408, or without one); a read that timed
    // out instead would be an error here.
    let closed = std::io::Read::read_to_end(&mut stream, &mut rest);
    assert!(closed.is_ok(), "{closed:?}");
    assert_eq!(server.stats().instances.load(Ordering::SeqCst), 0);
}
