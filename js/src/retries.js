// Retries that cannot become a storm (SPEC § Retries): a breaker's retry policy and the
// budget its callers share, held by the wasm module (js/crate/src/retry.rs, the core's
// `retry`). Every decision and every jittered wait is the core's: this file reads options
// and translates numbers. `execute` (execute.js) runs the loop; `deposit` and `next` are
// public for callers that run their own over `acquire` and `record`.

import { disposedError, rangeError, typeError } from './errors.js';
import { checkNumber, configError, own } from './options.js';
import { onInstall, wasm } from './tables.js';

/** The policy's settings (`{ name, option, kind }`), in the order the wasm module takes them. */
let settings = [];
let known = new Set();
/** Why retries stop, by code: `next`'s `-(1 + code)`. */
let STOPS = [];
/** Class name -> the core's code. */
let classCodes = new Map();
/** The class code of a fault: the only outcome retried. */
export let FAULT = 0;

onInstall((t) => {
  settings = t.retryFields;
  known = new Set(settings.map((s) => s.option));
  STOPS = t.retryStops;
  classCodes = new Map(t.classes.map((name, code) => [name, code]));
  FAULT = classCodes.get('fault');
});

/** `execute`'s side: a call's first attempt was admitted (a no-op once disposed). */
export const deposit = Symbol('deposit');
/** `execute`'s side: after a fault, the wait in ms, or -1 to stop. */
export const nextWait = Symbol('nextWait');
/** The breaker's side: frees the wasm budget (at `dispose`). */
export const free = Symbol('free');
/** The breaker's side: the same object for the same policy, else a refusal naming the option. */
export const confirm = Symbol('confirm');

/** Only `makeRetries` constructs. */
const MAKING = Symbol('making');

/**
 * Reads retry options (own properties; `undefined` and `null` mean "not given") into the
 * values the wasm module takes (`NaN`: not given), checking type and form here and every
 * rule by the core. Returns them with the policy in force (defaults filled in, ms).
 */
function readPolicy(options) {
  if (options === undefined) options = {};
  if (typeof options !== 'object' || options === null) {
    throw typeError('options', 'retries options must be an object', options);
  }
  let keys;
  try {
    keys = Object.keys(options);
  } catch (cause) {
    const error = typeError('options', 'retries options could not be read', undefined);
    error.cause = cause;
    throw error;
  }
  for (const key of keys) {
    if (!known.has(key)) {
      const hint = known.has(`${key}Ms`) ? ` (did you mean ${key}Ms?)` : '';
      throw typeError(key, `unknown retries option ${key}${hint}`, own(options, key));
    }
  }
  const values = new Float64Array(settings.length).fill(NaN);
  settings.forEach(({ option, kind }, at) => {
    const value = own(options, option);
    if (value !== undefined && value !== null) values[at] = checkNumber(option, value, kind);
  });
  const inForce = new Float64Array(settings.length);
  const problem = wasm.retry_policy(values, inForce);
  if (problem !== undefined) throw configError(problem, options);
  return { values, inForce };
}

/** The policy as JS shows it: `{ maxAttempts, baseDelayMs, ... }`, frozen. */
function policyObject(inForce) {
  const policy = {};
  settings.forEach(({ option }, at) => {
    policy[option] = inForce[at];
  });
  return Object.freeze(policy);
}

/** A finite number of ms >= 0, or 0 when not given. */
function stayAway(ms) {
  if (ms === undefined || ms === null) return 0;
  if (typeof ms !== 'number') throw typeError('retryAfterMs', 'retryAfterMs must be a number', ms);
  if (!(ms >= 0) || !Number.isFinite(ms)) {
    throw rangeError('retryAfterMs', 'retryAfterMs must be a finite number >= 0', ms);
  }
  return ms;
}

/**
 * A breaker's retries: its policy and the budget every caller of the breaker shares. Made
 * by `breaker.retries(options)`, one per breaker. See index.d.ts.
 */
export class Retries {
  /** The wasm budget, or null once the breaker is disposed. */
  #w;
  #breaker;
  /** The breaker's clock (its `#now`: NaN for a reading that is not observed). */
  #now;
  #inForce;
  #policy;

  constructor(making, breaker, now, options) {
    if (making !== MAKING) throw new TypeError('Retries are made by breaker.retries(options)');
    const { values, inForce } = readPolicy(options);
    this.#breaker = breaker;
    this.#now = now;
    this.#inForce = inForce;
    this.#policy = policyObject(inForce);
    this.#w = new wasm.RetryBudget(values, now());
  }

  /** Whether `value` is the retries of `breaker`. Never throws (a Proxy is none). */
  static of(value, breaker) {
    return typeof value === 'object' && value !== null && #breaker in value && value.#breaker === breaker;
  }

  /** The policy in force: every setting, the defaults filled in. */
  get policy() {
    return this.#policy;
  }

  /** A call's first attempt was admitted: it pays `budgetPercent` of a retry in. */
  deposit() {
    if (this.#w === null) throw disposedError();
    this.#w.deposit();
  }

  /**
   * After attempt `attempt` (1 for the first) answered with `outcomeClass` (what `record`
   * returned) and asked its callers to stay away for `retryAfterMs`: `{ retry: true,
   * waitMs }` (a retry is taken from the budget) or `{ retry: false, stop }`.
   */
  next(attempt, outcomeClass, retryAfterMs) {
    if (this.#w === null) throw disposedError();
    if (typeof attempt !== 'number') throw typeError('attempt', 'attempt must be a number', attempt);
    if (!Number.isInteger(attempt) || attempt < 1) {
      throw rangeError('attempt', 'attempt must be an integer >= 1', attempt);
    }
    const code = typeof outcomeClass === 'string' ? classCodes.get(outcomeClass) : undefined;
    if (code === undefined) {
      throw typeError('outcomeClass', `outcomeClass must be one of ${[...classCodes.keys()].join(', ')}`, outcomeClass);
    }
    const r = this.#w.next(attempt, code, stayAway(retryAfterMs), this.#now());
    return r >= 0 ? { retry: true, waitMs: r } : { retry: false, stop: STOPS[-1 - r] };
  }

  [deposit]() {
    if (this.#w !== null) this.#w.deposit();
  }

  /** After attempt `attempt`, a fault that asked for `askedMs`: the wait, or -1 to stop. */
  [nextWait](attempt, askedMs) {
    if (this.#w === null) return -1;
    const r = this.#w.next(attempt, FAULT, askedMs, this.#now());
    return r >= 0 ? r : -1;
  }

  [confirm](options) {
    const { inForce } = readPolicy(options);
    const at = inForce.findIndex((value, i) => value !== this.#inForce[i]);
    if (at >= 0) {
      const { option } = settings[at];
      throw rangeError(option, `${option} differs from this breaker's retries, made with ${option} ` +
        `${this.#inForce[at]}: a breaker has one retry policy and budget`, own(options, option));
    }
  }

  [free]() {
    if (this.#w !== null) {
      const w = this.#w;
      this.#w = null;
      w.free();
    }
  }
}

/** The retries of `breaker` (its clock `now`) by `options`; refused, naming the option. */
export function makeRetries(breaker, now, options) {
  return new Retries(MAKING, breaker, now, options);
}
