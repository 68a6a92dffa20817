// What the shared vectors (vectors.test.js: every rule of SPEC.md, including the 4xx and
// lifetime-counter failure modes, vectors 03 and 04) cannot express, through the package's
// public API: events, fractional milliseconds, which calls read the clock, the permit
// table, the JS forms of options and outcomes, and the failure modes that need `execute`
// and real concurrency. Time is a fake clock: no test sleeps for breaker time.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  CircuitBreaker, CircuitOpenError, InvalidStateError, Rejected, configFields, rejectReasons, states,
  transitionReasons,
} from '../src/node.js';
import { FakeClock, make } from './helpers.js';

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

describe('the tables come from the core', () => {
  test('states, reasons, reject reasons, config fields and rejection codes', () => {
    assert.deepEqual(states, ['closed', 'open', 'half-open', 'isolated', 'disabled']);
    assert.ok(transitionReasons.includes('probe-timeout') && transitionReasons.includes('restored'));
    assert.deepEqual(rejectReasons, ['open', 'probing', 'isolated', 'saturated', 'probing-elsewhere']);
    assert.deepEqual(Rejected, { OPEN: -1, PROBING: -2, ISOLATED: -3, SATURATED: -4, PROBING_ELSEWHERE: -5 });
    assert.ok(transitionReasons.includes('fleet-open') && transitionReasons.includes('fleet-close'));
    assert.equal(configFields.find((f) => f.option === 'fleetQuorum').kind, 'count');
    assert.ok(Object.isFrozen(Rejected) && Object.isFrozen(states) && Object.isFrozen(configFields));
    const cooldown = configFields.find((f) => f.name === 'cooldown');
    assert.deepEqual({ ...cooldown }, { name: 'cooldown', option: 'cooldownMs', kind: 'duration' });
    assert.equal(configFields.find((f) => f.option === 'jitterSeed').kind, 'seed');
  });
});

