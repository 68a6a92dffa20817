//! `restore` is `create`, `import-state` and `key` in one call: on every kind of snapshot
//! (none, a tripped breaker's, one from a longer cooldown, damaged bytes, another window
//! shape) its breaker reads exactly as the three calls leave a twin, its key names it on
//! the keyed hot path, and a snapshot it cannot take leaves a fresh breaker and says why.
//! A bad configuration is an error, never a trap.

mod common;

use tripgate_wasmtime::bindings::Tripgate;

use tripgate_wasmtime::wit::{
    self, ConfigField, KeyedAdmission, Outcome, RejectReason, SnapshotErrorKind, State,
};
use tripgate_wasmtime::{MILLISECOND as MS, SECOND as S};
use wasmtime::component::ResourceAny;
use wasmtime::Store;

fn config() -> wit::Config {
    wit::Config {
        failure_threshold: Some(2),
        min_calls: Some(2),
        cooldown: Some(S),
        ..wit::Config::default()
    }
}

/// The bytes of a breaker with `config` that saw two faults at 10 and 20 ms (tripped),
/// exported at 30 ms.
fn tripped_export(store: &mut Store<()>, tripgate: &Tripgate) -> Vec<u8> {
    let api = tripgate.tripgate_breaker_circuit_breaker().breaker();
    let breaker = api.call_create(&mut *store, &config(), 0).unwrap().unwrap();
    for now in [10 * MS, 20 * MS] {
        let permit = api
            .call_acquire(&mut *store, breaker, now)
            .unwrap()
            .decision;
        api.call_record_outcome(&mut *store, breaker, permit.unwrap(), Outcome::Timeout, now)
            .unwrap()
            .unwrap();
    }
    let bytes = api
        .call_export_state(&mut *store, breaker, 30 * MS)
        .unwrap();
    breaker.resource_drop(&mut *store).unwrap();
    bytes.unwrap()
}

/// `restore` beside `create` + `import-state`, both at `now`: the same metrics, the same
/// export, the same admission. Returns what `restore` said of the snapshot.
fn restore_beside_create_and_import(
    store: &mut Store<()>,
    tripgate: &Tripgate,
    config: &wit::Config,
    snapshot: Option<wit::Snapshot>,
    now: u64,
) -> (Result<(), wit::SnapshotError>, State) {
    let hot = tripgate.tripgate_breaker_circuit_breaker();
    let api = hot.breaker();
    let restored = api
        .call_restore(&mut *store, config, snapshot.as_ref(), now)
        .unwrap()
        .expect("a valid configuration");
    let twin = api.call_create(&mut *store, config, now).unwrap().unwrap();
    let twin_imported = match &snapshot {
        Some(snapshot) => api
            .call_import_state(&mut *store, twin, &snapshot.bytes, snapshot.elapsed, now)
            .unwrap(),
        None => Ok(()),
    };
    assert_eq!(restored.imported, twin_imported);
    assert_eq!(
        restored.key,
        api.call_key(&mut *store, restored.breaker).unwrap(),
        "the key it returns is the breaker's"
    );

    let read = |store: &mut Store<()>, b: ResourceAny| {
        (
            api.call_metrics(&mut *store, b, now).unwrap(),
            api.call_export_state(&mut *store, b, now).unwrap(),
        )
    };
    assert_eq!(read(store, restored.breaker), read(store, twin));
    let state = api.call_state(&mut *store, restored.breaker, now).unwrap();

    // The key reaches the breaker on the hot path, and decides as the twin does.
    let keyed = hot
        .call_acquire_keyed(&mut *store, restored.key, now)
        .unwrap();
    let listed = api.call_acquire(&mut *store, twin, now).unwrap().decision;
    match (keyed, listed) {
        (KeyedAdmission::Admitted(_), Ok(_)) => {}
        (KeyedAdmission::Rejected(keyed), Err(listed)) => assert_eq!(keyed.rejection, listed),
        (keyed, listed) => panic!("restore and its twin disagree: {keyed:?} vs {listed:?}"),
    }
    (restored.imported, state)
}

