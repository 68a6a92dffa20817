//! # tripgate-fuzz-component
//!
//! The body of the `component` fuzz target: one fresh instance of the tripgate component
//! in wasmtime per input, driven through the bare `bindgen!` bindings (no host library
//! in between) with arbitrary WIT values — configs with absent fields, bad codes and
//! non-finite factors; outcomes with bad statuses and gRPC codes; keyed tickets recorded
//! twice, on the wrong breaker, or forged; snapshot bytes of every kind; instants anywhere on the clock; permits given to
//! the wrong breaker, dropped, or outliving their breaker's handle, in any order.
//!
//! Checked: the instance never traps (every error is a value), and every answer is the one
//! a native `tripgate_core::Breaker` mirror gives for the same call, following the WIT's
//! documented contract for what the component adds (a dropped or refused permit is
//! released as `cancelled`, at the breaker's latest instant when no `now` is given).

mod compare;
mod values;

use std::sync::OnceLock;

use arbitrary::{Result, Unstructured};
use tripgate_core as core_api;
use tripgate_fuzz::input;
use tripgate_wasmtime::{bindings, core_metrics, core_state, wit, COMPONENT};

use compare::{recorded, rejection, transitions};
use values::{config, outcome};
use wasmtime::component::{Component, Linker, ResourceAny};
use wasmtime::{Engine, ResourceLimiter, Store};

/// Linear memory one input may grow an instance to: far more than its breakers and
/// permits need, so reaching it is a leak.
const MEMORY_LIMIT: usize = 16 << 20;
/// Most breakers and permits one input makes, so an input runs in well under a
/// millisecond.
const MAX_BREAKERS: usize = 6;
const MAX_PERMITS: usize = 96;
const MAX_STEPS: usize = 160;

struct Limits;

impl ResourceLimiter for Limits {
    fn memory_growing(
        &mut self,
        _: usize,
        desired: usize,
        _: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= MEMORY_LIMIT)
    }

    fn table_growing(
        &mut self,
        _: usize,
        desired: usize,
        _: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1 << 16)
    }
}

/// The engine and the component, compiled once per process.
fn compiled() -> &'static (Engine, bindings::TripgatePre<Limits>) {
    static COMPILED: OnceLock<(Engine, bindings::TripgatePre<Limits>)> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let engine = Engine::default();
        let component = Component::new(&engine, COMPONENT).expect("the embedded component");
        let linker = Linker::<Limits>::new(&engine);
        let pre = linker.instantiate_pre(&component).expect("no imports");
        (
            engine.clone(),
            bindings::TripgatePre::new(pre).expect("the tripgate world"),
        )
    })
}

/// Unwraps a guest call: a trap is the one thing that must never happen.
fn ok<T>(result: wasmtime::Result<T>, what: &str) -> T {
    result.unwrap_or_else(|trap| panic!("{what} trapped: {trap:?}"))
}

/// A breaker in the instance and its native mirror.
struct Mirror {
    /// `None` once the host dropped its handle (its permits keep it alive in the guest).
    handle: Option<ResourceAny>,
    /// The breaker's key, for the keyed hot path.
    key: u32,
    native: core_api::Breaker,
}

/// A permit resource, the breaker that issued it, and the mirror's permit (plain, so it
/// can be rebuilt).
struct Held {
    resource: ResourceAny,
    owner: usize,
    native: core_api::RawPermit,
}

struct Fuzz {
    store: Store<Limits>,
    api: bindings::Tripgate,
    breakers: Vec<Mirror>,
    permits: Vec<Held>,
    /// Tickets out: the ticket, the breaker that issued it, the mirror's permit.
    tickets: Vec<(u64, usize, core_api::RawPermit)>,
    /// Tickets recorded already, to record again.
    spent: Vec<u64>,
    snapshots: Vec<Vec<u8>>,
}

