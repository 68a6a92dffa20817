// A real three-master Redis Cluster for the fleet tests: three redis-servers with
// `--cluster-enabled yes` on 127.0.0.1 (free ports whose cluster-bus ports, +10000, are
// free too; no persistence), joined by `redis-cli --cluster create`. Never a mock.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { startRedis } from './redis-server.js';

export function redisCliPath() {
  const found = ['/usr/bin/redis-cli', '/usr/local/bin/redis-cli'].find((p) => existsSync(p)) ??
    spawnSync('sh', ['-c', 'command -v redis-cli'], { encoding: 'utf8' }).stdout.trim();
  if (!found) throw new Error('redis-cli is not installed: the cluster tests need it (Debian: apt-get install redis-server)');
  return found;
}

const free = (port) => new Promise((resolve) => {
  const server = createServer();
  server.unref();
  server.once('error', () => resolve(false));
  server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
});

/** A port in 20000–45000 that is free, with its cluster-bus port (+10000) free too. */
async function clusterPort(taken) {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 25_000);
    if (!taken.has(port) && await free(port) && await free(port + 10_000)) return port;
  }
}

const cli = (port, ...args) => spawnSync(redisCliPath(), ['-h', '127.0.0.1', '-p', String(port), ...args], { encoding: 'utf8' });

/**
 * Starts a three-master cluster. `nodes[i]` are the servers (test/redis-server.js: `kill`,
 * `start` again on the same port with the same node id, `stop`); `urls` their URLs.
 */
export async function startCluster() {
  const taken = new Set();
  const nodes = [];
  try {
    for (let i = 0; i < 3; i++) {
      const port = await clusterPort(taken);
      taken.add(port);
      nodes.push(await startRedis({
        port,
        extra: ['--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '1000'],
      }));
    }
    const create = spawnSync(redisCliPath(), ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`),
      '--cluster-replicas', '0', '--cluster-yes'], { encoding: 'utf8' });
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`);
    const cluster = {
      nodes,
      urls: nodes.map((n) => n.url),
      /** Whether every node says the cluster is up. */
      ok: () => nodes.every((n) => /cluster_state:ok/.test(cli(n.port, 'cluster', 'info').stdout)),
      /** The node that serves `key`'s slot. */
      nodeOf(key) {
        const slot = Number(cli(nodes[0].port, 'cluster', 'keyslot', key).stdout.trim());
        // CLUSTER NODES: `<id> <host>:<port>@<bus> <flags> <master> … <slot ranges>`.
        for (const line of cli(nodes[0].port, 'cluster', 'nodes').stdout.split('\n')) {
          const fields = line.trim().split(' ');
          const port = Number(/:(\d+)@/.exec(fields[1] ?? '')?.[1]);
          for (const range of fields.slice(8)) {
            const [start, end = start] = range.split('-').map(Number);
            if (start <= slot && slot <= end) return nodes.find((n) => n.port === port);
          }
        }
        throw new Error(`no node serves slot ${slot}`);
      },
      async stop() {
        await Promise.all(nodes.map((n) => n.stop()));
      },
    };
    const end = Date.now() + 10_000;
    while (!cluster.ok()) {
      if (Date.now() > end) throw new Error('the cluster did not come up');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return cluster;
  } catch (error) {
    await Promise.all(nodes.map((n) => n.stop()));
    throw error;
  }
}
