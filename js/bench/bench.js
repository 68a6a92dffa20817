// Overhead of a guarded call: tripgate vs opossum 10 vs cockatiel 4, in one run.
//
//   node bench/bench.js            (Node >= 22: opossum 10 and cockatiel 4 need it)
//   BENCH_ROUNDS=9 BENCH_MS=300 node bench/bench.js
//
// Workloads, each timed in rounds of a fixed number of operations; the median round is
// reported in ns per operation:
//   execute   `await breaker.execute(fn)` around an already-resolved async fn, minus the
//             same `await fn()` without a breaker (the overhead a guarded call adds);
//             against cockatiel's ConsecutiveBreaker (its cheapest: no window, no clock)
//             and its SamplingBreaker (a time window, like tripgate's), and with a 10 s
//             timeout on every call (a timer per call on all three).
//   acquire+record   tripgate's two-step API; opossum and cockatiel have none, so their
//             column is their cheapest guarded call (execute of a synchronous fn, awaited,
//             minus `await fn()`).
//   rejection (value)   tripgate `acquire()` while open: a number, no throw.
//   rejection (execute) `await execute(fn)` while open, catching the rejection error.
import { CircuitBreaker } from '../src/node.js';

const major = Number(process.versions.node.split('.')[0]);
if (major < 22) {
  console.error(`bench: Node ${process.versions.node}: opossum 10 and cockatiel 4 need Node >= 22`);
  process.exit(2);
}
const { default: Opossum } = await import('opossum');
const cockatiel = await import('cockatiel');

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const ROUND_MS = Number(process.env.BENCH_MS ?? 200);

const fn = async () => 1;
const syncFn = () => 1;

/** Runs `op` (async) in rounds; median ns per op. */
async function timeAsync(op) {
  // Calibrate: how many ops take about ROUND_MS.
  let n = 1000;
  for (;;) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await op();
    const dt = performance.now() - t0;
    if (dt > ROUND_MS / 4) {
      n = Math.max(1000, Math.round((n * ROUND_MS) / dt));
      break;
    }
    n *= 4;
  }
  const rounds = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) await op();
    rounds.push(((performance.now() - t0) * 1e6) / n);
  }
  rounds.sort((a, b) => a - b);
  return rounds[rounds.length >> 1];
}

/** Same for a synchronous op. */
function timeSync(op) {
  let n = 10000;
  for (;;) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) op();
    const dt = performance.now() - t0;
    if (dt > ROUND_MS / 4) {
      n = Math.max(10000, Math.round((n * ROUND_MS) / dt));
      break;
    }
    n *= 4;
  }
  const rounds = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) op();
    rounds.push(((performance.now() - t0) * 1e6) / n);
  }
  rounds.sort((a, b) => a - b);
  return rounds[rounds.length >> 1];
}

const swallow = () => {};

// ---- subjects -------------------------------------------------------------------------

function tripgateClosed() {
  return new CircuitBreaker();
}

function tripgateOpen() {
  const b = new CircuitBreaker();
  b.isolate();
  return b;
}

function opossum(action) {
  // Defaults, as a user would start; no timeout timer (tripgate's execute has none unless
  // asked) so both sides do the same work.
  return new Opossum(action, { timeout: false });
}

/** Cockatiel's cheapest breaker: counts consecutive failures, no window, no clock. */
function cockatielPolicy() {
  return cockatiel.circuitBreaker(cockatiel.handleAll, {
    halfOpenAfter: 15_000,
    breaker: new cockatiel.ConsecutiveBreaker(5),
  });
}

/** Cockatiel's windowed breaker, the closest to tripgate's (rate over a 30 s window). */
function cockatielSampling() {
  return cockatiel.circuitBreaker(cockatiel.handleAll, {
    halfOpenAfter: 15_000,
    breaker: new cockatiel.SamplingBreaker({ threshold: 0.5, duration: 30_000, minimumRps: 1 }),
  });
}

