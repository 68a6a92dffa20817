//! The deadlines of timed async calls (`guard(timeout=...).call_async`), what
//! `tripgate._breaker._run_timed` starts and ends around its await.
//!
//! A call with a budget does not get a timer of its own. The deadlines of one event
//! loop's calls, whatever their budgets (a request's deadline passed down gives every
//! call its own), wait in one heap, earliest first, and one timer handle serves them all:
//! it is set for the earliest deadline, set anew (the one before cancelled) only when a
//! call comes with a deadline ahead of it, and when it runs it cancels the tasks whose
//! deadline has passed, as `asyncio.timeout` would, and sets itself for the next. A call
//! that ends marks its entry, which leaves the heap when it reaches the front, or with
//! every other ended one once they are most of it. Nothing here decides anything about
//! the breaker: the caller records `timeout` when `end` says the deadline passed.
//!
//! The queues are found through a module-wide list, one per loop, so they hold their
//! loop, their timer and their calls' tasks weakly: a loop closed and dropped with timed
//! calls still out takes its tasks with it (each call's coroutine is closed and gives its
//! permit back), as it would with `asyncio.timeout`, whose timer the loop alone holds.

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use pyo3::exceptions::PyRuntimeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyWeakrefMethods, PyWeakrefReference};

const PENDING: u8 = 0;
const ENDED: u8 = 1;
const EXPIRED: u8 = 2;

/// Where a queue reads its loop's time: the loop's `time()` is `time.monotonic()` for
/// every loop of `asyncio` itself, read here from the same monotonic clock through
/// `Instant` (set against one reading of `time.monotonic()`), without a Python call; any
/// other loop (a test's fake one, uvloop) is asked.
enum LoopClock {
    Monotonic { seconds: f64, at: Instant },
    Asked,
}

impl LoopClock {
    fn of(py: Python<'_>, event_loop: &Bound<'_, PyAny>) -> PyResult<Self> {
        static BASE_TIME: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        static MONOTONIC: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        let base = BASE_TIME.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
            Ok(py
                .import("asyncio.base_events")?
                .getattr("BaseEventLoop")?
                .getattr("time")?
                .unbind())
        })?;
        if event_loop
            .get_type()
            .getattr(intern!(py, "time"))?
            .is(base.bind(py))
        {
            let monotonic = MONOTONIC.import(py, "time", "monotonic")?;
            let at = Instant::now();
            let seconds: f64 = monotonic.call0()?.extract()?;
            return Ok(Self::Monotonic { seconds, at });
        }
        Ok(Self::Asked)
    }

    /// The loop's time; Python code may run (`event_loop.time()`), so never call it with
    /// a queue locked.
    fn now(&self, event_loop: &Bound<'_, PyAny>) -> PyResult<f64> {
        match self {
            Self::Monotonic { seconds, at } => Ok(seconds + at.elapsed().as_secs_f64()),
            Self::Asked => event_loop
                .call_method0(intern!(event_loop.py(), "time"))?
                .extract(),
        }
    }
}

/// A weak reference where the object takes one (every loop and task of `asyncio` does),
/// else a strong one.
enum Ref {
    Weak(Py<PyWeakrefReference>),
    Strong(Py<PyAny>),
}

impl Ref {
    fn to(object: &Bound<'_, PyAny>) -> Self {
        match PyWeakrefReference::new(object) {
            Ok(weak) => Self::Weak(weak.unbind()),
            Err(_) => Self::Strong(object.clone().unbind()),
        }
    }

    fn get<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
        match self {
            Self::Weak(weak) => weak.bind(py).upgrade(),
            Self::Strong(object) => Some(object.bind(py).clone()),
        }
    }
}

/// A deadline in its loop's queue: due at `at`, in the order set among equal ones.
struct Due {
    at: f64,
    seq: u64,
    entry: Py<Deadline>,
}

impl Due {
    fn state(&self) -> u8 {
        self.entry.get().state.load(Ordering::Relaxed)
    }
}

impl PartialEq for Due {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}

impl Eq for Due {}

