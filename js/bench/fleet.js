// Fleet mode's cost, against a real redis-server this script starts:
//
// 1. The call path: acquire + record with the breaker joined to a live fleet (reconciling
//    every 100 ms in the background) against the same breaker without fleet mode, in
//    interleaved rounds so that drift in the machine's load hits both alike. FLEET.md
//    rule 1: the same cost within noise.
// 2. Propagation: the open and close delays between two members (FLEET.md rule 2: p99 <=
//    50 ms on loopback), over BENCH_TRIPS rounds of trip, probe round, fleet close.
// 3. Scale (FLEET.md rule 14): 1, 50 and 500 fleet breakers in one process, one store,
//    idle (reconciling every second), then with a probe round under way (one member
//    probing, 9 waiting members in other stores turning callers away): connections the
//    store sees, this process's CPU, and the commands members sent per second (INFO
//    commandstats: scripts, INCR, subscriptions; not what a script runs inside).
//
//   node bench/fleet.js     BENCH_ROUNDS=15 BENCH_CALLS=200000 BENCH_WINDOW_MS=5000 node bench/fleet.js
import { createClient } from 'redis';
import { CircuitBreaker } from '../src/node.js';
import { FleetStore } from '../src/fleet/index.js';
import { FakeClock } from '../test/helpers.js';
import { startRedis } from '../test/redis-server.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 11);
const TRIPS = Number(process.env.BENCH_TRIPS ?? 50);
const CALLS = Number(process.env.BENCH_CALLS ?? 200_000);
const WINDOW_MS = Number(process.env.BENCH_WINDOW_MS ?? 5_000);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const until = async (condition) => {
  while (!condition()) await sleep(1);
};

const redis = await startRedis();
const raw = createClient({ url: redis.url });
await raw.connect();

// ---- 1. the call path ------------------------------------------------------------------
const off = new CircuitBreaker();
const on = new CircuitBreaker({ fleetQuorum: 1 });
const benchStore = await FleetStore.connect({ url: redis.url, reconcileIntervalMs: 100 });
const member = benchStore.join('bench', on);
if (!(await member.ready())) throw new Error('the bench member did not reach redis-server');

const pair = (breaker) => () => breaker.record(breaker.acquire(), 200);
const workloads = { 'fleet mode off': pair(off), 'fleet mode on (joined, live)': pair(on) };
const samples = Object.fromEntries(Object.keys(workloads).map((name) => [name, []]));
for (const fn of Object.values(workloads)) for (let i = 0; i < CALLS; i++) fn();
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, fn] of Object.entries(workloads)) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < CALLS; i++) fn();
    samples[name].push(Number(process.hrtime.bigint() - start) / CALLS);
    // Let the member's background work (reconciles, replies) run between rounds.
    await new Promise((resolve) => setImmediate(resolve));
  }
}
const reconciles = member.status().counts.reconciles;
await benchStore.close();

// ---- 2. propagation --------------------------------------------------------------------
// A trips, B opens; A (alone past its cooldown, on its own fake clock) takes the lease and
// graduates, B closes. Timed from the call that caused A's transition to B's listener, on
// one wall clock (both members are in this process, each with its own store).
const pairOf = async () => {
  const clock = new FakeClock();
  const breaker = new CircuitBreaker({ fleetQuorum: 1, cooldownMs: 5_000, halfOpenRequiredSuccesses: 1, clock: clock.read });
  const store = await FleetStore.connect({ url: redis.url });
  const fleet = store.join('propagation', breaker);
  await fleet.ready();
  return { clock, breaker, store, fleet };
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
  await until(() => a.breaker.fleetStatus().generation >= b.breaker.fleetStatus().generation);
  a.clock.advance(a.breaker.metrics().cooldownRemainingMs);
  a.breaker.acquire(); // half-open: a caller turned away, so the member asks for the lease
  await until(() => a.fleet.status().leaseHeld);
  const closed = next(b.breaker, 'closed');
  const t1 = performance.now();
  a.breaker.record(a.breaker.acquire(), 200);
  closes.push((await closed) - t1);
  await until(() => a.breaker.fleetStatus().generation >= b.breaker.fleetStatus().generation);
}
await a.store.close();
await b.store.close();

// ---- 3. scale --------------------------------------------------------------------------
/** Commands sent to the store: scripts, INCR, (un)subscribing (not the commands a script runs inside). */
const SENT = new Set(['evalsha', 'eval', 'script|load', 'incr', 'subscribe', 'ssubscribe', 'unsubscribe', 'sunsubscribe']);
async function commandCalls() {
  const info = await raw.info('commandstats');
  let total = 0;
  for (const line of info.split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line.trim());
    if (m && SENT.has(m[1])) total += Number(m[2]);
  }
  return total;
}
const clients = async () => Number(/connected_clients:(\d+)/.exec(await raw.info('clients'))[1]);

