// Property tests (fast-check) over what callers hand the package: constructor options,
// outcomes, and whole `execute` calls with hostile functions, results, signals, fallbacks,
// clocks and disposal. The normal run does a few hundred cases per property and replays
// every counterexample found so far (`examples`, from fuzz-regressions.js); a long run:
//   FUZZ_RUNS=200000 node --test test/fuzz.test.js
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { CircuitBreaker, classifyError, classifyResult } from '../src/node.js';
import { executeExamples, optionExamples, outcomeExamples, permitExamples } from './fuzz-regressions.js';
import { HOSTILE_KINDS, Hostile, materialize } from './hostile.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 200);
const SEED = process.env.FUZZ_SEED === undefined ? undefined : Number(process.env.FUZZ_SEED);
const settings = (examples, runs = RUNS) => ({ numRuns: runs, seed: SEED, examples, includeErrorInReport: true });

const OPTION_CODES = new Set(['ERR_INVALID_ARG_TYPE', 'ERR_OUT_OF_RANGE']);

/** Values that have broken parsers before: edges of every numeric rule, odd types. */
const edgeNumber = fc.constantFrom(
  0, -0, 1, -1, 0.5, 1.5, 99, 100, 101, 599, 600, 255, 256, 1023, 1024, 1025, 65_535, 65_536,
  2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 53, 2 ** 53 + 2, 2 ** 63, 2 ** 64, 2 ** 64 - 2 ** 11,
  1e300, -1e300, Number.MAX_VALUE, Number.MIN_VALUE, Number.EPSILON, NaN, Infinity, -Infinity,
  9_223_372_036_854.775, 9_223_372_036_854.773,
);

const hostile = fc.constantFrom(...HOSTILE_KINDS).map((kind) => new Hostile(kind));

const anyValue = fc.oneof(
  fc.anything({ withBigInt: true, withNullPrototype: true, withBoxedValues: true, withMap: true, withSet: true,
    withTypedArray: true, withSparseArray: true, withObjectString: true }),
  edgeNumber, hostile, fc.constant(Symbol('s')), fc.bigInt(),
  fc.record({ status: fc.oneof(edgeNumber, fc.string(), fc.integer()) }),
  fc.record({ grpc: fc.oneof(edgeNumber, fc.integer(), fc.string()) }),
  fc.stringMatching(/^(status|grpc):\d{0,4}$/),
  fc.constantFrom('success', 'timeout', 'connection-error', 'failure', 'cancelled', 'ignored', 'status', 'grpc', ''),
);

const OPTION_NAMES = [
  'failureThreshold', 'minCalls', 'failureRate', 'slowCallRate', 'slowCallDurationMs', 'windowMs', 'buckets',
  'windowCalls', 'cooldownMs', 'backoffFactor', 'maxCooldownMs', 'jitterPercent', 'jitterSeed', 'maxInFlight',
  'halfOpenMaxProbes', 'halfOpenRequiredSuccesses', 'halfOpenSuccessRate', 'probeTimeoutMs', 'faultStatuses',
  'faultGrpcCodes', 'timeoutMs', 'clock', 'shadow',
];

/** A clock for the options: valid, odd, or hostile. */
const clockArb = fc.oneof(
  fc.constant(() => 0),
  anyValue.map((v) => () => v),
  fc.constant(() => {
    throw new Error('clock');
  }),
  anyValue,
);

const optionValue = (name) => (name === 'clock' ? clockArb : fc.oneof(
  edgeNumber, fc.integer(), fc.double(), anyValue, fc.boolean(),
  fc.array(fc.oneof(fc.integer({ min: -5, max: 700 }), edgeNumber, anyValue), { maxLength: 5 }),
));

/** Options objects of own properties, known names and not, with any values. */
const optionsArb = fc.uniqueArray(fc.constantFrom(...OPTION_NAMES, 'cooldown', 'constructor', '__proto__', 'toString'),
  { maxLength: 6 }).chain((names) => fc.tuple(...names.map(optionValue)).map((values) => {
  const options = {};
  names.forEach((name, i) => Object.defineProperty(options, name, { value: values[i], enumerable: true, configurable: true, writable: true }));
  return options;
}));

