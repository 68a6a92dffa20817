//! Serves `wasi:http` on a TCP address through a component, as `wasmtime serve` does: a
//! fresh store and instance for every request, dropped when the request ends. Besides
//! WASI 0.2 (`wasmtime-wasi`) and `wasi:http` (`wasmtime-wasi-http`; the guest's
//! outgoing calls go through `crate::outbound`), the instances get the shared key-value
//! store of [`crate::kv`].

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::oneshot;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store,
};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::p2::bindings::http::types::Scheme;
use wasmtime_wasi_http::p2::bindings::ProxyPre;
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::clock::FakeClock;
use crate::kv::{KeyValue, KvView};
use crate::kv_draft::{self, DraftStore};
use crate::outbound::Outbound;
use crate::Footprint;
use wasmtime_wasi_keyvalue::{WasiKeyValue, WasiKeyValueCtx, WasiKeyValueCtxBuilder};

/// The engine and the three components, compiled once and shared by servers.
pub struct Runtime {
    engine: Engine,
    guard: Component,
    guard_draft: Component,
    bare: Component,
}

/// Which handler a server runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handler {
    /// The composed guard: the handler with the tripgate component plugged in.
    Guard,
    /// The composed guard's build for `wasi:keyvalue@0.2.0-draft` ([`crate::GUARD_DRAFT`]).
    GuardDraft,
    /// The same handler built without the breaker and the store.
    Bare,
}

impl Runtime {
    /// Compiles the embedded components ([`crate::GUARD`], [`crate::GUARD_DRAFT`],
    /// [`crate::BARE`]) for an engine with pooled instances ([`EngineKind::Pooled`]).
    pub fn new() -> Result<Self> {
        Self::with_engine(EngineKind::Pooled)
    }

    /// The same on the engine `kind`.
    pub fn with_engine(kind: EngineKind) -> Result<Self> {
        let config = match kind {
            EngineKind::Pooled => engine_config(),
            EngineKind::Default => Config::new(),
        };
        let engine = Engine::new(&config)
            .map_err(anyhow::Error::from)
            .context("configuring wasmtime")?;
        let compile = |bytes: &[u8], footprint: Footprint, what: &str| {
            let component = Component::new(&engine, bytes)
                .map_err(anyhow::Error::from)
                .with_context(|| format!("compiling {what}"))?;
            // wasmtime's own count of the slots an instance takes must be what the pool
            // was sized for.
            let needs = component.resources_required().map(|r| Footprint {
                memories: r.num_memories,
                tables: r.num_tables,
            });
            if needs != Some(footprint) {
                bail!("{what} needs {needs:?} per instance; the pool was sized for {footprint:?}");
            }
            Ok::<_, anyhow::Error>(component)
        };
        Ok(Runtime {
            guard: compile(crate::GUARD, crate::GUARD_FOOTPRINT, "the guard")?,
            guard_draft: compile(
                crate::GUARD_DRAFT,
                crate::GUARD_DRAFT_FOOTPRINT,
                "the guard's draft build",
            )?,
            bare: compile(crate::BARE, crate::BARE_FOOTPRINT, "the bare handler")?,
            engine,
        })
    }

    /// The wasmtime engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The names `handler`'s component imports (what a host must provide).
    pub fn imports(&self, handler: Handler) -> Vec<String> {
        self.component(handler)
            .component_type()
            .imports(&self.engine)
            .map(|(name, _)| name.to_owned())
            .collect()
    }

    /// The names `handler`'s component exports.
    pub fn exports(&self, handler: Handler) -> Vec<String> {
        self.component(handler)
            .component_type()
            .exports(&self.engine)
            .map(|(name, _)| name.to_owned())
            .collect()
    }

    fn component(&self, handler: Handler) -> &Component {
        match handler {
            Handler::Guard => &self.guard,
            Handler::GuardDraft => &self.guard_draft,
            Handler::Bare => &self.bare,
        }
    }
}

