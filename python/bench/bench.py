"""tripgate for Python against its peers, in one run: the closed-path overhead of a
guarded no-op, a rejection while open, the async call overhead, memory over 10^7 calls,
and the same breaker as the WASI component through wasmtime-py.

    python bench/bench.py            # 3 runs (fresh processes), ranges; ~2 minutes
    python bench/bench.py --runs 1 --quick

Needs the package installed and requirements-bench.txt (the peers, wasmtime-py). Each
figure is the best of nine timings within a run, the measurements taken in turn in each
round (timeit, the garbage collector paused as timeit does), in nanoseconds per call;
overheads subtract the same run's bare call. The table gives the range over the runs.
"""

import argparse
import asyncio
import datetime
import gc
import json
import os
import pathlib
import platform
import subprocess
import sys
import timeit

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[1]


def noop():
    return None


async def anoop():
    return None


def best(stmt, g, number, repeat=5):
    times = timeit.Timer(stmt, globals=g).repeat(repeat=repeat, number=number)
    return min(times) / number * 1e9


REPEAT = 9


def interleaved(cases):
    """The best of REPEAT timings of each case, the cases taken in turn in each round, so
    that a burst of load on the machine lands on one timing of each rather than on all the
    timings of one. A case is (name, run(number) -> seconds, number)."""
    out = {name: float("inf") for name, _, _ in cases}
    for _ in range(REPEAT):
        for name, run, number in cases:
            out[name] = min(out[name], run(number) / number * 1e9)
    return out


def timed(stmt, g):
    timer = timeit.Timer(stmt, globals=g)
    return timer.timeit


def rss_kib():
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") // 1024


