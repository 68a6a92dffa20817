// Shared test helpers: a fake clock and the vector files.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';

/** A fake monotonic clock in milliseconds; tests move it, never sleep. */
export class FakeClock {
  now = 0;
  read = () => this.now;
  advance(ms) {
    this.now += ms;
  }
}

export const VECTOR_DIR = fileURLToPath(new URL('../../tests/vectors/', import.meta.url));

/** Every vector file, sorted by name, parsed. */
export function loadVectors() {
  return readdirSync(VECTOR_DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => ({ file, vector: JSON.parse(readFileSync(join(VECTOR_DIR, file), 'utf8')) }));
}

const DURATION_FIELDS = new Set(['window', 'cooldown', 'max-cooldown', 'slow-call-duration', 'probe-timeout']);
const camel = (kebab) => kebab.replace(/-([a-z])/g, (_, c) => c.toUpperCase());

/** A vector config key (`cooldown-ms`) as a JS option name (`cooldownMs`). */
export const optionOfKey = camel;

/** A core field name (`max-cooldown`) as the JS option name (`maxCooldownMs`). */
export function optionOfField(field) {
  return camel(field) + (DURATION_FIELDS.has(field) ? 'Ms' : '');
}

/** A core config message with its field names in JS option names. */
export function jsMessage(message) {
  return message
    .split(' ')
    .map((word) => (/^[a-z]+(-[a-z]+)*$/.test(word) && isField(word) ? optionOfField(word) : word))
    .join(' ');
}

const FIELDS = new Set([
  'failure-threshold', 'min-calls', 'failure-rate', 'slow-call-rate', 'slow-call-duration', 'window',
  'buckets', 'window-calls', 'cooldown', 'backoff-factor', 'max-cooldown', 'jitter-percent',
  'max-in-flight', 'half-open-max-probes', 'half-open-required-successes', 'half-open-success-rate',
  'probe-timeout',
]);
const isField = (word) => FIELDS.has(word);

/** Vector `config` object to CircuitBreaker options. */
export function optionsOf(config = {}) {
  const options = {};
  for (const [key, value] of Object.entries(config)) options[optionOfKey(key)] = value;
  return options;
}
