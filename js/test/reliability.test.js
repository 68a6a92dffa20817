// Regression tests for the defects of issue 10 (a hostile pass over the package). Each
// test is named after the defect it covers; each failed before its fix.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { fileURLToPath } from 'node:url';
import { CircuitBreaker, CircuitOpenError, InvalidStateError, Rejected } from '../src/node.js';
import { make } from './helpers.js';


function deferred() {
  let resolve;
  let reject;
  const promise = new Promise((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function trip(breaker, n = 5) {
  for (let i = 0; i < n; i++) breaker.record(breaker.acquire(), 503);
  assert.equal(breaker.state, 'open');
}

/** Runs a fixture in its own Node process (a crash there must not take the runner down). */
function runFixture(name, args = [], nodeArgs = []) {
  const file = fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
  return new Promise((resolve) => {
    execFile(process.execPath, [...nodeArgs, file, ...args], { timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (error.code ?? 1) : 0, stdout, stderr });
    });
  });
}

/** Heap growth (bytes) a heap fixture reports, run with --expose-gc. */
async function heapGrowth(fixture, calls) {
  const { code, stdout, stderr } = await runFixture(fixture, [String(calls)], ['--expose-gc']);
  assert.equal(code, 0, stderr);
  return JSON.parse(stdout).growth;
}

const isDisposed = (error) => error instanceof Error && error.message === 'breaker is disposed' &&
  error.code === 'ERR_TRIPGATE_DISPOSED';

describe('1. execute always settles when recording the outcome fails', () => {
  test('dispose() while a call is in flight: the call settles with its result', async () => {
    const { breaker } = make();
    const answer = deferred();
    const pending = breaker.execute(() => answer.promise);
    breaker.dispose();
    answer.resolve('value');
    assert.equal(await pending, 'value');
  });

  test('Symbol.dispose (a `using` block ending) while a call with a signal is in flight', async () => {
    const { breaker } = make();
    const answer = deferred();
    const controller = new AbortController();
    const pending = breaker.execute(() => answer.promise, { signal: controller.signal });
    breaker[Symbol.dispose]();
    const error = new Error('upstream');
    answer.reject(error);
    await assert.rejects(pending, (e) => e === error);
  });

  test('dispose() while a call with timeoutMs is in flight: no crash, the timer queue keeps firing', async () => {
    const { code, stdout, stderr } = await runFixture('deadline-after-dispose.js');
    assert.equal(code, 0, stderr);
    const [first, second, third] = JSON.parse(stdout);
    assert.equal(first[0], 'rejected');
    assert.ok(first[1] === 'TimeoutError' || first[2] === 'breaker is disposed', String(first));
    assert.deepEqual(second, ['rejected', 'TimeoutError']);
    assert.deepEqual(third, ['rejected', 'TimeoutError']);
  });

  test('a clock that throws after construction: the call settles and its permit is recorded', async () => {
    let broken = false;
    const breaker = new CircuitBreaker({
      clock: () => {
        if (broken) throw new Error('clock broke');
        return 0;
      },
    });
    const answer = deferred();
    const pending = breaker.execute(() => answer.promise);
    broken = true;
    answer.resolve(7);
    assert.equal(await pending, 7);
    broken = false;
    assert.equal(breaker.outstandingPermits, 0);
    assert.equal(breaker.metrics().calls, 1);
  });

  test("a thrown error whose status getter throws: rejects with that error, recorded as a failure", async () => {
    const { breaker } = make();
    const error = new Error('odd');
    Object.defineProperty(error, 'status', {
      get() {
        throw new Error('getter');
      },
    });
    await assert.rejects(breaker.execute(() => Promise.reject(error)), (e) => e === error);
    await assert.rejects(breaker.execute(() => Promise.reject(error), { timeoutMs: 1_000 }), (e) => e === error);
    assert.equal(breaker.metrics().faults, 2);
    assert.equal(breaker.outstandingPermits, 0);
  });

  test('a signal-like object without removeEventListener is refused before the call', async () => {
    const { breaker } = make();
    let called = false;
    const signal = { aborted: false, addEventListener() {} };
    await assert.rejects(breaker.execute(async () => {
      called = true;
    }, { signal }), (e) => e instanceof TypeError && e.option === 'signal');
    assert.equal(called, false);
    assert.equal(breaker.metrics().admittedTotal, 0);
  });

  test('after dispose() every call fails with "breaker is disposed"; execute returns a rejected promise', async () => {
    const { breaker } = make();
    const permit = breaker.acquire();
    breaker.dispose();
    breaker.dispose(); // idempotent
    assert.throws(() => breaker.acquire(), isDisposed);
    assert.throws(() => breaker.record(permit, 200), isDisposed);
    assert.throws(() => breaker.state, isDisposed);
    assert.throws(() => breaker.metrics(), isDisposed);
    assert.throws(() => breaker.isolate(), isDisposed);
    assert.throws(() => breaker.exportState(), isDisposed);
    assert.throws(() => breaker.outstandingPermits, isDisposed);
    let pending;
    assert.doesNotThrow(() => {
      pending = breaker.execute(async () => 1);
    });
    await assert.rejects(pending, isDisposed);
  });
});

describe('2. three transitions in one call are all reported', () => {
  test('isolate() when a probe timeout and a cooldown are both due', () => {
    const { breaker, clock, transitions } = make({ cooldownMs: 1_000, probeTimeoutMs: 1_000 });
    trip(breaker);
    clock.advance(1_000);
    assert.ok(breaker.acquire() >= 0, 'a probe, never recorded');
    const isolated = [];
    breaker.on('isolated', (t) => isolated.push(t.reason));
    clock.advance(2_000); // the probe timed out at 2 000 and the next cooldown passed at 3 000
    transitions.length = 0;
    breaker.isolate();
    assert.deepEqual(transitions, [
      'half-open>open:probe-timeout', 'open>half-open:cooldown-elapsed', 'half-open>isolated:isolated',
    ]);
    assert.deepEqual(isolated, ['isolated']);
    assert.deepEqual(breaker.metrics().lastTransition.reason, 'isolated');
  });
});

describe('3. transitions are not shared between breakers', () => {
  test("a listener on A that resets B does not make A report B's transition", () => {
    const a = make({ cooldownMs: 1_000, probeTimeoutMs: 1_000 });
    const b = make();
    trip(b.breaker);
    b.clock.advance(15_000); // B's reset() will make two transitions too
    trip(a.breaker);
    a.clock.advance(1_000);
    assert.ok(a.breaker.acquire() >= 0);
    a.clock.advance(1_000); // A's probe timed out: isolate() makes two transitions
    a.transitions.length = 0;
    a.breaker.on('open', () => b.breaker.reset());
    a.breaker.isolate();
    assert.deepEqual(a.transitions, ['half-open>open:probe-timeout', 'open>isolated:isolated']);
    assert.deepEqual(b.transitions.slice(-2), ['open>half-open:cooldown-elapsed', 'half-open>closed:reset']);
  });
});

describe('4. no memory kept per distinct timeoutMs', () => {
  test('100 000 calls with computed timeouts: the heap returns to where it was once their timers fired', async () => {
    const growth = await heapGrowth('distinct-timeouts-heap.js', 100_000);
    assert.ok(growth < 4_000_000, `heap grew by ${growth} bytes`);
  });
});

describe('4b. no memory kept for calls that finished behind a hung one (found by the soak)', () => {
  test('100 000 calls behind a call hung on the same 60 s timeout: the heap stays flat', async () => {
    const growth = await heapGrowth('hung-head-heap.js', 100_000);
    assert.ok(growth < 4_000_000, `heap grew by ${growth} bytes`);
  });
});

describe('5. timeoutMs beyond setTimeout\'s 2^31-1 ms limit', () => {
  test('a 2^32 ms timeout arms no 1 ms timer: no TimeoutOverflowWarning, the call settles', async () => {
    const { breaker } = make();
    const warnings = [];
    const onWarning = (w) => warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      const answer = deferred();
      const pending = breaker.execute(() => answer.promise, { timeoutMs: 2 ** 32 });
      await new Promise((resolve) => setTimeout(resolve, 25));
      answer.resolve('late but in time');
      assert.equal(await pending, 'late but in time');
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    assert.deepEqual(warnings.filter((n) => n === 'TimeoutOverflowWarning'), []);
  });
});

describe('6. fallback: undefined means no fallback', () => {
  test('a failure and a rejection still reject', async () => {
    const { breaker } = make();
    const error = new Error('down');
    await assert.rejects(breaker.execute(() => Promise.reject(error), { fallback: undefined }), (e) => e === error);
    breaker.isolate();
    await assert.rejects(breaker.execute(async () => 1, { fallback: undefined }), CircuitOpenError);
    assert.equal(await breaker.execute(async () => 1, { fallback: null }), null, 'null is a fallback value');
  });
});

describe('7. permit numbers do not recur soon', () => {
  test('a permit number does not come back within 300 000 acquisitions; a late duplicate stays stale', () => {
    const { breaker } = make({ failureThreshold: 2, minCalls: 2 });
    const first = breaker.acquire();
    breaker.record(first, 200);
    for (let i = 0; i < 300_000; i++) {
      const permit = breaker.acquire();
      assert.notEqual(permit, first, `permit ${first} came back after ${i + 1} acquisitions`);
      if (i === 127 || i === 299_999) {
        // The late duplicate of the first call's outcome must not count against this one.
        breaker.record(first, 503);
        assert.equal(breaker.lastRecord.stale, true);
        assert.equal(breaker.record(permit, 200), 'success');
        assert.equal(breaker.lastRecord.stale, false);
      } else {
        breaker.record(permit, 200);
      }
    }
    assert.equal(breaker.state, 'closed');
  });
});

describe('8. leaked probe permits are reclaimed', () => {
  test('2^20 half-open rounds whose probe never reports back: probes are still admitted', () => {
    const { breaker, clock } = make({ cooldownMs: 1, probeTimeoutMs: 1 });
    trip(breaker);
    for (let round = 0; round < 2 ** 20 + 16; round++) {
      clock.advance(2); // the last probe timed out, and the cooldown after it passed
      const probe = breaker.acquire();
      if (probe < 0) assert.fail(`round ${round}: ${breaker.lastRejection.reason}`);
    }
    assert.ok(breaker.outstandingPermits <= 1024, `${breaker.outstandingPermits} permits held`);
    breaker.reset();
    assert.ok(breaker.acquire() >= 0);
  });
});

describe('9. clock readings that are not milliseconds are not observed', () => {
  test('Infinity, NaN, negatives, strings, BigInt, Symbol and a throwing clock neither throw nor move time', () => {
    let reading = 0;
    const breaker = new CircuitBreaker({ cooldownMs: 1_000, clock: () => (typeof reading === 'function' ? reading() : reading) });
    const errors = [];
    breaker.on('clock-error', (e) => errors.push(e));
    reading = 100;
    trip(breaker);
    const bad = [Infinity, -Infinity, NaN, -1, 1.9e13, 2 ** 63 / 1e6, '5000', 5000n, Symbol('t'), null, undefined, {},
      () => {
        throw new Error('clock broke');
      }];
    for (const value of bad) {
      reading = value;
      let r;
      assert.doesNotThrow(() => {
        r = breaker.acquire();
      }, String(typeof value));
      assert.equal(r, Rejected.OPEN, String(typeof value));
      assert.equal(breaker.lastRejection.retryAfterMs, 1_000, `${typeof value}: time did not move`);
    }
    assert.equal(errors.length, bad.length);
    reading = 100;
    assert.equal(breaker.metrics().clockErrorsTotal, bad.length);
    assert.ok(errors.at(-1).error instanceof Error && errors.at(-1).error.message === 'clock broke');
    assert.match(errors[0].error.message, /clock/);
    reading = 1_100;
    assert.equal(breaker.state, 'half-open', 'the next real reading carries on');
  });

  test('the clock is checked at construction', () => {
    const named = (Type) => (e) => e instanceof Type && e.option === 'clock';
    assert.throws(() => new CircuitBreaker({ clock: () => 'now' }), named(TypeError));
    assert.throws(() => new CircuitBreaker({ clock: () => 5n }), named(TypeError));
    assert.throws(() => new CircuitBreaker({ clock: () => Infinity }), named(RangeError));
    assert.throws(() => new CircuitBreaker({ clock: () => -1 }), named(RangeError));
    assert.throws(() => new CircuitBreaker({ clock: () => 1e13 }), named(RangeError));
    assert.throws(() => new CircuitBreaker({
      clock: () => {
        throw new Error('no clock');
      },
    }), (e) => named(TypeError)(e) && e.cause?.message === 'no clock');
    assert.equal(new CircuitBreaker({ clock: () => 9_223_372_036_854 }).state, 'closed');
  });
});

describe('10. the signal of a call without timeout or signal', () => {
  test('listeners added by one call do not pile up on the next calls', async () => {
    const { breaker } = make();
    let last;
    for (let i = 0; i < 20; i++) {
      await breaker.execute(async (signal) => {
        signal.addEventListener('abort', () => {});
        last = signal;
      });
    }
    assert.ok(last instanceof AbortSignal && !last.aborted);
    assert.ok(getEventListeners(last, 'abort').length <= 1, `${getEventListeners(last, 'abort').length} listeners`);
  });

  test('3 000 concurrent calls that each listen to their signal raise no MaxListenersExceededWarning', async () => {
    const { breaker } = make({ maxInFlight: 10_000 });
    const warnings = [];
    const onWarning = (w) => warnings.push(w.name);
    process.on('warning', onWarning);
    try {
      const gate = deferred();
      const calls = Array.from({ length: 3_000 }, () => breaker.execute((signal) => {
        signal.addEventListener('abort', () => {});
        return gate.promise;
      }));
      gate.resolve();
      await Promise.all(calls);
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    assert.deepEqual(warnings, []);
  });
});

describe('11. imported epochs', () => {
  /** The state bytes with their epoch replaced and the checksum recomputed. */
  function withEpoch(bytes, epoch) {
    const out = Uint8Array.from(bytes);
    const view = new DataView(out.buffer);
    view.setBigUint64(16, epoch, true); // "TGB" 1, window shape (11 bytes), state (1 byte)
    let hash = 0x811c9dc5;
    for (let i = 0; i < out.length - 4; i++) hash = Math.imul(hash ^ out[i], 0x01000193) >>> 0;
    view.setUint32(out.length - 4, hash, true);
    return out;
  }

  test('an epoch of 2^56 or more is refused; at 2^56 - 1, forged permits are stale and real ones count', () => {
    const { breaker } = make();
    const bytes = breaker.exportState();
    assert.throws(() => breaker.importState(withEpoch(bytes, 2n ** 57n - 1n)), InvalidStateError);
    assert.throws(() => breaker.importState(withEpoch(bytes, 2n ** 56n)), InvalidStateError);
    breaker.importState(withEpoch(bytes, 2n ** 56n - 1n));
    for (const forged of [0, 2, 1234, 2 ** 27]) {
      breaker.record(forged, 503);
      assert.equal(breaker.lastRecord.stale, true, `forged permit ${forged}`);
    }
    assert.equal(breaker.state, 'closed');
    trip(breaker);
  });
});

describe('12. clear errors and one contract', () => {
  test('jitterSeed takes any integer in [0, 2^64)', () => {
    assert.equal(new CircuitBreaker({ jitterSeed: 2 ** 60, jitterPercent: 10 }).state, 'closed');
    assert.equal(new CircuitBreaker({ jitterSeed: 2 ** 64 - 2 ** 11 }).state, 'closed');
    for (const bad of [2 ** 64, -1, 1.5]) {
      assert.throws(() => new CircuitBreaker({ jitterSeed: bad }), (e) => e instanceof RangeError && e.option === 'jitterSeed');
    }
  });

  test('counts of 2^32 or more are refused, not clamped', () => {
    for (const option of ['failureThreshold', 'minCalls', 'halfOpenRequiredSuccesses', 'maxInFlight']) {
      for (const value of [2 ** 32, 2 ** 53, 1e300]) {
        assert.throws(() => new CircuitBreaker({ [option]: value }), (e) => {
          assert.ok(e instanceof RangeError, String(e));
          assert.equal(e.option, option);
          assert.match(e.message, new RegExp(`^${option} must be <= 4294967295`));
          return true;
        });
      }
      assert.equal(new CircuitBreaker({ [option]: 2 ** 32 - 1 }).state, 'closed');
    }
  });

  test('inherited properties are not options', async () => {
    Object.prototype.failureThreshold = 1e9;
    Object.prototype.fallback = 'polluted';
    try {
      const { breaker } = make();
      trip(breaker);
      await assert.rejects(breaker.execute(async () => 1, {}), CircuitOpenError);
    } finally {
      delete Object.prototype.failureThreshold;
      delete Object.prototype.fallback;
    }
  });

  test('record explains outcomes it cannot read', () => {
    const { breaker } = make();
    const permit = breaker.acquire();
    assert.throws(() => breaker.record(permit, Object.create(null)), (e) => e instanceof TypeError &&
      /outcome must be/.test(e.message) && !/primitive/.test(e.message));
    assert.throws(() => breaker.record(permit, 503n), (e) => e instanceof TypeError && /503n/.test(e.message));
    assert.throws(() => breaker.record(permit, 503.5), (e) => e instanceof RangeError && /503\.5 is not an integer/.test(e.message));
    assert.throws(() => breaker.record(permit, Symbol('x')), TypeError);
    assert.equal(breaker.outstandingPermits, 1, 'nothing changed');
  });

  test('execute and record classify Response.error() (status 0) and { status: "503" } alike', async () => {
    for (const [value, cls] of [[Response.error(), 'fault'], [{ status: '503' }, 'fault'], [{ status: '404' }, 'success']]) {
      const { breaker } = make();
      assert.equal(breaker.record(breaker.acquire(), value), cls, `record ${JSON.stringify(value)}`);
      await breaker.execute(async () => value);
      assert.equal(breaker.lastRecord.class, cls, `execute ${JSON.stringify(value)}`);
    }
  });
});
