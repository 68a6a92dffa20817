// Every rule of SPEC.md, and the four failure modes, through the package's public API.
// Time is a fake clock: no test sleeps for breaker time.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker, CircuitOpenError, InvalidStateError, Rejected } from '../src/node.js';
import { FakeClock } from './helpers.js';

const HOUR = 3_600_000;

/** A breaker on a fake clock, recording every transition as `from>to:reason`. */
function make(options = {}) {
  const clock = new FakeClock();
  const breaker = new CircuitBreaker({ ...options, clock: clock.read });
  const transitions = [];
  breaker.on('transition', (t) => transitions.push(`${t.from}>${t.to}:${t.reason}`));
  return { breaker, clock, transitions };
}

/** One call: acquire and record `outcome`; returns the class. */
function call(breaker, outcome) {
  const permit = breaker.acquire();
  assert.ok(permit >= 0, `expected admission, got ${permit}`);
  return breaker.record(permit, outcome);
}

function trip(breaker, n = 5) {
  for (let i = 0; i < n; i++) call(breaker, 503);
  assert.equal(breaker.state, 'open');
}

describe('time', () => {
  test('the breaker reads only the injected clock (cooldown passes when the fake clock says so)', () => {
    const { breaker, clock } = make();
    trip(breaker);
    clock.advance(14_999);
    assert.equal(breaker.state, 'open');
    clock.advance(1);
    assert.equal(breaker.state, 'half-open');
  });

  test('a clock that steps back is treated as the largest reading so far', () => {
    const { breaker, clock } = make();
    clock.now = 10_000;
    trip(breaker);
    clock.now = 2_000; // steps back 8 s
    assert.equal(breaker.acquire(), Rejected.OPEN);
    assert.equal(breaker.lastRejection.retryAfterMs, 15_000, 'no negative or huge elapsed time');
    clock.now = 25_000;
    assert.equal(breaker.state, 'half-open');
  });

  test('closed admission reads no clock (nothing at admission depends on time); every other read does', () => {
    let reads = 0;
    let now = 0;
    const counting = () => {
      reads++;
      return now;
    };
    const breaker = new CircuitBreaker({ clock: counting });
    reads = 0;
    const permit = breaker.acquire();
    assert.equal(reads, 0, 'closed acquire');
    breaker.record(permit, 503);
    assert.equal(reads, 1, 'record reads the clock');
    for (let i = 0; i < 4; i++) breaker.record(breaker.acquire(), 503);
    reads = 0;
    assert.equal(breaker.acquire(), Rejected.OPEN);
    assert.equal(reads, 1, 'open acquire reads the clock (the cooldown depends on it)');
    now = 15_000;
    breaker.record(breaker.acquire(), 200);
    breaker.record(breaker.acquire(), 200);
    assert.equal(breaker.state, 'closed');
    reads = 0;
    breaker.acquire();
    assert.equal(reads, 0, 'closed again');
    const hang = new CircuitBreaker({ clock: counting, slowCallDurationMs: 100 });
    reads = 0;
    hang.acquire();
    assert.equal(reads, 1, 'hang detection needs the clock at admission');
  });

  test('durations are milliseconds, fractions included', () => {
    const { breaker, clock } = make({ cooldownMs: 0.5 });
    trip(breaker);
    clock.advance(0.25);
    assert.equal(breaker.acquire(), Rejected.OPEN);
    assert.equal(breaker.retryAfterMs, 0.25);
    clock.advance(0.25);
    assert.equal(breaker.state, 'half-open');
  });
});

