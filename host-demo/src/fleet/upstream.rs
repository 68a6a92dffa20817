//! The fleet demo's upstream on 127.0.0.1: a thread per connection, answering by the
//! phase the demo sets, and logging every answer (time, status) and how many requests it
//! holds at each arrival.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;

use super::unix_us;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// 200 after 2 ms.
    Healthy,
    /// 503 at once.
    Failing,
    /// Back, but cold: 200 after 150 ms (so probes overlap and their peak shows).
    Cold,
}

/// One answer the upstream gave.
#[derive(Clone, Copy, Debug)]
pub struct Seen {
    pub at_us: u64,
    pub status: u16,
}

pub struct Upstream {
    pub addr: String,
    phase: Arc<Mutex<Phase>>,
    /// Requests from this member label fail whatever the phase (a broken path).
    broken: Arc<Mutex<Option<String>>>,
    log: Arc<Mutex<Vec<Seen>>>,
    /// (time, requests held) at every request's arrival.
    probes: Arc<Mutex<Vec<(u64, i64)>>>,
    stop: Arc<AtomicBool>,
}

impl Upstream {
    pub fn start() -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?.to_string();
        let up = Self {
            addr,
            phase: Arc::new(Mutex::new(Phase::Healthy)),
            broken: Arc::new(Mutex::new(None)),
            log: Arc::default(),
            probes: Arc::default(),
            stop: Arc::default(),
        };
        let (phase, broken, log, probes, stop) = (
            Arc::clone(&up.phase),
            Arc::clone(&up.broken),
            Arc::clone(&up.log),
            Arc::clone(&up.probes),
            Arc::clone(&up.stop),
        );
        let held = Arc::new(AtomicI64::new(0));
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let (phase, broken, log, probes, held) = (
                    Arc::clone(&phase),
                    Arc::clone(&broken),
                    Arc::clone(&log),
                    Arc::clone(&probes),
                    Arc::clone(&held),
                );
                std::thread::spawn(move || {
                    let _ = serve(stream, &phase, &broken, &log, &probes, &held);
                });
            }
        });
        Ok(up)
    }

    pub fn set(&self, phase: Phase) {
        *lock(&self.phase) = phase;
    }

    pub fn break_path(&self, label: Option<String>) {
        *lock(&self.broken) = label;
    }

    /// Every request so far, and the probe-concurrency samples.
    pub fn take(&self) -> (Vec<Seen>, Vec<(u64, i64)>) {
        (
            std::mem::take(&mut *lock(&self.log)),
            std::mem::take(&mut *lock(&self.probes)),
        )
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(&self.addr);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn serve(
    stream: TcpStream,
    phase: &Mutex<Phase>,
    broken: &Mutex<Option<String>>,
    log: &Mutex<Vec<Seen>>,
    probes: &Mutex<Vec<(u64, i64)>>,
    held: &AtomicI64,
) -> Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut member = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("x-member:") {
            member = v.trim().to_string();
        }
    }
    let is_broken = lock(broken).as_deref() == Some(member.as_str());
    let phase = *lock(phase);
    // Every request is sampled: until the first member closes after an outage, every
    // call that reaches the upstream is a probe, whoever sent it (the Node member marks
    // none).
    let now = held.fetch_add(1, Ordering::Relaxed) + 1;
    lock(probes).push((unix_us(), now));
    let (status, wait) = match phase {
        _ if is_broken => (503, 0),
        Phase::Failing => (503, 0),
        Phase::Healthy => (200, 2),
        Phase::Cold => (200, 150),
    };
    std::thread::sleep(Duration::from_millis(wait));
    held.fetch_sub(1, Ordering::Relaxed);
    lock(log).push(Seen {
        at_us: unix_us(),
        status,
    });
    let reason = if status == 200 {
        "OK"
    } else {
        "Service Unavailable"
    };
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    Ok(())
}
