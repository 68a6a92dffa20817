// Shadow mode (SPEC § Shadow mode) through the package's public API, beyond the shared
// vectors 62-64 (vectors.test.js): the `shadow` option's JS form, how a shadow permit looks
// (a whole number and a half, `CircuitBreaker.isShadow`), `execute` in shadow mode, the
// metrics, and shadow permits out in numbers. Time is a fake clock.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker, Rejected } from '../src/node.js';
import { make } from './helpers.js';

/** Five 503s: the default rule trips. */
function trip(breaker) {
  for (let i = 0; i < 5; i++) breaker.record(breaker.acquire(), 503);
  assert.equal(breaker.state, 'open');
}

describe('the shadow option', () => {
  test('is a boolean, at creation and in reconfigure; anything else is a TypeError naming it', () => {
    for (const bad of [1, 0, 'true', {}, 1n]) {
      assert.throws(() => new CircuitBreaker({ shadow: bad }), (error) => {
        assert.ok(error instanceof TypeError, String(error));
        assert.equal(error.option, 'shadow');
        assert.match(error.message, /shadow must be a boolean/);
        return true;
      });
      const { breaker } = make();
      assert.throws(() => breaker.reconfigure({ shadow: bad }), { name: 'TypeError', option: 'shadow' });
    }
    for (const off of [false, undefined, null]) {
      const { breaker } = make({ shadow: off });
      trip(breaker);
      assert.equal(breaker.acquire(), Rejected.OPEN, `shadow: ${off} enforces`);
    }
  });
});

describe('a breaker in shadow mode', () => {
  test('trips and reports as it would enforcing, but admits with a shadow permit that counts nothing', () => {
    const { breaker, clock, transitions } = make({ shadow: true });
    trip(breaker);
    assert.deepEqual(transitions, ['closed>open:failure-threshold']);
    clock.advance(1_000);
    const before = breaker.metrics();
    const permit = breaker.acquire();
    assert.ok(permit >= 0, `admitted: ${permit}`);
    assert.equal(CircuitBreaker.isShadow(permit), true);
    assert.equal(permit % 1, 0.5, 'a whole number and a half');
    assert.equal(CircuitBreaker.isProbe(permit), false);
    assert.equal(breaker.lastRejection, null, 'no rejection was made');
    assert.equal(breaker.record(permit, 503), 'fault', 'classified as ever');
    assert.deepEqual(breaker.lastRecord, { class: 'fault', slow: false, stale: false });
    const after = breaker.metrics();
    assert.deepEqual(after.shadowRejectedTotal, { open: 1, probing: 0, isolated: 0, saturated: 0, 'probing-elsewhere': 0 });
    assert.deepEqual(after.rejectedTotal, before.rejectedTotal, 'not a rejection');
    for (const key of ['calls', 'faults', 'faultsTotal', 'staleTotal', 'admittedTotal', 'inFlight']) {
      assert.equal(after[key], before[key], key);
    }
    assert.equal(breaker.outstandingPermits, 0);
    breaker.record(permit, 503);
    assert.equal(breaker.lastRecord.stale, true, 'recorded twice: stale, like any permit');
    assert.equal(breaker.state, 'open', 'the shadow outcome moved nothing');
  });

  test('a permit the breaker admits itself is a whole number, a probe as ever', () => {
    const { breaker, clock } = make({ shadow: true, halfOpenMaxProbes: 1 });
    const closed = breaker.acquire();
    assert.ok(Number.isInteger(closed) && !CircuitBreaker.isShadow(closed));
    breaker.record(closed, 'success');
    trip(breaker);
    clock.advance(15_000);
    const probe = breaker.acquire();
    assert.ok(CircuitBreaker.isProbe(probe) && !CircuitBreaker.isShadow(probe), `probe ${probe}`);
    const extra = breaker.acquire();
    assert.ok(CircuitBreaker.isShadow(extra), 'the probe slot is taken: a shadow rejection');
    assert.equal(breaker.metrics().shadowRejectedTotal.probing, 1);
    breaker.record(extra, 'success');
    assert.equal(breaker.metrics().probesOut, 1, 'the shadow success is no probe success');
    breaker.record(probe, 'success');
    assert.equal(breaker.state, 'half-open');
    for (const code of Object.values(Rejected)) assert.equal(CircuitBreaker.isShadow(code), false);
  });

  test('a shadow admission that caused a transition tells the listeners', () => {
    // Hang detection: five calls still out past slowCallDurationMs (and the in-flight
    // tracker's sixteenth of it) trip on the next acquire, which shadow mode then admits.
    const { breaker, clock, transitions } = make({ shadow: true, slowCallDurationMs: 100 });
    const hung = Array.from({ length: 5 }, () => breaker.acquire());
    clock.advance(150);
    const permit = breaker.acquire();
    assert.ok(CircuitBreaker.isShadow(permit), `shadow: ${permit}`);
    assert.deepEqual(transitions, ['closed>open:hung-calls']);
    assert.equal(breaker.metrics().shadowRejectedTotal.open, 1);
    for (const p of [...hung, permit]) breaker.record(p, 'success');
  });

  test('execute runs fn while the breaker is open, and the outcome counts nothing', async () => {
    const { breaker } = make({ shadow: true });
    trip(breaker);
    let calls = 0;
    const result = await breaker.execute(async () => {
      calls++;
      return { status: 503 };
    });
    assert.deepEqual(result, { status: 503 });
    assert.equal(calls, 1);
    assert.equal(breaker.metrics().shadowRejectedTotal.open, 1);
    assert.equal(breaker.metrics().faultsTotal, 5, 'the shadow call was not counted');
    await assert.rejects(breaker.execute(async () => {
      throw new Error('down');
    }), /down/);
    assert.equal(breaker.metrics().shadowRejectedTotal.open, 2);
  });

  test('switched off live, it enforces with the state and counts it had; on again, it admits', () => {
    const { breaker } = make({ shadow: true });
    trip(breaker);
    breaker.record(breaker.acquire(), 'success');
    breaker.reconfigure({ shadow: false });
    assert.equal(breaker.acquire(), Rejected.OPEN);
    assert.equal(breaker.metrics().shadowRejectedTotal.open, 1, 'kept');
    breaker.reconfigure({ shadow: true });
    assert.ok(CircuitBreaker.isShadow(breaker.acquire()));
    assert.deepEqual(
      [breaker.metrics().rejectedTotal.open, breaker.metrics().shadowRejectedTotal.open],
      [1, 2],
    );
  });

  test('many shadow permits out at once: all recorded, none stale, the table emptied', () => {
    const { breaker } = make({ shadow: true });
    trip(breaker);
    const out = Array.from({ length: 500 }, () => breaker.acquire());
    assert.ok(out.every((p) => CircuitBreaker.isShadow(p)));
    assert.equal(new Set(out).size, out.length, 'distinct');
    assert.equal(breaker.outstandingPermits, 500);
    for (const p of out) breaker.record(p, 'timeout');
    assert.equal(breaker.metrics().staleTotal, 0);
    assert.equal(breaker.outstandingPermits, 0);
    assert.equal(breaker.metrics().shadowRejectedTotal.open, 500);
  });
});
