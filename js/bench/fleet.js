// Fleet mode's cost on the call path: acquire + record with the breaker joined to a live
// fleet (a real redis-server, reconciling every 100 ms in the background) against the same
// breaker without fleet mode, in interleaved rounds so that drift in the machine's load
// hits both alike. FLEET.md rule 1: the same cost within noise.
//
//   node bench/fleet.js            BENCH_ROUNDS=15 BENCH_CALLS=200000 node bench/fleet.js
//
// Prints the median and range over rounds, in ns per acquire + record pair; then the open
// and close propagation delays between two members (FLEET.md rule 2: p99 <= 50 ms on
// loopback), over BENCH_TRIPS rounds of trip, probe round, fleet close.
import { CircuitBreaker } from '../src/node.js';
import { FakeClock } from '../test/helpers.js';
import { joinFleet } from '../src/fleet/index.js';
import { startRedis } from '../test/redis-server.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 11);
const TRIPS = Number(process.env.BENCH_TRIPS ?? 50);
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

// Propagation: A trips, B opens; A (alone past its cooldown, on its own fake clock) takes
// the lease and graduates, B closes. Timed from the call that caused A's transition to
// B's listener, on one wall clock (both members are in this process, each with its own
// connections).
const pairOf = async () => {
  const clock = new FakeClock();
  const breaker = new CircuitBreaker({ fleetQuorum: 1, cooldownMs: 5_000, clock: clock.read });
  return { clock, breaker, member: await joinFleet(breaker, { url: redis.url, name: 'propagation', reconcileIntervalMs: 1_000 }) };
};
const a = await pairOf();
const b = await pairOf();
const next = (breaker, state) => new Promise((resolve) => breaker.once(state, () => resolve(performance.now())));
const opens = [];
const closes = [];
for (let i = 0; i < TRIPS; i++) {
  const opened = next(b.breaker, 'open');
  const t0 = performance.now();
  for (let f = 0; f < 5; f++) a.breaker.record(a.breaker.acquire(), 503);
  opens.push((await opened) - t0);
  // The publisher applies its own event when it arrives, like everyone; only then may its
  // fake clock jump past the cooldown.
  while (a.breaker.fleetStatus().generation < b.breaker.fleetStatus().generation) await new Promise((resolve) => setTimeout(resolve, 1));
  a.clock.advance(5_000);
  a.breaker.acquire(); // half-open: the member goes for the lease
  while (!a.member.status().leaseHeld) await new Promise((resolve) => setTimeout(resolve, 1));
  a.breaker.record(a.breaker.acquire(), 200);
  const closed = next(b.breaker, 'closed');
  const t1 = performance.now();
  a.breaker.record(a.breaker.acquire(), 200);
  closes.push((await closed) - t1);
  while (a.breaker.fleetStatus().generation < b.breaker.fleetStatus().generation) await new Promise((resolve) => setTimeout(resolve, 1));
}
await a.member.leave();
await b.member.leave();
await redis.stop();
console.log(`Node ${process.version}, ${ROUNDS} rounds of ${CALLS} acquire + record pairs; ${reconciles} reconciles ran meanwhile`);
for (const [name, list] of Object.entries(samples)) {
  list.sort((a, b) => a - b);
  const fmt = (v) => v.toFixed(1);
  console.log(`${name.padEnd(30)} ${fmt(list[ROUNDS >> 1]).padStart(7)} ns  (${fmt(list[0])}-${fmt(list[ROUNDS - 1])})`);
}
const quantile = (list, q) => list.toSorted((x, y) => x - y)[Math.min(list.length - 1, Math.floor(q * list.length))];
for (const [name, list] of [['open propagation', opens], ['close propagation', closes]]) {
  console.log(`${name.padEnd(30)} p50 ${quantile(list, 0.5).toFixed(2)} ms, p99 ${quantile(list, 0.99).toFixed(2)} ms, max ${Math.max(...list).toFixed(2)} ms over ${list.length}`);
}
