// Where a guarded call's time goes: one path in a plain loop under V8's sampling profiler
// (node:inspector, in this process), then its samples by where they fell.
//
//   $NODE24 js/bench/profile.js [execute|pair] [calls] [interval-us]
//
// execute: `await breaker.execute(fn)` around an already-resolved async fn (bench.js's
// first row); pair: `record(acquire(), 'success')`. Defaults: execute, 3,000,000 calls,
// a sample every 50 µs. Prints the share of samples in:
//   clock      the default clock and all under it (`performance.now()`)
//   boundary   V8's wrappers that enter the wasm module (js-to-wasm) or leave it (wasm-to-js)
//   wasm       the wasm module's functions (acquire, record, the permit table, the window)
//   glue       wasm-bindgen's JavaScript glue (pkg/): one method per wasm call
//   tripgate   the package's JavaScript (execute.js, breaker.js, classify.js, ...), outside the clock
//   promises   V8's own work with no JS frame of its own: promise reactions, microtasks
//   gc         the garbage collector
//   loop       this script (the loop, its await) and fn
// and the functions with the most self time. The package's wasm module has no name
// section, so its functions show as `wasm-function[N]`; WASM_GLUE=path/to/tripgate_wasm.js
// profiles a glue that wasm-bindgen made without --remove-name-section instead (the
// commands are in bench/README.md).
import { Session } from 'node:inspector/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { CircuitBreaker } from '../src/node.js';
import { install } from '../src/tables.js';

if (process.env.WASM_GLUE) {
  // The tables are the same module's: only the bindings that breakers are made from change.
  install(await import(pathToFileURL(process.env.WASM_GLUE).href));
}

const mode = process.argv[2] ?? 'execute';
const calls = Number(process.argv[3] ?? 3_000_000);
const intervalUs = Number(process.argv[4] ?? 50);
if (!['execute', 'pair'].includes(mode) || !(calls > 0) || !(intervalUs > 0)) {
  console.error('usage: profile.js [execute|pair] [calls] [interval-us]');
  process.exit(2);
}

const fn = async () => 1;
const breaker = new CircuitBreaker();
async function loop(n) {
  if (mode === 'execute') {
    for (let i = 0; i < n; i++) await breaker.execute(fn);
  } else {
    for (let i = 0; i < n; i++) breaker.record(breaker.acquire(), 'success');
  }
}

await loop(calls / 10); // warm up: every function optimised before the samples count
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: intervalUs });
await session.post('Profiler.start');
const t0 = performance.now();
await loop(calls);
const elapsed = performance.now() - t0;
const { profile } = await session.post('Profiler.stop');
session.disconnect();

const SRC = fileURLToPath(new URL('../src/', import.meta.url));
const SELF = fileURLToPath(import.meta.url);
const GLUE = process.env.WASM_GLUE ? fileURLToPath(pathToFileURL(process.env.WASM_GLUE)) : null;
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
const hits = new Map();
for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);

const path = (url) => (url.startsWith('file://') ? fileURLToPath(url) : url);
const isClock = (frame) => frame.functionName === 'defaultClock' && path(frame.url).startsWith(SRC);
const isBoundary = (frame) => /^(js-to-wasm|wasm-to-js)\b/.test(frame.functionName);
const isWasm = (frame) => frame.url.includes('.wasm') || frame.functionName.startsWith('wasm-function');

/** The category of a sample: by its own frame, or `clock` if the default clock is above it. */
function category(id) {
  const frame = byId.get(id).callFrame;
  for (let up = id; up !== undefined; up = parent.get(up)) {
    if (isClock(byId.get(up).callFrame)) return 'clock';
  }
  if (isBoundary(frame)) return 'boundary';
  if (isWasm(frame)) return 'wasm';
  if (frame.functionName === '(garbage collector)') return 'gc';
  if (frame.functionName === '(program)' || frame.functionName === '(idle)') return 'promises';
  const file = path(frame.url);
  if (file.includes('/pkg/') || file === GLUE) return 'glue';
  if (file.startsWith(SRC)) return 'tripgate';
  if (file === SELF) return 'loop';
  return 'other';
}

let total = 0;
const categories = new Map();
const functions = new Map();
for (const [id, n] of hits) {
  if (byId.get(id).callFrame.functionName === '(root)') continue;
  total += n;
  const c = category(id);
  categories.set(c, (categories.get(c) ?? 0) + n);
  const frame = byId.get(id).callFrame;
  const where = frame.url === '' ? '' : ` ${path(frame.url).split('/').slice(-1)[0]}:${frame.lineNumber + 1}`;
  const key = `${frame.functionName || '(anonymous)'}${where}`;
  functions.set(key, (functions.get(key) ?? 0) + n);
}
const pct = (n) => `${((100 * n) / total).toFixed(1).padStart(5)} %`;
console.log(`${mode}: ${calls} calls on Node ${process.versions.node}, ${((elapsed * 1e6) / calls).toFixed(0)} ns a call ` +
  `under the profiler (a sample every ${intervalUs} µs, ${total} samples)`);
console.log('');
for (const c of ['clock', 'boundary', 'wasm', 'glue', 'tripgate', 'promises', 'gc', 'loop', 'other']) {
  console.log(`${c.padEnd(9)} ${pct(categories.get(c) ?? 0)}`);
}
console.log('');
console.log('self time by function:');
for (const [key, n] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, 15)) console.log(`${pct(n)}  ${key}`);
