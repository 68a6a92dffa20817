// Type declarations for `tripgate` (both entry points: `tripgate/node` and `tripgate/web`;
// the bare `tripgate` picks one by runtime condition).

// `[Symbol.dispose]` (a `using` declaration): TypeScript 5.2's lib, whatever `target` or `lib`
// the project compiles with.
/// <reference lib="esnext.disposable" />

/** The breaker's state. `open` past its cooldown reads `half-open`. */
export type State = 'closed' | 'open' | 'half-open' | 'isolated' | 'disabled';

/** Why a call was turned away. */
export type RejectReason = 'open' | 'probing' | 'isolated' | 'saturated' | 'probing-elsewhere';

/**
 * Why a transition happened. The names come from the core at run time
 * (`transitionReasons`), so a reason the core adds arrives before these declarations
 * list it: hence the open `string` case.
 */
export type TransitionReason =
  | 'failure-threshold' | 'failure-rate' | 'slow-call-rate' | 'hung-calls' | 'cooldown-elapsed'
  | 'probe-fault' | 'probe-timeout' | 'probes-succeeded' | 'probe-rate-missed' | 'isolated'
  | 'released' | 'disabled' | 'reset' | 'restored' | 'fleet-open' | 'fleet-close'
  | (string & {});

/** How the breaker classified an outcome. */
export type OutcomeClass = 'success' | 'fault' | 'neutral';

/**
 * What happened to an admitted call:
 * - a kind: `success`; `timeout`, `connection-error`, `failure` (faults); `cancelled`,
 *   `ignored` (neutral: release the permit, count as nothing);
 * - an HTTP status (100–599; 5xx and 429 are faults by default, every other status means
 *   the upstream answered), or anything with a `status` (or `statusCode`) such as a fetch
 *   `Response`: an integer or its decimal string (`'503'`), or 0 for no HTTP answer
 *   (`Response.error()`: a connection error; an opaque response: a success) — the same
 *   rule `execute` applies, which also reads the stay-away its `headers` ask for (see
 *   `retryAfter.of`); the strings `status:N` and `grpc:N` are accepted too;
 * - `{ grpc: code }` (0–16; 4, 8, 13 and 14 are faults by default).
 */
export type Outcome =
  | 'success' | 'timeout' | 'connection-error' | 'failure' | 'cancelled' | 'ignored'
  | `status:${number}` | `grpc:${number}`
  | number
  | { status: number | string }
  | { statusCode: number | string }
  | { grpc: number };

/**
 * A permit: the number `acquire()` returned when it admitted a call (0 <= permit < 2^30).
 * Hand it back to `record` exactly once. A plain number, so the hot path allocates
 * nothing. A breaker gives the same number again only after more than 2^28 - 2^22 (over
 * 264 million) further permits, so a late or duplicate `record` of an old one is stale.
 * A whole number, but for a call only shadow mode admitted: that permit is a whole number
 * and a half (`CircuitBreaker.isShadow`).
 */
export type Permit = number;

/**
 * Negative codes `acquire()` returns when it turns a call away: `-(1 + code)` of the
 * core's reject reason. Filled in when the wasm module is installed (at import on Node,
 * by `initSync`/`init` on the web entry).
 */
export declare const Rejected: Readonly<{ OPEN: -1; PROBING: -2; ISOLATED: -3; SATURATED: -4; PROBING_ELSEWHERE: -5 }>;

