// A real redis-server for the fleet tests, started on 127.0.0.1 at a free port with no
// persistence; never a mock. Missing the binary is a failure that says how to install it.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { after, before } from 'node:test';
import { createClient } from 'redis';
import { join } from 'node:path';

const CANDIDATES = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'];

export function redisServerPath() {
  const found = CANDIDATES.find((p) => existsSync(p)) ??
    spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).stdout.trim();
  if (!found) {
    throw new Error('redis-server is not installed: the fleet tests need a real one (Debian: apt-get install redis-server)');
  }
  return found;
}

/** A free TCP port on 127.0.0.1 (the kernel picks; the server then binds it). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function answersPing(port) {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let data = '';
    socket.setTimeout(500);
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      data += chunk;
      // +PONG, or -NOAUTH when a password is required: either way it is up.
      if (data.includes('\r\n')) {
        socket.destroy();
        resolve(true);
      }
    });
    socket.on('error', () => resolve(false));
    socket.on('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/**
 * Starts redis-server; `extra` are more arguments (an ACL user, say). The same port can
 * be started again after `kill()` with `restart()` (empty: nothing is saved).
 */
export async function startRedis({ port, extra = [] } = {}) {
  const binary = redisServerPath();
  port ??= await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'tripgate-redis-'));
  const server = {
    port,
    url: `redis://127.0.0.1:${port}`,
    process: null,
    async start() {
      const child = spawn(binary, ['--bind', '127.0.0.1', '--port', String(port), '--save', '', '--appendonly', 'no',
        '--dir', dir, ...extra], { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk) => {
        stderr += chunk;
      });
      this.process = child;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      this.exited = exited;
      for (let i = 0; i < 100; i++) {
        if (child.exitCode !== null) throw new Error(`redis-server exited at start: ${stderr}`);
        if (await answersPing(port)) return;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error(`redis-server did not answer on port ${port}: ${stderr}`);
    },
    /** SIGKILL: the store vanishes mid-run. */
    async kill() {
      if (this.process === null || this.process.exitCode !== null) return;
      this.process.kill('SIGKILL');
      await this.exited;
    },
    /** SIGSTOP / SIGCONT: the store is there but answers nothing (slow, not down). */
    pause() {
      this.process.kill('SIGSTOP');
    },
    resume() {
      this.process.kill('SIGCONT');
    },
    async stop() {
      if (this.process !== null && this.process.exitCode === null) {
        this.process.kill('SIGCONT');
        this.process.kill('SIGTERM');
        await this.exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await server.start();
  return server;
}

/** A raw client of `server`, connected, for a test to read and write the store itself. */
async function rawClient(server) {
  const raw = createClient({ url: server.url });
  raw.on('error', () => {});
  await raw.connect();
  return raw;
}

/**
 * Starts a redis-server (with `extra` arguments) and a raw client of it before a suite's
 * tests, and stops both after; `use(server, raw)` receives them.
 */
export function suiteRedis(extra, use) {
  let server;
  let raw;
  before(async () => {
    server = await startRedis({ extra });
    raw = await rawClient(server);
    use(server, raw);
  });
  after(async () => {
    await raw.close();
    await server.stop();
  });
}

/** Runs `body(server, raw)` on a redis-server of its own (with `extra` arguments), stopped after. */
export async function withRedis(extra, body) {
  const server = await startRedis({ extra });
  const raw = await rawClient(server);
  try {
    await body(server, raw);
  } finally {
    await raw.close();
    await server.stop();
  }
}
