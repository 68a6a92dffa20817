// The Retry-After vector on the package's public `retryAfter`, in Node (`node --test`) and
// in Deno (scripts/edge-test.sh); workerd runs the same cases in test/edge/worker.test.js.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { retryAfter } from 'tripgate';
import { runRetryAfterVector } from './retry-after-vector.js';

const vector = JSON.parse(readFileSync(new URL('../../tests/vectors/retry-after/retry-after.json', import.meta.url), 'utf8'));

test('the Retry-After vector passes on retryAfter', () => {
  const { ran, failed } = runRetryAfterVector(vector, retryAfter);
  assert.deepEqual(failed, []);
  assert.equal(ran, vector.cases.length);
  assert.ok(ran >= 20, `only ${ran} cases`);
});
