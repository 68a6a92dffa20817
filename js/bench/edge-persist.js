// What persistence costs per request in the example Worker (examples/worker/), in real
// workerd through miniflare, against an upstream on 127.0.0.1 that answers 200 at once.
//
//   node bench/edge-persist.js [rounds=9] [requests=200]
//
// Three Workers side by side, measured in interleaved rounds of sequential requests:
//   off     PERSIST=off: the breaker in the Durable Object, nothing saved
//   memory  PERSIST=outcomes (the default): exportState() + storage.put after every
//           outcome, storage in memory
//   disk    the same, storage persisted to disk (SQLite files, as `wrangler dev` keeps it)
//   transitions  PERSIST=transitions, on disk: saves only when the state changes (here
//           never: every call succeeds)
// plus a rejection while open (no I/O, nothing saved) for scale. The figure is the median
// of the rounds' median request latencies (dispatchFetch round trip, seen from Node).
// Then the CPU part alone, in this Node process: exportState() and importState().
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CircuitBreaker } from '../src/node.js';
import { startWorker } from '../test/edge/miniflare.js';
import { Upstream } from '../test/edge/upstream.js';

const rounds = Number(process.argv[2] ?? 9);
const requests = Number(process.argv[3] ?? 200);
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

const upstream = await new Upstream().start();
const dir = mkdtempSync(join(tmpdir(), 'tripgate-bench-'));
const dir2 = mkdtempSync(join(tmpdir(), 'tripgate-bench-'));
const workers = {
  off: await startWorker({ upstream: upstream.url, bindings: { PERSIST: 'off' } }),
  memory: await startWorker({ upstream: upstream.url }),
  disk: await startWorker({ upstream: upstream.url, persistDir: dir }),
  transitions: await startWorker({ upstream: upstream.url, persistDir: dir2, bindings: { PERSIST: 'transitions' } }),
  // Tripped by 5 upstream 503s below; a long cooldown keeps it open.
  open: await startWorker({ upstream: upstream.url, bindings: { BREAKER_OPTIONS: '{"cooldownMs":3600000}' } }),
};

async function one(mf) {
  const t = process.hrtime.bigint();
  const res = await mf.dispatchFetch('https://edge.example/api');
  await res.arrayBuffer();
  return { ms: Number(process.hrtime.bigint() - t) / 1e6, status: res.status };
}

upstream.status = 503;
for (let i = 0; i < 5; i++) await one(workers.open);
upstream.status = 200;
if ((await one(workers.open)).status !== 503) throw new Error('the open Worker did not trip');

// Warm-up: JIT, connection pools, the Durable Objects' first load.
for (const mf of Object.values(workers)) for (let i = 0; i < 50; i++) await one(mf);

const perRound = Object.fromEntries(Object.keys(workers).map((k) => [k, []]));
for (let r = 0; r < rounds; r++) {
  for (const [name, mf] of Object.entries(workers)) {
    const times = [];
    for (let i = 0; i < requests; i++) {
      const { ms, status } = await one(mf);
      if (status !== (name === 'open' ? 503 : 200)) throw new Error(`${name}: status ${status}`);
      times.push(ms);
    }
    perRound[name].push(median(times));
  }
}
const result = Object.fromEntries(Object.entries(perRound).map(([k, v]) => [k, median(v)]));
const us = (ms) => `${Math.round(ms * 1000)} µs`;
console.log(`workerd via miniflare, ${rounds} rounds × ${requests} sequential requests, median request latency:`);
console.log(`| Worker | per request | vs no persistence |`);
console.log(`|---|---:|---:|`);
for (const name of ['off', 'memory', 'disk', 'transitions', 'open']) {
  const delta = result[name] - result.off;
  console.log(`| ${name} | ${us(result[name])} | ${name === 'off' ? '' : (delta >= 0 ? '+' : '') + us(delta)} |`);
}

// The CPU part alone: one export (what each save encodes) and one import (each new isolate).
const breaker = new CircuitBreaker();
for (let i = 0; i < 20; i++) breaker.record(breaker.acquire(), i % 7 === 0 ? 503 : 200);
const bytes = breaker.exportState();
const time = (fn, n = 200_000) => {
  for (let i = 0; i < 10_000; i++) fn();
  const t = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn();
  return Number(process.hrtime.bigint() - t) / n;
};
const exportNs = median(Array.from({ length: 5 }, () => time(() => breaker.exportState())));
const into = new CircuitBreaker();
const importNs = median(Array.from({ length: 5 }, () => time(() => into.importState(bytes, 1_000))));
console.log(`\nexported state: ${bytes.length} bytes; exportState() ${Math.round(exportNs)} ns, ` +
  `importState() ${Math.round(importNs)} ns (node ${process.version})`);

for (const mf of Object.values(workers)) await mf.dispose();
await upstream.stop();
for (const d of [dir, dir2]) rmSync(d, { recursive: true, force: true });
