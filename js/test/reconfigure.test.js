// `breaker.reconfigure(options)` (SPEC § Reconfiguration) through the package's public API:
// what the shared vectors 58-61 cannot say in JS terms — the typed errors and their
// options, the clock and `timeoutMs` (options of the JS breaker, not of the core), the
// listeners, and permits and probes out across a reconfigure. Time is a fake clock.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker, Rejected } from '../src/node.js';
import { FakeClock, make } from './helpers.js';

function fault(breaker) {
  const permit = breaker.acquire();
  assert.ok(permit >= 0, `expected admission, got ${permit}`);
  return breaker.record(permit, 503);
}

/** The refusal `reconfigure(options)` must throw: its class, code and option, and the
 * message's start. */
function refused(breaker, options, Type, option, message) {
  assert.throws(() => breaker.reconfigure(options), (error) => {
    assert.ok(error instanceof Type, `expected a ${Type.name}, got ${error}`);
    assert.equal(error.code, Type === RangeError ? 'ERR_OUT_OF_RANGE' : 'ERR_INVALID_ARG_TYPE');
    assert.equal(error.option, option);
    assert.ok(error.message.startsWith(message), `${JSON.stringify(error.message)} should start with ${JSON.stringify(message)}`);
    return true;
  });
}

describe('reconfigure refuses a bad config as the constructor does, and changes nothing', () => {
  test('each refusal names its option, with the constructor\'s error class and message', () => {
    const { breaker } = make({ failureThreshold: 3, minCalls: 3, cooldownMs: 1_000 });
    for (const options of [{ failureThreshold: 0 }, { cooldownMs: 'soon' }, { cooldown: 5 }, { maxCooldownMs: 10 }]) {
      const created = (() => {
        try {
          return new CircuitBreaker(options);
        } catch (error) {
          return error;
        }
      })();
      assert.ok(created instanceof Error, `${JSON.stringify(options)} is refused at creation`);
      refused(breaker, options, created.constructor, created.option, created.message);
    }
    refused(breaker, 'fast', TypeError, 'options', 'options must be an object');
    refused(breaker, { faultStatuses: [99] }, RangeError, 'faultStatuses', 'faultStatuses entries must be integers between');
  });

  test('after a refusal the breaker trips, rejects and cools down by its old config', () => {
    const { breaker, clock, transitions } = make({ failureThreshold: 3, minCalls: 3, cooldownMs: 1_000 });
    fault(breaker);
    fault(breaker);
    refused(breaker, { failureThreshold: 0, cooldownMs: 50 }, RangeError, 'failureThreshold', 'failureThreshold must be >= 1 (received 0)');
    refused(breaker, { failureThreshold: 2, minCalls: 2, windowCalls: 0 }, RangeError, 'windowCalls', 'windowCalls must be');
    assert.deepEqual([breaker.metrics().calls, breaker.metrics().faults], [2, 2], 'the window kept');
    assert.equal(breaker.state, 'closed', 'not tripped by the refused threshold of 2');
    fault(breaker);
    assert.deepEqual(transitions, ['closed>open:failure-threshold'], 'the third fault trips');
    clock.advance(999);
    assert.equal(breaker.acquire(), Rejected.OPEN, 'the old cooldown, not the refused 50 ms');
    assert.equal(breaker.lastRejection.retryAfterMs, 1);
  });

  test('a refused config leaves the default timeoutMs; an accepted one replaces it', async () => {
    const { breaker } = make();
    breaker.reconfigure({ timeoutMs: 10 });
    refused(breaker, { timeoutMs: 600_000, halfOpenMaxProbes: 65 }, RangeError, 'halfOpenMaxProbes', 'halfOpenMaxProbes must be between 1 and 64');
    // Still 10 ms: with the refused 600 000 this call would hang the test.
    await assert.rejects(breaker.execute(() => new Promise(() => {})), { name: 'TimeoutError' });
  });
});

describe('fleetQuorum and slowCallDurationMs stay as the breaker was made', () => {
  test('a change to either, or leaving it out, is refused; the same value is not', () => {
    const { breaker } = make({ slowCallDurationMs: 100, fleetQuorum: 2 });
    const made = { slowCallDurationMs: 100, fleetQuorum: 2 };
    const fixed = 'cannot change on a live breaker';
    refused(breaker, { ...made, fleetQuorum: 3 }, RangeError, 'fleetQuorum', `fleetQuorum ${fixed} (received 3)`);
    refused(breaker, { slowCallDurationMs: 100 }, RangeError, 'fleetQuorum', `fleetQuorum ${fixed} (received undefined)`);
    refused(breaker, { ...made, slowCallDurationMs: 200 }, RangeError, 'slowCallDurationMs', `slowCallDurationMs ${fixed}`);
    refused(breaker, { fleetQuorum: 2 }, RangeError, 'slowCallDurationMs', `slowCallDurationMs ${fixed}`);
    assert.deepEqual(breaker.reconfigure({ ...made, failureThreshold: 2 }), { windowKept: true, transitions: [] });
    assert.equal(breaker.fleetStatus().enabled, true, 'still a fleet member');
  });

  test('on a breaker made without them, setting either is refused', () => {
    const { breaker } = make();
    refused(breaker, { fleetQuorum: 1 }, RangeError, 'fleetQuorum', 'fleetQuorum cannot change on a live breaker');
    refused(breaker, { slowCallDurationMs: 5 }, RangeError, 'slowCallDurationMs', 'slowCallDurationMs cannot change on a live breaker');
    assert.equal(breaker.fleetStatus().enabled, false);
  });

  test('the clock may be given again, not changed; left out, the breaker keeps its own', () => {
    const { breaker, clock } = make({ cooldownMs: 1_000, failureThreshold: 1, minCalls: 1 });
    refused(breaker, { clock: new FakeClock().read }, RangeError, 'clock', 'clock cannot change on a live breaker');
    refused(breaker, { clock: 0 }, TypeError, 'clock', 'clock must be a function');
    breaker.reconfigure({ cooldownMs: 1_000, failureThreshold: 1, minCalls: 1, clock: clock.read });
    breaker.reconfigure({ cooldownMs: 1_000, failureThreshold: 1, minCalls: 1 });
    fault(breaker);
    clock.advance(400);
    assert.equal(breaker.acquire(), Rejected.OPEN);
    assert.equal(breaker.lastRejection.retryAfterMs, 600, 'time still read from the fake clock');
  });
});

