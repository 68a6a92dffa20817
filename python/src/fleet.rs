//! Fleet mode for Python (`FLEET.md`; the wire format is `wit/fleet.md`): the core's
//! member protocol (`tripgate_core::fleet::protocol`) driving a `tripgate.CircuitBreaker`
//! through the `Member` operations every Rust host implements, the wire format, the option
//! bounds, the reconnect backoff and the store's Lua scripts. The redis-py adapter
//! (`python/tripgate/fleet.py`) only moves bytes: it tells a [`FleetMember`] what happened,
//! runs the one Redis call the protocol asks for, and hands back Redis's raw reply, which
//! is read here.
//!
//! A member is stepped by its store's background thread. A breaker's transitions reach
//! that thread through a [`Watcher`] that only sets a flag and writes a byte to a
//! [`FleetWaker`] socket the thread selects on: a call never waits on the store.

use std::cell::Cell;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};

use hmac::{Hmac, Mac};
use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::PyTraverseError;
use sha2::Sha256;

use tripgate_core::fleet::options::{Backoff, FleetOption, MIN_KEY_BYTES};
use tripgate_core::fleet::protocol::{Command, Counts, Input, Protocol, Reply, Settings};
use tripgate_core::fleet::scripts;
use tripgate_core::fleet::wire::{self, Ignored, Keys, Line, Message, Signer};
use tripgate_core::fleet::wire::{MAX_LINE, MAX_VOTES};
use tripgate_core::{FleetEvent, FleetEventKind, Nanos};
use tripgate_host::fleet::{Member, MemberLink};
use tripgate_host::Watcher;

use crate::breaker::Breaker;
use crate::clock::AnyClock;
use crate::options::{option_error, type_name};

type Native = tripgate::Breaker<AnyClock>;

/// The fleet's shared key: HMAC-SHA256, as the wire format signs lines and votes.
struct Key(Hmac<Sha256>);

impl Signer for Key {
    fn sign(&self, body: &[u8]) -> [u8; 32] {
        let mut mac = self.0.clone();
        mac.update(body);
        mac.finalize().into_bytes().into()
    }
}

/// Bytes of a `bytes`, `bytearray` or `str` (UTF-8), or `None` for anything else.
fn bytes_of(value: &Bound<'_, PyAny>) -> Option<Vec<u8>> {
    if let Ok(b) = value.cast::<PyBytes>() {
        return Some(b.as_bytes().to_vec());
    }
    if let Ok(s) = value.cast::<PyString>() {
        return s.to_cow().ok().map(|s| s.as_bytes().to_vec());
    }
    value
        .cast::<pyo3::types::PyByteArray>()
        .ok()
        .map(|b| b.to_vec())
}

/// A shared key from `key` (bytes or str, at least `MIN_KEY_BYTES`), or none.
fn key_of(py: Python<'_>, key: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Key>> {
    let Some(key) = key.filter(|k| !k.is_none()) else {
        return Ok(None);
    };
    let Some(bytes) = bytes_of(key) else {
        return Err(option_error(
            py,
            true,
            "key",
            format!("key must be bytes or str, not {}", type_name(key)),
        ));
    };
    if bytes.len() < MIN_KEY_BYTES {
        return Err(option_error(
            py,
            false,
            "key",
            format!("key must be at least {MIN_KEY_BYTES} bytes (omit it to run unsigned)"),
        ));
    }
    // HMAC takes a key of any length (a longer one is hashed first).
    Hmac::new_from_slice(&bytes)
        .map(|mac| Some(Key(mac)))
        .map_err(|_| option_error(py, false, "key", "key is not usable".into()))
}

/// A member id as the wire writes it (16 lowercase hex digits, not 0).
fn member_of(py: Python<'_>, member: &Bound<'_, PyAny>) -> PyResult<u64> {
    bytes_of(member)
        .and_then(|text| wire::parse_member(&text))
        .ok_or_else(|| {
            option_error(
                py,
                false,
                "member_id",
                "member_id must be 16 lowercase hex digits, not all zero".into(),
            )
        })
}

/// The Python spelling of a fleet option (`reconcile_interval`).
fn python_name(option: FleetOption) -> String {
    option.name().replace('-', "_")
}

/// A duration option in ns, checked against the core's bounds; the error names the option.
fn duration(py: Python<'_>, option: FleetOption, ns: Option<u64>) -> PyResult<Nanos> {
    option.duration(ns).map_err(|e| {
        let name = python_name(option);
        let rule = e.to_string().replacen(option.name(), &name, 1);
        option_error(py, false, &name, rule)
    })
}

