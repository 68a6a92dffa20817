// Outcomes as the numbers the wasm layer takes (js/crate/src/outcome.rs): an HTTP status
// is itself, a kind is `kindBase + ` its core code, a gRPC code `grpcBase + code`. One
// rule reads the status of a response-like value, for `record`, for the values `execute`'s
// function resolves with, and for the errors it throws; and with it the stay-away the
// answer asked for (SPEC § Retry-After), its headers read by the core's rules
// (js/crate/src/retry_after.rs): JS parses no header itself.

import { describe } from './errors.js';
import { onInstall, wasm } from './tables.js';

export let SUCCESS = 0;
export let TIMEOUT = 0;
export let CONNECTION_ERROR = 0;
export let FAILURE = 0;
export let CANCELLED = 0;
let KIND_BASE = 0;
let GRPC_BASE = 0;
let STATUS_MIN = 0;
let STATUS_MAX = 0;
let GRPC_MAX = 0;
/** How many errors `errorCode` reads, the error itself included: the core's MAX_CAUSES. */
let MAX_CAUSES = 0;
/** kind name -> code, for the kinds that carry no number. */
let kindCodes = new Map();
/** code - KIND_BASE -> kind name. */
let kindNames = [];
/** By status: whether the breaker honours a `Retry-After` on it (the core's `applies`). */
let retryAfterApplies = [];

onInstall((t) => {
  KIND_BASE = t.codes.kindBase;
  GRPC_BASE = t.codes.grpcBase;
  STATUS_MIN = t.statusMin;
  STATUS_MAX = t.statusMax;
  GRPC_MAX = t.grpcMax;
  MAX_CAUSES = t.maxCauses;
  kindNames = t.outcomeKinds;
  kindCodes = new Map();
  kindNames.forEach((name, code) => {
    if (name !== 'status' && name !== 'grpc') kindCodes.set(name, KIND_BASE + code);
  });
  SUCCESS = kindCodes.get('success');
  TIMEOUT = kindCodes.get('timeout');
  CONNECTION_ERROR = kindCodes.get('connection-error');
  FAILURE = kindCodes.get('failure');
  CANCELLED = kindCodes.get('cancelled');
  retryAfterApplies = [];
  for (const status of t.retryAfterStatuses) retryAfterApplies[status] = true;
});

/**
 * The stay-away (ms, 0 for none) that the last value, error or outcome read by `valueCode`,
 * `errorCode` or `outcomeCode` asked for, read from the response-like object that gave its
 * HTTP status. The callers read it right after the call that set it.
 */
export let askedMs = 0;

/** A header of a response-like object's `headers`, by its lower-case name; null when absent. */
function header(headers, name) {
  const value = typeof headers.get === 'function' ? headers.get(name) : headers[name];
  return typeof value === 'string' ? value : null;
}

/** Seconds since 1970 by the wall clock, for an HTTP date. */
const unixNow = () => Date.now() / 1000;

/**
 * How long a response-like value with HTTP status `status` asked its callers to stay away,
 * in ms (0: it did not ask), from its `headers` (a fetch `Headers`, a `Map` or anything
 * with `get(name)`, or a plain object by lower-case name, as Node's `IncomingMessage` has
 * them): its `Retry-After` on the statuses the core honours it on (429, 503), else its
 * `grpc-retry-pushback-ms`. The wall clock (for an HTTP date) is `nowS`, seconds since
 * 1970, read from `Date.now()` when not given. Never throws: headers that cannot be read
 * ask nothing.
 */
function stayAway(value, status, nowS) {
  try {
    const headers = value.headers;
    if (typeof headers !== 'object' || headers === null) return 0;
    if (retryAfterApplies[status] === true) {
      const retryAfter = header(headers, 'retry-after');
      if (retryAfter !== null) {
        const ms = wasm.retry_after_http_ms(retryAfter, nowS ?? unixNow());
        if (ms !== undefined) return ms;
      }
    }
    const pushback = header(headers, 'grpc-retry-pushback-ms');
    if (pushback !== null) return wasm.retry_after_grpc_ms(pushback) ?? 0;
  } catch {
    // A getter or `get` that throws: the answer asked nothing we can read.
  }
  return 0;
}

// What `statusCodeOf` says besides an outcome code (all negative: codes are >= 0).
const NO_STATUS = -1;
const BAD_STATUS = -2;
const UNREADABLE = -3;

const DIGITS = /^\d{1,3}$/;

/**
 * The rule for a response-like value (a fetch `Response`, `{ status }`, `{ statusCode }`,
 * an HTTP client's error): its `status`, or `statusCode` when `status` is absent, given as
 * an integer or its decimal string:
 * - 100–599: that HTTP status;
 * - 0: no HTTP answer — `Response.error()` and other network errors are a connection
 *   error, an opaque response (a browser's `no-cors` fetch, which did get an answer) a
 *   success;
 * - absent: NO_STATUS; anything else: BAD_STATUS; a getter that throws: UNREADABLE.
 */
