// tripgate: the JS face of the breaker. Every decision is made by tripgate-core (Rust,
// compiled to wasm); this file translates options, outcomes and events, and wraps calls
// in `execute`. Hot paths (`acquire`, `record`, `execute`) pass only numbers across the
// boundary and allocate no JS object of their own.
//
// Permits are plain numbers: a handle into a small table of outstanding permits that each
// wasm breaker keeps (see js/crate/src/lib.rs). `acquire()` returns a permit (>= 0) or a
// negative rejection code; `record(permit, outcome)` hands it back. A permit recorded
// twice is reported as stale and changes nothing, like a permit from an earlier epoch.

/** @type {any} the wasm-bindgen module, installed by the entry point (node.js or web.js). */
let wasm = null;

/** Called by the entry points once the wasm module is ready. */
export function _install(bindings) {
  wasm = bindings;
}

const STATES = ['closed', 'open', 'half-open', 'isolated', 'disabled'];
const REASONS = [
  'failure-threshold', 'failure-rate', 'slow-call-rate', 'hung-calls', 'cooldown-elapsed',
  'probe-fault', 'probe-timeout', 'probes-succeeded', 'probe-rate-missed', 'isolated',
  'released', 'disabled', 'reset', 'restored',
];
const REJECT_REASONS = ['open', 'probing', 'isolated', 'saturated'];
const CLASSES = ['success', 'fault', 'neutral'];

// Return codes of the wasm layer (js/crate/src/lib.rs).
const TRANSITIONED = 1 << 28;
const BAD_OUTCOME = -1;
const NOT_A_PERMIT = -2;
const NEED_CLOCK = -16;

// Outcome codes: an HTTP status is itself; kinds and gRPC codes sit above 65535.
const KIND = 0x10000;
const SUCCESS = KIND;
const TIMEOUT = KIND + 1;
const CONNECTION_ERROR = KIND + 2;
const FAILURE = KIND + 3;
const CANCELLED = KIND + 4;
const IGNORED = KIND + 5;
const GRPC = 0x20000;

/** Outcome kinds, in the order of their codes. */
const KIND_NAMES = ['success', 'timeout', 'connection-error', 'failure', 'cancelled', 'ignored'];

/** Rejection codes returned by `acquire()`. */
export const Rejected = Object.freeze({ OPEN: -1, PROBING: -2, ISOLATED: -3, SATURATED: -4 });

/** Error codes that mean the connection failed: the upstream is unreachable. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'ETIMEDOUT', 'EAI_AGAIN', 'EPIPE',
  'ECONNABORTED', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN', 'EADDRNOTAVAIL',
  // undici (Node's fetch) wraps socket failures in these.
  'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_CLOSED',
]);
/** Error codes that mean the call itself took too long. */
const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ABORT_ERR_TIMEOUT']);

// ------------------------------------------------------------------------------------
// Errors
// ------------------------------------------------------------------------------------

/**
 * Thrown (or handed to `fallback`) by `execute` when the breaker turns a call away.
 * `reason` is `open`, `probing`, `isolated` or `saturated`; `retryAfterMs` says when
 * trying again could succeed (0: no estimate).
 */
export class CircuitOpenError extends Error {
  constructor(reason, retryAfterMs, state) {
    super(`circuit breaker is ${state} (${reason}): call rejected` +
      (retryAfterMs > 0 ? `, retry after ${retryAfterMs} ms` : ''));
    this.name = 'CircuitOpenError';
    this.code = 'ERR_CIRCUIT_OPEN';
    this.reason = reason;
    this.retryAfterMs = retryAfterMs;
    this.state = state;
  }
}

/** Thrown by `importState` for bytes that are not a valid exported state. */
export class InvalidStateError extends Error {
  constructor(message) {
    super(message);
    this.name = 'InvalidStateError';
    this.code = 'ERR_TRIPGATE_INVALID_STATE';
  }
}

function optionError(Type, code, option, message, value) {
  const shown = typeof value === 'string' ? JSON.stringify(value) : String(value);
  const error = new Type(`${message} (received ${shown})`);
  error.code = code;
  error.option = option;
  return error;
}

const typeError = (option, message, value) =>
  optionError(TypeError, 'ERR_INVALID_ARG_TYPE', option, message, value);
const rangeError = (option, message, value) =>
  optionError(RangeError, 'ERR_OUT_OF_RANGE', option, message, value);

