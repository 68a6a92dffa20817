//! The conformance check of live reconfiguration on a host's breaker (SPEC §
//! Reconfiguration): a permit out across the change still counts, the new rule judges the
//! next outcome, and a refused config changes nothing; and shadow mode's permits.

use std::sync::Arc;

use tripgate_core::{Config, Outcome, State};
use tripgate_host::{FakeClock, HostBreaker, MakeBreaker};

use super::{metrics, Host};

fn fault<B: HostBreaker>(breaker: &B) {
    let permit = breaker.admit().unwrap().expect("closed: admitted");
    breaker.settle(permit, Outcome::ConnectionError).unwrap();
}

/// Three faults, a permit held, a tighter threshold put in force: the held call's fault is
/// the fourth, and trips the breaker by the new rule. A bad config and a change to
/// `fleet-quorum` are refused with the core's words, and the breaker is as it was.
pub fn a_live_breaker_takes_a_new_config_and_refuses_a_bad_one<H: Host>(host: &H)
where
    H::Breaker: MakeBreaker,
    <H::Breaker as MakeBreaker>::MakeError: ToString,
{
    let breaker = host.breaker(&Config::default(), Arc::new(FakeClock::new(0)));
    for _ in 0..3 {
        fault(&breaker);
    }
    let held = breaker.admit().unwrap().expect("closed: admitted");
    let refused = |config: Config| match breaker.reconfigure(&config) {
        Ok(_) => panic!("{config:?} was accepted"),
        Err(error) => error.to_string(),
    };
    let zero = Config {
        failure_threshold: 0,
        ..Config::default()
    };
    assert!(refused(zero).contains("failure-threshold must be >= 1"));
    let fleet = Config {
        fleet_quorum: Some(2),
        ..Config::default()
    };
    let message = refused(fleet);
    assert!(
        message.contains("fleet-quorum cannot change on a live breaker"),
        "{message}"
    );
    let m = metrics(&breaker);
    assert_eq!(
        (m.state, m.window.faults, m.in_flight),
        (State::Closed, 3, 1)
    );

    let tighter = Config {
        failure_threshold: 4,
        min_calls: 4,
        ..Config::default()
    };
    assert!(breaker.reconfigure(&tighter).is_ok());
    breaker.settle(held, Outcome::ConnectionError).unwrap();
    let m = metrics(&breaker);
    assert_eq!((m.state, m.faults_total), (State::Open, 4));
}

/// Shadow mode on a tripped breaker: every call is admitted with a shadow permit; 2,048
/// held at once (a host that keeps permits in a table grows it to 4,096 places, half
/// full), through the end of the cooldown and a probe (a new epoch, whose permit makes
/// such a table sweep), all come back counting nothing, not even as stale, and each was
/// a shadow rejection for `open`.
pub fn shadow_permits_held_at_once_all_count_nothing<H: Host>(host: &H)
where
    H::Breaker: MakeBreaker,
    <H::Breaker as MakeBreaker>::MakeError: ToString,
{
    let shadow = Config {
        shadow: true,
        ..Config::default()
    };
    let clock = Arc::new(FakeClock::new(0));
    let breaker = host.breaker(&shadow, Arc::clone(&clock));
    for _ in 0..5 {
        fault(&breaker);
    }
    assert_eq!(metrics(&breaker).state, State::Open);
    let held: Vec<_> = (0..2048)
        .map(|_| breaker.admit().unwrap().expect("shadow mode admits"))
        .collect();
    clock.advance(shadow.cooldown);
    let probe = breaker.admit().unwrap().expect("a probe");
    breaker.settle(probe, Outcome::Success).unwrap();
    for permit in held {
        breaker.settle(permit, Outcome::ConnectionError).unwrap();
    }
    let m = metrics(&breaker);
    assert_eq!(
        (m.state, m.faults_total, m.stale_total),
        (State::HalfOpen, 5, 0)
    );
    assert_eq!(m.shadow_rejected(tripgate_core::RejectReason::Open), 2048);
}
