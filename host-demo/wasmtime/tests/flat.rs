//! The component's result shapes agree: the scalar handle path (`acquire-handle`,
//! `record-handle`) and the flat one (`acquire-flat`, `record-flat`), with counts plus
//! `last-transitions`, report exactly what the listing functions (`acquire-raw`,
//! `record-raw`, `acquire`, `record-outcome`) do, call by call, on twin breakers; and a
//! key names its breaker only while the breaker's handle lives.

use tripgate_core::{HandleAdmission, HandleRecord};
use tripgate_wasmtime::bindings::Tripgate;
use tripgate_wasmtime::wit::{self, Outcome, Transition};
use tripgate_wasmtime::{COMPONENT, MILLISECOND as MS, SECOND as S};
use wasmtime::component::{Component, Linker, ResourceAny};
use wasmtime::{Engine, Store};

/// A fresh instance of the component on the bare bindings.
fn instance() -> (Store<()>, Tripgate) {
    let engine = Engine::default();
    let component = Component::new(&engine, COMPONENT).unwrap();
    let mut store = Store::new(&engine, ());
    let tripgate = Tripgate::instantiate(&mut store, &component, &Linker::new(&engine)).unwrap();
    (store, tripgate)
}

#[test]
fn flat_results_and_last_transitions_match_the_listing_functions() {
    let (mut store, tripgate) = instance();
    let hot = tripgate.tripgate_breaker_circuit_breaker();
    let api = hot.breaker();
    let config = wit::Config {
        failure_threshold: Some(2),
        min_calls: Some(2),
        cooldown: Some(100 * MS),
        probe_timeout: Some(50 * MS),
        half_open_max_probes: Some(2),
        ..wit::Config::default()
    };
    let listing = api.call_create(&mut store, &config, 0).unwrap().unwrap();
    let flat = api.call_create(&mut store, &config, 0).unwrap().unwrap();
    let key = api.call_key(&mut store, flat).unwrap();

    let flat_transitions = |store: &mut Store<()>, count: u8| -> Vec<Transition> {
        let listed = api.call_last_transitions(&mut *store, flat).unwrap();
        if count == 0 {
            Vec::new()
        } else {
            assert_eq!(listed.len(), usize::from(count));
            listed
        }
    };
    // Trip with two faults, let a probe leak past its timeout and the cooldown pass twice
    // (a call that reports two transitions), then isolate: every step on both breakers.
    let steps: [(u64, Option<Outcome>); 7] = [
        (0, Some(Outcome::Status(503))),
        (1, Some(Outcome::Timeout)),
        (S / 10 + 1, None), // a probe, never recorded
        (S, Some(Outcome::Success)),
        (S + 1, Some(Outcome::Status(404))),
        (S + 2, Some(Outcome::Success)),
        (3 * S, Some(Outcome::Cancelled)),
    ];
    let mut reported = 0;
    for (now, outcome) in steps {
        let a = api.call_acquire_raw(&mut store, listing, now).unwrap();
        let b = HandleAdmission::decode(hot.call_acquire_handle(&mut store, key, now).unwrap())
            .expect("a valid encoding");
        let (handle, count) = match (&a.decision, b) {
            (
                Ok(permit),
                HandleAdmission::Admitted {
                    handle,
                    transitions,
                },
            ) => {
                assert_eq!(handle & 1 == 1, permit.ticket & 127 != 0, "probe at {now}");
                (Some(handle), transitions)
            }
            (
                Err(r),
                HandleAdmission::Rejected {
                    rejection,
                    transitions,
                },
            ) => {
                assert_eq!(
                    (r.state as u8, r.reason as u8, r.retry_after),
                    (
                        rejection.state.code(),
                        rejection.reason.code(),
                        rejection.retry_after
                    ),
                    "at {now}"
                );
                (None, transitions)
            }
            (a, b) => panic!("at {now}: {a:?} vs {b:?}"),
        };
        assert_eq!(a.transitions, flat_transitions(&mut store, count));
        reported += a.transitions.len();
        let (Ok(pa), Some(handle), Some(outcome)) = (a.decision, handle, outcome) else {
            continue;
        };
        let ra = api
            .call_record_raw(&mut store, listing, pa, outcome, now)
            .unwrap()
            .unwrap();
        let rb = HandleRecord::decode(
            hot.call_record_handle(&mut store, key, handle, outcome, now)
                .unwrap(),
        )
        .expect("a valid encoding");
        assert_eq!(
            (ra.class as u8, ra.slow, ra.stale),
            (rb.class.code(), rb.slow, rb.stale),
            "at {now}"
        );
        assert_eq!(ra.transitions, flat_transitions(&mut store, rb.transitions));
        reported += ra.transitions.len();
    }
    assert!(
        reported >= 4,
        "the scenario moves the breakers ({reported} transitions)"
    );

    // Permit resources, and a manual operation's transitions through last-transitions.
    let a = api.call_acquire(&mut store, listing, 4 * S).unwrap();
    let b = hot
        .call_acquire_flat(&mut store, key, 4 * S)
        .unwrap()
        .unwrap();
    assert_eq!(a.transitions, flat_transitions(&mut store, b.transitions));
    let (pa, pb): (ResourceAny, ResourceAny) = (a.decision.unwrap(), b.decision.unwrap());
    let ra = api
        .call_record_outcome(&mut store, listing, pa, Outcome::Status(503), 4 * S)
        .unwrap()
        .unwrap();
    let rb = hot
        .call_record_flat(&mut store, key, pb, Outcome::Status(503), 4 * S)
        .unwrap();
    let rb = HandleRecord::decode(rb).expect("a valid encoding");
    assert_eq!(ra.class as u8, rb.class.code());
    assert_eq!(ra.transitions, flat_transitions(&mut store, rb.transitions));
    // A handle recorded twice, or never issued, is a stale outcome.
    let twice = hot.call_acquire_handle(&mut store, key, 5 * S).unwrap();
    let twice = u32::try_from(twice).unwrap();
    for _ in 0..2 {
        hot.call_record_handle(&mut store, key, twice, Outcome::Success, 5 * S)
            .unwrap();
    }
    let never = hot
        .call_record_handle(&mut store, key, 12_345, Outcome::Status(503), 5 * S)
        .unwrap();
    let never = HandleRecord::decode(never).unwrap();
    assert!(never.stale && never.transitions == 0);
    assert_eq!(
        hot.call_record_handle(&mut store, key, 1, Outcome::Status(700), 5 * S)
            .unwrap(),
        -1,
        "an invalid status"
    );
    let isolated = api.call_isolate(&mut store, flat, 5 * S).unwrap();
    assert_eq!(isolated.len(), 1);
    assert_eq!(
        api.call_last_transitions(&mut store, flat).unwrap(),
        isolated
    );
}

