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
//             timeout on every call (a timer per call on all three), and with a timeout
//             of its own for every call (10 s + i µs; the peers keep their 10 s).
//   acquire+record   tripgate's two-step API; opossum and cockatiel have none, so their
//             column is their cheapest guarded call (execute of a synchronous fn, awaited,
//             minus `await fn()`).
//   rejection (value)   tripgate `acquire()` while open: a number, no throw.
//   rejection (execute) `await execute(fn)` while open, catching the rejection error.
import { CircuitBreaker } from '../src/node.js';
import { compare as compareRounds } from './rounds.js';

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

const compare = (ops) => compareRounds(ops, ROUNDS, ROUND_MS);

function timeSyncOnce(op, n = 200_000) {
  for (let i = 0; i < n / 10; i++) op();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) op();
  return ((performance.now() - t0) * 1e6) / n;
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


let baseline = 0;

/** An execute-style row: each subject minus a bare `await fn()` measured in the same rounds. */
async function overheadRow(name, tripgate, opossumOp, cockatielOp, base = () => fn()) {
  const r = await compare({
    base: [base, true], tripgate: [tripgate, true], opossum: [opossumOp, true], cockatiel: [cockatielOp, true],
  });
  baseline = r.base;
  results.push({ name, tripgate: r.tripgate - r.base, opossum: r.opossum - r.base, cockatiel: r.cockatiel - r.base });
}

{
  const t = tripgateClosed();
  const o = opossum(fn);
  const c = cockatielPolicy();
  await overheadRow('execute (async fn)', () => t.execute(fn), () => o.fire(), () => c.execute(fn));
}

{
  // Against cockatiel's windowed SamplingBreaker (tripgate's window is time-based too).
  const t = tripgateClosed();
  const o = opossum(fn);
  const c = cockatielSampling();
  await overheadRow('execute (async fn), cockatiel SamplingBreaker', () => t.execute(fn), () => o.fire(), () => c.execute(fn));
}

{
  // What production calls look like: every call has a timeout (10 s, never reached).
  const t = new CircuitBreaker({ timeoutMs: 10_000 });
  const o = new Opossum(fn, { timeout: 10_000 });
  const c = cockatiel.wrap(cockatiel.timeout(10_000, cockatiel.TimeoutStrategy.Aggressive), cockatielSampling());
  await overheadRow('execute with a 10 s timeout (timer per call)', () => t.execute(fn), () => o.fire(), () => c.execute(fn));
}

{
  // Timeouts computed per call (a deadline minus now): every call a length of its own.
  // opossum and cockatiel take one timeout per breaker or policy, so theirs is the 10 s
  // of the row above, a timer per call either way.
  const t = new CircuitBreaker();
  const o = new Opossum(fn, { timeout: 10_000 });
  const c = cockatiel.wrap(cockatiel.timeout(10_000, cockatiel.TimeoutStrategy.Aggressive), cockatielSampling());
  let i = 0;
  await overheadRow('execute with a distinct timeout per call (10 s + i µs)',
    () => t.execute(fn, { timeoutMs: 10_000 + (i++ % 1_000_000) / 1_000 }), () => o.fire(), () => c.execute(fn));
}

{
  // tripgate's two-step API is synchronous; theirs is their cheapest guarded call.
  const t = tripgateClosed();
  const o = opossum(syncFn);
  const c = cockatielPolicy();
  const r = await compare({
    tripgate: [() => t.record(t.acquire(), 'success'), false],
    base: [async () => syncFn(), true],
    opossum: [() => o.fire(), true],
    cockatiel: [() => c.execute(syncFn), true],
  });
  results.push({
    name: 'acquire+record (theirs: execute of a sync fn)',
    tripgate: r.tripgate, opossum: r.opossum - r.base, cockatiel: r.cockatiel - r.base,
  });
}

{
  const t = tripgateOpen();
  const o = opossum(fn);
  o.open();
  const c = cockatielPolicy();
  const handle = c.isolate();
  const r = await compare({
    value: [() => t.acquire(), false],
    execute: [() => t.execute(fn).catch(swallow), true],
    opossum: [() => o.fire().catch(swallow), true],
    cockatiel: [() => c.execute(fn).catch(swallow), true],
  });
  results.push({ name: 'rejection while open (tripgate: acquire() value)', tripgate: r.value, opossum: r.opossum, cockatiel: r.cockatiel });
  results.push({ name: 'rejection while open (execute, catching the error)', tripgate: r.execute, opossum: r.opossum, cockatiel: r.cockatiel });
  handle.dispose();
}

// ---- for reference: the same core as the WASI component, transpiled by jco ----------------

const reference = [];
{
  const { existsSync } = await import('node:fs');
  const jco = new URL('../test/.jco/tripgate.js', import.meta.url);
  if (existsSync(jco)) {
    const { circuitBreaker } = await import(jco);
    const b = circuitBreaker.Breaker.create({}, 0n);
    const ok = { tag: 'success' };
    const t = tripgateClosed();
    reference.push(['acquire+record, tripgate (wasm-bindgen)', timeSyncOnce(() => t.record(t.acquire(), 'success'))]);
    reference.push(['acquire+record, component under jco (resource permit)', timeSyncOnce(() => {
      const a = b.acquire(1n);
      b.recordOutcome(a.decision.val, ok, 1n);
    })]);
    const key = b.key();
    reference.push(['acquire+record, component under jco (keyed ticket)', timeSyncOnce(() => {
      const a = circuitBreaker.acquireKeyed(key, 1n);
      circuitBreaker.recordKeyed(key, a.val.ticket, ok, 1n);
    })]);
    b.isolate(1n);
    reference.push(['rejection, component under jco', timeSyncOnce(() => b.acquire(1n))]);
  }
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
if (reference.length > 0) {
  console.log('');
  console.log('For reference, the same core as the WASI component transpiled by jco (scripts/test.sh builds it):');
  console.log('');
  console.log('| workload | ns/op |');
  console.log('|---|---:|');
  for (const [name, ns] of reference) console.log(`| ${name} | ${fmt(ns)} |`);
}
if (process.env.BENCH_JSON) {
  console.log(JSON.stringify({ node: process.versions.node, baseline, results }));
}