describe('states and epochs', () => {
  test('closed → open → half-open → closed, each transition reported with its reason', () => {
    const { breaker, clock, transitions } = make();
    trip(breaker);
    clock.advance(15_000);
    call(breaker, 'success');
    call(breaker, 'success');
    assert.equal(breaker.state, 'closed');
    assert.deepEqual(transitions, [
      'closed>open:failure-threshold',
      'open>half-open:cooldown-elapsed',
      'half-open>closed:probes-succeeded',
    ]);
  });

  test('the state read is the effective state: open past its cooldown reads half-open', () => {
    const { breaker, clock, transitions } = make();
    trip(breaker);
    clock.advance(20_000);
    assert.equal(breaker.state, 'half-open');
    assert.equal(breaker.metrics().state, 'half-open');
    assert.equal(transitions.length, 1, 'reading changes nothing');
  });

  test('an outcome with a permit from an earlier epoch is stale: an old success cannot close half-open', () => {
    const { breaker, clock } = make({ halfOpenRequiredSuccesses: 1 });
    const old = breaker.acquire(); // issued while closed
    trip(breaker);
    clock.advance(15_000);
    const probe = breaker.acquire();
    assert.ok(CircuitBreaker.isProbe(probe));
    assert.equal(breaker.record(old, 'success'), 'success');
    assert.deepEqual(breaker.lastRecord, { class: 'success', slow: false, stale: true });
    assert.equal(breaker.state, 'half-open');
    assert.equal(breaker.metrics().staleTotal, 1);
    breaker.record(probe, 'success');
    assert.equal(breaker.state, 'closed');
  });

  test('a permit recorded twice counts once; the second is stale', () => {
    const { breaker } = make();
    const permit = breaker.acquire();
    breaker.record(permit, 503);
    breaker.record(permit, 503);
    assert.equal(breaker.lastRecord.stale, true);
    const m = breaker.metrics();
    assert.equal(m.faults, 1);
    assert.equal(m.staleTotal, 1);
  });
});

describe('permits (plain numbers into a table of outstanding permits)', () => {
  test('permits are small integers; leaked permits of an ended epoch are reclaimed', () => {
    const { breaker } = make();
    const permits = Array.from({ length: 10_000 }, () => breaker.acquire());
    assert.ok(permits.every((p) => Number.isInteger(p) && p >= 0 && p < 2 ** 30));
    assert.equal(new Set(permits).size, permits.length);
    assert.equal(breaker.outstandingPermits, 10_000);
    // Leak 10 000 more in each of five epochs: the table sweeps the stale ones when it
    // would grow, so it holds at most about twice the permits of one epoch, not 60 000.
    for (let epoch = 0; epoch < 5; epoch++) {
      breaker.reset(); // every permit out is stale now
      for (let i = 0; i < 10_000; i++) breaker.acquire();
    }
    assert.ok(breaker.outstandingPermits <= 2 * 16_384, `${breaker.outstandingPermits} permits held`);
    assert.equal(breaker.metrics().inFlight, 10_000, 'the core counts only the current epoch');
    assert.equal(breaker.record(permits[0], 503), 'fault');
    assert.equal(breaker.lastRecord.stale, true);
  });

  test("a permit handed to the wrong breaker is stale there and leaves that breaker's own call alone", () => {
    const a = make().breaker;
    const b = make().breaker;
    const pa = a.acquire();
    const pb = b.acquire();
    assert.equal(b.record(pa, 503), 'fault');
    assert.equal(b.lastRecord.stale, true);
    assert.equal(b.metrics().inFlight, 1, "b's own call is still out");
    assert.equal(b.record(pb, 200), 'success');
    assert.equal(b.lastRecord.stale, false);
    assert.equal(a.record(pa, 200), 'success');
    assert.equal(a.lastRecord.stale, false);
  });

  test('at most 2^20 permits out per breaker; beyond, calls are rejected as saturated', () => {
    const { breaker } = make();
    for (let i = 0; i < 2 ** 20; i++) breaker.acquire();
    assert.equal(breaker.acquire(), Rejected.SATURATED);
    assert.equal(breaker.metrics().inFlight, 2 ** 20, 'the refused call was handed straight back');
    assert.equal(breaker.state, 'closed');
  });
});

