// Retries through the package (SPEC § Retries): `breaker.retries(options)` and
// `execute(fn, { retries })` against a real HTTP server on 127.0.0.1 (test/edge/upstream.js).
// The breaker's time is a fake clock and the waits between attempts are node:test's mock
// timers, moved together by `advance`: nothing sleeps. The waits expected are drawn by a
// twin budget (the same policy and seed, through the public `next`), so every wait is the
// core's to the millisecond, never spelled here. The vector (tests/vectors/retry) runs in
// retry-vector.test.js.
import { after, afterEach, before, beforeEach, describe, mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker, CircuitOpenError } from '../src/node.js';
import { Upstream } from './edge/upstream.js';
import { make } from './helpers.js';

/** A breaker that trips on nothing these tests do. */
const PATIENT = { failureThreshold: 100, minCalls: 100 };

/** Lets every pending promise callback run (the retry loop arms its wait in them). */
const turn = () => new Promise((resolve) => setImmediate(resolve));

/**
 * A caller of the upstream through fetch that counts the answers back in its hands: once
 * `answered(n)` resolves, the n-th answer has reached the retry loop, which has decided
 * (and armed its wait) by the next turn.
 */
class Caller {
  /** Attempts begun (fn called), and answers back. */
  calls = 0;
  answers = 0;
  /** Every answer `fn` returned. */
  responses = [];
  #waiters = [];

  constructor(upstream) {
    this.fn = async (signal) => {
      this.calls++;
      const res = await fetch(upstream.url, { signal });
      this.answers++;
      this.responses.push(res);
      this.#waiters = this.#waiters.filter((w) => (this.answers >= w.n ? (w.resolve(), false) : true));
      return res;
    };
  }

  async answered(n) {
    if (this.answers < n) await new Promise((resolve) => this.#waiters.push({ n, resolve }));
    await turn();
  }
}

/** Whether `promise` has settled by the next turn (a call the loop ended has). */
async function settledNow(promise) {
  let settled = false;
  promise.then(() => (settled = true), () => (settled = true));
  await turn();
  return settled;
}

/**
 * A call through `breaker` with `retries` that the test expects to end with its first
 * attempt: its answer (its body read), or a failed assertion rather than a hang.
 */
async function oneAttempt(breaker, retries) {
  const caller = new Caller(upstream);
  const call = breaker.execute(caller.fn, { retries });
  await caller.answered(1);
  assert.ok(await settledNow(call), 'the call ended with its first attempt: no wait armed');
  const res = await call;
  await res.arrayBuffer();
  assert.equal(caller.calls, 1);
  return res;
}

/**
 * A breaker on a fake clock with its retries by `policy`, and a twin budget of the same
 * policy on the same clock: `twin.next(...)` draws the waits the breaker's retries will.
 */
function subject(policy, options = PATIENT) {
  const { breaker, clock } = make(options);
  const retries = breaker.retries(policy);
  const twin = new CircuitBreaker({ clock: clock.read }).retries(policy);
  /** Moves the breaker's clock and the timers together. */
  const advance = (ms) => {
    clock.advance(ms);
    mock.timers.tick(ms);
  };
  return { breaker, clock, retries, twin, advance };
}

/** The whole ms the loop's timer waits for a drawn wait. */
const timerMs = (next) => {
  assert.equal(next.retry, true, `the twin retries: ${JSON.stringify(next)}`);
  return Math.ceil(next.waitMs);
};

const upstream = new Upstream();
before(() => upstream.start());
after(() => upstream.stop());
beforeEach(() => {
  Object.assign(upstream, { status: 503, headers: {}, hold: false });
  mock.timers.enable({ apis: ['setTimeout'] });
});
afterEach(() => mock.timers.reset());

describe('execute with retries against a real HTTP server', () => {
  test('a 503 is retried up to maxAttempts, each attempt after the wait the core draws', async () => {
    const { breaker, retries, twin, advance } = subject({ maxAttempts: 3, seed: 5 });
    const caller = new Caller(upstream);
    const start = upstream.hits;
    const call = breaker.execute(caller.fn, { retries });
    twin.deposit();
    for (let attempt = 1; attempt < 3; attempt++) {
      await caller.answered(attempt);
      const wait = timerMs(twin.next(attempt, 'fault'));
      if (wait > 0) {
        advance(wait - 1);
        await turn();
        assert.equal(caller.calls, attempt, `no attempt ${attempt + 1} before its wait of ${wait} ms`);
      }
      advance(1);
      await upstream.reached(start + attempt + 1);
    }
    const res = await call;
    assert.equal(res.status, 503, "the last attempt's answer is the call's");
    assert.equal(res, caller.responses[2]);
    assert.deepEqual(caller.responses.map((r) => r.bodyUsed), [true, true, false],
      'the answers retried past were let go (their bodies cancelled), the last one is untouched');
    await res.arrayBuffer();
    assert.equal(upstream.hits - start, 3, 'maxAttempts in all');
    assert.equal(breaker.outstandingPermits, 0);
    assert.equal(breaker.metrics().faults, 3, 'every attempt was recorded');
  });

  test('a success ends the retries: its answer is the call\'s', async () => {
    const { breaker, retries, advance } = subject({ maxAttempts: 4, maxDelayMs: 100, baseDelayMs: 10 });
    const caller = new Caller(upstream);
    const start = upstream.hits;
    const call = breaker.execute(caller.fn, { retries });
    await caller.answered(1);
    upstream.status = 200;
    advance(100);
    const res = await call;
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'upstream 200');
    assert.equal(upstream.hits - start, 2);
    assert.deepEqual([breaker.metrics().faults, breaker.metrics().successesTotal], [1, 1]);
  });

  test('a 404 is not retried: only a fault is', async () => {
    const { breaker, retries } = subject({ maxAttempts: 4 });
    upstream.status = 404;
    assert.equal((await oneAttempt(breaker, retries)).status, 404);
  });
});

