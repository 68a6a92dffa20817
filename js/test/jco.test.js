// The component from component/ (WIT in wit/), transpiled to JS by jco (scripts/test.sh
// builds and transpiles it into test/.jco), runs every shared vector in Node with the same
// decisions as the native core and the wasm-bindgen package.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { configFields } from '../src/node.js';
import { jsMessage, loadVectors, optionOfField, optionsOf } from './helpers.js';
import { byReasonKeys, runVector } from './vectors-runner.js';
import { runRetryVector } from './retry-vector.js';

const BINDINGS = new URL('./.jco/tripgate.js', import.meta.url);
const MS = 1_000_000n;

/** JS package options (camelCase, ms) back to the WIT config (ns as bigint), by the core's field table. */
function witConfig(options) {
  const config = {};
  for (const [option, value] of Object.entries(options)) {
    const field = configFields.find((f) => f.option === option);
    const key = field.name.replace(/-([a-z])/g, (_, c) => c.toUpperCase()); // jco's camel case
    switch (field.kind) {
      case 'duration': config[key] = BigInt(value) * MS; break;
      case 'seed': config[key] = BigInt(value); break;
      case 'statuses': config[key] = Uint16Array.from(value); break;
      case 'grpc-codes': config[key] = Uint8Array.from(value); break;
      default: config[key] = value;
    }
  }
  return config;
}

function witOutcome(text) {
  const [tag, n] = text.split(':');
  return n === undefined ? { tag } : { tag, val: Number(n) };
}

