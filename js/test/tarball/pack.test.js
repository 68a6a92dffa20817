// `npm pack` from a checkout that has never built the wasm (no js/pkg/): the tarball holds
// the wasm, built by `prepack`, or there is no tarball and npm exits non-zero with a message
// naming what is missing. Never a tarball without the wasm.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, lstatSync, mkdirSync, readFileSync, readlinkSync, symlinkSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { ROOT, cleanup, pack, runOk, tarballFile, tarballFiles, tempDir } from './helpers.js';

let work;
let tree;
before(() => {
  work = tempDir('pack');
  tree = join(work, 'tree');
  copyCheckout(tree);
});
after(() => cleanup(work));

/**
 * The files git would check out (tracked, and new ones not ignored), copied as they are in
 * the working tree: what a fresh clone of this commit holds, so no js/pkg/.
 */
function copyCheckout(dest) {
  const listed = runOk('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT });
  for (const path of new Set(listed.stdout.split('\0').filter(Boolean))) {
    const from = join(ROOT, path);
    if (!existsSync(from) && !isLink(from)) continue; // deleted in the working tree
    mkdirSync(dirname(join(dest, path)), { recursive: true });
    if (isLink(from)) symlinkSync(readlinkSync(from), join(dest, path));
    else copyFileSync(from, join(dest, path));
  }
}

function isLink(path) {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Cargo's target dir for this checkout: the copy builds there, so it reuses what is built. */
function targetDir() {
  const meta = runOk('cargo', ['metadata', '--format-version', '1', '--no-deps'], { cwd: ROOT, maxBuffer: 64 << 20 });
  return JSON.parse(meta.stdout).target_directory;
}

test('without cargo, npm pack refuses, names what is missing and leaves no tarball', () => {
  assert.ok(!existsSync(join(tree, 'js/pkg')), 'the copied checkout must not hold js/pkg/');
  const out = join(work, 'refused');
  mkdirSync(out);
  // The PATH without every folder that holds a cargo: node, npm and bash stay.
  const path = process.env.PATH.split(delimiter).filter((dir) => !existsSync(join(dir, 'cargo'))).join(delimiter);
  assert.equal(spawnSync('cargo', ['--version'], { env: { ...process.env, PATH: path } }).error?.code, 'ENOENT');
  const packed = pack(join(tree, 'js'), out, { ...process.env, PATH: path });
  assert.notEqual(packed.status, 0, `npm pack must fail without cargo:\n${packed.stdout}\n${packed.stderr}`);
  assert.match(packed.stderr, /tripgate prepack: cargo is missing/);
  assert.deepEqual(packed.tarballs, [], 'no tarball is left behind');
});

test('from a checkout without js/pkg/, prepack builds the wasm and the tarball holds it once', () => {
  assert.ok(!existsSync(join(tree, 'js/pkg')), 'the copied checkout must not hold js/pkg/');
  const out = join(work, 'built');
  mkdirSync(out);
  const packed = pack(join(tree, 'js'), out, { ...process.env, CARGO_TARGET_DIR: targetDir() });
  assert.equal(packed.status, 0, `npm pack failed:\n${packed.stdout}\n${packed.stderr}`);
  assert.equal(packed.tarballs.length, 1);
  const files = tarballFiles(packed.tarballs[0]);
  const wasm = Object.keys(files).filter((f) => f.endsWith('.wasm'));
  assert.deepEqual(wasm, ['pkg/web/tripgate_wasm_bg.wasm'], 'one wasm file, which the Node and web entries share');
  const bytes = tarballFile(packed.tarballs[0], wasm[0]);
  assert.ok(WebAssembly.validate(bytes), 'the packed wasm is a valid module');
  for (const license of ['LICENSE-MIT', 'LICENSE-APACHE']) {
    assert.deepEqual(tarballFile(packed.tarballs[0], license), readFileSync(join(ROOT, license)), `${license} is the repository's`);
  }
});
