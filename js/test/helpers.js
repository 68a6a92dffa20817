// Shared test helpers: a fake clock and the vector files.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { CircuitBreaker } from '../src/breaker.js';
import { configFields } from '../src/tables.js';

/** A fake monotonic clock in milliseconds; tests move it, never sleep. */
export class FakeClock {
  now = 0;
  read = () => this.now;
  advance(ms) {
    this.now += ms;
  }
}

/**
 * A breaker on a fake clock, recording every transition as `from>to:reason` (the wasm
 * module must be installed: import an entry point first).
 */
export function make(options = {}) {
  const clock = new FakeClock();
  const breaker = new CircuitBreaker({ ...options, clock: clock.read });
  const transitions = [];
  breaker.on('transition', (t) => transitions.push(`${t.from}>${t.to}:${t.reason}`));
  return { breaker, clock, transitions };
}

export const VECTOR_DIR = fileURLToPath(new URL('../../tests/vectors/', import.meta.url));

/** Every vector file, sorted by name, parsed. */
export function loadVectors() {
  return readdirSync(VECTOR_DIR)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((file) => ({ file, vector: JSON.parse(readFileSync(join(VECTOR_DIR, file), 'utf8')) }));
}

// Field names come from the core's table (through the package), never spelled here.
function fieldNamed(name) {
  const field = configFields.find((f) => f.name === name);
  if (field === undefined) throw new Error(`no config field ${name}`);
  return field;
}

/** A vector config key (`cooldown-ms`: durations in ms) as a JS option name (`cooldownMs`). */
export function optionOfKey(key) {
  const duration = key.endsWith('-ms') ? configFields.find((f) => `${f.name}-ms` === key && f.kind === 'duration') : undefined;
  return (duration ?? fieldNamed(key)).option;
}

/** A core field name (`max-cooldown`) as the JS option name (`maxCooldownMs`). */
export function optionOfField(name) {
  return fieldNamed(name).option;
}

/** A core config message with its field names in JS option names. */
export function jsMessage(message) {
  return message
    .split(' ')
    .map((word) => configFields.find((f) => f.name === word)?.option ?? word)
    .join(' ');
}

/** Vector `config` object to CircuitBreaker options. */
export function optionsOf(config = {}) {
  const options = {};
  for (const [key, value] of Object.entries(config)) options[optionOfKey(key)] = value;
  return options;
}
