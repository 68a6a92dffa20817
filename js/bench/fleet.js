// Fleet mode's cost on the call path: acquire + record with the breaker joined to a live
// fleet (a real redis-server, reconciling every 100 ms in the background) against the same
// breaker without fleet mode, in interleaved rounds so that drift in the machine's load
// hits both alike. FLEET.md rule 1: the same cost within noise.
//
//   node bench/fleet.js            BENCH_ROUNDS=15 BENCH_CALLS=200000 node bench/fleet.js
//
// Prints the median and range over rounds, in ns per acquire + record pair.
import { CircuitBreaker } from '../src/node.js';
import { joinFleet } from '../src/fleet/index.js';
import { startRedis } from '../test/redis-server.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 11);
const CALLS = Number(process.env.BENCH_CALLS ?? 200_000);

const redis = await startRedis();
const off = new CircuitBreaker();
const on = new CircuitBreaker({ fleetQuorum: 1 });
const member = await joinFleet(on, { url: redis.url, name: 'bench', reconcileIntervalMs: 100 });
if (member.status().degraded) throw new Error('the bench member did not reach redis-server');

const pair = (breaker) => () => breaker.record(breaker.acquire(), 200);
const workloads = { 'fleet mode off': pair(off), 'fleet mode on (joined, live)': pair(on) };
const samples = Object.fromEntries(Object.keys(workloads).map((name) => [name, []]));
for (const fn of Object.values(workloads)) for (let i = 0; i < CALLS; i++) fn();
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, fn] of Object.entries(workloads)) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < CALLS; i++) fn();
    samples[name].push(Number(process.hrtime.bigint() - start) / CALLS);
    // Let the member's background work (reconcile ticks, replies) run between rounds.
    await new Promise((resolve) => setImmediate(resolve));
  }
}
const reconciles = member.status().counters.reconciles;
await member.leave();
await redis.stop();
console.log(`Node ${process.version}, ${ROUNDS} rounds of ${CALLS} acquire + record pairs; ${reconciles} reconciles ran meanwhile`);
for (const [name, list] of Object.entries(samples)) {
  list.sort((a, b) => a - b);
  const fmt = (v) => v.toFixed(1);
  console.log(`${name.padEnd(30)} ${fmt(list[ROUNDS >> 1]).padStart(7)} ns  (${fmt(list[0])}-${fmt(list[ROUNDS - 1])})`);
}
