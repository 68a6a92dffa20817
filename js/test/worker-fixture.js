// Runs inside a worker thread (web.test.js): the workers entry, handed a compiled module.
import { parentPort, workerData } from 'node:worker_threads';
import { CircuitBreaker, initSync } from 'tripgate/web';

initSync({ module: workerData.module });
const breaker = new CircuitBreaker({ failureThreshold: 3, minCalls: 3, clock: () => 0 });
for (let i = 0; i < 3; i++) breaker.record(breaker.acquire(), 'timeout');
parentPort.postMessage({ state: breaker.state, rejected: breaker.acquire(), retryAfterMs: breaker.retryAfterMs });
