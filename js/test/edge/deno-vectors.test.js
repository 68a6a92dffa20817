// Every shared vector (tests/vectors/*.json) through the package in Deno, imported by its
// name: Deno resolves `tripgate` through the exports map under the `deno` condition
// (src/web.js, wasm-bindgen --target web), checked below, with the runner and helpers the Node
// tests use (vectors-runner.js, helpers.js: node:assert, node:fs and node:test, which Deno
// provides). Run by scripts/edge-test.sh as `deno test --allow-read --no-lock`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { CircuitBreaker, initSync } from 'tripgate';
import * as web from 'tripgate/web';
import { jsMessage, loadVectors, optionOfField, optionsOf } from '../helpers.js';
import { packageSubject, runVector } from '../vectors-runner.js';

initSync({ module: new WebAssembly.Module(readFileSync(new URL('../../pkg/web/tripgate_wasm_bg.wasm', import.meta.url))) });

const subject = packageSubject(CircuitBreaker);
const vectors = loadVectors();

test('runs in Deno, and the vector directory holds vectors', () => {
  assert.equal(typeof globalThis.Deno?.version?.deno, 'string', 'not running in Deno');
  assert.equal(initSync, web.initSync, "'tripgate' is the web entry under Deno");
  assert.ok(vectors.length >= 20, `only ${vectors.length} vectors found`);
});

for (const { file, vector } of vectors) {
  test(`vector ${file}`, () => {
    runVector(vector, subject, { optionsOf, optionOfField, jsMessage });
  });
}