// ------------------------------------------------------------------------------------
// Options
// ------------------------------------------------------------------------------------

// [option, slot in the wasm config array, kind]. Kinds: `int` (a non-negative integer),
// `ms` (a non-negative finite number of milliseconds), `factor` (a finite number).
const NUMERIC_OPTIONS = [
  ['failureThreshold', 0, 'int'],
  ['minCalls', 1, 'int'],
  ['failureRate', 2, 'int'],
  ['slowCallRate', 3, 'int'],
  ['slowCallDurationMs', 4, 'ms'],
  ['windowMs', 5, 'ms'],
  ['buckets', 6, 'int'],
  ['windowCalls', 7, 'int'],
  ['cooldownMs', 8, 'ms'],
  ['backoffFactor', 9, 'factor'],
  ['maxCooldownMs', 10, 'ms'],
  ['jitterPercent', 11, 'int'],
  ['jitterSeed', 12, 'int'],
  ['maxInFlight', 13, 'int'],
  ['halfOpenMaxProbes', 14, 'int'],
  ['halfOpenRequiredSuccesses', 15, 'int'],
  ['halfOpenSuccessRate', 16, 'int'],
  ['probeTimeoutMs', 17, 'ms'],
];
const CONFIG_LEN = 18;
const KNOWN_OPTIONS = new Set([
  ...NUMERIC_OPTIONS.map(([name]) => name),
  'faultStatuses', 'faultGrpcCodes', 'clock', 'timeoutMs',
]);

function checkNumber(option, value, kind) {
  if (typeof value !== 'number') throw typeError(option, `${option} must be a number`, value);
  if (kind === 'int') {
    if (!Number.isSafeInteger(value)) throw rangeError(option, `${option} must be an integer`, value);
  } else if (!Number.isFinite(value)) {
    throw rangeError(option, `${option} must be a finite number`, value);
  }
  if (kind !== 'factor' && value < 0) throw rangeError(option, `${option} must be >= 0`, value);
  return value;
}

function checkCodes(option, value, min, max) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || typeof value[Symbol.iterator] !== 'function') {
    throw typeError(option, `${option} must be an array of integers`, value);
  }
  const codes = [];
  for (const code of value) {
    if (typeof code !== 'number') throw typeError(option, `${option} must hold numbers`, code);
    if (!Number.isInteger(code) || code < min || code > max) {
      throw rangeError(option, `${option} entries must be integers between ${min} and ${max}`, code);
    }
    codes.push(code);
  }
  return codes;
}

function checkTimeout(option, value) {
  if (typeof value !== 'number') throw typeError(option, `${option} must be a number`, value);
  if (!(value > 0) || !Number.isFinite(value)) {
    throw rangeError(option, `${option} must be a finite number > 0`, value);
  }
  return value;
}

const defaultClock = () => performance.now();

/**
 * A signal that never aborts, handed to `fn` when the call has no timeout and no signal.
 * Made on first use: workerd refuses `new AbortController()` in a module's global scope
 * ("Disallowed operation called within global scope"), so the module must not make one
 * at import.
 */
let neverAborted = null;

// ------------------------------------------------------------------------------------
// Classification for `execute`
// ------------------------------------------------------------------------------------

/** The status of a response-like value (fetch `Response`, `{ status }`, `{ statusCode }`). */
function statusOf(value) {
  let status = value.status;
  if (typeof status !== 'number') status = value.statusCode;
  return Number.isInteger(status) && status >= 100 && status <= 599 ? status : 0;
}

/** The outcome code of a value `fn` resolved with. */
function classifyValue(value) {
  if (typeof value === 'object' && value !== null) {
    const status = statusOf(value);
    if (status !== 0) return status;
  }
  return SUCCESS;
}

/** An outcome code as the outcome `record` takes (`'timeout'`, `503`, `{ grpc: 14 }`, ...). */
function outcomeOfCode(code) {
  if (code < KIND) return code;
  if (code >= GRPC) return { grpc: code - GRPC };
  return KIND_NAMES[code - KIND];
}

/** How `execute` classifies a value `fn` resolved with, as an outcome for `record`. */
export function classifyResult(value) {
  return outcomeOfCode(classifyValue(value));
}

/** How `execute` classifies an error `fn` threw, as an outcome for `record`. */
export function classifyError(error) {
  return outcomeOfCode(errorCode(error));
}