describe('time', () => {
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

describe('permits (plain numbers into a table of outstanding permits)', () => {
  test('permits are small integers; leaked permits of an ended epoch are reclaimed', () => {
    const { breaker } = make();
    const permits = Array.from({ length: 10_000 }, () => breaker.acquire());
    assert.ok(permits.every((p) => Number.isInteger(p) && p >= 0 && p < 2 ** 30));
    assert.equal(new Set(permits).size, permits.length);
    assert.equal(breaker.outstandingPermits, 10_000);
    // Leak 10 000 more in each of five epochs: the table drops those that hold nothing
    // before it grows, so it holds about the permits of one epoch, not 60 000.
    for (let epoch = 0; epoch < 5; epoch++) {
      breaker.reset(); // every permit out is stale now
      for (let i = 0; i < 10_000; i++) breaker.acquire();
    }
    assert.ok(breaker.outstandingPermits <= 2 * 16_384, `${breaker.outstandingPermits} permits held`);
    assert.equal(breaker.metrics().inFlight, 10_000, 'the core counts only the current epoch');
    assert.equal(breaker.record(permits[0], 503), 'fault');
    assert.equal(breaker.lastRecord.stale, true);
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
    assert.equal(breaker.acquire(), Rejected.SATURATED);
    assert.equal(breaker.metrics().inFlight, 2 ** 20, 'the refused calls were handed straight back');
    assert.equal(breaker.state, 'closed');
    breaker.reset(); // every permit out holds nothing now: the table makes room
    assert.ok(breaker.acquire() >= 0);
  });

  test('a rejection is a value: acquire() returns a negative code and never throws', () => {
    const { breaker } = make();
    breaker.isolate();
    const r = breaker.acquire();
    assert.equal(r, Rejected.ISOLATED);
    assert.deepEqual(breaker.lastRejection, { reason: 'isolated', retryAfterMs: 0, state: 'isolated' });
    assert.throws(() => breaker.acquireOrThrow(), (e) => e instanceof CircuitOpenError && e.reason === 'isolated');
  });
});

describe('outcomes in their JS forms', () => {
  const forms = [
    [503, 'fault'], [404, 'success'], [{ status: 502 }, 'fault'], [{ statusCode: 429 }, 'fault'],
    [{ status: '404' }, 'success'], [new Response(null, { status: 503 }), 'fault'], [Response.error(), 'fault'],
    [{ status: 0, type: 'opaque' }, 'success'], [{ grpc: 14 }, 'fault'], [{ grpc: 5 }, 'success'],
    ['status:404', 'success'], ['grpc:14', 'fault'], ['cancelled', 'neutral'],
  ];
  for (const [outcome, cls] of forms) {
    test(`${outcome?.constructor?.name ?? typeof outcome} ${JSON.stringify(outcome)} is ${cls}`, () => {
      assert.equal(call(make().breaker, outcome), cls);
    });
  }

  test('an invalid outcome throws TypeError or RangeError and changes nothing', () => {
    const { breaker } = make();
    const permit = breaker.acquire();
    assert.throws(() => breaker.record(permit, 600), RangeError);
    assert.throws(() => breaker.record(permit, { grpc: 17 }), RangeError);
    assert.throws(() => breaker.record(permit, { status: 700 }), RangeError);
    assert.throws(() => breaker.record(permit, 'bogus'), TypeError);
    assert.throws(() => breaker.record(permit, true), TypeError);
    assert.equal(breaker.metrics().inFlight, 1, 'the permit is still out');
    assert.equal(breaker.record(permit, 503), 'fault');
    assert.equal(breaker.lastRecord.stale, false);
  });

  test('a value that is not a permit is refused', () => {
    const { breaker } = make();
    assert.throws(() => breaker.record(Rejected.OPEN, 'success'), /rejection code/);
    assert.throws(() => breaker.record('1', 'success'), TypeError);
    // A whole number and a half is a shadow permit's form (shadow.test.js): other
    // fractions are no permit.
    assert.throws(() => breaker.record(0.25, 'success'), TypeError);
    assert.throws(() => breaker.record(7.75, 'success'), TypeError);
    assert.throws(() => breaker.record(2 ** 30, 'success'), TypeError);
  });
});

describe('options', () => {
  const invalid = [
    [{ cooldownMs: 10, maxCooldownMs: 5 }, 'maxCooldownMs', 'maxCooldownMs must be >= cooldownMs'],
    [{ windowMs: 1e-7 }, 'windowMs', 'windowMs must be > 0'],
    [{ backoffFactor: 0.5 }, 'backoffFactor', 'backoffFactor must be a finite number between 1 and 1000'],
    [{ failureThreshold: -1 }, 'failureThreshold', 'failureThreshold must be >= 0'],
    [{ failureThreshold: 2.5 }, 'failureThreshold', 'failureThreshold must be an integer'],
    [{ cooldownMs: Infinity }, 'cooldownMs', 'cooldownMs must be a finite number'],
    [{ faultStatuses: [600] }, 'faultStatuses', 'faultStatuses entries must be integers between 100 and 599'],
    [{ faultGrpcCodes: [17] }, 'faultGrpcCodes', 'faultGrpcCodes entries must be integers between 0 and 16'],
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
        assert.equal(error.code, 'ERR_INVALID_ARG_TYPE');
        return true;
      });
    });
  }

  test('an unknown option hints at the Ms spelling; options must be an object', () => {
    assert.throws(() => new CircuitBreaker({ cooldown: 1 }), /did you mean cooldownMs\?/);
    assert.throws(() => new CircuitBreaker(null), (e) => e instanceof TypeError && e.option === 'options');
  });

  test('fault lists take any iterable and replace the defaults', () => {
    const { breaker } = make({ faultStatuses: new Set([408]), faultGrpcCodes: [2] });
    assert.equal(call(breaker, 408), 'fault');
    assert.equal(call(breaker, 503), 'success');
    assert.equal(call(breaker, { grpc: 2 }), 'fault');
  });
});

describe('observability', () => {
  test('metrics: the JS object, with reject reasons by name and the last transition', () => {
    const { breaker, clock } = make();
    const held = breaker.acquire();
    trip(breaker);
    breaker.acquire();
    clock.advance(1_000);
    breaker.acquire();
    const m = breaker.metrics();
    assert.deepEqual(m, {
      state: 'open', epoch: 1, calls: 5, faults: 5, slow: 0, inFlight: 0, hung: 0, probesOut: 0,
      admittedTotal: 6, rejectedTotal: { open: 2, probing: 0, isolated: 0, saturated: 0, 'probing-elsewhere': 0 },
      shadowRejectedTotal: { open: 0, probing: 0, isolated: 0, saturated: 0, 'probing-elsewhere': 0 },
      successesTotal: 0, faultsTotal: 5, staleTotal: 0, transitionsTotal: 1, timeInStateMs: 1_000,
      cooldownRemainingMs: 14_000, clockErrorsTotal: 0, listenerErrorsTotal: 0,
      lastTransition: { from: 'closed', to: 'open', reason: 'failure-threshold', atMs: 0, epoch: 1 },
    });
    breaker.record(held, 200);
    assert.equal(breaker.lastRecord.stale, true);
  });

  test("events: 'transition' for every change and one per state entered; once and off; reads emit nothing", () => {
    const { breaker, clock, transitions } = make();
    const seen = [];
    const onOpen = (t) => seen.push(`open:${t.reason}`);
    breaker.on('open', onOpen);
    breaker.once('half-open', (t) => seen.push(`half-open@${t.atMs}`));
    breaker.on('closed', (t) => seen.push(`closed:${t.reason}`));
    trip(breaker);
    clock.advance(20_000);
    assert.equal(breaker.state, 'half-open');
    breaker.metrics();
    assert.equal(transitions.length, 1, 'reading the effective state changes nothing');
    call(breaker, 503); // the cooldown passed at 15 000; the probe fails
    breaker.off('open', onOpen);
    clock.advance(15_000);
    call(breaker, 503);
    breaker.reset();
    assert.deepEqual(seen, ['open:failure-threshold', 'half-open@15000', 'open:probe-fault', 'closed:reset']);
  });

  test('a throwing listener breaks neither the call nor other listeners; its error goes to listener-error, never rethrown', () => {
    const { breaker } = make();
    const seen = [];
    breaker.on('open', () => {
      throw new Error('listener bug');
    });
    breaker.on('open', () => seen.push('second'));
    breaker.on('listener-error', ({ error, event }) => seen.push(`${event}: ${error.message}`));
    const deferred = [];
    const original = globalThis.queueMicrotask;
    globalThis.queueMicrotask = (fn) => deferred.push(fn);
    try {
      trip(breaker);
    } finally {
      globalThis.queueMicrotask = original;
    }
    assert.deepEqual(seen, ['open: listener bug', 'second']);
    assert.equal(deferred.length, 0);
    assert.equal(breaker.metrics().listenerErrorsTotal, 1);
  });

  test('unknown events are refused', () => {
    assert.throws(() => make().breaker.on('halfOpen', () => {}), TypeError);
  });
});

