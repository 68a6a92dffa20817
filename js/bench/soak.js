// Soak: many guarded calls and leaked permits through the package, then the heap after
// GC, the process RSS and the wasm linear memory, at the start and at the end.
//
//   node --expose-gc bench/soak.js            (SOAK_CALLS=10000000 SOAK_LEAKS=1000000)
//
// Phases (one breaker each, on the real clock):
//   execute          SOAK_CALLS / 2 calls without timeoutMs, 100 at a time; the function
//                    resolves with 200, 1 in 100 with a 503 response, 1 in 500 throws.
//   execute+timeout  SOAK_CALLS / 2 calls with timeoutMs: four fixed lengths (50, 250,
//                    1 000 and 10 000 ms) and, for every fifth call, a length computed per
//                    call (a deadline minus now: fractional, all distinct); 1 in 1 000 hangs
//                    until its timeout (the phase's time includes waiting for the last).
//   leaks            SOAK_LEAKS permits acquired and never recorded, with a reset (a new
//                    epoch) every 100 000, then the same again within one epoch.
// The end figures are taken once every timer has fired (the longest timeout is 10 s).
import { readFileSync } from 'node:fs';
import * as glue from '../pkg/web/tripgate_wasm.js';
import { CircuitBreaker, initSync } from '../src/web.js';

if (typeof globalThis.gc !== 'function') {
  console.error('soak: run with node --expose-gc');
  process.exit(2);
}
const CALLS = Number(process.env.SOAK_CALLS ?? 10_000_000);
const LEAKS = Number(process.env.SOAK_LEAKS ?? 1_000_000);

const module = new WebAssembly.Module(readFileSync(new URL('../pkg/web/tripgate_wasm_bg.wasm', import.meta.url)));
const exports = glue.initSync({ module }); // the instance's exports, for its memory
initSync({ module }); // the package, on the same instance

const MB = 2 ** 20;
const rows = [];
function sample(phase, calls, seconds) {
  globalThis.gc();
  globalThis.gc();
  const { heapUsed, rss } = process.memoryUsage();
  rows.push({
    phase,
    calls,
    seconds,
    heapMB: heapUsed / MB,
    rssMB: rss / MB,
    wasmMB: exports.memory.buffer.byteLength / MB,
  });
}

const ok = { status: 200 };
const busy = { status: 503 };
// A fresh promise per hung call, as a hung request would be (one shared never-settling
// promise would keep every call's reaction, which is the caller's memory, not ours).
const hang = () => new Promise(() => {});

function upstream(i) {
  if (i % 500 === 499) return () => Promise.reject(new Error('boom'));
  if (i % 100 === 99) return async () => busy;
  return async () => ok;
}

/**
 * Runs `calls` executes, 100 at a time, turning the event loop every 10 000; calls that
 * hang wait apart, for their timeout.
 */
async function phase(name, breaker, calls, options) {
  const started = performance.now();
  const batch = [];
  const hanging = [];
  for (let i = 0; i < calls; i += 100) {
    batch.length = 0;
    for (let n = i; n < i + 100; n++) {
      const fn = options === undefined ? upstream(n) : options.fn(n);
      const call = breaker.execute(fn, options?.of(n)).then(undefined, () => undefined);
      (fn === hang ? hanging : batch).push(call);
    }
    await Promise.all(batch);
    // Calls that settle at once leave the loop in microtasks: let timers run, as a
    // server's event loop would between requests.
    if (i % 10_000 === 0) await new Promise((resolve) => setImmediate(resolve));
  }
  await Promise.all(hanging);
  const seconds = (performance.now() - started) / 1_000;
  sample(name, calls, seconds);
  return seconds;
}

const breakerOptions = { failureRate: 50, failureThreshold: 1_000_000, minCalls: 100, cooldownMs: 5 };

// Warm up, then the starting figures.
{
  const warm = new CircuitBreaker(breakerOptions);
  await phase('warm-up', warm, 100_000);
  warm.dispose();
  rows.length = 0;
  sample('start', 0, 0);
}

const plain = new CircuitBreaker(breakerOptions);
await phase('execute', plain, CALLS / 2);

const FIXED = [50, 250, 1_000, 10_000];
const timed = new CircuitBreaker(breakerOptions);
const deadline = performance.now() + 60_000;
await phase('execute+timeout', timed, CALLS / 2, {
  fn: (n) => (n % 1_000 === 999 ? hang : upstream(n)),
  of: (n) => ({ timeoutMs: n % 5 === 4 ? Math.max(1, (deadline - performance.now()) % 2_000) : FIXED[n % 4] }),
});

{
  const leaky = new CircuitBreaker(breakerOptions);
  const started = performance.now();
  for (let i = 0; i < LEAKS; i++) {
    if (i % 100_000 === 0) leaky.reset();
    leaky.acquire();
  }
  sample('leaks, reset every 100 000', LEAKS, (performance.now() - started) / 1_000);
  rows.at(-1).outstanding = leaky.outstandingPermits;
  leaky.dispose();
  const held = new CircuitBreaker(breakerOptions);
  const started2 = performance.now();
  for (let i = 0; i < LEAKS; i++) held.acquire();
  sample('leaks, one epoch', LEAKS, (performance.now() - started2) / 1_000);
  rows.at(-1).outstanding = held.outstandingPermits;
  held.dispose();
}

// Let every timer fire (the longest is 10 s), then the end figures.
await new Promise((resolve) => setTimeout(resolve, 10_500));
sample('end (timers fired)', 0, 0);
const m = timed.metrics();
console.log(`node ${process.version}; ${CALLS} execute calls, ${LEAKS} leaked permits x 2`);
console.log('| phase | calls | s | calls/s | heap after GC (MB) | RSS (MB) | wasm memory (MB) | permits held |');
console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  const rate = r.seconds > 0 ? Math.round(r.calls / r.seconds).toLocaleString('en') : '';
  console.log(`| ${r.phase} | ${r.calls.toLocaleString('en')} | ${r.seconds ? r.seconds.toFixed(1) : ''} | ${rate} | ` +
    `${r.heapMB.toFixed(1)} | ${r.rssMB.toFixed(0)} | ${r.wasmMB.toFixed(1)} | ${r.outstanding ?? ''} |`);
}
console.log(`execute+timeout breaker: ${m.faultsTotal} faults (timeouts, 503s, throws), ${m.successesTotal} successes, ` +
  `${m.transitionsTotal} transitions, ${timed.outstandingPermits} permits still held; plain: ${plain.metrics().admittedTotal} admitted`);
