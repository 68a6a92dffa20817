//! `tripgate-edge`: writes the composed component, describes it, serves it, measures it.
//!
//! ```text
//! tripgate-edge write DIR              guard.wasm (composed) and bare.wasm into DIR
//! tripgate-edge describe               sizes, imports and exports of both
//! tripgate-edge serve ADDR [K=V ...]   the guard on ADDR with the guard's settings
//! tripgate-edge bench [--requests N] [--seconds S] [--clients C] [--engine pooled|default]
//! ```
//!
//! `bench` runs a local upstream that answers 200 at once, serves the guard and the bare
//! handler against it (a fresh instance per request each), and measures both in one run,
//! taking turns: the latency of one request at a time (end to end, and the server's
//! instantiation and handler times), then requests per second with C clients in
//! alternating rounds.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use tripgate_edge::client::{Answer, Client};
use tripgate_edge::{EngineKind, Handler, KeyValue, Options, Runtime, Server};

fn main() {
    if let Err(error) = run() {
        eprintln!("tripgate-edge: {error:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("write") => {
            let dir = args.get(1).ok_or_else(|| anyhow!("write DIR"))?;
            std::fs::create_dir_all(dir)?;
            for (name, bytes) in [("guard.wasm", tripgate_edge::GUARD), ("bare.wasm", tripgate_edge::BARE)] {
                let path = std::path::Path::new(dir).join(name);
                std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
                println!("{} ({} bytes)", path.display(), bytes.len());
            }
            Ok(())
        }
        Some("describe") => describe(),
        Some("serve") => serve(&args[1..]),
        Some("bench") => bench(&args[1..]),
        _ => bail!("usage: tripgate-edge write DIR | describe | serve ADDR [K=V ...] | bench [--requests N] [--seconds S] [--clients C] [--engine pooled|default]"),
    }
}

fn describe() -> Result<()> {
    let runtime = Runtime::new()?;
    for (handler, bytes) in [
        (Handler::Guard, tripgate_edge::GUARD),
        (Handler::GuardDraft, tripgate_edge::GUARD_DRAFT),
        (Handler::Bare, tripgate_edge::BARE),
    ] {
        println!("{handler:?}: {} bytes", bytes.len());
        for name in runtime.imports(handler) {
            println!("  import {name}");
        }
        for name in runtime.exports(handler) {
            println!("  export {name}");
        }
    }
    Ok(())
}

fn serve(args: &[String]) -> Result<()> {
    let listen: SocketAddr = args
        .first()
        .ok_or_else(|| anyhow!("serve ADDR [K=V ...]"))?
        .parse()
        .context("ADDR")?;
    let env: Vec<(&str, &str)> = args[1..]
        .iter()
        .map(|pair| {
            pair.split_once('=')
                .ok_or_else(|| anyhow!("`{pair}` is not K=V"))
        })
        .collect::<Result<_>>()?;
    let runtime = Runtime::new()?;
    let mut options = Options::new(Handler::Guard, &env);
    options.listen = listen;
    let server = Server::start(&runtime, options)?;
    println!("serving the guard on http://{}", server.addr());
    loop {
        std::thread::park();
    }
}

struct Bench {
    requests: usize,
    seconds: f64,
    clients: usize,
    engine: EngineKind,
}

impl Bench {
    fn parse(args: &[String]) -> Result<Self> {
        let mut bench = Bench {
            requests: 4000,
            seconds: 3.0,
            clients: 8,
            engine: EngineKind::Pooled,
        };
        let mut args = args.iter();
        while let Some(flag) = args.next() {
            let value = args.next().ok_or_else(|| anyhow!("{flag} needs a value"))?;
            match flag.as_str() {
                "--requests" => bench.requests = value.parse()?,
                "--seconds" => bench.seconds = value.parse()?,
                "--clients" => bench.clients = value.parse()?,
                "--engine" => {
                    bench.engine = match value.as_str() {
                        "pooled" => EngineKind::Pooled,
                        "default" => EngineKind::Default,
                        other => bail!("--engine is `pooled` or `default`, not `{other}`"),
                    }
                }
                other => bail!("unknown option {other}"),
            }
        }
        Ok(bench)
    }
}