export interface CircuitBreakerOptions {
  /** Faults in the window that trip the breaker (with at least `minCalls` calls). Default 5. */
  failureThreshold?: number;
  /** Calls the window must hold before any rule may trip. Default 5. */
  minCalls?: number;
  /** Trip when this percentage (1–100) of the window's calls are faults. Off by default. */
  failureRate?: number;
  /** Trip when this percentage (1–100) of the window's calls are slow. Off by default. */
  slowCallRate?: number;
  /**
   * A success slower than this is slow. Also turns on hang detection: `failureThreshold`
   * calls still in flight after this long trip the breaker before any of them times out.
   */
  slowCallDurationMs?: number;
  /** Span of the sliding time window. Default 30 000. */
  windowMs?: number;
  /** Buckets of the time window (1–64). Default 10. */
  buckets?: number;
  /** Use a count-based window of the last N outcomes (1–1024) instead. */
  windowCalls?: number;
  /** How long the breaker stays open before letting probes through. Default 15 000. */
  cooldownMs?: number;
  /** Each re-open straight from half-open multiplies the cooldown by this (1–1000). Default 1. */
  backoffFactor?: number;
  /** Cap on the backed-off cooldown. */
  maxCooldownMs?: number;
  /** Lengthen each cooldown by up to this percentage (0–100), drawn from `jitterSeed`. */
  jitterPercent?: number;
  /** Seed for the jitter (an integer from 0 to 2^64 - 1): the same seed replays the same cooldowns. */
  jitterSeed?: number;
  /** Concurrency cap while closed; callers beyond it are rejected as `saturated`. */
  maxInFlight?: number;
  /** Probes outstanding at once in half-open (K, 1–64). Default 1. */
  halfOpenMaxProbes?: number;
  /** Consecutive probe successes that close the breaker (M). Default 2. */
  halfOpenRequiredSuccesses?: number;
  /** Graduate by rate: after M probe outcomes, close if this percentage succeeded. */
  halfOpenSuccessRate?: number;
  /** A probe with no outcome after this long counts as a timeout fault. Default 15 000. */
  probeTimeoutMs?: number;
  /**
   * HTTP statuses that are faults; replaces the default (500–599 and 429). Any iterable:
   * one whose iteration throws is a `TypeError` naming the option, with what it threw as
   * `cause`.
   */
  faultStatuses?: Iterable<number>;
  /** gRPC codes that are faults; replaces the default (4, 8, 13, 14). Any iterable, as above. */
  faultGrpcCodes?: Iterable<number>;
  /**
   * Fleet mode (1–16): distinct members that must trip within one cooldown before the
   * fleet opens. Unset: a breaker of its own. Join a fleet with `FleetStore` from
   * `tripgate/fleet`.
   */
  fleetQuorum?: number;
  /**
   * Shadow mode: the breaker makes and reports every decision (transitions, metrics,
   * retry-after) but admits every call. A call it would have turned away is counted in
   * `metrics().shadowRejectedTotal` by its reason and gets a shadow permit
   * (`CircuitBreaker.isShadow`), whose outcome counts nothing. Default false; switch it
   * live with `reconfigure`.
   */
  shadow?: boolean;
  /**
   * Default `timeoutMs` for `execute`. None by default. Any finite length > 0: beyond
   * setTimeout's 2^31 - 1 ms the timer re-arms in steps.
   */
  timeoutMs?: number;
  /**
   * Monotonic milliseconds. Default `() => performance.now()`. Never wall-clock time. Read
   * once at construction (a clock that cannot give a reading then is refused, naming
   * `clock`). Later, a reading that is not a number in [0, 9223372036854.775808) (2^63 ns)
   * — or a clock that throws — is not observed: the breaker uses the latest instant it
   * has seen, counts it in `metrics().clockErrorsTotal` and emits `clock-error`.
   */
  clock?: () => number;
}

export interface ExecuteOptions<F> {
  /** Abort `fn`'s signal and reject with a `TimeoutError` (recorded as `timeout`) after this long. */
  timeoutMs?: number;
  /**
   * The caller's own signal: aborting it aborts `fn`'s signal, rejects with its reason and
   * records `cancelled` (neutral). An already-aborted signal rejects without acquiring.
   */
  signal?: AbortSignal | null;
  /**
   * Returned instead of throwing when the breaker rejects the call (`CircuitOpenError`) or
   * `fn` fails (throws, or times out); a function is called with the error. Not used when
   * the caller aborted. `undefined` means no fallback (`null` is a fallback value).
   */
  fallback?: F | ((error: unknown) => F | PromiseLike<F>);
  /**
   * This breaker's retries (`breaker.retries()`): a fault is tried again as the core's
   * policy and the budget the breaker's callers share allow (see `Retries`). `null` or
   * absent: one attempt. Another breaker's retries (or anything else) is a `TypeError`
   * naming `retries`.
   */
  retries?: Retries | null;
}