/// wasmtime's defaults but for where instances live. A pool of instance slots, each reused
/// rather than mapped anew per request; an instance's memory reset in place rather than
/// handed back to the kernel, every accessible page of it zeroed (the guests keep their
/// memories small, see `component/build.rs` and `component/http-guard/build.rs`), without
/// asking `PAGEMAP_SCAN` which pages were written: kernel 6.18 also reports the untouched
/// pages of a touched page table, so the scan finds every page anyway, and its `ioctl`
/// per memory made dropping a store take about 10 µs longer (`bench`, 2026-12-07); and
/// bounds checks in the code instead of guard regions, so that neither instantiating nor
/// growing a memory changes page protections. A request's instance then makes no `mmap`,
/// `mprotect` or `munmap` call (each of which, in a process whose threads run on several
/// cores, interrupts the others to flush their TLBs). The composed guard has two linear
/// memories, the handler's and the breaker's: without this, its second instance paid
/// those calls on every request. The pool's memories and tables are [`MAX_INSTANCES`]
/// times what the largest component takes (measured, [`largest_footprint`]).
fn engine_config() -> Config {
    let most = largest_footprint();
    let mut pool = PoolingAllocationConfig::new();
    // Core instances are only counted, not slots: the component instances bound them.
    pool.total_component_instances(MAX_INSTANCES)
        .total_core_instances(u32::MAX)
        .total_memories(MAX_INSTANCES * most.memories)
        .total_tables(MAX_INSTANCES * most.tables)
        .max_memory_size(MAX_MEMORY)
        .linear_memory_keep_resident(KEEP_RESIDENT)
        .table_keep_resident(KEEP_RESIDENT)
        .pagemap_scan(Enabled::No);
    let mut config = Config::new();
    config
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool))
        .signals_based_traps(false)
        .memory_guard_size(0)
        .memory_reservation(MAX_MEMORY as u64);
    config
}

/// The most any of the three components takes from the pool, field by field (measured
/// by build.rs): with the pool's totals [`MAX_INSTANCES`] times these, it holds
/// [`MAX_INSTANCES`] instances of any of them at once.
pub fn largest_footprint() -> Footprint {
    [
        crate::GUARD_FOOTPRINT,
        crate::GUARD_DRAFT_FOOTPRINT,
        crate::BARE_FOOTPRINT,
    ]
    .into_iter()
    .fold(
        Footprint {
            memories: 0,
            tables: 0,
        },
        |most, each| Footprint {
            memories: most.memories.max(each.memories),
            tables: most.tables.max(each.tables),
        },
    )
}

/// How a [`Runtime`]'s engine keeps instances.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    /// A pool of instance slots, reset in place, without guard regions (`engine_config`).
    Pooled,
    /// wasmtime's defaults: memory mapped per instance, guard regions.
    Default,
}

/// Requests a server's engine serves at once; one more is a 500 that says the pool is
/// exhausted.
pub const MAX_INSTANCES: u32 = 256;
/// How long a client has to send a request's head, unless [`Options`] say otherwise.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a linear memory can grow to.
const MAX_MEMORY: usize = 256 << 20;
/// How much of a memory or table is reset in place rather than decommitted.
const KEEP_RESIDENT: usize = 4 << 20;

/// What a server is started with.
#[derive(Clone)]
pub struct Options {
    /// The handler.
    pub handler: Handler,
    /// The address to listen on (`127.0.0.1:0` picks a free port).
    pub listen: SocketAddr,
    /// The environment every instance gets (the guard's settings).
    pub env: Vec<(String, String)>,
    /// The key-value store every instance shares.
    pub kv: KeyValue,
    /// Scripted time for the instances' clocks; `None`: the host's clocks.
    pub clock: Option<FakeClock>,
    /// The origins (`http://host:port`) the guest may call, as Spin's
    /// `allowed_outbound_hosts`: a request to any other fails with `HTTP-request-denied`
    /// before it leaves. `None`: any.
    pub allowed_outbound: Option<Arc<Vec<String>>>,
    /// For [`Handler::GuardDraft`]: the draft store, shared (over `kv`) or per request.
    pub draft_store: DraftStore,
    /// How long a client has to send a request's head; then its connection is closed.
    /// (A request's body is the handler's to bound: the guard's `TRIPGATE_BODY_TIMEOUT_MS`.)
    pub header_timeout: Duration,
}