// ---- workloads --------------------------------------------------------------------------

const results = [];

async function row(name, tripgate, opossumNs, cockatielNs) {
  results.push({ name, tripgate, opossum: opossumNs, cockatiel: cockatielNs });
}

const baseline = await timeAsync(() => fn());
const syncBaseline = await timeAsync(async () => syncFn());

{
  const t = tripgateClosed();
  const o = opossum(fn);
  const c = cockatielPolicy();
  const tg = await timeAsync(() => t.execute(fn));
  const op = await timeAsync(() => o.fire());
  const ck = await timeAsync(() => c.execute(fn));
  await row('execute (async fn)', tg - baseline, op - baseline, ck - baseline);
}

{
  // Same, against cockatiel's windowed SamplingBreaker (tripgate's window is time-based too).
  const t = tripgateClosed();
  const o = opossum(fn);
  const c = cockatielSampling();
  const tg = await timeAsync(() => t.execute(fn));
  const op = await timeAsync(() => o.fire());
  const ck = await timeAsync(() => c.execute(fn));
  await row('execute (async fn), cockatiel SamplingBreaker', tg - baseline, op - baseline, ck - baseline);
}

{
  // What production calls look like: every call has a timeout (10 s, never reached).
  const t = new CircuitBreaker({ timeoutMs: 10_000 });
  const o = new Opossum(fn, { timeout: 10_000 });
  const c = cockatiel.wrap(cockatiel.timeout(10_000, cockatiel.TimeoutStrategy.Aggressive), cockatielSampling());
  const tg = await timeAsync(() => t.execute(fn));
  const op = await timeAsync(() => o.fire());
  const ck = await timeAsync(() => c.execute(fn));
  await row('execute with a 10 s timeout (timer per call)', tg - baseline, op - baseline, ck - baseline);
}

{
  const t = tripgateClosed();
  const o = opossum(syncFn);
  const c = cockatielPolicy();
  const tg = timeSync(() => t.record(t.acquire(), 'success'));
  const op = await timeAsync(() => o.fire());
  const ck = await timeAsync(() => c.execute(syncFn));
  await row('acquire+record (theirs: execute of a sync fn)', tg, op - syncBaseline, ck - syncBaseline);
}

{
  const t = tripgateOpen();
  const tg = timeSync(() => t.acquire());
  const o = opossum(fn);
  o.open();
  const c = cockatielPolicy();
  const handle = c.isolate();
  const op = await timeAsync(() => o.fire().catch(swallow));
  const ck = await timeAsync(() => c.execute(fn).catch(swallow));
  await row('rejection while open (tripgate: acquire() value)', tg, op, ck);
  const tgExec = await timeAsync(() => t.execute(fn).catch(swallow));
  await row('rejection while open (execute, catching the error)', tgExec, op, ck);
  handle.dispose();
}

// ---- report -------------------------------------------------------------------------------

const fmt = (ns) => `${ns.toFixed(0)} ns`;
console.log(`tripgate bench on Node ${process.versions.node} (${process.arch}), ` +
  `median of ${ROUNDS} rounds of ~${ROUND_MS} ms; baseline await fn() = ${baseline.toFixed(0)} ns`);
console.log('');
console.log('| workload | tripgate | opossum 10 | cockatiel 4 | vs opossum | vs cockatiel |');
console.log('|---|---:|---:|---:|---:|---:|');
for (const r of results) {
  const ratio = (x) => `${(x / Math.max(r.tripgate, 1)).toFixed(1)}×`;
  console.log(`| ${r.name} | ${fmt(r.tripgate)} | ${fmt(r.opossum)} | ${fmt(r.cockatiel)} | ` +
    `${ratio(r.opossum)} | ${ratio(r.cockatiel)} |`);
}
if (process.env.BENCH_JSON) {
  console.log(JSON.stringify({ node: process.versions.node, baseline, results }));
}