impl Fuzz {
    fn new() -> Self {
        let (engine, pre) = compiled();
        let mut store = Store::new(engine, Limits);
        store.limiter(|limits| limits);
        let api = ok(pre.instantiate(&mut store), "instantiate");
        Self {
            store,
            api,
            breakers: Vec::new(),
            permits: Vec::new(),
            tickets: Vec::new(),
            spent: Vec::new(),
            snapshots: Vec::new(),
        }
    }

    /// A live breaker chosen by the input, with its handle.
    fn pick(&self, u: &mut Unstructured<'_>) -> Result<Option<(usize, ResourceAny)>> {
        if self.breakers.is_empty() {
            return Ok(None);
        }
        let i = u.choose_index(self.breakers.len())?;
        Ok(self.breakers[i].handle.map(|h| (i, h)))
    }

    fn reading(&self, u: &mut Unstructured<'_>, i: usize) -> Result<u64> {
        input::reading(u, self.breakers[i].native.latest())
    }

    fn step(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        match u.int_in_range(0..=21)? {
            0 => self.create(u),
            1..=4 => self.acquire(u),
            5 | 6 => self.acquire_keyed(u),
            7..=10 => self.record(u),
            11 | 12 => self.record_keyed(u),
            13 => self.read(u),
            14 => self.manual(u),
            15 => self.export(u),
            16 | 17 => self.import(u),
            18 => self.drop_permit(u),
            19 => self.permit_methods(u),
            20 => self.drop_breaker(u),
            _ => self.read(u),
        }
    }

    fn create(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        if self.breakers.len() >= MAX_BREAKERS {
            return Ok(());
        }
        let (config, expected) = config(u)?;
        let now = input::number(u)?;
        let api = self.api.tripgate_breaker_circuit_breaker().breaker();
        let created = ok(api.call_create(&mut self.store, &config, now), "create");
        match (created, expected) {
            (Ok(handle), Ok(c)) => {
                let key = ok(api.call_key(&mut self.store, handle), "key");
                self.breakers.push(Mirror {
                    handle: Some(handle),
                    key,
                    native: core_api::Breaker::new(c, now).expect("validated"),
                });
            }
            (Err(got), Err(want)) => {
                assert_eq!(got.field as u8, want.field.code(), "config error field");
                assert_eq!(got.message, want.to_string(), "config error message");
                assert_eq!(got.rule, want.rule.to_string());
            }
            (got, want) => panic!("create: component {got:?}, expected {want:?} for {config:?}"),
        }
        Ok(())
    }

    fn acquire(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let Some((i, handle)) = self.pick(u)? else {
            return Ok(());
        };
        if self.permits.len() >= MAX_PERMITS {
            return Ok(());
        }
        let now = self.reading(u, i)?;
        let api = self.api.tripgate_breaker_circuit_breaker().breaker();
        let got = ok(api.call_acquire(&mut self.store, handle, now), "acquire");
        let want = self.breakers[i].native.acquire(now);
        transitions(&got.transitions, &want.transitions, "acquire");
        match (got.decision, want.decision) {
            (Ok(resource), Ok(permit)) => self.permits.push(Held {
                resource,
                owner: i,
                native: permit.into_raw(),
            }),
            (Err(got), Err(want)) => rejection(&got, &want, "acquire"),
            (got, want) => panic!("acquire: component {got:?}, native {want:?}"),
        }
        Ok(())
    }

    /// The transitions a keyed call flagged, read with `last-transitions` as a host does.
    fn flagged(&mut self, i: usize, flagged: bool, want: &core_api::Transitions, what: &str) {
        assert_eq!(flagged, !want.is_empty(), "{what}: transitions flagged");
        if flagged {
            let handle = self.breakers[i].handle.expect("a live breaker");
            let api = self.api.tripgate_breaker_circuit_breaker().breaker();
            let listed = ok(
                api.call_last_transitions(&mut self.store, handle),
                "last-transitions",
            );
            transitions(&listed, want, what);
        }
    }