#[test]
fn a_key_names_its_breaker_only_while_the_breaker_lives() {
    let (mut store, tripgate) = instance();
    let hot = tripgate.tripgate_breaker_circuit_breaker();
    let api = hot.breaker();
    let config = wit::Config::default();
    let create = |store: &mut Store<()>| {
        let breaker = api.call_create(&mut *store, &config, 0).unwrap().unwrap();
        (breaker, api.call_key(&mut *store, breaker).unwrap())
    };
    let (a, key_a) = create(&mut store);
    let (b, key_b) = create(&mut store);
    assert_ne!(key_a, key_b, "two live breakers, two keys");

    // A permit of `a` out by key, then `a`'s handle dropped: the key names nothing, and
    // every hot-path function says so instead of trapping.
    let acquired = hot
        .call_acquire_flat(&mut store, key_a, 1)
        .unwrap()
        .unwrap();
    let permit = acquired.decision.unwrap();
    let handle = u32::try_from(hot.call_acquire_handle(&mut store, key_a, 1).unwrap()).unwrap();
    a.resource_drop(&mut store).unwrap();
    assert!(hot
        .call_acquire_flat(&mut store, key_a, 2)
        .unwrap()
        .is_none());
    assert_eq!(
        hot.call_acquire_handle(&mut store, key_a, 2).unwrap(),
        HandleAdmission::UNKNOWN_BREAKER
    );
    assert_eq!(
        HandleAdmission::decode(HandleAdmission::UNKNOWN_BREAKER),
        None
    );
    let unknown = tripgate_core::Refusal::UnknownBreaker.code();
    let outcome = Outcome::Success;
    assert_eq!(
        hot.call_record_handle(&mut store, key_a, handle, outcome, 2)
            .unwrap(),
        unknown
    );
    // A permit given with a dead key is released on its own breaker, not lost: `a`'s
    // (whose breaker lives on in its permit), and a live breaker's, whose in-flight count
    // shows the release.
    assert_eq!(
        hot.call_record_flat(&mut store, key_a, permit, outcome, 2)
            .unwrap(),
        unknown
    );
    let live = hot
        .call_acquire_flat(&mut store, key_b, 2)
        .unwrap()
        .unwrap();
    assert_eq!(api.call_metrics(&mut store, b, 2).unwrap().in_flight, 1);
    assert_eq!(
        hot.call_record_flat(&mut store, key_a, live.decision.unwrap(), outcome, 2)
            .unwrap(),
        unknown
    );
    let m = api.call_metrics(&mut store, b, 2).unwrap();
    assert_eq!(
        (m.in_flight, m.successes_total),
        (0, 0),
        "released, not counted"
    );
    for key in [tripgate_core::NO_KEY, 0x000F_FFFF, 7 << 20 | 3, 12_345] {
        assert!(
            hot.call_acquire_flat(&mut store, key, 2).unwrap().is_none(),
            "{key}"
        );
    }

    // The slot `a` had is reused under another key; `a`'s old key still names nothing.
    let (c, key_c) = create(&mut store);
    assert_eq!(key_c & 0xF_FFFF, key_a & 0xF_FFFF, "the same slot");
    assert_ne!(key_c, key_a);
    assert!(hot
        .call_acquire_flat(&mut store, key_a, 3)
        .unwrap()
        .is_none());
    for (breaker, key) in [(b, key_b), (c, key_c)] {
        let admitted = hot.call_acquire_handle(&mut store, key, 3).unwrap();
        let handle = u32::try_from(admitted).expect("admitted");
        let recorded = hot
            .call_record_handle(&mut store, key, handle, outcome, 3)
            .unwrap();
        assert!(!HandleRecord::decode(recorded).unwrap().stale);
        let m = api.call_metrics(&mut store, breaker, 3).unwrap();
        let admitted = if key == key_b { 2 } else { 1 };
        assert_eq!((m.admitted_total, m.successes_total), (admitted, 1));
    }
}

/// One slot made and dropped past all its generations: no key repeats (the slot retires
/// instead of wrapping), and every dropped key still names nothing.
#[test]
fn keys_never_repeat_even_past_a_slots_last_generation() {
    let (mut store, tripgate) = instance();
    let hot = tripgate.tripgate_breaker_circuit_breaker();
    let api = hot.breaker();
    let config = wit::Config::default();
    let mut seen = std::collections::HashSet::new();
    let mut dropped = Vec::new();
    for _ in 0..4_200 {
        let breaker = api.call_create(&mut store, &config, 0).unwrap().unwrap();
        let key = api.call_key(&mut store, breaker).unwrap();
        assert_ne!(key, tripgate_core::NO_KEY);
        assert!(seen.insert(key), "key {key:#x} given twice");
        breaker.resource_drop(&mut store).unwrap();
        dropped.push(key);
    }
    let slots: std::collections::HashSet<u32> = seen.iter().map(|k| k & 0xF_FFFF).collect();
    assert_eq!(slots.len(), 2, "slot 0 retired after its 4,095 generations");
    for key in dropped {
        assert!(hot.call_acquire_flat(&mut store, key, 1).unwrap().is_none());
    }
}
