//! No limit of the wasmtime runtime is reachable by load: past the library's own limits a
//! call is rejected (`saturated`) or a breaker refused, never a trap; and a guest that
//! traps anyway is replaced, its breakers made again from their snapshots.

mod common;

use tripgate_wasmtime::{
    Breaker, Config, Outcome, RawPermit, RejectReason, State, MAX_BREAKERS_PER_INSTANCE,
    MEMORY_LIMIT, SECOND,
};

/// Tickets an instance holds out at once, all its breakers together (`wit/breaker.wit`).
const TICKETS: usize = 1 << 18;

/// Admits raw permits until the breaker rejects one; how many were admitted and the
/// rejection's reason.
fn fill(breaker: &Breaker, up_to: usize) -> (Vec<RawPermit>, Option<RejectReason>) {
    let mut out = Vec::new();
    for _ in 0..up_to {
        match breaker.acquire_raw().expect("never a trap").decision {
            Ok(permit) => out.push(permit),
            Err(rejection) => return (out, Some(rejection.reason)),
        }
    }
    (out, None)
}

/// 300,000 calls in a hang, each holding its permit: the first `TICKETS` are admitted,
/// the rest rejected as `saturated`, and the breaker answers normally once they return.
/// (wasmtime's default store limit is 100,000 handles; a trap there would poison the
/// instance, which is why the library enforces its own budget first.)
#[test]
fn permits_past_the_instances_budget_are_saturated_rejections_never_a_trap() {
    let (runtime, _clock) = common::fake(0);
    let instance = runtime.instantiate().unwrap();
    let breaker = instance.breaker(&Config::default()).unwrap();
    let mut held = Vec::new();
    for _ in 0..100_000 {
        held.push(
            breaker
                .acquire()
                .unwrap()
                .decision
                .expect("under the budget"),
        );
    }
    let (raw, rejected) = fill(&breaker, 200_000);
    assert_eq!(held.len() + raw.len(), TICKETS);
    assert_eq!(rejected, Some(RejectReason::Saturated));
    assert_eq!(breaker.state().unwrap(), State::Closed);
    assert!(instance.memory_bytes() <= MEMORY_LIMIT);
    // Every call comes back: the budget is whole again.
    drop(held);
    for permit in raw {
        breaker.record_raw(permit, Outcome::Success).unwrap();
    }
    assert_eq!(breaker.metrics().unwrap().in_flight, 0);
    let (again, rejected) = fill(&breaker, TICKETS + 1);
    assert_eq!(
        (again.len(), rejected),
        (TICKETS, Some(RejectReason::Saturated))
    );
    assert_eq!(instance.replaced(), 0, "no trap on the way");
}

/// Raw permits leaked by four breakers of one instance, 2^20 tries each: they take the
/// instance's budget and no more (each breaker past it is turned away), a bystander breaker
/// in the same instance keeps admitting and recording, and the leaked tickets of a breaker
/// are given back once a new epoch makes them stale.
#[test]
fn leaked_raw_permits_are_bounded_and_reclaimed_and_a_bystander_keeps_working() {
    let (runtime, clock) = common::fake(0);
    let instance = runtime.instantiate().unwrap();
    let leaky: Vec<_> = (0..4)
        .map(|_| instance.breaker(&Config::default()).unwrap())
        .collect();
    let bystander = instance.breaker(&Config::default()).unwrap();
    let mut leaked = 0;
    for breaker in &leaky {
        let (permits, rejected) = fill(breaker, 1 << 20);
        assert_eq!(rejected, Some(RejectReason::Saturated));
        leaked += permits.len();
        std::mem::forget(permits); // plain numbers: leaked for good
    }
    assert!(leaked <= TICKETS + 8 * leaky.len(), "{leaked} tickets out");
    assert!(instance.memory_bytes() <= MEMORY_LIMIT);
    // The bystander still has the smallest table's worth of concurrency.
    for _ in 0..3 {
        let calls: Vec<_> = (0..4)
            .map(|_| bystander.acquire().unwrap().decision.expect("admitted"))
            .collect();
        for call in calls {
            assert!(!call.record(Outcome::Success).unwrap().stale);
        }
    }
    // A reset is a new epoch: the first leaky breaker's tickets hold nothing, so its table
    // gives their places back as it fills again.
    clock.advance(SECOND);
    leaky[0].reset().unwrap();
    let (permits, _) = fill(&leaky[0], 1 << 20);
    assert!(
        permits.len() >= leaked / 4,
        "the reset breaker's stale tickets were reclaimed ({} admitted)",
        permits.len()
    );
    assert_eq!(instance.replaced(), 0);
}

