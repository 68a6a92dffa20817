// Breaker options: read from the caller's object (own properties only, so nothing on
// Object.prototype can change a breaker), checked for type and form here, and for every
// rule by the core (js/crate/src/config.rs names the broken rule with the JS option).

import { rangeError, typeError } from './errors.js';
import { configFields, onInstall } from './tables.js';

/** `[option, code, kind]` of the numeric and flag fields; the list fields; every known option. */
let numeric = [];
let lists = [];
let known = new Set();
let readingLimitMs = 0;
let statusRange = [0, 0];
let grpcRange = [0, 0];

onInstall((t) => {
  numeric = [];
  lists = [];
  t.fields.forEach((field, code) => {
    if (field.kind === 'statuses' || field.kind === 'grpc-codes') lists.push(field);
    else numeric.push([field.option, code, field.kind]);
  });
  known = new Set([...configFields.map((f) => f.option), 'clock', 'timeoutMs']);
  readingLimitMs = t.readingLimitMs;
  statusRange = [t.statusMin, t.statusMax];
  grpcRange = [0, t.grpcMax];
});

/**
 * An own property of an options object; `undefined` when absent (or inherited). One that
 * cannot be read (a getter or Proxy that throws) is a TypeError naming it, with the cause.
 */
export function own(options, name) {
  try {
    return Object.hasOwn(options, name) ? options[name] : undefined;
  } catch (cause) {
    const error = typeError(name, `${name} could not be read`, undefined);
    error.cause = cause;
    throw error;
  }
}

/** Whether an option counts as given: `undefined` and `null` mean "not given". */
const given = (value) => value !== undefined && value !== null;

const TWO_64 = 2 ** 64;

/**
 * A number option of a config field kind (`count`, `percent`, `seed`, `duration`,
 * `factor`), checked for type and form; the core checks its rules.
 */
export function checkNumber(option, value, kind) {
  if (typeof value !== 'number') throw typeError(option, `${option} must be a number`, value);
  switch (kind) {
    case 'count':
    case 'percent':
      // Counts of 2^32 and more go on to the core, which refuses them by name.
      if (!Number.isInteger(value)) throw rangeError(option, `${option} must be an integer`, value);
      break;
    case 'seed':
      if (!Number.isInteger(value) || value < 0 || value >= TWO_64) {
        throw rangeError(option, `${option} must be an integer from 0 to 2^64 - 1`, value);
      }
      break;
    default:
      if (!Number.isFinite(value)) throw rangeError(option, `${option} must be a finite number`, value);
  }
  if (kind !== 'factor' && value < 0) throw rangeError(option, `${option} must be >= 0`, value);
  return value;
}

/**
 * What `read()` returns; whatever it throws (a getter, a Proxy trap, `next()`) becomes a
 * TypeError naming the option, with the thrown value as its `cause`, never read itself: it
 * may be a revoked Proxy, on which every operation throws.
 */
function iterating(option, value, read) {
  try {
    return read();
  } catch (cause) {
    const error = typeError(option, `${option} could not be iterated`, value);
    error.cause = cause;
    throw error;
  }
}

/**
 * An iterable of integers in [min, max]. Iterated by hand, not with `for...of`, so that
 * whatever the iterator throws (a getter, `[Symbol.iterator]()`, `next()`) is a TypeError
 * naming the option, while a bad entry is refused as its own error (and the iterator
 * closed, as `for...of` would).
 */
function checkCodes(option, value, [min, max]) {
  if (!given(value)) return undefined;
  if (typeof value !== 'object') throw typeError(option, `${option} must be an array of integers`, value);
  const iterate = iterating(option, value, () => value[Symbol.iterator]);
  if (typeof iterate !== 'function') throw typeError(option, `${option} must be an array of integers`, value);
  const iterator = iterating(option, value, () => iterate.call(value));
  if (typeof iterator !== 'object' || iterator === null) {
    throw typeError(option, `${option}[Symbol.iterator]() must return an iterator`, iterator);
  }
  const codes = [];
  for (;;) {
    const step = iterating(option, value, () => iterator.next());
    if (typeof step !== 'object' || step === null) {
      throw typeError(option, `${option}'s iterator must return objects from next()`, step);
    }
    if (iterating(option, value, () => step.done)) break;
    const code = iterating(option, value, () => step.value);
    let problem;
    if (typeof code !== 'number') problem = typeError(option, `${option} must hold numbers`, code);
    else if (!Number.isInteger(code) || code < min || code > max) {
      problem = rangeError(option, `${option} entries must be integers between ${min} and ${max}`, code);
    }
    if (problem !== undefined) {
      try {
        iterator.return?.();
      } catch {
        // The entry is what is wrong; closing the iterator is a courtesy.
      }
      throw problem;
    }
    codes.push(code);
  }
  return codes;
}