/// Seconds (int or float, not bool) as ns; `None` for `None`.
fn seconds(
    py: Python<'_>,
    option: FleetOption,
    value: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<u64>> {
    let Some(value) = value.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    let name = python_name(option);
    if value.is_instance_of::<PyBool>()
        || !(value.is_instance_of::<PyInt>() || value.is_instance_of::<PyFloat>())
    {
        return Err(option_error(
            py,
            true,
            &name,
            format!(
                "{name} must be a number of seconds, not {}",
                type_name(value)
            ),
        ));
    }
    let seconds: f64 = value.extract().unwrap_or(f64::INFINITY);
    if !seconds.is_finite() || seconds < 0.0 {
        // Out of every bound: the core's rule says which.
        return duration(py, option, Some(u64::MAX)).map(Some);
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let ns = (seconds * 1e9).round().min(u64::MAX as f64) as u64;
    Ok(Some(ns))
}

/// `fleet_options(reconcile_interval=None, store_timeout=None, max_backoff=None, key=None,
/// member=None)`: a store's options checked by the core's rules, durations in seconds. A
/// dict of the ns values, the key as bytes (or None) and `member_id` (from `member`, a
/// stable name; None without one: the adapter draws a random id). Errors name the option
/// (`error.option`).
#[pyfunction]
#[pyo3(signature = (*, reconcile_interval = None, store_timeout = None, max_backoff = None, key = None, member = None))]
pub fn fleet_options<'py>(
    py: Python<'py>,
    reconcile_interval: Option<&Bound<'py, PyAny>>,
    store_timeout: Option<&Bound<'py, PyAny>>,
    max_backoff: Option<&Bound<'py, PyAny>>,
    key: Option<&Bound<'py, PyAny>>,
    member: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    for (option, value) in [
        (FleetOption::ReconcileInterval, reconcile_interval),
        (FleetOption::StoreTimeout, store_timeout),
        (FleetOption::MaxBackoff, max_backoff),
    ] {
        let ns = duration(py, option, seconds(py, option, value)?)?;
        out.set_item(format!("{}_ns", python_name(option)), ns)?;
    }
    key_of(py, key)?;
    let key = key.filter(|k| !k.is_none()).and_then(bytes_of);
    out.set_item("key", key.map(|k| PyBytes::new(py, &k)))?;
    let id = match member.filter(|m| !m.is_none()) {
        None => None,
        Some(m) => {
            let Ok(name) = m.cast::<PyString>() else {
                return Err(option_error(
                    py,
                    true,
                    "member",
                    format!(
                        "member must be a str (a pod or host name), not {}",
                        type_name(m)
                    ),
                ));
            };
            let name = name.to_cow()?;
            if name.is_empty() || name.len() > 256 {
                return Err(option_error(
                    py,
                    false,
                    "member",
                    "member must be 1-256 bytes".into(),
                ));
            }
            Some(wire::member_id(&name))
        }
    };
    out.set_item("member_id", id.map(wire::member_hex))?;
    Ok(out)
}

/// The store's Lua scripts, by name (`read`, `vote`, `take`, `renew`, `release`, `repair`,
/// `publish`): the core's files, run as they are by every adapter.
#[pyfunction]
pub fn fleet_scripts(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    for (name, text) in [
        ("read", scripts::READ),
        ("vote", scripts::VOTE),
        ("take", scripts::TAKE),
        ("renew", scripts::RENEW),
        ("release", scripts::RELEASE),
        ("repair", scripts::REPAIR),
        ("publish", scripts::PUBLISH),
    ] {
        out.set_item(name, text)?;
    }
    Ok(out)
}

/// `fleet_member_id(name)`: the stable member id of a member name (16 hex digits), the
/// same in every adapter.
#[pyfunction]
pub fn fleet_member_id(name: String) -> String {
    wire::member_hex(wire::member_id(&name))
}

/// `fleet_valid_name(name)`: whether `name` is a fleet name (1-128 of `A-Z a-z 0-9 . _ - :`).
#[pyfunction]
pub fn fleet_valid_name(name: &Bound<'_, PyAny>) -> bool {
    name.cast::<PyString>()
        .ok()
        .and_then(|s| s.to_cow().ok().map(|name| wire::valid_name(&name)))
        .unwrap_or(false)
}

fn kind_of(py: Python<'_>, kind: &str) -> PyResult<FleetEventKind> {
    FleetEventKind::from_name(kind).ok_or_else(|| {
        option_error(
            py,
            false,
            "kind",
            format!("kind must be open or close, not {kind:?}"),
        )
    })
}

fn fleet_name(py: Python<'_>, name: &str) -> PyResult<()> {
    if wire::valid_name(name) {
        Ok(())
    } else {
        Err(option_error(
            py,
            false,
            "name",
            "name must be 1-128 characters of A-Z a-z 0-9 . _ - :".into(),
        ))
    }
}

/// `fleet_encode(name, generation, kind, remaining_ms, origin, key=None)`: an event's line
/// as the wire writes it, signed with `key` (or `-`).
#[pyfunction]
#[pyo3(signature = (name, generation, kind, remaining_ms, origin, key = None))]
pub fn fleet_encode(
    py: Python<'_>,
    name: String,
    generation: u64,
    kind: String,
    remaining_ms: u64,
    origin: &Bound<'_, PyAny>,
    key: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    fleet_name(py, &name)?;
    let message = Message {
        generation,
        kind: kind_of(py, &kind)?,
        remaining_ms,
        origin: member_of(py, origin)?,
    };
    let key = key_of(py, key)?;
    Ok(wire::encode(
        &name,
        &message,
        key.as_ref().map(|k| k as &dyn Signer),
    ))
}

/// `fleet_decode(line, name, key=None)`: what a member reads in a line: a dict (`kind`
/// `open`, `close` or `free`, `generation`, `remaining_ms`, `origin`), or `ValueError`
/// whose `reason` is why it is ignored (`garbage`, `wrong-fleet`, `unsigned`, `forged`).
#[pyfunction]
#[pyo3(signature = (line, name, key = None))]
pub fn fleet_decode<'py>(
    py: Python<'py>,
    line: &Bound<'py, PyAny>,
    name: String,
    key: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    let bytes = bytes_of(line).ok_or_else(|| {
        PyTypeError::new_err(format!(
            "line must be bytes or str, not {}",
            type_name(line)
        ))
    })?;
    let key = key_of(py, key)?;
    let out = PyDict::new(py);
    match wire::decode_line(&bytes, &name, key.as_ref().map(|k| k as &dyn Signer)) {
        Ok(Line::Event(m)) => {
            out.set_item("kind", m.kind.name())?;
            out.set_item("generation", m.generation)?;
            out.set_item("remaining_ms", m.remaining_ms)?;
            out.set_item("origin", wire::member_hex(m.origin))?;
        }
        Ok(Line::LeaseFree { origin }) => {
            out.set_item("kind", "free")?;
            out.set_item("origin", wire::member_hex(origin))?;
        }
        Err(why) => {
            let err = PyValueError::new_err(format!("the line is ignored: {}", why.name()));
            let _ = err.value(py).setattr("reason", why.name());
            return Err(err);
        }
    }
    Ok(out)
}