/// Past `MAX_BREAKERS_PER_INSTANCE` live breakers an instance refuses another with an
/// error (wasmtime's own limit, 100,000 handles by default, would trap it); a dropped one
/// makes room, and the instance stays within its memory limit.
#[test]
fn an_instance_refuses_breakers_past_its_limit_with_an_error() {
    let (runtime, _clock) = common::fake(0);
    let instance = runtime.instantiate().unwrap();
    let mut breakers: Vec<_> = (0..MAX_BREAKERS_PER_INSTANCE)
        .map(|_| {
            instance
                .breaker(&Config::default())
                .expect("within the limit")
        })
        .collect();
    let refused = instance.breaker(&Config::default()).unwrap_err();
    assert!(
        refused.to_string().contains("its limit"),
        "a clear error: {refused}"
    );
    assert!(instance.memory_bytes() <= MEMORY_LIMIT);
    breakers.pop();
    let again = instance.breaker(&Config::default()).unwrap();
    assert_eq!(again.state().unwrap(), State::Closed);
    assert_eq!(instance.breakers(), MAX_BREAKERS_PER_INSTANCE);
    assert_eq!(instance.replaced(), 0);
}

/// A guest that traps (here: an instance whose memory limit is set too low, so creating
/// breakers runs it out of memory) is replaced: the call that trapped fails, every
/// breaker it held is made again with the state of its last snapshot, and the route
/// goes on: the open breaker stays open for the rest of its cooldown, then recovers.
#[test]
fn a_trapped_instance_is_replaced_with_its_breakers_state() {
    let (runtime, clock) = common::fake(0);
    let runtime = runtime.with_memory_limit(1 << 20);
    let instance = runtime.instantiate().unwrap();
    let config = Config {
        failure_threshold: 2,
        min_calls: 2,
        cooldown: 10 * SECOND,
        half_open_required_successes: 1,
        ..Config::default()
    };
    let payments = instance.breaker(&config).unwrap();
    for _ in 0..2 {
        let permit = payments.acquire().unwrap().decision.unwrap();
        permit.record(Outcome::Status(503)).unwrap();
    }
    assert_eq!(payments.state().unwrap(), State::Open);
    clock.advance(SECOND);

    let mut others = Vec::new();
    let trap = loop {
        match instance.breaker(&Config::default()) {
            Ok(breaker) => others.push(breaker),
            Err(error) => break error,
        }
        assert!(others.len() < 10_000, "a 1 MiB instance should run out");
    };
    assert!(
        format!("{trap:#}").contains("its instance was replaced"),
        "the trap's error says what happened: {trap:#}"
    );
    assert_eq!(instance.replaced(), 1);
    assert_eq!(instance.breakers(), others.len() + 1);

    // The open breaker came back open, its cooldown counting from the trip.
    let rejection = payments.acquire().unwrap().decision.unwrap_err();
    assert_eq!(rejection.reason, RejectReason::Open);
    assert_eq!(rejection.retry_after, 9 * SECOND);
    let m = payments.metrics().unwrap();
    assert_eq!((m.state, m.faults_total), (State::Open, 2));
    // And recovers as it would have.
    clock.advance(9 * SECOND);
    let probe = payments.acquire().unwrap().decision.expect("a probe");
    assert!(probe.is_probe());
    probe.record(Outcome::Success).unwrap();
    assert_eq!(payments.state().unwrap(), State::Closed);
    // The others answer too.
    assert_eq!(others[0].state().unwrap(), State::Closed);
}

/// A permit out when its instance is replaced records as stale there: it belonged to the
/// dead instance.
#[test]
fn a_permit_from_before_the_replacement_is_stale() {
    let (runtime, _clock) = common::fake(0);
    let runtime = runtime.with_memory_limit(1 << 20);
    let instance = runtime.instantiate().unwrap();
    let breaker = instance.breaker(&Config::default()).unwrap();
    let before = breaker.acquire().unwrap().decision.unwrap();
    let mut others = Vec::new();
    while let Ok(other) = instance.breaker(&Config::default()) {
        others.push(other);
    }
    assert_eq!(instance.replaced(), 1);
    // A new call of the same breaker, whose ticket may have the old one's number.
    let after = breaker.acquire().unwrap().decision.unwrap();
    let recorded = before.record(Outcome::Status(503)).unwrap();
    assert!(recorded.stale);
    assert_eq!(breaker.metrics().unwrap().faults_total, 0);
    assert!(!after.record(Outcome::Success).unwrap().stale);
}

/// A breaker reconfigured before its instance traps is made again with its new config:
/// the replacement judges by the new rule.
#[test]
fn a_replaced_instance_makes_a_reconfigured_breaker_with_its_new_config() {
    let (runtime, _clock) = common::fake(0);
    let instance = runtime.with_memory_limit(1 << 20).instantiate().unwrap();
    let payments = instance.breaker(&Config::default()).unwrap();
    let strict = Config {
        failure_threshold: 1,
        min_calls: 1,
        ..Config::default()
    };
    payments.reconfigure(&strict).unwrap();
    let mut others = Vec::new();
    while instance.replaced() == 0 {
        if let Ok(breaker) = instance.breaker(&Config::default()) {
            others.push(breaker);
        }
        assert!(others.len() < 10_000, "a 1 MiB instance should run out");
    }
    let permit = payments.acquire().unwrap().decision.unwrap();
    permit.record(Outcome::Status(503)).unwrap();
    assert_eq!(payments.state().unwrap(), State::Open, "one fault trips it");
}