/**
 * The outcome code of an error `fn` threw: an HTTP status it carries; a gRPC status of a
 * grpc-js error; a connection failure or timeout by its `code`; `TimeoutError` as a
 * timeout and `AbortError` as cancelled; else a generic failure. Walks `cause` (fetch
 * wraps socket errors as `TypeError: fetch failed` with the real error as its cause) and
 * the first error of an `AggregateError`.
 */
function errorCode(error) {
  let err = error;
  for (let depth = 0; depth < 5 && typeof err === 'object' && err !== null; depth++) {
    const status = statusOf(err);
    if (status !== 0) return status;
    const code = err.code;
    if (typeof code === 'string') {
      if (CONNECTION_CODES.has(code)) return CONNECTION_ERROR;
      if (TIMEOUT_CODES.has(code)) return TIMEOUT;
    } else if (typeof code === 'number' && Number.isInteger(code) && code >= 0 && code <= 16 &&
      'details' in err && 'metadata' in err) {
      return GRPC + code; // @grpc/grpc-js ServiceError
    }
    if (err.name === 'TimeoutError') return TIMEOUT;
    if (err.name === 'AbortError') return CANCELLED;
    if (err.cause !== undefined && err.cause !== err) {
      err = err.cause;
    } else if (Array.isArray(err.errors) && err.errors.length > 0) {
      err = err.errors[0];
    } else {
      break;
    }
  }
  return FAILURE;
}

/** The outcome code of what a caller passes to `record`. */
function outcomeCode(outcome) {
  if (typeof outcome === 'number') {
    if (Number.isInteger(outcome) && outcome >= 100 && outcome <= 599) return outcome;
    throw new RangeError(`HTTP status ${outcome} is outside 100-599`);
  }
  if (typeof outcome === 'string') {
    // A switch compares interned strings by identity: cheaper than a keyed lookup.
    switch (outcome) {
      case 'success': return SUCCESS;
      case 'timeout': return TIMEOUT;
      case 'connection-error': return CONNECTION_ERROR;
      case 'failure': return FAILURE;
      case 'cancelled': return CANCELLED;
      case 'ignored': return IGNORED;
      default: break;
    }
    const match = /^(status|grpc):(\d+)$/.exec(outcome);
    if (match !== null) {
      return outcomeCode(match[1] === 'status' ? Number(match[2]) : { grpc: Number(match[2]) });
    }
    throw new TypeError(`unknown outcome ${JSON.stringify(outcome)}: expected success, ` +
      'timeout, connection-error, failure, cancelled, ignored, an HTTP status, or { grpc }');
  }
  if (typeof outcome === 'object' && outcome !== null) {
    if ('grpc' in outcome) {
      const code = outcome.grpc;
      if (Number.isInteger(code) && code >= 0 && code <= 16) return GRPC + code;
      throw new RangeError(`gRPC code ${code} is outside 0-16`);
    }
    const status = outcome.status ?? outcome.statusCode;
    if (typeof status === 'number') return outcomeCode(status);
  }
  throw new TypeError(`outcome must be a kind ('success', 'timeout', ...), an HTTP status, ` +
    `a response with a status, or { grpc } (received ${String(outcome)})`);
}

function applyFallback(fallback, error) {
  return typeof fallback === 'function' ? fallback(error) : fallback;
}

function toBytes(state) {
  if (state instanceof Uint8Array) return state;
  if (ArrayBuffer.isView(state)) return new Uint8Array(state.buffer, state.byteOffset, state.byteLength);
  if (state instanceof ArrayBuffer) return new Uint8Array(state);
  throw new TypeError('state must be a Uint8Array (from exportState())');
}

// ------------------------------------------------------------------------------------
// Timeouts
// ------------------------------------------------------------------------------------

/**
 * The calls waiting on one timeout length, in start order — which is deadline order, as
 * they share the length. One timer per queue, armed for the earliest pending deadline,
 * replaces a `setTimeout`/`clearTimeout` pair per call (~400 ns on Node 24). A call that
 * settles is marked done and skipped; finished calls at the head are dropped at once, so
 * the queue holds about the calls in flight. While nothing is pending the timer is
 * unref'd, so it never keeps a process alive.
 */
class Deadlines {
  constructor(ms) {
    this.ms = ms;
    this.items = [];
    this.head = 0;
    this.timer = undefined;
    this.refed = false;
    this.fire = () => this.#fire();
  }

