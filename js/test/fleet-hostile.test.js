// Fleet mode from Node against uneven traffic and a hostile or broken store, on a real
// redis-server: each test is one finding of issue 20's hostile pass (the Rust adapter's
// counterparts are redis/tests/hostile.rs), reproduced the way it was found, and what
// must hold instead. Breaker time is each member's fake clock; what Redis does is awaited
// by polling a condition, never by sleeping for breaker time.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { CircuitBreaker, Rejected } from '../src/node.js';
import { FleetStore } from '../src/fleet/index.js';
import { fleetTables } from '../src/fleet/protocol.js';
import {
  breakerOptions, closeAll, commandCalls, connected, connectedClients, fleetName, fleetOf, keys, line,
  member, probeRound, sleep, storeOptions, trip, vote, waitFor,
} from './fleet-helpers.js';
import { startRedis, suiteRedis } from './redis-server.js';

/** Opens the fleet through `tripper` and waits until every member applied it (the tripper too). */
async function opened(tripper, list) {
  const generation = tripper.breaker.fleetStatus().generation + 1;
  trip(tripper.breaker);
  for (const m of list) {
    await waitFor(() => m.breaker.fleetStatus().generation >= generation && m.breaker.state === 'open', 'the open applied');
  }
}

/**
 * A fleet member in a child process (fleet-child-member.js), driven by lines on its stdin:
 * `next` reads its next JSON line, `ask` sends a command and reads the answer, `frozen`
 * polls its status until `check` holds (5 s at most).
 */