    fn acquire_keyed(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let Some((i, _)) = self.pick(u)? else {
            return Ok(());
        };
        let now = self.reading(u, i)?;
        let key = self.breakers[i].key;
        let api = self.api.tripgate_breaker_circuit_breaker();
        let got = ok(
            api.call_acquire_keyed(&mut self.store, key, now),
            "acquire-keyed",
        );
        let want = self.breakers[i].native.acquire(now);
        match (got, want.decision) {
            (wit::KeyedAdmission::Admitted(admitted), Ok(permit)) => {
                let notes = admitted.notes;
                let flagged = notes.contains(wit::AdmissionNotes::TRANSITIONED);
                self.flagged(i, flagged, &want.transitions, "acquire-keyed");
                let probe = notes.contains(wit::AdmissionNotes::PROBE);
                assert_eq!(probe, permit.is_probe(), "acquire-keyed: probe");
                assert_eq!(
                    admitted.ticket >> 32,
                    u64::from(key),
                    "a ticket carries its key"
                );
                // Past the cap the ticket stays out, unrecorded, in both.
                if self.tickets.len() < MAX_PERMITS {
                    self.tickets.push((admitted.ticket, i, permit.into_raw()));
                }
            }
            (wit::KeyedAdmission::Rejected(got), Err(rejected)) => {
                self.flagged(i, got.transitioned, &want.transitions, "acquire-keyed");
                rejection(&got.rejection, &rejected, "acquire-keyed");
            }
            (got, want) => panic!("acquire-keyed: component {got:?}, native {want:?}"),
        }
        Ok(())
    }

    /// Releases a permit on its own breaker's mirror as `cancelled`, at `now`, or at that
    /// breaker's latest instant when `now` is `None` (a destructor has no clock).
    fn cancel(&mut self, owner: usize, raw: core_api::RawPermit, now: Option<u64>) {
        let native = &mut self.breakers[owner].native;
        let now = now.unwrap_or_else(|| native.latest());
        let permit = raw.into_permit().expect("issued");
        let _ = native.record(permit, core_api::Outcome::Cancelled, now);
    }

    /// A permit recorded on a breaker the input picks: usually its own, sometimes
    /// another (`foreign-permit`), with an outcome that may be invalid.
    fn record(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        if self.permits.is_empty() {
            return Ok(());
        }
        let held = self
            .permits
            .swap_remove(u.choose_index(self.permits.len())?);
        let target = if u.ratio(7, 8)? {
            Some((held.owner, self.breakers[held.owner].handle))
        } else {
            self.pick(u)?.map(|(i, h)| (i, Some(h)))
        };
        let Some((i, Some(handle))) = target else {
            // No live handle to record on: the host lets the permit go instead.
            self.drop_held(held);
            return Ok(());
        };
        let (wit_outcome, core_outcome) = outcome(u)?;
        let now = self.reading(u, i)?;
        let api = self.api.tripgate_breaker_circuit_breaker().breaker();
        let got = ok(
            api.call_record_outcome(&mut self.store, handle, held.resource, wit_outcome, now),
            "record-outcome",
        );
        if i != held.owner {
            assert_eq!(
                got,
                Err(wit::RecordError::ForeignPermit),
                "a foreign permit"
            );
            self.cancel(held.owner, held.native, None);
            return Ok(());
        }
        match core_outcome {
            Err(error) => {
                assert_eq!(got, Err(error), "an invalid outcome");
                self.cancel(i, held.native, Some(now));
            }
            Ok(outcome) => {
                let got = got.unwrap_or_else(|e| panic!("record-outcome refused: {e:?}"));
                let permit = held.native.into_permit().expect("issued");
                let want = self.breakers[i].native.record(permit, outcome, now);
                recorded(&got, &want, "record-outcome");
            }
        }
        Ok(())
    }