impl PartialOrd for Due {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

/// Reversed, so that `BinaryHeap` (a max-heap) gives the earliest deadline first.
impl Ord for Due {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        other
            .at
            .total_cmp(&self.at)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// Ended calls the heap may hold before they are swept out at once (below it, they go as
/// they reach the front).
const SWEEP_AT: usize = 64;

struct Queue {
    /// Every call out, earliest deadline first, and ended ones not yet dropped.
    heap: BinaryHeap<Due>,
    seq: u64,
    /// Entries of `heap` that have ended.
    ended: usize,
    /// The timer set for the earliest deadline: when, and its handle (weakly where the
    /// handle takes a weak reference: the loop holds it until it runs or is cancelled).
    timer: Option<(f64, Ref)>,
}

impl Queue {
    /// Drops ended entries from the front, and every ended one once they are most of the
    /// heap, so ended calls hold no memory for long whatever their budgets.
    fn drop_ended(&mut self) {
        while self.heap.peek().is_some_and(|d| d.state() == ENDED) {
            self.heap.pop();
            self.ended = self.ended.saturating_sub(1);
        }
        if self.ended >= SWEEP_AT && self.ended.saturating_mul(2) > self.heap.len() {
            self.heap.retain(|d| d.state() != ENDED);
            self.ended = 0;
        }
    }
}

/// The deadlines of one event loop's timed calls, whatever their budgets.
#[pyclass(frozen, module = "tripgate._native", name = "DeadlineQueue")]
pub struct DeadlineQueue {
    event_loop: Ref,
    clock: LoopClock,
    queue: Mutex<Queue>,
}

impl DeadlineQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Sets the timer for `at`, cancelling the one set for later (`replaced`). Call with
    /// the queue unlocked: the loop's `call_at` and `cancel` are Python code.
    fn arm(slf: &Bound<'_, Self>, at: f64, replaced: Option<Ref>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        if let Some(handle) = replaced.and_then(|r| r.get(py)) {
            handle.call_method0(intern!(py, "cancel"))?;
        }
        let Some(event_loop) = this.event_loop.get(py) else {
            // The loop is gone, and its calls with it.
            return Ok(());
        };
        let handle = event_loop.call_method1(
            intern!(py, "call_at"),
            (at, slf.getattr(intern!(py, "_expire"))?, at),
        )?;
        this.lock().timer = Some((at, Ref::to(&handle)));
        Ok(())
    }

    /// Lets go of every entry (the loop is gone): outside any lock, since a task let go
    /// of may run Python code.
    fn forget(&self) {
        let heap = std::mem::take(&mut self.lock().heap);
        drop(heap);
    }
}

#[pymethods]
impl DeadlineQueue {
    /// The timer's callback (`at`: the deadline it was set for): cancels the tasks whose
    /// deadline has passed and sets the timer for the next one. A timer replaced by an
    /// earlier one, where the loop's handle could not be cancelled, does nothing.
    fn _expire(slf: &Bound<'_, Self>, at: f64) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let Some(event_loop) = this.event_loop.get(py) else {
            return Ok(());
        };
        let now = this.clock.now(&event_loop)?;
        let mut due = Vec::new();
        let mut popped = Vec::new();
        let next = {
            let mut queue = this.lock();
            if queue
                .timer
                .as_ref()
                .is_none_or(|(set, _)| set.to_bits() != at.to_bits())
            {
                return Ok(());
            }
            queue.timer = None;
            // asyncio runs a timer up to its clock's resolution early: the deadline it
            // was set for counts as passed.
            let now = now.max(at);
            loop {
                let Some(front) = queue.heap.peek() else {
                    break None;
                };
                match front.state() {
                    PENDING if front.at > now => break Some(front.at),
                    PENDING => {
                        let entry = front.entry.get();
                        entry.state.store(EXPIRED, Ordering::Relaxed);
                        if let Some(task) = entry.task(py) {
                            due.push(task);
                        }
                    }
                    ENDED => queue.ended = queue.ended.saturating_sub(1),
                    _ => {}
                }
                popped.extend(queue.heap.pop());
            }
        };
        // Outside the lock: cancelling (and letting go of an entry) runs Python code.
        drop(popped);
        for task in due {
            task.call_method0(intern!(py, "cancel"))?;
        }
        if let Some(at) = next {
            Self::arm(slf, at, None)?;
        }
        Ok(())
    }
}

/// One timed call's deadline, from `start_deadline(budget)`; `end()` when the call is
/// over.
#[pyclass(frozen, module = "tripgate._native", name = "Deadline")]
pub struct Deadline {
    queue: Py<DeadlineQueue>,
    task: Mutex<Option<Ref>>,
    /// The task's cancel requests when the call started (3.11+).
    cancelling: i64,
    state: AtomicU8,
}