/**
 * A retry policy (SPEC § Retries). Every option is optional (`undefined` and `null` mean
 * "not given"); the rules are the core's, and a broken one is a `RangeError` naming the
 * option in the core's words (`maxAttempts must be between 1 and 10 (received 0)`).
 */
export interface RetryOptions {
  /** Attempts in all, the first included (1–10). Default 3. */
  maxAttempts?: number | null;
  /** The first retry's longest wait (> 0); each retry doubles it, up to `maxDelayMs`. Default 50. */
  baseDelayMs?: number | null;
  /**
   * The longest wait between attempts (>= `baseDelayMs`); an answer that asks to be left
   * alone longer (`Retry-After`) ends the retries. Default 2 000.
   */
  maxDelayMs?: number | null;
  /** Retries may be at most this percentage (0–1000) of the calls admitted. Default 20. */
  budgetPercent?: number | null;
  /** Retries allowed each second whatever the budget. Default 10. */
  minRetriesPerSecond?: number | null;
  /** The jitter's seed (an integer from 0 to 2^64 - 1): the same seed draws the same waits. Default 0. */
  seed?: number | null;
}

/** The policy in force: every setting, the defaults filled in. */
export type RetryPolicy = { readonly [K in keyof RetryOptions]-?: number };

/** Why retries stop: the answer was not a fault, the attempts ran out, the budget did, or the upstream asked for longer than `maxDelayMs`. */
export type RetryStop = 'answered' | 'attempts' | 'budget' | 'stay-away';

/** What to do after an attempt: wait `waitMs` (the core's draw, or the answer's longer stay-away) and try again, or stop. */
export type RetryNext =
  | { readonly retry: true; readonly waitMs: number }
  | { readonly retry: false; readonly stop: RetryStop };

/**
 * A breaker's retries: its policy and the budget every caller of the breaker shares (one
 * per breaker, from `breaker.retries()`). Pass it to `execute`; `deposit` and `next` are
 * for a loop of your own over `acquire` and `record`. The decisions and the jittered
 * waits are the Rust core's (full jitter from a seeded splitmix64).
 */
export interface Retries {
  readonly policy: RetryPolicy;
  /** A call's first attempt was admitted: it pays `budgetPercent` of a retry in. */
  deposit(): void;
  /**
   * After attempt `attempt` (1 for the first) whose outcome `record` classified as
   * `outcomeClass`, and which asked its callers to stay away `retryAfterMs` (0 or absent:
   * nothing): retry after `waitMs` (a retry is taken from the budget), or stop. Its time
   * is the breaker's clock.
   */
  next(attempt: number, outcomeClass: OutcomeClass, retryAfterMs?: number | null): RetryNext;
}

export interface Transition {
  from: State;
  to: State;
  reason: TransitionReason;
  /** When it happened, on the breaker's clock (ms). Time-driven transitions report when they fell due. */
  atMs: number;
  /** The epoch entered. */
  epoch: number;
}

/** What `reconfigure` did. */
export interface Reconfigured {
  /** The window kept its outcomes (its shape is the same), or started empty. */
  windowKept: boolean;
  /** Transitions time had made due, applied first under the old options (also emitted). */
  transitions: Transition[];
}

export interface Rejection {
  reason: RejectReason;
  /** When trying again could succeed, in ms (0: no estimate). */
  retryAfterMs: number;
  /** The state that rejected. */
  state: State;
}

