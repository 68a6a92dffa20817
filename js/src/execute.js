// `execute`: runs a function through a breaker, classifies how it went, records that
// exactly once, and always settles the promise it returns — whatever the function, its
// result, the caller's signal or the breaker (disposed meanwhile) do. An answer that asked
// its callers to stay away (a fetch `Response` with `Retry-After` on a 429 or 503, or
// `grpc-retry-pushback-ms`: classify.js reads it as `askedMs`) is recorded with it. With
// `retries` (the breaker's, retries.js) a fault is tried again as the core decides, each
// attempt admitted by the breaker (SPEC § Retries).

import { CANCELLED, TIMEOUT, askedMs, errorCode, valueCode } from './classify.js';
import { addDeadline, settled as deadlineSettled } from './deadlines.js';
import { typeError } from './errors.js';
import { checkTimeout, own } from './options.js';
import { FAULT, Retries, deposit, nextWait } from './retries.js';

/** The breaker's side of `execute`: records an outcome code and stay-away, never throwing. */
export const settle = Symbol('settle');
/** The breaker's side of `execute`: the `CircuitOpenError` for a rejection code. */
export const rejection = Symbol('rejection');

/**
 * The signal handed to `fn` when the call has neither a timeout nor a signal: one shared
 * signal that never aborts. Its `addEventListener` keeps nothing: a listener on a signal
 * that never aborts could never run, and kept, the listeners of every call (fetch adds
 * one per request) would pile up on it forever. Made on first use: workerd refuses
 * `new AbortController()` in a module's global scope.
 */
let neverAborts = null;

function neverAbortingSignal() {
  if (neverAborts === null) {
    neverAborts = new AbortController().signal;
    Object.defineProperty(neverAborts, 'addEventListener', {
      value: function addEventListener() {},
      writable: true,
      configurable: true,
    });
  }
  return neverAborts;
}

function applyFallback(fallback, error) {
  return typeof fallback === 'function' ? fallback(error) : fallback;
}

/** Whether `signal` looks like an AbortSignal. Never throws: one whose reads throw is none. */
function isSignal(signal) {
  try {
    return typeof signal === 'object' && signal !== null && typeof signal.aborted === 'boolean' &&
      typeof signal.addEventListener === 'function' && typeof signal.removeEventListener === 'function';
  } catch {
    return false;
  }
}

/** `breaker.execute(fn, options)`, with the breaker's default timeout. */
export function execute(breaker, fn, options, defaultTimeoutMs) {
  let timeoutMs = defaultTimeoutMs;
  let signal;
  let hasFallback = false;
  let fallback;
  let retries;
  let permit;
  try {
    if (typeof fn !== 'function') throw new TypeError('execute(fn): fn must be a function');
    if (options !== undefined) {
      if (typeof options !== 'object' || options === null) {
        throw typeError('options', 'execute options must be an object', options);
      }
      const timeout = own(options, 'timeoutMs');
      if (timeout !== undefined) timeoutMs = checkTimeout('timeoutMs', timeout);
      const given = own(options, 'signal');
      if (given !== undefined && given !== null) {
        if (!isSignal(given)) throw typeError('signal', 'signal must be an AbortSignal', given);
        if (given.aborted) return Promise.reject(given.reason);
        signal = given;
      }
      fallback = own(options, 'fallback');
      hasFallback = fallback !== undefined;
      retries = own(options, 'retries') ?? undefined;
      if (retries !== undefined && !Retries.of(retries, breaker)) {
        throw typeError('retries', "retries must be this breaker's retries()", retries);
      }
    }
    if (retries !== undefined) return retrying(breaker, fn, retries, timeoutMs, signal, hasFallback, fallback);
    permit = breaker.acquire();
  } catch (error) {
    return Promise.reject(error);
  }
  if (permit < 0) return rejected(breaker[rejection](permit), hasFallback, fallback);
  if (timeoutMs === undefined && signal === undefined) return run(breaker, fn, permit, hasFallback, fallback);
  return runGuarded(breaker, fn, permit, timeoutMs, signal, hasFallback, fallback);
}

function rejected(error, hasFallback, fallback) {
  if (!hasFallback) return Promise.reject(error);
  try {
    return Promise.resolve(applyFallback(fallback, error));
  } catch (fallbackError) {
    return Promise.reject(fallbackError);
  }
}