impl Deadline {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Ref>> {
        self.task.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn task<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyAny>> {
        self.slot().as_ref().and_then(|t| t.get(py))
    }
}

#[pymethods]
impl Deadline {
    /// The call is over: 0 when it ended before its deadline; 1 when the deadline passed
    /// first and its task was cancelled for it (that cancel request withdrawn, as
    /// `asyncio.timeout` withdraws its own); 2 when the deadline passed but the task was
    /// also cancelled by someone else since the call started (a cancellation that is not
    /// the deadline's to turn into a timeout).
    fn end(&self, py: Python<'_>) -> PyResult<u8> {
        let task = self.slot().take();
        match self.state.swap(ENDED, Ordering::Relaxed) {
            PENDING => {
                let queue = self.queue.get();
                let mut queue = queue.lock();
                queue.ended = queue.ended.saturating_add(1);
                // Ended entries hold no task any more: dropping them runs no Python code.
                queue.drop_ended();
                drop(queue);
                drop(task);
                Ok(0)
            }
            EXPIRED => {
                let Some(task) = task.and_then(|t| t.get(py)) else {
                    return Ok(1);
                };
                if !has_cancelling(py) {
                    return Ok(1);
                }
                let left: i64 = task.call_method0(intern!(py, "uncancel"))?.extract()?;
                Ok(if left <= self.cancelling { 1 } else { 2 })
            }
            _ => Err(PyRuntimeError::new_err("this deadline has ended already")),
        }
    }
}

/// Whether tasks count their cancel requests (`cancelling`, `uncancel`: 3.11+).
fn has_cancelling(py: Python<'_>) -> bool {
    // Read once: PyO3 formats the version string at every reading.
    static AT_LEAST_3_11: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *AT_LEAST_3_11.get_or_init(|| py.version_info() >= (3, 11))
}

static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static CURRENT_TASK: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
/// `asyncio.tasks._current_tasks`, the dict `asyncio.current_task` reads, before 3.12
/// (where `current_task` is a Python function: the dict is read here directly).
static CURRENT_TASKS: PyOnceLock<Option<Py<PyDict>>> = PyOnceLock::new();

static QUEUES: Mutex<Vec<Py<DeadlineQueue>>> = Mutex::new(Vec::new());

/// The running task of the running loop, or a `RuntimeError`.
fn running_task<'py>(py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let event_loop = GET_RUNNING_LOOP
        .import(py, "asyncio", "get_running_loop")?
        .call0()?;
    let tasks = CURRENT_TASKS.get_or_init(py, || {
        if py.version_info() >= (3, 12) {
            return None;
        }
        py.import("asyncio.tasks")
            .and_then(|m| m.getattr("_current_tasks"))
            .ok()
            .and_then(|d| d.cast_into::<PyDict>().ok())
            .map(Bound::unbind)
    });
    let task = match tasks {
        Some(tasks) => tasks.bind(py).get_item(&event_loop)?,
        None => Some(
            CURRENT_TASK
                .import(py, "asyncio", "current_task")?
                .call1((&event_loop,))?,
        ),
    };
    match task {
        Some(task) if !task.is_none() => Ok((event_loop, task)),
        _ => Err(PyRuntimeError::new_err(
            "a call with a timeout is awaited inside an asyncio task",
        )),
    }
}

/// The queue of `event_loop`'s timed calls (made on its first).
fn queue_for<'py>(
    py: Python<'py>,
    event_loop: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, DeadlineQueue>> {
    // No Python code runs while the list is locked (it could wait for this thread's GIL).
    let queues = || QUEUES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(queue) = queues()
        .iter()
        .find(|q| q.get().event_loop.get(py).is_some_and(|l| l.is(event_loop)))
    {
        return Ok(queue.bind(py).clone());
    }
    let queue = Bound::new(
        py,
        DeadlineQueue {
            event_loop: Ref::to(event_loop),
            clock: LoopClock::of(py, event_loop)?,
            queue: Mutex::new(Queue {
                heap: BinaryHeap::new(),
                seq: 0,
                ended: 0,
                timer: None,
            }),
        },
    )?;
    let gone: Vec<Py<DeadlineQueue>>;
    {
        let mut queues = queues();
        // The queues of loops that are gone go.
        let (dead, kept) = std::mem::take(&mut *queues)
            .into_iter()
            .partition(|q| q.get().event_loop.get(py).is_none());
        *queues = kept;
        gone = dead;
        queues.push(queue.clone().unbind());
    }
    // Outside the lock: letting go of a queue and its calls may run Python code. Its
    // entries hold it too, so they are let go of first.
    for queue in &gone {
        queue.get().forget();
    }
    drop(gone);
    Ok(queue)
}

/// Starts the deadline of a call with `budget` seconds awaited by the running task (its
/// loop's time plus the budget); a `RuntimeError` outside a task.
#[pyfunction]
pub fn start_deadline(py: Python<'_>, budget: f64) -> PyResult<Bound<'_, Deadline>> {
    let (event_loop, task) = running_task(py)?;
    let cancelling: i64 = if has_cancelling(py) {
        task.call_method0(intern!(py, "cancelling"))?.extract()?
    } else {
        0
    };
    let queue = queue_for(py, &event_loop)?;
    let at = queue.get().clock.now(&event_loop)? + budget;
    let entry = Bound::new(
        py,
        Deadline {
            queue: queue.clone().unbind(),
            task: Mutex::new(Some(Ref::to(&task))),
            cancelling,
            state: AtomicU8::new(PENDING),
        },
    )?;
    // The timer is set anew only for a deadline ahead of the one it is set for.
    let replaced = {
        let mut q = queue.get().lock();
        let seq = q.seq;
        q.seq = seq.wrapping_add(1);
        q.heap.push(Due {
            at,
            seq,
            entry: entry.clone().unbind(),
        });
        match &q.timer {
            Some((set, _)) if *set <= at => None,
            _ => Some(q.timer.take().map(|(_, handle)| handle)),
        }
    };
    if let Some(replaced) = replaced {
        DeadlineQueue::arm(&queue, at, replaced)?;
    }
    Ok(entry)
}
