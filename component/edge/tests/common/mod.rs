//! What the tests share: one compiled runtime, a scripted upstream on 127.0.0.1, and a
//! load helper.
//!
//! The upstream is the brownout demo's script in small (host-demo's upstream is
//! part of a binary crate, not a library): healthy, a fixed status (the 503 storm, the
//! 404 flood), a hang, and a cold start (the first fills take `fill` each, `slots` at a
//! time). The test switches phases itself, so a phase lasts exactly the requests it
//! sends. It counts what it receives, the half-open probes among them (the guard marks
//! them `x-tripgate-probe: 1`), and the peak of each in flight at once.

#![allow(dead_code)]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use tripgate_edge::client::{read_answer, Answer, Client};
use tripgate_edge::{Runtime, Server};

/// The runtime every test shares (compiling the components takes about a second).
pub fn runtime() -> &'static Runtime {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| Runtime::new().expect("the runtime compiles the embedded components"))
}

#[derive(Clone, Debug)]
pub enum Behaviour {
    /// 200 at once.
    Healthy,
    /// This status at once.
    Status(u16),
    /// No answer until the phase changes or this long has passed.
    Hang(Duration),
    /// The first `fills` requests take `fill` each, `slots` at a time; then healthy.
    Cold {
        fill: Duration,
        slots: u32,
        fills: u32,
    },
    /// This status before the request's body is read, as a server that refuses an upload
    /// (401, 413) does; then it reads a little of the body and closes the connection with
    /// the rest unread (the kernel resets it).
    Early(u16),
}

#[derive(Default, Debug)]
pub struct Counts {
    pub received: AtomicU64,
    pub probes: AtomicU64,
    pub in_flight: AtomicU32,
    pub peak: AtomicU32,
    pub probes_in_flight: AtomicU32,
    pub peak_probes: AtomicU32,
    /// Whether each request, in order of arrival, was a probe.
    pub arrivals: Mutex<Vec<bool>>,
    /// Request body bytes read, in all.
    pub body_bytes: AtomicU64,
}

struct Shared {
    behaviour: Mutex<(u64, Behaviour)>,
    counts: Mutex<Arc<Counts>>,
    fills_started: AtomicU32,
    filling: AtomicU32,
    stop: AtomicBool,
}

