// The package's `exports` map, resolved by Node itself (a package may import itself by name).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

test("'tripgate' resolves to the Node entry on Node", async () => {
  const byName = await import('tripgate');
  const direct = await import('../src/node.js');
  assert.equal(byName.CircuitBreaker, direct.CircuitBreaker);
  assert.equal(new byName.CircuitBreaker().state, 'closed');
});

test("'tripgate/web' is the workers entry and shares the Node entry's one wasm instance", async () => {
  const web = await import('tripgate/web');
  const node = await import('tripgate');
  assert.equal(web.CircuitBreaker, node.CircuitBreaker);
  assert.equal(new web.CircuitBreaker().state, 'closed');
});

test("'tripgate/tripgate.wasm' is the one .wasm file, or on Node a module whose default is it compiled", async () => {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  const wasmFile = new URL(`../${pkg.exports['./tripgate.wasm'].default}`, import.meta.url);
  for (const condition of ['workerd', 'worker', 'browser', 'default']) {
    assert.equal(new URL(`../${pkg.exports['./tripgate.wasm'][condition]}`, import.meta.url).href, wasmFile.href, condition);
  }
  const { default: module } = await import('tripgate/tripgate.wasm');
  assert.ok(module instanceof WebAssembly.Module);
  assert.deepEqual(WebAssembly.Module.exports(module), WebAssembly.Module.exports(new WebAssembly.Module(readFileSync(wasmFile))));
  assert.ok(existsSync(fileURLToPath(wasmFile)));
});

test('package.json pins every dependency exactly', () => {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  for (const [name, version] of Object.entries({ ...pkg.dependencies, ...pkg.devDependencies })) {
    assert.match(version, /^\d+\.\d+\.\d+$/, `${name}@${version}`);
  }
});

test("'tripgate/fleet' is a separate entry: the main entries load no Redis client", async () => {
  const fleet = await import('tripgate/fleet');
  assert.equal(typeof fleet.FleetStore.connect, 'function');
  for (const entry of ['src/node.js', 'src/web.js', 'src/api.js', 'src/breaker.js']) {
    const text = readFileSync(new URL(`../${entry}`, import.meta.url), 'utf8');
    assert.doesNotMatch(text, /['"](redis|\.\/fleet\/)/, `${entry} must not import the fleet adapter`);
  }
  // The client is imported lazily, inside FleetStore.connect, and is an optional peer.
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  assert.equal(pkg.peerDependenciesMeta.redis.optional, true);
  const index = readFileSync(new URL('../src/fleet/index.js', import.meta.url), 'utf8');
  assert.doesNotMatch(index, /^import .* from 'redis'/m);
});