function statusCodeOf(value) {
  let status;
  try {
    status = value.status;
    if (status === undefined || status === null) status = value.statusCode;
    if (status === undefined || status === null) return NO_STATUS;
    if (typeof status === 'string' && DIGITS.test(status)) status = Number(status);
    if (typeof status !== 'number' || !Number.isInteger(status)) return BAD_STATUS;
    if (status >= STATUS_MIN && status <= STATUS_MAX) return status;
    if (status !== 0) return BAD_STATUS;
    const type = value.type;
    return type === 'opaque' || type === 'opaqueredirect' ? SUCCESS : CONNECTION_ERROR;
  } catch {
    return UNREADABLE;
  }
}

/**
 * The outcome code of a value `fn` resolved with: by its status, else a success. Sets
 * `askedMs` to the stay-away a response with an HTTP status asked for.
 */
export function valueCode(value) {
  askedMs = 0;
  if (typeof value === 'object' && value !== null) {
    const code = statusCodeOf(value);
    if (code >= 0) {
      if (code < KIND_BASE) askedMs = stayAway(value, code);
      return code;
    }
  }
  return SUCCESS;
}

/**
 * The core's error table (js/crate/src/tables.rs `errorRules`), by the name an error
 * carries: for each of `errno`, `code` and `kind`, text -> [rule index, outcome code]. An
 * error's `code` is an errno name or a library's code; its `name` is its kind. The rule
 * of lowest index among those an error carries decides.
 */
let errorRules = { errno: new Map(), code: new Map(), kind: new Map() };

onInstall((t) => {
  errorRules = { errno: new Map(), code: new Map(), kind: new Map() };
  t.errorRules.forEach(([name, text, outcome], index) => {
    errorRules[name].set(text, [index, kindCodes.get(outcome)]);
  });
});

/** The outcome code the names `code` and `name` carry by the core's table, or -1. */
function namedCode(code, name) {
  let best = null;
  const consider = (rule) => {
    if (rule !== undefined && (best === null || rule[0] < best[0])) best = rule;
  };
  if (typeof code === 'string') {
    consider(errorRules.errno.get(code));
    consider(errorRules.code.get(code));
  }
  if (typeof name === 'string') consider(errorRules.kind.get(name));
  return best === null ? -1 : best[1];
}

/**
 * The outcome code of an error `fn` threw: the status it carries (the rule above); a gRPC
 * status of a grpc-js error; what its `code` and `name` say by the core's error table
 * (`ECONNREFUSED` a connection error, `TimeoutError` a timeout, `AbortError` cancelled);
 * else a generic failure.
 * Walks `cause` (fetch wraps socket errors as `TypeError: fetch failed` with the real
 * error as its cause) and the first error of an `AggregateError`, reading at most
 * MAX_CAUSES errors (the error itself included), the depth the Rust hosts follow
 * `source()`: a chain that loops back on itself, or never ends, still ends here. Never
 * throws: an error whose properties cannot be read is a failure.
 */
export function errorCode(error) {
  askedMs = 0;
  try {
    let err = error;
    for (let read = 1; typeof err === 'object' && err !== null; read++) {
      const status = statusCodeOf(err);
      if (status >= 0) {
        // An HTTP client's error that carries the answer's status (and headers).
        if (status < KIND_BASE) askedMs = stayAway(err, status);
        return status;
      }
      const code = err.code;
      if (typeof code === 'number' && Number.isInteger(code) && code >= 0 && code <= GRPC_MAX &&
        'details' in err && 'metadata' in err) {
        return GRPC_BASE + code; // @grpc/grpc-js ServiceError
      }
      const named = namedCode(code, err.name);
      if (named >= 0) return named;
      if (read === MAX_CAUSES) break;
      const cause = err.cause;
      if (cause !== undefined && cause !== err) {
        err = cause;
      } else if (Array.isArray(err.errors) && err.errors.length > 0) {
        err = err.errors[0];
      } else {
        break;
      }
    }
  } catch {
    // A getter or Proxy trap that throws: nothing more to learn from this error.
  }
  return FAILURE;
}

const OUTCOME_FORMS = "a kind ('success', 'timeout', ...), an HTTP status, a response with a status, or { grpc }";

function statusOutcome(status) {
  if (!Number.isInteger(status)) throw new RangeError(`HTTP status ${status} is not an integer`);
  if (status < STATUS_MIN || status > STATUS_MAX) {
    throw new RangeError(`HTTP status ${status} is outside ${STATUS_MIN}-${STATUS_MAX}`);
  }
  return status;
}

function grpcOutcome(code) {
  if (typeof code !== 'number') throw new TypeError(`gRPC code must be a number (received ${describe(code)})`);
  if (!Number.isInteger(code) || code < 0 || code > GRPC_MAX) {
    throw new RangeError(`gRPC code ${code} is not an integer in 0-${GRPC_MAX}`);
  }
  return GRPC_BASE + code;
}

const NAMED = /^(status|grpc):(\d+)$/;

/**
 * The outcome code of what a caller passes to `record`. A response-like object goes by
 * the same rule as in `execute`; what that rule cannot read is refused (a `TypeError` or
 * `RangeError` that names the value), since `record` is told the outcome.
 */