/// `fleet_vote_entry(name, member, generation, key=None)`: a trip vote as the votes set
/// holds it.
#[pyfunction]
#[pyo3(signature = (name, member, generation, key = None))]
pub fn fleet_vote_entry(
    py: Python<'_>,
    name: String,
    member: &Bound<'_, PyAny>,
    generation: u64,
    key: Option<&Bound<'_, PyAny>>,
) -> PyResult<String> {
    fleet_name(py, &name)?;
    let member = member_of(py, member)?;
    let key = key_of(py, key)?;
    Ok(wire::vote_entry(
        &name,
        member,
        generation,
        key.as_ref().map(|k| k as &dyn Signer),
    ))
}

/// The fleet-wide constants and names the adapter reads.
pub fn add_tables(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("FLEET_MAX_LINE", MAX_LINE)?;
    m.add("FLEET_MAX_VOTES", MAX_VOTES)?;
    m.add("FLEET_MIN_KEY_BYTES", MIN_KEY_BYTES)?;
    let ignored: Vec<&str> = Ignored::ALL.iter().map(|i| i.name()).collect();
    m.add("FLEET_IGNORED", PyTuple::new(py, ignored)?)?;
    let bounds = PyDict::new(py);
    for option in [
        FleetOption::ReconcileInterval,
        FleetOption::StoreTimeout,
        FleetOption::MaxBackoff,
    ] {
        if let Some((default, least, most)) = option.bounds() {
            bounds.set_item(python_name(option), (default, least, most))?;
        }
    }
    m.add("FLEET_DURATION_BOUNDS", bounds)?;
    Ok(())
}

/// The core's reconnect backoff: from 10 ms doubling to `max_ns`, jittered by `seed`,
/// starting over only after a session stayed up for `max_ns`.
#[pyclass(module = "tripgate._native", name = "FleetBackoff")]
pub struct FleetBackoff(Backoff);

#[pymethods]
impl FleetBackoff {
    #[new]
    fn new(py: Python<'_>, max_ns: u64, seed: u64) -> PyResult<Self> {
        let max = duration(py, FleetOption::MaxBackoff, Some(max_ns))?;
        Ok(Self(Backoff::new(max, seed)))
    }

    /// The store answered at `now_ns`.
    fn up(&mut self, now_ns: u64) {
        self.0.up(now_ns);
    }

    /// The store failed at `now_ns`: how many ns to wait before trying again.
    fn down(&mut self, now_ns: u64) -> u64 {
        self.0.down(now_ns)
    }
}

/// A connected pair of sockets: a Unix one where there is one.
#[cfg(unix)]
type Stream = std::os::unix::net::UnixStream;
#[cfg(not(unix))]
type Stream = std::net::TcpStream;

#[cfg(unix)]
fn socket_pair() -> std::io::Result<(Stream, Stream)> {
    Stream::pair()
}

/// Elsewhere a loopback TCP connection, which `select` takes on every platform.
#[cfg(not(unix))]
fn socket_pair() -> std::io::Result<(Stream, Stream)> {
    let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))?;
    let writer = Stream::connect(listener.local_addr()?)?;
    let (reader, _) = listener.accept()?;
    Ok((reader, writer))
}