describe('admission', () => {
  test('closed with max-in-flight: the cap rejects as saturated and stays closed', () => {
    const { breaker } = make({ maxInFlight: 2 });
    const a = breaker.acquire();
    const b = breaker.acquire();
    assert.equal(breaker.acquire(), Rejected.SATURATED);
    assert.deepEqual(breaker.lastRejection, { reason: 'saturated', retryAfterMs: 0, state: 'closed' });
    assert.equal(breaker.state, 'closed');
    breaker.record(a, 'success');
    assert.ok(breaker.acquire() >= 0);
    breaker.record(b, 'success');
  });

  test('open rejects with retry-after = the remaining cooldown', () => {
    const { breaker, clock } = make();
    trip(breaker);
    clock.advance(4_000);
    assert.equal(breaker.acquire(), Rejected.OPEN);
    assert.deepEqual(breaker.lastRejection, { reason: 'open', retryAfterMs: 11_000, state: 'open' });
  });

  test('half-open admits K probes; the rest are rejected at once as probing, with a short retry-after', () => {
    const { breaker, clock } = make({ halfOpenMaxProbes: 3, probeTimeoutMs: 10_000 });
    trip(breaker);
    clock.advance(15_000);
    const probes = [breaker.acquire(), breaker.acquire(), breaker.acquire()];
    assert.ok(probes.every((p) => p >= 0 && CircuitBreaker.isProbe(p)));
    clock.advance(100);
    assert.equal(breaker.acquire(), Rejected.PROBING);
    assert.equal(breaker.lastRejection.reason, 'probing');
    assert.ok(breaker.lastRejection.retryAfterMs <= 1_000, 'capped at one second');
    assert.equal(breaker.metrics().probesOut, 3);
  });

  test('isolated rejects as isolated; disabled admits everything and never trips, still measuring', () => {
    const { breaker, transitions } = make();
    breaker.isolate();
    assert.equal(breaker.acquire(), Rejected.ISOLATED);
    assert.equal(breaker.lastRejection.reason, 'isolated');
    breaker.disable();
    for (let i = 0; i < 50; i++) call(breaker, 503);
    assert.equal(breaker.state, 'disabled');
    assert.equal(breaker.metrics().faults, 50);
    breaker.release();
    assert.equal(breaker.state, 'closed');
    assert.equal(breaker.metrics().calls, 0, 'release empties the window');
    assert.deepEqual(transitions, [
      'closed>isolated:isolated', 'isolated>disabled:disabled', 'disabled>closed:released',
    ]);
  });

  test('a rejection is a value: acquire() returns a negative code and never throws', () => {
    const { breaker } = make();
    breaker.isolate();
    const r = breaker.acquire();
    assert.equal(typeof r, 'number');
    assert.ok(r < 0);
    assert.throws(() => breaker.acquireOrThrow(), CircuitOpenError);
  });
});

describe('outcomes', () => {
  const cases = [
    ['success', 'success'], [200, 'success'], [100, 'success'], [404, 'success'], [499, 'success'],
    [429, 'fault'], [500, 'fault'], [503, 'fault'], [599, 'fault'],
    [{ grpc: 0 }, 'success'], [{ grpc: 5 }, 'success'], [{ grpc: 4 }, 'fault'], [{ grpc: 8 }, 'fault'],
    [{ grpc: 13 }, 'fault'], [{ grpc: 14 }, 'fault'], [{ grpc: 16 }, 'success'],
    ['timeout', 'fault'], ['connection-error', 'fault'], ['failure', 'fault'],
    ['cancelled', 'neutral'], ['ignored', 'neutral'],
    [{ status: 502 }, 'fault'], ['status:404', 'success'], ['grpc:14', 'fault'],
  ];
  for (const [outcome, cls] of cases) {
    test(`${JSON.stringify(outcome)} is ${cls}`, () => {
      const { breaker } = make();
      assert.equal(call(breaker, outcome), cls);
    });
  }

  test('neutral outcomes release the permit and count as nothing', () => {
    const { breaker } = make({ maxInFlight: 1 });
    for (let i = 0; i < 10; i++) call(breaker, 'cancelled');
    const m = breaker.metrics();
    assert.equal(m.calls, 0);
    assert.equal(m.inFlight, 0);
  });

  test('the fault statuses are configurable (408 added)', () => {
    const { breaker } = make({ faultStatuses: [408, 429, ...Array.from({ length: 100 }, (_, i) => 500 + i)] });
    assert.equal(call(breaker, 408), 'fault');
    assert.equal(call(breaker, 503), 'fault');
    const grpc = make({ faultGrpcCodes: [2] }).breaker;
    assert.equal(call(grpc, { grpc: 2 }), 'fault');
    assert.equal(call(grpc, { grpc: 14 }), 'success');
  });

  test('a status outside 100-599 or a gRPC code above 16 is an error and changes nothing', () => {
    const { breaker } = make();
    const permit = breaker.acquire();
    assert.throws(() => breaker.record(permit, 600), RangeError);
    assert.throws(() => breaker.record(permit, 99), RangeError);
    assert.throws(() => breaker.record(permit, { grpc: 17 }), RangeError);
    assert.throws(() => breaker.record(permit, 'bogus'), TypeError);
    assert.equal(breaker.metrics().inFlight, 1, 'the permit is still out');
    assert.equal(breaker.record(permit, 503), 'fault');
    assert.equal(breaker.lastRecord.stale, false);
  });

  test('a value that is not a permit is refused', () => {
    const { breaker } = make();
    assert.throws(() => breaker.record(Rejected.OPEN, 'success'), /rejection code/);
    assert.throws(() => breaker.record('1', 'success'), TypeError);
    assert.throws(() => breaker.record(0.5, 'success'), TypeError);
  });

  test('a success slower than slow-call-duration is slow', () => {
    const { breaker, clock } = make({ slowCallDurationMs: 100 });
    const fast = breaker.acquire();
    clock.advance(100);
    breaker.record(fast, 'success');
    assert.equal(breaker.lastRecord.slow, false);
    const slow = breaker.acquire();
    clock.advance(101);
    breaker.record(slow, 'success');
    assert.equal(breaker.lastRecord.slow, true);
    assert.equal(breaker.metrics().slow, 1);
  });
});