export function outcomeCode(outcome) {
  switch (typeof outcome) {
    case 'number':
      return statusOutcome(outcome);
    case 'string': {
      // The commonest outcome, without a map lookup.
      if (outcome === 'success') return SUCCESS;
      const code = kindCodes.get(outcome);
      if (code !== undefined) return code;
      const match = NAMED.exec(outcome);
      if (match !== null) return match[1] === 'status' ? statusOutcome(Number(match[2])) : grpcOutcome(Number(match[2]));
      throw new TypeError(`unknown outcome ${describe(outcome)}: expected ${[...kindCodes.keys()].join(', ')}, ` +
        'an HTTP status, or { grpc }');
    }
    case 'bigint':
      throw new TypeError(`outcome ${describe(outcome)} is a BigInt: pass an HTTP status as a number`);
    case 'object':
      if (outcome !== null) return objectOutcome(outcome);
      break;
    default:
      break;
  }
  throw new TypeError(`outcome must be ${OUTCOME_FORMS} (received ${describe(outcome)})`);
}

function objectOutcome(outcome) {
  askedMs = 0;
  let grpc;
  try {
    grpc = Object.hasOwn(outcome, 'grpc') ? outcome.grpc : undefined;
  } catch (cause) {
    throw new TypeError(`outcome ${describe(outcome)} could not be read`, { cause });
  }
  if (grpc !== undefined) return grpcOutcome(grpc);
  const code = statusCodeOf(outcome);
  if (code >= 0) {
    if (code < KIND_BASE) askedMs = stayAway(outcome, code);
    return code;
  }
  if (code === NO_STATUS) {
    throw new TypeError(`outcome must be ${OUTCOME_FORMS} (received ${describe(outcome)} without a status)`);
  }
  if (code === UNREADABLE) throw new TypeError(`the status of outcome ${describe(outcome)} could not be read`);
  throw new RangeError(`the status of outcome ${describe(outcome)} is not an HTTP status (${STATUS_MIN}-${STATUS_MAX}) ` +
    'or 0 (no answer)');
}

/** An outcome code as the outcome `record` takes (`'timeout'`, `503`, `{ grpc: 14 }`, ...). */
function outcomeOfCode(code) {
  if (code < KIND_BASE) return code;
  if (code >= GRPC_BASE) return { grpc: code - GRPC_BASE };
  return kindNames[code - KIND_BASE];
}

/** How `execute` classifies a value `fn` resolved with, as an outcome for `record`. */
export function classifyResult(value) {
  return outcomeOfCode(valueCode(value));
}

/** How `execute` classifies an error `fn` threw, as an outcome for `record`. */
export function classifyError(error) {
  return outcomeOfCode(errorCode(error));
}

/** The JS face of a wall-clock reading in ms: a finite number, else a TypeError. */
function wallClockSeconds(nowMs) {
  if (nowMs === undefined) return unixNow();
  if (typeof nowMs !== 'number' || !Number.isFinite(nowMs)) {
    throw new TypeError(`nowMs must be a finite number of ms since 1970 (received ${describe(nowMs)})`);
  }
  return nowMs / 1000;
}

/** A header value for the wasm module's reading (which must be installed). */
function headerValue(value) {
  if (wasm === null) {
    throw new Error('tripgate: the wasm module is not initialised; call initSync() or init() first');
  }
  if (typeof value !== 'string') throw new TypeError(`a header value must be a string (received ${describe(value)})`);
  return value;
}

/**
 * The stay-away an upstream's answer asks for (SPEC § Retry-After), read by the core's
 * rules: whole milliseconds, or null for a value that asks nothing. `nowMs` is the wall
 * clock (`Date.now()` by default), which an HTTP date is measured against.
 */
export const retryAfter = Object.freeze({
  /** An HTTP `Retry-After` value (delay-seconds or an IMF-fixdate): ms, 0 for a date past, or null. */
  http(value, nowMs) {
    const text = headerValue(value);
    return wasm.retry_after_http_ms(text, wallClockSeconds(nowMs)) ?? null;
  },
  /** A `grpc-retry-pushback-ms` value: ms, or null (negative or malformed). */
  grpcPushback(value) {
    const text = headerValue(value);
    return wasm.retry_after_grpc_ms(text) ?? null;
  },
  /** Whether the breaker honours a `Retry-After` on an answer with this HTTP status (429, 503). */
  applies(status) {
    return typeof status === 'number' && retryAfterApplies[status] === true;
  },
  /**
   * What `execute` and `record` read from a response-like value (a fetch `Response`, an
   * object with `status` and `headers`): the ms its `Retry-After` (on 429 or 503) or
   * `grpc-retry-pushback-ms` asks for, 0 when it asks nothing or has no HTTP status.
   */
  of(response, nowMs) {
    const nowS = wallClockSeconds(nowMs);
    if (typeof response !== 'object' || response === null) return 0;
    const status = statusCodeOf(response);
    return status >= 0 && status < KIND_BASE ? stayAway(response, status, nowS) : 0;
  },
});
