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

test("'tripgate/web' is the workers entry; 'tripgate/tripgate.wasm' is its module", async () => {
  const web = await import('tripgate/web');
  assert.equal(typeof web.initSync, 'function');
  const wasmPath = fileURLToPath(import.meta.resolve('tripgate/tripgate.wasm'));
  assert.ok(existsSync(wasmPath));
  web.initSync({ module: new WebAssembly.Module(readFileSync(wasmPath)) });
  assert.equal(new web.CircuitBreaker().state, 'closed');
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