describe('retries and the breaker', () => {
  test('once the breaker trips, its rejection ends the retries and no more requests reach the server', async () => {
    const trips = { failureThreshold: 2, minCalls: 2, cooldownMs: 15_000 };
    const { breaker, retries, advance } = subject({ maxAttempts: 5, maxDelayMs: 100, baseDelayMs: 10 }, trips);
    const caller = new Caller(upstream);
    const start = upstream.hits;
    const call = breaker.execute(caller.fn, { retries });
    await caller.answered(1);
    advance(100);
    await caller.answered(2);
    assert.equal(breaker.state, 'open', 'the second 503 tripped it');
    advance(100);
    await assert.rejects(call, (error) => {
      assert.ok(error instanceof CircuitOpenError, String(error));
      assert.equal(error.reason, 'open');
      return true;
    });
    assert.equal(upstream.hits - start, 2, 'the third attempt never left');
    const fallback = await breaker.execute(caller.fn, { retries, fallback: (error) => error.reason });
    assert.equal(fallback, 'open', "a later call: the breaker's rejection, to the fallback");
    assert.equal(upstream.hits - start, 2);
    assert.equal(breaker.outstandingPermits, 0);
  });

  test('the budget is the breaker\'s, shared by all its callers: no budget, no retry', async () => {
    const policy = { maxAttempts: 2, budgetPercent: 40, minRetriesPerSecond: 0 };
    const { breaker, advance } = subject(policy);
    // Two callers (two modules) ask the breaker for its retries: one object, one budget.
    const [mine, theirs] = [breaker.retries(), breaker.retries(policy)];
    assert.equal(mine, theirs);
    const start = upstream.hits;
    await oneAttempt(breaker, mine);
    assert.equal(upstream.hits - start, 1, 'four tenths of a retry saved: not one');
    upstream.status = 200;
    await oneAttempt(breaker, theirs);
    upstream.status = 503;
    const caller = new Caller(upstream);
    const call = breaker.execute(caller.fn, { retries: mine });
    await caller.answered(1);
    advance(2_000);
    await (await call).arrayBuffer();
    assert.equal(upstream.hits - start, 4, 'the third call brings the savings to 1.2 retries: retried once');
    await oneAttempt(breaker, theirs);
    assert.equal(upstream.hits - start, 5, 'the fourth: 0.6 saved, no retry');
  });

  test('no budget and no floor: a 503 is not retried', async () => {
    const { breaker, retries } = subject({ maxAttempts: 10, budgetPercent: 0, minRetriesPerSecond: 0 });
    const start = upstream.hits;
    assert.equal((await oneAttempt(breaker, retries)).status, 503);
    assert.equal(upstream.hits - start, 1);
  });
});

