// tripgate: the JS face of the breaker. Every decision is made by tripgate-core (Rust,
// compiled to wasm); this class translates options, outcomes and events, and hands calls
// to `execute` (execute.js). Hot paths (`acquire`, `record`, `execute`) pass only numbers
// across the boundary and allocate no JS object of their own.
//
// Permits are plain numbers: a handle into the table of outstanding permits that each
// wasm breaker keeps (the core's PermitTable, core/src/handles.rs, held by
// js/crate/src/breaker.rs). `acquire()` returns a permit (>= 0) or a
// negative rejection code; `record(permit, outcome)` hands it back. A permit recorded
// twice is reported as stale and changes nothing, like a permit from an earlier epoch.
// A call that only shadow mode admitted (SPEC § Shadow mode) gets its handle plus one
// half: the number itself says so (`CircuitBreaker.isShadow`), and the common path still
// moves one small integer.

import { askedMs, outcomeCode } from './classify.js';
import { CircuitOpenError, InvalidStateError, disposedError, rangeError, typeError } from './errors.js';
import { Listeners } from './events.js';
import { execute, rejection, settle } from './execute.js';
import { READ } from './exposition.js';
import { checkVotes, fleetEvent, fleetStore } from './fleet-args.js';
import { configError, isReading, own, readConfig, readOptions, readingError } from './options.js';
import { confirm, free, makeRetries } from './retries.js';
import { onInstall, wasm } from './tables.js';

let TRANSITIONED = 0;
let NEED_CLOCK = 0;
let NOT_A_PERMIT = 0;
/** `acquire`'s code for a call only shadow mode admitted: its permit is `shadow_permit()`. */
let SHADOWED = 0;
let METRICS_FIXED = 0;
let WIDTH = 0;
let STATES = [];
let REASONS = [];
let REJECT_REASONS = [];
let CLASSES = [];
let FLEET_EVENT_KINDS = [];
let FLEET_APPLIED = [];
let ANNOUNCEMENT_KINDS = [];
/** `acquire()`'s code for a call turned away as `probing-elsewhere`. */
let PROBING_ELSEWHERE = 0;
let fleetStatusBuffer = new Float64Array(0);
const announcementBuffer = new Float64Array(1);
/** `reconfigure`'s report from the wasm side: window kept (0/1), transitions. */
const reconfiguredBuffer = new Float64Array(2);
let transitionBuffer = new Float64Array(0);
let metricsBuffer = new Float64Array(0);
/**
 * The core's scalar metric fields in the order the wasm module writes them: `[key, kind]`,
 * the key in JS case (`in-flight` as `inFlight`, a duration with `Ms`).
 */
let metricFields = [];
/**
 * What a disposed breaker holds instead of its wasm breaker: every method throws
 * `breaker is disposed`, so the hot paths need no check of their own.
 */
let DISPOSED = null;

onInstall((t) => {
  ({ transitioned: TRANSITIONED, needClock: NEED_CLOCK, notAPermit: NOT_A_PERMIT, shadowed: SHADOWED } = t.codes);
  METRICS_FIXED = t.metricsFixed;
  WIDTH = t.transitionWidth;
  STATES = t.states;
  REASONS = t.reasons;
  REJECT_REASONS = t.rejectReasons;
  CLASSES = t.classes;
  FLEET_EVENT_KINDS = t.fleetEventKinds;
  FLEET_APPLIED = t.fleetApplied;
  ANNOUNCEMENT_KINDS = t.announcementKinds;
  PROBING_ELSEWHERE = -1 - t.rejectReasons.indexOf('probing-elsewhere');
  fleetStatusBuffer = new Float64Array(t.fleetStatusLen);
  transitionBuffer = new Float64Array(t.maxTransitions * WIDTH);
  metricsBuffer = new Float64Array(t.metricsLen);
  metricFields = t.metricFields.map(([name, kind]) => {
    const key = name.replace(/-([a-z])/g, (_, letter) => letter.toUpperCase());
    return [kind === 'duration' ? `${key}Ms` : key, kind];
  });
  DISPOSED = {};
  for (const name of Object.getOwnPropertyNames(wasm.Breaker.prototype)) {
    DISPOSED[name] = () => {
      throw disposedError();
    };
  }
});