describe('the window', () => {
  test('faults >= threshold trip only with calls >= min-calls', () => {
    const { breaker } = make({ failureThreshold: 3, minCalls: 10 });
    for (let i = 0; i < 9; i++) call(breaker, 503);
    assert.equal(breaker.state, 'closed');
    call(breaker, 200);
    assert.equal(breaker.state, 'open');
  });

  test('failures age out of the sliding time window', () => {
    const { breaker, clock } = make({ windowMs: 10_000, buckets: 10 });
    for (let i = 0; i < 4; i++) call(breaker, 503);
    clock.advance(10_000);
    assert.equal(breaker.metrics().faults, 0);
    call(breaker, 503);
    assert.equal(breaker.state, 'closed');
  });

  test('a count-based window keeps the last N outcomes', () => {
    const { breaker } = make({ windowCalls: 10, failureThreshold: 3, minCalls: 3 });
    call(breaker, 503);
    call(breaker, 503);
    for (let i = 0; i < 10; i++) call(breaker, 200);
    assert.equal(breaker.metrics().faults, 0);
    call(breaker, 503);
    assert.equal(breaker.state, 'closed');
  });

  test('failure-rate trips at the percentage', () => {
    const { breaker, transitions } = make({ failureThreshold: 1000, failureRate: 50, minCalls: 4 });
    call(breaker, 200);
    call(breaker, 200);
    call(breaker, 503);
    assert.equal(breaker.state, 'closed');
    call(breaker, 503);
    assert.deepEqual(transitions, ['closed>open:failure-rate']);
  });

  test('slow-call-rate trips at the percentage', () => {
    const { breaker, clock, transitions } = make({ slowCallRate: 50, slowCallDurationMs: 10, minCalls: 2, failureThreshold: 100 });
    call(breaker, 200);
    const p = breaker.acquire();
    clock.advance(20);
    breaker.record(p, 200);
    assert.deepEqual(transitions, ['closed>open:slow-call-rate']);
  });

  test('hang detection trips on calls still in flight, before any of them times out', () => {
    const { breaker, clock, transitions } = make({ slowCallDurationMs: 1_000, failureThreshold: 5 });
    for (let i = 0; i < 5; i++) assert.ok(breaker.acquire() >= 0); // five calls hang
    // Starts are tracked in 1/16-duration buckets: the hang is seen by 1.0625 × the duration.
    clock.advance(1_063);
    assert.equal(breaker.acquire(), Rejected.OPEN, 'the next caller is turned away');
    assert.deepEqual(transitions, ['closed>open:hung-calls']);
  });
});

