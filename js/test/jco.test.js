// The component from component/ (WIT in wit/), transpiled to JS by jco (scripts/test.sh
// builds and transpiles it into test/.jco), runs every shared vector in Node with the same
// decisions as the native core and the wasm-bindgen package.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { jsMessage, loadVectors, optionOfField, optionsOf } from './helpers.js';
import { runVector } from './vectors-runner.js';

const BINDINGS = new URL('./.jco/tripgate.js', import.meta.url);
const MS = 1_000_000n;

/** JS package options (camelCase, ms) back to the WIT config (ns as bigint). */
function witConfig(options) {
  const config = {};
  for (const [key, value] of Object.entries(options)) {
    if (key.endsWith('Ms')) config[key.slice(0, -2)] = BigInt(value) * MS;
    else if (key === 'jitterSeed') config.jitterSeed = BigInt(value);
    else if (key === 'faultStatuses') config.faultStatuses = Uint16Array.from(value);
    else if (key === 'faultGrpcCodes') config.faultGrpcCodes = Uint8Array.from(value);
    else config[key] = value;
  }
  return config;
}

function witOutcome(text) {
  const [tag, n] = text.split(':');
  return n === undefined ? { tag } : { tag, val: Number(n) };
}

const ns = (ms) => BigInt(ms) * MS;
const triples = (list) => list.map((t) => [t.from, t.to, t.reason]);
const wholeMs = (nanos) => Number(nanos / MS);

function componentSubject(circuitBreaker) {
  return {
    create(options, nowMs) {
      const breaker = circuitBreaker.Breaker.create(witConfig(options), ns(nowMs));
      // Hold every permit until the vector ends: a permit the GC finalizes is dropped,
      // and a dropped permit records `cancelled` (wit/breaker.wit).
      const held = [];
      return {
        acquire(now) {
          const { decision, transitions } = breaker.acquire(ns(now));
          if (decision.tag === 'ok') {
            held.push(decision.val);
            return { admitted: true, permit: decision.val, probe: decision.val.isProbe(), transitions: triples(transitions) };
          }
          const r = decision.val;
          return { admitted: false, reason: r.reason, retryAfterMs: wholeMs(r.retryAfter), transitions: triples(transitions) };
        },
        record(permit, outcome, now) {
          const r = breaker.recordOutcome(permit, witOutcome(outcome), ns(now));
          return { class: r.class, slow: r.slow, stale: r.stale, transitions: triples(r.transitions) };
        },
        state: (now) => breaker.state(ns(now)),
        metrics(now) {
          const m = breaker.metrics(ns(now));
          return {
            state: m.state, epoch: Number(m.epoch), calls: m.window.calls, faults: m.window.faults,
            slow: m.window.slow, 'in-flight': m.inFlight, hung: m.hung, 'probes-out': m.probesOut,
            'admitted-total': Number(m.admittedTotal), 'rejected-open': Number(m.rejectedOpen),
            'rejected-probing': Number(m.rejectedProbing), 'rejected-isolated': Number(m.rejectedIsolated),
            'rejected-saturated': Number(m.rejectedSaturated), 'successes-total': Number(m.successesTotal),
            'faults-total': Number(m.faultsTotal), 'stale-total': Number(m.staleTotal),
            'transitions-total': Number(m.transitionsTotal), 'time-in-state-ms': wholeMs(m.timeInState),
            'cooldown-remaining-ms': wholeMs(m.cooldownRemaining),
          };
        },
        manual: (op, now) => triples(breaker[op](ns(now))),
        export: (now) => breaker.exportState(ns(now)),
        import(bytes, elapsedMs, now) {
          try {
            breaker.importState(bytes, ns(elapsedMs), ns(now));
          } catch (error) {
            throw new Error(error.payload?.message ?? String(error));
          }
        },
      };
    },
    checkConfigError(error, want) {
      assert.equal(error.payload?.field, want.field, String(error));
      assert.ok(error.payload.message.includes(want.message), error.payload.message);
    },
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
}