function checkOptionError(error) {
  assert.ok(error instanceof TypeError || error instanceof RangeError, `not a Type/RangeError: ${error}`);
  assert.ok(OPTION_CODES.has(error.code), `code ${error.code}: ${error.message}`);
  assert.equal(typeof error.option, 'string', error.message);
  assert.ok(error.message.length > 0);
}

describe('property: constructor options', () => {
  test('any options: a breaker, or a TypeError/RangeError naming the option', () => {
    fc.assert(fc.property(fc.oneof({ weight: 9, arbitrary: optionsArb }, { weight: 1, arbitrary: anyValue }), (generated) => {
      const options = materialize(generated);
      let breaker;
      try {
        breaker = new CircuitBreaker(options);
      } catch (error) {
        checkOptionError(error);
        return;
      }
      // A breaker that was built works, whatever its clock does later.
      const permit = breaker.acquire();
      if (permit >= 0) breaker.record(permit, 'success');
      assert.ok(typeof breaker.state === 'string');
      breaker.metrics();
      breaker.dispose();
    }), settings(optionExamples));
  });
});

describe('property: outcomes', () => {
  test('record: a class, or a TypeError/RangeError that changes nothing', () => {
    const breaker = new CircuitBreaker({ failureThreshold: 1_000_000, clock: () => 0 });
    fc.assert(fc.property(anyValue, (generated) => {
      const outcome = materialize(generated);
      const permit = breaker.acquire();
      const before = breaker.metrics();
      let cls;
      try {
        cls = breaker.record(permit, outcome);
      } catch (error) {
        assert.ok(error instanceof TypeError || error instanceof RangeError, `${error}`);
        assert.ok(!/primitive value|Cannot read prop|is not a function/.test(error.message), error.message);
        assert.deepEqual(breaker.metrics(), before, 'a refused outcome changes nothing');
        breaker.record(permit, 'ignored');
        return;
      }
      assert.ok(['success', 'fault', 'neutral'].includes(cls), String(cls));
      assert.equal(breaker.outstandingPermits, 0);
    }), settings(outcomeExamples.map((v) => [v])));
  });

  test('classifyResult and classifyError never throw, and record takes what they return', () => {
    const breaker = new CircuitBreaker({ failureThreshold: 1_000_000, clock: () => 0 });
    fc.assert(fc.property(anyValue, (generated) => {
      const value = materialize(generated);
      for (const outcome of [classifyResult(value), classifyError(value)]) {
        breaker.record(breaker.acquire(), outcome);
      }
      assert.equal(breaker.outstandingPermits, 0);
    }), settings(outcomeExamples.map((v) => [v])));
  });
});

/** One step of the two-step API, on a fake clock that may jump or misbehave. */
const opArb = fc.oneof(
  { weight: 5, arbitrary: fc.record({ op: fc.constant('acquire') }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('record'), pick: fc.nat(), outcome: fc.constantFrom(200, 404, 503, 'timeout', 'cancelled') }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('record-again'), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('clock'), by: fc.oneof(fc.nat(20_000), fc.double({ min: 0, max: 5, noNaN: true }), anyValue) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constantFrom('isolate', 'release', 'disable', 'reset', 'metrics', 'export-import') }) },
);

