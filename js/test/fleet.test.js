// Fleet mode from Node against a real redis-server (started here: test/redis-server.js),
// one test per numbered rule of FLEET.md and per way the store can fail or lie. Breaker
// time is a fake clock per member (each with its own origin, as hosts' monotonic clocks
// differ); Redis effects are awaited through the member's events or by polling a
// condition, never by sleeping for breaker time.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'redis';
import { CircuitBreaker, Rejected } from '../src/node.js';
import { joinFleet } from '../src/fleet/index.js';
import { format, keys } from '../src/fleet/wire.js';
import { FakeClock } from './helpers.js';
import { freePort, redisServerPath, startRedis } from './redis-server.js';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(condition, what, ms = 5_000) {
  const end = Date.now() + ms;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(5);
  }
}

let fleets = 0;
/** A fresh fleet name per test: tests share a server, never a fleet. */
const fleetName = (label) => `t${++fleets}-${label}`;

/**
 * `n` members of one fleet, each a breaker on its own fake clock (origins 1 000 s apart)
 * joined through its own connections.
 */
async function fleetOf(n, url, name, { breaker = {}, ...options } = {}) {
  const members = [];
  for (let i = 0; i < n; i++) {
    const clock = new FakeClock();
    clock.now = 1_000_000 * (i + 1);
    const b = new CircuitBreaker({ fleetQuorum: 1, cooldownMs: 5_000, ...breaker, clock: clock.read });
    const transitions = [];
    b.on('transition', (t) => transitions.push(`${t.from}>${t.to}:${t.reason}`));
    const member = await joinFleet(b, { url, name, reconcileIntervalMs: 100, ...options });
    members.push({ breaker: b, clock, member, transitions });
  }
  return members;
}

const leaveAll = (members) => Promise.all(members.map((m) => m.member.leave()));

function trip(breaker, n = 5) {
  for (let i = 0; i < n; i++) {
    const permit = breaker.acquire();
    assert.ok(permit >= 0, `expected admission, got ${permit}`);
    breaker.record(permit, 503);
  }
}

/** Resolves when every member has applied an event of at least `generation`. */
const allAt = (members, generation) =>
  waitFor(() => members.every((m) => m.breaker.fleetStatus().generation >= generation), `generation ${generation} everywhere`);

test('redis-server is installed (the fleet tests need a real one)', () => {
  assert.ok(redisServerPath());
});

