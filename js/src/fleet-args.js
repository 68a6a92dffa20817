// Arguments of the breaker's fleet methods, checked before they cross into wasm: a wrong
// type or range is an error naming the argument, never a silent conversion (a generation
// that lost precision as a float would fence the wrong events).

import { rangeError, typeError } from './errors.js';

/**
 * `value`'s fields `keys`, read once: a value that is no object, or whose reads throw (a
 * revoked Proxy, a getter or trap that throws), is the argument's TypeError, the thrown
 * value its `cause`.
 */
function fields(name, value, keys) {
  if (typeof value !== 'object' || value === null) throw typeError(name, `${name} must be an object`, value);
  try {
    return Object.fromEntries(keys.map((key) => [key, value[key]]));
  } catch (cause) {
    const error = typeError(name, `${name} must be an object whose fields can be read`, value);
    error.cause = cause;
    throw error;
  }
}

/** A whole number of ms >= 0 or a finite fraction of one. */
function durationMs(name, value) {
  if (typeof value !== 'number') throw typeError(name, `${name} must be a number`, value);
  if (!(value >= 0) || !Number.isFinite(value)) throw rangeError(name, `${name} must be a finite number >= 0`, value);
  return value;
}

/** `{ generation, kind, remainingMs }` to the wasm arguments (kind as its core code). */
export function fleetEvent(event, kinds) {
  const { generation, kind, remainingMs: remaining } = fields('event', event, ['generation', 'kind', 'remainingMs']);
  if (typeof generation !== 'number' && typeof generation !== 'bigint') {
    throw typeError('generation', 'generation must be a number', generation);
  }
  const gen = Number(generation);
  if (!Number.isSafeInteger(gen) || gen < 0 || BigInt(gen) !== BigInt(generation)) {
    throw rangeError('generation', 'generation must be an integer from 0 to 2^53 - 1', generation);
  }
  const code = kinds.indexOf(kind);
  if (code < 0) throw rangeError('kind', `kind must be one of ${kinds.join(', ')}`, kind);
  const remainingMs = remaining === undefined ? 0 : durationMs('remainingMs', remaining);
  return { generation: gen, kind: code, remainingMs };
}

const HEX = /^[0-9a-f]{1,16}$/i;
const U64 = 2n ** 64n;

/** A member id as the core counts it: a u64 from a bigint, a safe integer or hex digits. */
export function memberId(value, name = 'member') {
  if (typeof value === 'string') {
    if (!HEX.test(value)) throw rangeError(name, `${name} must be 1 to 16 hex digits`, value);
    return BigInt(`0x${value}`);
  }
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  if (typeof value === 'bigint' && value >= 0n && value < U64) return value;
  throw typeError(name, `${name} must be a bigint below 2^64, a safe integer >= 0 or 1 to 16 hex digits`, value);
}

/** `[{ member, ageMs }]` to the two arrays the wasm side reads. */
export function checkVotes(votes) {
  const list = voteList(votes);
  const members = new BigUint64Array(list.length);
  const ages = new Float64Array(list.length);
  list.forEach((vote, i) => {
    const { member, ageMs } = fields(`votes[${i}]`, vote, ['member', 'ageMs']);
    members[i] = memberId(member, `votes[${i}].member`);
    ages[i] = durationMs(`votes[${i}].ageMs`, ageMs);
  });
  return { members, ages };
}

/** `votes` as an array: an iterable that can be read to its end. */
function voteList(votes) {
  const message = 'votes must be an array of { member, ageMs }';
  if (typeof votes !== 'object' || votes === null) throw typeError('votes', message, votes);
  try {
    if (typeof votes[Symbol.iterator] !== 'function') throw typeError('votes', message, votes);
    return [...votes];
  } catch (cause) {
    if (cause?.option === 'votes') throw cause;
    const error = typeError('votes', message, votes);
    error.cause = cause;
    throw error;
  }
}

/** `{ reachable, leaseMs }` to the wasm arguments (`NaN`: no lease). */
export function fleetStore(store) {
  const { reachable, leaseMs } = fields('store', store, ['reachable', 'leaseMs']);
  if (typeof reachable !== 'boolean') throw typeError('reachable', 'reachable must be a boolean', reachable);
  if (leaseMs === undefined || leaseMs === null) return { reachable, leaseMs: NaN };
  return { reachable, leaseMs: durationMs('leaseMs', leaseMs) };
}
