//! The clocks a Python breaker reads: the process's time-stamp counter (the default), a
//! `FakeClock` for tests (the native one, shared), or any Python callable that returns
//! monotonic seconds.
//!
//! A callable is never called inside the breaker's lock: the breaker reads a value the
//! callable left in an atomic, and every operation refreshes that value first, with the
//! GIL held and no lock taken. A Python call inside the lock could give up the GIL to a
//! thread that then spins on the lock.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt};

use tripgate::{Clock, QuantaClock};

/// Largest reading the core observes (SPEC.md § Time: spans below 2^63 ns).
const MAX_READING: f64 = 9_223_372_036_854_775_807.0;

/// The process's counter clock: one origin for every breaker of the process, no thread
/// (a ticker thread would not survive `fork`, and Python servers fork after import).
fn process_clock() -> QuantaClock {
    static CLOCK: OnceLock<QuantaClock> = OnceLock::new();
    CLOCK.get_or_init(QuantaClock::new).clone()
}

/// What a breaker reads.
#[derive(Clone)]
pub enum AnyClock {
    /// The time-stamp counter (`quanta`), nanoseconds since the first breaker.
    Counter(QuantaClock),
    /// A native fake clock, shared with Python's `FakeClock`.
    Fake(Arc<tripgate::FakeClock>),
    /// The last reading of a Python callable.
    Callable(Arc<CallableClock>),
}

impl Clock for AnyClock {
    #[inline(always)]
    fn now(&self) -> u64 {
        match self {
            Self::Counter(clock) => clock.now(),
            Self::Fake(clock) => clock.now(),
            Self::Callable(clock) => clock.reading.load(Ordering::Relaxed),
        }
    }
}

impl AnyClock {
    /// The default clock.
    pub fn counter() -> Self {
        Self::Counter(process_clock())
    }

    /// Reads a callable clock into its atomic (no-op for the others). Call with no lock
    /// held.
    #[inline(always)]
    pub fn refresh(&self, py: Python<'_>) {
        if let Self::Callable(clock) = self {
            clock.refresh(py);
        }
    }

    /// Nanoseconds to the breaker's unit of `at` values given to Python (seconds).
    pub fn seconds(ns: u64) -> f64 {
        #[allow(clippy::cast_precision_loss)]
        let s = ns as f64 / 1e9;
        s
    }

    /// Waits `ns` on this clock: a retry's wait between attempts. A `FakeClock` moves
    /// forward instead, so a test waits no wall time; the others sleep in `time.sleep`
    /// (looked up at each wait), which lets other threads run and raises what a signal
    /// handler raises (Ctrl-C's `KeyboardInterrupt`).
    pub fn wait(&self, py: Python<'_>, ns: u64) -> PyResult<()> {
        match self {
            Self::Fake(clock) => {
                clock.advance(ns);
                Ok(())
            }
            Self::Counter(_) | Self::Callable(_) => py
                .import(pyo3::intern!(py, "time"))?
                .call_method1(pyo3::intern!(py, "sleep"), (Self::seconds(ns),))
                .map(drop),
        }
    }

    /// Whatever Python objects the clock holds (for the garbage collector).
    pub fn python_object(&self) -> Option<&Py<PyAny>> {
        match self {
            Self::Callable(clock) => Some(&clock.func),
            _ => None,
        }
    }

    /// Whether two clocks are one: the same `FakeClock`, or the same callable.
    pub fn same(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Counter(_), Self::Counter(_)) => true,
            (Self::Fake(a), Self::Fake(b)) => Arc::ptr_eq(a, b),
            (Self::Callable(a), Self::Callable(b)) => a.func.as_ptr() == b.func.as_ptr(),
            _ => false,
        }
    }

    /// Readings the callable gave that were not readings.
    pub fn errors(&self) -> u64 {
        match self {
            Self::Callable(clock) => clock.errors.load(Ordering::Relaxed),
            _ => 0,
        }
    }
}

/// A Python callable returning monotonic seconds (`time.monotonic`).
pub struct CallableClock {
    func: Py<PyAny>,
    reading: AtomicU64,
    errors: AtomicU64,
}

impl CallableClock {
    /// Reads the callable once, so a clock that is broken from the start is refused.
    pub fn new(py: Python<'_>, func: Py<PyAny>) -> PyResult<Self> {
        let first = func.bind(py).call0().map_err(|e| {
            let err = PyTypeError::new_err(format!("clock raised when first read: {e}"));
            err.set_cause(py, Some(e));
            err
        })?;
        let ns = seconds_reading(&first).map_err(|why| {
            PyValueError::new_err(format!(
                "clock must return monotonic seconds (an int or float in [0, 2**63 ns)), not {why}"
            ))
        })?;
        Ok(Self {
            func,
            reading: AtomicU64::new(ns),
            errors: AtomicU64::new(0),
        })
    }

