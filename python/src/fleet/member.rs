//! `FleetMember`: one breaker's membership of one fleet, the core's protocol stepped by
//! the store's thread.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::gc::PyVisit;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyTuple};
use pyo3::PyTraverseError;

use tripgate_core::fleet::options::FleetOption;
use tripgate_core::fleet::protocol::{Command, Counts, Input, Protocol, Reply, Settings};
use tripgate_core::fleet::wire::{self, Ignored, Keys, Signer};
use tripgate_core::fleet::SharedKey;
use tripgate_core::Nanos;
use tripgate_host::fleet::{Member, MemberLink};
use tripgate_host::Watcher;

use crate::breaker::Breaker;
use crate::clock::AnyClock;
use crate::options::{option_error, type_name};

type Native = tripgate::Breaker<AnyClock>;

use super::reply::{command_tuple, reply_of, Owned};
use super::waker::{FleetWaker, WakeFd};
use super::wire::{bytes_of, duration, fleet_name, key_of, member_of, random_session, session_of};

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
    key: Option<SharedKey>,
    keys: Keys,
    /// On a Redis Cluster: its scripts publish with `SPUBLISH`.
    sharded: bool,
    name: String,
    member: u64,
    /// Its own channel (its holder's), where a release wakes it alone.
    own_channel: String,
    /// Who holds the lease when this member does (its id and session).
    holder: String,
    /// In the fleet: held while the protocol steps, so that leaving (which makes the
    /// breaker a local one) never interleaves with a step (which may hand it a lease).
    joined: Mutex<bool>,
    /// A listener left during a step: the step makes the breaker local on its way out.
    leave_asked: AtomicBool,
    /// The parent's member, in a child just forked: never stepped again (see `forked`).
    forked: AtomicBool,
    watcher: Mutex<Option<(Arc<Watcher>, Arc<WakeFd>)>>,
    woken: Arc<AtomicBool>,
    seen: Mutex<Seen>,
}

impl Drop for FleetMember {
    /// A member collected without leaving leaves: its breaker is a local one again.
    fn drop(&mut self) {
        if *self.forked.get_mut() {
            // The breaker is another member's now.
            return;
        }
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
    /// `FleetMember(breaker, name, member_id, reconcile_interval_ns, key=None, *,
    /// sharded=False, session=None)`: a member of fleet `name` (1-128 of
    /// `A-Z a-z 0-9 . _ - :`) with id `member_id` (16 hex digits), reading its fleet back
    /// every `reconcile_interval_ns`, signing with `key` (at least 16 bytes) or unsigned.
    /// The breaker must have `fleet_quorum`. `session` (16 hex digits) is random unless
    /// given: with the member id it holds the probe lease, so two processes that share a
    /// member name never share a lease.
    #[new]
    #[pyo3(signature = (breaker, name, member_id, reconcile_interval_ns, key = None, *, sharded = false, session = None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        breaker: Bound<'_, Breaker>,
        name: String,
        member_id: &Bound<'_, PyAny>,
        reconcile_interval_ns: u64,
        key: Option<&Bound<'_, PyAny>>,
        sharded: bool,
        session: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        fleet_name(py, &name)?;
        let member = member_of(py, member_id)?;
        let session = match session {
            Some(session) => session_of(py, session)?,
            None => random_session()?,
        };
        let reconcile = duration(
            py,
            FleetOption::ReconcileInterval,
            Some(reconcile_interval_ns),
        )?;
        let key = key_of(py, key)?;
        let native = Arc::clone(breaker.get().native()?);
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
            session,
            reconcile_interval: reconcile,
            cooldown: config.cooldown,
            probe_timeout: config.probe_timeout,
        });
        Ok(Self {
            breaker: breaker.unbind(),
            native,
            keys: protocol.keys().clone(),
            own_channel: protocol.wake_channel(),
            holder: protocol.holder().into(),
            stepper: Mutex::new(Stepper {
                protocol,
                command: None,
            }),
            key,
            sharded,
            name,
            member,
            joined: Mutex::new(false),
            leave_asked: AtomicBool::new(false),
            forked: AtomicBool::new(false),
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
        if self.forked.load(Ordering::Acquire) {
            return;
        }
        if self.stepping() {
            self.leave_asked.store(true, Ordering::Release);
            return;
        }
        let (joined, native) = (&self.joined, &self.native);
        py.detach(|| make_local(&mut locked(joined), native));
        locked(&self.watcher).take();
    }

    /// In a child just forked, where this member's store thread is not: lets the
    /// breaker go (no watcher, no lease, deciding alone) without taking any of the
    /// member's locks, which a thread of the parent may have held at the fork. The
    /// member is never stepped again, and dropping it leaves the breaker alone, so a
    /// member made anew in the child can join it.
    fn forked(&self) {
        self.forked.store(true, Ordering::Release);
        Member::unwatch(&*self.native);
        self.native.fleet_store(false, None);
    }

    /// Whether the member is still in its fleet.
    #[getter]
    fn joined(&self, py: Python<'_>) -> bool {
        if self.forked.load(Ordering::Acquire) {
            return false;
        }
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
        if self.forked.load(Ordering::Acquire) {
            return Ok(None);
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
        // A reconfigured breaker's cooldown (the votes' window) and probe timeout (the
        // lease's length) hold from this step on, as tripgate-redis's driver does: the
        // member follows `reconfigure` without leaving its fleet.
        stepper.protocol.retune(
            Member::cooldown(&*self.native),
            Member::probe_timeout(&*self.native),
        );
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
            .map(|c| command_tuple(py, &self.keys, self.sharded, &c))
            .transpose()
    }

    /// The command that gives the lease back as the member leaves, if it holds it, or None
    /// (nobody waits for its answer).
    fn leave_command<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyTuple>>> {
        if self.stepping() || self.forked.load(Ordering::Acquire) {
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
            .map(|c| command_tuple(py, &self.keys, self.sharded, &c))
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

    /// The fleet's keys and channel, the lease's waiters, the prefix of members' own
    /// channels and this member's own: `gen`, `event`, `votes`, `lease`, `channel`,
    /// `waiters`, `wake`, `own_channel`.
    #[getter]
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        out.set_item("gen", &self.keys.gen)?;
        out.set_item("event", &self.keys.event)?;
        out.set_item("votes", &self.keys.votes)?;
        out.set_item("lease", &self.keys.lease)?;
        out.set_item("channel", &self.keys.channel)?;
        out.set_item("waiters", &self.keys.waiters)?;
        out.set_item("wake", &self.keys.wake)?;
        out.set_item("own_channel", &self.own_channel)?;
        Ok(out)
    }

    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The store's error reply to the command in flight, read by the core
    /// (`fleet::store::fault`): `(kind, explanation)`, kind `bad-data` (step `refused`),
    /// `denied` or `unavailable` (the store is down: the explanation is its last error).
    fn fault(&self, message: &str) -> (&'static str, String) {
        let stepper = self.stepper.lock().unwrap_or_else(PoisonError::into_inner);
        let fault = stepper.protocol.fault(message);
        (fault.kind.name(), fault.explanation)
    }

    /// This member's id, as the wire writes it.
    #[getter]
    fn member_id(&self) -> String {
        wire::member_hex(self.member)
    }

    /// Who holds the lease when this member does: its id and session, 32 hex digits.
    #[getter]
    fn holder(&self) -> &str {
        &self.holder
    }

    #[getter]
    fn breaker(&self, py: Python<'_>) -> Py<Breaker> {
        self.breaker.clone_ref(py)
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.breaker)
    }
}