    /// A ticket recorded on a breaker the input picks: one out (usually on its own
    /// breaker), one recorded already, or a forged one; with an outcome that may be
    /// invalid. Anything but a ticket out on this breaker records as stale.
    fn record_keyed(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let Some((i, _)) = self.pick(u)? else {
            return Ok(());
        };
        let ticket = if !self.tickets.is_empty() && u.ratio(3, 4)? {
            self.tickets[u.choose_index(self.tickets.len())?].0
        } else if !self.spent.is_empty() && u.ratio(1, 2)? {
            self.spent[u.choose_index(self.spent.len())?]
        } else {
            input::number(u)?
        };
        let (wit_outcome, core_outcome) = outcome(u)?;
        let now = self.reading(u, i)?;
        let key = self.breakers[i].key;
        let api = self.api.tripgate_breaker_circuit_breaker();
        let got = ok(
            api.call_record_keyed(&mut self.store, key, ticket, wit_outcome, now),
            "record-keyed",
        );
        let outcome = match core_outcome {
            Err(error) => {
                // Refused: the ticket stays out.
                assert_eq!(got, Err(error), "record-keyed: an invalid outcome");
                return Ok(());
            }
            Ok(outcome) => outcome,
        };
        let got = got.unwrap_or_else(|e| panic!("record-keyed refused: {e:?}"));
        let out = self
            .tickets
            .iter()
            .position(|&(t, owner, _)| t == ticket && owner == i);
        let native = &mut self.breakers[i].native;
        let want = match out {
            Some(k) => {
                let (_, _, raw) = self.tickets.swap_remove(k);
                if self.spent.len() < MAX_PERMITS {
                    self.spent.push(ticket);
                }
                native.record(raw.into_permit().expect("issued"), outcome, now)
            }
            None => native.record_stale(outcome, now),
        };
        let notes = got.notes;
        assert_eq!(
            (
                got.class as u8,
                notes.contains(wit::OutcomeNotes::SLOW),
                notes.contains(wit::OutcomeNotes::STALE)
            ),
            (want.class.code(), want.slow && !want.stale, want.stale),
            "record-keyed"
        );
        let flagged = notes.contains(wit::OutcomeNotes::TRANSITIONED);
        self.flagged(i, flagged, &want.transitions, "record-keyed");
        Ok(())
    }

    fn read(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let Some((i, handle)) = self.pick(u)? else {
            return Ok(());
        };
        let now = self.reading(u, i)?;
        let api = self.api.tripgate_breaker_circuit_breaker().breaker();
        let state = ok(api.call_state(&mut self.store, handle, now), "state");
        let metrics = ok(api.call_metrics(&mut self.store, handle, now), "metrics");
        let native = &self.breakers[i].native;
        assert_eq!(core_state(state), native.state(now), "state");
        assert_eq!(core_metrics(&metrics), native.metrics(now), "metrics");
        Ok(())
    }

    fn manual(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let Some((i, handle)) = self.pick(u)? else {
            return Ok(());
        };
        let now = self.reading(u, i)?;
        let api = self.api.tripgate_breaker_circuit_breaker().breaker();
        let native = &mut self.breakers[i].native;
        let (got, want) = match u.int_in_range(0..=3)? {
            0 => (
                api.call_isolate(&mut self.store, handle, now),
                native.isolate(now),
            ),
            1 => (
                api.call_release(&mut self.store, handle, now),
                native.release(now),
            ),
            2 => (
                api.call_disable(&mut self.store, handle, now),
                native.disable(now),
            ),
            _ => (
                api.call_reset(&mut self.store, handle, now),
                native.reset(now),
            ),
        };
        transitions(&ok(got, "manual"), &want, "manual");
        Ok(())
    }

    fn export(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let Some((i, handle)) = self.pick(u)? else {
            return Ok(());
        };
        let now = self.reading(u, i)?;
        let api = self.api.tripgate_breaker_circuit_breaker().breaker();
        let got = ok(
            api.call_export_state(&mut self.store, handle, now),
            "export-state",
        )
        .unwrap_or_else(|e| panic!("export-state failed: {e:?}"));
        let mut buf = [0u8; core_api::MAX_EXPORT_LEN];
        let len = self.breakers[i].native.export(now, &mut buf).expect("fits");
        assert_eq!(got, buf[..len], "exported bytes");
        if self.snapshots.len() < 8 {
            self.snapshots.push(got);
        }
        Ok(())
    }