/// What wakes a store's thread: a socket pair, the thread selecting on
/// [`FleetWaker::fileno`]. A wake writes one byte unless one is pending; it never blocks
/// and never raises.
struct WakeFd {
    reader: Stream,
    writer: Stream,
    pending: AtomicBool,
}

impl WakeFd {
    fn wake(&self) {
        if !self.pending.swap(true, Ordering::AcqRel) {
            // A full socket holds a byte already: the thread wakes all the same.
            let _ = (&self.writer).write(&[1]);
        }
    }
}

/// A store thread's wake-up (`fileno()` to select on, `drain()` after waking, `wake()`).
#[pyclass(frozen, module = "tripgate._native", name = "FleetWaker")]
pub struct FleetWaker(Arc<WakeFd>);

#[pymethods]
impl FleetWaker {
    #[new]
    fn new() -> PyResult<Self> {
        let (reader, writer) = socket_pair()?;
        reader.set_nonblocking(true)?;
        writer.set_nonblocking(true)?;
        Ok(Self(Arc::new(WakeFd {
            reader,
            writer,
            pending: AtomicBool::new(false),
        })))
    }

    /// The socket to select on.
    #[cfg(unix)]
    fn fileno(&self) -> i64 {
        use std::os::fd::AsRawFd;
        i64::from(self.0.reader.as_raw_fd())
    }

    /// The socket to select on.
    #[cfg(windows)]
    fn fileno(&self) -> u64 {
        use std::os::windows::io::AsRawSocket;
        self.0.reader.as_raw_socket()
    }

    /// Wakes the thread.
    fn wake(&self) {
        self.0.wake();
    }

    /// Takes the pending wake-ups: call before looking at what woke the thread.
    fn drain(&self) {
        let mut buf = [0u8; 64];
        while matches!((&self.0.reader).read(&mut buf), Ok(n) if n > 0) {}
        // After the read: a wake that saw `pending` still set had set its flag first, so
        // the thread's look that follows finds it.
        self.0.pending.store(false, Ordering::Release);
    }
}

thread_local! {
    /// The member this thread is stepping (its address), if any: a listener inside the
    /// step that leaves, or steps again, must not wait for what the step holds.
    static STEPPING: Cell<usize> = const { Cell::new(0) };
}

/// Marks this thread as stepping a member until dropped (a panic included).
struct Stepping;

impl Stepping {
    fn enter(id: usize) -> Self {
        STEPPING.with(|s| s.set(id));
        Self
    }
}

impl Drop for Stepping {
    fn drop(&mut self) {
        STEPPING.with(|s| s.set(0));
    }
}

/// The protocol and the command it asked for, whose reply comes next.
struct Stepper {
    protocol: Protocol,
    command: Option<Command>,
}

/// What the store's thread last saw of a member, for `status()` from any thread.
#[derive(Clone, Copy, Default)]
struct Seen {
    synced: bool,
    lease_held: bool,
    wants_lease: bool,
    deadline: Option<Nanos>,
    counts: Counts,
}

/// One breaker's membership of one fleet: the core's protocol over the breaker. See the
/// module's docs; `python/tripgate/fleet.py` drives it.
#[pyclass(frozen, module = "tripgate._native", name = "FleetMember")]
pub struct FleetMember {
    breaker: Py<Breaker>,
    native: Arc<Native>,
    stepper: Mutex<Stepper>,
    key: Option<Key>,
    keys: Keys,
    name: String,
    member: u64,
    /// In the fleet: held while the protocol steps, so that leaving (which makes the
    /// breaker a local one) never interleaves with a step (which may hand it a lease).
    joined: Mutex<bool>,
    /// A listener left during a step: the step makes the breaker local on its way out.
    leave_asked: AtomicBool,
    watcher: Mutex<Option<(Arc<Watcher>, Arc<WakeFd>)>>,
    woken: Arc<AtomicBool>,
    seen: Mutex<Seen>,
}

impl Drop for FleetMember {
    /// A member collected without leaving leaves: its breaker is a local one again.
    fn drop(&mut self) {
        let joined = self
            .joined
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        make_local(joined, &self.native);
    }
}

fn locked<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Makes `native` a local breaker again (no watcher, no store, no lease), once.
fn make_local(joined: &mut bool, native: &Native) {
    if std::mem::replace(joined, false) {
        Member::unwatch(native);
        native.fleet_store(false, None);
    }
}

