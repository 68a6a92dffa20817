// The package's exports, shared by both entry points.
export { CircuitBreaker } from './breaker.js';
export { CircuitOpenError, InvalidStateError } from './errors.js';
export { classifyError, classifyResult, retryAfter } from './classify.js';
export { Rejected, configFields, rejectReasons, states, transitionReasons } from './tables.js';
