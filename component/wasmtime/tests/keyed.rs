//! The component's two shapes agree: the keyed hot path (`acquire-keyed`, `record-keyed`),
//! with transitions counted and read through `last-transitions`, reports exactly what the
//! resource functions (`acquire`, `record-outcome`) do, call by call, on twin breakers
//! (a ticket's epoch is its twin permit's). A
//! key names its breaker only while the breaker's handle lives, and a ticket names a
//! permit only on the breaker that issued it.

mod common;

use tripgate_wasmtime::bindings::Tripgate;
use tripgate_wasmtime::wit::{
    self, AdmissionNotes, Class, KeyedAdmission, Outcome, OutcomeNotes, RecordError, Rejection,
    Ticketed, Transition,
};
use tripgate_wasmtime::{MILLISECOND as MS, SECOND as S};
use wasmtime::component::ResourceAny;
use wasmtime::Store;

/// The key of a breaker made when the instance has none left.
const NO_KEY: u32 = u32::MAX;

/// What `acquire-keyed` decided, as the listing functions say it, and whether it
/// transitioned.
fn decided(admission: KeyedAdmission) -> (Result<Ticketed, Rejection>, bool) {
    match admission {
        KeyedAdmission::Admitted(admitted) => {
            let flagged = admitted.notes.contains(AdmissionNotes::TRANSITIONED);
            (Ok(admitted), flagged)
        }
        KeyedAdmission::Rejected(rejected) => (Err(rejected.rejection), rejected.transitioned),
        KeyedAdmission::UnknownKey => panic!("a live breaker's key names it"),
    }
}

/// The ticket of an admission.
fn ticket(admission: KeyedAdmission) -> u64 {
    decided(admission).0.expect("admitted").ticket
}

/// A permit says of itself what the ticket of its twin admission says: whether it is a
/// probe, and its epoch.
fn assert_twins(
    tripgate: &Tripgate,
    store: &mut Store<()>,
    permit: ResourceAny,
    admitted: &Ticketed,
    now: u64,
) {
    let permits = tripgate.tripgate_breaker_circuit_breaker().permit();
    assert_eq!(
        permits.call_is_probe(&mut *store, permit).unwrap(),
        admitted.notes.contains(AdmissionNotes::PROBE),
        "probe at {now}"
    );
    assert_eq!(
        permits.call_epoch(&mut *store, permit).unwrap(),
        admitted.epoch,
        "epoch at {now}"
    );
}

/// Twin breakers' configuration: two faults trip, short cooldown and probe timeout, K = 2.
fn twin_config() -> wit::Config {
    wit::Config {
        failure_threshold: Some(2),
        min_calls: Some(2),
        cooldown: Some(100 * MS),
        probe_timeout: Some(50 * MS),
        half_open_max_probes: Some(2),
        ..wit::Config::default()
    }
}