/**
 * `Promise`, `Promise.resolve` and `Promise.prototype.then` as the package loaded them:
 * `execute` turns what `fn` gave into a native promise and chains on it as `await` would
 * (an own or patched `then` is not called).
 */
const NativePromise = Promise;
const promiseResolve = Promise.resolve;
const promiseThen = Promise.prototype.then;

/**
 * A call without timeout or signal: `fn`'s promise, chained once, with the outcome
 * recorded when it settles. No async function: one promise and two small closures per
 * call, where an async wrapper awaiting `fn` adds its own promise and a suspension
 * (16–27 ns a call on Node 24, three interleaved runs).
 */
function run(breaker, fn, permit, hasFallback, fallback) {
  let pending;
  try {
    // A thenable, a plain value or a promise of another realm or subclass becomes a
    // native promise; a native one comes back as is. Either may throw (a `constructor`
    // getter): that is `fn` failing.
    pending = promiseResolve.call(NativePromise, fn(neverAbortingSignal()));
  } catch (error) {
    const code = errorCode(error);
    breaker[settle](permit, code, askedMs);
    return rejected(error, hasFallback, fallback);
  }
  return promiseThen.call(
    pending,
    (value) => {
      const code = valueCode(value);
      breaker[settle](permit, code, askedMs);
      return value;
    },
    (error) => {
      const code = errorCode(error);
      breaker[settle](permit, code, askedMs);
      if (hasFallback) return applyFallback(fallback, error);
      throw error;
    },
  );
}

/** Settles a guarded call that failed: with the fallback's value when there is one. */
function failWith(resolve, reject, error, hasFallback, fallback) {
  if (!hasFallback) {
    reject(error);
    return;
  }
  try {
    resolve(applyFallback(fallback, error));
  } catch (fallbackError) {
    reject(fallbackError);
  }
}

function stopListening(signal, listener) {
  try {
    signal.removeEventListener('abort', listener);
  } catch {
    // The caller's signal-like object failed; the call is over either way.
  }
}

/** Why the caller's signal aborted; what its `reason` getter threw, if it throws. */
function abortReason(signal) {
  try {
    return signal.reason;
  } catch (error) {
    return error;
  }
}

/**
 * A call with a timeout or the caller's signal: it settles once, by `fn`'s value or error,
 * the deadline or the caller's abort, whichever comes first. `report` (the retry loop's),
 * when given, is told the class the breaker gave the outcome, the stay-away it asked for
 * and whether the caller aborted, before the promise settles.
 */
function runGuarded(breaker, fn, permit, timeoutMs, signal, hasFallback, fallback, report) {
  return new Promise((resolve, reject) => {
    const controller = new AbortController();
    let done = false;
    // The deadline entry, when there is a timeout (see deadlines.js).
    let entry;
    const finish = (code, after) => {
      done = true;
      if (entry !== undefined) {
        // The entry may wait in the deadline queue a while longer: it must not keep the
        // call (its closure holds the controller, fn's promise and the caller's).
        entry.done = true;
        entry.expire = null;
        deadlineSettled();
      }
      if (signal !== undefined) stopListening(signal, onAbort);
      const klass = breaker[settle](permit, code, after);
      if (report !== undefined) {
        report.klass = klass;
        report.asked = after;
      }
    };
    const fail = (error) => failWith(resolve, reject, error, hasFallback, fallback);
    const onAbort = () => {
      if (done) return;
      // The caller gave up: no evidence about the upstream, and no fallback either.
      if (report !== undefined) report.aborted = true;
      finish(CANCELLED, 0);
      const reason = abortReason(signal);
      controller.abort(reason);
      reject(reason);
    };
    if (signal !== undefined) {
      try {
        signal.addEventListener('abort', onAbort, { once: true });
      } catch (error) {
        if (report !== undefined) report.aborted = true;
        finish(CANCELLED, 0);
        reject(error);
        return;
      }
    }
    if (timeoutMs !== undefined) {
      entry = {
        done: false,
        deadline: 0,
        expire() {
          if (done) return;
          const error = new DOMException(`operation timed out after ${timeoutMs} ms`, 'TimeoutError');
          finish(TIMEOUT, 0);
          controller.abort(error);
          fail(error);
        },
      };
      addDeadline(timeoutMs, entry);
    }
    let pending;
    try {
      pending = promiseResolve.call(NativePromise, fn(controller.signal));
    } catch (error) {
      pending = Promise.reject(error);
    }
    promiseThen.call(
      pending,
      (value) => {
        if (done) return;
        const code = valueCode(value);
        finish(code, askedMs);
        resolve(value);
      },
      (error) => {
        if (done) return;
        const code = errorCode(error);
        finish(code, askedMs);
        fail(error);
      },
    );
  });
}

