// Runs one scenario vector (format: tests/vectors/README.md) against any host that looks
// like a breaker to `makeSubject`. The wasm-bindgen package and the jco-transpiled
// component share it, so "same decisions" means the same checks.
import assert from 'node:assert/strict';
import { FakeClock, jsMessage, optionOfField } from './helpers.js';

/**
 * A subject: { create(options, nowMs) -> instance | throws, and per instance:
 *   acquire(now, reading) -> { admitted, permit, probe, shadow, reason, retryAfterMs, transitions }
 *   record(permit, outcome, now, reading, retryAfterMs) -> { class, slow, stale, transitions } | throws
 *   (`retryAfterMs`: the step's `retry-after-ms`, the stay-away its answer asked for, or
 *   undefined),
 *   state(now, reading), metrics(now, reading) -> vector-keyed object,
 *   manual(op, now, reading) -> transitions, export(now, reading) -> Uint8Array,
 *   import(bytes, elapsedMs, now, reading) (throws on refusal),
 *   reconfigure(options, now, reading) -> { windowKept, transitions } | throws as create
 *   does (checked by checkConfigError),
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
  const run = new Run(subject, options, optionsOf, { optionOfField, jsMessage });
  let last = 0;
  vector.steps.forEach((step, index) => {
    const where = `step ${index} ${JSON.stringify(step)}`;
    if (step.at < last && !step['clock-steps-back']) assert.fail(`${where}: time goes backwards`);
    last = Math.max(last, step.at);
    run.step(step, where);
  });
}

/** One vector's run: its subject's breaker, and what earlier steps left for later ones. */
class Run {
  constructor(subject, options, optionsOf, names) {
    this.subject = subject;
    this.options = options;
    this.optionsOf = optionsOf;
    /** `{ optionOfField, jsMessage }`, for checkConfigError. */
    this.names = names;
    this.breaker = subject.create(options, 0);
    /** Whether the config in force has shadow mode on. */
    this.shadow = shadowOn(options);
    this.permits = new Map();
    this.snapshots = new Map();
  }

  step(step, where) {
    const at = step.at;
    const reading = step['reading-ns'] === undefined ? undefined : BigInt(step['reading-ns']);
    const expect = step.expect ?? {};
    const wantTransitions = expect.transitions ?? [];
    const s = { step, where, at, reading, expect, wantTransitions };
    const breaker = this.breaker;
    switch (step.op) {
      case 'acquire':
        this.acquire(s);
        break;
      case 'record':
        this.record(s);
        break;
      case 'state':
        break;
      case 'metrics':
        checkFields('metrics', breaker.metrics(at, reading), expect.metrics, where);
        break;
      case 'isolate':
      case 'release':
      case 'disable':
      case 'reset':
        assert.deepEqual(breaker.manual(step.op, at, reading), wantTransitions, `${where}: transitions`);
        break;
      case 'export':
        this.snapshots.set(step.snapshot, breaker.export(at, reading));
        break;
      case 'import':
        this.import(s);
        break;
      case 'reconfigure':
        this.reconfigure(s);
        break;
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
      case 'fleet-status':
        checkFields('fleet', breaker.fleetStatus(at, reading), expect.fleet, where);
        break;
      default:
        assert.fail(`${where}: unknown op ${step.op}`);
    }
    if ('state' in expect) assert.equal(this.breaker.state(at, reading), expect.state, `${where}: state`);
  }

