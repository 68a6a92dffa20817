// Runs one scenario vector (format: tests/vectors/README.md) against any host that looks
// like a breaker to `makeSubject`. The wasm-bindgen package and the jco-transpiled
// component share it, so "same decisions" means the same checks.
import assert from 'node:assert/strict';
import { FakeClock, jsMessage, optionOfField } from './helpers.js';

/**
 * A subject: { create(options, nowMs) -> instance | throws, and per instance:
 *   acquire(now, reading) -> { admitted, permit, probe, reason, retryAfterMs, transitions }
 *   record(permit, outcome, now, reading) -> { class, slow, stale, transitions } | throws
 *   state(now, reading), metrics(now, reading) -> vector-keyed object,
 *   manual(op, now, reading) -> transitions, export(now, reading) -> Uint8Array,
 *   import(bytes, elapsedMs, now, reading) (throws on refusal),
 *   and fleet mode's: fleetApply({ generation, kind, remainingMs }, now, reading) ->
 *   { applied, transitions }, fleetVotes([[member, ageMs]], now, reading) -> boolean,
 *   fleetStore(reachable, leaseMs | null, now, reading), fleetAnnouncement() ->
 *   { kind, 'remaining-ms' } | null, fleetStatus(now, reading) -> vector-keyed object }
 * `now` is the step's `at` (ms); `reading` is its `reading-ns` as a BigInt, or undefined:
 * when given, the subject hands its breaker that clock reading instead of `now`.
 */
export function runVector(vector, subject, { optionsOf, optionOfField, jsMessage }) {
  const options = optionsOf(vector.config ?? {});
  if (vector['config-error']) {
    const want = vector['config-error'];
    assert.throws(() => subject.create(options, 0), (error) => {
      subject.checkConfigError(error, want, { optionOfField, jsMessage });
      return true;
    });
    return;
  }
  let breaker = subject.create(options, 0);
  const permits = new Map();
  const snapshots = new Map();
  let last = 0;
  vector.steps.forEach((step, index) => {
    const where = `step ${index} ${JSON.stringify(step)}`;
    const at = step.at;
    const reading = step['reading-ns'] === undefined ? undefined : BigInt(step['reading-ns']);
    if (at < last && !step['clock-steps-back']) assert.fail(`${where}: time goes backwards`);
    last = Math.max(last, at);
    const expect = step.expect ?? {};
    const wantTransitions = expect.transitions ?? [];
    switch (step.op) {
      case 'acquire': {
        const count = step.count ?? 1;
        let admitted = 0;
        let rejected = 0;
        const all = [];
        for (let i = 0; i < count; i++) {
          const d = breaker.acquire(at, reading);
          all.push(...d.transitions);
          if (d.admitted) {
            if (count === 1) {
              if ('admitted' in expect) assert.equal(true, expect.admitted, `${where}: admitted`);
              if ('probe' in expect) assert.equal(d.probe, expect.probe, `${where}: probe`);
            }
            if (step.permit !== undefined) {
              permits.set(count === 1 ? step.permit : `${step.permit}.${admitted}`, d.permit);
            }
            admitted++;
          } else {
            if (count === 1) {
              if ('admitted' in expect) assert.equal(false, expect.admitted, `${where}: admitted`);
              if ('rejected' in expect) assert.equal(d.reason, expect.rejected, `${where}: rejected`);
              if ('retry-after-ms' in expect) {
                assert.equal(d.retryAfterMs, expect['retry-after-ms'], `${where}: retry-after-ms`);
              }
            }
            rejected++;
          }
        }
        if ('admitted-count' in expect) assert.equal(admitted, expect['admitted-count'], `${where}: admitted-count`);
        if ('rejected-count' in expect) assert.equal(rejected, expect['rejected-count'], `${where}: rejected-count`);
        assert.deepEqual(all, wantTransitions, `${where}: transitions`);
        break;
      }
      case 'record': {
        assert.ok(permits.has(step.permit), `${where}: no permit named ${step.permit}`);
        const permit = permits.get(step.permit);
        permits.delete(step.permit);
        let report;
        try {
          report = breaker.record(permit, step.outcome, at, reading);
        } catch (error) {
          assert.ok(expect.error, `${where}: record failed unexpectedly: ${error.message}`);
          assert.ok(error.message, `${where}: record error has no message`);
          break;
        }
        assert.ok(!expect.error, `${where}: record succeeded; expected an error`);
        if ('class' in expect) assert.equal(report.class, expect.class, `${where}: class`);
        if ('slow' in expect) assert.equal(report.slow, expect.slow, `${where}: slow`);
        if ('stale' in expect) assert.equal(report.stale, expect.stale, `${where}: stale`);
        assert.deepEqual(report.transitions, wantTransitions, `${where}: transitions`);
        break;
      }
      case 'state':
        break;
      case 'metrics': {
        const got = breaker.metrics(at, reading);
        for (const [key, want] of Object.entries(expect.metrics ?? {})) {
          assert.ok(key in got, `${where}: metrics lack ${key}`);
          assert.equal(got[key], want, `${where}: metrics.${key}`);
        }
        break;
      }
      case 'isolate':
      case 'release':
      case 'disable':
      case 'reset':
        assert.deepEqual(breaker.manual(step.op, at, reading), wantTransitions, `${where}: transitions`);
        break;
      case 'export':
        snapshots.set(step.snapshot, breaker.export(at, reading));
        break;
      case 'import': {
        assert.ok(snapshots.has(step.snapshot), `${where}: no snapshot ${step.snapshot}`);
        const bytes = Uint8Array.from(snapshots.get(step.snapshot));
        let damaged = bytes;
        if (step.damage === 'truncate') damaged = bytes.slice(0, bytes.length - 1);
        else if (step.damage === 'flip') damaged[bytes.length >> 1] = ~damaged[bytes.length >> 1] & 0xff;
        else if (step.damage !== undefined) assert.fail(`${where}: unknown damage ${step.damage}`);
        if (step.fresh) {
          // The importer's own configuration, when the step gives one.
          breaker = subject.create(step.config ? optionsOf(step.config) : options, at);
          permits.clear();
        }
        let error = null;
        try {
          breaker.import(damaged, step['elapsed-ms'] ?? 0, at, reading);
        } catch (e) {
          error = e;
        }
        if (expect.error) {
          assert.ok(error, `${where}: import succeeded; expected an error`);
          assert.ok(error.message, `${where}: import error has no message`);
        } else {
          assert.equal(error, null, `${where}: import failed: ${error?.message}`);
        }
        break;
      }
      case 'fleet-apply': {
        const event = { generation: step.generation, kind: step.kind, remainingMs: step['remaining-ms'] ?? 0 };
        const { applied, transitions } = breaker.fleetApply(event, at, reading);
        if ('fleet-applied' in expect) assert.equal(applied, expect['fleet-applied'], `${where}: fleet-applied`);
        assert.deepEqual(transitions, wantTransitions, `${where}: transitions`);
        break;
      }
      case 'fleet-votes': {
        assert.ok(Array.isArray(step.votes), `${where}: fleet-votes needs votes`);
        const reached = breaker.fleetVotes(step.votes, at, reading);
        if ('quorum' in expect) assert.equal(reached, expect.quorum, `${where}: quorum`);
        break;
      }
      case 'fleet-store':
        breaker.fleetStore(step.reachable ?? true, step['lease-ms'] ?? null, at, reading);
        break;
      case 'fleet-announcement': {
        const got = breaker.fleetAnnouncement();
        if ('announcement' in expect) assert.deepEqual(got, expect.announcement, `${where}: announcement`);
        break;
      }
      case 'fleet-status': {
        const got = breaker.fleetStatus(at, reading);
        for (const [key, want] of Object.entries(expect.fleet ?? {})) {
          assert.ok(key in got, `${where}: fleet status lacks ${key}`);
          assert.equal(got[key], want, `${where}: fleet.${key}`);
        }
        break;
      }
      default:
        assert.fail(`${where}: unknown op ${step.op}`);
    }
    if ('state' in expect) assert.equal(breaker.state(at, reading), expect.state, `${where}: state`);
  });
}

