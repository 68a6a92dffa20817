// `execute`: runs a function through a breaker, classifies how it went, records that
// exactly once, and always settles the promise it returns — whatever the function, its
// result, the caller's signal or the breaker (disposed meanwhile) do. An answer that asked
// its callers to stay away (a fetch `Response` with `Retry-After` on a 429 or 503, or
// `grpc-retry-pushback-ms`: classify.js reads it as `askedMs`) is recorded with it.

import { CANCELLED, TIMEOUT, askedMs, errorCode, valueCode } from './classify.js';
import { addDeadline, settled as deadlineSettled } from './deadlines.js';
import { typeError } from './errors.js';
import { checkTimeout, own } from './options.js';

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
    }
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
 * the deadline or the caller's abort, whichever comes first.
 */
function runGuarded(breaker, fn, permit, timeoutMs, signal, hasFallback, fallback) {
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
      breaker[settle](permit, code, after);
    };
    const fail = (error) => failWith(resolve, reject, error, hasFallback, fallback);
    const onAbort = () => {
      if (done) return;
      // The caller gave up: no evidence about the upstream, and no fallback either.
      finish(CANCELLED, 0);
      const reason = abortReason(signal);
      controller.abort(reason);
      reject(reason);
    };
    if (signal !== undefined) {
      try {
        signal.addEventListener('abort', onAbort, { once: true });
      } catch (error) {
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