describe('property: the permit table', () => {
  test('numbers out are unique, a first record of a permit out counts, a second is stale (in shadow mode too)', () => {
    fc.assert(fc.property(fc.array(opArb, { maxLength: 120 }), fc.integer({ min: 1, max: 4 }), fc.boolean(), (ops, probes, shadow) => {
      let now = 0;
      let reading = 0;
      const clock = () => reading;
      const breaker = new CircuitBreaker({ clock, cooldownMs: 1_000, probeTimeoutMs: 500, halfOpenMaxProbes: probes,
        failureThreshold: 3, minCalls: 3, shadow });
      let epoch = 0;
      const out = new Map(); // permit -> epoch it was issued in
      const spent = [];
      const currentEpoch = () => {
        reading = now;
        return breaker.metrics().epoch;
      };
      for (const step of ops) {
        reading = now;
        switch (step.op) {
          case 'acquire': {
            const permit = breaker.acquire();
            if (permit >= 0) {
              assert.ok(!out.has(permit), `permit ${permit} handed out while still out`);
              assert.ok(shadow || !CircuitBreaker.isShadow(permit), `shadow permit ${permit} with shadow mode off`);
              out.set(permit, currentEpoch());
            } else {
              assert.ok(!shadow, `shadow mode turned a call away (${permit})`);
            }
            break;
          }
          case 'record': {
            if (out.size === 0) break;
            const permits = [...out.keys()];
            const permit = permits[step.pick % permits.length];
            const issued = out.get(permit);
            epoch = currentEpoch();
            breaker.record(permit, step.outcome);
            out.delete(permit);
            spent.push(permit);
            if (issued === epoch) assert.equal(breaker.lastRecord.stale, false, `permit ${permit} of the current epoch`);
            break;
          }
          case 'record-again': {
            if (spent.length === 0) break;
            const permit = spent[step.pick % spent.length];
            if (out.has(permit)) break; // handed out again since: not a duplicate any more
            breaker.record(permit, 503);
            assert.equal(breaker.lastRecord.stale, true, `second record of ${permit}`);
            break;
          }
          case 'clock': {
            if (typeof step.by === 'number' && Number.isFinite(step.by) && step.by >= 0) {
              now += step.by;
              reading = now;
            } else {
              reading = materialize(step.by); // a bad reading: not observed
            }
            const permit = breaker.acquire();
            if (permit >= 0) {
              assert.ok(!out.has(permit), `permit ${permit} handed out while still out`);
              out.set(permit, currentEpoch());
            } else {
              assert.ok(!shadow, `shadow mode turned a call away (${permit})`);
            }
            break;
          }
          case 'export-import':
            breaker.importState(breaker.exportState());
            break;
          case 'metrics':
            breaker.metrics();
            break;
          default:
            breaker[step.op]();
        }
      }
      reading = now;
      assert.ok(breaker.outstandingPermits <= out.size, `${breaker.outstandingPermits} held, ${out.size} out`);
      breaker.dispose();
    }), settings(permitExamples));
  });
});

/** How `fn` behaves in a generated `execute` call. */
const behaviour = fc.oneof(
  fc.record({ kind: fc.constantFrom('resolve', 'reject', 'throw', 'return'), value: anyValue, later: fc.boolean() }),
  fc.record({ kind: fc.constant('hang') }),
  fc.record({ kind: fc.constant('thenable-throws') }),
  fc.record({ kind: fc.constant('abort-listener') }),
);

const scenarioArb = fc.record({
  fn: behaviour,
  timeoutMs: fc.option(fc.oneof(fc.constantFrom(1, 2, 2 ** 31, 2 ** 32, 1e15), fc.double({ min: 0.5, max: 3, noNaN: true }), anyValue),
    { nil: undefined }),
  signal: fc.constantFrom('none', 'live', 'aborted', 'abort-soon', 'no-remove', 'throwing-add', 'odd'),
  fallback: fc.oneof(fc.constant(undefined), fc.constant(null), anyValue, fc.constantFrom('throw', 'async')),
  dispose: fc.constantFrom('never', 'before', 'during'),
  clock: fc.constantFrom('valid', 'throws-later', 'bad-later'),
  breakerTimeout: fc.option(fc.constantFrom(1, 2.5), { nil: undefined }),
  state: fc.constantFrom('closed', 'open', 'isolated'),
});

function makeSignal(kind) {
  switch (kind) {
    case 'live':
    case 'abort-soon':
      return new AbortController();
    case 'aborted': {
      const c = new AbortController();
      c.abort(new Error('aborted before'));
      return c;
    }
    case 'no-remove':
      return { signal: { aborted: false, addEventListener() {} } };
    case 'throwing-add':
      return { signal: { aborted: false, addEventListener() { throw new Error('add'); }, removeEventListener() {} } };
    case 'odd':
      return { signal: 'not a signal' };
    default:
      return undefined;
  }
}