impl FleetMember {
    fn id(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    fn stepping(&self) -> bool {
        STEPPING.with(|s| s.get() == self.id())
    }

    /// The gate, waiting for it without the GIL: its other holder (`leave`) never needs
    /// the GIL while it holds it, and a step on another thread may (its listeners).
    fn gate(&self, py: Python<'_>) -> MutexGuard<'_, bool> {
        loop {
            match self.joined.try_lock() {
                Ok(guard) => return guard,
                Err(TryLockError::Poisoned(p)) => return p.into_inner(),
                Err(TryLockError::WouldBlock) => py.detach(std::thread::yield_now),
            }
        }
    }

    fn input<'a>(
        &self,
        kind: &str,
        data: &'a Bound<'_, PyAny>,
        command: Option<&Command>,
        owned: &'a mut Owned,
        line: &'a mut Vec<u8>,
    ) -> PyResult<Input<'a>> {
        Ok(match kind {
            "up" => Input::Up,
            "down" => Input::Down,
            "changed" => Input::Changed,
            "tick" => Input::Tick,
            "message" => {
                if let Ok(b) = data.cast::<PyBytes>() {
                    Input::Message(b.as_bytes())
                } else {
                    *line = bytes_of(data).ok_or_else(|| {
                        PyTypeError::new_err(format!("a message is bytes, not {}", type_name(data)))
                    })?;
                    Input::Message(line)
                }
            }
            "reply" => Input::Reply(match command {
                Some(command) => reply_of(command, data, owned),
                None => Reply::Refused,
            }),
            "refused" => Input::Reply(Reply::Refused),
            other => {
                return Err(PyValueError::new_err(format!(
                "input must be up, down, changed, tick, message, reply or refused, not {other:?}"
            )))
            }
        })
    }

    fn publish_seen(&self, protocol: &Protocol) {
        *locked(&self.seen) = Seen {
            synced: protocol.synced(),
            lease_held: protocol.lease_held(),
            wants_lease: protocol.wants_lease(),
            deadline: protocol.deadline(),
            counts: *protocol.counts(),
        };
    }
}

#[pymethods]
impl FleetMember {
    /// `FleetMember(breaker, name, member_id, reconcile_interval_ns, key=None)`: a member of
    /// fleet `name` (1-128 of `A-Z a-z 0-9 . _ - :`) with id `member_id` (16 hex digits),
    /// reading its fleet back every `reconcile_interval_ns`, signing with `key` (at least
    /// 16 bytes) or unsigned. The breaker must have `fleet_quorum`.
    #[new]
    #[pyo3(signature = (breaker, name, member_id, reconcile_interval_ns, key = None))]
    fn new(
        py: Python<'_>,
        breaker: Bound<'_, Breaker>,
        name: String,
        member_id: &Bound<'_, PyAny>,
        reconcile_interval_ns: u64,
        key: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        fleet_name(py, &name)?;
        let member = member_of(py, member_id)?;
        let reconcile = duration(
            py,
            FleetOption::ReconcileInterval,
            Some(reconcile_interval_ns),
        )?;
        let key = key_of(py, key)?;
        let native = Arc::clone(breaker.get().native());
        breaker.get().refresh(py);
        if !native.fleet_status().enabled {
            return Err(option_error(
                py,
                false,
                "breaker",
                "the breaker is not in fleet mode: create it with fleet_quorum".into(),
            ));
        }
        let config = native.config();
        let protocol = Protocol::new(Settings {
            name: name.clone(),
            member,
            reconcile_interval: reconcile,
            cooldown: config.cooldown,
            probe_timeout: config.probe_timeout,
        });
        Ok(Self {
            breaker: breaker.unbind(),
            native,
            keys: protocol.keys().clone(),
            stepper: Mutex::new(Stepper {
                protocol,
                command: None,
            }),
            key,
            name,
            member,
            joined: Mutex::new(false),
            leave_asked: AtomicBool::new(false),
            watcher: Mutex::new(None),
            woken: Arc::new(AtomicBool::new(false)),
            seen: Mutex::new(Seen::default()),
        })
    }

    /// Starts watching the breaker (its transitions, and a caller turned away for the want
    /// of the lease, wake `waker`), the breaker deciding alone until the store answers.
    /// Refused for a breaker that is a member of a fleet already.
    fn join(&self, py: Python<'_>, waker: &Bound<'_, FleetWaker>) -> PyResult<()> {
        let wake = Arc::clone(&waker.get().0);
        let watcher = {
            let (woken, wake) = (Arc::clone(&self.woken), Arc::clone(&wake));
            Watcher::new(move || {
                if !woken.swap(true, Ordering::AcqRel) {
                    wake.wake();
                }
            })
        };
        let already = || {
            option_error(
                py,
                false,
                "breaker",
                "the breaker is a member of a fleet already: leave that one first".into(),
            )
        };
        let mut joined = self.gate(py);
        if *joined {
            return Err(already());
        }
        Member::watch(&*self.native, Arc::clone(&watcher)).map_err(|_| already())?;
        self.native.fleet_store(false, None);
        *joined = true;
        *locked(&self.watcher) = Some((watcher, wake));
        Ok(())
    }

    /// Leaves: the breaker is a local one when this returns (from a listener inside this
    /// member's step, as soon as the step ends). Idempotent.
    fn leave(&self, py: Python<'_>) {
        if self.stepping() {
            self.leave_asked.store(true, Ordering::Release);
            return;
        }
        let (joined, native) = (&self.joined, &self.native);
        py.detach(|| make_local(&mut locked(joined), native));
        locked(&self.watcher).take();
    }

