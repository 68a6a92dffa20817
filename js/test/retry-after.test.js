// The upstream's stay-away (SPEC § Retry-After) through the package: `execute` reads a
// fetch `Response`'s `Retry-After` (on 429 and 503 only) and `grpc-retry-pushback-ms`
// from a real HTTP server on 127.0.0.1 (test/edge/upstream.js) and records the outcome
// with it; `record` takes it as `{ retryAfterMs }` or from a response-like outcome. The
// breaker's time is a fake clock; an HTTP date is read against the real wall clock.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker, Rejected, retryAfter } from '../src/node.js';
import { Upstream } from './edge/upstream.js';
import { make } from './helpers.js';

/** Two faults trip; the cooldown is 15 s, an opening may last up to 120 s. */
const OPTIONS = { failureThreshold: 2, minCalls: 2, cooldownMs: 15_000, maxCooldownMs: 120_000 };

/** How long the breaker stays open from now, by its fake clock: the rejection's retry-after. */
function openFor(breaker) {
  const r = breaker.acquire();
  assert.equal(r, Rejected.OPEN, `rejected as open, got ${r}`);
  return breaker.lastRejection.retryAfterMs;
}

/** Whether the breaker is open `ms` after now, and still at `ms - 1` (moves the clock). */
function opensExactly(breaker, clock, ms) {
  clock.advance(ms - 1);
  assert.equal(breaker.state, 'open', `still open ${ms - 1} ms on`);
  clock.advance(1);
  assert.equal(breaker.state, 'half-open', `half-open ${ms} ms on`);
}

describe('execute against a real HTTP server that asks its callers to stay away', () => {
  const upstream = new Upstream();
  before(() => upstream.start());
  after(() => upstream.stop());

  /** Two calls through the breaker to the upstream answering `status` with `headers`. */
  async function tripWith(breaker, status, headers) {
    Object.assign(upstream, { status, headers });
    for (let i = 0; i < OPTIONS.failureThreshold; i++) {
      const res = await breaker.execute((signal) => fetch(upstream.url, { signal }));
      assert.equal(res.status, status);
      await res.arrayBuffer();
    }
    assert.equal(breaker.state, 'open');
  }

  test('a 503 with Retry-After: 60 that trips the breaker keeps it open for 60 s, not the 15 s cooldown', async () => {
    const { breaker, clock } = make(OPTIONS);
    clock.now = 1_000;
    await tripWith(breaker, 503, { 'retry-after': '60' });
    assert.equal(openFor(breaker), 60_000);
    clock.advance(15_000);
    assert.equal(openFor(breaker), 45_000, 'past the cooldown, still open');
    opensExactly(breaker, clock, 45_000);
    Object.assign(upstream, { status: 200, headers: {} });
    const hits = upstream.hits;
    const probe = await breaker.execute((signal) => fetch(upstream.url, { signal }));
    await probe.arrayBuffer();
    assert.equal(upstream.hits, hits + 1, 'then one probe reaches the upstream');
  });

  test('a 500 with Retry-After: 60 asks nothing: the breaker opens for its cooldown', async () => {
    const { breaker, clock } = make(OPTIONS);
    await tripWith(breaker, 500, { 'retry-after': '60' });
    assert.equal(openFor(breaker), 15_000);
    opensExactly(breaker, clock, 15_000);
  });

  test('a 429 with an HTTP date a minute and a half ahead of the wall clock keeps it open that long', async () => {
    const { breaker } = make(OPTIONS);
    const at = new Date(Date.now() + 90_000).toUTCString();
    await tripWith(breaker, 429, { 'retry-after': at });
    // Whole seconds of the wall clock: a second may tick between the answer and its reading.
    const open = openFor(breaker);
    assert.ok(open >= 89_000 && open <= 90_000, `open for ${open} ms`);
  });

  test('grpc-retry-pushback-ms counts on any status; a stay-away is bounded by maxCooldownMs', async () => {
    const { breaker } = make(OPTIONS);
    await tripWith(breaker, 500, { 'grpc-retry-pushback-ms': '30000' });
    assert.equal(openFor(breaker), 30_000);
    const { breaker: bounded } = make(OPTIONS);
    await tripWith(bounded, 503, { 'retry-after': '3600' });
    assert.equal(openFor(bounded), 120_000, 'an hour asked, maxCooldownMs granted');
  });

  test('without maxCooldownMs and without backoff the cooldown stands', async () => {
    const { breaker } = make({ ...OPTIONS, maxCooldownMs: undefined });
    await tripWith(breaker, 503, { 'retry-after': '60' });
    assert.equal(openFor(breaker), 15_000);
  });

  test('an answer that trips nothing asks nothing of the breaker', async () => {
    const { breaker, clock } = make(OPTIONS);
    const call = async () => (await breaker.execute((signal) => fetch(upstream.url, { signal }))).arrayBuffer();
    Object.assign(upstream, { status: 503, headers: { 'retry-after': '60' } });
    await call();
    assert.equal(breaker.state, 'closed', 'one fault of two');
    Object.assign(upstream, { status: 503, headers: {} });
    await call();
    assert.equal(openFor(breaker), 15_000, 'the first answer\'s stay-away was not kept');
    opensExactly(breaker, clock, 15_000);
  });
});