def sync_figures(n):
    import circuitbreaker
    import pybreaker

    import tripgate

    out = {}
    b = tripgate.CircuitBreaker(name="bench")
    decorated = b(noop)
    pb = pybreaker.CircuitBreaker(fail_max=5, reset_timeout=60)
    cb = circuitbreaker.CircuitBreaker(failure_threshold=5, recovery_timeout=60)
    cb_decorated = cb(noop)
    g = dict(globals(), b=b, decorated=decorated, pb=pb, cb_decorated=cb_decorated)
    out.update(
        interleaved(
            [
                ("bare", timed("noop()", g), n),
                ("tripgate call", timed("b.call(noop)", g), n),
                ("tripgate @breaker", timed("decorated()", g), n),
                ("tripgate acquire+record", timed("p = b.acquire(); noop(); p.record()", g), n),
                ("tripgate with", timed("with b: noop()", g), n),
                ("pybreaker call", timed("pb.call(noop)", g), n // 4),
                ("circuitbreaker @", timed("cb_decorated()", g), n // 4),
            ]
        )
    )

    # Open: every breaker rejects.
    b_open = tripgate.CircuitBreaker(name="open")
    b_open.isolate()
    b_fallback = tripgate.CircuitBreaker(name="fallback", fallback=None)
    b_fallback.isolate()
    pb_open = pybreaker.CircuitBreaker(fail_max=1, reset_timeout=600)
    pb_open.open()
    cb_open = circuitbreaker.CircuitBreaker(failure_threshold=1, recovery_timeout=600)

    def fail():
        raise ConnectionError

    cb_fail = cb_open(fail)
    try:
        cb_fail()
    except ConnectionError:
        pass
    cb_open_call = cb_open(noop)
    g.update(
        b_open=b_open,
        b_fallback=b_fallback,
        pb_open=pb_open,
        cb_open_call=cb_open_call,
        CircuitOpenError=tripgate.CircuitOpenError,
        PbError=pybreaker.CircuitBreakerError,
        CbError=circuitbreaker.CircuitBreakerError,
    )
    m = max(n // 4, 1000)
    out.update(
        interleaved(
            [
                ("reject tripgate acquire (value)", timed("if not b_open.acquire(): pass", g), n),
                ("reject tripgate call (fallback)", timed("b_fallback.call(noop)", g), n),
                (
                    "reject tripgate call (raises)",
                    timed("try:\n    b_open.call(noop)\nexcept CircuitOpenError:\n    pass", g),
                    m,
                ),
                (
                    "reject pybreaker (raises)",
                    timed("try:\n    pb_open.call(noop)\nexcept PbError:\n    pass", g),
                    m,
                ),
                (
                    "reject circuitbreaker (raises)",
                    timed("try:\n    cb_open_call()\nexcept CbError:\n    pass", g),
                    m,
                ),
            ]
        )
    )
    return out


# long: one async body per measured path, all run on one event loop
def async_figures(n):
    import aiobreaker
    import purgatory

    import tripgate

    out = {}
    b = tripgate.CircuitBreaker(name="async")
    decorated = b(anoop)
    timed = b.guard(timeout=2.0)
    ab = aiobreaker.CircuitBreaker(fail_max=5, timeout_duration=datetime.timedelta(seconds=60))
    factory = purgatory.AsyncCircuitBreakerFactory(default_threshold=5, default_ttl=60)
    purgatory_decorated = factory("bench")(anoop)

    def body(step):
        async def run(number):
            for _ in range(number):
                await step()

        return run

    async def bare():
        await anoop()

    async def tg():
        await b.call_async(anoop)

    async def tg_timed():
        await timed.call_async(anoop)

    async def asyncio_timed():
        async with asyncio.timeout(2.0):
            await b.call_async(anoop)

    async def tg_with():
        async with b:
            await anoop()

    async def ab_call():
        await ab.call_async(anoop)

    loop = asyncio.new_event_loop()
    purgatory_breaker = loop.run_until_complete(factory.get_breaker("bench"))
    loop.close()

    async def pg_with():
        async with purgatory_breaker:
            await anoop()

    loop = asyncio.new_event_loop()

    def timed_async(step):
        run = body(step)

        def timing(number):
            coro = run(number)
            t0 = timeit.default_timer()
            loop.run_until_complete(coro)
            return timeit.default_timer() - t0

        return timing

    peers = max(n // 4, 1000)
    # asyncio's own timeout (3.11+) around the untimed call: what a budget costs there.
    reference = [("tripgate call_async in asyncio.timeout", timed_async(asyncio_timed), n)] if hasattr(asyncio, "timeout") else []
    out.update(
        interleaved(
            [
                ("async bare", timed_async(bare), n),
                ("tripgate call_async", timed_async(tg), n),
                ("tripgate async @breaker", timed_async(decorated), n),
                ("tripgate async with", timed_async(tg_with), n),
                ("tripgate call_async, timeout", timed_async(tg_timed), n),
                *reference,
                ("aiobreaker call_async", timed_async(ab_call), peers),
                ("purgatory @breaker", timed_async(purgatory_decorated), peers),
                ("purgatory async with (breaker fetched once)", timed_async(pg_with), peers),
            ]
        )
    )
    loop.close()
    return out


def component_figures(n):
    """The component (tripgate_component.wasm) through wasmtime-py's dynamic component
    API, on its keyed hot path: an admitted acquire + record, and a rejection."""
    try:
        import wasmtime
        from wasmtime import component as c
    except ImportError:
        return {}
    target = os.environ.get("CARGO_TARGET_DIR") or str(REPO / "target")
    candidates = [
        pathlib.Path(target) / "wasm32-wasip2/component/tripgate_component.wasm",
        pathlib.Path.home() / ".cache/tripgate/target/wasm32-wasip2/component/tripgate_component.wasm",
    ]
    path = next((p for p in candidates if p.exists()), None)
    if path is None:
        return {}
    engine = wasmtime.Engine()
    store = wasmtime.Store(engine)
    instance = c.Linker(engine).instantiate(store, c.Component.from_file(engine, str(path)))
    iface = instance.get_export_index(store, "tripgate:breaker/circuit-breaker@0.3.0")
    if iface is None:
        return {}

    def func(name):
        return instance.get_func(store, instance.get_export_index(store, name, iface))

    create, key = func("[static]breaker.create"), func("[method]breaker.key")
    isolate = func("[method]breaker.isolate")
    acquire, record = func("acquire-keyed"), func("record-keyed")
    config = c.Record()
    for name, _ in create.type(store).params[0][1].fields:
        setattr(config, name, None)
    open_breaker = create(store, config, 0)
    breaker = create(store, config, 0)
    k, k_open = key(store, breaker), key(store, open_breaker)
    isolate(store, open_breaker, 1)
    isolate.post_return(store)
    success = c.Variant("success")
    now = [10]

    def pair():
        now[0] += 1
        admitted = acquire(store, k, now[0])
        record(store, k, admitted.payload.ticket, success, now[0])

    def reject():
        now[0] += 1
        acquire(store, k_open, now[0])

    g = {"pair": pair, "reject": reject}
    return {
        "component (wasmtime-py) acquire+record": best("pair()", g, n, repeat=3),
        "component (wasmtime-py) rejection": best("reject()", g, n, repeat=3),
    }


def memory_figures(calls):
    """RSS before and after `calls` guarded calls and `calls` acquire+record pairs."""
    import tripgate

    b = tripgate.CircuitBreaker(name="memory")
    for _ in range(10**6):  # warm: allocator pools, caches
        b.call(noop)
    gc.collect()
    before = rss_kib()
    for _ in range(calls):
        b.call(noop)
    for _ in range(calls):
        b.acquire().record()
    gc.collect()
    after = rss_kib()
    m = b.metrics()
    return {
        "rss before (KiB)": before,
        "rss after (KiB)": after,
        "calls": m["admitted_total"] - 10**6,
        "in flight": m["in_flight"],
    }


def one_run(quick):
    n = 20_000 if quick else 200_000
    figures = {}
    figures.update(sync_figures(n))
    figures.update(async_figures(n // 4))
    figures.update(component_figures(200 if quick else 2000))
    memory = memory_figures(10**5 if quick else 10**7)
    return {"figures": figures, "memory": memory}


def rng(values, fmt="{:.0f}"):
    lo, hi = min(values), max(values)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}–{fmt.format(hi)}"


def table(runs):
    names = list(runs[0]["figures"])
    per = {k: [r["figures"][k] for r in runs if k in r["figures"]] for k in names}
    bare = [r["figures"]["bare"] for r in runs]
    abare = [r["figures"]["async bare"] for r in runs]
    lines = ["| measurement | ns per call | overhead ns | vs tripgate |", "|---|---:|---:|---:|"]

    def overhead(name, base):
        return [r["figures"][name] - r["figures"][base] for r in runs]

    sync = ["tripgate call", "tripgate @breaker", "tripgate acquire+record", "tripgate with", "pybreaker call", "circuitbreaker @"]
    for name in sync:
        oh = overhead(name, "bare")
        ratio = [
            (r["figures"][name] - r["figures"]["bare"]) / (r["figures"]["tripgate call"] - r["figures"]["bare"])
            for r in runs
        ]
        lines.append(f"| closed: {name} | {rng(per[name])} | {rng(oh)} | {'' if name.startswith('tripgate') else rng(ratio, '{:.1f}×')} |")
    lines.append(f"| closed: bare no-op call | {rng(bare)} | | |")
    rejections = [k for k in names if k.startswith("reject")]
    for name in rejections:
        ratio = [r["figures"][name] / r["figures"]["reject tripgate acquire (value)"] for r in runs]
        lines.append(f"| open: {name[7:]} | {rng(per[name])} | | {'' if 'tripgate' in name else rng(ratio, '{:.1f}×')} |")
    asyncs = ["tripgate call_async", "tripgate async @breaker", "tripgate async with", "tripgate call_async, timeout", "tripgate call_async in asyncio.timeout", "aiobreaker call_async", "purgatory @breaker", "purgatory async with (breaker fetched once)"]
    for name in asyncs:
        if len(per.get(name, ())) != len(runs):
            continue
        oh = overhead(name, "async bare")
        ratio = [
            (r["figures"][name] - r["figures"]["async bare"]) / (r["figures"]["tripgate call_async"] - r["figures"]["async bare"])
            for r in runs
        ]
        lines.append(f"| async: {name} | {rng(per[name])} | {rng(oh)} | {'' if name.startswith('tripgate') else rng(ratio, '{:.1f}×')} |")
    lines.append(f"| async: bare await | {rng(abare)} | | |")
    for name in [k for k in names if k.startswith("component")]:
        lines.append(f"| {name} | {rng(per[name])} | | |")
    lines.append("")
    lines.append("| memory over 10^7 calls and 10^7 acquire+record | RSS before (KiB) | RSS after (KiB) | change |")
    lines.append("|---|---:|---:|---:|")
    for i, r in enumerate(runs, 1):
        m = r["memory"]
        lines.append(
            f"| run {i}: {m['calls']:,} calls, {m['in flight']} in flight after | {m['rss before (KiB)']:,} | {m['rss after (KiB)']:,} | {m['rss after (KiB)'] - m['rss before (KiB)']:+,} KiB |"
        )
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", help="also write the runs' figures here")
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_run(args.quick)))
        return
    runs = []
    for i in range(args.runs):
        cmd = [sys.executable, __file__, "--one"] + (["--quick"] if args.quick else [])
        done = subprocess.run(cmd, check=True, capture_output=True, text=True)
        runs.append(json.loads(done.stdout))
        print(f"run {i + 1}/{args.runs} done", file=sys.stderr)
    import tripgate

    print(
        f"tripgate {tripgate.__version__}, CPython {platform.python_version()}, "
        f"{platform.machine()}, {os.cpu_count()} cores, {args.runs} runs"
    )
    print(table(runs))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(runs, indent=1))


if __name__ == "__main__":
    main()