/** setTimeout's largest delay; a longer wait is made of steps of at most this. */
const MAX_DELAY = 2 ** 31 - 1;

/**
 * `execute` with the breaker's retries (SPEC § Retries), as the Rust hosts' loop
 * (`tripgate_host::retry`) runs them: every attempt is admitted by the breaker, and its
 * rejection is the call's answer (nothing retries into an open breaker); a call whose
 * first attempt was admitted pays into the budget; only an outcome the breaker classified
 * as a fault is tried again, after the wait the core draws (or the answer's longer
 * stay-away), while the policy and the budget allow. Each attempt runs as a guarded call
 * (its own `timeoutMs`, the caller's `signal`); the caller's abort ends the call at once,
 * an attempt in flight recorded as cancelled, a wait cleared. The fallback replaces the
 * breaker's rejection or the last attempt's failure, never the caller's abort.
 */
async function retrying(breaker, fn, retries, timeoutMs, signal, hasFallback, fallback) {
  const report = { klass: -1, asked: 0, aborted: false };
  for (let attempt = 1; ; attempt++) {
    if (signal !== undefined && signal.aborted) throw abortReason(signal);
    const permit = breaker.acquire();
    if (permit < 0) return failed(breaker[rejection](permit), hasFallback, fallback);
    report.klass = -1;
    report.asked = 0;
    report.aborted = false;
    let ok = true;
    let answer;
    try {
      answer = await runGuarded(breaker, fn, permit, timeoutMs, signal, false, undefined, report);
    } catch (error) {
      ok = false;
      answer = error;
    }
    if (report.aborted) throw answer;
    if (attempt === 1) retries[deposit]();
    const waitMs = report.klass === FAULT ? retries[nextWait](attempt, report.asked) : -1;
    if (waitMs < 0) return ok ? answer : failed(answer, hasFallback, fallback);
    if (ok) discard(answer);
    await wait(waitMs, signal);
  }
}

/** The call's failure: thrown, or replaced by the fallback. */
function failed(error, hasFallback, fallback) {
  if (!hasFallback) throw error;
  return applyFallback(fallback, error);
}

/**
 * Lets go of an answer that a retry replaces: a fetch `Response`'s body is cancelled, so
 * that its connection is freed now rather than at garbage collection. Never throws.
 */
function discard(answer) {
  try {
    const body = typeof answer === 'object' && answer !== null ? answer.body : undefined;
    if (typeof body === 'object' && body !== null && typeof body.getReader === 'function' &&
      typeof body.cancel === 'function' && body.locked === false) {
      promiseThen.call(promiseResolve.call(NativePromise, body.cancel()), undefined, () => {});
    }
  } catch {
    // An answer that cannot be read has nothing to free.
  }
}

/** Resolves after `ms` (rounded up to whole ms, by setTimeout); rejects when `signal` aborts. */
function wait(ms, signal) {
  return new Promise((resolve, reject) => {
    let left = Math.ceil(ms);
    let timer;
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortReason(signal));
    };
    const step = () => {
      const now = Math.min(left, MAX_DELAY);
      left -= now;
      timer = setTimeout(() => {
        if (left > 0) {
          step();
          return;
        }
        if (signal !== undefined) stopListening(signal, onAbort);
        resolve();
      }, now);
    };
    if (signal !== undefined) {
      try {
        if (signal.aborted) {
          reject(abortReason(signal));
          return;
        }
        signal.addEventListener('abort', onAbort, { once: true });
      } catch (error) {
        reject(error);
        return;
      }
    }
    step();
  });
}
