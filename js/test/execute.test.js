// execute(): classification, timeout, caller aborts, fallback, exactly-once recording —
// and against a real node:http server on 127.0.0.1 with real fetch.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import {
  CircuitBreaker, CircuitOpenError, classifyError, classifyResult,
} from '../src/node.js';
import { make } from './helpers.js';


const errorWith = (props, message = 'boom') => Object.assign(new Error(message), props);

describe('classification', () => {
  const values = [
    [undefined, 'success'], [42, 'success'], [{ status: 'ok' }, 'success'],
    [new Response(null, { status: 200 }), 200], [new Response(null, { status: 503 }), 503],
    [{ statusCode: 429 }, 429], [{ status: 404 }, 404], [{ status: '503' }, 503],
    [{ status: 0 }, 'connection-error'], [Response.error(), 'connection-error'], [{ status: 700 }, 'success'],
  ];
  for (const [value, outcome] of values) {
    test(`resolved ${value?.constructor?.name ?? value} ${JSON.stringify(value)} → ${outcome}`, () => {
      assert.deepEqual(classifyResult(value), outcome);
    });
  }

  const errors = [
    ['a plain Error', new Error('x'), 'failure'],
    ['an error with status 503', errorWith({ status: 503 }), 503],
    ['an error with statusCode 404', errorWith({ statusCode: 404 }), 404],
    ['AbortError', new DOMException('aborted', 'AbortError'), 'cancelled'],
    ['TimeoutError', new DOMException('timed out', 'TimeoutError'), 'timeout'],
    ['ECONNREFUSED', errorWith({ code: 'ECONNREFUSED' }), 'connection-error'],
    ['ECONNRESET', errorWith({ code: 'ECONNRESET' }), 'connection-error'],
    ['ENOTFOUND', errorWith({ code: 'ENOTFOUND' }), 'connection-error'],
    ['ETIMEDOUT', errorWith({ code: 'ETIMEDOUT' }), 'timeout'],
    ['EAI_AGAIN', errorWith({ code: 'EAI_AGAIN' }), 'connection-error'],
    ['fetch failed (cause ECONNREFUSED)', new TypeError('fetch failed', { cause: errorWith({ code: 'ECONNREFUSED' }) }), 'connection-error'],
    ['AggregateError of ECONNREFUSED', new AggregateError([errorWith({ code: 'ECONNREFUSED' })]), 'connection-error'],
    ['undici headers timeout', errorWith({ code: 'UND_ERR_HEADERS_TIMEOUT' }), 'timeout'],
    ['a grpc-js UNAVAILABLE', errorWith({ code: 14, details: 'down', metadata: {} }), { grpc: 14 }],
    ['a grpc-js NOT_FOUND', errorWith({ code: 5, details: 'no', metadata: {} }), { grpc: 5 }],
    ['a thrown string', 'oops', 'failure'],
  ];
  for (const [name, error, outcome] of errors) {
    test(`thrown ${name} → ${JSON.stringify(outcome)}`, () => {
      assert.deepEqual(classifyError(error), outcome);
    });
  }
});