describe('export / import', () => {
  test('bytes out as a Uint8Array, into a breaker with another clock origin', () => {
    const { breaker, clock } = make();
    trip(breaker);
    clock.advance(5_000);
    const bytes = breaker.exportState();
    assert.ok(bytes instanceof Uint8Array && bytes.length > 0 && bytes.length <= 1024);
    const clock2 = new FakeClock();
    clock2.now = 123_456; // another process, another origin
    const restored = CircuitBreaker.importState(bytes.buffer, { clock: clock2.read }, 2_000);
    assert.equal(restored.state, 'open');
    assert.equal(restored.metrics().cooldownRemainingMs, 8_000);
    assert.equal(restored.metrics().lastTransition.atMs, 123_456 - 7_000);
  });

  test('refused input: not bytes, damaged bytes, another window shape, a bad elapsedMs', () => {
    const { breaker } = make();
    trip(breaker);
    const before = breaker.exportState();
    const good = make().breaker.exportState();
    assert.throws(() => breaker.importState(new Uint8Array([1, 2, 3])), InvalidStateError);
    assert.throws(() => breaker.importState('nope'), TypeError);
    assert.throws(() => breaker.importState(good, -1), (e) => e instanceof RangeError && e.option === 'elapsedMs');
    assert.throws(() => CircuitBreaker.importState(good, { buckets: 5 }), /window/);
    assert.deepEqual(breaker.exportState(), before);
  });
});

