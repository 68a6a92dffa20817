// What the fleet tests share: members (each its own FleetStore, as separate processes
// would be) on fake clocks, lines and votes signed independently of the adapter, and
// waiting on what Redis does — by polling a condition against a deadline, never by
// sleeping for breaker time.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { CircuitBreaker } from '../src/node.js';
import { FleetStore } from '../src/fleet/index.js';
import { FakeClock } from './helpers.js';

export const KEY = 'a shared key of 32 bytes, really';
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `condition` every few ms until it holds; fails after `ms` with `what`. */
export async function waitFor(condition, what, ms = 5_000) {
  const end = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(2);
  }
}

let fleets = 0;
/** A fresh fleet name per test: tests share a server, never a fleet. */
export const fleetName = (label) => `t${++fleets}-${label}`;

let members = 0;
/** Store options for a new member process: its own stable name, fast reconciles. */
export const storeOptions = (url, extra = {}) => ({
  url,
  key: KEY,
  member: `member-${process.pid}-${++members}`,
  reconcileIntervalMs: 100,
  storeTimeoutMs: 200,
  maxBackoffMs: 50,
  ...extra,
});

/** The breaker options most tests use (a long probe timeout: the lease runs on Redis' clock). */
export const breakerOptions = (extra = {}) => ({
  fleetQuorum: 1,
  cooldownMs: 10_000,
  failureThreshold: 3,
  minCalls: 3,
  probeTimeoutMs: 30_000,
  halfOpenMaxProbes: 1,
  halfOpenRequiredSuccesses: 1,
  backoffFactor: 2,
  ...extra,
});

/**
 * A member: a breaker on its own fake clock (origins 1 000 s apart, as hosts' monotonic
 * clocks differ), its own store, joined to fleet `name`.
 */
export async function member(url, name, { breaker = {}, ...options } = {}) {
  const clock = new FakeClock();
  clock.now = 1_000_000 * (members + 1);
  const b = new CircuitBreaker({ ...breakerOptions(breaker), clock: clock.read });
  const transitions = [];
  b.on('transition', (t) => transitions.push(`${t.from}>${t.to}:${t.reason}`));
  const store = await FleetStore.connect(storeOptions(url, options));
  const fleet = store.join(name, b);
  return { breaker: b, clock, store, fleet, transitions };
}

/** `n` members of fleet `name`, connected. */
export async function fleetOf(n, url, name, options = {}) {
  const list = [];
  for (let i = 0; i < n; i++) list.push(await member(url, name, options));
  await connected(list);
  return list;
}

export async function connected(list) {
  for (const m of list) await waitFor(() => m.fleet.status().connected, 'a member connected');
}

export const closeAll = (list) => Promise.all(list.map((m) => m.store.close()));

/** `n` failing calls. */
export function trip(breaker, n = 3) {
  for (let i = 0; i < n; i++) {
    const permit = breaker.acquire();
    if (permit >= 0) breaker.record(permit, 503);
  }
}

/** Resolves when every member has applied an event of at least `generation`. */
export const allAt = (list, generation) =>
  waitFor(() => list.every((m) => m.breaker.fleetStatus().generation >= generation), `generation ${generation} everywhere`);

/** The wire's keys of fleet `name`. */
export function keys(name) {
  const prefix = `tripgate:{${name}}:`;
  return {
    gen: `${prefix}gen`,
    event: `${prefix}event`,
    votes: `${prefix}votes`,
    lease: `${prefix}lease`,
    channel: `${prefix}events`,
    waiters: `${prefix}waiters`,
    // The prefix of each member's own channel: `${wake}${memberId}`.
    wake: `${prefix}wake:`,
  };
}

const mac = (key, body) => createHmac('sha256', key).update(body).digest('hex');

/** A message line as the wire format writes it, signed with `key` (or `-`). */
export function line({ name, generation, kind, remainingMs = 0, origin = '0000000000abcdef' }, key = KEY) {
  const body = `tripgate1 ${name} ${generation} ${kind} ${remainingMs} ${origin}`;
  return `${body} ${key === null ? '-' : mac(key, body)}`;
}

/** A vote entry as the wire format writes it. */
export function vote(name, member, generation, key = KEY) {
  const body = `tripgate1 vote ${name} ${member} ${generation}`;
  return `${member} ${generation} ${key === null ? '-' : mac(key, body)}`;
}

/** Commands members sent the store (INFO commandstats): scripts, INCR, connecting, subscribing. */
export async function commandCalls(raw) {
  const sent = new Set(['evalsha', 'eval', 'script|load', 'incr', 'subscribe', 'ssubscribe', 'unsubscribe',
    'sunsubscribe', 'hello', 'ping', 'client|setinfo', 'select', 'auth']);
  const info = await raw.info('commandstats');
  let total = 0;
  for (const l of info.split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(l.trim());
    if (m && sent.has(m[1])) total += Number(m[2]);
  }
  return total;
}

/** Clients connected to the store. */
export async function connectedClients(raw) {
  const info = await raw.info('clients');
  return Number(/connected_clients:(\d+)/.exec(info)[1]);
}

/** Moves every member past its cooldown; each turns a caller away and asks for the lease. */
export async function probeRound(list) {
  for (const m of list) {
    m.clock.advance(m.breaker.metrics().cooldownRemainingMs);
    assert.equal(m.breaker.acquire() < 0, true, 'turned away while the lease is decided');
  }
  await waitFor(() => list.some((m) => m.breaker.fleetStatus().leaseHeld), 'a lease holder');
  const holders = list.filter((m) => m.breaker.fleetStatus().leaseHeld);
  assert.equal(holders.length, 1, 'one lease fleet-wide');
  return holders[0];
}
