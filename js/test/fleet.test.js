// Fleet mode from Node against a real redis-server (started here: test/redis-server.js),
// one test per numbered rule of FLEET.md and per way the store can fail. Each member is a
// breaker on its own fake clock with its own FleetStore, as separate processes would be;
// Redis effects are awaited by polling a condition, never by sleeping for breaker time.
// The hostile store and uneven traffic are fleet-hostile.test.js; the protocol's vectors,
// fleet-protocol.test.js.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'redis';
import { CircuitBreaker, Rejected } from '../src/node.js';
import { FleetStore } from '../src/fleet/index.js';
import {
  allAt, closeAll, fleetName, fleetOf, keys, line, member, probeRound, storeOptions, trip, waitFor,
} from './fleet-helpers.js';
import { freePort, redisServerPath, startRedis, suiteRedis } from './redis-server.js';

test('redis-server is installed (the fleet tests need a real one)', () => {
  assert.ok(redisServerPath());
});

describe('fleet mode on a real redis-server', () => {
  let redis;
  let raw;
  suiteRedis([], (server, client) => {
    redis = server;
    raw = client;
  });

  test('2, 5. one trip opens the fleet, every member with the same remaining cooldown, on clocks with other origins', async () => {
    const members = await fleetOf(4, redis.url, fleetName('trip'));
    const [a, ...others] = members;
    a.clock.advance(1_234);
    const started = performance.now();
    trip(a.breaker);
    await allAt(members, 1);
    const delay = performance.now() - started;
    for (const m of others) {
      assert.deepEqual(m.transitions, ['closed>open:fleet-open']);
      assert.equal(m.breaker.metrics().cooldownRemainingMs, 10_000, 'the remaining cooldown, not a fresh one');
      assert.equal(m.breaker.acquire(), Rejected.OPEN);
    }
    assert.deepEqual(a.transitions, ['closed>open:failure-threshold'], 'the publisher applies its own event as already open');
    assert.ok(delay < 1_000, `propagation took ${delay} ms`);
    // The stored event's PTTL is the remaining cooldown on the store's clock.
    const pttl = await raw.pTTL(keys(a.fleet.name).event);
    assert.ok(pttl > 8_000 && pttl <= 10_000, `PTTL ${pttl}`);
    // A late joiner reads what the store says is left, not a fresh cooldown.
    const late = await member(redis.url, a.fleet.name);
    await waitFor(() => late.breaker.state === 'open', 'the late joiner open');
    const left = late.breaker.metrics().cooldownRemainingMs;
    assert.ok(left <= 10_000 && left > 8_000, `late joiner: ${left} ms`);
    await closeAll([...members, late]);
  });

  test('3. one probe round fleet-wide: only the lease holder probes; graduation closes every member with an empty window', async () => {
    const members = await fleetOf(3, redis.url, fleetName('lease'), { breaker: { halfOpenMaxProbes: 2 } });
    trip(members[0].breaker);
    await allAt(members, 1);
    for (const m of members) m.clock.advance(10_000);
    // Every member's first call after the cooldown is turned away while the lease is decided.
    for (const m of members) assert.equal(m.breaker.acquire(), Rejected.PROBING_ELSEWHERE);
    await waitFor(() => members.some((m) => m.fleet.status().leaseHeld), 'a lease holder');
    const holders = members.filter((m) => m.fleet.status().leaseHeld);
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
    await waitFor(async () => (await raw.get(keys(holder.fleet.name).lease)) === null, 'the lease released');
    await closeAll(members);
  });

  test('12. the lease\'s waiters queue in the store; a release wakes the longest alone, on its own channel, and the round ends in it', async () => {
    const name = fleetName('waiters');
    // The lease runs on the store's real clock: short, so an idle holder lets go soon.
    const members = await fleetOf(4, redis.url, name, { breaker: { probeTimeoutMs: 900, halfOpenRequiredSuccesses: 2 } });
    const k = keys(name);
    // Each member listens on the fleet's channel and on its own.
    for (const m of members) {
      const own = `${k.wake}${m.fleet.status().holder}`;
      assert.deepEqual(await raw.sendCommand(['PUBSUB', 'NUMSUB', own]), [own, 1]);
    }
    trip(members[0].breaker);
    await allAt(members, 1);
    const first = await probeRound(members);
    await waitFor(async () => (await raw.zCard(k.waiters)) === 3, 'three waiters queued');
    const [longestId] = await raw.zRange(k.waiters, 0, 0);
    const longest = members.find((m) => m.fleet.status().holder === longestId);
    assert.notEqual(longest, first);
    // No probe comes to the holder: it lets go, and the longest waiter takes the lease
    // before any other waiter's retry is due (each waits for the lease it was shown).
    const holds = (m) => m.breaker.fleetStatus().leaseHeld;
    await waitFor(() => !holds(first) && members.some(holds), 'the lease passed on');
    assert.equal(holds(longest), true, 'the longest waiter holds the lease');
    for (let i = 0; i < 2; i++) {
      const probe = longest.breaker.acquire();
      assert.ok(CircuitBreaker.isProbe(probe));
      longest.breaker.record(probe, 200);
    }
    await allAt(members, 2);
    for (const m of members) assert.equal(m.breaker.state, 'closed');
    const leases = members.reduce((n, m) => n + m.fleet.status().counts.leases, 0);
    assert.equal(leases, 2, 'one lease for the idle holder, one for the whole round');
    assert.equal(await raw.exists(k.waiters), 0, 'the close ends every wait');
    await closeAll(members);
  });

  test('3. a probe fault of the lease holder re-opens the whole fleet with the backed-off cooldown', async () => {
    const members = await fleetOf(3, redis.url, fleetName('reopen'));
    trip(members[1].breaker);
    await allAt(members, 1);
    for (const m of members) {
      m.clock.advance(10_000);
      m.breaker.acquire();
    }
    await waitFor(() => members.some((m) => m.fleet.status().leaseHeld), 'a lease holder');
    const holder = members.find((m) => m.fleet.status().leaseHeld);
    const probe = holder.breaker.acquire();
    assert.ok(CircuitBreaker.isProbe(probe));
    holder.breaker.record(probe, 503);
    await allAt(members, 2);
    for (const m of members) {
      assert.equal(m.breaker.state, 'open');
      assert.equal(m.breaker.metrics().cooldownRemainingMs, 20_000);
    }
    await closeAll(members);
  });

  test('4. fencing: a replayed or older generation never re-opens a fleet that has closed; both are counted', async () => {
    const name = fleetName('fence');
    const members = await fleetOf(2, redis.url, name);
    trip(members[0].breaker);
    await allAt(members, 1);
    const k = keys(name);
    const opened = await raw.get(k.event);
    await raw.publish(k.channel, line({ name, generation: 2, kind: 'close' }));
    await allAt(members, 2);
    for (const m of members) assert.equal(m.breaker.state, 'closed');
    await raw.publish(k.channel, opened); // replayed generation 1
    await raw.publish(k.channel, line({ name, generation: 2, kind: 'open', remainingMs: 9_000 }));
    await waitFor(() => members.every((m) => m.fleet.status().counts.ignored.stale === 2), 'two stale events counted');
    for (const m of members) assert.equal(m.breaker.state, 'closed');
    await closeAll(members);
  });

  test('6. quorum Q = 2: one member whose path alone is broken opens alone; the fleet stays closed until a second trips', async () => {
    const members = await fleetOf(3, redis.url, fleetName('quorum'), { breaker: { fleetQuorum: 2 } });
    const [broken, b, c] = members;
    const k = keys(broken.fleet.name);
    trip(broken.breaker);
    // The vote is in the store; nothing was published.
    await waitFor(async () => (await raw.zRange(k.votes, 0, -1)).length > 0, 'the vote');
    const [entry] = await raw.zRange(k.votes, 0, -1);
    assert.ok(entry.startsWith(`${broken.store.memberId} 0 `), entry);
    const reconciles = broken.fleet.status().counts.reconciles;
    await waitFor(() => broken.fleet.status().counts.reconciles >= reconciles + 3, 'three reconciles');
    assert.equal(broken.breaker.state, 'open');
    assert.equal(b.breaker.state, 'closed');
    assert.equal(c.breaker.state, 'closed');
    assert.equal(await raw.get(k.event), null);
    // Its own probe round (it takes the lease: nobody else is half-open) fails: one more
    // vote, not a fleet open.
    broken.clock.advance(10_000);
    broken.breaker.acquire();
    await waitFor(() => broken.fleet.status().leaseHeld, 'the broken member\'s lease');
    const probe = broken.breaker.acquire();
    assert.ok(CircuitBreaker.isProbe(probe));
    broken.breaker.record(probe, 503);
    assert.equal(broken.breaker.state, 'open');
    await waitFor(async () => (await raw.get(k.lease)) === null, 'its lease released');
    await waitFor(() => broken.fleet.status().counts.reconciles >= reconciles + 6, 'three more reconciles');
    assert.equal(b.breaker.state, 'closed');
    assert.equal(c.breaker.state, 'closed');
    assert.equal(await raw.get(k.event), null, 'still no fleet event');
    assert.deepEqual(await raw.zRange(k.votes, 0, -1), [entry], 'one member, one vote');
    // A second member trips within one cooldown: now the fleet opens.
    trip(b.breaker);
    await allAt(members, 1);
    assert.equal(c.breaker.state, 'open');
    assert.deepEqual(c.transitions, ['closed>open:fleet-open']);
    await closeAll(members);
  });

  test('7. pub/sub messages lost: a member reconciles from the keys, with the PTTL the store has left', async () => {
    const name = fleetName('lost');
    const members = await fleetOf(2, redis.url, name);
    const k = keys(name);
    // The event as a publisher writes it, but the PUBLISH never reaches anyone.
    await raw.set(k.gen, '7');
    await raw.set(k.event, line({ name, generation: 7, kind: 'open', remainingMs: 4_000 }), { PX: 4_000 });
    await allAt(members, 7);
    for (const m of members) {
      assert.equal(m.breaker.state, 'open');
      const left = m.breaker.metrics().cooldownRemainingMs;
      assert.ok(left <= 4_000 && left > 2_000, `remaining ${left}`);
      assert.equal(m.fleet.status().counts.received, 0, 'no message was delivered');
    }
    await closeAll(members);
  });

  test('8. garbage, wrong-shape, other-fleet, replayed, stale, forged and unsigned messages are ignored and counted', async () => {
    const name = fleetName('bad');
    const members = await fleetOf(2, redis.url, name);
    const k = keys(name);
    const origin = 'd'.repeat(16);
    const good = line({ name, generation: 1, kind: 'open', remainingMs: 5_000, origin });
    const [body, mac] = [good.slice(0, good.lastIndexOf(' ')), good.slice(good.lastIndexOf(' ') + 1)];
    const bad = [
      ['garbage', 'hello'],
      ['garbage', ''],
      ['garbage', '\u0000\u00ff binary'],
      ['garbage', `tripgate2 ${name} 1 open 5000 ${origin} ${mac}`],
      ['garbage', body],
      ['garbage', `${good} extra`],
      ['garbage', `tripgate1 ${name} -1 open 5000 ${origin} ${mac}`],
      ['garbage', `tripgate1 ${name} 1 opened 5000 ${origin} ${mac}`],
      ['garbage', `tripgate1 ${name} 1 open 5e3 ${origin} ${mac}`],
      ['garbage', `tripgate1 ${name} 1 close 5000 ${origin} ${mac}`],
      ['garbage', `tripgate1 ${name} 1 open 5000 XYZ ${mac}`],
      ['garbage', `tripgate1 ${name} 99999999999999999999 open 5000 ${origin} ${mac}`],
      ['garbage', ' '.repeat(1 << 20)],
      ['wrong-fleet', line({ name: `${name}-other`, generation: 1, kind: 'open', remainingMs: 5_000, origin })],
      ['forged', `${body} ${'0'.repeat(64)}`],
      ['forged', `${body} ${mac.toUpperCase()}`],
      ['forged', line({ name, generation: 1, kind: 'open', remainingMs: 5_000, origin }, 'another key of 32 bytes, really!')],
      ['unsigned', `${body} -`],
    ];
    for (const [, message] of bad) await raw.publish(k.channel, message);
    // A sentinel: the first valid event; every bad one before it has been handled by then.
    await raw.publish(k.channel, good);
    await allAt(members, 1);
    await raw.publish(k.channel, good); // replayed
    await raw.publish(k.channel, line({ name, generation: 1, kind: 'close', origin })); // stale
    const want = { garbage: 0, 'wrong-fleet': 0, unsigned: 0, forged: 0, stale: 2, 'malformed-generation': 0 };
    for (const [reason] of bad) want[reason]++;
    await waitFor(() => members.every((m) => m.fleet.status().counts.ignored.stale === 2), 'the stale ones');
    for (const m of members) {
      assert.deepEqual(m.fleet.status().counts.ignored, want);
      assert.deepEqual(m.transitions, ['closed>open:fleet-open'], 'only the valid event moved the breaker');
    }
    // A stored event of the wrong shape is ignored by the reconcile too, and counted once.
    await raw.set(k.event, 'not an event');
    await waitFor(() => members.every((m) => m.fleet.status().counts.ignored.garbage === want.garbage + 1), 'a garbage reconcile');
    const reconciles = members[0].fleet.status().counts.reconciles;
    await waitFor(() => members[0].fleet.status().counts.reconciles >= reconciles + 2, 'two more reconciles');
    assert.equal(members[0].fleet.status().counts.ignored.garbage, want.garbage + 1);
    for (const m of members) assert.equal(m.breaker.state, 'open');
    await closeAll(members);
  });

  test('the store slow (SIGSTOP): degraded within storeTimeoutMs, no call waits; back (SIGCONT): not degraded', async () => {
    const [m] = await fleetOf(1, redis.url, fleetName('slow'), { storeTimeoutMs: 100 });
    const degraded = new Promise((resolve) => m.fleet.once('degraded', resolve));
    redis.pause();
    try {
      const change = await degraded;
      assert.equal(change.degraded, true);
      assert.match(change.error, /StoreTimeoutError/);
      assert.equal(m.breaker.fleetStatus().degraded, true);
    } finally {
      redis.resume();
    }
    await waitFor(() => m.fleet.status().connected, 'the store back');
    assert.equal(m.breaker.fleetStatus().degraded, false);
    assert.ok(m.fleet.status().disconnects >= 1);
    await closeAll([m]);
  });

  test('7. a trip the store failed to take (it hung mid-vote) is published once the store answers again', async () => {
    const members = await fleetOf(2, redis.url, fleetName('unsent'), { storeTimeoutMs: 100 });
    const [a, b] = members;
    const degraded = new Promise((resolve) => a.fleet.once('degraded', resolve));
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
    await closeAll(members);
  });

  test('a breaker disposed while joined: the member leaves on its own; later messages crash nothing', async () => {
    const name = fleetName('disposed');
    const [m, other] = await fleetOf(2, redis.url, name);
    const left = new Promise((resolve) => m.fleet.once('left', resolve));
    m.breaker.dispose();
    trip(other.breaker);
    await waitFor(() => other.breaker.fleetStatus().generation === 1, 'the other member applied the open');
    assert.match(String((await left).error), /Breaker/);
    await raw.publish(keys(name).channel, line({ name, generation: 9, kind: 'close' }));
    await waitFor(() => other.breaker.fleetStatus().generation === 9, 'the close');
    assert.equal(m.fleet.status().connected, false);
    await m.fleet.leave();
    await closeAll([m, other]);
  });

  test('leave(): the breaker carries on alone (it probes without a lease), and may join again', async () => {
    const name = fleetName('leave');
    const [m] = await fleetOf(1, redis.url, name);
    await m.fleet.leave();
    assert.equal(m.fleet.status().connected, false);
    trip(m.breaker);
    m.clock.advance(10_000);
    assert.ok(CircuitBreaker.isProbe(m.breaker.acquire()));
    await m.fleet.leave();
    const again = m.store.join(name, m.breaker);
    assert.equal(await again.ready(), true);
    await closeAll([m]);
  });
});