describe("the upstream's Retry-After", () => {
  test('a 503 asking for longer than maxDelayMs is not retried', async () => {
    const { breaker, retries } = subject({ maxAttempts: 4, maxDelayMs: 2_000 });
    upstream.headers = { 'retry-after': '3' };
    const start = upstream.hits;
    const res = await oneAttempt(breaker, retries);
    assert.equal(res.status, 503);
    assert.equal(res.headers.get('retry-after'), '3', "the upstream's answer is the call's");
    assert.equal(upstream.hits - start, 1, 'asked to stay away 3 s, more than the 2 s a wait may last');
  });

  test('a Retry-After longer than the drawn wait is waited, to the millisecond', async () => {
    const { breaker, retries, advance } = subject({ maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 2_000 });
    upstream.headers = { 'retry-after': '1' };
    const caller = new Caller(upstream);
    const start = upstream.hits;
    const call = breaker.execute(caller.fn, { retries });
    await caller.answered(1);
    advance(999);
    await turn();
    assert.equal(caller.calls, 1, 'not before the second asked for');
    advance(1);
    await (await call).arrayBuffer();
    assert.equal(upstream.hits - start, 2);
  });
});

describe('cancellation', () => {
  test('an abort during the wait ends the call and leaves nothing in flight', async () => {
    const { breaker, retries, advance } = subject({ maxAttempts: 3 });
    const caller = new Caller(upstream);
    const controller = new AbortController();
    const start = upstream.hits;
    const call = breaker.execute(caller.fn, { retries, signal: controller.signal, fallback: 'not for an abort' });
    await caller.answered(1);
    controller.abort();
    assert.ok(await settledNow(call), 'the abort ended the wait');
    await assert.rejects(call, { name: 'AbortError' });
    advance(2_000);
    await turn();
    assert.equal(caller.calls, 1, 'no attempt after the abort');
    assert.equal(upstream.hits - start, 1);
    assert.equal(breaker.outstandingPermits, 0);
    assert.equal(breaker.metrics().inFlight, 0);
  });

  test('an abort during an attempt releases it as cancelled and retries nothing', async () => {
    const { breaker, retries, advance } = subject({ maxAttempts: 3, maxDelayMs: 100, baseDelayMs: 10 });
    const caller = new Caller(upstream);
    const controller = new AbortController();
    const start = upstream.hits;
    const call = breaker.execute(caller.fn, { retries, signal: controller.signal });
    await caller.answered(1);
    upstream.hold = true;
    advance(100);
    await upstream.reached(start + 2);
    assert.equal(breaker.outstandingPermits, 1, 'the second attempt is in flight');
    controller.abort(new Error('caller gone'));
    await assert.rejects(call, /caller gone/);
    assert.equal(breaker.lastRecord.class, 'neutral', 'recorded as cancelled');
    assert.equal(breaker.outstandingPermits, 0);
    upstream.release();
    advance(100);
    await turn();
    assert.equal(caller.calls, 2, 'no attempt after the abort');
    assert.equal(upstream.hits - start, 2);
  });

  test('an already-aborted signal rejects without acquiring', async () => {
    const { breaker, retries } = subject({});
    const start = upstream.hits;
    await assert.rejects(breaker.execute(() => fetch(upstream.url), { retries, signal: AbortSignal.abort() }), { name: 'AbortError' });
    assert.equal(upstream.hits, start);
    assert.equal(breaker.metrics().admittedTotal, 0);
  });
});