/**
 * The fleet adapter's hold on a breaker (tripgate/fleet): a symbol, so it stays off the
 * public API. See `CircuitBreaker.prototype[fleetLink]`.
 */
export const fleetLink = Symbol('tripgate.fleetLink');

/**
 * A circuit breaker. See index.d.ts for the documented API.
 */
export class CircuitBreaker {
  /** The wasm breaker, or DISPOSED. */
  #w;
  /** Milliseconds on a monotonic clock. */
  #clock;
  /** Default `timeoutMs` for `execute`. */
  #timeoutMs;
  #events = new Listeners();
  /** The last `record`'s packed report. */
  #lastRecord = 0;
  /** Clock readings that were not observed. */
  #clockErrors = 0;
  /** The fleet adapter's wake-up, or null: see `[fleetLink]`. */
  #wake = null;
  /** The breaker's retries (`retries()`), or null before the first call. */
  #retries = null;

  constructor(options) {
    if (wasm === null) {
      throw new Error('tripgate: the wasm module is not initialised; call initSync() or init() first');
    }
    const { values, statuses, grpcCodes, clock, now, timeoutMs } = readOptions(options);
    const problem = wasm.check_config(values, statuses, grpcCodes);
    if (problem !== undefined) throw configError(problem, options);
    this.#clock = clock;
    this.#timeoutMs = timeoutMs;
    this.#w = new wasm.Breaker(values, statuses, grpcCodes, now);
  }

