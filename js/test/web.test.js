// The workers/edge entry point (wasm-bindgen --target web): nothing happens at import;
// initSync({ module }) instantiates a compiled module, as an edge runtime hands it over.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { CircuitBreaker, initSync, Rejected, retryAfter } from '../src/web.js';
import { FakeClock, jsMessage, loadVectors, optionOfField, optionsOf } from './helpers.js';
import { packageSubject, runVector } from './vectors-runner.js';

test('the constructor explains that initSync() comes first', () => {
  assert.throws(() => new CircuitBreaker(), /initSync\(\) or init\(\) first/);
  assert.throws(() => retryAfter.http('120'), /initSync\(\) or init\(\) first/);
});

test('initSync({ module }) with a compiled WebAssembly.Module, then the breaker works', () => {
  const bytes = readFileSync(new URL('../pkg/web/tripgate_wasm_bg.wasm', import.meta.url));
  initSync({ module: new WebAssembly.Module(bytes) });
  initSync({ module: new WebAssembly.Module(bytes) }); // idempotent
  const clock = new FakeClock();
  const breaker = new CircuitBreaker({ failureThreshold: 2, minCalls: 2, clock: clock.read });
  for (let i = 0; i < 2; i++) breaker.record(breaker.acquire(), 503);
  assert.equal(breaker.acquire(), Rejected.OPEN);
  assert.equal(breaker.lastRejection.retryAfterMs, 15_000);
});

test('the web build makes the same decisions on the shared vectors', () => {
  for (const { file, vector } of loadVectors()) {
    if (vector['config-error']) continue;
    const subject = packageSubject(CircuitBreaker);
    try {
      runVector(vector, subject, { optionsOf, optionOfField, jsMessage });
    } catch (error) {
      error.message = `${file}: ${error.message}`;
      throw error;
    }
  }
});

test('in a worker thread, with the module posted to it', async () => {
  const { Worker } = await import('node:worker_threads');
  const bytes = readFileSync(new URL('../pkg/web/tripgate_wasm_bg.wasm', import.meta.url));
  const worker = new Worker(new URL('./worker-fixture.js', import.meta.url), {
    workerData: { module: new WebAssembly.Module(bytes) },
  });
  const message = await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await worker.terminate();
  assert.deepEqual(message, { state: 'open', rejected: Rejected.OPEN, retryAfterMs: 15_000 });
});
