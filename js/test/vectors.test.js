// Every shared scenario vector (tests/vectors/*.json) through the JS package's public API,
// with the same decisions as the native core. The same file runs in Node (`node --test`,
// where `tripgate` resolves to src/node.js) and in Deno (`deno test`, run by
// scripts/edge-test.sh, where the `deno` condition picks src/deno.js). Both instantiate the
// web entry's glue at import.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker } from 'tripgate';
import * as web from 'tripgate/web';
import { jsMessage, loadVectors, optionOfField, optionsOf } from './helpers.js';
import { packageSubject, runVector } from './vectors-runner.js';

const inDeno = typeof globalThis.Deno?.version?.deno === 'string';

const subject = packageSubject(CircuitBreaker);

const vectors = loadVectors();

test('the vector directory holds vectors', () => {
  assert.ok(vectors.length >= 20, `only ${vectors.length} vectors found`);
});

test(`the package name resolves to the ${inDeno ? 'deno' : 'node'} entry, on the web entry's one instance`, () => {
  assert.match(import.meta.resolve('tripgate'), inDeno ? /\/src\/deno\.js$/ : /\/src\/node\.js$/);
  assert.equal(CircuitBreaker, web.CircuitBreaker);
});

for (const { file, vector } of vectors) {
  test(`vector ${file}`, () => {
    runVector(vector, subject, { optionsOf, optionOfField, jsMessage });
  });
}
