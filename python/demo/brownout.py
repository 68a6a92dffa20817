"""The brownout demo in Python: a thread-per-request caller service against the demo's
scripted upstream (``host-demo upstream``: a real HTTP server on 127.0.0.1 that is
healthy, hangs, answers 503s, then 404s, restarts cold, and is healthy again), run twice
with the same seeded arrivals: with the per-call timeout alone, and through tripgate.

    python demo/brownout.py                 # from python, ~50 s
    python demo/brownout.py --scale 0.5 --json

The caller is what a WSGI server is: an ``http.server.HTTPServer`` whose requests run on a
``ThreadPoolExecutor`` of 32 workers behind a waiting line of 64 (past it the acceptor
answers 503 at once). It serves ``/upstream`` (a call to the upstream with a 1 s timeout
and a fallback value) and ``/local`` (50 ms of work that needs nothing from the
upstream). An open-loop load generator drives both routes at 50/s each. The run prints a
table per phase, then the same five verdicts as the Rust demo (``host-demo``), computed
from this run's own measurements.
"""

import argparse
import collections
import http.client
import http.server
import json
import os
import pathlib
import random
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import tripgate

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]
HEALTHY, HANG, STORM, FLOOD, RECOVERY = range(5)


# The upstream


class Upstream:
    """`host-demo upstream`: its address, phases and, at the end, its counters."""

    def __init__(self, command, scale, timeout_ms):
        args = [*command, "--scale", str(scale), "--timeout", str(timeout_ms)]
        self.process = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        read_at = time.monotonic()
        if not line:
            raise RuntimeError(f"the upstream did not start: {' '.join(args)}")
        info = json.loads(line)
        host, port = info["addr"].rsplit(":", 1)
        self.addr = (host, int(port))
        self.start = read_at + info["starts_in_s"]
        self.phases = info["phases"]
        self.info = info

    def phase_at(self, t):
        offset = t - self.start
        for i, p in enumerate(self.phases):
            if offset < p["end_s"]:
                return i
        return len(self.phases) - 1

    def finish(self):
        line = self.process.stdout.readline()
        self.process.wait(timeout=30)
        return json.loads(line)["phases"]


# The caller service


class PhaseCounters:
    def __init__(self):
        self.peak_busy = self.peak_waiting = self.shed = 0
        self.sent = self.probes_sent = self.rejected = 0
        self.recorded_404 = self.recorded_404_closed = 0