    /// Whether the member is still in its fleet.
    #[getter]
    fn joined(&self, py: Python<'_>) -> bool {
        if self.stepping() {
            return !self.leave_asked.load(Ordering::Acquire);
        }
        *self.gate(py)
    }

    /// Feeds the protocol what happened at `now_ns` (the adapter's monotonic clock):
    /// `up`, `down`, `changed` (the breaker woke it), `tick` (its deadline came),
    /// `message` (`data`: a line from the channel), `reply` (`data`: Redis's raw reply to
    /// the command asked for) or `refused` (Redis refused it for what a key holds); `data`
    /// is None for the others. Returns
    /// the next command, `(kind, fields, (script, keys, args))`, or None.
    fn step<'py>(
        &self,
        py: Python<'py>,
        input: String,
        now_ns: u64,
        data: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        if self.stepping() {
            return Err(PyRuntimeError::new_err(
                "a fleet member was stepped again from inside its own step",
            ));
        }
        self.breaker.get().refresh(py);
        let mut joined = self.gate(py);
        if !*joined {
            return Ok(None);
        }
        let mut stepper = match self.stepper.try_lock() {
            Ok(s) => s,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            Err(TryLockError::WouldBlock) => {
                return Err(PyRuntimeError::new_err(
                    "a fleet member was stepped from two threads at once",
                ))
            }
        };
        let (mut owned, mut line) = (Owned::default(), Vec::new());
        // Up and down start over: a command in flight is answered by nobody.
        let in_flight = match input.as_str() {
            "reply" | "refused" | "up" | "down" => stepper.command.take(),
            _ => None,
        };
        let input = self.input(&input, data, in_flight.as_ref(), &mut owned, &mut line)?;
        let signer = self.key.as_ref().map(|k| k as &dyn Signer);
        let mut link = MemberLink::new(&*self.native);
        {
            let _stepping = Stepping::enter(self.id());
            stepper.protocol.handle(input, &mut link, signer, now_ns);
        }
        if self.leave_asked.swap(false, Ordering::AcqRel) {
            make_local(&mut joined, &self.native);
            drop(joined);
            locked(&self.watcher).take();
            return Ok(None);
        }
        let command = stepper.protocol.poll();
        if command.is_some() {
            stepper.command.clone_from(&command);
        }
        if !stepper.protocol.wants_lease() {
            if let Some((watcher, wake)) = locked(&self.watcher).as_ref() {
                // An ask may have come between the protocol's look and the rearm: look again.
                if watcher.rearm()
                    && self.native.fleet_status().wants_lease
                    && !self.woken.swap(true, Ordering::AcqRel)
                {
                    wake.wake();
                }
            }
        }
        self.publish_seen(&stepper.protocol);
        drop(stepper);
        drop(joined);
        command
            .map(|c| command_tuple(py, &self.keys, &c))
            .transpose()
    }

    /// The command that gives the lease back as the member leaves, if it holds it, or None
    /// (nobody waits for its answer).
    fn leave_command<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        if self.stepping() {
            return Ok(None);
        }
        let mut stepper = locked(&self.stepper);
        let signer = self.key.as_ref().map(|k| k as &dyn Signer);
        let command = stepper
            .protocol
            .leave(&mut MemberLink::new(&*self.native), signer);
        self.publish_seen(&stepper.protocol);
        drop(stepper);
        command
            .map(|c| command_tuple(py, &self.keys, &c))
            .transpose()
    }

    /// Whether the breaker woke the member since the last call (and clears it).
    fn take_woken(&self) -> bool {
        self.woken.swap(false, Ordering::AcqRel)
    }

    /// The store answers and the member read its fleet back since: the breaker follows it.
    #[getter]
    fn synced(&self) -> bool {
        locked(&self.seen).synced
    }

    /// This member holds the store's probe lease.
    #[getter]
    fn lease_held(&self) -> bool {
        locked(&self.seen).lease_held
    }

    /// The breaker asked for the lease, when the protocol last looked.
    #[getter]
    fn wants_lease(&self) -> bool {
        locked(&self.seen).wants_lease
    }

    /// When to step with `tick` (the adapter's ns), or None.
    #[getter]
    fn deadline(&self) -> Option<u64> {
        locked(&self.seen).deadline
    }

    /// What the protocol counted: `received`, `applied`, `published`, `reconciles`,
    /// `leases`, `repairs`, `refused`, and `ignored` by reason (`garbage`, `wrong-fleet`,
    /// `unsigned`, `forged`, `stale`, `malformed-generation`).
    fn counts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = locked(&self.seen).counts;
        let out = PyDict::new(py);
        for (name, n) in [
            ("received", c.received),
            ("applied", c.applied),
            ("published", c.published),
            ("reconciles", c.reconciles),
            ("leases", c.leases),
            ("repairs", c.repairs),
            ("refused", c.refused),
        ] {
            out.set_item(name, n)?;
        }
        let ignored = PyDict::new(py);
        for why in Ignored::ALL {
            let n = c.ignored.get(usize::from(why.code())).copied().unwrap_or(0);
            ignored.set_item(why.name(), n)?;
        }
        out.set_item("ignored", ignored)?;
        Ok(out)
    }

    /// The fleet's keys and channel: `gen`, `event`, `votes`, `lease`, `channel`.
    #[getter]
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        out.set_item("gen", &self.keys.gen)?;
        out.set_item("event", &self.keys.event)?;
        out.set_item("votes", &self.keys.votes)?;
        out.set_item("lease", &self.keys.lease)?;
        out.set_item("channel", &self.keys.channel)?;
        Ok(out)
    }

    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// This member's id, as the wire writes it.
    #[getter]
    fn member_id(&self) -> String {
        wire::member_hex(self.member)
    }

    #[getter]
    fn breaker(&self, py: Python<'_>) -> Py<Breaker> {
        self.breaker.clone_ref(py)
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.breaker)
    }
}