describe('record with a stay-away', () => {
  test('{ retryAfterMs } on the outcome that trips holds the breaker open that long', () => {
    const { breaker, clock } = make(OPTIONS);
    breaker.record(breaker.acquire(), 503, { retryAfterMs: 60_000 });
    assert.equal(breaker.state, 'closed', 'one fault trips nothing');
    breaker.record(breaker.acquire(), 'timeout', { retryAfterMs: 45_000 });
    assert.equal(openFor(breaker), 45_000);
    opensExactly(breaker, clock, 45_000);
    // A failed probe round re-opens for at least what its answer asked.
    breaker.record(breaker.acquire(), { grpc: 14 }, { retryAfterMs: 70_000 });
    assert.equal(openFor(breaker), 70_000);
  });

  test('a response-like outcome is read for its headers; retryAfterMs given explicitly wins', () => {
    const { breaker } = make(OPTIONS);
    const busy = new Response(null, { status: 503, headers: { 'Retry-After': '40' } });
    breaker.record(breaker.acquire(), busy);
    breaker.record(breaker.acquire(), { status: 503, headers: { 'retry-after': '50' } });
    assert.equal(openFor(breaker), 50_000, 'a plain object of headers, by lower-case name');
    const { breaker: explicit } = make(OPTIONS);
    explicit.record(explicit.acquire(), 503);
    explicit.record(explicit.acquire(), busy, { retryAfterMs: 20_000 });
    assert.equal(openFor(explicit), 20_000);
    const { breaker: unset } = make(OPTIONS);
    unset.record(unset.acquire(), 503);
    unset.record(unset.acquire(), busy, { retryAfterMs: undefined });
    assert.equal(openFor(unset), 40_000, 'undefined: not given');
  });

  test('an error that carries the answer (status and headers) is read too, through execute', async () => {
    const { breaker } = make(OPTIONS);
    const answer = () => Object.assign(new Error('busy'), { status: 503, headers: new Headers({ 'retry-after': '25' }) });
    for (let i = 0; i < 2; i++) {
      await assert.rejects(breaker.execute(async () => {
        throw answer();
      }), /busy/);
    }
    assert.equal(openFor(breaker), 25_000);
    const { breaker: wrapped } = make(OPTIONS);
    for (let i = 0; i < 2; i++) {
      await assert.rejects(wrapped.execute(() => {
        throw new Error('request failed', { cause: answer() });
      }), /request failed/);
    }
    assert.equal(openFor(wrapped), 25_000, 'in the cause chain');
  });

  test('headers that cannot be read ask nothing; the call still settles and counts', async () => {
    const { breaker } = make(OPTIONS);
    const hostile = {
      status: 503,
      get headers() {
        throw new Error('no headers for you');
      },
    };
    for (let i = 0; i < 2; i++) assert.equal(await breaker.execute(async () => hostile), hostile);
    assert.equal(openFor(breaker), 15_000);
    const { breaker: other } = make(OPTIONS);
    const throwing = { status: 503, headers: { get: () => { throw new Error('boom'); } } };
    other.record(other.acquire(), throwing);
    other.record(other.acquire(), throwing);
    assert.equal(openFor(other), 15_000);
  });

  test('bad options are refused, naming them, and change nothing', () => {
    const { breaker } = make(OPTIONS);
    const permit = breaker.acquire();
    const refusals = [
      ['x', TypeError, 'options'],
      [{ retryAfterMs: '60' }, TypeError, 'retryAfterMs'],
      [{ retryAfterMs: -1 }, RangeError, 'retryAfterMs'],
      [{ retryAfterMs: Infinity }, RangeError, 'retryAfterMs'],
      [{ retryAfterMs: NaN }, RangeError, 'retryAfterMs'],
      [{ retryAfter: 60 }, TypeError, 'retryAfter'],
    ];
    for (const [options, type, option] of refusals) {
      assert.throws(() => breaker.record(permit, 503, options), (error) => {
        assert.ok(error instanceof type, `${JSON.stringify(options)}: ${error}`);
        assert.equal(error.option, option);
        return true;
      });
    }
    assert.equal(breaker.outstandingPermits, 1, 'the permit is still out');
    assert.equal(breaker.record(permit, 503, { retryAfterMs: 0 }), 'fault');
  });
});