#[test]
fn keyed_results_and_last_transitions_match_the_resource_functions() {
    let (mut store, tripgate) = common::bare();
    let hot = tripgate.tripgate_breaker_circuit_breaker();
    let api = hot.breaker();
    let config = twin_config();
    let listing = api.call_create(&mut store, &config, 0).unwrap().unwrap();
    let keyed = api.call_create(&mut store, &config, 0).unwrap().unwrap();
    let key = api.call_key(&mut store, keyed).unwrap();

    let counted = |store: &mut Store<()>, flagged: bool| -> Vec<Transition> {
        if flagged {
            let listed = api.call_last_transitions(&mut *store, keyed).unwrap();
            assert!(!listed.is_empty());
            listed
        } else {
            Vec::new()
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
    let mut leaked = Vec::new();
    for (now, outcome) in steps {
        let a = api.call_acquire(&mut store, listing, now).unwrap();
        let (b, flagged) = decided(hot.call_acquire_keyed(&mut store, key, now).unwrap());
        assert_eq!(a.transitions, counted(&mut store, flagged), "at {now}");
        reported += a.transitions.len();
        let (permit, ticket) = match (a.decision, b) {
            (Ok(permit), Ok(admitted)) => {
                assert_twins(&tripgate, &mut store, permit, &admitted, now);
                (permit, admitted.ticket)
            }
            (Err(ra), Err(rb)) => {
                assert_eq!(ra, rb, "at {now}");
                continue;
            }
            (a, b) => panic!("at {now}: {a:?} vs {b:?}"),
        };
        let Some(outcome) = outcome else {
            leaked.push(permit);
            continue;
        };
        let ra = api
            .call_record_outcome(&mut store, listing, permit, outcome, now)
            .unwrap()
            .unwrap();
        let rb = hot
            .call_record_keyed(&mut store, key, ticket, outcome, now)
            .unwrap()
            .unwrap();
        assert_eq!(
            (ra.class, ra.slow, ra.stale),
            (
                rb.class,
                rb.notes.contains(OutcomeNotes::SLOW),
                rb.notes.contains(OutcomeNotes::STALE)
            ),
            "at {now}"
        );
        let flagged = rb.notes.contains(OutcomeNotes::TRANSITIONED);
        assert_eq!(ra.transitions, counted(&mut store, flagged));
        reported += ra.transitions.len();
    }
    assert!(
        reported >= 4,
        "the scenario moves the breakers ({reported} transitions)"
    );
    for permit in leaked {
        permit.resource_drop(&mut store).unwrap();
    }
}

/// A ticket recorded twice, or never issued, is a stale outcome; an invalid status is an
/// error that leaves the ticket out, to be recorded again.
#[test]
fn a_keyed_ticket_recorded_twice_or_never_issued_is_stale() {
    let (mut store, tripgate) = common::bare();
    let hot = tripgate.tripgate_breaker_circuit_breaker();
    let api = hot.breaker();
    let keyed = api
        .call_create(&mut store, &twin_config(), 0)
        .unwrap()
        .unwrap();
    let key = api.call_key(&mut store, keyed).unwrap();
    let ticket = ticket(hot.call_acquire_keyed(&mut store, key, 4 * S).unwrap());
    assert_eq!(
        hot.call_record_keyed(&mut store, key, ticket, Outcome::Status(700), 4 * S)
            .unwrap(),
        Err(RecordError::InvalidStatus(700))
    );
    let first = hot
        .call_record_keyed(&mut store, key, ticket, Outcome::Success, 4 * S)
        .unwrap()
        .unwrap();
    assert!(
        !first.notes.contains(OutcomeNotes::STALE),
        "an invalid outcome left the ticket out"
    );
    let twice = hot
        .call_record_keyed(&mut store, key, ticket, Outcome::Success, 4 * S)
        .unwrap()
        .unwrap();
    assert_eq!(twice.notes, OutcomeNotes::STALE);
    let never = hot
        .call_record_keyed(&mut store, key, 12_345, Outcome::Status(503), 4 * S)
        .unwrap()
        .unwrap();
    assert_eq!(never.notes, OutcomeNotes::STALE);
    assert_eq!(never.class, Class::Fault, "classified, not counted");

    let isolated = api.call_isolate(&mut store, keyed, 5 * S).unwrap();
    assert_eq!(isolated.len(), 1);
    assert_eq!(
        api.call_last_transitions(&mut store, keyed).unwrap(),
        isolated
    );
}

#[test]
fn a_key_names_its_breaker_only_while_the_breaker_lives() {
    let (mut store, tripgate) = common::bare();
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

    // A ticket of `a` out, then `a`'s handle dropped: the key names nothing, and both
    // keyed functions say so instead of trapping.
    let ticket_a = ticket(hot.call_acquire_keyed(&mut store, key_a, 1).unwrap());
    a.resource_drop(&mut store).unwrap();
    assert_eq!(
        hot.call_acquire_keyed(&mut store, key_a, 2).unwrap(),
        KeyedAdmission::UnknownKey
    );
    assert_eq!(
        hot.call_record_keyed(&mut store, key_a, ticket_a, Outcome::Success, 2)
            .unwrap(),
        Err(RecordError::UnknownKey)
    );
    for key in [NO_KEY, 0x000F_FFFF, 7 << 20 | 3, 12_345] {
        assert_eq!(
            hot.call_acquire_keyed(&mut store, key, 2).unwrap(),
            KeyedAdmission::UnknownKey,
            "{key}"
        );
    }

    // The slot `a` had is reused under another key; `a`'s old key still names nothing,
    // and `a`'s ticket is stale on every other breaker, the one in its slot included.
    let (c, key_c) = create(&mut store);
    assert_eq!(key_c & 0xF_FFFF, key_a & 0xF_FFFF, "the same slot");
    assert_ne!(key_c, key_a);
    assert_eq!(
        hot.call_acquire_keyed(&mut store, key_a, 3).unwrap(),
        KeyedAdmission::UnknownKey
    );
    for (breaker, key) in [(b, key_b), (c, key_c)] {
        let own = ticket(hot.call_acquire_keyed(&mut store, key, 3).unwrap());
        // The other breaker's ticket, however its number compares with this one's.
        let foreign = hot
            .call_record_keyed(&mut store, key, ticket_a, Outcome::Status(503), 3)
            .unwrap()
            .unwrap();
        assert_eq!(
            foreign.notes,
            OutcomeNotes::STALE,
            "a ticket of another breaker is stale here"
        );
        let recorded = hot
            .call_record_keyed(&mut store, key, own, Outcome::Success, 3)
            .unwrap()
            .unwrap();
        assert_eq!(recorded.notes, OutcomeNotes::empty());
        let m = api.call_metrics(&mut store, breaker, 3).unwrap();
        assert_eq!(
            (
                m.admitted_total,
                m.successes_total,
                m.faults_total,
                m.in_flight
            ),
            (1, 1, 0, 0)
        );
    }
}

/// Two breakers' tickets never name each other's permits, even when their tables give
/// out the same handles in the same order.
#[test]
fn twin_breakers_hand_out_tickets_that_are_stale_on_each_other() {
    let (mut store, tripgate) = common::bare();
    let hot = tripgate.tripgate_breaker_circuit_breaker();
    let api = hot.breaker();
    let config = wit::Config::default();
    let a = api.call_create(&mut store, &config, 0).unwrap().unwrap();
    let b = api.call_create(&mut store, &config, 0).unwrap().unwrap();
    let (key_a, key_b) = (
        api.call_key(&mut store, a).unwrap(),
        api.call_key(&mut store, b).unwrap(),
    );
    let mut tickets = Vec::new();
    for now in 0..8 {
        for key in [key_a, key_b] {
            tickets.push((
                key,
                ticket(hot.call_acquire_keyed(&mut store, key, now).unwrap()),
            ));
        }
    }
    // Every ticket recorded as a fault on the other breaker: stale, nothing counted, no
    // trip (five faults would trip a breaker).
    for &(key, ticket) in &tickets {
        let other = if key == key_a { key_b } else { key_a };
        let r = hot
            .call_record_keyed(&mut store, other, ticket, Outcome::Status(503), 9)
            .unwrap()
            .unwrap();
        assert_eq!(r.notes, OutcomeNotes::STALE);
    }
    for breaker in [a, b] {
        let m = api.call_metrics(&mut store, breaker, 9).unwrap();
        assert_eq!((m.faults_total, m.in_flight), (0, 8));
    }
    // Their own breakers still take them.
    for (key, ticket) in tickets {
        let r = hot
            .call_record_keyed(&mut store, key, ticket, Outcome::Success, 10)
            .unwrap()
            .unwrap();
        assert!(!r.notes.contains(OutcomeNotes::STALE));
    }
}

/// One slot made and dropped past all its generations: no key repeats (the slot retires
/// instead of wrapping), and every dropped key still names nothing.
#[test]
fn keys_never_repeat_even_past_a_slots_last_generation() {
    let (mut store, tripgate) = common::bare();
    let hot = tripgate.tripgate_breaker_circuit_breaker();
    let api = hot.breaker();
    let config = wit::Config::default();
    let mut seen = std::collections::HashSet::new();
    let mut dropped = Vec::new();
    for _ in 0..4_200 {
        let breaker: ResourceAny = api.call_create(&mut store, &config, 0).unwrap().unwrap();
        let key = api.call_key(&mut store, breaker).unwrap();
        assert_ne!(key, NO_KEY);
        assert!(seen.insert(key), "key {key:#x} given twice");
        breaker.resource_drop(&mut store).unwrap();
        dropped.push(key);
    }
    let slots: std::collections::HashSet<u32> = seen.iter().map(|k| k & 0xF_FFFF).collect();
    assert_eq!(slots.len(), 2, "slot 0 retired after its 4,095 generations");
    for key in dropped {
        assert_eq!(
            hot.call_acquire_keyed(&mut store, key, 1).unwrap(),
            KeyedAdmission::UnknownKey
        );
    }
}