fn bench(args: &[String]) -> Result<()> {
    let bench = Bench::parse(args)?;
    let upstream = upstream()?;
    let runtime = Runtime::with_engine(bench.engine)?;
    let route = format!("/=http://{upstream}");
    let env = [
        ("TRIPGATE_UPSTREAMS", route.as_str()),
        ("TRIPGATE_TIMEOUT_MS", "1000"),
    ];
    let start = |handler, costs: bool| {
        let mut env = env.to_vec();
        if costs {
            env.push(("TRIPGATE_COSTS", "1"));
        }
        let mut options = Options::new(handler, &env);
        options.kv = KeyValue::new();
        Server::start(&runtime, options)
    };
    // The latencies are the guard's as deployed; a third server, the guard with
    // `TRIPGATE_COSTS=1` (its clock reads and header cost a little), gives the steps.
    let guard = start(Handler::Guard, false)?;
    let bare = start(Handler::Bare, false)?;
    let costed = start(Handler::Guard, true)?;
    println!(
        "guard (composed, {} bytes) and bare handler ({} bytes), one instance per request, {:?} engine; upstream answers 200 at once",
        tripgate_edge::GUARD.len(),
        tripgate_edge::BARE.len(),
        bench.engine
    );

    // Warm up all three (connections, caches); then the two take turns, so drift hits both.
    for server in [&guard, &bare, &costed] {
        sequential(server.addr(), 200)?;
    }
    latencies(&bench, &guard, &bare, &costed)?;

    println!(
        "\nrequests per second, {} clients, {} s per round, 2 alternating rounds each:",
        bench.clients, bench.seconds
    );
    let duration = Duration::from_secs_f64(bench.seconds);
    let (mut g, mut b) = (Vec::new(), Vec::new());
    for _ in 0..2 {
        g.push(throughput(guard.addr(), bench.clients, duration)?);
        b.push(throughput(bare.addr(), bench.clients, duration)?);
    }
    let show = |v: &[f64]| {
        v.iter()
            .map(|x| format!("{x:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!("  guard  {}", show(&g));
    println!("  bare   {}", show(&b));
    println!("  guard / bare  {:.2}", mean(&g) / mean(&b));
    Ok(())
}

/// One request at a time to the guard and the bare handler, taking turns: end to end and
/// the server's steps, then the costs the guard reports of its own handler.
fn latencies(bench: &Bench, guard: &Server, bare: &Server, costed: &Server) -> Result<()> {
    let snapshot = |server: &Server| {
        let stats = server.stats();
        [
            stats.instances.load(Ordering::Relaxed),
            stats.instantiate_ns.load(Ordering::Relaxed),
            stats.handle_ns.load(Ordering::Relaxed),
            stats.dispose_ns.load(Ordering::Relaxed),
        ]
    };
    let (g0, b0) = (snapshot(guard), snapshot(bare));
    let (mut guard_lat, mut bare_lat) = interleaved(guard.addr(), bare.addr(), bench.requests)?;
    let (g1, b1) = (snapshot(guard), snapshot(bare));
    let rounds = 10;
    let per_round = (bench.requests / rounds).max(1);
    let mut costs = Vec::new();
    for _ in 0..rounds {
        costs.extend(
            sequential(costed.addr(), per_round)?
                .into_iter()
                .filter_map(|(_, cost)| cost),
        );
    }
    // Means per instance, µs: instantiation, `handle`, disposal.
    let per = |a: [u64; 4], b: [u64; 4]| {
        let n = (b[0] - a[0]).max(1) as f64;
        [1, 2, 3].map(|i| (b[i] - a[i]) as f64 / n / 1e3)
    };
    let [gi, gh, gd] = per(g0, g1);
    let [bi, bh, bd] = per(b0, b1);
    println!(
        "\none request at a time, {} requests each, the two handlers taking turns (µs):",
        bench.requests
    );
    println!("                         guard      bare   breaker's cost");
    let (gm, bm) = (mean(&guard_lat), mean(&bare_lat));
    let (gp, bp) = (
        percentile(&mut guard_lat, 0.5),
        percentile(&mut bare_lat, 0.5),
    );
    let (g99, b99) = (
        percentile(&mut guard_lat, 0.99),
        percentile(&mut bare_lat, 0.99),
    );
    for (what, g, b) in [
        ("end to end, mean ", gm, bm),
        ("end to end, p50  ", gp, bp),
        ("end to end, p99  ", g99, b99),
        ("instantiate, mean", gi, bi),
        ("handle, mean     ", gh, bh),
        ("dispose, mean    ", gd, bd),
    ] {
        println!("  {what}  {g:>10.1} {b:>9.1} {:>+10.1}", g - b);
    }
    let step = |i: usize| mean(&costs.iter().map(|c: &[f64; 3]| c[i]).collect::<Vec<_>>());
    println!(
        "  inside the guard's handler (TRIPGATE_COSTS=1, x-tripgate-cost, mean): load {:.1}, acquire {:.1}, record and write {:.1}",
        step(0),
        step(1),
        step(2)
    );
    Ok(())
}

/// `n` requests to each of `a` and `b`, one at a time, taking turns (ABBA, so that neither
/// always follows the other): both see the same machine, whatever its neighbours do.
fn interleaved(a: SocketAddr, b: SocketAddr, n: usize) -> Result<(Vec<f64>, Vec<f64>)> {
    let (mut a, mut b) = (Client::new(a), Client::new(b));
    let (mut la, mut lb) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        if i % 2 == 0 {
            la.push(timed(&mut a)?.0);
            lb.push(timed(&mut b)?.0);
        } else {
            lb.push(timed(&mut b)?.0);
            la.push(timed(&mut a)?.0);
        }
    }
    Ok((la, lb))
}

/// `n` requests in a row on one connection; each one's latency and the guard's
/// `x-tripgate-cost` steps (load, acquire, record), in µs.
fn sequential(addr: SocketAddr, n: usize) -> Result<Vec<(f64, Option<[f64; 3]>)>> {
    let mut client = Client::new(addr);
    let mut answers = Vec::with_capacity(n);
    for _ in 0..n {
        let (latency, answer) = timed(&mut client)?;
        answers.push((latency, answer.header("x-tripgate-cost").and_then(cost)));
    }
    Ok(answers)
}

/// One `GET /` and its latency in µs; anything but a 200 is an error.
fn timed(client: &mut Client) -> Result<(f64, Answer)> {
    let started = Instant::now();
    let answer = client.get("/")?;
    let latency = started.elapsed().as_secs_f64() * 1e6;
    if answer.status != 200 {
        bail!("the server answered {}: {}", answer.status, answer.text());
    }
    Ok((latency, answer))
}

/// `load=N;acquire=N;record=N` (ns) as µs.
fn cost(header: &str) -> Option<[f64; 3]> {
    let mut steps = [0.0; 3];
    for (slot, part) in steps.iter_mut().zip(header.split(';')) {
        *slot = part.split_once('=')?.1.parse::<f64>().ok()? / 1e3;
    }
    Some(steps)
}

/// Requests per second with `clients` connections sending in a row for `duration`.
fn throughput(addr: SocketAddr, clients: usize, duration: Duration) -> Result<f64> {
    let started = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            std::thread::spawn(move || -> Result<u64> {
                let mut client = Client::new(addr);
                let mut done = 0;
                while started.elapsed() < duration {
                    let answer = client.get("/")?;
                    if answer.status != 200 {
                        bail!("the server answered {}: {}", answer.status, answer.text());
                    }
                    done += 1;
                }
                Ok(done)
            })
        })
        .collect();
    let mut total = 0;
    for thread in threads {
        total += thread.join().map_err(|_| anyhow!("a client panicked"))??;
    }
    Ok(total as f64 / started.elapsed().as_secs_f64())
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

fn percentile(values: &mut [f64], p: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    let index = ((values.len() as f64 - 1.0) * p).round() as usize;
    values.get(index).copied().unwrap_or(0.0)
}

/// An upstream that answers `200 ok` at once (hyper, one tokio worker).
fn upstream() -> Result<SocketAddr> {
    use std::convert::Infallible;

    use bytes::Bytes;
    use http_body_util::Full;
    use hyper::server::conn::http1;
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;

    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    std::thread::spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
        else {
            return;
        };
        runtime.block_on(async move {
            let Ok(listener) = tokio::net::TcpListener::from_std(listener) else {
                return;
            };
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                tokio::spawn(async move {
                    let service = service_fn(|_request| async {
                        Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from_static(
                            b"ok\n",
                        ))))
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
    });
    Ok(addr)
}
