//! The component's result shapes agree: the scalar handle path (`acquire-handle`,
//! `record-handle`) and the flat one (`acquire-flat`, `record-flat`), with counts plus
//! `last-transitions`, report exactly what the listing functions (`acquire-raw`,
//! `record-raw`, `acquire`, `record-outcome`) do, call by call, on twin breakers.

use tripgate_core::{HandleAdmission, HandleRecord};
use tripgate_wasmtime::bindings::Tripgate;
use tripgate_wasmtime::wit::{self, Outcome, Transition};
use tripgate_wasmtime::{COMPONENT, MILLISECOND as MS, SECOND as S};
use wasmtime::component::{Component, Linker, ResourceAny};
use wasmtime::{Engine, Store};

#[test]
fn flat_results_and_last_transitions_match_the_listing_functions() {
    let engine = Engine::default();
    let component = Component::new(&engine, COMPONENT).unwrap();
    let mut store = Store::new(&engine, ());
    let tripgate = Tripgate::instantiate(&mut store, &component, &Linker::new(&engine)).unwrap();
    let api = tripgate.tripgate_breaker_circuit_breaker().breaker();
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
        let b = HandleAdmission::decode(api.call_acquire_handle(&mut store, flat, now).unwrap())
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
            api.call_record_handle(&mut store, flat, handle, outcome, now)
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
    let b = api.call_acquire_flat(&mut store, flat, 4 * S).unwrap();
    assert_eq!(a.transitions, flat_transitions(&mut store, b.transitions));
    let (pa, pb): (ResourceAny, ResourceAny) = (a.decision.unwrap(), b.decision.unwrap());
    let ra = api
        .call_record_outcome(&mut store, listing, pa, Outcome::Status(503), 4 * S)
        .unwrap()
        .unwrap();
    let rb = api
        .call_record_flat(&mut store, flat, pb, Outcome::Status(503), 4 * S)
        .unwrap();
    let rb = HandleRecord::decode(rb).expect("a valid encoding");
    assert_eq!(ra.class as u8, rb.class.code());
    assert_eq!(ra.transitions, flat_transitions(&mut store, rb.transitions));
    // A handle recorded twice, or never issued, is a stale outcome.
    let twice = api.call_acquire_handle(&mut store, flat, 5 * S).unwrap();
    let twice = u32::try_from(twice).unwrap();
    for _ in 0..2 {
        api.call_record_handle(&mut store, flat, twice, Outcome::Success, 5 * S)
            .unwrap();
    }
    let never = api
        .call_record_handle(&mut store, flat, 12_345, Outcome::Status(503), 5 * S)
        .unwrap();
    let never = HandleRecord::decode(never).unwrap();
    assert!(never.stale && never.transitions == 0);
    assert_eq!(
        api.call_record_handle(&mut store, flat, 1, Outcome::Status(700), 5 * S)
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
