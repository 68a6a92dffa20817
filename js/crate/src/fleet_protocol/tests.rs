//! The protocol as JS drives it, through the numbers that cross the boundary.

use super::*;
use tripgate_core::{Field, OutcomeKind, State};

#[test]
fn a_fleet_s_slot_is_redis_s_key_slot_of_its_hash_tag() {
    // CLUSTER KEYSLOT answers these (Redis' own examples: 123456789 is 12739, foo 12182).
    assert_eq!(fleet_slot("123456789"), 12_739);
    assert_eq!(fleet_slot("foo"), 12_182);
}

fn member(quorum: f64) -> Breaker {
    let mut values = vec![f64::NAN; Field::ALL.len()];
    values[usize::from(Field::FleetQuorum.code())] = quorum;
    values[usize::from(Field::Cooldown.code())] = 5_000.0;
    Breaker::new(&values, None, None, 0.0).unwrap()
}

/// Member `…aa` of fleet `payments`, session `…f1`.
fn protocol(b: &Breaker) -> FleetProtocol {
    FleetProtocol::new(
        "payments",
        "00000000000000aa",
        "00000000000000f1",
        1_000.0,
        b,
        None,
    )
    .unwrap_or_else(|_| panic!("valid"))
}

#[test]
fn a_member_reads_back_first_then_applies_and_asks_for_the_lease() {
    let mut b = member(1.0);
    let mut p = protocol(&b);
    assert_eq!(
        p.keys(),
        "tripgate:{payments}:gen tripgate:{payments}:event tripgate:{payments}:votes \
         tripgate:{payments}:lease tripgate:{payments}:events tripgate:{payments}:waiters \
         tripgate:{payments}:wake: tripgate:{payments}:wake:00000000000000aa00000000000000f1"
    );
    assert_eq!(p.handle(0, &[], &[], &[], &mut b, 0.0, 0.0), 1, "read");
    let line = b"tripgate1 payments 3 open 4500 00000000000000bb -";
    let stored = [&line[..], b"3"].concat();
    let code = p.handle(
        5,
        &stored,
        &[line.len() as u32, 1],
        &[2_000.0],
        &mut b,
        0.0,
        0.0,
    );
    assert_eq!(code, MOVED, "no command; the breaker opened");
    assert_eq!(b.core.state(0), State::Open);
    let mut state = [0.0; STATE_LEN];
    p.state(&mut state);
    assert_eq!(&state[..4], &[1_000.0, 1.0, 0.0, 0.0]);
    // Past the stored open: half-open, a caller turned away, the lease asked for.
    assert!(b.acquire(2_000.0) < 0);
    assert_eq!(p.handle(2, &[], &[], &[], &mut b, 2_000.0, 500.0), 4 + 1);
    assert_eq!(p.command(), "00000000000000aa00000000000000f1");
    p.state(&mut state);
    assert_eq!(state[4], 15_000.0, "the lease's length");
    assert_eq!(state[3], 1.0, "wants the lease");
    let taken = p.handle(9, &[], &[], &[1.0, 15_000.0], &mut b, 2_000.0, 501.0);
    assert_eq!(taken, 0);
    assert!(p.protocol.lease_held());
    assert!(b.acquire(2_000.0) >= 0, "a probe under the lease");
    p.state(&mut state);
    assert_eq!(&state[5..10], &[0.0, 1.0, 0.0, 1.0, 1.0], "counts");
    assert_eq!(p.handle(14, &[], &[], &[], &mut b, 2_000.0, 502.0), 6 + 1);
    let (holder, notice) = p
        .command()
        .split_once('\n')
        .map(|(h, n)| (h.to_string(), n.to_string()))
        .unwrap();
    assert_eq!(holder, "00000000000000aa00000000000000f1");
    assert!(notice.contains(" free 0 00000000000000aa "), "{notice}");
}