impl Options {
    /// `handler` on a free port of 127.0.0.1 with `env`, a new store and the host's clocks.
    pub fn new(handler: Handler, env: &[(&str, &str)]) -> Self {
        Options {
            handler,
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            env: env
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            kv: KeyValue::new(),
            clock: None,
            allowed_outbound: None,
            draft_store: DraftStore::Shared,
            header_timeout: HEADER_TIMEOUT,
        }
    }
}

/// Counts kept by a server.
#[derive(Default, Debug)]
pub struct ServerStats {
    /// Instances made (one per request).
    pub instances: AtomicU64,
    /// Total time spent instantiating, ns.
    pub instantiate_ns: AtomicU64,
    /// Total time from the call of `handle` to its return, ns.
    pub handle_ns: AtomicU64,
    /// Total time spent dropping the stores (resetting the instances' memories for the
    /// next request), ns: after the answer, but on a core the next request may need.
    pub dispose_ns: AtomicU64,
    /// Requests whose instance trapped or failed to instantiate.
    pub failures: AtomicU64,
}

/// A running server; dropping it stops it.
pub struct Server {
    addr: SocketAddr,
    stats: Arc<ServerStats>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

struct Serving {
    pre: ProxyPre<Instance>,
    options: Options,
    stats: Arc<ServerStats>,
}

/// One request's store data.
struct Instance {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    table: ResourceTable,
    kv: KeyValue,
    /// The per-request draft store (`DraftStore::PerRequest`).
    kv_per_request: WasiKeyValueCtx,
    outbound: Outbound,
}

impl WasiView for Instance {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for Instance {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.outbound,
        }
    }
}