  add(entry) {
    entry.deadline = performance.now() + this.ms;
    entry.queue = this;
    this.items.push(entry);
    if (this.timer === undefined) {
      this.#arm(this.ms);
    } else if (!this.refed) {
      this.refed = true;
      this.timer.ref?.();
    }
  }

  /** Called when an entry is marked done: drops finished entries from the head. */
  settled() {
    const items = this.items;
    let head = this.head;
    while (head < items.length && items[head].done) head++;
    if (head === items.length) {
      items.length = 0;
      head = 0;
      if (this.refed && this.timer !== undefined) {
        this.refed = false;
        this.timer.unref?.();
      }
    } else if (head > 1024 && head * 2 > items.length) {
      this.items = items.slice(head);
      head = 0;
    }
    this.head = head;
  }

  #arm(delayMs) {
    this.timer = setTimeout(this.fire, Math.max(1, Math.ceil(delayMs)));
    this.refed = true;
  }

  #fire() {
    this.timer = undefined;
    this.refed = false;
    const now = performance.now();
    // `expire` settles the call, which may move `head` or replace `items`: re-read both.
    while (this.head < this.items.length) {
      const entry = this.items[this.head];
      if (entry.done) {
        this.head++;
      } else if (entry.deadline <= now) {
        this.head++;
        entry.expire();
      } else {
        break;
      }
    }
    if (this.head < this.items.length) {
      this.#arm(this.items[this.head].deadline - now);
    } else {
      this.items.length = 0;
      this.head = 0;
    }
  }
}

/** timeoutMs -> its queue, shared by every breaker. */
const deadlineQueues = new Map();

function deadlinesFor(ms) {
  let queue = deadlineQueues.get(ms);
  if (queue === undefined) {
    queue = new Deadlines(ms);
    deadlineQueues.set(ms, queue);
  }
  return queue;
}

// ------------------------------------------------------------------------------------
// The breaker
// ------------------------------------------------------------------------------------

const transitionBuffer = new Float64Array(10);
const metricsBuffer = new Float64Array(25);

/**
 * A circuit breaker. See index.d.ts for the documented API.
 */
export class CircuitBreaker {
  /** The wasm breaker. */
  #w;
  /** Milliseconds on a monotonic clock. */
  #clock;
  /** Default `timeoutMs` for `execute`. */
  #timeoutMs;
  /** event name -> listeners, or null while nobody listens. */
  #listeners = null;
  /** The last `record`'s packed report. */
  #lastRecord = 0;

  constructor(options = {}) {
    if (wasm === null) {
      throw new Error('tripgate: the wasm module is not initialised; call initSync() or init() first');
    }
    if (typeof options !== 'object' || options === null) {
      throw typeError('options', 'options must be an object', options);
    }
    for (const key of Object.keys(options)) {
      if (!KNOWN_OPTIONS.has(key)) {
        const hint = KNOWN_OPTIONS.has(`${key}Ms`) ? ` (did you mean ${key}Ms?)` : '';
        throw typeError(key, `unknown option ${key}${hint}`, options[key]);
      }
    }
    const values = new Float64Array(CONFIG_LEN).fill(NaN);
    for (const [name, slot, kind] of NUMERIC_OPTIONS) {
      const value = options[name];
      if (value !== undefined && value !== null) values[slot] = checkNumber(name, value, kind);
    }
    const statuses = checkCodes('faultStatuses', options.faultStatuses, 100, 599);
    const grpcCodes = checkCodes('faultGrpcCodes', options.faultGrpcCodes, 0, 16);
    const clock = options.clock ?? defaultClock;
    if (typeof clock !== 'function') throw typeError('clock', 'clock must be a function returning milliseconds', clock);
    this.#clock = clock;
    this.#timeoutMs = options.timeoutMs === undefined || options.timeoutMs === null
      ? undefined
      : checkTimeout('timeoutMs', options.timeoutMs);

    const statusArray = statuses && Uint16Array.from(statuses);
    const grpcArray = grpcCodes && Uint8Array.from(grpcCodes);
    const problem = wasm.check_config(values, statusArray, grpcArray);
    if (problem !== undefined) {
      const option = problem.slice(0, problem.indexOf(' '));
      throw rangeError(option, problem, options[option]);
    }
    this.#w = new wasm.Breaker(values, statusArray, grpcArray, clock());
  }

  // ---- the two-step API -----------------------------------------------------------