/** A step's instant in ns: its `reading-ns` when it has one, else `at` in ms. */
const ns = (ms, reading) => reading ?? BigInt(ms) * MS;
const triples = (list) => list.map((t) => [t.from, t.to, t.reason]);
const wholeMs = (nanos) => Number(nanos / MS);
/** A WIT `by-reason` record (camel-case keys, bigint counts) by the core's reason names. */
const byReason = (counts) => Object.fromEntries(Object.entries(counts).map(
  ([key, count]) => [key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`), Number(count)]));

/** The WIT metrics record by the vectors' metric keys. */
function vectorMetrics(m) {
  return {
    state: m.state, epoch: Number(m.epoch), calls: m.window.calls, faults: m.window.faults,
    slow: m.window.slow, 'in-flight': m.inFlight, hung: m.hung, 'probes-out': m.probesOut,
    'admitted-total': Number(m.admittedTotal), 'rejected-open': Number(m.rejectedOpen),
    'rejected-probing': Number(m.rejectedProbing), 'rejected-isolated': Number(m.rejectedIsolated),
    'rejected-saturated': Number(m.rejectedSaturated),
    'rejected-probing-elsewhere': Number(m.rejectedProbingElsewhere),
    ...byReasonKeys('shadow-rejected', byReason(m.shadowRejected)), 'successes-total': Number(m.successesTotal),
    'faults-total': Number(m.faultsTotal), 'stale-total': Number(m.staleTotal),
    'transitions-total': Number(m.transitionsTotal), 'time-in-state-ms': wholeMs(m.timeInState),
    'cooldown-remaining-ms': wholeMs(m.cooldownRemaining),
  };
}

/**
 * The admission and outcome steps on a component breaker. Every permit is held in `held`
 * until the vector ends: a permit the GC finalizes is dropped, and a dropped permit
 * records `cancelled` (wit/breaker.wit).
 */
function hotPathSteps(breaker, held) {
  return {
    acquire(now, reading) {
      const { decision, transitions } = breaker.acquire(ns(now, reading));
      if (decision.tag === 'ok') {
        held.push(decision.val);
        const permit = decision.val;
        return {
          admitted: true, permit, probe: permit.isProbe(), shadow: permit.isShadow(), transitions: triples(transitions),
        };
      }
      const r = decision.val;
      return { admitted: false, reason: r.reason, retryAfterMs: wholeMs(r.retryAfter), transitions: triples(transitions) };
    },
    record(permit, outcome, now, reading, retryAfterMs) {
      const r = retryAfterMs === undefined
        ? breaker.recordOutcome(permit, witOutcome(outcome), ns(now, reading))
        : breaker.recordOutcomeAfter(permit, witOutcome(outcome), ns(retryAfterMs), ns(now, reading));
      return { class: r.class, slow: r.slow, stale: r.stale, transitions: triples(r.transitions) };
    },
  };
}

/** The reading, operator, export/import and reconfigure steps on a component breaker. */
function stateSteps(breaker) {
  return {
    state: (now, reading) => breaker.state(ns(now, reading)),
    metrics: (now, reading) => vectorMetrics(breaker.metrics(ns(now, reading))),
    manual: (op, now, reading) => triples(breaker[op](ns(now, reading))),
    export: (now, reading) => breaker.exportState(ns(now, reading)),
    import(bytes, elapsedMs, now, reading) {
      try {
        breaker.importState(bytes, ns(elapsedMs), ns(now, reading));
      } catch (error) {
        throw new Error(error.payload?.message ?? String(error));
      }
    },
    reconfigure(options, now, reading) {
      // A refusal is thrown with the WIT config-error as `payload`, as `create`'s is.
      const r = breaker.reconfigure(witConfig(options), ns(now, reading));
      return { windowKept: r.windowKept, transitions: triples(r.transitions) };
    },
  };
}

/** The fleet steps on a component breaker. */
function fleetSteps(breaker) {
  return {
    fleetApply({ generation, kind, remainingMs }, now, reading) {
      const r = breaker.fleetApply({ generation: BigInt(generation), kind, remaining: ns(remainingMs) }, ns(now, reading));
      return { applied: r.applied, transitions: triples(r.transitions) };
    },
    fleetVotes: (votes, now, reading) =>
      breaker.fleetVotes(votes.map(([member, ageMs]) => ({ member: BigInt(member), age: ns(ageMs) })), ns(now, reading)),
    fleetStore(reachable, leaseMs, now, reading) {
      breaker.fleetStore(reachable, leaseMs === null ? undefined : ns(leaseMs), ns(now, reading));
    },
    fleetAnnouncement() {
      const a = breaker.fleetTakeAnnouncement();
      return a === undefined ? null : { kind: a.kind, 'remaining-ms': wholeMs(a.remaining) };
    },
    fleetStatus(now, reading) {
      const s = breaker.fleetStatus(ns(now, reading));
      return {
        generation: Number(s.generation), degraded: s.degraded, 'lease-held': s.leaseHeld,
        'wants-lease': s.wantsLease, 'stale-events': Number(s.staleEvents),
      };
    },
  };
}

/** The shared vector runner's subject: the component under jco. */
function componentSubject(circuitBreaker) {
  return {
    create(options, nowMs) {
      const breaker = circuitBreaker.Breaker.create(witConfig(options), ns(nowMs));
      const held = [];
      return { ...hotPathSteps(breaker, held), ...stateSteps(breaker), ...fleetSteps(breaker) };
    },
    checkConfigError(error, want) {
      assert.equal(error.payload?.field, want.field, String(error));
      assert.ok(error.payload.message.includes(want.message), error.payload.message);
    },
  };
}

/** The package's retries options (test/retry-vector.js gives them) as the WIT retry-policy. */
function witRetryPolicy({ maxAttempts, baseDelayMs, maxDelayMs, budgetPercent, minRetriesPerSecond, seed }) {
  return {
    maxAttempts, baseDelay: ns(baseDelayMs), maxDelay: ns(maxDelayMs), budgetPercent, minRetriesPerSecond, seed: BigInt(seed),
  };
}

/**
 * The component's `retry-budget` resource in the shape test/retry-vector.js drives: a
 * "breaker" on the runner's clock whose `retries(options)` creates a budget, with
 * `deposit` and `next` (its waits from ns to ms, which the runner reads back to the ns).
 */
function componentRetries(circuitBreaker) {
  return class {
    #clock;

    constructor({ clock }) {
      this.#clock = clock;
    }

    retries(options) {
      const now = () => ns(this.#clock());
      const budget = circuitBreaker.RetryBudget.create(witRetryPolicy(options), now());
      return {
        deposit: () => budget.deposit(),
        next(attempt, outcomeClass, retryAfterMs) {
          const r = budget.next(attempt, outcomeClass, ns(retryAfterMs), now());
          return r.tag === 'retry' ? { retry: true, waitMs: Number(r.val) / 1e6 } : { retry: false, stop: r.val };
        },
      };
    }

    dispose() {}
  };
}

test('the jco-transpiled component exists (scripts/test.sh builds it)', () => {
  assert.ok(existsSync(BINDINGS), `${BINDINGS.pathname} is missing: run scripts/test.sh`);
});

if (existsSync(BINDINGS)) {
  const { circuitBreaker } = await import(BINDINGS);
  const subject = componentSubject(circuitBreaker);
  for (const { file, vector } of loadVectors()) {
    test(`component under jco: vector ${file}`, () => {
      runVector(vector, subject, { optionsOf, optionOfField, jsMessage });
    });
  }

  // The retry vector through the WIT's retry-budget resource (create, deposit, next).
  test('component under jco: the retry vector on the retry-budget resource', () => {
    const vector = JSON.parse(readFileSync(new URL('../../tests/vectors/retry/retry.json', import.meta.url), 'utf8'));
    const { ran, steps, failed } = runRetryVector(vector, componentRetries(circuitBreaker));
    assert.deepEqual(failed, []);
    assert.equal(ran, vector.cases.length);
    assert.equal(steps, vector.cases.reduce((n, c) => n + c.steps.length, 0));
  });

  test('component under jco: a bad retry policy is refused, naming its field', () => {
    const policy = witRetryPolicy({
      maxAttempts: 3, baseDelayMs: 50, maxDelayMs: 2_000, budgetPercent: 20, minRetriesPerSecond: 10, seed: 0,
    });
    assert.throws(
      () => circuitBreaker.RetryBudget.create({ ...policy, maxAttempts: 0 }, 0n),
      (error) => error.payload === 'max-attempts must be between 1 and 10',
    );
    assert.throws(
      () => circuitBreaker.RetryBudget.create({ ...policy, maxDelay: 1n }, 0n),
      (error) => error.payload === 'max-delay must be >= base-delay',
    );
  });
}

if (existsSync(BINDINGS)) {
  const { circuitBreaker } = await import(BINDINGS);

  // The keyed hot path (wit/breaker.wit: acquire-keyed, record-keyed): a variant, records
  // and flags; transitions flagged, then read with last-transitions.
  test('component under jco: the keyed hot path trips, rejects and reports by flags', () => {
    const breaker = circuitBreaker.Breaker.create({ failureThreshold: 2, minCalls: 2, cooldown: 1000n * MS }, 0n);
    const key = breaker.key();
    const fault = { tag: 'status', val: 503 };
    let recorded;
    const firstEpoch = breaker.metrics(0n).epoch;
    for (const now of [1n * MS, 2n * MS]) {
      const admission = circuitBreaker.acquireKeyed(key, now);
      assert.equal(admission.tag, 'admitted', `admitted at ${now}`);
      assert.equal(typeof admission.val.ticket, 'bigint');
      assert.equal(admission.val.epoch, firstEpoch);
      assert.deepEqual(admission.val.notes, { probe: false, transitioned: false, shadow: false });
      recorded = circuitBreaker.recordKeyed(key, admission.val.ticket, fault, now);
      assert.equal(recorded.class, 'fault', 'a 503 is a fault');
      assert.equal(recorded.notes.stale, false);
    }
    assert.equal(recorded.notes.transitioned, true, 'the second fault caused a transition');
    assert.deepEqual(
      breaker.lastTransitions().map((t) => [t.from, t.to, t.reason]),
      [['closed', 'open', 'failure-threshold']],
    );
    const rejected = circuitBreaker.acquireKeyed(key, 3n * MS);
    assert.equal(rejected.tag, 'rejected', 'open: rejected');
    assert.deepEqual(
      [rejected.val.rejection.state, rejected.val.rejection.reason, rejected.val.rejection.retryAfter, rejected.val.transitioned],
      ['open', 'open', 999n * MS, false],
    );
    assert.equal(breaker.state(3n * MS), 'open');

    // Past the cooldown, a probe; an invalid status is refused and leaves it out.
    const probe = circuitBreaker.acquireKeyed(key, 1003n * MS);
    assert.equal(probe.tag, 'admitted');
    assert.deepEqual(probe.val.notes, { probe: true, transitioned: true, shadow: false }, 'open to half-open on this call');
    assert.equal(probe.val.epoch, breaker.metrics(1003n * MS).epoch, 'admitted in the half-open epoch');
    assert.ok(probe.val.epoch > firstEpoch, 'two transitions since the first admission');
    const { ticket } = probe.val;
    assert.throws(
      () => circuitBreaker.recordKeyed(key, ticket, { tag: 'status', val: 700 }, 1003n * MS),
      (error) => error.payload?.tag === 'invalid-status' && error.payload.val === 700,
    );
    const judged = circuitBreaker.recordKeyed(key, ticket, { tag: 'success' }, 1003n * MS);
    assert.deepEqual([judged.class, judged.notes.stale], ['success', false]);
    const again = circuitBreaker.recordKeyed(key, ticket, { tag: 'success' }, 1003n * MS);
    assert.equal(again.notes.stale, true, 'a ticket recorded twice is stale');
  });

  // Shadow mode and a stay-away on the keyed hot path: a would-be rejection is admitted
  // with the `shadow` note, and record-keyed-after holds the breaker open as asked.
  test('component under jco: the keyed hot path notes shadow permits and records a stay-away', () => {
    const config = { failureThreshold: 2, minCalls: 2, cooldown: 1000n * MS, maxCooldown: 60_000n * MS };
    const breaker = circuitBreaker.Breaker.create({ ...config, shadow: true }, 0n);
    const key = breaker.key();
    for (const now of [1n * MS, 2n * MS]) {
      const { ticket, notes } = circuitBreaker.acquireKeyed(key, now).val;
      assert.equal(notes.shadow, false, 'closed: admitted by the breaker itself');
      circuitBreaker.recordKeyedAfter(key, ticket, { tag: 'status', val: 503 }, 30_000n * MS, now);
    }
    assert.equal(breaker.state(3n * MS), 'open');
    const shadow = circuitBreaker.acquireKeyed(key, 3n * MS);
    assert.equal(shadow.tag, 'admitted', 'shadow mode admits every call');
    assert.deepEqual(shadow.val.notes, { probe: false, transitioned: false, shadow: true });
    assert.equal(circuitBreaker.recordKeyed(key, shadow.val.ticket, { tag: 'status', val: 503 }, 3n * MS).notes.stale, false);
    assert.equal(breaker.metrics(3n * MS).shadowRejected.open, 1n);
    assert.equal(breaker.state(30_001n * MS), 'open', 'the 30 s asked for, past the 1 s cooldown');
    assert.equal(breaker.state(30_002n * MS), 'half-open');
  });

  // restore (create, import-state and key in one call), as a per-request instance uses it.
  test('component under jco: restore brings back an exported state with its key', () => {
    const config = { failureThreshold: 2, minCalls: 2, cooldown: 1000n * MS };
    const tripped = circuitBreaker.Breaker.create(config, 0n);
    for (const now of [1n * MS, 2n * MS]) {
      const { ticket } = circuitBreaker.acquireKeyed(tripped.key(), now).val;
      circuitBreaker.recordKeyed(tripped.key(), ticket, { tag: 'timeout' }, now);
    }
    const bytes = tripped.exportState(3n * MS);

    const restored = circuitBreaker.Breaker.restore(config, { bytes, elapsed: 100n * MS }, 0n);
    assert.deepEqual(restored.imported, { tag: 'ok', val: undefined });
    assert.equal(restored.key, restored.breaker.key());
    const rejected = circuitBreaker.acquireKeyed(restored.key, 0n);
    assert.equal(rejected.tag, 'rejected');
    assert.equal(rejected.val.rejection.retryAfter, 899n * MS, 'tripped at 2 ms, exported at 3, 100 ms since');

    const fresh = circuitBreaker.Breaker.restore(config, undefined, 0n);
    assert.deepEqual(fresh.imported, { tag: 'ok', val: undefined });
    assert.equal(fresh.breaker.state(0n), 'closed');

    const damaged = Uint8Array.from(bytes);
    damaged[20] ^= 0x40;
    const refused = circuitBreaker.Breaker.restore(config, { bytes: damaged, elapsed: 0n }, 0n);
    assert.equal(refused.imported.tag, 'err');
    assert.equal(refused.imported.val.kind, 'checksum');
    assert.equal(refused.breaker.state(0n), 'closed', 'a refused snapshot leaves a fresh breaker');
    assert.equal(circuitBreaker.acquireKeyed(refused.key, 0n).tag, 'admitted');

    assert.throws(
      () => circuitBreaker.Breaker.restore({ failureThreshold: 0 }, { bytes, elapsed: 0n }, 0n),
      (error) => error.payload?.field === 'failure-threshold',
    );
  });

  test('component under jco: a key that names no breaker is an answer, not a trap', () => {
    const breaker = circuitBreaker.Breaker.create({}, 0n);
    const none = 0xffffffff;
    assert.deepEqual(circuitBreaker.acquireKeyed(none, 1n), { tag: 'unknown-key' });
    assert.throws(
      () => circuitBreaker.recordKeyed(none, 0n, { tag: 'success' }, 1n),
      (error) => error.payload?.tag === 'unknown-key',
    );
    // A dropped breaker's key names nothing either (the generation check, not NO_KEY).
    const gone = circuitBreaker.Breaker.create({}, 0n);
    const goneKey = gone.key();
    const goneTicket = circuitBreaker.acquireKeyed(goneKey, 1n).val.ticket;
    gone[Symbol.dispose ?? Symbol.for('dispose')]();
    assert.equal(circuitBreaker.acquireKeyed(goneKey, 2n).tag, 'unknown-key');
    // The instance still answers for a real key afterwards, and the dead breaker's
    // ticket is stale there.
    assert.equal(circuitBreaker.acquireKeyed(breaker.key(), 2n).tag, 'admitted');
    assert.equal(circuitBreaker.recordKeyed(breaker.key(), goneTicket, { tag: 'success' }, 2n).notes.stale, true);
  });
}
