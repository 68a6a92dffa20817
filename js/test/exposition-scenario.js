// The metrics scenario every host runs (tests/metrics/scenario.json) on the package's
// breakers, the exposition it must give (tests/metrics/expected.prom, which the Rust
// hosts are held to as well), and the checks each exposition passes: `promtool check
// metrics` (Prometheus' own validator) and equality with the expected one once
// normalised (families, HELP, TYPE, label sets in any order, values as numbers).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { CircuitBreaker } from '../src/breaker.js';
import { FakeClock, optionsOf } from './helpers.js';

const DIR = new URL('../../tests/metrics/', import.meta.url);

/** The expected exposition, in the Prometheus text format. */
export const expected = () => readFileSync(new URL('expected.prom', DIR), 'utf8');

/** Runs the scenario: its breakers by name (a Map, in creation order) and the clock. */
export function runScenario() {
  const scenario = JSON.parse(readFileSync(new URL('scenario.json', DIR), 'utf8'));
  const clock = new FakeClock();
  const breakers = new Map();
  for (const { name, config } of scenario.breakers) {
    breakers.set(name, new CircuitBreaker({ ...optionsOf(config), clock: clock.read }));
  }
  const held = new Map();
  const breaker = (name) => {
    const b = breakers.get(name);
    if (b === undefined) throw new Error(`the scenario names no breaker ${name}`);
    return b;
  };
  for (const step of scenario.steps) {
    if ('at-ms' in step) {
      clock.now = step['at-ms'];
    } else if ('hold' in step) {
      const permit = breaker(step.breaker).acquire();
      if (permit < 0) throw new Error(`${JSON.stringify(step)}: the breaker rejected the held call`);
      held.set(step.hold, [step.breaker, permit]);
    } else if ('record' in step) {
      const entry = held.get(step.record);
      if (entry === undefined) throw new Error(`${JSON.stringify(step)}: nothing held as ${step.record}`);
      held.delete(step.record);
      breaker(entry[0]).record(entry[1], step.outcome);
    } else if ('manual' in step) {
      const b = breaker(step.breaker);
      if (!['isolate', 'release', 'disable', 'reset'].includes(step.manual)) throw new Error(`unknown operation ${step.manual}`);
      b[step.manual]();
    } else if ('calls' in step) {
      const b = breaker(step.breaker);
      for (let i = 0; i < step.calls; i++) {
        const permit = b.acquire();
        if (permit >= 0) b.record(permit, step.outcome);
      }
    } else {
      throw new Error(`unknown step ${JSON.stringify(step)}`);
    }
  }
  if (held.size > 0) throw new Error(`permits still held at the end: ${[...held.keys()]}`);
  return { breakers, clock };
}

/** `promtool check metrics` on `text`: throws with promtool's findings. */
export function promtoolCheck(text) {
  const run = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  if (run.error?.code === 'ENOENT') {
    throw new Error("promtool is not installed: it comes with Debian's prometheus package (apt-get install -y prometheus; .ci/run installs it)");
  }
  const said = `${run.stdout ?? ''}${run.stderr ?? ''}`.trim();
  assert.ok(run.status === 0 && said === '', `promtool check metrics (exit ${run.status}): ${said}\n--- exposition ---\n${text}`);
}

function unescape(value) {
  return value.replace(/\\(.)/g, (_, c) => (c === 'n' ? '\n' : c));
}

const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/**
 * An exposition (Prometheus text or OpenMetrics) as `{ family: { help, type, samples:
 * { sortedLabels: value } } }`, families named as their samples are in the Prometheus text
 * format (an OpenMetrics counter `x` is `x_total`).
 */
export function normalise(text) {
  const openMetrics = text.trimEnd().endsWith('# EOF');
  const families = {};
  const meta = {};
  const family = (name) => (families[name] ??= { help: undefined, type: undefined, samples: {} });
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (m !== null) {
      (meta[m[2]] ??= {})[m[1] === 'HELP' ? 'help' : 'type'] = m[3];
      continue;
    }
    if (line.startsWith('#')) continue;
    const brace = line.indexOf('{');
    const space = line.lastIndexOf(' ');
    const name = brace >= 0 ? line.slice(0, brace) : line.slice(0, space);
    const labels = [];
    if (brace >= 0) {
      for (const [, key, value] of line.slice(brace, line.lastIndexOf('}') + 1).matchAll(LABEL)) labels.push([key, unescape(value)]);
    }
    labels.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const key = labels.map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(',');
    family(name).samples[key] = Number(line.slice(space + 1));
  }
  for (const [declared, { help, type }] of Object.entries(meta)) {
    const f = family(openMetrics && type === 'counter' ? `${declared}_total` : declared);
    // prom-client escapes backslashes and newlines in help; the core's need neither.
    Object.assign(f, { help, type });
  }
  return families;
}

/** Asserts that `text` exposes what tests/metrics/expected.prom does. */
export function assertMatchesExpected(text) {
  assert.deepStrictEqual(normalise(text), normalise(expected()));
}