  /** `count` acquisitions (one unless the step says): each decision checked when there is
   * one, the tallies when there are several. */
  acquire({ step, where, at, reading, expect, wantTransitions }) {
    const count = step.count ?? 1;
    let admitted = 0;
    let rejected = 0;
    const all = [];
    for (let i = 0; i < count; i++) {
      const d = this.breaker.acquire(at, reading);
      all.push(...d.transitions);
      if (d.admitted) {
        if (count === 1) {
          if ('admitted' in expect) assert.equal(true, expect.admitted, `${where}: admitted`);
          if ('probe' in expect) assert.equal(d.probe, expect.probe, `${where}: probe`);
          if ('shadow' in expect) assert.equal(d.shadow, expect.shadow, `${where}: shadow`);
        }
        // Only a breaker in shadow mode admits with a shadow permit, and never a probe.
        if (d.shadow) {
          assert.equal(this.shadow, true, `${where}: a shadow permit from a breaker not in shadow mode`);
          assert.equal(d.probe, false, `${where}: a shadow permit is no probe`);
        }
        if (step.permit !== undefined) {
          this.permits.set(count === 1 ? step.permit : `${step.permit}.${admitted}`, d.permit);
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
  }

  record({ step, where, at, reading, expect, wantTransitions }) {
    assert.ok(this.permits.has(step.permit), `${where}: no permit named ${step.permit}`);
    const permit = this.permits.get(step.permit);
    this.permits.delete(step.permit);
    let report;
    try {
      report = this.breaker.record(permit, step.outcome, at, reading, step['retry-after-ms']);
    } catch (error) {
      assert.ok(expect.error, `${where}: record failed unexpectedly: ${error.message}`);
      assert.ok(error.message, `${where}: record error has no message`);
      return;
    }
    assert.ok(!expect.error, `${where}: record succeeded; expected an error`);
    if ('class' in expect) assert.equal(report.class, expect.class, `${where}: class`);
    if ('slow' in expect) assert.equal(report.slow, expect.slow, `${where}: slow`);
    if ('stale' in expect) assert.equal(report.stale, expect.stale, `${where}: stale`);
    assert.deepEqual(report.transitions, wantTransitions, `${where}: transitions`);
  }

  /** Imports a snapshot an earlier step exported, damaged if the step says, into this
   * breaker or (`fresh`) a new one. */
  import({ step, where, at, reading, expect }) {
    assert.ok(this.snapshots.has(step.snapshot), `${where}: no snapshot ${step.snapshot}`);
    const bytes = Uint8Array.from(this.snapshots.get(step.snapshot));
    let damaged = bytes;
    if (step.damage === 'truncate') damaged = bytes.slice(0, bytes.length - 1);
    else if (step.damage === 'flip') damaged[bytes.length >> 1] = ~damaged[bytes.length >> 1] & 0xff;
    else if (step.damage !== undefined) assert.fail(`${where}: unknown damage ${step.damage}`);
    if (step.fresh) {
      // The importer's own configuration, when the step gives one.
      const options = step.config ? this.optionsOf(step.config) : this.options;
      this.breaker = this.subject.create(options, at);
      this.shadow = shadowOn(options);
      this.permits.clear();
    }
    let error = null;
    try {
      this.breaker.import(damaged, step['elapsed-ms'] ?? 0, at, reading);
    } catch (e) {
      error = e;
    }
    if (expect.error) {
      assert.ok(error, `${where}: import succeeded; expected an error`);
      assert.ok(error.message, `${where}: import error has no message`);
    } else {
      assert.equal(error, null, `${where}: import failed: ${error?.message}`);
    }
  }

  /** Puts the step's whole config in force (absent fields take defaults, as in a vector's
   * own `config`): the config error it expects, else window-kept and the transitions. The
   * config put in force is the one a later `fresh` import makes its breaker with, as in
   * the Rust runner. */
  reconfigure({ step, where, at, reading, expect, wantTransitions }) {
    const options = this.optionsOf(step.config ?? {});
    const want = expect['config-error'];
    let result;
    try {
      result = this.breaker.reconfigure(options, at, reading);
    } catch (error) {
      if (error instanceof assert.AssertionError) throw error;
      assert.ok(want, `${where}: config refused: ${error.message}`);
      this.subject.checkConfigError(error, want, this.names);
      return;
    }
    assert.ok(!want, `${where}: config was accepted; expected an error`);
    if ('window-kept' in expect) assert.equal(result.windowKept, expect['window-kept'], `${where}: window-kept`);
    this.options = options;
    this.shadow = shadowOn(options);
    assert.deepEqual(result.transitions, wantTransitions, `${where}: transitions`);
  }
}

/** Whether options (as `optionsOf` makes them) turn shadow mode on. */
function shadowOn(options) {
  return options[optionOfField('shadow')] === true;
}

/**
 * The reject reasons' metric keys of the vectors (`rejected-open`, ...,
 * `shadow-rejected-probing-elsewhere`) from a per-reason object of counts, as the package's
 * metrics give them (`rejectedTotal`, `shadowRejectedTotal`).
 */
export function byReasonKeys(prefix, counts) {
  const keys = {};
  for (const [reason, count] of Object.entries(counts)) keys[`${prefix}-${reason}`] = count;
  return keys;
}

/** Each field `want` names against `got`'s, named `${what}.${field}` in a failure. */
function checkFields(what, got, want, where) {
  for (const [key, value] of Object.entries(want ?? {})) {
    assert.ok(key in got, `${where}: ${what} has no field ${key}`);
    assert.equal(got[key], value, `${where}: ${what}.${key}`);
  }
}

/** A CircuitBreaker class (from either entry point) seen through the runner's subject interface. */
export function packageSubject(CircuitBreaker) {
  return {
    create(options, nowMs) {
      return new PackageBreaker(CircuitBreaker, options, nowMs);
    },
    checkConfigError(error, want) {
      assert.ok(error instanceof RangeError, `expected a RangeError, got ${error}`);
      assert.equal(error.option, optionOfField(want.field));
      assert.ok(error.message.includes(jsMessage(want.message)),
        `${JSON.stringify(error.message)} should contain ${JSON.stringify(jsMessage(want.message))}`);
    },
  };
}

/** One package breaker on a fake clock, with the transitions each call emitted. */
class PackageBreaker {
  constructor(CircuitBreaker, options, nowMs) {
    this.CircuitBreaker = CircuitBreaker;
    this.clock = new FakeClock();
    this.clock.now = nowMs;
    this.breaker = new CircuitBreaker({ ...options, clock: this.clock.read });
    this.transitions = [];
    this.breaker.on('transition', (t) => this.transitions.push([t.from, t.to, t.reason]));
  }

  /** Sets the clock for one call: a clock in milliseconds, so a reading in nanoseconds
   * arrives divided by 10^6. */
  at(ms, reading) {
    this.clock.now = reading === undefined ? ms : Number(reading) / 1e6;
    this.transitions = [];
  }

  acquire(now, reading) {
    this.at(now, reading);
    const permit = this.breaker.acquire();
    const transitions = this.transitions;
    if (permit >= 0) {
      const probe = this.CircuitBreaker.isProbe(permit);
      return { admitted: true, permit, probe, shadow: this.CircuitBreaker.isShadow(permit), transitions };
    }
    const rejection = this.breaker.lastRejection;
    // Vectors compare whole milliseconds (jittered cooldowns are not whole), as the
    // native runner does.
    return { admitted: false, reason: rejection.reason, retryAfterMs: Math.floor(rejection.retryAfterMs), transitions };
  }

  record(permit, outcome, now, reading, retryAfterMs) {
    this.at(now, reading);
    const cls = retryAfterMs === undefined
      ? this.breaker.record(permit, outcome)
      : this.breaker.record(permit, outcome, { retryAfterMs });
    const report = this.breaker.lastRecord;
    assert.equal(cls, report.class);
    return { ...report, transitions: this.transitions };
  }

  state(now, reading) {
    this.at(now, reading);
    return this.breaker.state;
  }

  metrics(now, reading) {
    this.at(now, reading);
    const m = this.breaker.metrics();
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
      ...byReasonKeys('rejected', m.rejectedTotal),
      ...byReasonKeys('shadow-rejected', m.shadowRejectedTotal),
      'successes-total': m.successesTotal,
      'faults-total': m.faultsTotal,
      'stale-total': m.staleTotal,
      'transitions-total': m.transitionsTotal,
      'time-in-state-ms': Math.floor(m.timeInStateMs),
      'cooldown-remaining-ms': Math.floor(m.cooldownRemainingMs),
    };
  }

  manual(op, now, reading) {
    this.at(now, reading);
    this.breaker[op]();
    return this.transitions;
  }

  export(now, reading) {
    this.at(now, reading);
    return this.breaker.exportState();
  }

  import(bytes, elapsedMs, now, reading) {
    this.at(now, reading);
    this.breaker.importState(bytes, elapsedMs);
  }

  /** With the breaker's own clock given again, as a caller passing its creation options
   * with changes does. The transitions returned are the ones the listeners got. */
  reconfigure(options, now, reading) {
    this.at(now, reading);
    const { windowKept, transitions } = this.breaker.reconfigure({ ...options, clock: this.clock.read });
    assert.deepEqual(transitions.map((t) => [t.from, t.to, t.reason]), this.transitions, 'returned = emitted');
    return { windowKept, transitions: this.transitions };
  }

  fleetApply(event, now, reading) {
    this.at(now, reading);
    const applied = this.breaker.fleetApply(event);
    return { applied, transitions: this.transitions };
  }

  fleetVotes(votes, now, reading) {
    this.at(now, reading);
    return this.breaker.fleetVotes(votes.map(([member, ageMs]) => ({ member, ageMs })));
  }

  fleetStore(reachable, leaseMs, now, reading) {
    this.at(now, reading);
    this.breaker.fleetStore({ reachable, leaseMs });
  }

  fleetAnnouncement() {
    const a = this.breaker.fleetTakeAnnouncement();
    // Whole ms, rounded down, as the native runner compares them.
    return a === null ? null : { kind: a.kind, 'remaining-ms': Math.floor(a.remainingMs) };
  }

  fleetStatus(now, reading) {
    this.at(now, reading);
    const s = this.breaker.fleetStatus();
    return {
      generation: s.generation,
      degraded: s.degraded,
      'lease-held': s.leaseHeld,
      'wants-lease': s.wantsLease,
      'stale-events': s.staleEvents,
    };
  }
}
