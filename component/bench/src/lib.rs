//! Benchmarks only: `cargo bench -p tripgate-wasmtime-bench` (see `benches/`), and what the
//! bench and the examples share.

use tripgate_wasmtime::bindings::Tripgate;
use tripgate_wasmtime::{wit, Runtime, COMPONENT};
use wasmtime::component::{Component, Linker, ResourceAny};
use wasmtime::{Engine, Store};

/// A bare store with one breaker (default config, created at 0): the generated bindings
/// and nothing else, the floor the host library is measured against.
pub struct Bare {
    pub store: Store<()>,
    pub tripgate: Tripgate,
    /// The breaker's handle.
    pub me: ResourceAny,
    /// The breaker's key, for the keyed hot path.
    pub key: u32,
}

impl Bare {
    /// The embedded component compiled anew for `engine` (to compare engine settings).
    pub fn new(engine: &Engine) -> Self {
        Self::of(engine, &Component::new(engine, COMPONENT).unwrap())
    }

    /// Another instance of the component `runtime` compiled: the same machine code the
    /// library runs, so that a comparison with the library is not also one of where two
    /// compilations landed in memory.
    pub fn sharing(runtime: &Runtime) -> Self {
        Self::of(runtime.engine(), runtime.component())
    }

    fn of(engine: &Engine, component: &Component) -> Self {
        let mut store = Store::new(engine, ());
        let tripgate = Tripgate::instantiate(&mut store, component, &Linker::new(engine)).unwrap();
        let api = tripgate.tripgate_breaker_circuit_breaker().breaker();
        let me = api
            .call_create(&mut store, &wit::Config::default(), 0)
            .unwrap()
            .unwrap();
        let key = api.call_key(&mut store, me).unwrap();
        Self {
            store,
            tripgate,
            me,
            key,
        }
    }
}

/// The scalar hot path of `tripgate:breaker@0.2.0` (`acquire-handle` → `s64`,
/// `record-handle` → `s32`, results packed in bit fields), which the typed keyed path of
/// 0.3.0 replaces: loaded from a build of that version's component (the path in
/// `TRIPGATE_COMPONENT_V020`; `component/bench/compare-0.2.sh` builds one from git) and
/// called through wasmtime's dynamic component API, so the typed pair is measured beside
/// it in one run, on one engine.
pub struct ScalarV020 {
    pub store: Store<()>,
    acquire: wasmtime::component::TypedFunc<(u32, u64), (i64,)>,
    record: wasmtime::component::TypedFunc<(u32, u32, wit::Outcome, u64), (i32,)>,
    /// The breaker's key.
    pub key: u32,
}

impl ScalarV020 {
    /// The 0.2.0 component at `TRIPGATE_COMPONENT_V020`, compiled for `engine`, with one
    /// breaker (default config, created at 0); `None` when the variable is unset.
    pub fn from_env(engine: &Engine) -> Option<Self> {
        let path = std::env::var_os("TRIPGATE_COMPONENT_V020")?;
        let bytes = std::fs::read(&path).expect("reading TRIPGATE_COMPONENT_V020");
        let component = Component::new(engine, bytes).expect("a 0.2.0 component");
        let mut store = Store::new(engine, ());
        let instance = Linker::new(engine)
            .instantiate(&mut store, &component)
            .expect("it imports nothing");
        let interface = instance
            .get_export_index(&mut store, None, "tripgate:breaker/circuit-breaker@0.2.0")
            .expect("the 0.2.0 interface");
        let func = |store: &mut Store<()>, name: &str| {
            instance
                .get_export_index(&mut *store, Some(&interface), name)
                .unwrap_or_else(|| panic!("{name} is exported"))
        };
        let create = func(&mut store, "[static]breaker.create");
        let key_of = func(&mut store, "[method]breaker.key");
        let acquire = func(&mut store, "acquire-handle");
        let record = func(&mut store, "record-handle");
        // The config record is the same in 0.2.0 and 0.3.0: the bindings' type fits.
        let create = instance
            .get_typed_func::<(&wit::Config, u64), (Result<ResourceAny, wit::ConfigError>,)>(
                &mut store, &create,
            )
            .expect("create's type");
        let (breaker,) = create
            .call(&mut store, (&wit::Config::default(), 0))
            .unwrap();
        let breaker = breaker.unwrap();
        let key_of = instance
            .get_typed_func::<(ResourceAny,), (u32,)>(&mut store, &key_of)
            .expect("key's type");
        let (key,) = key_of.call(&mut store, (breaker,)).unwrap();
        Some(Self {
            acquire: instance
                .get_typed_func(&mut store, acquire)
                .expect("acquire-handle's type"),
            record: instance
                .get_typed_func(&mut store, record)
                .expect("record-handle's type"),
            store,
            key,
        })
    }

    /// One admitted call and its success, through the packed scalars.
    #[inline]
    pub fn pair(&mut self, now: u64) -> i32 {
        let (handle,) = self.acquire.call(&mut self.store, (self.key, now)).unwrap();
        let handle = u32::try_from(handle).expect("admitted");
        let (recorded,) = self
            .record
            .call(
                &mut self.store,
                (self.key, handle, wit::Outcome::Success, now),
            )
            .unwrap();
        recorded
    }
}

/// The ticket of an admission the bench expects.
#[inline]
pub fn admitted(admission: wit::KeyedAdmission) -> wit::Ticketed {
    match admission {
        wit::KeyedAdmission::Admitted(admitted) => admitted,
        other => panic!("not admitted: {other:?}"),
    }
}

/// One admitted call and its success on the typed keyed path of the bare bindings.
#[inline]
pub fn keyed_pair(bare: &mut Bare, now: u64) -> wit::KeyedRecord {
    let hot = bare.tripgate.tripgate_breaker_circuit_breaker();
    let admitted = admitted(
        hot.call_acquire_keyed(&mut bare.store, bare.key, now)
            .unwrap(),
    );
    hot.call_record_keyed(
        &mut bare.store,
        bare.key,
        admitted.ticket,
        wit::Outcome::Success,
        now,
    )
    .unwrap()
    .expect("a valid outcome")
}
