// Every shared scenario vector (tests/vectors/*.json) through the JS package's public API,
// with the same decisions as the native core.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker } from '../src/node.js';
import { jsMessage, loadVectors, optionOfField, optionsOf } from './helpers.js';
import { packageSubject, runVector } from './vectors-runner.js';

const subject = packageSubject(CircuitBreaker);

const vectors = loadVectors();

test('the vector directory holds vectors', () => {
  assert.ok(vectors.length >= 20, `only ${vectors.length} vectors found`);
});

for (const { file, vector } of vectors) {
  test(`vector ${file}`, () => {
    runVector(vector, subject, { optionsOf, optionOfField, jsMessage });
  });
}