/// A command as the adapter runs it: `(kind, fields, (script, keys, args))`, with `kind`
/// and `fields` as the protocol vectors spell them, and the Redis call: a script of
/// `fleet_scripts()` by name (run with `EVALSHA`), or `INCR`.
fn command_tuple<'py>(
    py: Python<'py>,
    keys: &Keys,
    command: &Command,
) -> PyResult<Bound<'py, PyTuple>> {
    let fields = PyDict::new(py);
    let args = PyList::empty(py);
    let (kind, script, script_keys): (&str, &str, Vec<&str>) = match command {
        Command::Read => {
            args.append(MAX_LINE)?;
            ("read", "read", vec![keys.event.as_str(), keys.gen.as_str()])
        }
        Command::Vote { entry, window_ms } => {
            fields.set_item("entry", entry)?;
            fields.set_item("window-ms", window_ms)?;
            args.append(entry)?;
            args.append((*window_ms).max(1))?;
            args.append(MAX_VOTES)?;
            args.append(MAX_LINE)?;
            ("vote", "vote", vec![keys.votes.as_str()])
        }
        Command::NextGeneration => ("next-generation", "INCR", vec![keys.gen.as_str()]),
        Command::Publish { line, expire_ms } => {
            fields.set_item("line", line)?;
            fields.set_item("expire-ms", expire_ms)?;
            args.append(&keys.channel)?;
            args.append(line)?;
            args.append(expire_ms.unwrap_or(0))?;
            args.append("PUBLISH")?;
            (
                "publish",
                "publish",
                vec![keys.event.as_str(), keys.votes.as_str()],
            )
        }
        Command::TakeLease { holder, ms } | Command::RenewLease { holder, ms } => {
            fields.set_item("holder", holder)?;
            fields.set_item("ms", ms)?;
            args.append(holder)?;
            args.append((*ms).max(1))?;
            let (kind, script) = match command {
                Command::TakeLease { .. } => ("take-lease", "take"),
                _ => ("renew-lease", "renew"),
            };
            (kind, script, vec![keys.lease.as_str()])
        }
        Command::ReleaseLease { holder, notice } => {
            fields.set_item("holder", holder)?;
            fields.set_item("notice", notice)?;
            args.append(holder)?;
            args.append(&keys.channel)?;
            args.append(notice)?;
            args.append("PUBLISH")?;
            ("release-lease", "release", vec![keys.lease.as_str()])
        }
        Command::Repair { floor } => {
            fields.set_item("floor", floor)?;
            args.append(floor)?;
            ("repair", "repair", vec![keys.gen.as_str()])
        }
    };
    let call = (script, PyTuple::new(py, script_keys)?, args.to_tuple());
    PyTuple::new(
        py,
        [
            kind.into_pyobject(py)?.into_any(),
            fields.into_any(),
            call.into_pyobject(py)?.into_any(),
        ],
    )
}

/// The bytes a [`Reply`] borrows, copied out of Redis's reply.
#[derive(Default)]
struct Owned {
    event: Option<Vec<u8>>,
    generation: Option<Vec<u8>>,
    votes: Vec<(Vec<u8>, u64)>,
}

/// An integer reply (not a bool).
fn integer(value: &Bound<'_, PyAny>) -> Option<i64> {
    if value.is_instance_of::<PyBool>() || !value.is_instance_of::<PyInt>() {
        return None;
    }
    value.extract().ok()
}

/// A bulk string or nil.
fn bulk(value: &Bound<'_, PyAny>) -> Result<Option<Vec<u8>>, ()> {
    if value.is_none() {
        return Ok(None);
    }
    bytes_of(value).map(Some).ok_or(())
}

/// A time in ms from the vote script: an integer, or a decimal (a score may come as a
/// float's text).
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn store_time(value: &Bound<'_, PyAny>) -> Option<u64> {
    if let Some(n) = integer(value) {
        return u64::try_from(n).ok();
    }
    let float = |f: f64| (f.is_finite() && f >= 0.0).then_some(f as u64);
    if let Ok(f) = value.cast::<PyFloat>() {
        return float(f.value());
    }
    let text = bytes_of(value)?;
    let text = std::str::from_utf8(&text).ok()?;
    text.parse::<u64>()
        .ok()
        .or_else(|| text.parse::<f64>().ok().and_then(float))
}