#[test]
fn absent_values_and_votes_cross_as_lengths() {
    let mut b = member(2.0);
    let mut p = protocol(&b);
    p.handle(0, &[], &[], &[], &mut b, 0.0, 0.0);
    let none = u32::MAX;
    assert_eq!(
        p.handle(5, &[], &[none, none], &[-2.0], &mut b, 0.0, 0.0),
        0
    );
    for _ in 0..5 {
        let permit = b.acquire(0.0);
        b.record(f64::from(permit), 503.0, 0.0);
    }
    assert_eq!(
        p.handle(2, &[], &[], &[], &mut b, 0.0, 1.0),
        1 + 1,
        "a vote"
    );
    let mine = p.command();
    let other = "00000000000000bb 0 -";
    let entries = [mine.as_bytes(), other.as_bytes(), b"junk"].concat();
    let lengths = [mine.len() as u32, other.len() as u32, 4];
    let code = p.handle(
        6,
        &entries,
        &lengths,
        &[10_000.0, 9_000.0, 9_500.0, 9_000.0],
        &mut b,
        0.0,
        2.0,
    );
    assert_eq!(
        code,
        2 + 1,
        "two members: a quorum of two, a generation asked for"
    );
    let mut state = [0.0; STATE_LEN];
    p.state(&mut state);
    assert_eq!(state[5 + 7], 1.0, "the junk entry counted as garbage");
}

#[test]
fn options_are_the_core_s() {
    assert_eq!(fleet_check_duration(2, 3_600_000.0), None);
    assert_eq!(
        fleet_check_duration(2, 3_600_001.0).as_deref(),
        Some("reconcile-interval must be between 10 ms and 3600000 ms")
    );
    assert!(fleet_check_duration(3, f64::NAN).is_some());
    assert!(fleet_check_duration(4, f64::INFINITY).is_some());
    let tables = fleet_tables();
    assert!(tables.contains("\"minKeyBytes\":16"), "{tables}");
    assert!(tables.contains(
        "{\"name\":\"reconcile-interval\",\"code\":2,\"defaultMs\":1000,\"minMs\":10,\"maxMs\":3600000}"
    ));
    assert_eq!(fleet_member_id("pod-1"), fleet_member_id("pod-1"));
    assert_ne!(fleet_member_id("pod-1"), fleet_member_id("pod-2"));
    let mut backoff = FleetBackoff::new(1_000.0, "00000000000000aa");
    let first = backoff.down(0.0);
    assert!((7.0..=13.0).contains(&first), "{first}");
}

/// A member whose breaker is reconfigured votes within its new cooldown, with no
/// rejoin: the vote's window is the cooldown the breaker has at that step.
const FAULT: f64 = (crate::KIND_BASE + OutcomeKind::ConnectionError.code() as u32) as f64;

#[test]
fn a_reconfigured_breakers_member_votes_within_its_new_cooldown() {
    let mut breaker = member(1.0);
    let mut protocol = protocol(&breaker);
    protocol.handle(0, &[], &[], &[], &mut breaker, 0.0, 0.0);
    protocol.handle(
        5,
        &[],
        &[u32::MAX, u32::MAX],
        &[-2.0],
        &mut breaker,
        0.0,
        0.0,
    );
    let mut values = vec![f64::NAN; Field::ALL.len()];
    values[usize::from(Field::FleetQuorum.code())] = 1.0;
    values[usize::from(Field::Cooldown.code())] = 2_000.0;
    let mut out = [0.0; 2];
    assert_eq!(
        breaker.reconfigure(&values, None, None, 1.0, &mut out),
        None
    );
    for _ in 0..5 {
        let permit = breaker.acquire(2.0);
        breaker.record(f64::from(permit), FAULT, 2.0);
    }
    protocol.handle(2, &[], &[], &[], &mut breaker, 3.0, 3.0);
    let call = protocol.call(false);
    assert!(call.starts_with("vote\n"), "{call}");
    assert!(
        call.contains("\n2000\n"),
        "the vote's window is the new cooldown: {call}"
    );
}