/** `record`'s options. */
export interface RecordOptions {
  /**
   * How long the upstream asked its callers to stay away, in ms (an HTTP `Retry-After`, a
   * gRPC pushback; `retryAfter` reads them). When this outcome trips the breaker, or fails
   * its probe round, it stays open at least that long, bounded by the longest cooldown the
   * options allow (`maxCooldownMs`, or what `backoffFactor` grows the cooldown to). An
   * outcome that trips nothing asks nothing. Without it, a response-like outcome's own
   * headers say (`retryAfter.of`). `undefined` or `null`: not given.
   */
  retryAfterMs?: number | null;
}

export interface RecordReport {
  class: OutcomeClass;
  /** A success slower than `slowCallDurationMs`. */
  slow: boolean;
  /** The permit was from an earlier epoch, already recorded, or reclaimed: nothing was counted. */
  stale: boolean;
}

export interface Metrics {
  state: State;
  epoch: number;
  /** Calls, faults and slow calls in the window. */
  calls: number;
  faults: number;
  slow: number;
  /** Normal calls of this epoch still out, and those out longer than `slowCallDurationMs`. */
  inFlight: number;
  hung: number;
  probesOut: number;
  admittedTotal: number;
  rejectedTotal: Record<RejectReason, number>;
  /**
   * Calls shadow mode admitted that the breaker would have rejected, by reason (see
   * `shadow`); not in `rejectedTotal`. This breaker's own: `exportState` does not carry them.
   */
  shadowRejectedTotal: Record<RejectReason, number>;
  successesTotal: number;
  faultsTotal: number;
  staleTotal: number;
  transitionsTotal: number;
  timeInStateMs: number;
  cooldownRemainingMs: number;
  lastTransition: Transition | null;
  /** Clock readings that were not observed (see `clock`); counted by this JS breaker. */
  clockErrorsTotal: number;
  /** Listener calls that threw (see `listener-error`); counted by this JS breaker. */
  listenerErrorsTotal: number;
}

/** A clock reading that was not observed: the breaker used its latest instant instead. */
export interface ClockError {
  /** What the clock threw, or a `TypeError`/`RangeError` (`option: 'clock'`) saying what was wrong. */
  error: unknown;
  /** What the clock returned (undefined when it threw). */
  reading: unknown;
}

/**
 * A listener threw. Its error is never rethrown (an uncaught exception would end a Node
 * process), and neither the call that caused the event nor the other listeners are
 * affected: it is counted in `metrics().listenerErrorsTotal` and handed to the
 * `listener-error` listeners. One of those that throws is counted, not reported again.
 */
export interface ListenerError {
  /** What the listener threw. */
  error: unknown;
  /** The event it was listening to. */
  event: BreakerEvent | 'clock-error';
  /** What it was given. */
  payload: Transition | ClockError;
}

export type BreakerEvent = 'transition' | State;

/** Thrown (or handed to `fallback`) by `execute` when the breaker turns a call away. */
export declare class CircuitOpenError extends Error {
  readonly name: 'CircuitOpenError';
  readonly code: 'ERR_CIRCUIT_OPEN';
  readonly reason: RejectReason;
  /** When trying again could succeed, in ms (0: no estimate). */
  readonly retryAfterMs: number;
  readonly state: State;
}

/** Thrown by `importState` for bytes that are not a valid exported state. */
export declare class InvalidStateError extends Error {
  readonly name: 'InvalidStateError';
  readonly code: 'ERR_TRIPGATE_INVALID_STATE';
}

/** A fleet event as the store delivered it (wit/fleet.md). */
export interface FleetEvent {
  /** The fleet generation it was published under: an integer from 0 to 2^53 - 1. */
  generation: number | bigint;
  kind: 'open' | 'close';
  /** For `open`: the cooldown left, in ms. Default 0. */
  remainingMs?: number;
}

/** What `fleetApply` did. */
export type FleetApplied = 'applied' | 'stale' | 'held' | 'not-in-fleet';

