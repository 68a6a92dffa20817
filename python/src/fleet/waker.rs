//! What paces a store's thread: the core's reconnect backoff, and the socket a breaker's
//! watcher writes a byte to so that the thread wakes without polling.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pyo3::prelude::*;

use tripgate_core::fleet::options::{Backoff, FleetOption};

use super::wire::duration;

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
pub(super) struct WakeFd {
    reader: Stream,
    writer: Stream,
    pending: AtomicBool,
}

impl WakeFd {
    pub(super) fn wake(&self) {
        if !self.pending.swap(true, Ordering::AcqRel) {
            // A full socket holds a byte already: the thread wakes all the same.
            let _ = (&self.writer).write(&[1]);
        }
    }
}

/// A store thread's wake-up (`fileno()` to select on, `drain()` after waking, `wake()`).
#[pyclass(frozen, module = "tripgate._native", name = "FleetWaker")]
pub struct FleetWaker(pub(super) Arc<WakeFd>);

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