    fn import(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        let Some((i, handle)) = self.pick(u)? else {
            return Ok(());
        };
        let now = self.reading(u, i)?;
        let source = if self.snapshots.is_empty() {
            let mut buf = [0u8; core_api::MAX_EXPORT_LEN];
            let len = self.breakers[i].native.export(now, &mut buf).expect("fits");
            buf[..len].to_vec()
        } else {
            self.snapshots[u.choose_index(self.snapshots.len())?].clone()
        };
        let bytes = input::snapshot(u, &source)?;
        let elapsed = input::number(u)?;
        let api = self.api.tripgate_breaker_circuit_breaker().breaker();
        let got = ok(
            api.call_import_state(&mut self.store, handle, &bytes, elapsed, now),
            "import-state",
        );
        let want = self.breakers[i].native.import(&bytes, elapsed, now);
        match (got, want) {
            (Ok(()), Ok(())) => {}
            (Err(got), Err(want)) => {
                assert_eq!(got.kind as u8, want.kind().code(), "snapshot error kind");
                assert_eq!(got.message, want.to_string(), "snapshot error message");
            }
            (got, want) => panic!("import-state: component {got:?}, native {want:?}"),
        }
        Ok(())
    }

    /// The host drops a permit without an outcome: the guest records `cancelled` at the
    /// breaker's latest instant.
    fn drop_held(&mut self, held: Held) {
        ok(
            held.resource.resource_drop(&mut self.store),
            "dropping a permit",
        );
        self.cancel(held.owner, held.native, None);
    }

    fn drop_permit(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        if !self.permits.is_empty() {
            let held = self
                .permits
                .swap_remove(u.choose_index(self.permits.len())?);
            self.drop_held(held);
        }
        Ok(())
    }

    fn permit_methods(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        if self.permits.is_empty() {
            return Ok(());
        }
        let held = &self.permits[u.choose_index(self.permits.len())?];
        let api = self.api.tripgate_breaker_circuit_breaker().permit();
        let probe = ok(
            api.call_is_probe(&mut self.store, held.resource),
            "is-probe",
        );
        let epoch = ok(api.call_epoch(&mut self.store, held.resource), "epoch");
        let started = ok(api.call_started(&mut self.store, held.resource), "started");
        let native = held.native.into_permit().expect("issued");
        assert_eq!(
            (probe, epoch, started),
            (native.is_probe(), native.epoch(), native.started())
        );
        Ok(())
    }

    /// The host drops a breaker's handle; its permits keep working (and keep it alive).
    fn drop_breaker(&mut self, u: &mut Unstructured<'_>) -> Result<()> {
        if let Some((i, handle)) = self.pick(u)? {
            ok(handle.resource_drop(&mut self.store), "dropping a breaker");
            self.breakers[i].handle = None;
        }
        Ok(())
    }

    /// Drops everything left, in an order the input picks.
    fn finish(&mut self, u: &mut Unstructured<'_>) {
        while !self.permits.is_empty() || self.breakers.iter().any(|b| b.handle.is_some()) {
            let live_breaker = self.breakers.iter().any(|b| b.handle.is_some());
            let permit_first =
                !self.permits.is_empty() && (!live_breaker || u.arbitrary().unwrap_or(true));
            if permit_first {
                let k = u.choose_index(self.permits.len()).unwrap_or(0);
                let held = self.permits.swap_remove(k);
                self.drop_held(held);
            } else if let Some(b) = self.breakers.iter_mut().find(|b| b.handle.is_some()) {
                let handle = b.handle.take().expect("a live handle");
                ok(handle.resource_drop(&mut self.store), "dropping a breaker");
            }
        }
    }
}

/// One input: a fresh instance, a history of arbitrary calls, then everything dropped.
pub fn component(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let mut fuzz = Fuzz::new();
    for _ in 0..MAX_STEPS {
        if u.is_empty() || fuzz.step(&mut u).is_err() {
            break;
        }
    }
    fuzz.finish(&mut u);
}
