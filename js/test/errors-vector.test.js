// The error table's vector on the package's public classifier, in Node (`node --test`) and
// in Deno (scripts/edge-test.sh); workerd runs the same cases in test/edge/worker.test.js.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { classifyError } from 'tripgate';
import { runErrorsVector } from './errors-vector.js';

const vector = JSON.parse(readFileSync(new URL('../../tests/vectors/errors/errors.json', import.meta.url), 'utf8'));

test('the error table vector passes on classifyError', () => {
  const { ran, skipped, failed } = runErrorsVector(vector, classifyError);
  assert.deepEqual(failed, []);
  // All but the two cases of one error with several kinds or codes.
  assert.equal(skipped.length, 2, skipped.join('\n'));
  assert.equal(ran, vector.cases.length - 2);
});
