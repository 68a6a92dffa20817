"""Per-call budgets on one event loop: what timed calls leave behind and what starting many
at once costs, with every call its own budget (a request's deadline passed down:
``guard(timeout=deadline - loop.time())``) against one budget for all.

    python bench/deadlines.py            # 3 runs, each case a fresh process; ~1 minute
    python bench/deadlines.py --runs 1 --calls 10000 --concurrent 3000

Per case and run: the loop's timer handles still scheduled (not cancelled) after
``--calls`` sequential timed calls have finished; the process's RSS before and after them;
and the seconds to start ``--concurrent`` timed calls at once (create the tasks, run the
loop until every call is awaiting), then let them finish. Needs the package installed.
"""

import argparse
import asyncio
import json
import subprocess
import sys
import time


def rss_kib():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def scheduled(loop):
    return sum(1 for handle in loop._scheduled if not handle.cancelled())


async def case(distinct, calls, concurrent):
    import tripgate

    breaker = tripgate.CircuitBreaker(failure_threshold=10**9)
    loop = asyncio.get_running_loop()

    def guard(i):
        # A deadline 30 s ahead, or the same 30 s budget for every call.
        budget = 30.0 + (i % 100_000) * 1e-6 if distinct else 30.0
        return breaker.guard(timeout=budget)

    async def nothing():
        return None

    before = rss_kib()
    for i in range(calls):
        await guard(i).call_async(nothing)
    after = rss_kib()
    left = scheduled(loop)
    gate = asyncio.Event()
    started = 0

    async def wait():
        nonlocal started
        started += 1
        await gate.wait()

    t0 = time.perf_counter()
    tasks = [loop.create_task(guard(i).call_async(wait)) for i in range(concurrent)]
    while started < concurrent:
        await asyncio.sleep(0)
    start_s = time.perf_counter() - t0
    gate.set()
    await asyncio.gather(*tasks)
    return {"handles_left": left, "rss_before_kib": before, "rss_after_kib": after, "start_s": start_s}


def child(args):
    out = asyncio.run(case(args.child == "distinct", args.calls, args.concurrent))
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--concurrent", type=int, default=30_000)
    parser.add_argument("--child", choices=["distinct", "one"])
    args = parser.parse_args()
    if args.child:
        return child(args)
    runs = {"distinct": [], "one": []}
    for _ in range(args.runs):
        for name in runs:
            done = subprocess.run(
                [sys.executable, __file__, "--child", name, "--calls", str(args.calls), "--concurrent", str(args.concurrent)],
                capture_output=True, text=True, check=True,
            )
            runs[name].append(json.loads(done.stdout))
    print(f"{args.calls} sequential calls, then {args.concurrent} started at once; {args.runs} runs (ranges)")
    print("| budgets | timer handles left | RSS before (KiB) | RSS after (KiB) | start all (s) |")
    print("|---|---:|---:|---:|---:|")
    for name, label in (("distinct", "every call its own"), ("one", "one for all")):
        rows = runs[name]

        def span(key, fmt="{:,}"):
            lo, hi = min(r[key] for r in rows), max(r[key] for r in rows)
            return fmt.format(lo) if lo == hi else f"{fmt.format(lo)}–{fmt.format(hi)}"

        print(f"| {label} | {span('handles_left')} | {span('rss_before_kib')} | {span('rss_after_kib')} | "
              f"{span('start_s', '{:.2f}')} |")


if __name__ == "__main__":
    main()