/**
 * A `timeoutMs`: a finite number of milliseconds > 0. Beyond setTimeout's 2^31 - 1 ms
 * (24.8 days) the deadline timer re-arms in steps (deadlines.js), so any length works.
 */
export function checkTimeout(option, value) {
  if (typeof value !== 'number') throw typeError(option, `${option} must be a number`, value);
  if (!(value > 0) || !Number.isFinite(value)) {
    throw rangeError(option, `${option} must be a finite number > 0`, value);
  }
  return value;
}

/**
 * The error for a value that is not a clock reading, or `undefined` for a reading: a
 * number of milliseconds in [0, 2^63 ns), i.e. `0 <= ms < 9223372036854.775808`.
 */
export function readingError(reading) {
  if (typeof reading !== 'number') {
    return typeError('clock', 'a clock reading must be a number of milliseconds', reading);
  }
  if (reading >= 0 && reading < readingLimitMs) return undefined;
  return rangeError('clock', 'a clock reading must be milliseconds from 0 to below ' +
    '9223372036854.775808 (2^63 ns)', reading);
}

export const defaultClock = () => performance.now();

/**
 * The constructor's options: the config array for the core (`NaN` = not given, by field
 * code), the fault lists, the clock with its first reading, and the default timeout.
 */
export function readOptions(options) {
  const read = readConfig(options);
  const clock = read.clock ?? defaultClock;
  return { ...read, clock, now: firstReading(clock) };
}

/**
 * What `readOptions` reads but the clock's first reading: `reconfigure` takes the same
 * options, and a live breaker reads its own clock. `clock` is `undefined` when not given.
 */
export function readConfig(options) {
  if (options === undefined) options = {};
  if (typeof options !== 'object' || options === null) {
    throw typeError('options', 'options must be an object', options);
  }
  let keys;
  try {
    keys = Object.keys(options);
  } catch (cause) {
    const error = typeError('options', 'options could not be read', undefined);
    error.cause = cause;
    throw error;
  }
  for (const key of keys) {
    if (!known.has(key)) {
      const hint = known.has(`${key}Ms`) ? ` (did you mean ${key}Ms?)` : '';
      throw typeError(key, `unknown option ${key}${hint}`, own(options, key));
    }
  }
  const values = new Float64Array(numeric.length + lists.length).fill(NaN);
  for (const [option, code, kind] of numeric) {
    const value = own(options, option);
    if (!given(value)) continue;
    if (kind === 'flag') {
      // A switch (`shadow`): a boolean, passed to the core as 0 or 1.
      if (typeof value !== 'boolean') throw typeError(option, `${option} must be a boolean`, value);
      values[code] = value ? 1 : 0;
    } else {
      values[code] = checkNumber(option, value, kind);
    }
  }
  let statuses;
  let grpcCodes;
  for (const field of lists) {
    if (field.kind === 'statuses') {
      const codes = checkCodes(field.option, own(options, field.option), statusRange);
      statuses = codes && Uint16Array.from(codes);
    } else {
      const codes = checkCodes(field.option, own(options, field.option), grpcRange);
      grpcCodes = codes && Uint8Array.from(codes);
    }
  }
  const clock = own(options, 'clock') ?? undefined;
  if (clock !== undefined && typeof clock !== 'function') {
    throw typeError('clock', 'clock must be a function returning milliseconds', clock);
  }
  const timeoutMs = own(options, 'timeoutMs');
  return {
    values,
    statuses,
    grpcCodes,
    clock,
    timeoutMs: given(timeoutMs) ? checkTimeout('timeoutMs', timeoutMs) : undefined,
  };
}

/**
 * The error for a config the core refused: its `"<option> <rule>"` (js/crate/src/config.rs)
 * names the option, whose value the message shows.
 */
export function configError(problem, options) {
  const option = problem.slice(0, problem.indexOf(' '));
  return rangeError(option, problem, options === undefined ? undefined : own(options, option));
}

/** A clock is read once at construction: one that cannot give a reading then is refused. */
function firstReading(clock) {
  let reading;
  try {
    reading = clock();
  } catch (cause) {
    const error = typeError('clock', 'clock threw when read', clock);
    error.cause = cause;
    throw error;
  }
  const error = readingError(reading);
  if (error !== undefined) throw error;
  return reading;
}

/** Whether a value is a clock reading (see `readingError`): the hot path's check. */
export function isReading(value) {
  return typeof value === 'number' && value >= 0 && value < readingLimitMs;
}