/** A member's trip vote: its 64-bit id (a bigint, a safe integer or 1–16 hex digits) and age. */
export interface FleetVote {
  member: bigint | number | string;
  ageMs: number;
}

/** What the fleet must be told (from `fleetTakeAnnouncement`). */
export interface FleetAnnouncement {
  kind: 'tripped' | 'reopened' | 'closed';
  /** For `tripped` and `reopened`: the opening's length in ms. */
  remainingMs: number;
}

/** The fleet part of a breaker. */
export interface FleetStatus {
  /** `fleetQuorum` is set. */
  enabled: boolean;
  /** The last fleet generation applied. */
  generation: number;
  /** The store is unreachable: deciding locally. */
  degraded: boolean;
  /** This member holds the fleet's probe lease. */
  leaseHeld: boolean;
  /** Half-open, in touch with the store, without the lease. */
  wantsLease: boolean;
  /** Fleet events ignored as stale. */
  staleEvents: number;
}

/** Option errors carry the option's name. */
export interface OptionError extends Error {
  readonly code: 'ERR_INVALID_ARG_TYPE' | 'ERR_OUT_OF_RANGE';
  readonly option: string;
}

export declare class CircuitBreaker {
  /**
   * Validates `options`: a wrong type throws `TypeError`, a value out of range
   * `RangeError`; both name the option (`error.option`). Unknown options are refused.
   */
  constructor(options?: CircuitBreakerOptions);

  /**
   * Admits a call (a permit, >= 0) or turns it away (a negative `Rejected` code). Never
   * throws, whatever the clock does (on a disposed breaker, it throws `breaker is disposed`).
   */
  acquire(): Permit;
  /** `acquire()`, throwing `CircuitOpenError` on rejection. */
  acquireOrThrow(): Permit;
  /**
   * Hands a permit back with its call's outcome; returns the class. Throws `RangeError` /
   * `TypeError` (and changes nothing, the permit stays out) on an invalid outcome or
   * option. `options.retryAfterMs`: the stay-away the answer asked for (see
   * `RecordOptions`); a response-like outcome's headers are read without it.
   */
  record(permit: Permit, outcome: Outcome, options?: RecordOptions): OutcomeClass;
  /** Whether a permit is a half-open probe. */
  static isProbe(permit: Permit): boolean;
  /**
   * Whether a permit was admitted only by shadow mode (see `shadow`): an enforcing breaker
   * would have turned the call away, and its outcome counts nothing. Such a permit is a
   * whole number and a half; it is recorded like any other.
   */
  static isShadow(permit: Permit): boolean;
  /** How the last `record` went. */
  readonly lastRecord: RecordReport;
  /** The last rejection, or null before any. */
  readonly lastRejection: Rejection | null;
  /** Retry-after of the last rejection, in ms. */
  readonly retryAfterMs: number;

  /**
   * Runs `fn(signal)` through the breaker and records its outcome exactly once: a resolved
   * value with a numeric `status`/`statusCode` (a fetch `Response`) by that status, other
   * values as success; a thrown error by its `status`/`statusCode`, else by its `code` and
   * `name` through the core's error table (`connection-error` for ECONNREFUSED,
   * ECONNRESET, ENOTFOUND, EAI_AGAIN and undici's socket errors, also in `cause`, as fetch
   * wraps them; `timeout` for ETIMEDOUT, this call's own timeout or a `TimeoutError`;
   * `cancelled` for the caller's abort or an `AbortError`), else as `failure`. The `cause`
   * chain (and an `AggregateError`'s first error) is read at most 8 errors deep, the
   * error itself included: the core's `MAX_CAUSES`, the depth the Rust hosts follow.
   * A value (or error) whose HTTP status it read is also read for the stay-away its
   * headers ask for (`retryAfter.of`: `Retry-After` on a 429 or 503, by the wall clock
   * `Date.now()`, else `grpc-retry-pushback-ms`), which the outcome is recorded with (see
   * `RecordOptions.retryAfterMs`).
   * Rejects with `CircuitOpenError` when turned away (unless `fallback` is given).
   * With `retries`, a fault is tried again: every attempt is admitted by the breaker (its
   * rejection ends the retries and is the answer), waits the core's draw or the answer's
   * longer `Retry-After`, and has its own `timeoutMs`; the caller's `signal` ends a wait
   * or an attempt (recorded as `cancelled`). The last attempt's answer is the call's; an
   * answer retried past is let go (a `Response` body is cancelled).
   */
  execute<T, F = never>(fn: (signal: AbortSignal) => T | PromiseLike<T>, options?: ExecuteOptions<F>): Promise<T | F>;

