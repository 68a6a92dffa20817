//! The deadlines of timed async calls (`guard(timeout=...).call_async`), what
//! `tripgate._breaker._run_timed` starts and ends around its await.
//!
//! A call with a budget does not get a timer of its own. The deadlines of one event
//! loop's calls with one budget fall due in the order they were set, so one queue and one
//! timer handle serve them all: starting a call appends to its queue, ending it marks its
//! entry and drops the ended ones from the front, and the timer wakes at the front's
//! deadline (about once a budget while calls keep coming) to cancel the tasks whose
//! deadline has passed, as `asyncio.timeout` would. Nothing here decides anything about
//! the breaker: the caller records `timeout` when `end` says the deadline passed.
//!
//! The queues are found through a module-wide list, so they hold their loop and their
//! calls' tasks weakly: a loop closed and dropped with timed calls still out takes its
//! tasks with it (each call's coroutine is closed and gives its permit back), as it would
//! with `asyncio.timeout`, whose timer the loop alone holds.

use std::collections::VecDeque;
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

/// Queues kept at most (per event loop and budget); past it, idle ones are forgotten.
const MAX_QUEUES: usize = 64;

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

struct Queue {
    entries: VecDeque<Py<Deadline>>,
    /// Whether a timer is set (for the front's deadline), and for when. Its handle is not
    /// kept: it holds the loop, and nothing cancels it (it finds the queue empty).
    armed: bool,
    at: f64,
}

/// The deadlines of one event loop's calls with one budget.
#[pyclass(frozen, module = "tripgate._native", name = "DeadlineQueue")]
pub struct DeadlineQueue {
    event_loop: Ref,
    budget: f64,
    clock: LoopClock,
    queue: Mutex<Queue>,
}

impl DeadlineQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn arm(slf: &Bound<'_, Self>, at: f64) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let Some(event_loop) = this.event_loop.get(py) else {
            // The loop is gone, and its calls with it.
            return Ok(());
        };
        let handle = event_loop.call_method1(
            intern!(py, "call_at"),
            (at, slf.getattr(intern!(py, "_expire"))?),
        )?;
        drop(handle);
        let mut queue = this.lock();
        queue.armed = true;
        queue.at = at;
        Ok(())
    }
}

#[pymethods]
impl DeadlineQueue {
    /// The timer's callback: cancels the tasks whose deadline has passed and sets the
    /// timer for the next one.
    fn _expire(slf: &Bound<'_, Self>) -> PyResult<()> {
        let py = slf.py();
        let this = slf.get();
        let Some(event_loop) = this.event_loop.get(py) else {
            return Ok(());
        };
        let now = this.clock.now(&event_loop)?;
        let mut due = Vec::new();
        let mut next = None;
        let mut popped = Vec::new();
        {
            let mut queue = this.lock();
            queue.armed = false;
            // asyncio runs a timer up to its clock's resolution early: the deadline it
            // was set for counts as passed.
            let now = now.max(queue.at);
            while let Some(front) = queue.entries.front() {
                let entry = front.get();
                if entry.state.load(Ordering::Relaxed) == PENDING {
                    if entry.deadline > now {
                        next = Some(entry.deadline);
                        break;
                    }
                    entry.state.store(EXPIRED, Ordering::Relaxed);
                    if let Some(task) = entry.task(py) {
                        due.push(task);
                    }
                }
                popped.extend(queue.entries.pop_front());
            }
        }
        // Outside the lock: cancelling (and letting go of an entry) runs Python code.
        drop(popped);
        for task in due {
            task.call_method0(intern!(py, "cancel"))?;
        }
        if let Some(at) = next {
            Self::arm(slf, at)?;
        }
        Ok(())
    }
}

/// One timed call's deadline, from `start_deadline(budget)`; `end()` when the call is
/// over.
#[pyclass(frozen, module = "tripgate._native", name = "Deadline")]
pub struct Deadline {
    queue: Py<DeadlineQueue>,
    deadline: f64,
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
                while queue
                    .entries
                    .front()
                    .is_some_and(|e| e.get().state.load(Ordering::Relaxed) == ENDED)
                {
                    queue.entries.pop_front();
                }
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

/// The queue of `event_loop`'s calls with `budget`.
fn queue_for<'py>(
    py: Python<'py>,
    event_loop: &Bound<'py, PyAny>,
    budget: f64,
) -> PyResult<Bound<'py, DeadlineQueue>> {
    // No Python code runs while the list is locked (it could wait for this thread's GIL).
    let queues = || QUEUES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(queue) = queues().iter().find(|q| {
        let q = q.get();
        q.budget.to_bits() == budget.to_bits()
            && q.event_loop.get(py).is_some_and(|l| l.is(event_loop))
    }) {
        return Ok(queue.bind(py).clone());
    }
    let queue = Bound::new(
        py,
        DeadlineQueue {
            event_loop: Ref::to(event_loop),
            budget,
            clock: LoopClock::of(py, event_loop)?,
            queue: Mutex::new(Queue {
                entries: VecDeque::new(),
                armed: false,
                at: 0.0,
            }),
        },
    )?;
    let forgotten: Vec<Py<DeadlineQueue>>;
    {
        let mut queues = queues();
        // The queues of loops that are gone go; past MAX_QUEUES (budgets that vary from
        // call to call, loops come and gone), the idle ones too (a timer still set for
        // one finds it empty and stops).
        let crowded = queues.len() >= MAX_QUEUES;
        let (gone, kept) = std::mem::take(&mut *queues).into_iter().partition(|q| {
            let q = q.get();
            q.event_loop.get(py).is_none() || (crowded && q.lock().entries.is_empty())
        });
        *queues = kept;
        forgotten = gone;
        queues.push(queue.clone().unbind());
    }
    // Outside the lock: letting go of a queue may run Python code.
    drop(forgotten);
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
    let queue = queue_for(py, &event_loop, budget)?;
    let deadline = queue.get().clock.now(&event_loop)? + budget;
    let entry = Bound::new(
        py,
        Deadline {
            queue: queue.clone().unbind(),
            deadline,
            task: Mutex::new(Some(Ref::to(&task))),
            cancelling,
            state: AtomicU8::new(PENDING),
        },
    )?;
    let arm = {
        let mut q = queue.get().lock();
        q.entries.push_back(entry.clone().unbind());
        !q.armed
    };
    if arm {
        DeadlineQueue::arm(&queue, deadline)?;
    }
    Ok(entry)
}