describe('fleet mode on a real redis-server', () => {
  let redis;
  let raw;
  before(async () => {
    redis = await startRedis();
    raw = createClient({ url: redis.url });
    raw.on('error', () => {});
    await raw.connect();
  });
  after(async () => {
    await raw.close();
    await redis.stop();
  });

  test('options are checked, each error naming its option', async () => {
    const b = new CircuitBreaker({ fleetQuorum: 1 });
    const url = redis.url;
    const bad = [
      [{ url: 5, name: 'x' }, 'url', TypeError],
      [{ url: 'http://127.0.0.1:1', name: 'x' }, 'url', RangeError],
      [{ url: 'not a url', name: 'x' }, 'url', RangeError],
      [{ url, name: '' }, 'name', RangeError],
      [{ url, name: 'has space' }, 'name', RangeError],
      [{ url, name: 'x'.repeat(129) }, 'name', RangeError],
      [{ url, name: 7 }, 'name', TypeError],
      [{ url, name: 'x', key: '' }, 'key', RangeError],
      [{ url, name: 'x', key: 42 }, 'key', TypeError],
      [{ url, name: 'x', reconcileIntervalMs: 0 }, 'reconcileIntervalMs', RangeError],
      [{ url, name: 'x', reconcileIntervalMs: '1' }, 'reconcileIntervalMs', TypeError],
      [{ url, name: 'x', storeTimeoutMs: Infinity }, 'storeTimeoutMs', RangeError],
      [{ url, name: 'x', memberId: 'ABCDEF0123456789' }, 'memberId', RangeError],
      [{ url, name: 'x', memberId: '123' }, 'memberId', RangeError],
      [{ url, name: 'x', reconcile: 5 }, 'reconcile', TypeError],
      [{ url, name: 'x', tls: { ca: 'x' } }, 'tls', RangeError],
      [{ url: 'rediss://127.0.0.1:1', name: 'x', tls: 'yes' }, 'tls', TypeError],
      [{ url: 'rediss://127.0.0.1:1', name: 'x', tls: { ca: 5 } }, 'tls', TypeError],
      [{ url: 'rediss://127.0.0.1:1', name: 'x', tls: { passphrase: 'p' } }, 'tls', TypeError],
    ];
    for (const [options, option, Type] of bad) {
      await assert.rejects(joinFleet(b, options), (e) => e instanceof Type && e.option === option && e.message.includes(option),
        `${option}: ${JSON.stringify(options)}`);
    }
    await assert.rejects(joinFleet(new CircuitBreaker(), { url, name: 'x' }),
      (e) => e.option === 'breaker' && /fleetQuorum/.test(e.message));
    await assert.rejects(joinFleet({}, { url, name: 'x' }), (e) => e.option === 'breaker');
    const member = await joinFleet(b, { url, name: fleetName('twice') });
    await assert.rejects(joinFleet(b, { url, name: fleetName('twice') }), (e) => e.option === 'breaker' && /already in a fleet/.test(e.message));
    await member.leave();
    await (await joinFleet(b, { url, name: fleetName('again') })).leave();
  });

  test('2, 5. one trip opens the fleet, every member with the same remaining cooldown, on clocks with other origins', async () => {
    const members = await fleetOf(4, redis.url, fleetName('trip'), { key: 'k' });
    const [a, ...others] = members;
    a.clock.advance(1_234);
    const started = performance.now();
    trip(a.breaker);
    await allAt(members, 1);
    const delay = performance.now() - started;
    for (const m of others) {
      assert.deepEqual(m.transitions, ['closed>open:fleet-open']);
      assert.equal(m.breaker.metrics().cooldownRemainingMs, 5_000, 'the remaining cooldown, not a fresh one');
      assert.equal(m.breaker.acquire(), Rejected.OPEN);
    }
    assert.deepEqual(a.transitions, ['closed>open:failure-threshold'], 'the publisher applies its own event as already open');
    assert.ok(delay < 1_000, `propagation took ${delay} ms`);
    // The stored event's PTTL is the remaining cooldown on the store's clock.
    const pttl = await raw.pTTL(keys(a.member.status().name).event);
    assert.ok(pttl > 3_000 && pttl <= 5_000, `PTTL ${pttl}`);
    await leaveAll(members);
  });

  test('3. one probe round fleet-wide: only the lease holder probes; graduation closes every member with an empty window', async () => {
    const members = await fleetOf(3, redis.url, fleetName('lease'), { key: 'k', breaker: { halfOpenMaxProbes: 2 } });
    trip(members[0].breaker);
    await allAt(members, 1);
    for (const m of members) m.clock.advance(5_000);
    // Every member's first call after the cooldown is turned away while the lease is decided.
    for (const m of members) assert.equal(m.breaker.acquire(), Rejected.PROBING_ELSEWHERE);
    await waitFor(() => members.some((m) => m.member.status().leaseHeld), 'a lease holder');
    await sleep(150); // a reconcile tick: the others have had their try at the lease
    const holders = members.filter((m) => m.member.status().leaseHeld);
    assert.equal(holders.length, 1, 'exactly one member holds the lease');
    const [holder] = holders;
    let probes = 0;
    const permits = [];
    for (const m of members) {
      for (let i = 0; i < 10; i++) {
        const p = m.breaker.acquire();
        if (p >= 0) {
          probes++;
          permits.push([m, p]);
        } else {
          assert.equal(p, m === holder ? Rejected.PROBING : Rejected.PROBING_ELSEWHERE);
        }
      }
    }
    assert.equal(probes, 2, 'K = 2 probes across the whole fleet');
    assert.ok(permits.every(([m]) => m === holder));
    for (const [m, p] of permits) m.breaker.record(p, 200);
    assert.equal(holder.breaker.state, 'closed');
    await allAt(members, 2);
    for (const m of members) {
      assert.equal(m.breaker.state, 'closed');
      assert.equal(m.breaker.metrics().calls, 0, 'an empty window');
      if (m !== holder) assert.equal(m.transitions.at(-1), 'half-open>closed:fleet-close');
    }
    await waitFor(async () => (await raw.get(keys(holder.member.status().name).lease)) === null, 'the lease released');
    await leaveAll(members);
  });

  test('3. a probe fault of the lease holder re-opens the whole fleet with the backed-off cooldown', async () => {
    const members = await fleetOf(3, redis.url, fleetName('reopen'), { breaker: { backoffFactor: 2 } });
    trip(members[1].breaker);
    await allAt(members, 1);
    for (const m of members) {
      m.clock.advance(5_000);
      m.breaker.acquire();
    }
    await waitFor(() => members.some((m) => m.member.status().leaseHeld), 'a lease holder');
    const holder = members.find((m) => m.member.status().leaseHeld);
    const probe = holder.breaker.acquire();
    assert.ok(CircuitBreaker.isProbe(probe));
    holder.breaker.record(probe, 503);
    await allAt(members, 2);
    for (const m of members) {
      assert.equal(m.breaker.state, 'open');
      assert.equal(m.breaker.metrics().cooldownRemainingMs, 10_000);
    }
    await leaveAll(members);
  });

  test('4. fencing: a replayed or older generation never re-opens a fleet that has closed; both are counted', async () => {
    const name = fleetName('fence');
    const members = await fleetOf(2, redis.url, name, { key: 'k' });
    trip(members[0].breaker);
    await allAt(members, 1);
    const k = keys(name);
    const opened = await raw.get(k.event);
    await raw.publish(k.channel, format({ name, generation: 2, kind: 'close', remainingMs: 0, origin: 'a'.repeat(16) }, new TextEncoder().encode('k')));
    await allAt(members, 2);
    for (const m of members) assert.equal(m.breaker.state, 'closed');
    await raw.publish(k.channel, opened); // replayed generation 1
    await raw.publish(k.channel, format({ name, generation: 2, kind: 'open', remainingMs: 9_000, origin: 'b'.repeat(16) }, new TextEncoder().encode('k')));
    await waitFor(() => members.every((m) => m.member.status().counters.ignored.stale === 2), 'two stale events counted');
    for (const m of members) assert.equal(m.breaker.state, 'closed');
    await leaveAll(members);
  });

  test('6. quorum Q = 2: one member whose path alone is broken opens alone; the fleet stays closed until a second trips', async () => {
    const members = await fleetOf(3, redis.url, fleetName('quorum'), { breaker: { fleetQuorum: 2 } });
    const [broken, b, c] = members;
    trip(broken.breaker);
    const k = keys(broken.member.status().name);
    // The vote is in the store; nothing was published.
    await waitFor(async () => (await raw.zRange(k.votes, 0, -1)).length > 0, 'the vote');
    assert.deepEqual(await raw.zRange(k.votes, 0, -1), [broken.member.id]);
    await sleep(300); // three reconcile ticks: no event may arrive
    assert.equal(broken.breaker.state, 'open');
    assert.equal(b.breaker.state, 'closed');
    assert.equal(c.breaker.state, 'closed');
    assert.equal(await raw.get(k.event), null);
    // Its own probe round (it takes the lease: nobody else is half-open) fails: one more
    // vote, not a fleet open.
    broken.clock.advance(5_000);
    broken.breaker.acquire();
    await waitFor(() => broken.member.status().leaseHeld, 'the broken member\'s lease');
    const probe = broken.breaker.acquire();
    assert.ok(CircuitBreaker.isProbe(probe));
    broken.breaker.record(probe, 503);
    assert.equal(broken.breaker.state, 'open');
    await waitFor(async () => (await raw.get(k.lease)) === null, 'its lease released');
    await sleep(300);
    assert.equal(b.breaker.state, 'closed');
    assert.equal(c.breaker.state, 'closed');
    assert.equal(await raw.get(k.event), null, 'still no fleet event');
    assert.deepEqual(await raw.zRange(k.votes, 0, -1), [broken.member.id]);
    // A second member trips within one cooldown: now the fleet opens.
    trip(b.breaker);
    await allAt(members, 1);
    assert.equal(c.breaker.state, 'open');
    assert.deepEqual(c.transitions, ['closed>open:fleet-open']);
    await leaveAll(members);
  });

  test('7. pub/sub messages lost: a member reconciles from the keys, with the PTTL the store has left', async () => {
    const name = fleetName('lost');
    const members = await fleetOf(2, redis.url, name);
    const k = keys(name);
    // The event as a publisher writes it, but the PUBLISH never reaches anyone.
    await raw.set(k.gen, '7');
    await raw.set(k.event, format({ name, generation: 7, kind: 'open', remainingMs: 4_000, origin: 'c'.repeat(16) }, null), { PX: 4_000 });
    await allAt(members, 7);
    for (const m of members) {
      assert.equal(m.breaker.state, 'open');
      const left = m.breaker.metrics().cooldownRemainingMs;
      assert.ok(left <= 4_000 && left > 2_000, `remaining ${left}`);
      assert.equal(m.member.status().counters.received, 0, 'no message was delivered');
    }
    await leaveAll(members);
  });

  test('8. garbage, wrong-shape, other-fleet, replayed, stale, forged and unsigned messages are ignored and counted', async () => {
    const name = fleetName('bad');
    const key = new TextEncoder().encode('shared');
    const members = await fleetOf(2, redis.url, name, { key: 'shared' });
    const k = keys(name);
    const origin = 'd'.repeat(16);
    const body = `tripgate1 ${name} 1 open 5000 ${origin}`;
    const mac = createHmac('sha256', key).update(body).digest('hex');
    const bad = [
      ['garbage', 'hello'],
      ['garbage', ''],
      ['garbage', '\u0000\u00ff binary'],
      ['garbage', `tripgate2 ${name} 1 open 5000 ${origin} ${mac}`],
      ['garbage', `tripgate1 ${name} 1 open 5000 ${origin}`],
      ['garbage', `tripgate1 ${name} 1 open 5000 ${origin} ${mac} extra`],
      ['garbage', `tripgate1 ${name} -1 open 5000 ${origin} ${mac}`],
      ['garbage', `tripgate1 ${name} 1 opened 5000 ${origin} ${mac}`],
      ['garbage', `tripgate1 ${name} 1 open 5e3 ${origin} ${mac}`],
      ['garbage', `tripgate1 ${name} 1 close 5000 ${origin} ${mac}`],
      ['garbage', `tripgate1 ${name} 1 open 5000 XYZ ${mac}`],
      ['garbage', `tripgate1 ${name} 99999999999999999999 open 5000 ${origin} ${mac}`],
      ['wrong-fleet', format({ name: `${name}-other`, generation: 1, kind: 'open', remainingMs: 5_000, origin }, key)],
      ['forged', `${body} ${'0'.repeat(64)}`],
      ['forged', format({ name, generation: 1, kind: 'open', remainingMs: 5_000, origin }, new TextEncoder().encode('wrong key'))],
      ['unsigned', `${body} -`],
    ];
    for (const [, message] of bad) await raw.publish(k.channel, message);
    // A sentinel: the first valid event; every bad one before it has been handled by then.
    await raw.publish(k.channel, `${body} ${mac}`);
    await allAt(members, 1);
    await raw.publish(k.channel, `${body} ${mac}`); // replayed
    await raw.publish(k.channel, format({ name, generation: 1, kind: 'close', remainingMs: 0, origin }, key)); // stale
    const want = { garbage: 0, 'wrong-fleet': 0, stale: 2, forged: 0, unsigned: 0 };
    for (const [reason] of bad) want[reason]++;
    await waitFor(() => members.every((m) => m.member.status().counters.ignored.stale === 2), 'the stale ones');
    for (const m of members) {
      assert.deepEqual(m.member.status().counters.ignored, want);
      assert.deepEqual(m.transitions, ['closed>open:fleet-open'], 'only the valid event moved the breaker');
    }
    // A stored event of the wrong shape is ignored by the reconcile too.
    await raw.set(k.event, 'not an event');
    await waitFor(() => members.every((m) => m.member.status().counters.ignored.garbage > want.garbage), 'a garbage reconcile');
    for (const m of members) assert.equal(m.breaker.state, 'open');
    await leaveAll(members);
  });

  test('the store slow (SIGSTOP): degraded within storeTimeoutMs, no call waits; back (SIGCONT): not degraded', async () => {
    const members = await fleetOf(1, redis.url, fleetName('slow'), { storeTimeoutMs: 100 });
    const [m] = members;
    const degraded = new Promise((resolve) => m.member.once('degraded', resolve));
    redis.pause();
    try {
      const change = await degraded;
      assert.equal(change.degraded, true);
      assert.equal(m.breaker.fleetStatus().degraded, true);
    } finally {
      redis.resume();
    }
    await waitFor(() => !m.member.status().degraded, 'the store back');
    assert.equal(m.breaker.fleetStatus().degraded, false);
    await leaveAll(members);
  });

  test('7. a trip the store failed to take (it hung mid-vote) is published once the store answers again', async () => {
    const members = await fleetOf(2, redis.url, fleetName('unsent'), { storeTimeoutMs: 100 });
    const [a, b] = members;
    const degraded = new Promise((resolve) => a.member.once('degraded', resolve));
    redis.pause();
    try {
      trip(a.breaker);
      assert.equal(a.breaker.state, 'open');
      await degraded;
      assert.equal(b.breaker.state, 'closed');
    } finally {
      redis.resume();
    }
    await waitFor(() => b.breaker.state === 'open', 'B opened by A\'s trip');
    assert.deepEqual(b.transitions, ['closed>open:fleet-open']);
    await leaveAll(members);
  });

  test('a breaker disposed while joined: the member leaves on its own; later messages crash nothing', async () => {
    const name = fleetName('disposed');
    const [m, other] = await fleetOf(2, redis.url, name);
    m.breaker.dispose();
    trip(other.breaker);
    await waitFor(() => other.breaker.fleetStatus().generation === 1, 'the other member applied the open');
    await raw.publish(keys(name).channel, format({ name, generation: 9, kind: 'close', remainingMs: 0, origin: 'e'.repeat(16) }, null));
    await waitFor(() => other.breaker.fleetStatus().generation === 9, 'the close');
    await sleep(150); // a reconcile tick on the disposed member
    await m.member.leave();
    await other.member.leave();
  });

  test('leave(): the breaker carries on alone (degraded: it probes without a lease)', async () => {
    const [m] = await fleetOf(1, redis.url, fleetName('leave'));
    await m.member.leave();
    trip(m.breaker);
    m.clock.advance(5_000);
    assert.ok(CircuitBreaker.isProbe(m.breaker.acquire()));
    await m.member.leave();
  });
});