impl Server {
    /// Starts serving on a thread of its own (a two-worker tokio runtime) and returns
    /// once the address is bound.
    pub fn start(runtime: &Runtime, options: Options) -> Result<Server> {
        let mut linker = Linker::<Instance>::new(&runtime.engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
        match (options.handler, options.draft_store) {
            (Handler::GuardDraft, DraftStore::Shared) => {
                kv_draft::add_shared_to_linker(&mut linker, |instance| KvView {
                    kv: &instance.kv,
                    table: &mut instance.table,
                })?
            }
            (Handler::GuardDraft, DraftStore::PerRequest) => {
                wasmtime_wasi_keyvalue::add_to_linker(&mut linker, |instance| {
                    WasiKeyValue::new(&instance.kv_per_request, &mut instance.table)
                })?
            }
            (Handler::Guard | Handler::Bare, _) => {
                KeyValue::add_to_linker(&mut linker, |instance| KvView {
                    kv: &instance.kv,
                    table: &mut instance.table,
                })?
            }
        }
        let pre = ProxyPre::new(linker.instantiate_pre(runtime.component(options.handler))?)?;
        let stats = Arc::new(ServerStats::default());
        let listen = options.listen;
        let serving = Arc::new(Serving {
            pre,
            options,
            stats: stats.clone(),
        });
        let (bound_tx, bound_rx) = std::sync::mpsc::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("tripgate-edge".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        let _ = bound_tx.send(Err(anyhow!("starting tokio: {e}")));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::bind(listen).await {
                        Ok(listener) => listener,
                        Err(e) => {
                            let _ = bound_tx.send(Err(anyhow!("binding {listen}: {e}")));
                            return;
                        }
                    };
                    let _ = bound_tx.send(listener.local_addr().map_err(Into::into));
                    tokio::select! {
                        _ = stopped => {}
                        _ = accept(listener, serving) => {}
                    }
                });
            })?;
        let addr = bound_rx
            .recv()
            .map_err(|_| anyhow!("the server thread ended before binding"))??;
        Ok(Server {
            addr,
            stats,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Its counts.
    pub fn stats(&self) -> &ServerStats {
        &self.stats
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn accept(listener: tokio::net::TcpListener, serving: Arc<Serving>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let serving = serving.clone();
        tokio::spawn(async move {
            let header_timeout = serving.options.header_timeout;
            let service = service_fn(move |request| {
                let serving = serving.clone();
                async move { Ok::<_, Infallible>(serving.handle(request).await) }
            });
            let _ = http1::Builder::new()
                .keep_alive(true)
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

impl Serving {
    async fn handle(
        self: Arc<Self>,
        request: hyper::Request<hyper::body::Incoming>,
    ) -> hyper::Response<HyperOutgoingBody> {
        if let Some(problem) = unaddressed(&request) {
            // The client's mistake: no instance is made, and it is no failure of ours.
            return plain(hyper::StatusCode::BAD_REQUEST, problem);
        }
        match self.clone().run(request).await {
            Ok(response) => response,
            Err(error) => {
                self.stats.failures.fetch_add(1, Ordering::Relaxed);
                plain(
                    hyper::StatusCode::INTERNAL_SERVER_ERROR,
                    &format!("{error:#}"),
                )
            }
        }
    }

    async fn run(
        self: Arc<Self>,
        request: hyper::Request<hyper::body::Incoming>,
    ) -> Result<hyper::Response<HyperOutgoingBody>> {
        let mut wasi = WasiCtx::builder();
        wasi.envs(&self.options.env);
        if let Some(clock) = &self.options.clock {
            wasi.wall_clock(clock.wall());
            wasi.monotonic_clock(clock.monotonic());
        }
        let mut store = Store::new(
            self.pre.engine(),
            Instance {
                wasi: wasi.build(),
                http: WasiHttpCtx::new(),
                table: ResourceTable::new(),
                kv: self.options.kv.clone(),
                kv_per_request: WasiKeyValueCtxBuilder::new().build(),
                outbound: Outbound {
                    allowed: self.options.allowed_outbound.clone(),
                },
            },
        );
        let (sender, receiver) = oneshot::channel();
        let request = store
            .data_mut()
            .http()
            .new_incoming_request(Scheme::Http, request)?;
        let out = store.data_mut().http().new_response_outparam(sender)?;
        let serving = self.clone();
        // The instance runs in a task of its own: it may go on after it has answered.
        let task = tokio::spawn(async move {
            let started = Instant::now();
            let proxy = serving.pre.instantiate_async(&mut store).await?;
            let instantiated = Instant::now();
            serving.stats.instances.fetch_add(1, Ordering::Relaxed);
            add(&serving.stats.instantiate_ns, instantiated - started);
            let result = proxy
                .wasi_http_incoming_handler()
                .call_handle(&mut store, request, out)
                .await;
            add(&serving.stats.handle_ns, instantiated.elapsed());
            let disposing = Instant::now();
            drop(store);
            add(&serving.stats.dispose_ns, disposing.elapsed());
            result
        });
        match receiver.await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(code)) => Err(anyhow!("the handler answered with an error: {code:?}")),
            Err(_) => match task.await {
                Ok(Ok(())) => Err(anyhow!("the handler returned without answering")),
                Ok(Err(error)) => Err(anyhow::Error::from(error).context("the handler failed")),
                Err(error) => Err(anyhow!("the handler's task failed: {error}")),
            },
        }
    }
}

/// Why `request` names no host a `wasi:http` request can carry, if it does not: the
/// authority comes from the target's or else the `Host` header, which must be ASCII.
fn unaddressed<B>(request: &hyper::Request<B>) -> Option<&'static str> {
    if request.uri().authority().is_some() {
        return None;
    }
    match request.headers().get(http::header::HOST) {
        None => Some("the request has no Host header (and no authority in its target)"),
        Some(host) if host.to_str().is_err() => Some("the request's Host header is not ASCII"),
        Some(_) => None,
    }
}

/// A plain-text answer from the server itself.
fn plain(status: hyper::StatusCode, message: &str) -> hyper::Response<HyperOutgoingBody> {
    let body = Full::new(Bytes::from(format!("tripgate-edge: {message}\n")))
        .map_err(|never| match never {})
        .boxed_unsync();
    let mut response = hyper::Response::new(body);
    *response.status_mut() = status;
    response
}

fn add(total: &AtomicU64, duration: std::time::Duration) {
    total.fetch_add(
        u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX),
        Ordering::Relaxed,
    );
}