describe('open, cooldown, half-open', () => {
  test('backoff multiplies the cooldown on each re-open from half-open, up to max-cooldown; closing resets it', () => {
    const { breaker, clock } = make({ cooldownMs: 1_000, backoffFactor: 2, maxCooldownMs: 3_000, halfOpenRequiredSuccesses: 1 });
    trip(breaker);
    const retries = [];
    for (let i = 0; i < 3; i++) {
      clock.advance(breaker.metrics().cooldownRemainingMs);
      call(breaker, 503); // the probe fails: re-open
      assert.equal(breaker.acquire(), Rejected.OPEN);
      retries.push(breaker.retryAfterMs);
    }
    assert.deepEqual(retries, [2_000, 3_000, 3_000]);
    clock.advance(3_000);
    call(breaker, 200);
    assert.equal(breaker.state, 'closed');
    trip(breaker);
    assert.equal(breaker.metrics().cooldownRemainingMs, 1_000);
  });

  test('jitter is deterministic from the seed and only lengthens the cooldown', () => {
    const retry = (seed) => {
      const { breaker } = make({ jitterPercent: 50, jitterSeed: seed });
      trip(breaker);
      return breaker.metrics().cooldownRemainingMs;
    };
    assert.equal(retry(7), retry(7));
    assert.notEqual(retry(7), retry(8));
    for (const seed of [1, 2, 3]) {
      const r = retry(seed);
      assert.ok(r >= 15_000 && r <= 22_500, `${r}`);
    }
  });

  test("a probe's fault re-opens at once and restarts the cooldown", () => {
    const { breaker, clock, transitions } = make();
    trip(breaker);
    clock.advance(15_000);
    call(breaker, 503);
    assert.equal(breaker.state, 'open');
    assert.equal(breaker.metrics().cooldownRemainingMs, 15_000);
    assert.equal(transitions.at(-1), 'half-open>open:probe-fault');
  });

  test('M consecutive probe successes close the breaker and clear the window', () => {
    const { breaker, clock } = make({ halfOpenRequiredSuccesses: 3, halfOpenMaxProbes: 1 });
    trip(breaker);
    clock.advance(15_000);
    call(breaker, 200);
    call(breaker, 200);
    assert.equal(breaker.state, 'half-open');
    call(breaker, 200);
    assert.equal(breaker.state, 'closed');
    assert.equal(breaker.metrics().faults, 0);
  });

  test('graduation by success rate over N probes', () => {
    const { breaker, clock } = make({ halfOpenRequiredSuccesses: 4, halfOpenSuccessRate: 75, halfOpenMaxProbes: 4 });
    trip(breaker);
    clock.advance(15_000);
    call(breaker, 503); // one fault does not re-open under a rate rule
    assert.equal(breaker.state, 'half-open');
    call(breaker, 200);
    call(breaker, 200);
    call(breaker, 200);
    assert.equal(breaker.state, 'closed');
  });

  test('a leaked probe counts as a timeout fault after probe-timeout: it never wedges the breaker', () => {
    const { breaker, clock, transitions } = make({ probeTimeoutMs: 2_000 });
    trip(breaker);
    clock.advance(15_000);
    const leaked = breaker.acquire();
    assert.ok(leaked >= 0);
    clock.advance(2_000);
    assert.equal(breaker.acquire(), Rejected.OPEN);
    assert.deepEqual(transitions.slice(-2), ['open>half-open:cooldown-elapsed', 'half-open>open:probe-timeout']);
    clock.advance(15_000);
    assert.ok(breaker.acquire() >= 0, 'a new probe is admitted');
  });
});