describe('the store killed and restarted', () => {
  test('7. Redis killed mid-run: no call waits, members decide locally (K probes each), degraded reported; restarted empty: resync and the fleet works again', async () => {
    const redis = await startRedis();
    try {
      const name = fleetName('killed');
      const members = await fleetOf(3, redis.url, name, { storeTimeoutMs: 100 });
      const downs = members.map((m) => new Promise((resolve) => {
        m.member.on('degraded', (c) => c.degraded && resolve());
      }));
      await redis.kill();
      await Promise.all(downs);
      // Calls during the outage: every acquire + record returns at once.
      let slowest = 0;
      for (let i = 0; i < 2_000; i++) {
        for (const m of members) {
          const start = performance.now();
          const p = m.breaker.acquire();
          if (p >= 0) m.breaker.record(p, 200);
          slowest = Math.max(slowest, performance.now() - start);
        }
      }
      assert.ok(slowest < 50, `the slowest call took ${slowest} ms`);
      const [a, b, c] = members;
      trip(a.breaker);
      a.clock.advance(5_000);
      assert.ok(CircuitBreaker.isProbe(a.breaker.acquire()), 'degraded: a local probe, no lease');
      assert.equal(b.breaker.state, 'closed', 'no news reaches the others: they decide on their own evidence');
      for (const m of members) assert.equal(m.member.status().degraded, true);
      // Back, empty: every member reconnects, resyncs, and the counter is raised past what
      // they have applied, so the next event is not stale.
      const restarted = Date.now();
      await redis.start();
      await waitFor(() => members.every((m) => !m.member.status().degraded), 'every member back', 10_000);
      const resync = Date.now() - restarted;
      assert.ok(resync < 5_000, `resync took ${resync} ms`);
      await waitFor(() => members.every((m) => m.member.status().subscribed), 'every member subscribed again', 10_000);
      const received = c.member.status().counters.received;
      trip(b.breaker);
      await waitFor(() => c.breaker.state === 'open', 'the fleet open again');
      assert.equal(c.transitions.at(-1), 'closed>open:fleet-open');
      await waitFor(() => c.member.status().counters.received > received, 'the message, on the new subscription');
      await leaveAll(members);
    } finally {
      await redis.stop();
    }
  });

  test('a member that joins while the store is down resolves degraded and joins once it is up', async () => {
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    const b = new CircuitBreaker({ fleetQuorum: 1 });
    const started = performance.now();
    const name = fleetName('late');
    const member = await joinFleet(b, { url, name, storeTimeoutMs: 100, reconcileIntervalMs: 50 });
    assert.ok(performance.now() - started < 1_000);
    assert.equal(member.status().degraded, true);
    const redis = await startRedis({ port });
    try {
      await waitFor(() => !member.status().degraded, 'joined', 10_000);
      // Its subscription was made once the store came up: a message reaches it.
      const raw = createClient({ url });
      raw.on('error', () => {});
      await raw.connect();
      await waitFor(async () => {
        await raw.publish(keys(name).channel, format({ name, generation: 3, kind: 'open', remainingMs: 5_000, origin: 'f'.repeat(16) }, null));
        return member.status().counters.received > 0;
      }, 'a message on the late subscription', 10_000);
      assert.equal(b.state, 'open');
      await raw.close();
      await member.leave();
    } finally {
      await redis.stop();
    }
  });
});

