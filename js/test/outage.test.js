// Regression tests for the JS findings of issue 21, "the breaker must never be the
// outage": memory that follows calls in flight, one reading per scrape, execute settling
// whatever fn rejects with, option iterators that throw, listeners that throw, and
// bounded cause walks. Each test is named after the behaviour it pins; each failed on the
// code before its fix.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import promClient from 'prom-client';
import { CircuitBreaker, classifyError, classifyResult } from '../src/node.js';
import { collectTripgate } from '../src/prometheus.js';
import { tables } from '../src/tables.js';
import { make } from './helpers.js';

/** Runs a fixture in its own Node process with --expose-gc; its printed JSON. */
function runHeapFixture(name, args) {
  const file = fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['--expose-gc', file, ...args], { timeout: 60_000 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${name} failed: ${stderr || error.message}`));
      else resolve(JSON.parse(stdout));
    });
  });
}

/** Collects what reaches `uncaughtException` while `body` runs and one macrotask after. */
async function uncaughtDuring(body) {
  const uncaught = [];
  const onError = (error) => uncaught.push(error);
  process.on('uncaughtException', onError);
  try {
    await body();
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    process.off('uncaughtException', onError);
  }
  return uncaught;
}

function trip(breaker, n = 5) {
  for (let i = 0; i < n; i++) breaker.record(breaker.acquire(), 503);
  assert.equal(breaker.state, 'open');
}

describe('finding 8: execute memory follows calls in flight, not rate × timeout', () => {
  test('200 000 settled calls, each with its own 60 s timeoutMs: the heap is back before any timer fires', async () => {
    const { growth, n } = await runHeapFixture('distinct-timeouts-in-flight-heap.js', ['200000', '0']);
    assert.equal(n, 200_000);
    assert.ok(growth < 4_000_000, `heap grew by ${growth} bytes (${(growth / n).toFixed(0)} B a call)`);
  });

  test('the same beside 1 000 calls in flight on timeouts of their own: the heap holds those, not the settled', async () => {
    const { growth } = await runHeapFixture('distinct-timeouts-in-flight-heap.js', ['200000', '1000']);
    const { growth: inFlight } = await runHeapFixture('distinct-timeouts-in-flight-heap.js', ['0', '1000']);
    assert.ok(growth - inFlight < 1_000_000,
      `heap grew by ${growth} bytes, ${inFlight} of them for the 1 000 calls in flight alone`);
  });
});

describe('finding 9: the prom-client collector reads one snapshot per breaker per scrape', () => {
  test('after getSingleMetricAsString, a full scrape does not mix an old state with newer counters', async () => {
    const breaker = new CircuitBreaker();
    let reads = 0;
    const read = breaker[Symbol.for('tripgate.exposition')].bind(breaker);
    const counted = Object.create(breaker);
    counted[Symbol.for('tripgate.exposition')] = (out) => {
      reads += 1;
      return read(out);
    };
    const registry = new promClient.Registry();
    const collector = collectTripgate({ breakers: { b: counted }, registers: [registry] });
    await registry.getSingleMetricAsString('tripgate_transitions_total');
    trip(breaker);
    reads = 0;
    const text = await registry.metrics();
    assert.equal(reads, 1, 'one reading of the breaker for the whole scrape');
    const value = (series) => {
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      assert.ok(line !== undefined, `${series} missing`);
      return Number(line.slice(series.length + 1));
    };
    assert.equal(value('tripgate_state{breaker="b",state="closed"}'), 0);
    assert.equal(value('tripgate_state{breaker="b",state="open"}'), 1);
    assert.equal(value('tripgate_transitions_total{breaker="b",from="closed",to="open",reason="failure-threshold"}'), 1);
    assert.equal(value('tripgate_window_faults{breaker="b"}'), 5);
    // A scrape started later reads again.
    breaker.reset();
    const again = await registry.metrics();
    assert.equal(reads, 2);
    assert.match(again, /^tripgate_state\{breaker="b",state="closed"\} 1$/m);
    collector.unregister();
  });
});

describe('finding 10: execute settles whatever fn rejects with', () => {
  const revoked = (target) => {
    const { proxy, revoke } = Proxy.revocable(target, {});
    revoke();
    return proxy;
  };
  const targets = [['an object', () => ({})], ['an array', () => []], ['a function', () => function target() {}],
    ['an Error', () => new Error('x')]];
  const shapes = [
    ['rejects with it', (value) => () => Promise.reject(value)],
    ['throws it', (value) => () => {
      throw value;
    }],
    ['rejects with it later', (value) => () => new Promise((_, reject) => setImmediate(reject, value))],
    ['rejects with an error caused by it', (value) => () => Promise.reject(new Error('wrapped', { cause: value }))],
    ['rejects with an AggregateError of it', (value) => () => Promise.reject(new AggregateError([value]))],
  ];
  const optionSets = [undefined, { timeoutMs: 60_000 }, { signal: new AbortController().signal }, { fallback: 'fallback' }];

  test('a revoked Proxy, every shape and option: settles, recorded once as a failure, no permit out', async () => {
    const uncaught = await uncaughtDuring(async () => {
      for (const [what, target] of targets) {
        for (const [how, shape] of shapes) {
          for (const options of optionSets) {
            const { breaker } = make({ failureThreshold: 1000, minCalls: 1000 });
            const proxy = revoked(target());
            const settled = await breaker.execute(shape(proxy), options).then(
              (v) => ['resolved', v],
              (e) => ['rejected', e === proxy || e?.cause === proxy],
            );
            const label = `${what}, fn ${how}, ${JSON.stringify(options)}`;
            if (options?.fallback !== undefined) assert.deepEqual(settled, ['resolved', 'fallback'], label);
            else if (how.includes('caused') || how.includes('Aggregate')) assert.equal(settled[0], 'rejected', label);
            else assert.deepEqual(settled, ['rejected', true], label);
            assert.equal(breaker.outstandingPermits, 0, label);
            assert.equal(breaker.metrics().faults, 1, label);
            breaker.dispose();
          }
        }
      }
    });
    assert.deepEqual(uncaught, []);
  });

  test('classifyError and classifyResult of a revoked Proxy: failure and success, without throwing', () => {
    for (const [, target] of targets) {
      assert.equal(classifyError(revoked(target())), 'failure');
      assert.equal(classifyResult(revoked(target())), 'success');
    }
  });
});

describe('faultStatuses and faultGrpcCodes: an iterator that throws is an error naming the option', () => {
  for (const [option, valid] of [['faultStatuses', 503], ['faultGrpcCodes', 14]]) {
    test(`${option}: next(), [Symbol.iterator]() or its getter throwing is a TypeError naming ${option}, with the cause`, () => {
      const boom = new Error('iterator broke');
      const cases = {
        'next() throws': { [Symbol.iterator]: () => ({ next() { throw boom; } }) },
        'a generator throws midway': {
          *[Symbol.iterator]() {
            yield valid;
            throw boom;
          },
        },
        '[Symbol.iterator]() throws': { [Symbol.iterator]() { throw boom; } },
        'the [Symbol.iterator] getter throws': Object.defineProperty({}, Symbol.iterator, { get() { throw boom; } }),
      };
      for (const [label, value] of Object.entries(cases)) {
        assert.throws(() => new CircuitBreaker({ [option]: value }), (e) => {
          assert.ok(e instanceof TypeError, `${label}: ${e}`);
          assert.equal(e.option, option, label);
          assert.equal(e.code, 'ERR_INVALID_ARG_TYPE', label);
          assert.match(e.message, new RegExp(`^${option} `), label);
          assert.equal(e.cause, boom, label);
          return true;
        });
      }
      // next() returning something that is not an iterator result.
      assert.throws(() => new CircuitBreaker({ [option]: { [Symbol.iterator]: () => ({ next: () => 5 }) } }),
        (e) => e instanceof TypeError && e.option === option);
    });

    test(`${option}: a bad entry is still a RangeError naming ${option}, and the iterator is closed`, () => {
      let closed = false;
      const value = {
        [Symbol.iterator]() {
          let i = 0;
          return {
            next: () => ({ done: false, value: i++ === 0 ? valid : 1_000 }),
            return: () => {
              closed = true;
              return { done: true };
            },
          };
        },
      };
      assert.throws(() => new CircuitBreaker({ [option]: value }), (e) => e instanceof RangeError && e.option === option);
      assert.equal(closed, true);
    });
  }
});

describe('listeners cannot corrupt or abort (what to build, item 4)', () => {
  test('a throwing transition listener: the call that tripped returns, the other listeners run, listener-error reports it, it is counted, nothing is uncaught', async () => {
    const boom = new Error('listener bug');
    const { breaker } = make();
    const seen = [];
    const reported = [];
    breaker.on('open', () => {
      throw boom;
    });
    breaker.on('open', (t) => seen.push(`open listener: ${t.from}>${t.to}`));
    breaker.on('transition', (t) => seen.push(`transition listener: ${t.reason}`));
    breaker.on('listener-error', (report) => reported.push(report));
    const uncaught = await uncaughtDuring(() => {
      for (let i = 0; i < 4; i++) breaker.record(breaker.acquire(), 503);
      assert.equal(breaker.record(breaker.acquire(), 503), 'fault');
    });
    assert.deepEqual(uncaught, []);
    assert.equal(breaker.state, 'open');
    assert.deepEqual(seen, ['transition listener: failure-threshold', 'open listener: closed>open']);
    assert.equal(reported.length, 1);
    assert.equal(reported[0].error, boom);
    assert.equal(reported[0].event, 'open');
    assert.equal(reported[0].payload.to, 'open');
    assert.equal(breaker.metrics().listenerErrorsTotal, 1);
    assert.equal(breaker.outstandingPermits, 0);
  });

  test('a throwing half-open listener leaks no probe: the acquire that moved to half-open hands it out, and it closes the breaker', async () => {
    const { breaker, clock } = make({ cooldownMs: 1_000, halfOpenRequiredSuccesses: 1 });
    trip(breaker);
    clock.advance(1_000);
    breaker.on('half-open', () => {
      throw new Error('half-open listener bug');
    });
    let probe;
    const uncaught = await uncaughtDuring(() => {
      probe = breaker.acquire();
    });
    assert.deepEqual(uncaught, []);
    assert.ok(probe >= 0 && CircuitBreaker.isProbe(probe), `acquire gave ${probe}`);
    assert.equal(breaker.metrics().probesOut, 1);
    assert.equal(breaker.record(probe, 200), 'success');
    assert.equal(breaker.state, 'closed');
    assert.equal(breaker.metrics().probesOut, 0);
    assert.equal(breaker.outstandingPermits, 0);
    assert.equal(breaker.metrics().listenerErrorsTotal, 1);
  });

  test('execute: a listener throwing on the transition its call caused leaves the call its own result', async () => {
    const { breaker } = make({ failureThreshold: 1, minCalls: 1 });
    breaker.on('transition', () => {
      throw new Error('listener bug');
    });
    const error = new Error('upstream down');
    let settled;
    const uncaught = await uncaughtDuring(async () => {
      settled = await breaker.execute(() => Promise.reject(error), { timeoutMs: 60_000 }).catch((e) => e);
    });
    assert.deepEqual(uncaught, []);
    assert.equal(settled, error);
    assert.equal(breaker.state, 'open');
    assert.equal(breaker.outstandingPermits, 0);
    assert.equal(breaker.metrics().listenerErrorsTotal, 1);
  });

  test('a listener-error listener that throws, or no listener-error listener at all: counted, never re-reported, nothing uncaught', async () => {
    const quiet = make().breaker;
    quiet.on('transition', () => {
      throw new Error('unheard');
    });
    const loud = make().breaker;
    let reports = 0;
    loud.on('transition', () => {
      throw new Error('first');
    });
    loud.on('listener-error', () => {
      reports += 1;
      throw new Error('the reporter is broken too');
    });
    const uncaught = await uncaughtDuring(() => {
      trip(quiet);
      trip(loud);
    });
    assert.deepEqual(uncaught, []);
    assert.equal(quiet.metrics().listenerErrorsTotal, 1);
    assert.equal(reports, 1);
    assert.equal(loud.metrics().listenerErrorsTotal, 2);
  });

  test('a throwing clock-error listener is reported the same way, and acquire still answers', async () => {
    let bad = false;
    const breaker = new CircuitBreaker({ clock: () => (bad ? -1 : 0), slowCallDurationMs: 10 });
    breaker.on('clock-error', () => {
      throw new Error('clock listener bug');
    });
    const reported = [];
    breaker.on('listener-error', ({ event }) => reported.push(event));
    bad = true;
    let permit;
    const uncaught = await uncaughtDuring(() => {
      permit = breaker.acquire();
    });
    assert.deepEqual(uncaught, []);
    assert.ok(permit >= 0);
    assert.deepEqual(reported, ['clock-error']);
    bad = false;
    assert.equal(breaker.metrics().listenerErrorsTotal, 1);
  });
});

describe('cause walks stop at the core\'s MAX_CAUSES, as in the Rust hosts (what to build, item 5)', () => {
  /** `n` errors, each the cause of the next; the innermost a refused connection. */
  function chain(n) {
    let error = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    for (let i = 1; i < n; i++) error = new Error(`wrapper ${i}`, { cause: error });
    return error;
  }

  test('the depth is the core\'s MAX_CAUSES (8), read from the wasm module', () => {
    assert.equal(tables.maxCauses, 8);
  });

  test('a chain of exactly 8 errors is classified by its 8th; of 9, the 9th is not read', () => {
    assert.equal(classifyError(chain(8)), 'connection-error');
    assert.equal(classifyError(chain(9)), 'failure');
    // AggregateError's first error is one step of the same walk.
    assert.equal(classifyError(new AggregateError([chain(7)])), 'connection-error');
    assert.equal(classifyError(new AggregateError([chain(8)])), 'failure');
  });

  test('a cyclic cause chain ends, and reads at most 8 errors', async () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    a.cause = b;
    assert.equal(classifyError(a), 'failure');
    // A chain that never ends: every cause is a new error. Count the errors read.
    let read = 0;
    const endless = () => {
      read += 1;
      return { get cause() { return endless(); } };
    };
    assert.equal(classifyError(endless()), 'failure');
    assert.equal(read, 8);
    const { breaker } = make();
    await assert.rejects(breaker.execute(() => Promise.reject(a)), (e) => e === a);
    assert.equal(breaker.metrics().faults, 1);
  });
});