  /**
   * Admits a call (a permit, >= 0) or turns it away (a negative `Rejected` code; details
   * in `lastRejection`). Never throws, never allocates.
   */
  acquire() {
    // Closed (without hang detection), admission needs no clock reading: the wasm side
    // admits at the latest instant it has seen. Otherwise it asks for one.
    let r = this.#w.acquire_closed();
    if (r === NEED_CLOCK) r = this.#w.acquire(this.#clock());
    if (r >= TRANSITIONED) {
      this.#emitTransitions();
      return r - TRANSITIONED;
    }
    if (r < -4) {
      this.#emitTransitions();
      return r + 4;
    }
    return r;
  }

  /**
   * Hands a permit back with its call's outcome; returns how the breaker classified it
   * (`success`, `fault` or `neutral`). Throws (and changes nothing) on an invalid outcome
   * or a value that is not a permit.
   */
  record(permit, outcome) {
    if (typeof permit !== 'number') throw new TypeError('permit must be the number acquire() returned');
    const code = outcomeCode(outcome);
    const r = this.#w.record(permit, code, this.#clock());
    if (r < 0) {
      if (r === NOT_A_PERMIT) {
        throw new TypeError(permit < 0
          ? `${permit} is a rejection code, not a permit: acquire() turned that call away`
          : `${permit} is not a permit returned by acquire()`);
      }
      throw new RangeError(`invalid outcome ${String(outcome)}`);
    }
    this.#lastRecord = r;
    if (r >= 16) this.#emitTransitions();
    return CLASSES[r & 3];
  }

  /** `acquire()`, throwing a `CircuitOpenError` instead of returning a rejection. */
  acquireOrThrow() {
    const r = this.acquire();
    if (r < 0) throw this.#rejection(r);
    return r;
  }

  /** Whether a permit is a half-open probe. */
  static isProbe(permit) {
    return permit >= 0 && (permit & 1) === 1;
  }

  /** How the last `record` went: `{ class, slow, stale }`. */
  get lastRecord() {
    const r = this.#lastRecord;
    return { class: CLASSES[r & 3], slow: (r & 4) !== 0, stale: (r & 8) !== 0 };
  }

  /** The last rejection: `{ reason, retryAfterMs, state }`, or null before any. */
  get lastRejection() {
    const reason = this.#w.rejected_reason();
    if (reason < 0) return null;
    return {
      reason: REJECT_REASONS[reason],
      retryAfterMs: this.#w.retry_after_ms(),
      state: STATES[this.#w.rejected_state()],
    };
  }

  /** Retry-after of the last rejection, in ms (0: no estimate). */
  get retryAfterMs() {
    return this.#w.retry_after_ms();
  }

  /**
   * The error for a rejection. It carries no stack trace: capturing one costs V8 1-2 µs,
   * far more than the rejection itself, and it would only point here.
   */
  #rejection(r) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    const error = new CircuitOpenError(REJECT_REASONS[-1 - r], this.#w.retry_after_ms(),
      STATES[this.#w.rejected_state()]);
    Error.stackTraceLimit = limit;
    return error;
  }

  // ---- execute ------------------------------------------------------------------------

  /**
   * Runs `fn(signal)` through the breaker. See index.d.ts for the classification rules.
   */
  execute(fn, options) {
    let timeoutMs = this.#timeoutMs;
    let signal;
    let hasFallback = false;
    let fallback;
    try {
      if (typeof fn !== 'function') throw new TypeError('execute(fn): fn must be a function');
      if (options !== undefined) {
        if (typeof options !== 'object' || options === null) {
          throw typeError('options', 'execute options must be an object', options);
        }
        if (options.timeoutMs !== undefined) timeoutMs = checkTimeout('timeoutMs', options.timeoutMs);
        if (options.signal !== undefined && options.signal !== null) {
          signal = options.signal;
          if (typeof signal.aborted !== 'boolean' || typeof signal.addEventListener !== 'function') {
            throw typeError('signal', 'signal must be an AbortSignal', signal);
          }
          if (signal.aborted) return Promise.reject(signal.reason);
        }
        if ('fallback' in options) {
          hasFallback = true;
          fallback = options.fallback;
        }
      }
    } catch (error) {
      return Promise.reject(error);
    }
    const permit = this.acquire();
    if (permit < 0) return this.#rejected(permit, hasFallback, fallback);
    if (timeoutMs === undefined && signal === undefined) {
      return this.#run(fn, permit, hasFallback, fallback);
    }
    return this.#runGuarded(fn, permit, timeoutMs, signal, hasFallback, fallback);
  }

  #rejected(r, hasFallback, fallback) {
    const error = this.#rejection(r);
    if (!hasFallback) return Promise.reject(error);
    try {
      return Promise.resolve(applyFallback(fallback, error));
    } catch (fallbackError) {
      return Promise.reject(fallbackError);
    }
  }

