//! Request bodies on their way to the upstream: healthy uploads arrive whole and count as
//! what the upstream answered, and an upstream that answers before it has read the body
//! (a 401, a 413) is judged by that answer, not by the upload it cut short.

mod common;

use std::sync::atomic::Ordering;

use common::{burst_posts, guard_for, rejected, Behaviour, Upstream};
use tripgate_edge::client::Client;

#[test]
fn healthy_uploads_arrive_whole_and_trip_nothing() {
    // 600 uploads of 100 KB, four clients at a time, threshold 5: a single upload that
    // failed on its way would be a 502 and a fault.
    let upstream = Upstream::start(Behaviour::Healthy);
    let server = guard_for(&upstream);
    let body = vec![b'x'; 100 << 10];
    let answers = burst_posts(server.addr(), &body, 4, 150);
    let failed: Vec<_> = answers.iter().filter(|a| a.status != 200).collect();
    assert!(
        failed.is_empty(),
        "{} failed: {:?}",
        failed.len(),
        failed.first()
    );
    let counts = upstream.counts();
    assert_eq!(counts.received.load(Ordering::SeqCst), 600);
    assert_eq!(counts.body_bytes.load(Ordering::SeqCst), 600 * (100 << 10));
    assert_eq!(server.stats().failures.load(Ordering::SeqCst), 0);
}

#[test]
fn an_answer_before_the_body_is_judged_by_its_status() {
    // The upstream refuses each 4 MiB upload at once (401, then 413), reads a little of
    // it and resets the connection: the guard's upload fails, but the upstream answered.
    // Ten refusals with threshold 5: a 4xx is no fault, so nothing trips.
    let upstream = Upstream::start(Behaviour::Early(401));
    let server = guard_for(&upstream);
    let body = vec![b'x'; 4 << 20];
    let mut client = Client::new(server.addr());
    for status in [401, 413] {
        upstream.phase(Behaviour::Early(status));
        for n in 0..5 {
            let answer = client.post("/upload", &body).unwrap();
            assert!(!rejected(&answer), "{status} #{n}: {}", answer.text());
            assert_eq!(answer.status, status, "#{n}: {}", answer.text());
        }
    }
    // Still closed: the next request goes through.
    upstream.phase(Behaviour::Healthy);
    assert_eq!(client.post("/upload", b"small").unwrap().status, 200);
    assert_eq!(server.stats().failures.load(Ordering::SeqCst), 0);
}
