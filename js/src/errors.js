// The package's errors, and how values are shown in messages.

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

/** What every call on a disposed breaker fails with. */
export function disposedError() {
  const error = new Error('breaker is disposed');
  error.code = 'ERR_TRIPGATE_DISPOSED';
  return error;
}

/**
 * A value as a message shows it. Never throws: the value may be anything a caller passes
 * (a BigInt, a Symbol, an object without a prototype, a Proxy whose traps throw).
 */
export function describe(value) {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);
    case 'bigint':
      return `${value}n`;
    case 'symbol':
      return value.toString();
    case 'function':
      return 'a function';
    case 'object': {
      if (value === null) return 'null';
      try {
        if (Array.isArray(value)) return 'an array';
        const name = Object.getPrototypeOf(value)?.constructor?.name;
        return typeof name === 'string' && name !== '' && name !== 'Object' ? `a ${name}` : 'an object';
      } catch {
        return 'an object';
      }
    }
    default:
      return String(value);
  }
}

function optionError(Type, code, option, message, value) {
  const error = new Type(`${message} (received ${describe(value)})`);
  error.code = code;
  error.option = option;
  return error;
}

/** A wrong type for an option (`ERR_INVALID_ARG_TYPE`, `error.option` names it). */
export const typeError = (option, message, value) =>
  optionError(TypeError, 'ERR_INVALID_ARG_TYPE', option, message, value);
/** A value out of range for an option (`ERR_OUT_OF_RANGE`). */
export const rangeError = (option, message, value) =>
  optionError(RangeError, 'ERR_OUT_OF_RANGE', option, message, value);