describe('the store killed and restarted', () => {
  test('7. Redis killed mid-run: no call waits, members decide locally (K probes each), degraded reported; restarted empty: resync, the counter repaired, and the fleet works again', async () => {
    const redis = await startRedis();
    try {
      const name = fleetName('killed');
      const members = await fleetOf(3, redis.url, name, { storeTimeoutMs: 100 });
      const [a, b, c] = members;
      trip(a.breaker);
      await allAt(members, 1);
      for (const m of members) {
        m.clock.advance(10_000);
        m.breaker.acquire();
      }
      await waitFor(() => members.some((m) => m.fleet.status().leaseHeld), 'a lease holder');
      const holder = members.find((m) => m.fleet.status().leaseHeld);
      holder.breaker.record(holder.breaker.acquire(), 200);
      await allAt(members, 2);
      const downs = members.map((m) => new Promise((resolve) => {
        m.fleet.on('degraded', (change) => change.degraded && resolve());
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
      trip(a.breaker);
      a.clock.advance(20_000);
      assert.ok(CircuitBreaker.isProbe(a.breaker.acquire()), 'degraded: a local probe, no lease');
      assert.equal(b.breaker.state, 'closed', 'no news reaches the others: they decide on their own evidence');
      for (const m of members) assert.equal(m.fleet.status().degraded, true);
      // Back, empty: every member reconnects and reads back; the counter is repaired to
      // what they have applied, so the next event is not stale.
      const restarted = Date.now();
      await redis.start();
      await waitFor(() => members.every((m) => m.fleet.status().connected), 'every member back', 10_000);
      const resync = Date.now() - restarted;
      assert.ok(resync < 5_000, `resync took ${resync} ms`);
      const raw = createClient({ url: redis.url });
      raw.on('error', () => {});
      await raw.connect();
      await waitFor(async () => Number(await raw.get(keys(name).gen)) >= 2, 'the counter repaired');
      const received = c.fleet.status().counts.received;
      trip(b.breaker);
      await waitFor(() => c.breaker.state === 'open', 'the fleet open again');
      assert.equal(c.transitions.at(-1), 'closed>open:fleet-open');
      assert.ok(c.breaker.fleetStatus().generation >= 3);
      await waitFor(() => c.fleet.status().counts.received > received, 'the message, on the new subscription');
      await raw.close();
      await closeAll(members);
    } finally {
      await redis.stop();
    }
  });

  test('a member that joins while the store is down is degraded at once, and joins once it is up', async () => {
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    const b = new CircuitBreaker({ fleetQuorum: 1 });
    const name = fleetName('late');
    const store = await FleetStore.connect(storeOptions(url, { storeTimeoutMs: 100 }));
    const fleet = store.join(name, b);
    assert.equal(fleet.status().degraded, true);
    assert.equal(b.fleetStatus().degraded, true);
    assert.equal(await fleet.ready(300), false);
    const redis = await startRedis({ port });
    try {
      assert.equal(await fleet.ready(10_000), true);
      // Its subscription was made once the store came up: a message reaches it.
      const raw = createClient({ url });
      raw.on('error', () => {});
      await raw.connect();
      await raw.publish(keys(name).channel, line({ name, generation: 3, kind: 'open', remainingMs: 5_000 }));
      await waitFor(() => fleet.status().counts.received > 0, 'a message on the late subscription');
      assert.equal(b.state, 'open');
      await raw.close();
      await store.close();
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
      trip(members[0].breaker);
      await allAt(members, 1);
      assert.equal(members[1].breaker.state, 'open');
      await closeAll(members);
      const store = await FleetStore.connect(storeOptions(`redis://member:wrong@127.0.0.1:${redis.port}`));
      const wrong = store.join(name, new CircuitBreaker({ fleetQuorum: 1 }));
      await waitFor(() => store.lastError !== null, 'the refusal');
      assert.equal(wrong.status().degraded, true);
      assert.equal(wrong.status().connects, 0);
      assert.ok(!store.lastError.includes('wrong'), `the password stays out of messages: ${store.lastError}`);
      await store.close();
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
      const members = await fleetOf(2, url, name, { tls: { ca: readFileSync(cert, 'utf8') }, storeTimeoutMs: 1_000 });
      trip(members[0].breaker);
      await allAt(members, 1);
      assert.equal(members[1].breaker.state, 'open');
      await closeAll(members);
      const store = await FleetStore.connect(storeOptions(url));
      const untrusting = store.join(name, new CircuitBreaker({ fleetQuorum: 1 }));
      await waitFor(() => store.lastError !== null, 'the refused certificate');
      assert.equal(untrusting.status().degraded, true);
      await store.close();
    } finally {
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
