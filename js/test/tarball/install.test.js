// The packed package (`npm pack`, with its prepack) installed into an empty project outside
// the repository, as a user installs it, and each row of the README's "Where it runs" table
// run there: one `describe` per row, named as the row's last column. The README's examples
// are read from the README itself, so they cannot drift from what is tested.
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import {
  DENO, DENO_ENV, JS, NODES, assertExists, cleanup, installInEmptyProject, pack, readmeExample, readmePrints,
  readmeTable, runOk, tarballFiles, tempDir, webSnippet,
} from './helpers.js';

const ROWS = ['Node ESM', 'Node require(esm)', 'workerd', 'Deno', 'bundlers'];

let packed;
let tarball;
let project;
before(() => {
  packed = tempDir('packed');
  const done = pack(JS, packed);
  assert.equal(done.status, 0, `npm pack failed:\n${done.stdout}\n${done.stderr}`);
  [tarball] = done.tarballs;
  project = installInEmptyProject(tarball);
});
after(() => cleanup(packed, project));

/** Writes `text` to a file of the consumer project; its path. */
function write(name, text) {
  writeFileSync(join(project, name), text);
  return join(project, name);
}

/**
 * Code run after the web snippet (which imports `CircuitBreaker`): two 503s trip a breaker
 * and the next call is turned away. `-1 open` when the module works.
 */
const TRIP = `
function tripgateTrip() {
  const breaker = new CircuitBreaker({ failureThreshold: 2, minCalls: 2 });
  for (let i = 0; i < 2; i++) breaker.record(breaker.acquire(), 503);
  return \`\${breaker.acquire()} \${breaker.lastRejection?.reason}\`;
}
`;

test("the README's table has one row per describe of this file", () => {
  assert.deepEqual(readmeTable('## Where it runs').map((row) => row.at(-1)), ROWS);
});

describe('Node ESM', () => {
  for (const [name, node] of Object.entries(NODES)) {
    test(`${name}: the README's first example prints what the README says`, () => {
      assertExists(node, name);
      const printed = runOk(node, [write('first.mjs', readmeExample('js'))], { cwd: project }).stdout;
      assert.ok(printed.split(/\s+/).join(' ').includes(readmePrints()), `printed ${JSON.stringify(printed)}`);
    });
    test(`${name}: the README's web snippet`, () => {
      const file = write('web.mjs', `${webSnippet()}${TRIP}console.log(tripgateTrip());\n`);
      assert.equal(runOk(node, [file], { cwd: project }).stdout, '-1 open\n');
    });
  }
});

describe('Node require(esm)', () => {
  const script = `const { CircuitBreaker } = require('tripgate');\n${TRIP}console.log(tripgateTrip());\n`;
  for (const [name, node] of Object.entries(NODES)) {
    test(`${name}: require('tripgate') from CommonJS, with no warning`, () => {
      assertExists(node, name);
      const done = runOk(node, [write('required.cjs', script)], { cwd: project });
      assert.equal(done.stdout, '-1 open\n');
      assert.equal(done.stderr, '');
    });
  }
});

describe('Deno', () => {
  // No permission flags, and no prompt: reading the wasm would need --allow-read.
  const deno = (file) => runOk(DENO, ['run', '--no-prompt', '--no-lock', '--node-modules-dir=manual', file], { cwd: project, env: DENO_ENV });
  test("the README's first example, importing 'tripgate', prints what the README says", () => {
    const printed = deno(write('first.mjs', readmeExample('js'))).stdout;
    assert.ok(printed.split(/\s+/).join(' ').includes(readmePrints()), `printed ${JSON.stringify(printed)}`);
  });
  test("the README's web snippet", () => {
    assert.equal(deno(write('web.mjs', `${webSnippet()}${TRIP}console.log(tripgateTrip());\n`)).stdout, '-1 open\n');
  });
});

/**
 * The web snippet with a fetch handler that also imports the bare `tripgate`, bundled by
 * esbuild with `conditions`, every `.wasm` import left as a module of its own beside the
 * bundle (wrangler's `CompiledWasm` rule).
 * The bundle's folder, and the inputs esbuild read.
 */
