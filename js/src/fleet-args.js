// Arguments of the breaker's fleet methods, checked before they cross into wasm: a wrong
// type or range is an error naming the argument, never a silent conversion (a generation
// that lost precision as a float would fence the wrong events).

import { rangeError, typeError } from './errors.js';

const object = (name, value) => {
  if (typeof value !== 'object' || value === null) throw typeError(name, `${name} must be an object`, value);
  return value;
};

/** A whole number of ms >= 0 or a finite fraction of one. */
function durationMs(name, value) {
  if (typeof value !== 'number') throw typeError(name, `${name} must be a number`, value);
  if (!(value >= 0) || !Number.isFinite(value)) throw rangeError(name, `${name} must be a finite number >= 0`, value);
  return value;
}

/** `{ generation, kind, remainingMs }` to the wasm arguments (kind as its core code). */
export function fleetEvent(event, kinds) {
  object('event', event);
  const { generation, kind } = event;
  if (typeof generation !== 'number' && typeof generation !== 'bigint') {
    throw typeError('generation', 'generation must be a number', generation);
  }
  const gen = Number(generation);
  if (!Number.isSafeInteger(gen) || gen < 0 || BigInt(gen) !== BigInt(generation)) {
    throw rangeError('generation', 'generation must be an integer from 0 to 2^53 - 1', generation);
  }
  const code = kinds.indexOf(kind);
  if (code < 0) throw rangeError('kind', `kind must be one of ${kinds.join(', ')}`, kind);
  const remainingMs = event.remainingMs === undefined ? 0 : durationMs('remainingMs', event.remainingMs);
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
  if (typeof votes !== 'object' || votes === null || typeof votes[Symbol.iterator] !== 'function') {
    throw typeError('votes', 'votes must be an array of { member, ageMs }', votes);
  }
  const list = [...votes];
  const members = new BigUint64Array(list.length);
  const ages = new Float64Array(list.length);
  list.forEach((vote, i) => {
    object(`votes[${i}]`, vote);
    members[i] = memberId(vote.member, `votes[${i}].member`);
    ages[i] = durationMs(`votes[${i}].ageMs`, vote.ageMs);
  });
  return { members, ages };
}

/** `{ reachable, leaseMs }` to the wasm arguments (`NaN`: no lease). */
export function fleetStore(store) {
  object('store', store);
  const { reachable, leaseMs } = store;
  if (typeof reachable !== 'boolean') throw typeError('reachable', 'reachable must be a boolean', reachable);
  if (leaseMs === undefined || leaseMs === null) return { reachable, leaseMs: NaN };
  return { reachable, leaseMs: durationMs('leaseMs', leaseMs) };
}
