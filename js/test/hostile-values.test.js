// Issue 37: values that fight back wherever the package inspects a value it did not make —
// what `fn` throws or rejects with, what a clock, a listener, a fallback or an option's
// iterator throws, an event name, a state, a breakers collection. Revoked Proxies (every
// operation on them throws, `instanceof` included), Proxies whose every trap throws,
// getters that throw and a `Symbol.toPrimitive` that throws. `execute` must settle with
// the caller's own value; every other entry point must throw its own error, naming what
// is wrong, never the value's.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CircuitBreaker } from '../src/node.js';
import { prometheusText } from '../src/exposition.js';
import { make } from './helpers.js';

function revoked(target) {
  const { proxy, revoke } = Proxy.revocable(target, {});
  revoke();
  return proxy;
}

const TRAPS = ['get', 'has', 'getOwnPropertyDescriptor', 'ownKeys', 'getPrototypeOf', 'set', 'defineProperty',
  'deleteProperty', 'isExtensible', 'preventExtensions', 'setPrototypeOf', 'apply', 'construct'];

/** A Proxy whose every trap throws. */
function trapping(target) {
  return new Proxy(target, Object.fromEntries(TRAPS.map((trap) => [trap, () => {
    throw new Error(`trap ${trap}`);
  }])));
}

const KEYS = ['status', 'statusCode', 'type', 'code', 'name', 'message', 'cause', 'errors', 'details', 'metadata',
  'then', 'constructor', 'stack', 'option'];

/** An object whose every property the package could read throws, and so does its conversion. */
function getters() {
  const value = Object.defineProperties({}, Object.fromEntries(KEYS.map((key) => [key, {
    get() {
      throw new Error(`getter ${key}`);
    },
  }])));
  value[Symbol.toPrimitive] = () => {
    throw new Error('toPrimitive');
  };
  return value;
}

const primitiveThrows = () => ({
  [Symbol.toPrimitive]() {
    throw new Error('toPrimitive');
  },
});

const HOSTILE = {
  'a revoked Proxy of an object': () => revoked({}),
  'a revoked Proxy of an Error': () => revoked(new Error('x')),
  'a revoked Proxy of a function': () => revoked(() => 1),
  'a revoked Proxy of a promise': () => revoked(Promise.resolve(1)),
  'a Proxy whose every trap throws': () => trapping(new Error('x')),
  'an object whose getters throw': getters,
  'an object whose Symbol.toPrimitive throws': primitiveThrows,
  'an Error caused by a revoked Proxy': () => new Error('wrapped', { cause: revoked({}) }),
  'an AggregateError whose errors are a revoked Proxy': () => Object.defineProperty(new AggregateError([]), 'errors',
    { value: revoked([]) }),
  'a grpc-like error whose metadata is a revoked Proxy': () => ({ code: 14, details: 'x', metadata: revoked({}) }),
};

/** What `fn` does with the value. */
const SHAPES = {
  'rejects with it': (value) => () => Promise.reject(value),
  'throws it': (value) => () => {
    throw value;
  },
  'rejects with it from an async function': (value) => async () => {
    throw value;
  },
  'rejects with it on a later turn': (value) => () => new Promise((_, reject) => setImmediate(reject, value)),
  'resolves with it': (value) => () => Promise.resolve().then(() => value),
  'returns it': (value) => () => value,
  'hands it to a thenable\'s reject': (value) => () => ({
    then(_, reject) {
      reject(value);
    },
  }),
};

const OPTIONS = {
  'no options': () => undefined,
  timeoutMs: () => ({ timeoutMs: 60_000 }),
  signal: () => ({ signal: new AbortController().signal }),
  'a fallback value': () => ({ fallback: 'fallback' }),
  'a fallback that throws a revoked Proxy': () => ({
    fallback: () => {
      throw revoked({});
    },
  }),
  'a revoked Proxy as fallback': () => ({ fallback: revoked(() => 1) }),
};

/**
 * How `promise` settled, or 'pending' if it has not within `ms` of real time: a call that
 * never settles fails its test instead of hanging it.
 */
function settledWithin(promise, ms = 2_000) {
  let timer;
  const late = new Promise((resolve) => {
    timer = setTimeout(resolve, ms, ['pending']);
  });
  return Promise.race([promise.then((v) => ['resolved', v], (e) => ['rejected', e]), late])
    .finally(() => clearTimeout(timer));
}