fn items<'py>(value: &Bound<'py, PyAny>) -> Option<Vec<Bound<'py, PyAny>>> {
    if let Ok(list) = value.cast::<PyList>() {
        return Some(list.iter().collect());
    }
    value.cast::<PyTuple>().ok().map(|t| t.iter().collect())
}

/// Redis's reply to `command`, read as the protocol's answer. A reply of a shape no
/// script returns is a refusal: the store is up, but its data is not the fleet's.
fn reply_of<'a>(command: &Command, value: &Bound<'_, PyAny>, owned: &'a mut Owned) -> Reply<'a> {
    shaped(command, value, owned).unwrap_or(Reply::Refused)
}

fn shaped<'a>(
    command: &Command,
    value: &Bound<'_, PyAny>,
    owned: &'a mut Owned,
) -> Option<Reply<'a>> {
    Some(match command {
        Command::Read => {
            let parts = items(value)?;
            let [event, ttl, generation] = parts.as_slice() else {
                return None;
            };
            let event_ttl_ms = integer(ttl)?;
            owned.event = bulk(event).ok()?;
            owned.generation = bulk(generation).ok()?;
            Reply::Read {
                event: owned.event.as_deref(),
                event_ttl_ms,
                generation: owned.generation.as_deref(),
            }
        }
        Command::Vote { .. } => {
            let parts = items(value)?;
            let now_ms = store_time(parts.first()?)?;
            owned.votes = parts
                .get(1..)
                .unwrap_or_default()
                .chunks_exact(2)
                .filter_map(|pair| match pair {
                    // Anything else in the reply is not a vote.
                    [entry, at] => Some((bulk(entry).ok()??, store_time(at)?)),
                    _ => None,
                })
                .collect();
            Reply::Voted {
                now_ms,
                votes: owned
                    .votes
                    .iter()
                    .map(|(e, at)| (e.as_slice(), *at))
                    .collect(),
            }
        }
        Command::NextGeneration => Reply::Generation(integer(value)?),
        Command::Publish { .. } => Reply::Published,
        Command::TakeLease { .. } => {
            let parts = items(value)?;
            let [held, ttl] = parts.as_slice() else {
                return None;
            };
            Reply::Lease {
                held: integer(held)? == 1,
                ttl_ms: integer(ttl)?,
            }
        }
        Command::RenewLease { .. } => Reply::Renewed(integer(value)? == 1),
        Command::ReleaseLease { .. } => Reply::Released,
        Command::Repair { .. } => Reply::Repaired,
    })
}

/// The breaker's fleet operations, for `tripgate.CircuitBreaker`'s methods of the same
/// names: the core's rules, as every host exposes them (the shared vectors 45-54).
pub mod ops {
    use super::*;

    /// `fleet_status()`.
    pub fn status<'py>(py: Python<'py>, native: &Native) -> PyResult<Bound<'py, PyDict>> {
        let s = native.fleet_status();
        let out = PyDict::new(py);
        for (name, flag) in [
            ("enabled", s.enabled),
            ("degraded", s.degraded),
            ("lease_held", s.lease_held),
            ("wants_lease", s.wants_lease),
        ] {
            out.set_item(name, flag)?;
        }
        out.set_item("generation", s.generation)?;
        out.set_item("stale_events", s.stale_events)?;
        Ok(out)
    }

    /// `_fleet_apply(generation, kind, remaining_ns=0)`: what applying the event did and
    /// the transitions it caused.
    pub fn apply(
        py: Python<'_>,
        native: &Native,
        generation: u64,
        kind: &str,
        remaining_ns: u64,
    ) -> PyResult<(&'static str, tripgate::Transitions)> {
        let event = FleetEvent {
            generation,
            kind: kind_of(py, kind)?,
            remaining: remaining_ns,
        };
        let (applied, transitions) = native.fleet_apply(event);
        Ok((applied.name(), transitions))
    }

    /// `_fleet_votes([(member, age_ns), ...])`: whether the votes reach the quorum.
    pub fn votes(native: &Native, votes: &Bound<'_, PyAny>) -> PyResult<bool> {
        let mut out = Vec::new();
        for vote in votes.try_iter()? {
            let (member, age): (u64, u64) = vote?.extract().map_err(|_| {
                PyTypeError::new_err("votes must be (member id: int, age in ns: int) pairs")
            })?;
            out.push((member, age));
        }
        Ok(native.fleet_votes(&out))
    }

    /// `_fleet_take_announcement()`: `(kind, remaining_ns)` or None.
    pub fn take_announcement(native: &Native) -> Option<(&'static str, u64)> {
        native
            .fleet_take_announcement()
            .map(|a| (a.kind.name(), a.remaining))
    }
}