  /**
   * The breaker's retries (SPEC § Retries): its policy and the budget all its callers
   * share. The first call makes them by `options` (a bad one throws `TypeError` /
   * `RangeError` naming the option); every later call returns the same object, and throws
   * a `RangeError` naming the first option whose policy differs.
   */
  retries(options?: RetryOptions): Retries;

  /** The effective state now. */
  readonly state: State;
  /** A metrics snapshot. */
  metrics(): Metrics;

  /** Forces the breaker open (rejecting as `isolated`) until `release()`. */
  isolate(): void;
  /** Closes an isolated or disabled breaker, with an empty window. */
  release(): void;
  /** Admits everything and never trips, still measuring, until `release()`. */
  disable(): void;
  /** Back to closed from any state, with an empty window; every permit out becomes stale. */
  reset(): void;

  /**
   * Puts `options` in force on this live breaker: a whole set, checked as the
   * constructor's (absent options take their defaults) and refused the same way, naming
   * the option, with nothing changed. `fleetQuorum` and `slowCallDurationMs` cannot
   * change (`RangeError`), nor `clock` (it may be given again; absent, it is kept). The
   * state, its epoch (every permit out stays current), an opening in progress and the
   * counters are kept, the window too while its shape (`windowCalls`, or `windowMs` and
   * `buckets`) is the same. The transitions also reach the listeners.
   */
  reconfigure(options?: CircuitBreakerOptions): Reconfigured;

  /** The full state as compact versioned bytes, with times relative to now. */
  exportState(): Uint8Array;
  /** Replaces the state with one exported `elapsedMs` ago (same window options required). */
  importState(state: Uint8Array | ArrayBufferView | ArrayBuffer, elapsedMs?: number): void;
  /** A new breaker with `options` holding a state exported `elapsedMs` ago. */
  static importState(state: Uint8Array | ArrayBufferView | ArrayBuffer, options?: CircuitBreakerOptions, elapsedMs?: number): CircuitBreaker;

  /** Listens to transitions: every one (`transition`) or those entering a state. */
  on(event: BreakerEvent, listener: (transition: Transition) => void): this;
  /** Listens to clock readings that were not observed. */
  on(event: 'clock-error', listener: (problem: ClockError) => void): this;
  /** Listens to listeners that threw (see `ListenerError`). */
  on(event: 'listener-error', listener: (report: ListenerError) => void): this;
  once(event: BreakerEvent, listener: (transition: Transition) => void): this;
  once(event: 'clock-error', listener: (problem: ClockError) => void): this;
  once(event: 'listener-error', listener: (report: ListenerError) => void): this;
  off(event: BreakerEvent, listener: (transition: Transition) => void): this;
  off(event: 'clock-error', listener: (problem: ClockError) => void): this;
  off(event: 'listener-error', listener: (report: ListenerError) => void): this;