describe('execute settles whatever fn throws, rejects or resolves with', () => {
  for (const [what, make_] of Object.entries(HOSTILE)) {
    test(`${what}: every shape and option settles, recorded once, no permit out`, async () => {
      for (const [how, shape] of Object.entries(SHAPES)) {
        for (const [with_, options] of Object.entries(OPTIONS)) {
          const { breaker } = make({ failureThreshold: 1000, minCalls: 1000 });
          const value = make_();
          const label = `fn ${how}, ${with_}`;
          let settled;
          assert.doesNotThrow(() => {
            settled = settledWithin(breaker.execute(shape(value), options()));
          }, label);
          const [outcome, result] = await settled;
          assert.notEqual(outcome, 'pending', `${label}: never settled`);
          // A value `fn` threw or rejected with comes back as it is (no fallback).
          if (with_ === 'no options' && how !== 'resolves with it' && how !== 'returns it') {
            assert.equal(outcome, 'rejected', label);
            assert.ok(result === value, `${label}: rejected with another value`);
          }
          assert.equal(breaker.outstandingPermits, 0, label);
          const { calls } = breaker.metrics();
          assert.equal(calls, 1, `${label}: recorded ${calls} times`);
          breaker.dispose();
        }
      }
    });
  }

  test('a clock and listeners that throw revoked Proxies, on calls that trip and close the breaker: every call settles', async () => {
    let reading = 0;
    let hostile = false;
    const clock = () => {
      if (hostile) throw revoked({});
      reading += 1_000;
      return reading;
    };
    const breaker = new CircuitBreaker({ clock, minCalls: 2, failureThreshold: 2, cooldownMs: 1 });
    for (const event of ['transition', 'open', 'half-open', 'closed', 'clock-error', 'listener-error']) {
      breaker.on(event, () => {
        throw revoked({});
      });
    }
    for (let i = 0; i < 12; i++) {
      hostile = i % 3 === 2;
      const fail = i % 4 !== 3;
      const fn = fail ? () => Promise.reject(revoked(new Error('x'))) : () => 1;
      const admitted = breaker.metrics().admittedTotal;
      const [outcome] = await settledWithin(breaker.execute(fn, i % 2 === 0 ? { timeoutMs: 60_000 } : undefined));
      assert.notEqual(outcome, 'pending', `call ${i} never settled`);
      // Admitted, a call settles as fn did; turned away, it is rejected.
      const expected = fail || breaker.metrics().admittedTotal === admitted ? 'rejected' : 'resolved';
      assert.equal(outcome, expected, `call ${i}`);
    }
    assert.equal(breaker.outstandingPermits, 0);
    assert.ok(breaker.metrics().listenerErrorsTotal > 0);
  });
});