pub struct Upstream {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Upstream {
    pub fn start(behaviour: Behaviour) -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the upstream");
        let addr = listener.local_addr().expect("the upstream's address");
        let shared = Arc::new(Shared {
            behaviour: Mutex::new((0, behaviour)),
            counts: Mutex::new(Arc::new(Counts::default())),
            fills_started: AtomicU32::new(0),
            filling: AtomicU32::new(0),
            stop: AtomicBool::new(false),
        });
        let accepting = shared.clone();
        thread::spawn(move || {
            for stream in listener.incoming() {
                if accepting.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let shared = accepting.clone();
                thread::spawn(move || serve(stream, &shared));
            }
        });
        Upstream { addr, shared }
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:port`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Starts a phase: a new behaviour and fresh counts (returned).
    pub fn phase(&self, behaviour: Behaviour) -> Arc<Counts> {
        let counts = Arc::new(Counts::default());
        *self.shared.counts.lock().unwrap() = counts.clone();
        let mut current = self.shared.behaviour.lock().unwrap();
        *current = (current.0 + 1, behaviour);
        self.shared.fills_started.store(0, Ordering::SeqCst);
        counts
    }

    pub fn counts(&self) -> Arc<Counts> {
        self.shared.counts.lock().unwrap().clone()
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Ends any hang, and wakes the accept loop so it sees `stop`.
        self.phase(Behaviour::Healthy);
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(stream: TcpStream, shared: &Shared) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut writer = stream;
    let Some((probe, length)) = read_head(&mut reader) else {
        return;
    };
    let counts = shared.counts.lock().unwrap().clone();
    let (phase, behaviour) = shared.behaviour.lock().unwrap().clone();
    if let Behaviour::Early(status) = behaviour {
        counts.received.fetch_add(1, Ordering::SeqCst);
        answer(&mut writer, status);
        // A little of the body, then the connection closes with the rest unread.
        let read = io::copy(
            &mut (&mut reader).take(length.min(64 << 10)),
            &mut io::sink(),
        );
        counts
            .body_bytes
            .fetch_add(read.unwrap_or(0), Ordering::SeqCst);
        return;
    }
    // A server reads the request before it answers.
    let read = io::copy(&mut (&mut reader).take(length), &mut io::sink()).unwrap_or(0);
    counts.body_bytes.fetch_add(read, Ordering::SeqCst);
    counts.received.fetch_add(1, Ordering::SeqCst);
    counts.arrivals.lock().unwrap().push(probe);
    let now = counts.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    counts.peak.fetch_max(now, Ordering::SeqCst);
    if probe {
        counts.probes.fetch_add(1, Ordering::SeqCst);
        let now = counts.probes_in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        counts.peak_probes.fetch_max(now, Ordering::SeqCst);
    }
    let status = status_after(behaviour, phase, shared);
    answer(&mut writer, status);
    counts.in_flight.fetch_sub(1, Ordering::SeqCst);
    if probe {
        counts.probes_in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Reads a request's head: whether the guard marked it a probe, and its body's length.
/// None if the connection ends first.
fn read_head(reader: &mut BufReader<TcpStream>) -> Option<(bool, u64)> {
    let mut probe = false;
    let mut length = 0u64;
    let mut line = String::new();
    loop {
        line.clear();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
        let text = line.trim_end();
        if text.is_empty() {
            return Some((probe, length));
        }
        if let Some((name, value)) = text.split_once(':') {
            let (name, value) = (name.trim(), value.trim());
            if name.eq_ignore_ascii_case("x-tripgate-probe") && value == "1" {
                probe = true;
            }
            if name.eq_ignore_ascii_case("content-length") {
                length = value.parse().unwrap_or(0);
            }
        }
    }
}

/// The status a request of `phase` gets, once `behaviour` has played out (a hang ends
/// with its phase).
fn status_after(behaviour: Behaviour, phase: u64, shared: &Shared) -> u16 {
    match behaviour {
        Behaviour::Healthy => 200,
        Behaviour::Status(status) => status,
        Behaviour::Hang(limit) => {
            let started = Instant::now();
            while started.elapsed() < limit && shared.behaviour.lock().unwrap().0 == phase {
                thread::sleep(Duration::from_millis(5));
            }
            200
        }
        Behaviour::Cold { fill, slots, fills } => {
            if shared.fills_started.fetch_add(1, Ordering::SeqCst) < fills {
                // Wait for a fill slot, then fill.
                while shared
                    .filling
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                        (n < slots).then_some(n + 1)
                    })
                    .is_err()
                {
                    thread::sleep(Duration::from_millis(2));
                }
                thread::sleep(fill);
                shared.filling.fetch_sub(1, Ordering::SeqCst);
            }
            200
        }
        Behaviour::Early(_) => unreachable!("answered above"),
    }
}

/// Writes the answer in one piece, as a server that buffers its output does.
fn answer(writer: &mut TcpStream, status: u16) {
    let body = format!("upstream says {status}\n");
    let answer = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = writer.write_all(answer.as_bytes());
    let _ = writer.flush();
}

/// The guard's settings for one upstream at `/`: the demo's breaker (threshold 5,
/// K = 2 probes, M = 2 successes) with a 1 s cooldown and a 300 ms deadline.
pub fn settings(upstream: &str) -> Vec<(&'static str, String)> {
    vec![
        ("TRIPGATE_UPSTREAMS", format!("/={upstream}")),
        ("TRIPGATE_TIMEOUT_MS", "300".into()),
        ("TRIPGATE_FAILURE_THRESHOLD", "5".into()),
        ("TRIPGATE_MIN_CALLS", "5".into()),
        ("TRIPGATE_COOLDOWN_MS", "1000".into()),
        ("TRIPGATE_PROBES", "2".into()),
        ("TRIPGATE_SUCCESSES", "2".into()),
        ("TRIPGATE_PROBE_TIMEOUT_MS", "1000".into()),
    ]
}

/// Starts the guard (or the bare handler) with `env`, a store and a clock.
pub fn serve_with(
    handler: tripgate_edge::Handler,
    env: &[(&str, String)],
    kv: &tripgate_edge::KeyValue,
    clock: Option<&tripgate_edge::FakeClock>,
) -> Server {
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut options = tripgate_edge::Options::new(handler, &env);
    options.kv = kv.clone();
    options.clock = clock.cloned();
    Server::start(runtime(), options).expect("the server starts")
}

/// Whether the guard rejected this answer (503 with its `x-tripgate` header).
pub fn rejected(answer: &Answer) -> bool {
    answer.status == 503 && answer.header("x-tripgate").is_some()
}

/// `clients` threads, each sending `each` requests in a row on its own connection;
/// every answer, in no particular order.
pub fn burst(addr: SocketAddr, path: &str, clients: usize, each: usize) -> Vec<Answer> {
    let path = path.to_owned();
    in_turn(addr, clients, each, move |client| client.get(&path))
}

/// The same with POSTs of `body`.
pub fn burst_posts(addr: SocketAddr, body: &[u8], clients: usize, each: usize) -> Vec<Answer> {
    let body = body.to_vec();
    in_turn(addr, clients, each, move |client| {
        client.post("/upload", &body)
    })
}

/// `clients` threads, each making `each` requests with `request` on its own connection.
fn in_turn<F>(addr: SocketAddr, clients: usize, each: usize, request: F) -> Vec<Answer>
where
    F: Fn(&mut Client) -> anyhow::Result<Answer> + Clone + Send + 'static,
{
    let handles: Vec<_> = (0..clients)
        .map(|_| {
            let request = request.clone();
            thread::spawn(move || {
                let mut client = Client::new(addr);
                (0..each)
                    .map(|_| request(&mut client).expect("an answer"))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    handles
        .into_iter()
        .flat_map(|h| h.join().expect("a client thread"))
        .collect()
}

/// The guard for `upstream` with the tests' settings, a store of its own and a scripted
/// clock.
pub fn guard_for(upstream: &Upstream) -> Server {
    let clock = tripgate_edge::FakeClock::new();
    serve_with(
        tripgate_edge::Handler::Guard,
        &settings(&upstream.url()),
        &tripgate_edge::KeyValue::new(),
        Some(&clock),
    )
}

/// Requests through `addr` until the breaker trips: five faults, then a rejection.
pub fn trip(addr: SocketAddr) {
    let mut client = Client::new(addr);
    for n in 0..5 {
        assert!(!rejected(&client.get("/").unwrap()), "request {n}");
    }
    assert!(rejected(&client.get("/").unwrap()), "tripped");
}

/// `clients` threads sending requests in a row until each has `wanted` answers that
/// `done` accepts, or `limit` passes; every answer.
pub fn until(
    addr: SocketAddr,
    clients: usize,
    wanted: usize,
    limit: Duration,
    done: fn(&Answer) -> bool,
) -> Vec<Answer> {
    let handles: Vec<_> = (0..clients)
        .map(|_| {
            thread::spawn(move || {
                let mut client = Client::new(addr);
                let started = Instant::now();
                let mut answers = Vec::new();
                let mut good = 0;
                while good < wanted && started.elapsed() < limit {
                    let answer = client.get("/").expect("an answer");
                    good += usize::from(done(&answer));
                    answers.push(answer);
                }
                answers
            })
        })
        .collect();
    handles
        .into_iter()
        .flat_map(|h| h.join().expect("a client thread"))
        .collect()
}

/// Eight clients, ten 503s each, threshold 20, at `addr`: no outcome lost between
/// instances means at most 20 + 7 calls reach `upstream` (the calls admitted before the
/// trip was written), and every other answer is a rejection.
pub fn assert_no_outcome_lost(addr: SocketAddr, upstream: &Upstream) {
    let answers = burst(addr, "/", 8, 10);
    let received = upstream.counts().received.load(Ordering::SeqCst);
    assert!(
        (20..=27).contains(&received),
        "{received} calls reached the upstream"
    );
    assert_eq!(
        answers.iter().filter(|a| rejected(a)).count() as u64,
        80 - received
    );
}

/// A request whose head promises a body of 1 MiB, of which 10 bytes are sent.
pub fn unfinished(addr: SocketAddr, path: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).expect("connects");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-length: 1048576\r\n\r\n0123456789"
    )
    .unwrap();
    stream.flush().unwrap();
    stream
}

pub fn answer_to(stream: TcpStream) -> Answer {
    read_answer(&mut BufReader::new(stream)).expect("an answer")
}

/// Waits until `done`, at most `limit`.
pub fn wait_for(limit: Duration, done: impl Fn() -> bool) -> bool {
    let started = Instant::now();
    while !done() {
        if started.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}
