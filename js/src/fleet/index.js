// tripgate/fleet: joins a breaker to a fleet of breakers through Redis (FLEET.md; the wire
// format is wit/fleet.md). A separate entry point so that users without fleet mode never
// load a Redis client; the `redis` package (v6) is an optional peer dependency, loaded
// only by `joinFleet`.

import { CircuitBreaker } from '../breaker.js';
import { rangeError, typeError } from '../errors.js';
import { FleetMember, StoreTimeoutError } from './member.js';
import { validMember, validName } from './wire.js';

export { FleetMember, StoreTimeoutError };

const KNOWN = new Set(['url', 'name', 'key', 'reconcileIntervalMs', 'storeTimeoutMs', 'memberId', 'tls']);
const TLS_KNOWN = new Set(['ca', 'cert', 'key', 'servername', 'rejectUnauthorized']);
const DEFAULTS = { reconcileIntervalMs: 1_000, storeTimeoutMs: 250 };

function positiveMs(options, option) {
  const value = options[option] ?? DEFAULTS[option];
  if (typeof value !== 'number') throw typeError(option, `${option} must be a number`, value);
  if (!(value > 0) || !Number.isFinite(value)) throw rangeError(option, `${option} must be a finite number > 0`, value);
  return value;
}

/** The options, checked: every error names the option (`error.option`). */
export function readFleetOptions(options) {
  if (typeof options !== 'object' || options === null) throw typeError('options', 'options must be an object', options);
  for (const key of Object.keys(options)) {
    if (!KNOWN.has(key)) throw typeError(key, `unknown option ${key} (expected ${[...KNOWN].join(', ')})`, options[key]);
  }
  const { url, name, key, memberId } = options;
  if (typeof url !== 'string') throw typeError('url', 'url must be a string such as redis://127.0.0.1:6379', url);
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    throw rangeError('url', 'url must be a redis:// or rediss:// URL', url);
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw rangeError('url', 'url must be a redis:// or rediss:// URL', url);
  }
  if (!validName(name)) {
    throw (typeof name === 'string' ? rangeError : typeError)('name',
      'name must be 1-128 characters from A-Z a-z 0-9 . _ - :', name);
  }
  let secret = null;
  if (key !== undefined && key !== null) {
    if (typeof key === 'string') secret = new TextEncoder().encode(key);
    else if (key instanceof Uint8Array) secret = Uint8Array.from(key);
    else throw typeError('key', 'key must be a string or a Uint8Array', key);
    if (secret.length === 0) throw rangeError('key', 'key must not be empty (omit it to run unsigned)', key);
  }
  if (memberId !== undefined && !validMember(memberId)) {
    throw rangeError('memberId', 'memberId must be 16 lowercase hex digits', memberId);
  }
  return {
    url,
    name,
    key: secret,
    tls: readTls(options.tls, parsed.protocol === 'rediss:', url),
    memberId,
    reconcileIntervalMs: positiveMs(options, 'reconcileIntervalMs'),
    storeTimeoutMs: positiveMs(options, 'storeTimeoutMs'),
  };
}

/** `tls`: Node TLS options for a `rediss://` URL (a private CA, a client certificate). */
function readTls(tls, secure, url) {
  if (tls === undefined || tls === null) return undefined;
  if (typeof tls !== 'object') throw typeError('tls', 'tls must be an object of TLS options (ca, cert, key, servername, rejectUnauthorized)', tls);
  if (!secure) throw rangeError('tls', 'tls needs a rediss:// url', url);
  const out = {};
  for (const [name, value] of Object.entries(tls)) {
    if (!TLS_KNOWN.has(name)) throw typeError('tls', `unknown tls option ${name} (expected ${[...TLS_KNOWN].join(', ')})`, value);
    const ok = name === 'rejectUnauthorized' ? typeof value === 'boolean'
      : name === 'servername' ? typeof value === 'string'
        : typeof value === 'string' || value instanceof Uint8Array ||
          (Array.isArray(value) && value.every((v) => typeof v === 'string' || v instanceof Uint8Array));
    if (!ok) throw typeError('tls', `tls.${name} has the wrong type`, value);
    out[name] = value;
  }
  return out;
}

async function redisClient() {
  try {
    return (await import('redis')).createClient;
  } catch (cause) {
    const error = new Error('tripgate/fleet needs the npm package redis 6 (an optional peer dependency): npm install redis@6');
    error.code = 'ERR_TRIPGATE_NO_REDIS';
    error.cause = cause;
    throw error;
  }
}

/**
 * Joins `breaker` (created with `fleetQuorum`) to the fleet `name` on the Redis at `url`.
 * Resolves once connected, subscribed and reconciled — or, with the store down, after
 * `storeTimeoutMs`, degraded: the member keeps reconnecting in the background.
 */
/** Breakers with a member: two members driving one breaker would contradict each other. */
const joined = new WeakSet();

export async function joinFleet(breaker, options) {
  if (!(breaker instanceof CircuitBreaker)) {
    throw typeError('breaker', 'breaker must be a CircuitBreaker from tripgate', breaker);
  }
  if (!breaker.fleetStatus().enabled) {
    throw rangeError('breaker', 'breaker must be created with fleetQuorum to join a fleet', breaker);
  }
  const checked = readFleetOptions(options);
  if (joined.has(breaker)) throw rangeError('breaker', 'breaker is already in a fleet: leave() that membership first', breaker);
  const createClient = await redisClient();
  if (joined.has(breaker)) throw rangeError('breaker', 'breaker is already in a fleet: leave() that membership first', breaker);
  joined.add(breaker);
  const member = new FleetMember(breaker, checked, createClient, () => joined.delete(breaker));
  await member.start();
  return member;
}