describe('config', () => {
  const invalid = [
    [{ failureThreshold: 0 }, 'failureThreshold', 'failureThreshold must be >= 1'],
    [{ minCalls: 0 }, 'minCalls', 'minCalls must be >= 1'],
    [{ windowMs: 0 }, 'windowMs', 'windowMs must be > 0'],
    [{ buckets: 0 }, 'buckets', 'buckets must be between 1 and 64'],
    [{ buckets: 65 }, 'buckets', 'buckets must be between 1 and 64'],
    [{ cooldownMs: 0 }, 'cooldownMs', 'cooldownMs must be > 0'],
    [{ cooldownMs: 10, maxCooldownMs: 5 }, 'maxCooldownMs', 'maxCooldownMs must be >= cooldownMs'],
    [{ halfOpenMaxProbes: 0 }, 'halfOpenMaxProbes', 'halfOpenMaxProbes must be between 1 and 64'],
    [{ halfOpenMaxProbes: 65 }, 'halfOpenMaxProbes', 'halfOpenMaxProbes must be between 1 and 64'],
    [{ halfOpenRequiredSuccesses: 0 }, 'halfOpenRequiredSuccesses', 'halfOpenRequiredSuccesses must be >= 1'],
    [{ failureRate: 0 }, 'failureRate', 'failureRate must be between 1 and 100'],
    [{ failureRate: 101 }, 'failureRate', 'failureRate must be between 1 and 100'],
    [{ slowCallRate: 300 }, 'slowCallRate', 'slowCallRate must be between 1 and 100'],
    [{ halfOpenSuccessRate: 0 }, 'halfOpenSuccessRate', 'halfOpenSuccessRate must be between 1 and 100'],
    [{ probeTimeoutMs: 0 }, 'probeTimeoutMs', 'probeTimeoutMs must be > 0'],
    [{ backoffFactor: 0.5 }, 'backoffFactor', 'backoffFactor must be a finite number between 1 and 1000'],
    [{ failureThreshold: -1 }, 'failureThreshold', 'failureThreshold must be >= 0'],
    [{ failureThreshold: 2.5 }, 'failureThreshold', 'failureThreshold must be an integer'],
    [{ cooldownMs: Infinity }, 'cooldownMs', 'cooldownMs must be a finite number'],
    [{ faultStatuses: [600] }, 'faultStatuses', 'faultStatuses entries must be integers between 100 and 599'],
    [{ timeoutMs: 0 }, 'timeoutMs', 'timeoutMs must be a finite number > 0'],
  ];
  for (const [options, option, message] of invalid) {
    test(`${JSON.stringify(options)} → RangeError naming ${option}`, () => {
      assert.throws(() => new CircuitBreaker(options), (error) => {
        assert.ok(error instanceof RangeError, String(error));
        assert.equal(error.option, option);
        assert.equal(error.code, 'ERR_OUT_OF_RANGE');
        assert.ok(error.message.startsWith(message), error.message);
        return true;
      });
    });
  }

  const wrongTypes = [
    [{ failureThreshold: '5' }, 'failureThreshold'],
    [{ cooldownMs: null, windowMs: '30s' }, 'windowMs'],
    [{ clock: 5 }, 'clock'],
    [{ faultStatuses: 500 }, 'faultStatuses'],
    [{ cooldown: 5_000 }, 'cooldown'],
  ];
  for (const [options, option] of wrongTypes) {
    test(`${JSON.stringify(options)} → TypeError naming ${option}`, () => {
      assert.throws(() => new CircuitBreaker(options), (error) => {
        assert.ok(error instanceof TypeError, String(error));
        assert.equal(error.option, option);
        return true;
      });
    });
  }

  test('an unknown option hints at the Ms spelling', () => {
    assert.throws(() => new CircuitBreaker({ cooldown: 1 }), /did you mean cooldownMs\?/);
  });

  test('defaults: threshold 5, window 30 s, min-calls 5, cooldown 15 s, K 1, M 2, probe-timeout 15 s', () => {
    const { breaker, clock } = make();
    for (let i = 0; i < 4; i++) call(breaker, 503);
    assert.equal(breaker.state, 'closed');
    clock.advance(29_999);
    call(breaker, 503);
    assert.equal(breaker.state, 'open');
    assert.equal(breaker.metrics().cooldownRemainingMs, 15_000);
    clock.advance(15_000);
    const probe = breaker.acquire();
    assert.equal(breaker.acquire(), Rejected.PROBING, 'K = 1');
    breaker.record(probe, 200);
    call(breaker, 200);
    assert.equal(breaker.state, 'closed', 'M = 2');
  });
});