  /**
   * A clock reading, or NaN when the clock throws or returns something that is not one
   * (the wasm side then uses the latest instant it has seen). Never throws: `acquire()`
   * must not, and a call in `execute` must still settle.
   */
  #now() {
    let reading;
    try {
      reading = this.#clock();
    } catch (error) {
      return this.#notObserved(true, error);
    }
    return isReading(reading) ? reading : this.#notObserved(false, reading);
  }

  /** Counts a reading that is not observed and tells `clock-error` listeners, if any. */
  #notObserved(threw, value) {
    this.#clockErrors++;
    if (this.#events.has('clock-error')) {
      this.#events.emit('clock-error', threw
        ? { error: value, reading: undefined }
        : { error: readingError(value), reading: value });
    }
    return NaN;
  }

  // ---- the two-step API -----------------------------------------------------------

  /**
   * Admits a call (a permit, >= 0) or turns it away (a negative `Rejected` code; details
   * in `lastRejection`). Never throws (but on a disposed breaker), never allocates.
   */
  acquire() {
    // Closed (without hang detection), admission needs no clock reading: the wasm side
    // admits at the latest instant it has seen. Otherwise it asks for one.
    let r = this.#w.acquire_closed();
    if (r === NEED_CLOCK) r = this.#w.acquire(this.#now());
    if (r >= 0) {
      if (r < TRANSITIONED) return r;
      this.#emitTransitions();
      return r - TRANSITIONED;
    }
    if (r < -TRANSITIONED) {
      this.#emitTransitions();
      return r + TRANSITIONED;
    }
    if (r === SHADOWED) return this.#shadowPermit();
    if (r === PROBING_ELSEWHERE && this.#wake !== null) this.#wake(true);
    return r;
  }

  /** The permit of a call only shadow mode admitted: its handle and a half. */
  #shadowPermit() {
    const r = this.#w.shadow_permit();
    if (r < TRANSITIONED) return r + 0.5;
    this.#emitTransitions();
    return r - TRANSITIONED + 0.5;
  }

  /**
   * Hands a permit back with its call's outcome; returns how the breaker classified it
   * (`success`, `fault` or `neutral`). `options.retryAfterMs`: how long the upstream asked
   * its callers to stay away (SPEC § Retry-After); without it, a response-like outcome's
   * own headers say (`retryAfter.of`). Throws (and changes nothing) on an invalid outcome,
   * option or a value that is not a permit.
   */
  record(permit, outcome, options) {
    if (typeof permit !== 'number') throw new TypeError('permit must be the number acquire() returned');
    const code = outcomeCode(outcome);
    // Set by outcomeCode for a response-like object, and only then.
    let after = typeof outcome === 'object' ? askedMs : 0;
    if (options !== undefined) after = recordOptions(options, after);
    const r = after > 0
      ? this.#w.record_after(permit, code, after, this.#now())
      : this.#w.record(permit, code, this.#now());
    if (r < 0) {
      if (r === NOT_A_PERMIT) {
        throw new TypeError(permit < 0
          ? `${permit} is a rejection code, not a permit: acquire() turned that call away`
          : `${permit} is not a permit returned by acquire()`);
      }
      throw new RangeError(`invalid outcome code ${code}`);
    }
    this.#lastRecord = r;
    if (r >= 16) this.#emitTransitions();
    else if ((permit & 1) === 1 && this.#wake !== null) this.#wake(false);
    return CLASSES[r & 3];
  }

  /** `acquire()`, throwing a `CircuitOpenError` instead of returning a rejection. */
  acquireOrThrow() {
    const r = this.acquire();
    if (r < 0) throw this[rejection](r);
    return r;
  }

  /** Whether a permit is a half-open probe. */
  static isProbe(permit) {
    return permit >= 0 && (permit & 1) === 1;
  }

  /**
   * Whether a permit was admitted only by shadow mode: an enforcing breaker would have
   * turned the call away, and its outcome counts nothing. Such a permit is its handle and
   * a half (`permit % 1 === 0.5`); every other permit is a whole number.
   */
  static isShadow(permit) {
    return typeof permit === 'number' && permit >= 0 && permit % 1 === 0.5;
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
   * The error for a rejection code. It carries no stack trace: capturing one costs V8
   * 1-2 µs, far more than the rejection itself, and it would only point here.
   */
  [rejection](r) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    const error = new CircuitOpenError(REJECT_REASONS[-1 - r], this.#w.retry_after_ms(),
      STATES[this.#w.rejected_state()]);
    Error.stackTraceLimit = limit;
    return error;
  }

  /**
   * Records an outcome code from `execute`, with the stay-away (ms, 0 for none) its answer
   * asked for; returns the class code the breaker gave it (for the retry loop), or -1 when
   * nothing was recorded. Never throws: a breaker disposed while the call was out records
   * nothing, and the call still settles with its own result.
   */
  [settle](permit, code, after) {
    let r;
    try {
      r = after > 0
        ? this.#w.record_after(permit, code, after, this.#now())
        : this.#w.record(permit, code, this.#now());
    } catch {
      return -1;
    }
    this.#lastRecord = r;
    if (r >= 16) this.#emitTransitions();
    else if ((permit & 1) === 1 && this.#wake !== null) this.#wake(false);
    return r & 3;
  }

  /** Runs `fn(signal)` through the breaker. See index.d.ts for the classification rules. */
  execute(fn, options) {
    return execute(this, fn, options, this.#timeoutMs);
  }

  /**
   * The breaker's retries (SPEC § Retries), for `execute(fn, { retries })`: its policy and
   * the budget all its callers share. The first call makes them by `options` (refused,
   * naming the option, as the constructor's are); every later call returns the same
   * object, and refuses `options` that give another policy.
   */
  retries(options) {
    if (this.#w === DISPOSED) throw disposedError();
    if (this.#retries === null) {
      this.#retries = makeRetries(this, () => this.#now(), options);
    } else if (options !== undefined) {
      this.#retries[confirm](options);
    }
    return this.#retries;
  }

  // ---- reading ------------------------------------------------------------------------

  /** The effective state now: `closed`, `open`, `half-open`, `isolated` or `disabled`. */
  get state() {
    return STATES[this.#w.state(this.#now())];
  }

  /**
   * Writes the value of every exposition series now into `out`, in the core's order
   * (js/src/exposition.js): one wasm call. `false` for a disposed breaker.
   */
  [READ](out) {
    if (this.#w === DISPOSED) return false;
    this.#w.exposition(this.#now(), out);
    return true;
  }

  /** A metrics snapshot (allocates; not for the hot path). */
  metrics() {
    const m = metricsBuffer;
    this.#w.metrics(this.#now(), m);
    const metrics = {};
    metricFields.forEach(([key, kind], i) => {
      metrics[key] = kind === 'state' ? STATES[m[i]] : m[i];
    });
    const rejectedTotal = {};
    const shadowRejectedTotal = {};
    const shadowAt = METRICS_FIXED + REJECT_REASONS.length;
    REJECT_REASONS.forEach((reason, code) => {
      rejectedTotal[reason] = m[METRICS_FIXED + code];
      shadowRejectedTotal[reason] = m[shadowAt + code];
    });
    const last = metricFields.length;
    return {
      ...metrics,
      rejectedTotal,
      shadowRejectedTotal,
      lastTransition: m[last] === 0 ? null : transition(m, last + 1),
      clockErrorsTotal: this.#clockErrors,
      listenerErrorsTotal: this.#events.errors,
    };
  }

  // ---- operator controls ----------------------------------------------------------------

  /** Forces the breaker open (reason `isolated`) until `release()`. */
  isolate() {
    if (this.#w.isolate(this.#now()) > 0) this.#emitTransitions();
  }

  /** Closes an isolated or disabled breaker with an empty window. */
  release() {
    if (this.#w.release(this.#now()) > 0) this.#emitTransitions();
  }

  /** Admits everything and never trips (still measuring) until `release()`. */
  disable() {
    if (this.#w.disable(this.#now()) > 0) this.#emitTransitions();
  }

  /** Back to closed from any state, with an empty window; retires every permit out. */
  reset() {
    if (this.#w.reset(this.#now()) > 0) this.#emitTransitions();
  }

  // ---- live reconfiguration ---------------------------------------------------------------

  /**
   * Puts `options` in force on this live breaker (SPEC § Reconfiguration): a whole set of
   * options, read and checked as the constructor's (absent ones take their defaults), and
   * refused the same way, naming the option, with nothing changed. `fleetQuorum` and
   * `slowCallDurationMs` must stay as the breaker was made; `clock` may be given again
   * (so that the creation options can be passed with changes) but not changed, and when
   * absent the breaker keeps its clock. The state, its epoch (every permit out stays
   * current), an opening in progress and the counters are kept; the window too while its
   * shape (`windowCalls`, or `windowMs` and `buckets`) is the same. Returns
   * `{ windowKept, transitions }`: the transitions time had made due, applied first under
   * the old options, which the listeners get as from any other call.
   */
  reconfigure(options) {
    if (this.#w === DISPOSED) throw disposedError();
    const { values, statuses, grpcCodes, clock, timeoutMs } = readConfig(options);
    // A new clock would restart time from another origin under every instant the breaker
    // holds (an opening's end, the window's buckets, the calls in flight).
    if (clock !== undefined && clock !== this.#clock) {
      throw rangeError('clock', 'clock cannot change on a live breaker', clock);
    }
    const out = reconfiguredBuffer;
    const problem = this.#w.reconfigure(values, statuses, grpcCodes, this.#now(), out);
    if (problem !== undefined) throw configError(problem, options);
    this.#timeoutMs = timeoutMs;
    const windowKept = out[0] === 1;
    if (out[1] === 0) return { windowKept, transitions: [] };
    const transitions = this.#readTransitions();
    this.#emitTransitions(transitions);
    return { windowKept, transitions };
  }

  // ---- export / import ------------------------------------------------------------------

  /** The full state as compact versioned bytes (times relative to now). */
  exportState() {
    return this.#w.export_state(this.#now());
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
    const problem = this.#w.import_state(bytes, elapsedMs, this.#now());
    if (problem !== undefined) throw new InvalidStateError(problem);
  }

  /** A new breaker with `options`, holding a state exported `elapsedMs` ago. */
  static importState(state, options, elapsedMs = 0) {
    const breaker = new CircuitBreaker(options);
    try {
      breaker.importState(state, elapsedMs);
    } catch (error) {
      breaker.dispose();
      throw error;
    }
    return breaker;
  }

  /**
   * Frees the wasm memory now instead of at garbage collection. Every later call fails
   * with `breaker is disposed` (`execute` with a rejected promise); a call in `execute`
   * at that moment still settles with its own result, unrecorded.
   */
  dispose() {
    if (this.#w !== DISPOSED) {
      const w = this.#w;
      this.#w = DISPOSED;
      w.free();
      this.#retries?.[free]();
    }
  }

  [Symbol.dispose]() {
    this.dispose();
  }

  /** Permits handed out and not yet recorded (diagnostics). */
  get outstandingPermits() {
    return this.#w.outstanding();
  }

  // ---- fleet mode ---------------------------------------------------------------------------
  // The adapter's side of the breaker (tripgate/fleet drives these in the background; see
  // FLEET.md and wit/fleet.md). Every rule is the core's: these only check arguments.

  /**
   * Applies an event from the fleet: `{ generation, kind: 'open' | 'close', remainingMs }`.
   * Returns what it did: `applied`, `stale`, `held` or `not-in-fleet`. Its transitions
   * (`fleet-open`, `fleet-close`) reach the listeners like any other.
   */
  fleetApply(event) {
    const { generation, kind, remainingMs } = fleetEvent(event, FLEET_EVENT_KINDS);
    const r = this.#w.fleet_apply(generation, kind, remainingMs, this.#now());
    if (r >= 16) this.#emitTransitions();
    return FLEET_APPLIED[r & 15];
  }

  /**
   * The fleet's trip votes as the store holds them: `[{ member, ageMs }]`, `member` a
   * 64-bit id (a bigint, or 1-16 hex digits). Whether they reach `fleetQuorum`.
   */
  fleetVotes(votes) {
    const { members, ages } = checkVotes(votes);
    return this.#w.fleet_votes(members, ages, this.#now());
  }

  /**
   * What the store says of this member: `{ reachable, leaseMs }`, `leaseMs` how long it
   * holds the fleet's probe lease from now (absent or null: not held).
   */
  fleetStore(store) {
    const { reachable, leaseMs } = fleetStore(store);
    this.#w.fleet_store(reachable, leaseMs, this.#now());
  }

  /**
   * The fleet adapter's hold on this breaker. `wake` is called inside this breaker's calls
   * (so it must only schedule work): on every transition, on a call turned away as
   * `probing-elsewhere` (with `true`), and on a probe's outcome that changed no state. The
   * adapter gets the wasm breaker (read anew each time: it is gone once disposed), a clock
   * reading and a way to tell the listeners the transitions its fleet events caused.
   * Null when an adapter holds the breaker already (it is a fleet member: it joins once);
   * `[fleetLink](null)` lets go.
   */
  [fleetLink](wake) {
    if (wake === null || this.#wake !== null) {
      if (wake === null) this.#wake = null;
      return null;
    }
    this.#wake = wake;
    return { wasm: () => this.#w, now: () => this.#now(), emit: () => this.#emitTransitions() };
  }

  /** What the fleet must be told, taken once: `{ kind, remainingMs }`, or null. */
  fleetTakeAnnouncement() {
    const kind = this.#w.fleet_take_announcement(announcementBuffer);
    if (kind < 0) return null;
    return { kind: ANNOUNCEMENT_KINDS[kind], remainingMs: announcementBuffer[0] };
  }

  /** `{ enabled, generation, degraded, leaseHeld, wantsLease, staleEvents }` now. */
  fleetStatus() {
    const s = fleetStatusBuffer;
    this.#w.fleet_status(this.#now(), s);
    return {
      enabled: s[0] === 1,
      generation: s[1],
      degraded: s[2] === 1,
      leaseHeld: s[3] === 1,
      wantsLease: s[4] === 1,
      staleEvents: s[5],
    };
  }

  // ---- events -----------------------------------------------------------------------------

  /**
   * Listens to transitions: `transition` (every one), or the state entered: `open`,
   * `half-open`, `closed`, `isolated`, `disabled`; the listener gets
   * `{ from, to, reason, atMs, epoch }`. `clock-error`: a clock reading that was not
   * observed; the listener gets `{ error, reading }`. `listener-error`: a listener threw
   * (counted in `metrics().listenerErrorsTotal`, never rethrown); the listener gets
   * `{ error, event, payload }`.
   */
  on(event, listener) {
    if (this.#w === DISPOSED) throw disposedError();
    this.#events.on(event, listener);
    return this;
  }

  /** Listens once. */
  once(event, listener) {
    if (this.#w === DISPOSED) throw disposedError();
    this.#events.once(event, listener);
    return this;
  }

  /** Stops listening (also on a disposed breaker: clean-up code may run in any order). */
  off(event, listener) {
    this.#events.off(event, listener);
    return this;
  }

  /**
   * Tells the listeners about the last call's transitions (`list`, when the caller has
   * read them already). All are read before any listener runs: a listener may call into
   * this or another breaker, which overwrites the shared buffer.
   */
  #emitTransitions(list) {
    if (this.#wake !== null) this.#wake(false);
    const events = this.#events;
    if (!events.any) return;
    for (const t of list ?? this.#readTransitions()) {
      events.emit('transition', t);
      events.emit(t.to, t);
    }
  }

  /** The last call's transitions, as the listeners get them. */
  #readTransitions() {
    const buf = transitionBuffer;
    const n = this.#w.transitions(buf);
    const list = [];
    for (let i = 0; i < n; i++) list.push(transition(buf, i * WIDTH));
    return list;
  }
}

/**
 * `record`'s options: `{ retryAfterMs }`, a finite number of ms >= 0 (`undefined` or null:
 * not given, so `given` stands). Errors name the option.
 */
function recordOptions(options, given) {
  if (typeof options !== 'object' || options === null) {
    throw typeError('options', 'record options must be an object', options);
  }
  let keys;
  try {
    keys = Object.keys(options);
  } catch (cause) {
    const error = typeError('options', 'record options could not be read', undefined);
    error.cause = cause;
    throw error;
  }
  for (const key of keys) {
    if (key !== 'retryAfterMs') throw typeError(key, `unknown record option ${key}`, own(options, key));
  }
  const ms = own(options, 'retryAfterMs');
  if (ms === undefined || ms === null) return given;
  if (typeof ms !== 'number') throw typeError('retryAfterMs', 'retryAfterMs must be a number', ms);
  if (!(ms >= 0) || !Number.isFinite(ms)) {
    throw rangeError('retryAfterMs', 'retryAfterMs must be a finite number >= 0', ms);
  }
  return ms;
}

/** The transition at `at` in a wasm buffer: from, to, reason codes, at (ms), epoch. */
function transition(buf, at) {
  return {
    from: STATES[buf[at]],
    to: STATES[buf[at + 1]],
    reason: REASONS[buf[at + 2]],
    atMs: buf[at + 3],
    epoch: buf[at + 4],
  };
}

/** `state` as bytes. `instanceof` runs a Proxy's traps, which may throw (a revoked one's do). */
function toBytes(state) {
  const message = 'state must be a Uint8Array (from exportState())';
  try {
    if (state instanceof Uint8Array) return state;
    if (ArrayBuffer.isView(state)) return new Uint8Array(state.buffer, state.byteOffset, state.byteLength);
    if (state instanceof ArrayBuffer) return new Uint8Array(state);
  } catch (cause) {
    throw new TypeError(message, { cause });
  }
  throw new TypeError(message);
}