describe('8. AUTH / ACL users in the URL', () => {
  test('a member with an ACL user limited to the fleet\'s keys and channel works; a wrong password is degraded, not a crash', async () => {
    const redis = await startRedis({
      extra: ['--user', 'default', 'off', '--user', 'member', 'on', '>s3cret', '~tripgate:*', '&tripgate:*', '+@all'],
    });
    try {
      const name = fleetName('acl');
      const url = `redis://member:s3cret@127.0.0.1:${redis.port}`;
      const members = await fleetOf(2, url, name);
      for (const m of members) assert.equal(m.member.status().degraded, false);
      trip(members[0].breaker);
      await allAt(members, 1);
      assert.equal(members[1].breaker.state, 'open');
      await leaveAll(members);
      const b = new CircuitBreaker({ fleetQuorum: 1 });
      const wrong = await joinFleet(b, { url: `redis://member:wrong@127.0.0.1:${redis.port}`, name, storeTimeoutMs: 200 });
      assert.equal(wrong.status().degraded, true);
      assert.ok(wrong.status().counters.storeErrors > 0);
      await wrong.leave();
    } finally {
      await redis.stop();
    }
  });
});

describe('8. TLS: rediss://', () => {
  test('members join over TLS with a private CA; without trusting it they are degraded, not crashed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tripgate-tls-'));
    const cert = join(dir, 'cert.pem');
    const key = join(dir, 'key.pem');
    // A self-signed certificate for 127.0.0.1 (openssl comes with the same Debian image).
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '1',
      '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' });
    const port = await freePort();
    const redis = await startRedis({
      port: await freePort(),
      extra: ['--tls-port', String(port), '--tls-cert-file', cert, '--tls-key-file', key, '--tls-auth-clients', 'no'],
    });
    try {
      const url = `rediss://127.0.0.1:${port}`;
      const name = fleetName('tls');
      const members = await fleetOf(2, url, name, { tls: { ca: readFileSync(cert, 'utf8') } });
      for (const m of members) assert.equal(m.member.status().degraded, false);
      trip(members[0].breaker);
      await allAt(members, 1);
      assert.equal(members[1].breaker.state, 'open');
      await leaveAll(members);
      const untrusting = await joinFleet(new CircuitBreaker({ fleetQuorum: 1 }), { url, name, storeTimeoutMs: 200 });
      assert.equal(untrusting.status().degraded, true);
      await untrusting.leave();
    } finally {
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