class Caller(http.server.HTTPServer):
    """A bounded thread-per-request server: `pool` workers, `queue` waiting places."""

    allow_reuse_address = True

    def __init__(self, upstream, pool, queue, timeout, local_work, breaker):
        self.upstream = upstream
        self.pool, self.queue = pool, queue
        self.timeout, self.local_work = timeout, local_work
        self.breaker = breaker
        self.executor = ThreadPoolExecutor(pool, thread_name_prefix="caller-worker")
        self.lock = threading.Lock()
        self.busy = self.waiting = 0
        self.phases = [PhaseCounters() for _ in upstream.phases]
        self.transitions = []
        self.cause = threading.local()
        if breaker is not None:
            breaker.on_transition(self.on_transition)
        super().__init__(("127.0.0.1", 0), CallerHandler)
        self.thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def now_phase(self):
        return self.phases[self.upstream.phase_at(time.monotonic())]

    def on_transition(self, t):
        now = time.monotonic()
        phase = self.upstream.phase_at(now)
        self.transitions.append(
            {
                "at_s": now - self.upstream.start,
                "from": t.from_state,
                "to": t.to_state,
                "reason": t.reason,
                "phase": phase,
                "cause_phase": getattr(self.cause, "phase", phase),
            }
        )

    def process_request(self, request, client_address):
        with self.lock:
            full = self.busy + self.waiting >= self.pool + self.queue
            if not full:
                self.waiting += 1
                counters = self.now_phase()
                counters.peak_waiting = max(counters.peak_waiting, self.waiting)
        if full:
            self.now_phase().shed += 1
            try:
                request.settimeout(0.2)
                request.recv(4096)
                request.sendall(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 5\r\nconnection: close\r\n\r\nbusy\n")
            except OSError:
                pass
            self.shutdown_request(request)
            return
        self.executor.submit(self.work, request, client_address)

    def work(self, request, client_address):
        with self.lock:
            self.waiting -= 1
            self.busy += 1
            counters = self.now_phase()
            counters.peak_busy = max(counters.peak_busy, self.busy)
        try:
            self.finish_request(request, client_address)
        except Exception:
            pass
        finally:
            self.shutdown_request(request)
            with self.lock:
                self.busy -= 1

    def get_upstream(self, probe):
        conn = http.client.HTTPConnection(*self.upstream.addr, timeout=self.timeout)
        try:
            conn.request("GET", "/", headers={"x-probe": "1"} if probe else {})
            response = conn.getresponse()
            response.read()
            return response.status, response.getheader("x-phase")
        finally:
            conn.close()

    def call_upstream(self):
        """The upstream's 200 or 404 as they are; anything else becomes the fallback."""
        sent_in = self.upstream.phase_at(time.monotonic())
        counters = self.phases[sent_in]
        if self.breaker is None:
            counters.sent += 1
            try:
                status, _ = self.get_upstream(False)
            except OSError:
                return 200, "fallback"
            return (status, "upstream") if status < 500 and status != 429 else (200, "fallback")
        self.cause.phase = sent_in
        permit = self.breaker.acquire()
        if not permit:
            counters.rejected += 1
            return 200, "fallback"
        probe = permit.probe
        counters.sent += 1
        if probe:
            counters.probes_sent += 1
        try:
            status, phase = self.get_upstream(probe)
        except OSError as error:  # a timeout, a refused or reset connection
            permit.record(error)
            return 200, "fallback"
        cause = int(phase) if phase is not None and phase.isdigit() else sent_in
        self.cause.phase = min(cause, len(self.phases) - 1)
        permit.record(status)  # the core decides: a 503 is a fault, a 404 is not
        if status == 404:
            self.phases[self.cause.phase].recorded_404 += 1
            if not probe:
                self.phases[self.cause.phase].recorded_404_closed += 1
        return (status, "upstream") if status < 500 and status != 429 else (200, "fallback")

    def stop(self):
        self.shutdown()
        self.server_close()
        self.executor.shutdown(wait=False, cancel_futures=True)


class CallerHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        server = self.server
        if self.path == "/local":
            time.sleep(server.local_work)
            digest = 0xCBF29CE484222325
            for i in range(2000):
                digest = ((digest ^ i) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
            self.answer(200, f"{digest:016x}\n", "local")
        elif self.path == "/upstream":
            status, source = server.call_upstream()
            self.answer(status, f"{source}\n", source)
        else:
            self.answer(404, "no such route\n", "none")

    def answer(self, status, body, source):
        data = body.encode()
        self.send_response(status)
        self.send_header("content-length", str(len(data)))
        self.send_header("x-source", source)
        self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def log_message(self, *args):
        pass


# The load


def arrivals(rate, span, seed):
    rng = random.Random(seed)
    at, out = 0.0, []
    while True:
        at += rng.expovariate(rate)
        if at >= span:
            return out
        out.append(at)


def send(addr, path, timeout):
    try:
        conn = http.client.HTTPConnection(*addr, timeout=timeout)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            response.read()
            status, source = response.status, response.getheader("x-source")
        finally:
            conn.close()
    except socket.timeout:
        return "timed_out"
    except OSError:
        return "error"
    if status == 200:
        return "fallback" if source == "fallback" else "ok"
    if status == 404 and path == "/upstream":
        return "not_found"
    if status == 503:
        return "busy"
    return "error"


def load(upstream, caller_addr, schedules, client_timeout):
    samples, lock = [], threading.Lock()
    threads = []

    def one(route, offset, phase):
        sent = time.monotonic()
        ending = send(caller_addr, f"/{route}", client_timeout)
        latency = time.monotonic() - sent
        with lock:
            samples.append(
                {"route": route, "phase": phase, "at": offset, "latency": latency,
                 "lag": sent - (upstream.start + offset), "ending": ending}
            )

    def dispatch(route, offsets):
        for offset in offsets:
            wait = upstream.start + offset - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            t = threading.Thread(target=one, args=(route, offset, upstream.phase_at(upstream.start + offset)), daemon=True)
            t.start()
            threads.append(t)

    dispatchers = [threading.Thread(target=dispatch, args=s, daemon=True) for s in schedules]
    for d in dispatchers:
        d.start()
    return dispatchers, threads, samples


def build_upstream():
    """`cargo build --release -p host-demo` (before any run: a first build takes minutes),
    and the binary's path in cargo's target directory."""
    print("building the upstream (cargo build --release -p host-demo) ...", file=sys.stderr)
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "host-demo"], cwd=REPO, check=True)
    meta = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps"],
        cwd=REPO, check=True, capture_output=True, text=True,
    )
    return str(pathlib.Path(json.loads(meta.stdout)["target_directory"]) / "release" / "host-demo")