    /// A reading that is not one (an exception, NaN, a negative, a string) is not
    /// observed: the last good reading stands, as the core treats a clock that steps back.
    fn refresh(&self, py: Python<'_>) {
        let got = self.func.bind(py).call0();
        match got
            .map_err(|e| e.to_string())
            .and_then(|v| seconds_reading(&v))
        {
            Ok(ns) => self.reading.store(ns, Ordering::Relaxed),
            Err(why) => {
                self.errors.fetch_add(1, Ordering::Relaxed);
                crate::report::warn(
                    py,
                    &format!("tripgate: the clock gave no reading ({why}); the last one stands"),
                );
            }
        }
    }
}

/// Seconds (an int or a float, not a bool) as nanoseconds, or why not.
fn seconds_reading(value: &Bound<'_, PyAny>) -> Result<u64, String> {
    if value.is_instance_of::<PyBool>() {
        return Err("a bool".into());
    }
    let seconds: f64 = if value.is_instance_of::<PyInt>() || value.is_instance_of::<PyFloat>() {
        value.extract::<f64>().map_err(|e| e.to_string())?
    } else {
        let name = value
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "?".into());
        return Err(format!("a {name}"));
    };
    let ns = (seconds * 1e9).round();
    if !(0.0..MAX_READING).contains(&ns) {
        return Err(format!("{seconds}"));
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(ns as u64)
}

/// A clock that only moves when told to, for tests: `FakeClock(start=0.0)`, in seconds;
/// `advance(seconds)`, `set(seconds)`, and the `_ns` forms for exact nanoseconds. Calling
/// it gives its reading in seconds, so it also serves as a `clock=` callable elsewhere.
#[pyclass(frozen, module = "tripgate._native", name = "FakeClock")]
pub struct FakeClock {
    pub inner: Arc<tripgate::FakeClock>,
}

fn duration_ns(what: &str, seconds: &Bound<'_, PyAny>, allow_negative: bool) -> PyResult<i128> {
    if seconds.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be a number of seconds, not a bool"
        )));
    }
    if seconds.is_instance_of::<PyInt>() {
        let s: i128 = seconds
            .extract()
            .map_err(|_| PyValueError::new_err(format!("{what} is too large")))?;
        return Ok(s.saturating_mul(1_000_000_000));
    }
    let s: f64 = seconds
        .extract()
        .map_err(|_| PyTypeError::new_err(format!("{what} must be a number of seconds")))?;
    if !s.is_finite() || (!allow_negative && s < 0.0) {
        return Err(PyValueError::new_err(format!(
            "{what} must be a finite number of seconds{}",
            if allow_negative { "" } else { " >= 0" }
        )));
    }
    #[allow(clippy::cast_possible_truncation)]
    Ok((s * 1e9).round() as i128)
}

fn to_u64(what: &str, ns: i128) -> PyResult<u64> {
    u64::try_from(ns).map_err(|_| {
        PyValueError::new_err(format!(
            "{what} must be between 0 and 18446744073709551615 ns"
        ))
    })
}

#[pymethods]
impl FakeClock {
    #[new]
    #[pyo3(signature = (start = None))]
    fn new(start: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let ns = match start {
            Some(s) => to_u64("start", duration_ns("start", s, false)?)?,
            None => 0,
        };
        Ok(Self {
            inner: Arc::new(tripgate::FakeClock::new(ns)),
        })
    }

    /// Moves the clock forward by `seconds` (never back: use `set`).
    fn advance(&self, seconds: &Bound<'_, PyAny>) -> PyResult<()> {
        let ns = to_u64("seconds", duration_ns("seconds", seconds, false)?)?;
        self.inner.advance(ns);
        Ok(())
    }

    /// Sets the reading, backwards too (the breaker does not observe a clock that steps
    /// back).
    fn set(&self, seconds: &Bound<'_, PyAny>) -> PyResult<()> {
        let ns = to_u64("seconds", duration_ns("seconds", seconds, false)?)?;
        self.inner.set(ns);
        Ok(())
    }

    /// Moves the clock forward by `ns` nanoseconds.
    fn advance_ns(&self, ns: u64) {
        self.inner.advance(ns);
    }

    /// Sets the reading in nanoseconds (any u64, absurd ones included).
    fn set_ns(&self, ns: u64) {
        self.inner.set(ns);
    }

    /// The reading in seconds.
    fn now(&self) -> f64 {
        AnyClock::seconds(self.inner.now())
    }

    /// The reading in nanoseconds.
    fn now_ns(&self) -> u64 {
        self.inner.now()
    }

    fn __call__(&self) -> f64 {
        self.now()
    }

    fn __repr__(&self) -> String {
        format!("FakeClock({})", self.now())
    }
}