describe('execute', () => {
  test('hands fn a signal, returns its value, records a success', async () => {
    const { breaker } = make();
    let signal;
    assert.equal(await breaker.execute(async (s) => {
      signal = s;
      return 7;
    }), 7);
    assert.ok(signal instanceof AbortSignal && !signal.aborted);
    assert.deepEqual(breaker.lastRecord, { class: 'success', slow: false, stale: false });
    assert.equal(breaker.metrics().calls, 1);
  });

  test("whatever fn returns, execute settles as `await` would and records once: a promise with its own then, a subclass, a thenable, a value", async () => {
    class Sub extends Promise {}
    const patched = Promise.resolve({ status: 503 });
    patched.then = () => {
      throw new Error('own then must not be called');
    };
    const cases = [
      [() => patched, { status: 503 }, 503],
      [() => Sub.resolve(7), 7, 'success'],
      [() => ({ then: (resolve) => resolve({ status: 429 }) }), { status: 429 }, 429],
      [() => 'plain', 'plain', 'success'],
    ];
    for (const [fn, value, outcome] of cases) {
      const { breaker } = make({ failureThreshold: 100, minCalls: 100 });
      assert.deepEqual(await breaker.execute(fn), value);
      assert.equal(breaker.metrics().calls, 1);
      assert.equal(breaker.outstandingPermits, 0);
      const expected = typeof outcome === 'number' && outcome >= 429 ? 'fault' : 'success';
      assert.equal(breaker.lastRecord.class, expected, `${fn}`);
    }
    const { breaker } = make();
    const rejectedThenable = { then: (_, reject) => reject(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' })) };
    await assert.rejects(breaker.execute(() => rejectedThenable), /refused/);
    assert.equal(breaker.metrics().faults, 1);
  });

  test('a synchronous throw is recorded as a failure and rethrown', async () => {
    const { breaker } = make();
    await assert.rejects(breaker.execute(() => {
      throw new Error('sync');
    }), /sync/);
    assert.equal(breaker.metrics().faults, 1);
  });

  test('a rejection while open throws CircuitOpenError with reason and retryAfterMs; fn is not called', async () => {
    const { breaker, clock } = make();
    for (let i = 0; i < 5; i++) await breaker.execute(async () => new Response(null, { status: 503 }));
    clock.advance(5_000);
    let called = false;
    await assert.rejects(breaker.execute(async () => {
      called = true;
    }), (error) => {
      assert.ok(error instanceof CircuitOpenError);
      assert.equal(error.reason, 'open');
      assert.equal(error.retryAfterMs, 10_000);
      assert.equal(error.state, 'open');
      assert.equal(error.code, 'ERR_CIRCUIT_OPEN');
      return true;
    });
    assert.equal(called, false);
  });

  test('fallback: returned on rejection and on failure, called with the error when a function', async () => {
    const { breaker } = make();
    assert.equal(await breaker.execute(async () => {
      throw new Error('x');
    }, { fallback: 'cached' }), 'cached');
    breaker.isolate();
    assert.equal(await breaker.execute(async () => 1, { fallback: 'cached' }), 'cached');
    const got = await breaker.execute(async () => 1, { fallback: (e) => e });
    assert.ok(got instanceof CircuitOpenError);
    assert.equal(got.reason, 'isolated');
    assert.equal(await breaker.execute(async () => 1, { fallback: async () => 'later' }), 'later');
  });

  test('timeout: aborts the signal, rejects with TimeoutError, records a timeout exactly once', async () => {
    const { breaker } = make();
    let signal;
    let finish;
    const late = new Promise((resolve) => {
      finish = resolve;
    });
    const pending = breaker.execute((s) => {
      signal = s;
      return late; // ignores its signal, answers after the timeout
    }, { timeoutMs: 20 });
    await assert.rejects(pending, (error) => error.name === 'TimeoutError');
    assert.equal(signal.aborted, true);
    assert.equal(signal.reason.name, 'TimeoutError');
    assert.equal(breaker.metrics().faults, 1);
    finish({ status: 200 });
    await late;
    await new Promise((resolve) => setImmediate(resolve));
    const m = breaker.metrics();
    assert.equal(m.calls, 1, 'the late answer is not recorded again');
    assert.equal(m.staleTotal, 0);
    assert.equal(m.inFlight, 0);
  });

  test('many calls sharing timeouts: exactly the ones still pending at their deadline time out', async () => {
    const { breaker } = make({ failureThreshold: 1_000, maxInFlight: 1_000 });
    const started = performance.now();
    const calls = [];
    for (let i = 0; i < 60; i++) {
      const timeoutMs = i % 2 === 0 ? 30 : 60;
      const answerAfter = i % 3 === 0 ? null : 5; // every third call hangs
      const run = breaker.execute(() => (answerAfter === null
        ? new Promise(() => {})
        : new Promise((resolve) => setTimeout(resolve, answerAfter, i))), { timeoutMs });
      calls.push(run.then((v) => ['ok', v, performance.now() - started], (e) => [e.name, timeoutMs, performance.now() - started]));
    }
    const results = await Promise.all(calls);
    results.forEach(([kind, detail, at], i) => {
      if (i % 3 === 0) {
        assert.equal(kind, 'TimeoutError', `call ${i}`);
        assert.ok(at >= detail - 1, `call ${i} timed out after ${at} ms, before its ${detail} ms`);
      } else {
        assert.deepEqual([kind, detail], ['ok', i]);
      }
    });
    const m = breaker.metrics();
    assert.equal(m.faults, 20);
    assert.equal(m.calls, 60);
    assert.equal(m.inFlight, 0);
  });

  test('timeout with fallback returns the fallback', async () => {
    const { breaker } = make();
    assert.equal(await breaker.execute(() => new Promise(() => {}), { timeoutMs: 10, fallback: 'fb' }), 'fb');
    assert.equal(breaker.metrics().faults, 1);
  });

  test("the caller's abort is cancelled: neutral, rethrows the reason, no fallback", async () => {
    const { breaker } = make();
    const controller = new AbortController();
    const pending = breaker.execute((signal) => new Promise((_, reject) => {
      signal.addEventListener('abort', () => reject(signal.reason));
    }), { signal: controller.signal, fallback: 'never' });
    controller.abort();
    await assert.rejects(pending, (e) => e.name === 'AbortError');
    const m = breaker.metrics();
    assert.equal(m.calls, 0);
    assert.equal(m.inFlight, 0);
    assert.equal(breaker.lastRecord.class, 'neutral');
  });

  test('an already-aborted signal rejects without acquiring', async () => {
    const { breaker } = make();
    const controller = new AbortController();
    controller.abort(new Error('gone'));
    await assert.rejects(breaker.execute(async () => 1, { signal: controller.signal }), /gone/);
    assert.equal(breaker.metrics().admittedTotal, 0);
  });

  test('the breaker-level timeoutMs is the default; execute options override it', async () => {
    const { breaker } = make({ timeoutMs: 10 });
    await assert.rejects(breaker.execute(() => new Promise(() => {})), { name: 'TimeoutError' });
    assert.equal(await breaker.execute((s) => new Promise((resolve) => setTimeout(resolve, 30, 'ok')), { timeoutMs: 1_000 }), 'ok');
  });

  test('bad arguments reject with TypeError/RangeError', async () => {
    const { breaker } = make();
    await assert.rejects(breaker.execute('nope'), TypeError);
    await assert.rejects(breaker.execute(async () => 1, { timeoutMs: -1 }), RangeError);
    await assert.rejects(breaker.execute(async () => 1, { signal: {} }), TypeError);
    assert.equal(breaker.metrics().admittedTotal, 0);
  });
});

describe('execute against a real HTTP server on 127.0.0.1 with fetch', () => {
  let server;
  let base;
  let refusedPort;
  const sockets = new Set();

  before(async () => {
    server = createServer((req, res) => {
      switch (req.url) {
        case '/200': res.writeHead(200).end('ok'); break;
        case '/404': res.writeHead(404).end('no'); break;
        case '/503': res.writeHead(503).end('busy'); break;
        case '/hang': break; // never answers
        case '/reset': req.socket.resetAndDestroy(); break; // TCP RST
        default: res.writeHead(500).end();
      }
    });
    server.on('connection', (socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${server.address().port}`;
    // A port with nothing listening: bind one, then close it.
    const probe = createServer();
    await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
    refusedPort = probe.address().port;
    await new Promise((resolve) => probe.close(resolve));
  });

  after(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });

  const get = (path) => (signal) => fetch(`${base}${path}`, { signal });

  test('200 → success', async () => {
    const { breaker } = make();
    const res = await breaker.execute(get('/200'));
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'ok');
    assert.equal(breaker.lastRecord.class, 'success');
  });

  test('404 → success: the upstream answered (20 in a row never trip)', async () => {
    const { breaker } = make();
    for (let i = 0; i < 20; i++) {
      const res = await breaker.execute(get('/404'));
      assert.equal(res.status, 404);
      await res.arrayBuffer();
    }
    assert.equal(breaker.lastRecord.class, 'success');
    assert.equal(breaker.state, 'closed');
  });

  test('503 → fault; five trip the breaker, then callers are rejected without a request', async () => {
    const { breaker } = make();
    for (let i = 0; i < 5; i++) {
      const res = await breaker.execute(get('/503'));
      assert.equal(res.status, 503);
      await res.arrayBuffer();
      assert.equal(breaker.lastRecord.class, 'fault');
    }
    assert.equal(breaker.state, 'open');
    await assert.rejects(breaker.execute(get('/200')), CircuitOpenError);
  });

  test('a hang past the timeout → timeout (the request is aborted)', async () => {
    const { breaker } = make();
    const started = performance.now();
    await assert.rejects(breaker.execute(get('/hang'), { timeoutMs: 100 }), (error) => {
      assert.equal(error.name, 'TimeoutError');
      assert.equal(classifyError(error), 'timeout');
      return true;
    });
    const waited = performance.now() - started;
    assert.ok(waited >= 95 && waited < 2_000, `waited ${waited} ms`);
    assert.equal(breaker.lastRecord.class, 'fault');
    assert.equal(breaker.metrics().faults, 1);
  });

  test('a reset connection → connection-error', async () => {
    const { breaker } = make();
    await assert.rejects(breaker.execute(get('/reset')), (error) => {
      assert.equal(classifyError(error), 'connection-error', `${error} / ${error.cause}`);
      return true;
    });
    assert.equal(breaker.lastRecord.class, 'fault');
  });

  test('a refused port → connection-error', async () => {
    const { breaker } = make();
    await assert.rejects(breaker.execute((signal) => fetch(`http://127.0.0.1:${refusedPort}/`, { signal })), (error) => {
      assert.equal(classifyError(error), 'connection-error', `${error} / ${error.cause}`);
      return true;
    });
    assert.equal(breaker.lastRecord.class, 'fault');
    assert.equal(breaker.metrics().faults, 1);
  });

  test('the caller aborting a real request → cancelled (neutral)', async () => {
    const { breaker } = make();
    const controller = new AbortController();
    const pending = breaker.execute(get('/hang'), { signal: controller.signal });
    setTimeout(() => controller.abort(), 20);
    await assert.rejects(pending, { name: 'AbortError' });
    assert.equal(breaker.lastRecord.class, 'neutral');
    assert.equal(breaker.metrics().calls, 0);
  });
});