function makeFn(fn, controller) {
  return (signal) => {
    switch (fn.kind) {
      case 'resolve':
        return fn.later ? new Promise((resolve) => setImmediate(resolve, fn.value)) : Promise.resolve(fn.value);
      case 'reject':
        return fn.later ? new Promise((_, reject) => setImmediate(reject, fn.value)) : Promise.reject(fn.value);
      case 'throw':
        throw fn.value;
      case 'return':
        return fn.value;
      case 'thenable-throws':
        return { get then() { throw new Error('then'); } };
      case 'abort-listener':
        signal.addEventListener('abort', () => {});
        return new Promise((resolve) => setImmediate(resolve, 1));
      default:
        // Hangs until its signal aborts (a timeout or the caller), else for good.
        return new Promise((_, reject) => {
          signal.addEventListener('abort', () => reject(signal.reason));
          if (controller !== undefined) setImmediate(() => controller.abort?.(new Error('caller gave up')));
        });
    }
  };
}

/** Runs one generated `execute` call; resolves with how it settled, or 'unsettled'. */
async function runScenario(s, generated) {
  let clockState = 'valid';
  const clock = () => {
    if (clockState === 'throws') throw new Error('clock broke');
    if (clockState === 'bad') return Infinity;
    return 0;
  };
  const breaker = new CircuitBreaker({ clock, timeoutMs: s.breakerTimeout, failureThreshold: 1, minCalls: 1 });
  if (s.state === 'open') breaker.record(breaker.acquire(), 503);
  if (s.state === 'isolated') breaker.isolate();
  if (s.clock === 'throws-later') clockState = 'throws';
  if (s.clock === 'bad-later') clockState = 'bad';
  const controller = makeSignal(s.signal);
  const options = {};
  if (s.timeoutMs !== undefined) options.timeoutMs = s.timeoutMs;
  if (controller !== undefined) options.signal = controller.signal;
  if (s.fallback !== undefined) {
    if (s.fallback === 'throw') options.fallback = () => { throw new Error('fallback'); };
    else if (s.fallback === 'async') options.fallback = async (e) => e;
    else options.fallback = s.fallback;
  }
  // A call that could otherwise hang for good gets a real way out.
  const mayHang = s.fn.kind === 'hang' && !(s.signal === 'abort-soon');
  if (mayHang) options.timeoutMs = 2;
  if (s.dispose === 'before') breaker.dispose();
  let pending;
  assert.doesNotThrow(() => {
    pending = breaker.execute(makeFn(s.fn, s.signal === 'abort-soon' ? controller : undefined), options);
  });
  assert.ok(pending instanceof Promise);
  if (s.dispose === 'during') breaker.dispose();
  let timer;
  const outcome = await Promise.race([
    pending.then(() => 'resolved', () => 'rejected'),
    new Promise((resolve) => {
      timer = setTimeout(resolve, 2_000, 'unsettled');
    }),
  ]);
  clearTimeout(timer);
  if (s.dispose === 'never') {
    clockState = 'valid';
    // Every admitted call gave its permit back.
    const out = breaker.outstandingPermits;
    if (out !== 0) assert.fail(`${out} permits still out after ${fc.stringify(generated)}`);
    breaker.dispose();
  }
  return outcome;
}

describe('property: execute', () => {
  test('never throws synchronously, always settles, never leaves an uncaught error', async () => {
    const uncaught = [];
    const onError = (error) => uncaught.push(error);
    process.on('uncaughtException', onError);
    process.on('unhandledRejection', onError);
    try {
      await fc.assert(fc.asyncProperty(scenarioArb, async (s) => {
        const outcome = await runScenario(materialize(s), s);
        if (outcome === 'unsettled') assert.fail(`unsettled: ${fc.stringify(s)}`);
        await new Promise((resolve) => setImmediate(resolve));
        assert.deepEqual(uncaught, []);
      }), settings(executeExamples.map((s) => [s]), Math.max(20, Math.round(RUNS / 4))));
    } finally {
      process.off('uncaughtException', onError);
      process.off('unhandledRejection', onError);
    }
  });
});