/** Commands/s the store served and this process's CPU share over one window. */
async function window() {
  const commands = await commandCalls();
  const cpu = process.cpuUsage();
  const start = performance.now();
  await sleep(WINDOW_MS);
  const elapsed = performance.now() - start;
  const used = process.cpuUsage(cpu);
  return {
    commandsPerS: ((await commandCalls()) - commands) / (elapsed / 1_000),
    cpuPercent: ((used.user + used.system) / 1_000 / elapsed) * 100,
  };
}

const scale = [];
for (const n of [1, 50, 500]) {
  const before = await clients();
  const store = await FleetStore.connect({ url: redis.url });
  const breakers = [];
  const fleets = [];
  for (let i = 0; i < n; i++) {
    const clock = new FakeClock();
    const breaker = new CircuitBreaker({ fleetQuorum: 1, cooldownMs: 5_000, probeTimeoutMs: 30_000, clock: clock.read });
    breakers.push({ breaker, clock });
    fleets.push(store.join(`scale-${n}-${i}`, breaker));
  }
  for (const fleet of fleets) await fleet.ready(10_000);
  const connections = (await clients()) - before;
  const idle = await window();
  // A probe round in fleet 0: nine waiting members in stores of their own keep turning
  // callers away while this process's member holds the lease with its probe out.
  const waiting = [];
  for (let i = 0; i < 9; i++) {
    const clock = new FakeClock();
    const breaker = new CircuitBreaker({ fleetQuorum: 1, cooldownMs: 5_000, probeTimeoutMs: 30_000, clock: clock.read });
    const other = await FleetStore.connect({ url: redis.url });
    const fleet = other.join(`scale-${n}-0`, breaker);
    await fleet.ready();
    waiting.push({ breaker, clock, store: other });
  }
  const holder = breakers[0];
  for (let f = 0; f < 5; f++) holder.breaker.record(holder.breaker.acquire(), 503);
  await until(() => waiting.every((w) => w.breaker.state === 'open'));
  for (const m of [holder, ...waiting]) m.clock.advance(m.breaker.metrics().cooldownRemainingMs);
  holder.breaker.acquire();
  await until(() => fleets[0].status().leaseHeld);
  const probe = holder.breaker.acquire();
  const busy = setInterval(() => {
    for (const w of waiting) w.breaker.acquire();
  }, 1);
  const round = await window();
  clearInterval(busy);
  holder.breaker.record(probe, 200);
  for (const w of waiting) await w.store.close();
  await store.close();
  scale.push({ n, connections, idle, round });
}
await raw.close();
await redis.stop();

// ---- report ----------------------------------------------------------------------------
console.log(`Node ${process.version}, ${ROUNDS} rounds of ${CALLS} acquire + record pairs; ${reconciles} reconciles ran meanwhile`);
for (const [name, list] of Object.entries(samples)) {
  list.sort((x, y) => x - y);
  const fmt = (v) => v.toFixed(1);
  console.log(`${name.padEnd(30)} ${fmt(list[ROUNDS >> 1]).padStart(7)} ns  (${fmt(list[0])}-${fmt(list[ROUNDS - 1])})`);
}
const quantile = (list, q) => list.toSorted((x, y) => x - y)[Math.min(list.length - 1, Math.floor(q * list.length))];
for (const [name, list] of [['open propagation', opens], ['close propagation', closes]]) {
  console.log(`${name.padEnd(30)} p50 ${quantile(list, 0.5).toFixed(2)} ms, p99 ${quantile(list, 0.99).toFixed(2)} ms, max ${Math.max(...list).toFixed(2)} ms over ${list.length}`);
}
console.log(`\nfleet breakers in one process (one store), ${WINDOW_MS / 1_000} s windows, reconcile-interval 1 s:`);
console.log('breakers  connections  idle commands/s  idle CPU  probe round commands/s  probe round CPU');
for (const { n, connections, idle, round } of scale) {
  console.log(`${String(n).padStart(8)}  ${String(connections).padStart(11)}  ${idle.commandsPerS.toFixed(1).padStart(15)}  ${`${idle.cpuPercent.toFixed(2)} %`.padStart(8)}  ${round.commandsPerS.toFixed(1).padStart(22)}  ${`${round.cpuPercent.toFixed(2)} %`.padStart(15)}`);
}