/** A CircuitBreaker class (from either entry point) seen through the runner's subject interface. */
export function packageSubject(CircuitBreaker) {
  return {
    create(options, nowMs) {
      const clock = new FakeClock();
      clock.now = nowMs;
      const breaker = new CircuitBreaker({ ...options, clock: clock.read });
      let transitions = [];
      breaker.on('transition', (t) => transitions.push([t.from, t.to, t.reason]));
      // A clock in milliseconds: a reading in nanoseconds arrives divided by 10^6.
      const at = (ms, reading) => {
        clock.now = reading === undefined ? ms : Number(reading) / 1e6;
        transitions = [];
      };
      return {
        acquire(now, reading) {
          at(now, reading);
          const permit = breaker.acquire();
          if (permit >= 0) {
            return { admitted: true, permit, probe: CircuitBreaker.isProbe(permit), transitions };
          }
          const rejection = breaker.lastRejection;
          // Vectors compare whole milliseconds (jittered cooldowns are not whole), as the
          // native runner does.
          return { admitted: false, reason: rejection.reason, retryAfterMs: Math.floor(rejection.retryAfterMs), transitions };
        },
        record(permit, outcome, now, reading) {
          at(now, reading);
          const cls = breaker.record(permit, outcome);
          const report = breaker.lastRecord;
          assert.equal(cls, report.class);
          return { ...report, transitions };
        },
        state(now, reading) {
          at(now, reading);
          return breaker.state;
        },
        metrics(now, reading) {
          at(now, reading);
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
            'rejected-probing-elsewhere': m.rejectedTotal['probing-elsewhere'],
            'successes-total': m.successesTotal,
            'faults-total': m.faultsTotal,
            'stale-total': m.staleTotal,
            'transitions-total': m.transitionsTotal,
            'time-in-state-ms': Math.floor(m.timeInStateMs),
            'cooldown-remaining-ms': Math.floor(m.cooldownRemainingMs),
          };
        },
        manual(op, now, reading) {
          at(now, reading);
          breaker[op]();
          return transitions;
        },
        export(now, reading) {
          at(now, reading);
          return breaker.exportState();
        },
        import(bytes, elapsedMs, now, reading) {
          at(now, reading);
          breaker.importState(bytes, elapsedMs);
        },
        fleetApply(event, now, reading) {
          at(now, reading);
          const applied = breaker.fleetApply(event);
          return { applied, transitions };
        },
        fleetVotes(votes, now, reading) {
          at(now, reading);
          return breaker.fleetVotes(votes.map(([member, ageMs]) => ({ member, ageMs })));
        },
        fleetStore(reachable, leaseMs, now, reading) {
          at(now, reading);
          breaker.fleetStore({ reachable, leaseMs });
        },
        fleetAnnouncement() {
          const a = breaker.fleetTakeAnnouncement();
          // Whole ms, rounded down, as the native runner compares them.
          return a === null ? null : { kind: a.kind, 'remaining-ms': Math.floor(a.remainingMs) };
        },
        fleetStatus(now, reading) {
          at(now, reading);
          const s = breaker.fleetStatus();
          return {
            generation: s.generation,
            degraded: s.degraded,
            'lease-held': s.leaseHeld,
            'wants-lease': s.wantsLease,
            'stale-events': s.staleEvents,
          };
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
}