describe('options', () => {
  /** `fn()` throws a `type` naming `option`, with `message` in its message. */
  const refuses = (fn, type, option, message) => assert.throws(fn, (error) => {
    assert.ok(error instanceof type, `${option}: ${error}`);
    assert.equal(error.option, option);
    if (message !== undefined) assert.ok(error.message.includes(message), error.message);
    return true;
  });

  test("a bad policy is refused in the core's words, naming the JS option, and makes no retries", () => {
    const { breaker } = make();
    const refusals = [
      [{ maxAttempts: 0 }, RangeError, 'maxAttempts', 'maxAttempts must be between 1 and 10 (received 0)'],
      [{ maxAttempts: 300 }, RangeError, 'maxAttempts', 'maxAttempts must be between 1 and 10'],
      [{ maxAttempts: 2.5 }, RangeError, 'maxAttempts', 'maxAttempts must be an integer'],
      [{ maxAttempts: '3' }, TypeError, 'maxAttempts', 'maxAttempts must be a number'],
      [{ baseDelayMs: 0 }, RangeError, 'baseDelayMs', 'baseDelayMs must be > 0'],
      [{ baseDelayMs: 100, maxDelayMs: 50 }, RangeError, 'maxDelayMs', 'maxDelayMs must be >= baseDelayMs'],
      [{ maxDelayMs: Infinity }, RangeError, 'maxDelayMs', 'maxDelayMs must be a finite number'],
      [{ budgetPercent: 1001 }, RangeError, 'budgetPercent', 'budgetPercent must be between 0 and 1000'],
      [{ minRetriesPerSecond: 2 ** 32 }, RangeError, 'minRetriesPerSecond', 'minRetriesPerSecond must be <= 4294967295'],
      [{ seed: -1 }, RangeError, 'seed'],
      [{ maxDelay: 100 }, TypeError, 'maxDelay', 'unknown retries option maxDelay (did you mean maxDelayMs?)'],
      ['fast', TypeError, 'options'],
    ];
    for (const [options, type, option, message] of refusals) refuses(() => breaker.retries(options), type, option, message);
    const retries = breaker.retries({ maxAttempts: 4, maxDelayMs: undefined, seed: null });
    assert.deepEqual(retries.policy, {
      maxAttempts: 4, baseDelayMs: 50, maxDelayMs: 2_000, budgetPercent: 20, minRetriesPerSecond: 10, seed: 0,
    });
    assert.ok(Object.isFrozen(retries.policy));
  });

  test('one policy per breaker: the same options give the same object, others are refused', () => {
    const { breaker } = make();
    const retries = breaker.retries({ maxAttempts: 4 });
    assert.equal(breaker.retries({ maxAttempts: 4, budgetPercent: 20 }), retries, 'the same policy, defaults spelled out');
    assert.equal(breaker.retries(), retries);
    refuses(() => breaker.retries({ maxAttempts: 5 }), RangeError, 'maxAttempts', 'made with maxAttempts 4');
    refuses(() => breaker.retries({}), RangeError, 'maxAttempts');
    assert.notEqual(make().breaker.retries({ maxAttempts: 4 }), retries, 'another breaker, another budget');
  });

  test("execute takes only this breaker's retries; next checks its arguments", async () => {
    const { breaker } = make();
    const retries = breaker.retries();
    const foreign = make().breaker.retries();
    for (const bad of [foreign, {}, true, retries.policy]) {
      await assert.rejects(breaker.execute(async () => 1, { retries: bad }), { name: 'TypeError', option: 'retries' });
    }
    assert.equal(breaker.metrics().admittedTotal, 0, 'refused before acquiring');
    assert.equal(await breaker.execute(async () => 1, { retries: null }), 1, 'null: no retries');
    refuses(() => retries.next(0, 'fault'), RangeError, 'attempt');
    refuses(() => retries.next('1', 'fault'), TypeError, 'attempt');
    refuses(() => retries.next(1, 'broken'), TypeError, 'outcomeClass');
    refuses(() => retries.next(1, 'fault', -1), RangeError, 'retryAfterMs');
    refuses(() => retries.next(1, 'fault', '5'), TypeError, 'retryAfterMs');
    assert.deepEqual(retries.next(1, 'neutral'), { retry: false, stop: 'answered' });
  });

  test('a disposed breaker takes its retries with it', async () => {
    const { breaker } = make();
    const retries = breaker.retries();
    breaker.dispose();
    assert.throws(() => breaker.retries(), { code: 'ERR_TRIPGATE_DISPOSED' });
    assert.throws(() => retries.next(1, 'fault'), { code: 'ERR_TRIPGATE_DISPOSED' });
    assert.throws(() => retries.deposit(), { code: 'ERR_TRIPGATE_DISPOSED' });
    await assert.rejects(breaker.execute(async () => 1, { retries }), { code: 'ERR_TRIPGATE_DISPOSED' });
  });
});
