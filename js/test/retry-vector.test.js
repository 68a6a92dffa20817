// The retry vector on the package's public retries, in Node (`node --test`) and in Deno
// (scripts/edge-test.sh); workerd runs the same cases in test/edge/worker.test.js.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { CircuitBreaker } from 'tripgate';
import { runRetryVector } from './retry-vector.js';

const vector = JSON.parse(readFileSync(new URL('../../tests/vectors/retry/retry.json', import.meta.url), 'utf8'));

test('the retry vector passes on breaker.retries()', () => {
  const { ran, steps, failed } = runRetryVector(vector, CircuitBreaker);
  assert.deepEqual(failed, []);
  assert.equal(ran, vector.cases.length);
  assert.equal(steps, vector.cases.reduce((n, c) => n + c.steps.length, 0));
  assert.ok(ran >= 7, `only ${ran} cases`);
});