describe('observability', () => {
  test('metrics: state, epoch, window counts, in-flight, probes, totals by reason, time in state, last transition', () => {
    const { breaker, clock } = make();
    const held = breaker.acquire();
    trip(breaker);
    breaker.acquire();
    clock.advance(1_000);
    breaker.acquire();
    const m = breaker.metrics();
    assert.equal(m.state, 'open');
    assert.equal(m.epoch, 1);
    assert.equal(m.calls, 5);
    assert.equal(m.faults, 5);
    assert.equal(m.admittedTotal, 6);
    assert.deepEqual(m.rejectedTotal, { open: 2, probing: 0, isolated: 0, saturated: 0 });
    assert.equal(m.faultsTotal, 5);
    assert.equal(m.transitionsTotal, 1);
    assert.equal(m.timeInStateMs, 1_000);
    assert.equal(m.cooldownRemainingMs, 14_000);
    assert.deepEqual(m.lastTransition, { from: 'closed', to: 'open', reason: 'failure-threshold', atMs: 0, epoch: 1 });
    breaker.record(held, 200);
    assert.equal(breaker.lastRecord.stale, true);
  });

  test("events: 'transition' for every change and one per state entered; once and off", () => {
    const { breaker, clock } = make();
    const seen = [];
    const onOpen = (t) => seen.push(`open:${t.reason}`);
    breaker.on('open', onOpen);
    breaker.once('half-open', (t) => seen.push(`half-open@${t.atMs}`));
    breaker.on('closed', (t) => seen.push(`closed:${t.reason}`));
    trip(breaker);
    clock.advance(20_000);
    call(breaker, 503); // the cooldown passed at 15 000; the probe fails
    breaker.off('open', onOpen);
    clock.advance(15_000);
    call(breaker, 503);
    breaker.reset();
    assert.deepEqual(seen, ['open:failure-threshold', 'half-open@15000', 'open:probe-fault', 'closed:reset']);
  });

  test('a throwing listener breaks neither the call nor other listeners; its error is rethrown asynchronously', () => {
    const { breaker } = make();
    const seen = [];
    breaker.on('open', () => {
      throw new Error('listener bug');
    });
    breaker.on('open', () => seen.push('second'));
    const deferred = [];
    const original = globalThis.queueMicrotask;
    globalThis.queueMicrotask = (fn) => deferred.push(fn);
    try {
      trip(breaker);
    } finally {
      globalThis.queueMicrotask = original;
    }
    assert.deepEqual(seen, ['second']);
    assert.equal(deferred.length, 1);
    assert.throws(deferred[0], /listener bug/);
  });

  test('unknown events are refused', () => {
    assert.throws(() => make().breaker.on('halfOpen', () => {}), TypeError);
  });
});

describe('export / import', () => {
  test('round trip into a new breaker: open with its remaining cooldown less the time in transit', () => {
    const { breaker, clock } = make();
    trip(breaker);
    clock.advance(5_000);
    const bytes = breaker.exportState();
    assert.ok(bytes instanceof Uint8Array && bytes.length > 0 && bytes.length <= 1024);
    const clock2 = new FakeClock();
    clock2.now = 123_456; // another process, another origin
    const restored = CircuitBreaker.importState(bytes, { clock: clock2.read }, 2_000);
    assert.equal(restored.state, 'open');
    assert.equal(restored.metrics().cooldownRemainingMs, 8_000);
    assert.deepEqual(restored.metrics(), { ...breaker.metrics(), timeInStateMs: 7_000, cooldownRemainingMs: 8_000,
      lastTransition: { ...breaker.metrics().lastTransition, atMs: 123_456 - 7_000 } });
  });

  test('the round trip is exact', () => {
    const { breaker } = make({ failureThreshold: 10 });
    for (let i = 0; i < 7; i++) call(breaker, i % 2 ? 503 : 200);
    const bytes = breaker.exportState();
    const copy = CircuitBreaker.importState(bytes, { failureThreshold: 10, clock: () => 0 });
    assert.deepEqual(copy.exportState(), bytes);
    assert.deepEqual(copy.metrics(), breaker.metrics());
  });

  test('garbage, truncated or damaged bytes are an error and leave the breaker unchanged', () => {
    const { breaker } = make();
    trip(breaker);
    const before = breaker.exportState();
    const good = make().breaker.exportState();
    for (const bad of [new Uint8Array([1, 2, 3]), good.slice(0, -1), Uint8Array.from(good, (b, i) => (i === 20 ? b ^ 0xff : b))]) {
      assert.throws(() => breaker.importState(bad), InvalidStateError);
    }
    assert.deepEqual(breaker.exportState(), before);
    assert.throws(() => breaker.importState('nope'), TypeError);
    assert.throws(() => CircuitBreaker.importState(good, { buckets: 5 }), /window/);
  });

  test('a breaker exported half-open with a probe out comes back open until that probe would time out', () => {
    const { breaker, clock } = make({ probeTimeoutMs: 4_000 });
    trip(breaker);
    clock.advance(15_000);
    assert.ok(breaker.acquire() >= 0);
    clock.advance(1_000);
    const restored = CircuitBreaker.importState(breaker.exportState(), { probeTimeoutMs: 4_000, clock: () => 0 });
    assert.equal(restored.state, 'open');
    assert.equal(restored.metrics().cooldownRemainingMs, 3_000);
  });
});