function childMember(url, name, config) {
  const child = spawn(process.execPath, [fileURLToPath(new URL('./fleet-child-member.js', import.meta.url)),
    url, name, `frozen-${process.pid}`, JSON.stringify(config)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async () => JSON.parse((await lines.next()).value);
  const ask = async (command) => {
    child.stdin.write(`${command}\n`);
    return next();
  };
  const frozen = async (what, check) => {
    const end = Date.now() + 5_000;
    for (;;) {
      const { status } = await ask('status');
      if (check(status)) return status;
      if (Date.now() > end) throw new Error(`timed out waiting for the child: ${what} (${JSON.stringify(status)})`);
      await sleep(5);
    }
  };
  return { child, next, ask, frozen };
}

/** Thaws the child if frozen, closes its stdin and waits for it to exit. */
async function stopChild(child) {
  child.kill('SIGCONT');
  child.stdin.end();
  await new Promise((resolve) => {
    if (child.exitCode !== null) resolve();
    else child.once('exit', resolve);
  });
}

const pastCooldown = (list) => {
  for (const m of list) m.clock.advance(m.breaker.metrics().cooldownRemainingMs);
};

describe('fleet mode against uneven traffic and a hostile store', () => {
  let redis;
  let raw;
  suiteRedis(['--proto-max-bulk-len', '64mb'], (server, client) => {
    redis = server;
    raw = client;
  });

  test('1. idle members never hold the lease a busy one needs', async () => {
    const members = await fleetOf(10, redis.url, fleetName('idle'));
    const [busy, ...idle] = members;
    await opened(busy, members);
    pastCooldown(members);
    // Idle members see no calls; the busy one's caller is turned away once, and it asks.
    const asked = performance.now();
    assert.equal(busy.breaker.acquire(), Rejected.PROBING_ELSEWHERE);
    await waitFor(() => busy.breaker.fleetStatus().leaseHeld, 'the busy member holds the lease');
    const waited = performance.now() - asked;
    assert.ok(waited < 1_000, `a store round trip, not a probe timeout: ${waited} ms`);
    for (const m of idle) {
      assert.equal(m.breaker.fleetStatus().leaseHeld, false);
      assert.equal(m.fleet.status().leaseHeld, false);
      assert.equal(m.breaker.fleetStatus().wantsLease, false, 'an idle member never asks');
    }
    busy.breaker.record(busy.breaker.acquire(), 200);
    for (const m of members) await waitFor(() => m.breaker.state === 'closed', 'the fleet closed');
    await closeAll(members);
  });

  test('1. the lease goes back as soon as no probe is out, and a holder no probe came to gives it back', async () => {
    const name = fleetName('giveback');
    const [a, b] = await fleetOf(2, redis.url, name, { breaker: { halfOpenRequiredSuccesses: 2, probeTimeoutMs: 900 } });
    await opened(a, [a, b]);
    pastCooldown([a, b]);
    assert.equal(a.breaker.acquire(), Rejected.PROBING_ELSEWHERE);
    await waitFor(() => a.breaker.fleetStatus().leaseHeld, 'A holds the lease');
    const lease = keys(name).lease;
    assert.match(await raw.get(lease), new RegExp(`^${a.fleet.status().holder} \\d+$`));
    // One success of two: still half-open, no probe out, the lease goes back.
    a.breaker.record(a.breaker.acquire(), 200);
    assert.equal(a.breaker.state, 'half-open');
    await waitFor(async () => (await raw.exists(lease)) === 0, 'the lease given back');
    assert.equal(a.breaker.fleetStatus().leaseHeld, false);
    // B asks, takes it, and then no call comes: after a third of the lease (300 ms), B
    // gives it back instead of renewing.
    assert.equal(b.breaker.acquire(), Rejected.PROBING_ELSEWHERE);
    await waitFor(() => b.breaker.fleetStatus().leaseHeld, 'B holds the lease');
    const taken = performance.now();
    await waitFor(async () => (await raw.exists(lease)) === 0, 'B gave the idle lease back');
    const held = performance.now() - taken;
    assert.ok(held < 900, `given back before it ran out: ${held} ms`);
    await closeAll([a, b]);
  });

  test('9. no polling: with no deadline near, the breaker wakes its member: a caller turned away takes the lease, the holder runs the round, and its close gives the lease back', async () => {
    const name = fleetName('woken');
    const lease = keys(name).lease;
    // Reads back once a minute, a lease of 30 s: nothing but the breaker wakes the member.
    const [a, b] = await fleetOf(2, redis.url, name, {
      reconcileIntervalMs: 60_000,
      breaker: { halfOpenRequiredSuccesses: 2, probeTimeoutMs: 30_000 },
    });
    await opened(a, [a, b]);
    pastCooldown([a, b]);
    // A caller turned away, half-open all along: the member asks at once.
    const asked = performance.now();
    assert.equal(a.breaker.acquire(), Rejected.PROBING_ELSEWHERE);
    await waitFor(() => a.breaker.fleetStatus().leaseHeld, 'A holds the lease', 2_000);
    assert.ok(performance.now() - asked < 1_000);
    const takes = a.fleet.status().counts.leases;
    // One success of two: the round goes on in A, on the lease it holds.
    a.breaker.record(a.breaker.acquire(), 200);
    assert.equal(a.breaker.state, 'half-open');
    assert.equal(a.breaker.fleetStatus().leaseHeld, true);
    const second = a.breaker.acquire();
    assert.ok(CircuitBreaker.isProbe(second), 'the holder\'s next caller is its next probe');
    // The second closes the fleet, and the close gives the lease back.
    a.breaker.record(second, 200);
    await waitFor(() => b.breaker.state === 'closed', 'the fleet closed');
    await waitFor(async () => (await raw.exists(lease)) === 0, 'the lease given back', 2_000);
    assert.equal(a.fleet.status().counts.leases, takes, 'one round, one take');
    await closeAll([a, b]);
  });

  test('2. a member frozen (SIGSTOP) while holding the lease leads nothing when thawed (SIGCONT): its lapsed lease publishes nothing, and after a survivor closed the fleet it does not re-open it', async () => {
    const name = fleetName('frozen');
    const config = breakerOptions({ probeTimeoutMs: 1_000 });
    const { child, next, ask, frozen } = childMember(redis.url, name, config);
    const gen = async () => raw.get(keys(name).gen);
    /**
     * The child takes the lease and sends a probe whose call times out in `ms`; then it is
     * frozen, until the survivor holds the lease and has its own probe out (returned).
     */
    const freezeHolding = async (survivor, ms) => {
      survivor.clock.advance(survivor.breaker.metrics().cooldownRemainingMs);
      const { status } = await ask('status');
      assert.equal(status.state, 'open');
      await ask('advance 100000');
      assert.deepEqual((await ask('acquire')).reply, { rejected: 'probing-elsewhere' });
      await frozen('the child holds the lease', (s) => s.breakerLease && s.leaseHeld);
      assert.equal((await ask('acquire')).reply.probe, true);
      await ask(`time-out ${ms}`);
      child.kill('SIGSTOP');
      // The survivor's caller asks; the lease is the frozen member's until it runs out on
      // the store's clock, then the survivor's.
      assert.equal(survivor.breaker.acquire(), Rejected.PROBING_ELSEWHERE);
      await waitFor(() => survivor.breaker.fleetStatus().leaseHeld, 'the survivor holds the lease');
      const probe = survivor.breaker.acquire();
      assert.ok(CircuitBreaker.isProbe(probe));
      return probe;
    };
    try {
      assert.equal((await next()).ready, true);
      const survivor = await member(redis.url, name, { breaker: { probeTimeoutMs: 1_000 } });
      await connected([survivor]);
      await opened(survivor, [survivor]);
      await frozen('the open applied', (s) => s.generation === 1);

      // Thawed while the survivor's round goes on: the frozen member's probe times out long
      // past its lease. Its round led nothing: it opens alone, and publishes nothing.
      const first = await freezeHolding(survivor, 300);
      child.kill('SIGCONT');
      await frozen('the timed-out probe', (s) => s.transitions.includes('half-open>open:probe-timeout'));
      const reads = (await ask('status')).status.counts.reconciles;
      await frozen('three reads back', (s) => s.counts.reconciles >= reads + 3);
      assert.equal(await gen(), '1', 'a lapsed lease published nothing');
      assert.equal(survivor.breaker.state, 'half-open');
      assert.ok(survivor.breaker.fleetStatus().leaseHeld, 'the survivor\'s round goes on');
      survivor.breaker.record(first, 503);
      await frozen('the survivor\'s re-open applied', (s) => s.generation === 2);
      await waitFor(() => survivor.breaker.fleetStatus().generation === 2, 'the survivor applied its own re-open');

      // Thawed after the survivor closed the fleet: whatever the frozen member reads first
      // (the close, or its probe's time-out), the fleet stays closed.
      survivor.breaker.record(await freezeHolding(survivor, 300), 200);
      await waitFor(async () => (await gen()) === '3', 'the close published');
      assert.equal(survivor.breaker.state, 'closed');
      child.kill('SIGCONT');
      const thawed = await frozen('the close applied', (s) => s.generation === 3 && s.connected);
      await frozen('three more reads back', (s) => s.counts.reconciles >= thawed.counts.reconciles + 3);
      assert.equal(await gen(), '3', 'nothing published after the close');
      assert.match(await raw.get(keys(name).event), / 3 close 0 /);
      assert.equal(survivor.breaker.state, 'closed');
      assert.equal(survivor.transitions.at(-1), 'half-open>closed:probes-succeeded');
      await closeAll([survivor]);
    } finally {
      await stopChild(child);
    }
  });

  test('3. a stored open lasts at most the least of its TTL, its signed time and the member\'s longest opening', async () => {
    const tenYearsMs = 10 * 365 * 24 * 3_600_000;
    for (const [label, remainingMs, mostMs] of [['replayed-long', tenYearsMs, 60_000], ['replayed-short', 5_000, 5_000]]) {
      const name = fleetName(label);
      await raw.set(keys(name).gen, '998');
      await raw.set(keys(name).event, line({ name, generation: 998, kind: 'open', remainingMs }), { PX: tenYearsMs });
      const m = await member(redis.url, name, { breaker: { maxCooldownMs: 60_000 } });
      await waitFor(() => m.breaker.state === 'open', 'the stored open applied');
      const left = m.breaker.metrics().cooldownRemainingMs;
      assert.ok(left <= mostMs, `${label}: open for ${left} ms, at most ${mostMs}`);
      await closeAll([m]);
    }
  });

  test('4. a lease key with garbage, without an expiry, of another type or for ten years blocks nothing', async () => {
    const someone = '0123456789abcdef0123456789abcdef';
    for (const kind of ['garbage', 'holder-no-expiry', 'hash', 'holder-ten-years']) {
      const name = fleetName(`lease-${kind}`);
      const lease = keys(name).lease;
      const [a, b] = await fleetOf(2, redis.url, name, { breaker: { probeTimeoutMs: 1_000 } });
      await opened(a, [a, b]);
      if (kind === 'garbage') await raw.set(lease, 'not a member');
      else if (kind === 'holder-no-expiry') await raw.set(lease, someone);
      else if (kind === 'hash') await raw.hSet(lease, 'a', 'b');
      else await raw.set(lease, `${someone} ${Date.now() + 10 * 365 * 86_400_000}`);
      const before = await commandCalls(raw);
      const started = performance.now();
      pastCooldown([a, b]);
      assert.equal(a.breaker.acquire(), Rejected.PROBING_ELSEWHERE);
      await waitFor(() => a.breaker.fleetStatus().leaseHeld, `${kind}: A holds the lease`);
      const took = performance.now() - started;
      assert.ok(took <= 1_500, `${kind}: ${took} ms`);
      a.breaker.record(a.breaker.acquire(), 200);
      await waitFor(() => b.breaker.state === 'closed', `${kind}: B closed`);
      const commands = (await commandCalls(raw)) - before;
      // Two members reading back every 100 ms; a take or two, a close (a generation and a
      // publish), the lease given back: dozens, not thousands.
      const reads = 2 * (Math.floor((performance.now() - started) / 100) + 2);
      assert.ok(commands <= reads + 30, `${kind}: ${commands} commands in ${took} ms`);
      await closeAll([a, b]);
    }
  });

  test('5. a malformed generation counter is counted and repaired, never published past; no reconnect loop', async () => {
    for (const value of ['abc', '1.5', '9223372036854775807', '-5', '9007199254740991', 'a hash']) {
      const name = fleetName('gen');
      const gen = keys(name).gen;
      if (value === 'a hash') await raw.hSet(gen, 'a', 'b');
      else await raw.set(gen, value);
      const [a, b] = await fleetOf(2, redis.url, name);
      trip(a.breaker);
      await waitFor(() => b.breaker.state === 'open', `${value}: B opened by the fleet`);
      const stored = await raw.get(gen);
      assert.ok(/^[1-9][0-9]*$/.test(stored) && Number(stored) < 2 ** 53, `${value} repaired to ${stored}`);
      const generation = b.breaker.fleetStatus().generation;
      assert.ok(generation >= 1 && generation < 2 ** 53, `${value}: ${generation}`);
      // Whichever member read the counter first counted and repaired it.
      const noticed = (m) => m.fleet.status().counts.ignored['malformed-generation'] + m.fleet.status().counts.repairs;
      assert.ok(noticed(a) + noticed(b) >= 1, `${value}: ${JSON.stringify([a.fleet.status(), b.fleet.status()])}`);
      // Refused commands are no outage: one session all along.
      assert.equal(a.fleet.status().connects, 1, value);
      assert.equal(b.fleet.status().connects, 1, value);
      await closeAll([a, b]);
    }
  });

  test('6. votes cannot be forged or doubled: made-up, mis-signed and junk votes and a restarted member are no quorum', async () => {
    const name = fleetName('votes');
    const votes = keys(name).votes;
    // A votes key of the wrong type first: the first vote replaces it.
    await raw.set(votes, 'not a set');
    const restarting = { member: `pod-a-${process.pid}`, breaker: { fleetQuorum: 2 } };
    let a = await member(redis.url, name, restarting);
    const b = await member(redis.url, name, { breaker: { fleetQuorum: 2 } });
    await connected([a, b]);
    trip(a.breaker);
    await waitFor(async () => (await raw.type(votes)) === 'zset' && (await raw.zCard(votes)) === 1, 'A\'s vote stored');
    const fake = '00000000deadbeef';
    for (const entry of [vote(name, fake, 0, null), vote(name, fake, 0, 'a guessed key, also 32 bytes long'), fake]) {
      await raw.zAdd(votes, { score: Date.now(), value: entry });
    }
    // A restarts (a new process, the same member name) and trips again.
    await a.store.close();
    a = await member(redis.url, name, restarting);
    await connected([a]);
    trip(a.breaker);
    await waitFor(() => a.fleet.status().counts.ignored.forged + a.fleet.status().counts.ignored.unsigned >= 2, 'the made-up votes read and ignored');
    const reads = b.fleet.status().counts.reconciles;
    await waitFor(() => b.fleet.status().counts.reconciles >= reads + 3, 'three reads back');
    assert.equal(b.breaker.state, 'closed', 'one member is no quorum');
    assert.equal(await raw.get(keys(name).gen), null, 'nothing published below the quorum');
    // A second member does make the quorum.
    trip(b.breaker);
    await waitFor(() => a.breaker.fleetStatus().generation >= 1 && b.breaker.fleetStatus().generation >= 1, 'the fleet opened');
    await closeAll([a, b]);
  });

  test('7. a 10 MiB message and a 30 MiB stored value are dropped unread', async () => {
    const name = fleetName('huge');
    const [a] = await fleetOf(1, redis.url, name);
    await raw.publish(keys(name).channel, ' '.repeat(10 << 20));
    await waitFor(() => a.fleet.status().counts.ignored.garbage === 1, 'counted as garbage');
    await raw.set(keys(name).event, 'x'.repeat(30 << 20));
    await waitFor(() => a.fleet.status().counts.ignored.garbage === 2, 'the stored value counted once');
    const sent = async () => Number(/total_net_output_bytes:(\d+)/.exec(await raw.info('stats'))[1]);
    const before = await sent();
    const reads = a.fleet.status().counts.reconciles;
    await waitFor(() => a.fleet.status().counts.reconciles >= reads + 5, 'five reads back');
    const out = (await sent()) - before;
    assert.ok(out < 64 << 10, `${out} bytes sent for five reads of a 30 MiB value`);
    assert.equal(a.fleet.status().counts.ignored.garbage, 2);
    assert.equal(a.breaker.state, 'closed');
    await closeAll([a]);
  });

  test('9. waiting members cost a few commands, and one store serves fifty fleets on two connections', async () => {
    const members = await fleetOf(10, redis.url, fleetName('waiting'));
    await opened(members[0], members);
    const holder = await probeRound(members);
    const probe = holder.breaker.acquire();
    assert.ok(CircuitBreaker.isProbe(probe));
    // Every waiting member keeps turning callers away; the holder keeps its probe out.
    const before = await commandCalls(raw);
    const started = performance.now();
    let turnedAway = 0;
    while (performance.now() - started < 500) {
      for (const m of members) if (m.breaker.acquire() === Rejected.PROBING_ELSEWHERE) turnedAway++;
      await sleep(1);
    }
    const commands = (await commandCalls(raw)) - before;
    const reads = 10 * (Math.floor((performance.now() - started) / 100) + 1);
    assert.ok(turnedAway > 1_000, `${turnedAway} callers turned away`);
    assert.ok(commands <= reads + 10, `${commands} commands in ${performance.now() - started} ms`);
    holder.breaker.record(probe, 200);
    await closeAll(members);

    // One process, fifty fleets: one command and one subscriber connection.
    const clientsBefore = await connectedClients(raw);
    const store = await FleetStore.connect(storeOptions(redis.url));
    const fleets = [];
    for (let i = 0; i < 50; i++) fleets.push(store.join(fleetName('many'), new CircuitBreaker(breakerOptions())));
    for (const fleet of fleets) assert.equal(await fleet.ready(), true);
    assert.equal(await connectedClients(raw), clientsBefore + 2);
    // Idle, each reads back at its reconcile rate (10/s), no more.
    const calls = await commandCalls(raw);
    const reads0 = fleets.reduce((n, f) => n + f.status().counts.reconciles, 0);
    const t0 = performance.now();
    await waitFor(() => fleets.every((f) => f.status().counts.reconciles >= 3), 'three reads back each');
    await waitFor(() => performance.now() - t0 >= 300, '300 ms');
    const idle = (await commandCalls(raw)) - calls;
    const readsDone = fleets.reduce((n, f) => n + f.status().counts.reconciles, 0) - reads0;
    assert.ok(idle <= readsDone + 5, `${idle} commands for ${readsDone} reads back`);
    await store.close();
  });
});

describe('a store that refuses every session', () => {
  test('5. is retried with a growing backoff, not in a loop', async () => {
    // An ACL user allowed to connect and subscribe, but not to run scripts: every session
    // comes up and fails at its first read.
    const redis = await startRedis({
      extra: ['--user', 'default', 'off', '--user', 'app', 'on', '>pw', '~*', '&*', '+@all', '-evalsha', '-eval'],
    });
    try {
      const url = `redis://app:pw@127.0.0.1:${redis.port}`;
      const store = await FleetStore.connect(storeOptions(url, { maxBackoffMs: 1_000 }));
      const breaker = new CircuitBreaker(breakerOptions());
      const fleet = store.join(fleetName('refused'), breaker);
      const end = performance.now() + 2_000;
      while (performance.now() < end) {
        assert.equal(fleet.status().connected, false);
        await sleep(20);
      }
      const { connects } = fleet.status();
      // 10 ms, doubling to 1 s (jittered): about 8 sessions in 2 s.
      assert.ok(connects >= 2 && connects <= 12, `${connects} sessions in 2 s`);
      assert.match(store.lastError, /NOPERM/);
      assert.equal(breaker.state, 'closed');
      await store.close();
    } finally {
      await redis.stop();
    }
  });
});

describe('options and joining', () => {
  const url = 'redis://127.0.0.1:1';
  const refuses = async (options, option, Type, words) => {
    await assert.rejects(FleetStore.connect(options), (e) => {
      assert.ok(e instanceof Type, `${option}: ${e}`);
      assert.equal(e.option, option);
      assert.ok(e.message.includes(option), e.message);
      if (words !== undefined) assert.ok(e.message.includes(words), `${JSON.stringify(e.message)} lacks ${JSON.stringify(words)}`);
      return true;
    }, `${option}: ${JSON.stringify(options)}`);
  };

  test('the durations\' bounds are the core\'s, the same as the Rust adapter\'s: 10 ms – 1 h, 1 ms – 60 s, 10 ms – 60 s', async () => {
    const rust = {
      reconcileIntervalMs: [1_000, 10, 3_600_000],
      storeTimeoutMs: [250, 1, 60_000],
      maxBackoffMs: [1_000, 10, 60_000],
    };
    const core = { reconcileIntervalMs: 'reconcile-interval', storeTimeoutMs: 'store-timeout', maxBackoffMs: 'max-backoff' };
    for (const [option, [defaultMs, minMs, maxMs]] of Object.entries(rust)) {
      const bounds = fleetTables.options[core[option]];
      assert.deepEqual([bounds.defaultMs, bounds.minMs, bounds.maxMs], [defaultMs, minMs, maxMs], option);
      for (const ok of [minMs, maxMs]) await (await FleetStore.connect({ url, [option]: ok })).close();
      const rule = `${option} must be between ${minMs} ms and ${maxMs} ms`;
      for (const bad of [minMs - 0.5, maxMs + 1, 0, -1, NaN, Infinity, 2 ** 31, 2 ** 53]) {
        await refuses({ url, [option]: bad }, option, RangeError, rule);
      }
      await refuses({ url, [option]: '1000' }, option, TypeError);
    }
  });

  test('a reconcile interval of an hour is an hour, not a 1 ms timer', async () => {
    const redis = await startRedis();
    try {
      const store = await FleetStore.connect(storeOptions(redis.url, { reconcileIntervalMs: 3_600_000 }));
      const fleet = store.join(fleetName('hour'), new CircuitBreaker(breakerOptions()));
      assert.equal(await fleet.ready(), true);
      const t0 = performance.now();
      await waitFor(() => performance.now() - t0 > 300, '300 ms');
      assert.equal(fleet.status().counts.reconciles, 1, 'the read on connecting, and none since');
      await store.close();
    } finally {
      await redis.stop();
    }
  });

  test('every other option is checked, each error naming it', async () => {
    await refuses({ url: 5 }, 'url', TypeError);
    await refuses({ url: 'http://127.0.0.1:1' }, 'url', RangeError);
    await refuses({ url: 'not a url' }, 'url', RangeError);
    await refuses({ url: 'redis://u:hunter2@127.0.0.1:1/2' }, 'url', RangeError, 'database 2: fleet mode runs on database 0 only');
    await assert.rejects(FleetStore.connect({ url: 'redis://u:hunter2@127.0.0.1:1/2' }), (e) => !e.message.includes('hunter2'));
    await (await FleetStore.connect({ url: 'redis://127.0.0.1:1/0' })).close();
    await refuses({ url, nodes: [url] }, 'nodes', TypeError);
    await refuses({ nodes: [] }, 'nodes', TypeError);
    await refuses({ nodes: ['redis://127.0.0.1:1/3'] }, 'nodes', RangeError, 'database 3');
    await refuses({ url, key: 'fifteen bytes!!' }, 'key', RangeError, `at least ${fleetTables.minKeyBytes} bytes`);
    await refuses({ url, key: 42 }, 'key', TypeError);
    await (await FleetStore.connect({ url, key: new Uint8Array(16) })).close();
    await refuses({ url, member: '' }, 'member', RangeError);
    await refuses({ url, member: 'x'.repeat(257) }, 'member', RangeError);
    await refuses({ url, member: 7 }, 'member', TypeError);
    await refuses({ url, reconcile: 5 }, 'reconcile', TypeError);
    await refuses({ url, tls: { ca: 'x' } }, 'tls', RangeError);
    await refuses({ url: 'rediss://127.0.0.1:1', tls: 'yes' }, 'tls', TypeError);
    await refuses({ url: 'rediss://127.0.0.1:1', tls: { passphrase: 'p' } }, 'tls', TypeError);
  });

  test('a member name is a stable id, the wire\'s (64-bit FNV-1a, as every adapter derives it)', async () => {
    const fnv = (text) => {
      let hash = 0xcbf29ce484222325n;
      for (const byte of Buffer.from(text)) hash = ((hash ^ BigInt(byte)) * 0x100000001b3n) & 0xffffffffffffffffn;
      return (hash === 0n ? 1n : hash).toString(16).padStart(16, '0');
    };
    const a = await FleetStore.connect({ url, member: 'pod-7' });
    const b = await FleetStore.connect({ url, member: 'pod-7' });
    const c = await FleetStore.connect({ url });
    const d = await FleetStore.connect({ url });
    assert.equal(a.memberId, fnv('pod-7'));
    assert.equal(b.memberId, a.memberId);
    assert.match(c.memberId, /^[0-9a-f]{16}$/);
    assert.notEqual(c.memberId, d.memberId, 'random by default');
    await Promise.all([a, b, c, d].map((s) => s.close()));
  });

  test('a breaker joins once, in any store; a store has one member per fleet', async () => {
    const store = await FleetStore.connect({ url });
    const other = await FleetStore.connect({ url });
    const b = new CircuitBreaker({ fleetQuorum: 1 });
    assert.throws(() => store.join('x', {}), (e) => e instanceof TypeError && e.option === 'breaker');
    assert.throws(() => store.join('x', new CircuitBreaker()), (e) => e.option === 'breaker' && /fleetQuorum/.test(e.message));
    assert.throws(() => store.join('has space', b), (e) => e instanceof RangeError && e.option === 'name');
    assert.throws(() => store.join('x'.repeat(129), b), (e) => e.option === 'name');
    assert.throws(() => store.join(7, b), (e) => e instanceof TypeError && e.option === 'name');
    const fleet = store.join('x', b);
    assert.throws(() => store.join('y', b), (e) => e.option === 'breaker' && /a member of a fleet already/.test(e.message));
    assert.throws(() => other.join('x', b), (e) => e.option === 'breaker' && /a member of a fleet already/.test(e.message));
    assert.throws(() => store.join('x', new CircuitBreaker({ fleetQuorum: 1 })),
      (e) => e.option === 'name' && /has a member of fleet "x" already/.test(e.message));
    await fleet.leave();
    // Out of the fleet, the breaker and the fleet's name are free again.
    const again = other.join('x', b);
    store.join('x', new CircuitBreaker({ fleetQuorum: 1 }));
    await again.leave();
    await store.close();
    await other.close();
    assert.throws(() => store.join('z', new CircuitBreaker({ fleetQuorum: 1 })), /closed/);
  });
});
