// The options of a FleetStore, checked up front: every error names the option
// (`error.option`). The bounds are the core's (core/src/fleet/options.rs, through the
// wasm module), so a Node member refuses exactly what a Rust member refuses.

import { randomBytes } from 'node:crypto';
import { rangeError, typeError } from '../errors.js';
import { checkDuration, fleetTables, memberIdOf } from './protocol.js';

const KNOWN = ['url', 'nodes', 'key', 'member', 'reconcileIntervalMs', 'storeTimeoutMs', 'maxBackoffMs', 'tls'];
const TLS_KNOWN = new Set(['ca', 'cert', 'key', 'servername', 'rejectUnauthorized']);
/** The JS option of each core duration option. */
const DURATIONS = {
  reconcileIntervalMs: 'reconcile-interval',
  storeTimeoutMs: 'store-timeout',
  maxBackoffMs: 'max-backoff',
};

function duration(options, option) {
  const core = DURATIONS[option];
  const value = options[option] ?? fleetTables.options[core].defaultMs;
  if (typeof value !== 'number') throw typeError(option, `${option} must be a number of ms`, value);
  const rule = checkDuration(core, value);
  if (rule !== null) throw rangeError(option, rule.replace(core, option), value);
  return value;
}

/**
 * A `redis://` or `rediss://` URL, parsed. Database 0 only: Redis pub/sub ignores the
 * database while keys do not, so fleets of one name on two databases would read separate
 * keys yet hear each other's events.
 */
function readUrl(url, option) {
  if (typeof url !== 'string') throw typeError(option, `${option} must be a string such as redis://127.0.0.1:6379`, url);
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    throw rangeError(option, `${option} must be a redis:// or rediss:// URL`, redact(url));
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw rangeError(option, `${option} must be a redis:// or rediss:// URL`, redact(url));
  }
  const path = parsed.pathname;
  if (path !== '' && path !== '/' && path !== '/0') {
    throw rangeError(option, `${option} names database ${path.slice(1)}: fleet mode runs on database 0 only ` +
      '(Redis pub/sub ignores the database, so fleets on two databases would hear each other); ' +
      'give each environment its own server or fleet names', redact(url));
  }
  return { url, secure: parsed.protocol === 'rediss:' };
}

/** The URL with any password replaced, for messages. */
export function redact(url) {
  return typeof url === 'string' ? url.replace(/^([a-z]+:\/\/[^:@/]*):[^@/]*@/i, '$1:***@') : url;
}

/** The options, checked, with the core's defaults. */
export function readStoreOptions(options) {
  if (typeof options !== 'object' || options === null) throw typeError('options', 'options must be an object', options);
  for (const key of Object.keys(options)) {
    if (!KNOWN.includes(key)) throw typeError(key, `unknown option ${key} (expected ${KNOWN.join(', ')})`, options[key]);
  }
  const { key, member } = options;
  let urls;
  let cluster = false;
  if (options.nodes !== undefined) {
    if (options.url !== undefined) throw typeError('nodes', 'give either url (one server) or nodes (a Redis Cluster), not both', options.nodes);
    if (!Array.isArray(options.nodes) || options.nodes.length === 0) {
      throw typeError('nodes', 'nodes must be a non-empty array of a Redis Cluster\'s node URLs', options.nodes);
    }
    urls = options.nodes.map((url) => readUrl(url, 'nodes'));
    cluster = true;
  } else {
    urls = [readUrl(options.url, 'url')];
  }
  let secret = null;
  if (key !== undefined && key !== null) {
    if (typeof key === 'string') secret = Buffer.from(key, 'utf8');
    else if (key instanceof Uint8Array) secret = Buffer.from(key);
    else throw typeError('key', 'key must be a string or a Uint8Array', key);
    if (secret.length < fleetTables.minKeyBytes) {
      throw rangeError('key', `key must be at least ${fleetTables.minKeyBytes} bytes (omit it to run unsigned)`, `${secret.length} bytes`);
    }
  }
  let memberId;
  if (member === undefined || member === null) {
    memberId = randomMemberId();
  } else {
    if (typeof member !== 'string') throw typeError('member', 'member must be a string (a pod or host name)', member);
    const length = Buffer.byteLength(member);
    if (length < 1 || length > 256) throw rangeError('member', 'member must be 1-256 bytes', member);
    memberId = memberIdOf(member);
  }
  return {
    urls: urls.map((u) => u.url),
    cluster,
    key: secret,
    memberId,
    tls: readTls(options.tls, urls.every((u) => u.secure), options.url ?? options.nodes),
    reconcileIntervalMs: duration(options, 'reconcileIntervalMs'),
    storeTimeoutMs: duration(options, 'storeTimeoutMs'),
    maxBackoffMs: duration(options, 'maxBackoffMs'),
  };
}

/** 16 random hex digits, not all zero (the wire's member ids are never 0). */
function randomMemberId() {
  for (;;) {
    const id = randomBytes(8).toString('hex');
    if (id !== '0000000000000000') return id;
  }
}

/** `tls`: Node TLS options for `rediss://` URLs (a private CA, a client certificate). */
function readTls(tls, secure, url) {
  if (tls === undefined || tls === null) return undefined;
  if (typeof tls !== 'object') throw typeError('tls', 'tls must be an object of TLS options (ca, cert, key, servername, rejectUnauthorized)', tls);
  if (!secure) throw rangeError('tls', 'tls needs rediss:// URLs', redact(url));
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
