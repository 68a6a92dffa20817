// Fleet mode from Node as users deploy it, on a real redis-server: processes that share a
// member name, a Redis shared with a cache that evicts, and members whose Redis user an ACL
// restricts (the Rust adapter's counterparts are redis/tests/deployments.rs).
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Rejected } from '../src/node.js';
import { FleetStore } from '../src/fleet/index.js';
import { closeAll, connected, fleetName, keys, member, probeRound, sleep, trip, waitFor } from './fleet-helpers.js';
import { suiteRedis, withRedis } from './redis-server.js';

async function opened(list) {
  trip(list[0].breaker);
  for (const m of list) await waitFor(() => m.breaker.fleetStatus().generation >= 1, 'the open applied');
}

const userUrl = (redis, user) => redis.url.replace('redis://', `redis://${user}:secret@`);
const aclUser = (raw, user, rules) => raw.sendCommand(['ACL', 'SETUSER', user, 'on', '>secret', ...rules.split(/\s+/)]);

describe('fleet mode where users deploy it', () => {
  let redis;
  let raw;
  suiteRedis([], (server, client) => {
    redis = server;
    raw = client;
  });

  test('two processes that share a member name share a vote, never the probe lease', async () => {
    const name = fleetName('shared');
    const list = [await member(redis.url, name, { member: 'pod-7' }), await member(redis.url, name, { member: 'pod-7' })];
    await connected(list);
    assert.equal(list[0].store.memberId, list[1].store.memberId);
    assert.notEqual(list[0].fleet.status().holder, list[1].fleet.status().holder);
    await opened(list);
    const holder = await probeRound(list);
    const other = list.find((m) => m !== holder);
    const probe = holder.breaker.acquire();
    assert.ok(probe >= 0);
    await sleep(300);
    assert.equal(other.breaker.fleetStatus().leaseHeld, false);
    assert.equal(other.breaker.acquire(), Rejected.PROBING_ELSEWHERE);
    holder.breaker.record(probe, 200);
    for (const m of list) await waitFor(() => m.breaker.state === 'closed', 'closed');
    await closeAll(list);
  });

  test('a command the ACL denies inside a script is an outage that names it', async () => {
    await aclUser(raw, 'nozadd', `${await FleetStore.acl()} -zadd`);
    const name = fleetName('deny');
    const list = [await member(redis.url, name), await member(userUrl(redis, 'nozadd'), name)];
    await connected(list);
    await opened(list);
    const [holder, denied] = list;
    holder.clock.advance(holder.breaker.metrics().cooldownRemainingMs);
    assert.equal(holder.breaker.acquire(), Rejected.PROBING_ELSEWHERE);
    await waitFor(() => holder.breaker.fleetStatus().leaseHeld, 'a holder');
    denied.clock.advance(denied.breaker.metrics().cooldownRemainingMs);
    assert.equal(denied.breaker.acquire(), Rejected.PROBING_ELSEWHERE);
    await waitFor(() => denied.fleet.status().degraded, 'degraded');
    assert.match(denied.store.lastError, /denies this member's user ZADD in take\.lua/);
    assert.equal(denied.fleet.status().counts.refused, 0);
    await closeAll(list);
  });

  test('a publish the ACL denies stores nothing', async () => {
    await aclUser(raw, 'nopublish', `${await FleetStore.acl()} -publish`);
    const name = fleetName('mute');
    const m = await member(userUrl(redis, 'nopublish'), name);
    await connected([m]);
    trip(m.breaker);
    await waitFor(() => m.fleet.status().degraded, 'degraded');
    assert.match(m.store.lastError, /PUBLISH\/SPUBLISH in publish\.lua/);
    assert.equal(await raw.exists(keys(name).event), 0);
    await closeAll([m]);
  });

  test('a member whose user has exactly the documented ACL runs a whole round', async () => {
    await aclUser(raw, 'fleet', await FleetStore.acl());
    const name = fleetName('acl');
    const list = [await member(userUrl(redis, 'fleet'), name), await member(userUrl(redis, 'fleet'), name)];
    await connected(list);
    await opened(list);
    const holder = await probeRound(list);
    holder.breaker.record(holder.breaker.acquire(), 200);
    for (const m of list) await waitFor(() => m.breaker.state === 'closed', 'closed');
    for (const m of list) assert.equal(m.fleet.status().counts.refused, 0);
    assert.equal(list[0].store.lastError, null);
    await closeAll(list);
  });
});

describe('fleet mode on a store that evicts', () => {
  test('a store that evicts volatile keys keeps the lease while its probe is out', async () => {
    await withRedis(['--maxmemory', '4mb', '--maxmemory-policy', 'volatile-ttl'], async (server, raw) => {
      const name = fleetName('evict');
      // A short lease, renewed on the store's real clock while the probe is out.
      const options = { breaker: { probeTimeoutMs: 900 } };
      const list = [await member(server.url, name, options), await member(server.url, name, options)];
      await connected(list);
      assert.equal(list[0].store.warning, null);
      await opened(list);
      const holder = await probeRound(list);
      const other = list.find((m) => m !== holder);
      const probe = holder.breaker.acquire();
      const value = 'x'.repeat(16 * 1024);
      for (let i = 0; i < 2_000; i++) await raw.set(`cache:${i}`, value, { EX: 3_600 }).catch(() => {});
      assert.ok(/evicted_keys:[1-9]/.test(await raw.info('stats')), 'the cache was evicted from');
      assert.equal(await raw.exists(keys(name).lease), 1, 'the lease was evicted');
      // The other member asks again each time the lease it was shown runs out.
      for (let i = 0; i < 27; i++) {
        assert.equal(other.breaker.acquire(), Rejected.PROBING_ELSEWHERE, 'a second probe');
        assert.equal(other.breaker.fleetStatus().leaseHeld, false, 'a second lease');
        await sleep(100);
      }
      holder.breaker.record(probe, 200);
      for (const m of list) await waitFor(() => m.breaker.state === 'closed', 'closed');
      await closeAll(list);
    });
  });

  test('a store that may evict any key is reported; one without a limit is not', async () => {
    await withRedis(['--maxmemory', '64mb', '--maxmemory-policy', 'allkeys-lru'], async (server) => {
      const warned = new Promise((resolve) => process.once('warning', resolve));
      const m = await member(server.url, fleetName('lru'));
      await connected([m]);
      await waitFor(() => m.store.warning !== null, 'a warning');
      assert.match(m.store.warning, /allkeys-lru/);
      const warning = await warned;
      assert.equal(warning.code, 'TRIPGATE_FLEET_EVICTION');
      await closeAll([m]);
    });
    await withRedis(['--maxmemory-policy', 'allkeys-lru'], async (server) => {
      const m = await member(server.url, fleetName('lru'));
      await connected([m]);
      await sleep(100);
      assert.equal(m.store.warning, null);
      await closeAll([m]);
    });
  });
});