describe('the failure modes that need execute', () => {
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

  test('3. 4xx false trips: 20 × 404 (and 400, 401, 403, 422) Responses in a row never trip', async () => {
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
});

describe('fleet mode: the breaker side (tripgate/fleet drives it; the rules are the core vectors 45-53)', () => {
  test('fleetQuorum is validated like every option, by name', () => {
    assert.throws(() => new CircuitBreaker({ fleetQuorum: 0 }),
      (e) => e instanceof RangeError && e.option === 'fleetQuorum' && /fleetQuorum must be between 1 and 16/.test(e.message));
    assert.throws(() => new CircuitBreaker({ fleetQuorum: 17 }), (e) => e.option === 'fleetQuorum');
    assert.throws(() => new CircuitBreaker({ fleetQuorum: '2' }), (e) => e instanceof TypeError && e.option === 'fleetQuorum');
    assert.throws(() => new CircuitBreaker({ fleetQuorum: 1.5 }), (e) => e instanceof RangeError && e.option === 'fleetQuorum');
    assert.equal(new CircuitBreaker({ fleetQuorum: 16 }).fleetStatus().enabled, true);
    assert.equal(new CircuitBreaker().fleetStatus().enabled, false);
  });

  test('fleet transitions reach the listeners, by state and reason', () => {
    const { breaker, clock, transitions } = make({ fleetQuorum: 1 });
    const opened = [];
    breaker.on('open', (t) => opened.push(t.reason));
    assert.equal(breaker.fleetApply({ generation: 1, kind: 'open', remainingMs: 2_500 }), 'applied');
    assert.deepEqual(opened, ['fleet-open']);
    assert.equal(breaker.metrics().cooldownRemainingMs, 2_500);
    assert.equal(breaker.fleetApply({ generation: 1n, kind: 'close' }), 'stale');
    clock.advance(500);
    assert.equal(breaker.fleetApply({ generation: 2n, kind: 'close' }), 'applied');
    assert.deepEqual(transitions, ['closed>open:fleet-open', 'open>closed:fleet-close']);
    assert.deepEqual(breaker.fleetStatus(), {
      enabled: true, generation: 2, degraded: false, leaseHeld: false, wantsLease: false, staleEvents: 1,
    });
  });

  test('half-open without the lease rejects as probing-elsewhere; with it, probes; its round is announced', () => {
    const { breaker, clock } = make({ fleetQuorum: 1, cooldownMs: 1_000 });
    trip(breaker);
    assert.deepEqual(breaker.fleetTakeAnnouncement(), { kind: 'tripped', remainingMs: 1_000 });
    assert.equal(breaker.fleetTakeAnnouncement(), null, 'taken once');
    // The fleet's open (its own vote reached the quorum of 1): the round is the fleet's.
    assert.equal(breaker.fleetApply({ generation: 1, kind: 'open', remainingMs: 1_000 }), 'applied');
    clock.advance(1_000);
    assert.equal(breaker.acquire(), Rejected.PROBING_ELSEWHERE);
    assert.equal(breaker.lastRejection.reason, 'probing-elsewhere');
    assert.equal(breaker.fleetStatus().wantsLease, true);
    breaker.fleetStore({ reachable: true, leaseMs: 5_000 });
    const probe = breaker.acquire();
    assert.ok(CircuitBreaker.isProbe(probe));
    breaker.record(probe, 200);
    breaker.record(breaker.acquire(), 200);
    assert.equal(breaker.state, 'closed');
    assert.deepEqual(breaker.fleetTakeAnnouncement(), { kind: 'closed', remainingMs: 0 });
    assert.equal(breaker.metrics().rejectedTotal['probing-elsewhere'], 1);
  });

  test('votes take 64-bit member ids as hex or bigint; degraded probes locally', () => {
    const { breaker, clock } = make({ fleetQuorum: 2, cooldownMs: 1_000 });
    assert.equal(breaker.fleetVotes([{ member: 'ffffffffffffffff', ageMs: 0 }]), false);
    assert.equal(breaker.fleetVotes([{ member: 'ffffffffffffffff', ageMs: 0 }, { member: 2n ** 64n - 2n, ageMs: 10 }]), true);
    assert.equal(breaker.fleetVotes([{ member: 'ffffffffffffffff', ageMs: 0 }, { member: 'fffffffffffffffe', ageMs: 1_000 }]), false,
      'a vote a cooldown old does not count');
    trip(breaker);
    breaker.fleetStore({ reachable: false });
    clock.advance(1_000);
    assert.ok(CircuitBreaker.isProbe(breaker.acquire()), 'degraded: a local probe');
    assert.equal(breaker.fleetStatus().degraded, true);
  });

  test('bad fleet arguments are errors naming the argument, and change nothing', () => {
    const { breaker } = make({ fleetQuorum: 1 });
    const bad = [
      [() => breaker.fleetApply(null), 'event'],
      [() => breaker.fleetApply({ generation: -1, kind: 'open' }), 'generation'],
      [() => breaker.fleetApply({ generation: 2 ** 53, kind: 'open' }), 'generation'],
      [() => breaker.fleetApply({ generation: 1.5, kind: 'open' }), 'generation'],
      [() => breaker.fleetApply({ generation: '1', kind: 'open' }), 'generation'],
      [() => breaker.fleetApply({ generation: 1, kind: 'opened' }), 'kind'],
      [() => breaker.fleetApply({ generation: 1, kind: 'open', remainingMs: -1 }), 'remainingMs'],
      [() => breaker.fleetApply({ generation: 1, kind: 'open', remainingMs: Infinity }), 'remainingMs'],
      [() => breaker.fleetVotes(3), 'votes'],
      [() => breaker.fleetVotes([{ member: 'xyz', ageMs: 0 }]), 'votes[0].member'],
      [() => breaker.fleetVotes([{ member: '1', ageMs: 0 }, { member: 2n ** 64n, ageMs: 0 }]), 'votes[1].member'],
      [() => breaker.fleetVotes([{ member: 1, ageMs: NaN }]), 'votes[0].ageMs'],
      [() => breaker.fleetStore({ reachable: 'yes' }), 'reachable'],
      [() => breaker.fleetStore({ reachable: true, leaseMs: -5 }), 'leaseMs'],
    ];
    for (const [fn, option] of bad) {
      assert.throws(fn, (e) => e.option === option && e.message.startsWith(option), option);
    }
    assert.deepEqual(breaker.fleetStatus(), {
      enabled: true, generation: 0, degraded: false, leaseHeld: false, wantsLease: false, staleEvents: 0,
    });
    assert.equal(breaker.state, 'closed');
  });
});