describe('every other entry point throws its own error for a hostile value', () => {
  test('faultStatuses or faultGrpcCodes whose iterator throws a revoked Proxy: a TypeError naming the option, with the Proxy as cause', () => {
    for (const option of ['faultStatuses', 'faultGrpcCodes']) {
      const cases = {
        'next() throws it': () => {
          const thrown = revoked({});
          return [thrown, { [Symbol.iterator]: () => ({ next() { throw thrown; } }) }];
        },
        '[Symbol.iterator]() throws it': () => {
          const thrown = revoked({});
          return [thrown, { [Symbol.iterator]() { throw thrown; } }];
        },
        'the [Symbol.iterator] getter throws it': () => {
          const thrown = revoked({});
          return [thrown, Object.defineProperty({}, Symbol.iterator, { get() { throw thrown; } })];
        },
        'next() throws an object whose getters throw': () => {
          const thrown = getters();
          return [thrown, { [Symbol.iterator]: () => ({ next() { throw thrown; } }) }];
        },
      };
      for (const [label, build] of Object.entries(cases)) {
        const [thrown, value] = build();
        assert.throws(() => new CircuitBreaker({ [option]: value }), (e) => {
          assert.ok(e instanceof TypeError, `${option}, ${label}: ${e?.message}`);
          assert.equal(e.option, option, label);
          assert.match(e.message, new RegExp(`^${option} could not be iterated`), label);
          assert.ok(e.cause === thrown, `${option}, ${label}: another cause`);
          return true;
        });
      }
    }
  });

  test('on() and once() with an event name that is a revoked Proxy or whose Symbol.toPrimitive throws: "unknown event"', () => {
    const { breaker } = make();
    for (const event of [revoked({}), primitiveThrows(), trapping({}), getters()]) {
      for (const method of ['on', 'once']) {
        assert.throws(() => breaker[method](event, () => {}), (e) => {
          assert.ok(e instanceof TypeError, `${method}: ${e?.message}`);
          assert.match(e.message, /^unknown event an object: expected transition, /);
          return true;
        });
      }
    }
  });

  test('a listener that is a revoked Proxy of a function: off() of another listener and once() still work, and calling it is a listener-error', () => {
    const { breaker } = make({ failureThreshold: 1, minCalls: 1 });
    const hostile = revoked(() => {});
    const seen = [];
    const other = (t) => seen.push(`other ${t.to}`);
    const onceOnly = (t) => seen.push(`once ${t.to}`);
    breaker.on('transition', hostile);
    breaker.on('transition', other);
    breaker.once('transition', onceOnly);
    breaker.off('transition', other);
    breaker.once('transition', other);
    breaker.off('transition', other);
    breaker.record(breaker.acquire(), 503);
    assert.deepEqual(seen, ['once open']);
    assert.equal(breaker.metrics().listenerErrorsTotal, 1);
    breaker.off('transition', hostile);
    breaker.reset();
    assert.deepEqual(seen, ['once open']);
    assert.equal(breaker.metrics().listenerErrorsTotal, 1);
  });

  test('execute with a signal that is a revoked Proxy, a Proxy whose traps throw or an object whose getters throw: rejects with "signal must be an AbortSignal"', async () => {
    const { breaker } = make();
    for (const signal of [revoked(new AbortController().signal), trapping(new AbortController().signal), getters()]) {
      const [outcome, error] = await settledWithin(breaker.execute(() => 1, { signal }));
      assert.equal(outcome, 'rejected');
      assert.ok(error instanceof TypeError, error?.message);
      assert.equal(error.option, 'signal');
      assert.match(error.message, /^signal must be an AbortSignal/);
    }
    assert.equal(breaker.metrics().admittedTotal, 0);
  });

  test('importState of a revoked Proxy or a Proxy whose traps throw: "state must be a Uint8Array"', () => {
    const { breaker } = make();
    for (const state of [revoked(new Uint8Array(4)), trapping(new Uint8Array(4)), revoked(new ArrayBuffer(4))]) {
      assert.throws(() => breaker.importState(state), (e) => {
        assert.ok(e instanceof TypeError, e?.message);
        assert.match(e.message, /^state must be a Uint8Array/);
        return true;
      });
      assert.throws(() => CircuitBreaker.importState(state), /^TypeError: state must be a Uint8Array/);
    }
    assert.equal(breaker.state, 'closed');
  });

  test('prometheusText of breakers that are, or hold, revoked Proxies: the package\'s TypeError naming them', () => {
    for (const breakers of [revoked(new Map()), revoked([]), trapping({}), () => revoked(new Map())]) {
      assert.throws(() => prometheusText(breakers), (e) => {
        assert.ok(e instanceof TypeError, e?.message);
        assert.match(e.message, /^tripgate: breakers must be a Map/);
        return true;
      });
    }
    for (const breaker of [revoked({}), trapping({}), getters()]) {
      assert.throws(() => prometheusText({ payments: breaker }), (e) => {
        assert.ok(e instanceof TypeError, e?.message);
        assert.match(e.message, /^tripgate: "payments" is not a CircuitBreaker/);
        return true;
      });
    }
  });
});

test('the fleet methods refuse hostile arguments with the package\'s TypeError, the thrown value its cause', () => {
  const breaker = new CircuitBreaker({ fleetQuorum: 1 });
  const { proxy, revoke } = Proxy.revocable({}, {});
  revoke();
  const throwing = new Proxy({}, { get() { throw new Error('trap'); } });
  const calls = {
    fleetApply: (v) => breaker.fleetApply(v),
    fleetStore: (v) => breaker.fleetStore(v),
    fleetVotes: (v) => breaker.fleetVotes(v),
    'a vote': (v) => breaker.fleetVotes([v]),
  };
  for (const [name, call] of Object.entries(calls)) {
    for (const hostile of [proxy, throwing]) {
      assert.throws(() => call(hostile), (error) => error instanceof TypeError && error.code === 'ERR_INVALID_ARG_TYPE' &&
        error.cause !== undefined, name);
    }
  }
});