describe('retryAfter', () => {
  test('reads header values by the core rules: ms, or null for what asks nothing', () => {
    const now = 784_111_717_000; // Sun, 06 Nov 1994 08:48:37 GMT
    assert.equal(retryAfter.http('120'), 120_000);
    assert.equal(retryAfter.http('Sun, 06 Nov 1994 08:49:37 GMT', now), 60_000);
    assert.equal(retryAfter.http('Sun, 06 Nov 1994 08:49:37 GMT', now + 999), 60_000, 'whole seconds of the clock');
    assert.equal(retryAfter.http('Sun Nov  6 08:49:37 1994', now), null, 'an obsolete form');
    assert.equal(retryAfter.grpcPushback('250'), 250);
    assert.equal(retryAfter.grpcPushback('-1'), null);
    assert.deepEqual([429, 503, 500, 302].map((s) => retryAfter.applies(s)), [true, true, false, false]);
    assert.equal(retryAfter.applies('503'), false, 'a status is a number');
    assert.throws(() => retryAfter.http(120), TypeError);
    assert.throws(() => retryAfter.grpcPushback(null), TypeError);
    assert.throws(() => retryAfter.http('120', 'now'), TypeError);
  });

  test('of: a response-like value with an HTTP status and headers of any usual form', () => {
    const now = 784_111_717_000;
    assert.equal(retryAfter.of(new Response(null, { status: 503, headers: { 'retry-after': '7' } })), 7_000);
    assert.equal(retryAfter.of({ status: 429, headers: new Map([['retry-after', '8']]) }), 8_000);
    assert.equal(retryAfter.of({ statusCode: '503', headers: { 'retry-after': 'Sun, 06 Nov 1994 08:49:37 GMT' } }, now), 60_000);
    assert.equal(retryAfter.of({ status: 503, headers: { 'retry-after': 'soon', 'grpc-retry-pushback-ms': '900' } }), 900,
      'an unreadable Retry-After falls back to the pushback');
    assert.equal(retryAfter.of({ status: 503, headers: { 'retry-after': '2', 'grpc-retry-pushback-ms': '900' } }), 2_000);
    assert.equal(retryAfter.of({ status: 0, headers: { 'grpc-retry-pushback-ms': '900' } }), 0, 'no HTTP answer');
    for (const nothing of [undefined, null, 503, 'x', {}, { status: 503 }, { status: 503, headers: null }]) {
      assert.equal(retryAfter.of(nothing), 0, String(nothing));
    }
    assert.ok(CircuitBreaker.isShadow(0.5) && !CircuitBreaker.isShadow(0));
  });
});