#[test]
fn restore_reads_as_create_and_import_on_every_kind_of_snapshot() {
    let (mut store, tripgate) = common::bare();
    let bytes = tripped_export(&mut store, &tripgate);
    let now = 500 * MS;

    // None: a fresh breaker.
    let (imported, state) =
        restore_beside_create_and_import(&mut store, &tripgate, &config(), None, now);
    assert_eq!((imported, state), (Ok(()), State::Closed));

    // Every other case restores from bytes, `elapsed` after their export.
    let mut from = |config: &wit::Config, bytes: &[u8], elapsed: u64| {
        let snapshot = wit::Snapshot {
            bytes: bytes.to_vec(),
            elapsed,
        };
        restore_beside_create_and_import(&mut store, &tripgate, config, Some(snapshot), now)
    };

    // A tripped breaker's state, 100 ms after its export: still open.
    assert_eq!(from(&config(), &bytes, 100 * MS), (Ok(()), State::Open));

    // The same state once its cooldown has passed: half-open.
    assert_eq!(from(&config(), &bytes, 2 * S), (Ok(()), State::HalfOpen));

    // Restored under a 100 ms cooldown, the 1 s opening is bounded by the restoring
    // config (SPEC.md § Export and import): 110 ms after the trip it is over.
    let shorter = wit::Config {
        cooldown: Some(100 * MS),
        ..config()
    };
    assert_eq!(from(&shorter, &bytes, 100 * MS), (Ok(()), State::HalfOpen));

    // Damaged bytes: refused by the checksum, the breaker fresh.
    let mut damaged = bytes.clone();
    if let Some(byte) = damaged.get_mut(20) {
        *byte ^= 0x40;
    }
    let (imported, state) = from(&config(), &damaged, 0);
    assert_eq!(imported.unwrap_err().kind, SnapshotErrorKind::Checksum);
    assert_eq!(state, State::Closed);

    // A breaker whose window has another shape cannot take it.
    let other = wit::Config {
        buckets: Some(5),
        ..config()
    };
    let (imported, state) = from(&other, &bytes, 0);
    let refused = imported.unwrap_err();
    assert_eq!(refused.kind, SnapshotErrorKind::WindowShape);
    assert!(!refused.message.is_empty());
    assert_eq!(state, State::Closed);
}

#[test]
fn a_restored_open_breaker_rejects_on_the_keyed_path_with_the_rest_of_its_cooldown() {
    let (mut store, tripgate) = common::bare();
    let bytes = tripped_export(&mut store, &tripgate);
    let hot = tripgate.tripgate_breaker_circuit_breaker();
    let snapshot = wit::Snapshot {
        bytes,
        elapsed: 300 * MS,
    };
    // Tripped at 20 ms, exported at 30: 310 ms of the 1 s cooldown have passed.
    let restored = hot
        .breaker()
        .call_restore(&mut store, &config(), Some(&snapshot), 7 * S)
        .unwrap()
        .unwrap();
    match hot
        .call_acquire_keyed(&mut store, restored.key, 7 * S)
        .unwrap()
    {
        KeyedAdmission::Rejected(rejected) => {
            assert_eq!(rejected.rejection.reason, RejectReason::Open);
            assert_eq!(rejected.rejection.retry_after, 690 * MS);
        }
        other => panic!("an open breaker rejects, not {other:?}"),
    }
}

#[test]
fn a_bad_configuration_is_an_error_and_the_instance_keeps_answering() {
    let (mut store, tripgate) = common::bare();
    let api = tripgate.tripgate_breaker_circuit_breaker().breaker();
    let bad = wit::Config {
        failure_threshold: Some(0),
        ..wit::Config::default()
    };
    let snapshot = wit::Snapshot {
        bytes: b"no tripgate state, only words long enough to be one".to_vec(),
        elapsed: 0,
    };
    let error = api
        .call_restore(&mut store, &bad, Some(&snapshot), 0)
        .unwrap()
        .unwrap_err();
    assert_eq!(error.field, ConfigField::FailureThreshold);
    assert_eq!(error.message, "failure-threshold must be >= 1");
    let restored = api
        .call_restore(&mut store, &config(), Some(&snapshot), 0)
        .unwrap()
        .unwrap();
    assert_eq!(
        restored.imported.unwrap_err().kind,
        SnapshotErrorKind::NotAState
    );
}