describe('what was out before a reconfigure counts after it', () => {
  test('a permit out is current: its fault is judged by the new threshold', () => {
    const { breaker, transitions } = make();
    fault(breaker);
    fault(breaker);
    const permit = breaker.acquire();
    assert.deepEqual(breaker.reconfigure({ failureThreshold: 3, minCalls: 3 }), { windowKept: true, transitions: [] });
    assert.equal(breaker.outstandingPermits, 1);
    assert.equal(breaker.record(permit, 503), 'fault');
    assert.equal(breaker.lastRecord.stale, false);
    assert.deepEqual(transitions, ['closed>open:failure-threshold']);
  });

  test('a permit out counts in a window that started empty', () => {
    const { breaker } = make({ failureThreshold: 2, minCalls: 2 });
    fault(breaker);
    const permit = breaker.acquire();
    assert.equal(breaker.reconfigure({ failureThreshold: 2, minCalls: 2, windowCalls: 10 }).windowKept, false);
    assert.equal(breaker.metrics().faults, 0, 'the fault before is gone with the old window');
    breaker.record(permit, 503);
    assert.equal(breaker.lastRecord.stale, false);
    assert.deepEqual([breaker.metrics().calls, breaker.metrics().faults], [1, 1]);
    fault(breaker);
    assert.equal(breaker.state, 'open');
  });

  test('a probe out stays the round\'s probe, and the new successes required close', () => {
    const { breaker, clock, transitions } = make({ failureThreshold: 1, minCalls: 1, cooldownMs: 100 });
    fault(breaker);
    clock.advance(100);
    const probe = breaker.acquire();
    assert.ok(CircuitBreaker.isProbe(probe));
    breaker.reconfigure({ failureThreshold: 1, minCalls: 1, cooldownMs: 100, halfOpenRequiredSuccesses: 1 });
    assert.equal(breaker.metrics().probesOut, 1);
    assert.equal(breaker.record(probe, 200), 'success');
    assert.deepEqual(transitions.slice(-1), ['half-open>closed:probes-succeeded']);
  });
});

describe('transitions and the next opening', () => {
  test('transitions time made due are returned and reach the listeners as any call\'s', () => {
    const { breaker, clock } = make({ failureThreshold: 1, minCalls: 1, cooldownMs: 100 });
    fault(breaker);
    const heard = [];
    breaker.on('half-open', (t) => heard.push(t));
    clock.advance(150);
    const { windowKept, transitions } = breaker.reconfigure({ failureThreshold: 1, minCalls: 1, cooldownMs: 5_000 });
    assert.equal(windowKept, true);
    assert.deepEqual(transitions, [{ from: 'open', to: 'half-open', reason: 'cooldown-elapsed', atMs: 100, epoch: 2 }]);
    assert.deepEqual(heard, transitions, 'the listener got the same transitions');
    assert.equal(breaker.metrics().lastTransition.reason, 'cooldown-elapsed');
  });

  test('the next opening lasts the new cooldown', () => {
    const { breaker, clock } = make({ failureThreshold: 1, minCalls: 1, cooldownMs: 100 });
    breaker.reconfigure({ failureThreshold: 1, minCalls: 1, cooldownMs: 2_000 });
    fault(breaker);
    clock.advance(1_000);
    assert.equal(breaker.acquire(), Rejected.OPEN);
    assert.equal(breaker.lastRejection.retryAfterMs, 1_000);
  });

  test('absent options take their defaults, as at creation', () => {
    const { breaker } = make({ failureThreshold: 1, minCalls: 1 });
    assert.equal(breaker.reconfigure().windowKept, true);
    for (let i = 0; i < 4; i++) fault(breaker);
    assert.equal(breaker.state, 'closed', 'the default threshold of 5');
    fault(breaker);
    assert.equal(breaker.state, 'open');
  });

  test('a disposed breaker refuses, as every call does', () => {
    const { breaker } = make();
    breaker.dispose();
    assert.throws(() => breaker.reconfigure({}), { code: 'ERR_TRIPGATE_DISPOSED' });
  });
});
