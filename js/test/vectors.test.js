// Every shared scenario vector (tests/vectors/*.json) through the JS package's public API,
// with the same decisions as the native core.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker } from '../src/node.js';
import { FakeClock, jsMessage, loadVectors, optionOfField, optionsOf } from './helpers.js';
import { runVector } from './vectors-runner.js';

/** The package's CircuitBreaker seen through the runner's subject interface. */
const subject = {
  create(options, nowMs) {
    const clock = new FakeClock();
    clock.now = nowMs;
    const breaker = new CircuitBreaker({ ...options, clock: clock.read });
    let transitions = [];
    breaker.on('transition', (t) => transitions.push([t.from, t.to, t.reason]));
    const at = (ms) => {
      clock.now = ms;
      transitions = [];
    };
    return {
      acquire(now) {
        at(now);
        const permit = breaker.acquire();
        if (permit >= 0) {
          return { admitted: true, permit, probe: CircuitBreaker.isProbe(permit), transitions };
        }
        const rejection = breaker.lastRejection;
        // Vectors compare whole milliseconds (jittered cooldowns are not whole), as the
        // native runner does.
        return { admitted: false, reason: rejection.reason, retryAfterMs: Math.floor(rejection.retryAfterMs), transitions };
      },
      record(permit, outcome, now) {
        at(now);
        const cls = breaker.record(permit, outcome);
        const report = breaker.lastRecord;
        assert.equal(cls, report.class);
        return { ...report, transitions };
      },
      state(now) {
        at(now);
        return breaker.state;
      },
      metrics(now) {
        at(now);
        const m = breaker.metrics();
        return {
          state: m.state,
          epoch: m.epoch,
          calls: m.calls,
          faults: m.faults,
          slow: m.slow,
          'in-flight': m.inFlight,
          hung: m.hung,
          'probes-out': m.probesOut,
          'admitted-total': m.admittedTotal,
          'rejected-open': m.rejectedTotal.open,
          'rejected-probing': m.rejectedTotal.probing,
          'rejected-isolated': m.rejectedTotal.isolated,
          'rejected-saturated': m.rejectedTotal.saturated,
          'successes-total': m.successesTotal,
          'faults-total': m.faultsTotal,
          'stale-total': m.staleTotal,
          'transitions-total': m.transitionsTotal,
          'time-in-state-ms': Math.floor(m.timeInStateMs),
          'cooldown-remaining-ms': Math.floor(m.cooldownRemainingMs),
        };
      },
      manual(op, now) {
        at(now);
        breaker[op]();
        return transitions;
      },
      export(now) {
        at(now);
        return breaker.exportState();
      },
      import(bytes, elapsedMs, now) {
        at(now);
        breaker.importState(bytes, elapsedMs);
      },
    };
  },
  checkConfigError(error, want) {
    assert.ok(error instanceof RangeError, `expected a RangeError, got ${error}`);
    assert.equal(error.option, optionOfField(want.field));
    assert.ok(error.message.includes(jsMessage(want.message)),
      `${JSON.stringify(error.message)} should contain ${JSON.stringify(jsMessage(want.message))}`);
  },
};

const vectors = loadVectors();

test('the vector directory holds vectors', () => {
  assert.ok(vectors.length >= 20, `only ${vectors.length} vectors found`);
});

for (const { file, vector } of vectors) {
  test(`vector ${file}`, () => {
    runVector(vector, subject, { optionsOf, optionOfField, jsMessage });
  });
}
