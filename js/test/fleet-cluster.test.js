// Fleet mode from Node on a real three-master Redis Cluster (test/redis-cluster.js): a
// fleet's keys share a slot through the hash tag in their names, its events go over
// sharded pub/sub (SSUBSCRIBE, SPUBLISH inside publish.lua and release.lua) on that slot's
// master, fleets of other names land on other masters, and a master killed mid-run leaves
// its members deciding alone until it is back.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createClient } from 'redis';
import { CircuitBreaker, Rejected } from '../src/node.js';
import { FleetStore } from '../src/fleet/index.js';
import {
  allAt, breakerOptions, closeAll, fleetName, fleetOf, keys, member, probeRound, storeOptions, trip, waitFor,
} from './fleet-helpers.js';
import { redisCliPath, startCluster } from './redis-cluster.js';

describe('fleet mode on a three-master Redis Cluster', () => {
  let cluster;
  before(async () => {
    cluster = await startCluster();
  });
  after(async () => {
    await cluster.stop();
  });

  /** A plain connection to one node. */
  async function nodeClient(node) {
    const client = createClient({ url: node.url });
    client.on('error', () => {});
    await client.connect();
    return client;
  }

  test('a trip opens the fleet and its probe round closes it, over sharded pub/sub on the fleet\'s master', async () => {
    const name = fleetName('cluster');
    const members = await fleetOf(3, undefined, name, { nodes: cluster.urls, url: undefined });
    const node = cluster.nodeOf(keys(name).gen);
    const client = await nodeClient(node);
    // Each member's channel is a shard channel of the fleet's slot, not a global one.
    assert.deepEqual(await client.sendCommand(['PUBSUB', 'SHARDNUMSUB', keys(name).channel]), [keys(name).channel, 3]);
    assert.deepEqual(await client.sendCommand(['PUBSUB', 'NUMSUB', keys(name).channel]), [keys(name).channel, 0]);
    trip(members[0].breaker);
    await allAt(members, 1);
    for (const m of members.slice(1)) assert.deepEqual(m.transitions, ['closed>open:fleet-open']);
    assert.match(await client.get(keys(name).event), / 1 open /);
    const holder = await probeRound(members);
    holder.breaker.record(holder.breaker.acquire(), 200);
    await allAt(members, 2);
    for (const m of members) assert.equal(m.breaker.state, 'closed');
    await client.close();
    await closeAll(members);
  });

  test('one store serves fleets on every master', async () => {
    const names = [];
    const masters = new Set();
    for (let i = 0; masters.size < 3 || names.length < 6; i++) {
      const name = fleetName(`spread-${i}`);
      names.push(name);
      masters.add(cluster.nodeOf(keys(name).gen).port);
    }
    const here = await FleetStore.connect(storeOptions(undefined, { nodes: cluster.urls, url: undefined }));
    const there = await FleetStore.connect(storeOptions(undefined, { nodes: cluster.urls, url: undefined }));
    const pairs = names.map((name) => ({
      a: new CircuitBreaker(breakerOptions()),
      b: new CircuitBreaker(breakerOptions()),
      name,
    }));
    const fleets = pairs.flatMap(({ a, b, name }) => [here.join(name, a), there.join(name, b)]);
    for (const fleet of fleets) assert.equal(await fleet.ready(), true);
    for (const { a } of pairs) trip(a);
    await waitFor(() => pairs.every(({ b }) => b.state === 'open'), 'every fleet open, on every master');
    await here.close();
    await there.close();
  });

  test('the fleet\'s master killed mid-run: members decide alone, no call waits; restarted empty, they read back, repair the counter and follow the fleet again', async () => {
    const name = fleetName('killed');
    // A probe timeout of 1 s: the waits after losing the store (FLEET.md § 7) are one.
    const members = await fleetOf(2, undefined, name, {
      nodes: cluster.urls, url: undefined, storeTimeoutMs: 100, breaker: { probeTimeoutMs: 1_000 },
    });
    const [a, b] = members;
    trip(a.breaker);
    await allAt(members, 1);
    a.clock.advance(9_500);
    const node = cluster.nodeOf(keys(name).gen);
    await node.kill();
    await waitFor(() => members.every((m) => m.fleet.status().degraded), 'both degraded');
    let slowest = 0;
    for (let i = 0; i < 1_000; i++) {
      for (const m of members) {
        const start = performance.now();
        const p = m.breaker.acquire();
        if (p >= 0) m.breaker.record(p, 200);
        slowest = Math.max(slowest, performance.now() - start);
      }
    }
    assert.ok(slowest < 50, `the slowest call took ${slowest} ms`);
    // Its opening is the fleet's, whose round may be out under another member's lease:
    // past the cooldown it waits one probe timeout from losing the store, then probes
    // without a lease, alone, and closes on its own evidence.
    a.clock.advance(600);
    assert.equal(a.breaker.acquire(), Rejected.PROBING_ELSEWHERE);
    a.clock.advance(500);
    const probe = a.breaker.acquire();
    assert.ok(CircuitBreaker.isProbe(probe));
    a.breaker.record(probe, 200);
    assert.equal(a.breaker.state, 'closed');
    await node.start();
    await waitFor(() => cluster.ok(), 'the cluster up again', 15_000);
    await waitFor(() => members.every((m) => m.fleet.status().connected), 'both back', 15_000);
    const client = await nodeClient(node);
    await waitFor(async () => (await client.get(keys(name).gen)) === '1', 'the counter repaired');
    // B's round is the fleet's: it takes the lease on the restarted master (one probe
    // timeout after finding the fleet's state lost, when any round begun before is over),
    // its probe fails, and the fleet opens again, A too.
    b.clock.advance(10_000);
    assert.equal(b.breaker.acquire(), Rejected.PROBING_ELSEWHERE);
    await waitFor(() => b.breaker.fleetStatus().leaseHeld, 'B holds the lease');
    b.breaker.record(b.breaker.acquire(), 503);
    await allAt(members, 2);
    assert.equal(a.transitions.at(-1), 'closed>open:fleet-open');
    await client.close();
    await closeAll(members);
  });

  test('the fleet\'s master killed while nothing is due: members are degraded at once, before any read-back or command', async () => {
    const name = fleetName('noticed');
    // A read-back once a minute and no calls: only the node's broken connection can tell.
    const members = await fleetOf(2, undefined, name, { nodes: cluster.urls, url: undefined, reconcileIntervalMs: 60_000 });
    const node = cluster.nodeOf(keys(name).gen);
    await node.kill();
    await waitFor(() => members.every((m) => m.fleet.status().degraded), 'both degraded', 2_000);
    for (const m of members) assert.match(m.store.lastError, /SocketClosedUnexpectedlyError|ECONNRESET|closed/);
    await node.start();
    await waitFor(() => cluster.ok(), 'the cluster up again', 15_000);
    await waitFor(() => members.every((m) => m.fleet.status().connected), 'both back', 15_000);
    await closeAll(members);
  });

  test('sessions that fail while a master is down leave no connection behind: after close(), every node is back to its own clients', async () => {
    const name = fleetName('sessions');
    const node = cluster.nodeOf(keys(name).gen);
    const others = cluster.nodes.filter((n) => n !== node);
    // Clients of the live masters: redis-cli's own connection is the one client left.
    const clients = () => others.map((n) => Number(/connected_clients:(\d+)/.exec(
      spawnSync(redisCliPath(), ['-p', String(n.port), 'info', 'clients'], { encoding: 'utf8' }).stdout)?.[1]));
    await waitFor(() => clients().every((c) => c === 1), 'no client on the live masters');
    await node.kill();
    // Every session now times out while the cluster client still finds its nodes; each
    // reaches the live masters, so a client count of 3 on one means sessions came and went.
    const m = await member(undefined, name, { nodes: cluster.urls, url: undefined, storeTimeoutMs: 50 });
    let most = 0;
    await waitFor(() => {
      most = Math.max(most, ...clients());
      return most >= 3;
    }, 'sessions reaching the live masters');
    await node.start();
    await waitFor(() => cluster.ok(), 'the cluster up again', 15_000);
    await waitFor(() => m.fleet.status().connected, 'the member back', 15_000);
    await m.store.close();
    await waitFor(() => clients().every((c) => c === 1), `the live masters' clients back to 1 (now ${clients()})`);
  });
});