async function bundle(conditions, platform) {
  const { build } = await import('esbuild');
  const out = join(project, `bundle-${platform}-${conditions.join('-') || 'none'}`);
  mkdirSync(out, { recursive: true });
  // The bare name too: in these bundles it must be the same web entry as `tripgate/web`.
  const handler = "import * as bare from 'tripgate';\nexport default { fetch: () => new Response(`${tripgateTrip()} ${bare.CircuitBreaker === CircuitBreaker}`) };\n";
  const worker = write('worker.mjs', `${webSnippet()}${TRIP}${handler}`);
  const wasmModules = {
    name: 'wasm-modules',
    setup(builder) {
      builder.onResolve({ filter: /\.wasm$/ }, async ({ path, resolveDir, kind, pluginData }) => {
        if (pluginData === 'wasm-modules') return undefined;
        const found = await builder.resolve(path, { resolveDir, kind, pluginData: 'wasm-modules' });
        copyFileSync(found.path, join(out, basename(found.path)));
        return { path: `./${basename(found.path)}`, external: true };
      });
    },
  };
  const result = await build({
    entryPoints: [worker], bundle: true, format: 'esm', platform, conditions, outfile: join(out, 'worker.js'),
    plugins: [wasmModules], metafile: true, logLevel: 'silent', absWorkingDir: project,
  });
  return { out, inputs: Object.keys(result.metafile.inputs) };
}

/** The bundle run in workerd (miniflare); what its fetch answers. */
async function inWorkerd(out) {
  const { Miniflare } = await import('miniflare');
  const mf = new Miniflare({
    scriptPath: join(out, 'worker.js'), modules: true, modulesRoot: out, compatibilityDate: '2026-04-01',
    modulesRules: [{ type: 'CompiledWasm', include: ['**/*.wasm'] }],
  });
  try {
    return await (await mf.dispatchFetch('http://localhost/')).text();
  } finally {
    await mf.dispose();
  }
}

describe('workerd', () => {
  test("the README's web snippet, bundled as wrangler bundles a Worker, in workerd", async () => {
    // wrangler's esbuild conditions; its module rules give `.wasm` imports as compiled modules.
    const { out, inputs } = await bundle(['workerd', 'worker', 'browser'], 'neutral');
    assert.ok(inputs.some((f) => f.endsWith('node_modules/tripgate/src/web.js')), inputs.join('\n'));
    assert.equal(await inWorkerd(out), '-1 open true');
  });
});

describe('bundlers', () => {
  test("esbuild for browsers: the web entry and the .wasm file, no node:fs; the bundle runs in workerd", async () => {
    const { out, inputs } = await bundle([], 'browser');
    assert.ok(inputs.some((f) => f.endsWith('node_modules/tripgate/src/web.js')), inputs.join('\n'));
    assert.ok(!inputs.some((f) => f.includes('src/node') || f.includes('node:')), inputs.join('\n'));
    assert.doesNotMatch(readFileSync(join(out, 'worker.js'), 'utf8'), /node:fs/);
    assert.equal(await inWorkerd(out), '-1 open true');
  });
});

describe('TypeScript', () => {
  test("the README's ts example passes tsc --strict (tests/release/consumers.py's settings)", () => {
    write('example.ts', readmeExample('ts'));
    const config = JSON.parse(readFileSync(join(JS, 'test/tarball/consumer-tsconfig.json'), 'utf8'));
    write('tsconfig.json', JSON.stringify({ ...config, files: ['example.ts'] }));
    runOk(process.execPath, [join(JS, 'node_modules/typescript/bin/tsc'), '-p', project], { cwd: project });
  });
});

describe('the tarball', () => {
  test('one wasm, the licenses, the files the exports map names, and metadata a registry shows', () => {
    const files = tarballFiles(tarball);
    assert.deepEqual(Object.keys(files).filter((f) => f.endsWith('.wasm')), ['pkg/web/tripgate_wasm_bg.wasm']);
    for (const license of ['LICENSE-MIT', 'LICENSE-APACHE']) assert.ok(license in files, `${license} is packed`);
    const manifest = JSON.parse(readFileSync(join(project, 'node_modules/tripgate/package.json'), 'utf8'));
    for (const target of exportTargets(manifest.exports)) {
      assert.ok(target.slice(2) in files, `the exports map names ${target}, which is not packed`);
    }
    assert.equal(manifest.license, 'MIT OR Apache-2.0');
    assert.ok(manifest.description.length > 20 && manifest.keywords.length >= 3);
    for (const field of ['repository', 'homepage', 'bugs']) assert.ok(!(field in manifest), `no ${field} until there is one`);
    assert.equal(manifest.engines.node, '^20.19.0 || >=22.12.0');
  });
});

/** Every file an exports map points to, under any condition. */
function exportTargets(entry) {
  if (typeof entry === 'string') return [entry];
  return Object.values(entry).flatMap(exportTargets);
}