  /**
   * Fleet mode, the adapter's side (`tripgate/fleet` calls these in the background; the
   * rules are the core's). Applies a fleet event; its transitions (`fleet-open`,
   * `fleet-close`) reach the listeners like any other. Bad arguments throw, naming them.
   */
  fleetApply(event: FleetEvent): FleetApplied;
  /** The store's trip votes (this member's among them): whether they reach `fleetQuorum`. */
  fleetVotes(votes: Iterable<FleetVote>): boolean;
  /** Whether the store is reachable, and the probe lease if this member holds it (ms from now). */
  fleetStore(store: { reachable: boolean; leaseMs?: number | null }): void;
  /** What the fleet must be told, taken once; null when nothing is pending. */
  fleetTakeAnnouncement(): FleetAnnouncement | null;
  /** The fleet part of the breaker now. */
  fleetStatus(): FleetStatus;

  /** Permits handed out and not yet recorded. */
  readonly outstandingPermits: number;
  /**
   * Frees the wasm memory now (otherwise at garbage collection). Afterwards every call
   * throws an `Error` `breaker is disposed` (`code: 'ERR_TRIPGATE_DISPOSED'`) and
   * `execute` returns a promise rejected with it; a call already in `execute` settles with
   * its own result, unrecorded. `off` and `dispose` still work.
   */
  dispose(): void;
  [Symbol.dispose](): void;
}

/** How `execute` classifies an error (its `cause` chain at most 8 errors deep), as an outcome for `record`. */
export declare function classifyError(error: unknown): Outcome;
/** How `execute` classifies a resolved value, as an outcome for `record`. */
export declare function classifyResult(value: unknown): Outcome;

/** Headers as `retryAfter.of` reads them: anything with `get(name)`, or an object by lower-case name. */
export type HeadersLike = { get(name: string): string | null | undefined } | Record<string, unknown>;

/**
 * How long an upstream's answer asks its callers to stay away (SPEC § Retry-After), read by
 * the core's rules (the parsing is the Rust core's, compiled in): whole milliseconds, or
 * null for a value that asks nothing. `nowMs` is the wall clock an HTTP date is measured
 * against (`Date.now()` by default); a non-string value is a `TypeError`.
 */
export declare const retryAfter: Readonly<{
  /** An HTTP `Retry-After` value: delay-seconds, or an IMF-fixdate (0 once past); the obsolete date forms and anything else: null. */
  http(value: string, nowMs?: number): number | null;
  /** A `grpc-retry-pushback-ms` value; negative or malformed: null. */
  grpcPushback(value: string): number | null;
  /** Whether the breaker honours `Retry-After` on an answer with this HTTP status (429 and 503). */
  applies(status: number): boolean;
  /**
   * What `execute` and `record` read from a response-like value with an HTTP status (a
   * fetch `Response`, an HTTP client's answer or error with `status` and `headers`): its
   * `Retry-After` where it `applies`, else its `grpc-retry-pushback-ms`; 0 when it asks
   * nothing.
   */
  of(response: unknown, nowMs?: number): number;
}>;

/** A config field: the core's (kebab-case) name, the JS option, and how it is read. */
export interface ConfigField {
  readonly name: string;
  readonly option: keyof CircuitBreakerOptions;
  readonly kind: 'count' | 'percent' | 'duration' | 'factor' | 'seed' | 'flag' | 'statuses' | 'grpc-codes';
}

/** The core's tables, filled in when the wasm module is installed. */
export declare const configFields: readonly ConfigField[];
export declare const states: readonly State[];
export declare const transitionReasons: readonly TransitionReason[];
export declare const rejectReasons: readonly RejectReason[];

/** Input accepted by `initSync` (wasm-bindgen's `--target web`). */
export type SyncInitInput = { module: WebAssembly.Module | BufferSource } | WebAssembly.Module | BufferSource;
/** Input accepted by `init`. */
export type InitInput = { module_or_path: WebAssembly.Module | BufferSource | URL | string | Response | Promise<Response> };

/**
 * Workers and edge runtimes (`tripgate/web`): instantiate the wasm module before the first
 * breaker. A no-op once it is (on Node and Deno, the bare `tripgate` does it at import).
 */
export declare function initSync(input?: SyncInitInput): void;
export declare function init(input?: InitInput): Promise<void>;