# Statistics


def percentile(sorted_values, p):
    if not sorted_values:
        return 0.0
    rank = max(1, min(len(sorted_values), int(-(-p * len(sorted_values) // 1))))
    return sorted_values[rank - 1]


def route_stats(samples):
    latencies = sorted(s["latency"] * 1000 for s in samples)
    endings = collections.Counter(s["ending"] for s in samples)
    failed = endings["busy"] + endings["timed_out"] + endings["error"]
    return {
        "count": len(samples), "ok": endings["ok"], "not_found": endings["not_found"],
        "fallback": endings["fallback"], "failed": failed,
        "error_rate": failed / len(samples) if samples else 0.0,
        "p50_ms": percentile(latencies, 0.5), "p99_ms": percentile(latencies, 0.99),
    }


def run_once(mode, o):
    upstream = Upstream(o.upstream_command, o.scale, o.timeout * 1000)
    scaled = lambda seconds: seconds * o.scale  # noqa: E731
    breaker = make_breaker(o, scaled) if mode == "tripgate" else None
    caller = Caller(upstream, o.pool, o.queue, scaled(o.timeout), o.local_work, breaker)
    total = upstream.phases[-1]["end_s"]
    schedules = [
        ("upstream", arrivals(o.upstream_rate / o.scale, total, o.seed)),
        ("local", arrivals(o.local_rate, total, o.seed + 1)),
    ]
    threading.stack_size(256 * 1024)
    dispatchers, threads, samples = load(upstream, caller.server_address, schedules, scaled(o.client_timeout))
    ticks, stop = [], threading.Event()
    sampler = threading.Thread(target=sample, args=(upstream, caller, breaker, scaled, ticks, stop), daemon=True)
    sampler.start()
    progress(mode, o, upstream, caller, breaker, total)
    for d in dispatchers:
        d.join()
    deadline = time.monotonic() + scaled(o.client_timeout) + 5
    for t in list(threads):
        t.join(max(0.0, deadline - time.monotonic()))
    stop.set()
    sampler.join()
    caller.stop()
    counters = upstream.finish()
    if sys.stderr.isatty() and not o.quiet:
        print(file=sys.stderr)
    phases = [phase_report(o, i, p, ticks, samples, caller, counters[i]) for i, p in enumerate(upstream.phases)]
    return {
        "mode": mode, "pool": o.pool, "requests": len(samples),
        "pool_peak": max(p["pool_peak"] for p in phases),
        "breaker": breaker.metrics()["state"] if breaker is not None else None,
        "phases": phases,
    }


def make_breaker(o, scaled):
    return tripgate.CircuitBreaker(
        name="upstream",
        failure_threshold=o.threshold,
        min_calls=o.threshold,
        slow_call_duration=scaled(o.slow_call),
        window=scaled(5.0),
        buckets=10,
        cooldown=scaled(o.cooldown),
        half_open_max_probes=o.probes,
        half_open_required_successes=o.successes,
        probe_timeout=scaled(o.timeout) * 2,
    )


def sample(upstream, caller, breaker, scaled, ticks, stop):
    """Samples the pool and the breaker every 10 ms (scaled) until `stop`, with how late
    each sample came: the scheduler's delay."""
    every = max(scaled(0.01), 0.004)
    due = time.monotonic()
    while not stop.is_set():
        now = time.monotonic()
        ticks.append({
            "at": now - upstream.start, "late": max(0.0, now - due),
            "busy": caller.busy, "waiting": caller.waiting,
            "state": breaker.state if breaker is not None else None,
        })
        due = time.monotonic() + every
        time.sleep(every)


def progress(mode, o, upstream, caller, breaker, total):
    """A progress line on stderr until the run's time is up."""
    tty = sys.stderr.isatty()
    last_line = 0.0
    while time.monotonic() < upstream.start + total:
        time.sleep(0.1)
        now = time.monotonic()
        if o.quiet or now - last_line < (0.2 if tty else 1.0):
            continue
        last_line = now
        print(f"  {mode:<13}{max(0.0, now - upstream.start):5.1f}/{total:.1f} s  busy {caller.busy:3}/{o.pool}"
              f"  waiting {caller.waiting:3}  breaker {breaker.state if breaker else 'none':9}",
              file=sys.stderr, end="\r" if tty else "\n")


def phase_report(o, i, p, ticks, samples, caller, u):
    """What phase `i` (`p`) saw: the routes' latencies, the pool, the breaker, the upstream."""
    in_phase = [t for t in ticks if p["start_s"] <= t["at"] < p["end_s"]]
    share = lambda f: (sum(1 for t in in_phase if f(t)) / len(in_phase)) if in_phase else 0.0  # noqa: E731
    late = sorted(t["late"] * 1000 for t in in_phase)
    c = caller.phases[i]
    opened = [t for t in caller.transitions if t["to"] == "open"]
    return {
        "name": p["name"], "start_s": p["start_s"], "end_s": p["end_s"],
        "local": route_stats([s for s in samples if s["phase"] == i and s["route"] == "local"]),
        "upstream_route": route_stats([s for s in samples if s["phase"] == i and s["route"] == "upstream"]),
        "pool_peak": c.peak_busy, "waiting_peak": c.peak_waiting, "shed": c.shed,
        "saturated_share": share(lambda t: t["busy"] >= o.pool),
        "sched_delay_p99_ms": percentile(late, 0.99),
        "calls_sent": c.sent, "probes_sent": c.probes_sent, "rejected": c.rejected,
        "recorded_404": c.recorded_404, "recorded_404_closed": c.recorded_404_closed,
        "upstream_received": u["received"], "upstream_probes": u["probes"],
        "upstream_peak_concurrency": u["peak"], "upstream_peak_probes": u["peak_probes"],
        "trips": sum(1 for t in opened if t["phase"] == i),
        "trips_caused": sum(1 for t in opened if t["cause_phase"] == i),
        "closed_share": share(lambda t: t["state"] == "closed"),
        "open_share": share(lambda t: t["state"] == "open"),
        "half_open_share": share(lambda t: t["state"] == "half-open"),
        "transitions": [t for t in caller.transitions if t["phase"] == i],
    }


def checks(o, runs):
    out = []
    by_mode = {r["mode"]: r for r in runs}
    guarded = by_mode.get("tripgate")
    if guarded:
        ph = guarded["phases"]
        healthy, hang = ph[HEALTHY]["local"], ph[HANG]["local"]
        limit = 2 * healthy["p99_ms"]
        out.append({
            "name": "tripgate: unrelated p99 in the hang within 2x healthy",
            "pass": hang["count"] > 0 and healthy["count"] > 0 and hang["p99_ms"] <= limit and hang["failed"] == 0,
            "detail": f"hang p99 {hang['p99_ms']:.1f} ms vs healthy p99 {healthy['p99_ms']:.1f} ms "
                      f"(limit {limit:.1f} ms), {hang['failed']} of {hang['count']} failed",
        })
        peak = max(p["pool_peak"] for p in ph)
        shed = sum(p["shed"] for p in ph)
        out.append({
            "name": "tripgate: the worker pool never saturates",
            "pass": peak < o.pool and shed == 0,
            "detail": f"peak {peak} of {o.pool} workers busy over the whole run, {shed} shed",
        })
        rec = ph[RECOVERY]
        out.append({
            "name": "tripgate: at most K concurrent probes reach the recovering upstream",
            "pass": rec["upstream_peak_probes"] <= o.probes and rec["upstream_probes"] > 0,
            "detail": f"peak {rec['upstream_peak_probes']} concurrent probes at the upstream (K = {o.probes}), "
                      f"{rec['upstream_probes']} probes in recovery",
        })
        flood = ph[FLOOD]
        floor = 2 * o.threshold
        out.append({
            "name": "tripgate: the 404 flood trips nothing",
            "pass": flood["trips_caused"] == 0 and flood["recorded_404_closed"] >= floor,
            "detail": f"{flood['trips_caused']} trips caused by 404 answers; the closed breaker recorded "
                      f"{flood['recorded_404_closed']} 404s (at least {floor} to count), closed "
                      f"{flood['closed_share'] * 100:.0f}% of the phase",
        })
    plain = by_mode.get("timeout-only")
    if plain:
        ph = plain["phases"]
        healthy, hang = ph[HEALTHY]["local"], ph[HANG]["local"]
        peak = ph[HANG]["pool_peak"]
        stalls = hang["p99_ms"] > 2 * healthy["p99_ms"]
        fails = hang["error_rate"] >= 0.01
        out.append({
            "name": "timeout-only: the pool saturates and the unrelated route stalls or fails",
            "pass": peak >= o.pool and (stalls or fails),
            "detail": f"peak {peak} of {o.pool} workers busy in the hang (saturated "
                      f"{ph[HANG]['saturated_share'] * 100:.0f}% of it); unrelated p99 {hang['p99_ms']:.1f} ms "
                      f"vs healthy {healthy['p99_ms']:.1f} ms, {hang['error_rate'] * 100:.1f}% failed",
        })
    return out


def tables(o, runs, verdicts):
    lines = []
    first = runs[0]
    w = 24

    def row(label, cells):
        lines.append(f"  {label:<36}" + "".join(f"{c:>{w}}" for c in cells))

    def ms(x):
        return f"{x:.0f}" if x >= 100 else f"{x:.1f}"

    for i, phase in enumerate(first["phases"]):
        lines.append(f"\n── phase {i + 1}/{len(first['phases'])}: {phase['name']} "
                     f"({phase['start_s']:.1f}–{phase['end_s']:.1f} s)")
        cols = lambda f: [f(r, r["phases"][i]) for r in runs]  # noqa: E731
        row("", cols(lambda r, p: r["mode"]))
        row("unrelated route p50 / p99", cols(lambda r, p: f"{ms(p['local']['p50_ms'])} / {ms(p['local']['p99_ms'])} ms"))
        row("unrelated route errors", cols(lambda r, p: f"{p['local']['error_rate'] * 100:.1f}% ({p['local']['failed']}/{p['local']['count']})"))
        row("machine: scheduling delay p99", cols(lambda r, p: f"{ms(p['sched_delay_p99_ms'])} ms"))
        row(f"worker pool peak (of {o.pool})", cols(lambda r, p: f"{p['pool_peak']} FULL {p['saturated_share'] * 100:.0f}% of time" if p["pool_peak"] >= o.pool else str(p["pool_peak"])))
        row("waiting line peak / shed (503)", cols(lambda r, p: f"{p['waiting_peak']} / {p['shed']}"))
        row("upstream route: real / fallback / err", cols(lambda r, p: f"{p['upstream_route']['ok'] + p['upstream_route']['not_found']} / {p['upstream_route']['fallback']} / {p['upstream_route']['failed']}"))
        row("upstream route p50 / p99", cols(lambda r, p: f"{ms(p['upstream_route']['p50_ms'])} / {ms(p['upstream_route']['p99_ms'])} ms"))
        row("requests the upstream received", cols(lambda r, p: str(p["upstream_received"])))
        row("upstream peak concurrency", cols(lambda r, p: str(p["upstream_peak_concurrency"])))
        row(f"probes received (peak at once, K={o.probes})", cols(lambda r, p: "–" if r["breaker"] is None else f"{p['upstream_probes']} (peak {p['upstream_peak_probes']})"))
        row("breaker closed / open / half-open", cols(lambda r, p: "no breaker" if r["breaker"] is None else f"{p['closed_share'] * 100:.0f}% / {p['open_share'] * 100:.0f}% / {p['half_open_share'] * 100:.0f}%"))
        row("rejected by the breaker", cols(lambda r, p: "–" if r["breaker"] is None else str(p["rejected"])))
        row("trips: in phase / by its answers", cols(lambda r, p: "–" if r["breaker"] is None else f"{p['trips']} / {p['trips_caused']}"))
        if i == FLOOD:
            row("404s the closed breaker recorded", cols(lambda r, p: "–" if r["breaker"] is None else str(p["recorded_404_closed"])))
        for r in runs:
            if r["breaker"] is None:
                continue
            ts = r["phases"][i]["transitions"]
            short = lambda s: "half" if s == "half-open" else s  # noqa: E731
            for n, t in enumerate(ts[:6]):
                label = "transitions" if n == 0 else ""
                lines.append(f"  {label:<36}{t['at_s']:.2f}s {short(t['from'])}→{short(t['to'])} ({t['reason']})")
            if len(ts) > 6:
                lines.append(f"  {'':<36}… {len(ts) - 6} more")
    lines.append("\n── acceptance (from this run's own measurements)")
    for v in verdicts:
        lines.append(f"  [{'PASS' if v['pass'] else 'FAIL'}] {v['name']}\n         {v['detail']}")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the script's durations (and divide the upstream rate) by this")
    parser.add_argument("--upstream-rate", type=float, default=50.0)
    parser.add_argument("--local-rate", type=float, default=50.0)
    parser.add_argument("--pool", type=int, default=32)
    parser.add_argument("--queue", type=int, default=None, help="waiting places (default 2 x pool)")
    parser.add_argument("--timeout", type=float, default=1.0, help="per-call timeout on the upstream, seconds")
    parser.add_argument("-k", "--probes", type=int, default=2)
    parser.add_argument("-m", "--successes", type=int, default=2)
    parser.add_argument("--threshold", type=int, default=5)
    parser.add_argument("--cooldown", type=float, default=1.0)
    parser.add_argument("--slow-call", type=float, default=0.2)
    parser.add_argument("--local-work", type=float, default=0.05)
    parser.add_argument("--client-timeout", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--only", choices=["timeout-only", "tripgate"])
    parser.add_argument("--upstream-bin", help="the host-demo binary (default: built with cargo build --release -p host-demo)")
    parser.add_argument("--json", action="store_true", help="results as JSON on stdout (tables on stderr)")
    parser.add_argument("--quiet", action="store_true")
    o = parser.parse_args(argv)
    if o.queue is None:
        o.queue = 2 * o.pool
    o.upstream_command = [o.upstream_bin or build_upstream(), "upstream"]
    modes = [o.only] if o.only else ["timeout-only", "tripgate"]
    started = time.monotonic()
    print(f"tripgate brownout demo (Python {sys.version.split()[0]}, tripgate {tripgate.__version__}): "
          f"{len(modes)} run(s), upstream route {o.upstream_rate / o.scale:.0f}/s, unrelated route "
          f"{o.local_rate:.0f}/s, {o.pool} workers, timeout {o.timeout * o.scale * 1000:.0f} ms, "
          f"K = {o.probes}, M = {o.successes}", file=sys.stderr)
    runs = [run_once(mode, o) for mode in modes]
    verdicts = checks(o, runs)
    text = tables(o, runs, verdicts) + f"\n\ntotal wall time {time.monotonic() - started:.1f} s\n"
    if o.json:
        print(text, file=sys.stderr)
        print(json.dumps({"options": {k: v for k, v in vars(o).items()}, "runs": runs,
                          "checks": verdicts, "all_pass": all(v["pass"] for v in verdicts)}, indent=1))
    else:
        print(text)
    return 0 if all(v["pass"] for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())