describe('the four failure modes', () => {
  test('1. timeout-wait pool starvation: once tripped, callers are rejected at once, without waiting', async () => {
    let calls = 0;
    const hang = () => {
      calls++;
      return new Promise(() => {}); // an upstream that never answers
    };
    // Five hung calls trip the breaker through hang detection, before any of them times out.
    const t = make({ slowCallDurationMs: 1_000 });
    for (let i = 0; i < 5; i++) t.breaker.execute(hang);
    t.clock.advance(1_063);
    const n = 10_000;
    const start = performance.now();
    const rejections = [];
    for (let i = 0; i < n; i++) rejections.push(t.breaker.execute(hang).catch((e) => e));
    const perCallUs = ((performance.now() - start) * 1_000) / n;
    const errors = await Promise.all(rejections);
    assert.equal(calls, 5, 'no caller after the trip reached the upstream');
    assert.ok(errors.every((e) => e instanceof CircuitOpenError && e.reason === 'open'));
    assert.equal(t.transitions[0], 'closed>open:hung-calls');
    assert.ok(perCallUs < 100, `rejections took ${perCallUs.toFixed(2)} µs each`);
    // And the value API: no error object at all.
    const start2 = performance.now();
    for (let i = 0; i < n; i++) assert.equal(t.breaker.acquire(), Rejected.OPEN);
    const perAcquireUs = ((performance.now() - start2) * 1_000) / n;
    assert.ok(perAcquireUs < 10, `acquire() rejections took ${perAcquireUs.toFixed(3)} µs each`);
  });

  test('2. half-open stampede: 200 concurrent callers after the cooldown → exactly K admitted', async () => {
    for (const k of [1, 3]) {
      const { breaker, clock } = make({ halfOpenMaxProbes: k });
      trip(breaker);
      clock.advance(15_000);
      let reached = 0;
      let release;
      const gate = new Promise((resolve) => {
        release = resolve;
      });
      const upstream = async () => {
        reached++;
        await gate;
        return { status: 200 };
      };
      const results = Array.from({ length: 200 }, () => breaker.execute(upstream).then(() => 'ok', (e) => e.reason));
      release();
      const settled = await Promise.all(results);
      assert.equal(reached, k);
      assert.equal(settled.filter((r) => r === 'ok').length, k);
      assert.equal(settled.filter((r) => r === 'probing').length, 200 - k);
    }
  });

  test('3. 4xx false trips: 20 × 404 (and 400, 401, 403, 422) in a row never trip', async () => {
    for (const status of [404, 400, 401, 403, 422]) {
      const { breaker } = make();
      for (let i = 0; i < 20; i++) {
        const response = await breaker.execute(async () => new Response(null, { status }));
        assert.equal(response.status, status);
      }
      assert.equal(breaker.state, 'closed');
      assert.equal(breaker.metrics().faults, 0);
    }
  });

  test('4. lifetime-counter poisoning: one fault per hour for five hours never trips', () => {
    const { breaker, clock } = make();
    for (let hour = 0; hour < 5; hour++) {
      call(breaker, 503);
      for (let i = 0; i < 10; i++) call(breaker, 200);
      clock.advance(HOUR);
    }
    assert.equal(breaker.state, 'closed');
    assert.equal(breaker.metrics().faultsTotal, 5);
    assert.equal(breaker.metrics().faults, 0);
  });
});