  /** Records an outcome code from `execute` (never throws for a valid code). */
  #settle(permit, code) {
    const r = this.#w.record(permit, code, this.#clock());
    this.#lastRecord = r;
    if (r >= 16) this.#emitTransitions();
  }

  async #run(fn, permit, hasFallback, fallback) {
    let value;
    try {
      value = await fn(neverAborted ??= new AbortController().signal);
    } catch (error) {
      this.#settle(permit, errorCode(error));
      if (hasFallback) return applyFallback(fallback, error);
      throw error;
    }
    this.#settle(permit, classifyValue(value));
    return value;
  }

  #runGuarded(fn, permit, timeoutMs, signal, hasFallback, fallback) {
    return new Promise((resolve, reject) => {
      const controller = new AbortController();
      let done = false;
      // The deadline entry, when there is a timeout (see `Deadlines`).
      let entry;
      const finish = (code) => {
        done = true;
        if (entry !== undefined) {
          entry.done = true;
          entry.queue.settled();
        }
        if (signal !== undefined) signal.removeEventListener('abort', onAbort);
        this.#settle(permit, code);
      };
      const fail = (error) => {
        if (!hasFallback) {
          reject(error);
          return;
        }
        try {
          resolve(applyFallback(fallback, error));
        } catch (fallbackError) {
          reject(fallbackError);
        }
      };
      const onAbort = () => {
        if (done) return;
        // The caller gave up: no evidence about the upstream, and no fallback either.
        finish(CANCELLED);
        controller.abort(signal.reason);
        reject(signal.reason);
      };
      if (timeoutMs !== undefined) {
        entry = {
          done: false,
          deadline: 0,
          queue: null,
          expire() {
            if (done) return;
            const error = new DOMException(`operation timed out after ${timeoutMs} ms`, 'TimeoutError');
            finish(TIMEOUT);
            controller.abort(error);
            fail(error);
          },
        };
        deadlinesFor(timeoutMs).add(entry);
      }
      if (signal !== undefined) signal.addEventListener('abort', onAbort, { once: true });
      let pending;
      try {
        pending = Promise.resolve(fn(controller.signal));
      } catch (error) {
        pending = Promise.reject(error);
      }
      pending.then(
        (value) => {
          if (done) return;
          finish(classifyValue(value));
          resolve(value);
        },
        (error) => {
          if (done) return;
          finish(errorCode(error));
          fail(error);
        },
      );
    });
  }

  // ---- reading ------------------------------------------------------------------------

  /** The effective state now: `closed`, `open`, `half-open`, `isolated` or `disabled`. */
  get state() {
    return STATES[this.#w.state(this.#clock())];
  }

  /** A metrics snapshot (allocates; not for the hot path). */
  metrics() {
    const m = metricsBuffer;
    this.#w.metrics(this.#clock(), m);
    return {
      state: STATES[m[0]],
      epoch: m[1],
      calls: m[2],
      faults: m[3],
      slow: m[4],
      inFlight: m[5],
      hung: m[6],
      probesOut: m[7],
      admittedTotal: m[8],
      rejectedTotal: { open: m[9], probing: m[10], isolated: m[11], saturated: m[12] },
      successesTotal: m[13],
      faultsTotal: m[14],
      staleTotal: m[15],
      transitionsTotal: m[16],
      timeInStateMs: m[17],
      cooldownRemainingMs: m[18],
      lastTransition: m[19] === 0 ? null : {
        from: STATES[m[20]], to: STATES[m[21]], reason: REASONS[m[22]], atMs: m[23], epoch: m[24],
      },
    };
  }

  // ---- operator controls ----------------------------------------------------------------

  /** Forces the breaker open (reason `isolated`) until `release()`. */
  isolate() {
    if (this.#w.isolate(this.#clock()) > 0) this.#emitTransitions();
  }

  /** Closes an isolated or disabled breaker with an empty window. */
  release() {
    if (this.#w.release(this.#clock()) > 0) this.#emitTransitions();
  }

  /** Admits everything and never trips (still measuring) until `release()`. */
  disable() {
    if (this.#w.disable(this.#clock()) > 0) this.#emitTransitions();
  }

  /** Back to closed from any state, with an empty window; retires every permit out. */
  reset() {
    if (this.#w.reset(this.#clock()) > 0) this.#emitTransitions();
  }

  // ---- export / import ------------------------------------------------------------------

  /** The full state as compact versioned bytes (times relative to now). */
  exportState() {
    return this.#w.export_state(this.#clock());
  }

  /**
   * Replaces this breaker's state with one exported `elapsedMs` ago. Throws
   * `InvalidStateError` (and changes nothing) on garbage, truncated or mismatched bytes.
   */
  importState(state, elapsedMs = 0) {
    const bytes = toBytes(state);
    if (typeof elapsedMs !== 'number') throw typeError('elapsedMs', 'elapsedMs must be a number', elapsedMs);
    if (!(elapsedMs >= 0) || !Number.isFinite(elapsedMs)) {
      throw rangeError('elapsedMs', 'elapsedMs must be a finite number >= 0', elapsedMs);
    }
    const problem = this.#w.import_state(bytes, elapsedMs, this.#clock());
    if (problem !== undefined) throw new InvalidStateError(problem);
  }

  /** A new breaker with `options`, holding a state exported `elapsedMs` ago. */
  static importState(state, options = {}, elapsedMs = 0) {
    const breaker = new CircuitBreaker(options);
    try {
      breaker.importState(state, elapsedMs);
    } catch (error) {
      breaker.dispose();
      throw error;
    }
    return breaker;
  }

  /** Frees the wasm memory now instead of at garbage collection. The breaker is unusable after. */
  dispose() {
    if (this.#w !== undefined) {
      this.#w.free();
      this.#w = undefined;
    }
  }

  [Symbol.dispose]() {
    this.dispose();
  }

  /** Permits handed out and not yet recorded (diagnostics). */
  get outstandingPermits() {
    return this.#w.outstanding();
  }

  // ---- events -----------------------------------------------------------------------------

  /**
   * Listens to transitions: `transition` (every one), or the state entered: `open`,
   * `half-open`, `closed`, `isolated`, `disabled`. The listener gets
   * `{ from, to, reason, atMs, epoch }`.
   */
  on(event, listener) {
    if (typeof listener !== 'function') throw new TypeError('listener must be a function');
    if (event !== 'transition' && !STATES.includes(event)) {
      throw new TypeError(`unknown event ${JSON.stringify(event)}: expected transition or a state name`);
    }
    this.#listeners ??= new Map();
    const list = this.#listeners.get(event);
    if (list === undefined) this.#listeners.set(event, [listener]);
    else list.push(listener);
    return this;
  }

  /** Listens once. */
  once(event, listener) {
    const wrapper = (transition) => {
      this.off(event, wrapper);
      listener(transition);
    };
    wrapper.listener = listener;
    return this.on(event, wrapper);
  }

  /** Stops listening. */
  off(event, listener) {
    const list = this.#listeners?.get(event);
    if (list === undefined) return this;
    const i = list.findIndex((l) => l === listener || l.listener === listener);
    if (i >= 0) list.splice(i, 1);
    if (list.length === 0) this.#listeners.delete(event);
    if (this.#listeners.size === 0) this.#listeners = null;
    return this;
  }

  #emitTransitions() {
    const listeners = this.#listeners;
    if (listeners === null) return;
    const buf = transitionBuffer;
    const n = this.#w.transitions(buf);
    for (let i = 0; i < n; i++) {
      const transition = {
        from: STATES[buf[i * 5]],
        to: STATES[buf[i * 5 + 1]],
        reason: REASONS[buf[i * 5 + 2]],
        atMs: buf[i * 5 + 3],
        epoch: buf[i * 5 + 4],
      };
      emit(listeners.get('transition'), transition);
      emit(listeners.get(transition.to), transition);
    }
  }
}

/**
 * Calls listeners; one that throws does not stop the others nor the breaker call that
 * caused the transition: its error is rethrown asynchronously (an uncaught exception, as
 * from any event listener).
 */
function emit(list, transition) {
  if (list === undefined) return;
  for (const listener of [...list]) {
    try {
      listener(transition);
    } catch (error) {
      queueMicrotask(() => {
        throw error;
      });
    }
  }
}

export { STATES as states, REASONS as transitionReasons, REJECT_REASONS as rejectReasons };
