// The example Worker (examples/worker/worker.js) in real workerd, through miniflare's
// programmatic API, against an upstream served on 127.0.0.1. Time is the test's: with the
// TRIPGATE_TEST_CLOCK binding the Worker reads the `x-tripgate-test-now` header as its
// clock (see clockOf in worker.js), so cooldowns pass without sleeping. One test runs on
// workerd's real clock with a short cooldown, and one checks that without the binding the
// header moves nothing.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { startErrorsWorker, startRetryAfterWorker, startRetryWorker, startWorker } from './miniflare.js';
import { Upstream } from './upstream.js';
import { normalise, promtoolCheck } from '../exposition-scenario.js';

const OPTIONS = {
  failureThreshold: 5, minCalls: 5, cooldownMs: 15_000, halfOpenMaxProbes: 1, halfOpenRequiredSuccesses: 2,
};
const TEST_BINDINGS = { BREAKER_OPTIONS: JSON.stringify(OPTIONS), TRIPGATE_TEST_CLOCK: '1' };

const upstream = new Upstream();
const dirs = [];
before(() => upstream.start());
after(async () => {
  await upstream.stop();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function tempDir() {
  const dir = mkdtempSync(join(tmpdir(), 'tripgate-edge-'));
  dirs.push(dir);
  return dir;
}

/** A fresh upstream state and a Worker (its own Durable Object storage unless `persistDir`). */
async function worker(bindings = TEST_BINDINGS, persistDir = undefined) {
  Object.assign(upstream, { status: 200, hits: 0, hold: false });
  return startWorker({ upstream: upstream.url, persistDir, bindings });
}

/** One request through the Worker at test time `now` (ms). */
async function call(mf, now, path = '/api/charge') {
  const headers = now === undefined ? {} : { 'x-tripgate-test-now': String(now) };
  const res = await mf.dispatchFetch(`https://edge.example${path}`, { headers });
  const body = await res.text();
  return {
    status: res.status,
    by: res.headers.get('x-tripgate'), // null: the upstream's own answer
    retryAfter: res.headers.get('retry-after'),
    retryAfterMs: Number(res.headers.get('x-tripgate-retry-after-ms')),
    upstream: res.headers.get('x-upstream'),
    body,
  };
}

async function metrics(mf, now) {
  const res = await mf.dispatchFetch('https://edge.example/__tripgate/metrics', {
    headers: { 'x-tripgate-test-now': String(now) },
  });
  return res.json();
}

/** `threshold` 503s from the upstream, passed through, that trip the breaker at `start + n - 1`. */
async function trip(mf, start) {
  upstream.status = 503;
  for (let i = 0; i < OPTIONS.failureThreshold; i++) {
    const r = await call(mf, start + i);
    assert.equal(r.status, 503);
    assert.equal(r.by, null, 'the upstream 503 is passed through');
    assert.equal(r.body, 'upstream 503');
  }
  assert.equal(upstream.hits, OPTIONS.failureThreshold);
  return start + OPTIONS.failureThreshold - 1;
}

test('after the threshold of 503s the Worker fails fast: 503 + Retry-After, and the upstream hears nothing', async () => {
  const mf = await worker();
  try {
    const trippedAt = await trip(mf, 1_000);
    for (let i = 0; i < 50; i++) {
      const r = await call(mf, trippedAt + 1 + i * 100);
      assert.equal(r.status, 503);
      assert.equal(r.by, 'open', 'answered by the breaker');
      assert.equal(r.upstream, null);
      assert.equal(r.retryAfterMs, 15_000 - 1 - i * 100);
      assert.equal(r.retryAfter, String(Math.ceil(r.retryAfterMs / 1000)));
      assert.deepEqual(JSON.parse(r.body), { error: 'upstream circuit open', reason: 'open', retryAfterMs: r.retryAfterMs });
    }
    assert.equal(upstream.hits, OPTIONS.failureThreshold, 'no request reached the upstream while open');
    const m = await metrics(mf, trippedAt + 5_000);
    assert.equal(m.state, 'open');
    assert.equal(m.rejectedTotal.open, 50);
  } finally {
    await mf.dispose();
  }
});

test('a flood of 404s trips nothing: every one reaches the upstream and is passed through', async () => {
  const mf = await worker();
  try {
    upstream.status = 404;
    for (let i = 0; i < 100; i++) {
      const r = await call(mf, 1_000 + i);
      assert.equal(r.status, 404);
      assert.equal(r.by, null);
      assert.equal(r.body, 'upstream 404');
    }
    assert.equal(upstream.hits, 100);
    const m = await metrics(mf, 1_200);
    assert.equal(m.state, 'closed');
    assert.equal(m.faults, 0);
    assert.equal(m.calls, 100);
    assert.equal(m.transitionsTotal, 0);
  } finally {
    await mf.dispose();
  }
});

/**
 * At `now` (the cooldown has passed), 20 concurrent requests while the upstream holds its
 * answers: exactly one (the probe) reaches it; the rest are answered `probing` at once.
 * Then the probe's 200 is passed through.
 */
async function probeOnce(mf, now) {
  const before = upstream.hits;
  upstream.status = 200;
  upstream.hold = true;
  const answers = [];
  const pending = Array.from({ length: 20 }, () => call(mf, now).then((r) => answers.push(r)));
  await upstream.reached(before + 1);
  // The other 19 come back while the probe is still held by the upstream.
  while (answers.length < 19) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal(upstream.hits, before + 1, 'exactly one probe reached the upstream');
  for (const r of answers) {
    assert.equal(r.status, 503);
    assert.equal(r.by, 'probing');
    assert.ok(Number(r.retryAfter) >= 1, `Retry-After ${r.retryAfter}`);
  }
  upstream.release();
  await Promise.all(pending);
  const probe = answers.find((r) => r.by === null);
  assert.ok(probe, 'the probe was answered');
  assert.equal(probe.status, 200);
  assert.equal(probe.body, 'upstream 200');
  assert.equal(upstream.hits, before + 1);
}

test('after the cooldown exactly one probe reaches the upstream, then M successes close the breaker', async () => {
  const mf = await worker();
  try {
    const trippedAt = await trip(mf, 1_000);
    const justBefore = await call(mf, trippedAt + 14_999);
    assert.equal(justBefore.by, 'open');
    assert.equal(justBefore.retryAfterMs, 1);
    assert.equal(upstream.hits, 5);

    await probeOnce(mf, trippedAt + 15_000);
    assert.equal((await metrics(mf, trippedAt + 15_000)).state, 'half-open', 'one success of M = 2');

    const second = await call(mf, trippedAt + 15_001);
    assert.equal(second.status, 200);
    assert.equal(second.by, null);
    assert.equal(upstream.hits, 7);
    const m = await metrics(mf, trippedAt + 15_001);
    assert.equal(m.state, 'closed');
    assert.equal(m.lastTransition.reason, 'probes-succeeded');

    for (let i = 0; i < 10; i++) assert.equal((await call(mf, trippedAt + 15_002 + i)).status, 200);
    assert.equal(upstream.hits, 17);
  } finally {
    await mf.dispose();
  }
});

test('an upstream that times out (504) or refuses connections (502) is recorded as a fault', async () => {
  const options = { ...OPTIONS, failureThreshold: 2, minCalls: 2 };
  let mf = await worker({ ...TEST_BINDINGS, BREAKER_OPTIONS: JSON.stringify(options), TIMEOUT_MS: '100' });
  try {
    upstream.hold = true;
    const timedOut = await call(mf, 1_000);
    assert.equal(timedOut.status, 504);
    assert.equal(timedOut.by, 'error');
    upstream.release();
    const m = await metrics(mf, 1_200);
    assert.equal(m.faults, 1);
    assert.equal(m.faultsTotal, 1);
  } finally {
    await mf.dispose();
  }
  // A port nobody listens on: bind one, note it, close it.
  const { createServer } = await import('node:net');
  const closed = createServer();
  await new Promise((resolve) => closed.listen(0, '127.0.0.1', resolve));
  const port = closed.address().port;
  await new Promise((resolve) => closed.close(resolve));
  mf = await startWorker({ upstream: `http://127.0.0.1:${port}`, bindings: { ...TEST_BINDINGS, BREAKER_OPTIONS: JSON.stringify(options) } });
  try {
    for (let i = 0; i < 2; i++) {
      const r = await call(mf, 1_000 + i);
      assert.equal(r.status, 502);
      assert.equal(r.by, 'error');
    }
    const r = await call(mf, 1_002);
    assert.equal(r.by, 'open', 'two refused connections tripped it');
  } finally {
    await mf.dispose();
  }
});

for (const persist of ['outcomes', 'transitions']) {
  test(`recycling (PERSIST=${persist}): a new workerd on the same storage restores the open breaker with its remaining cooldown, then probes once`, async () => {
    const bindings = { ...TEST_BINDINGS, PERSIST: persist };
    const persistDir = tempDir();
    const start = 1_700_000_000_000; // the test clock stands in for Date.now() as well
    let mf = await worker(bindings, persistDir);
    let trippedAt;
    try {
      trippedAt = await trip(mf, start);
      assert.equal((await call(mf, trippedAt + 1_000)).retryAfterMs, 14_000);
    } finally {
      await mf.dispose();
    }

    mf = await startWorker({ upstream: upstream.url, persistDir, bindings });
    try {
      const r = await call(mf, trippedAt + 5_000);
      assert.equal(r.status, 503);
      assert.equal(r.by, 'open', 'still open in the new isolate');
      assert.equal(r.retryAfterMs, 10_000, 'with the rest of its cooldown');
      assert.equal(r.retryAfter, '10');
      assert.equal(upstream.hits, 5);
      const m = await metrics(mf, trippedAt + 5_000);
      assert.equal(m.state, 'open');
      assert.equal(m.cooldownRemainingMs, 10_000);

      await probeOnce(mf, trippedAt + 15_000);
    } finally {
      await mf.dispose();
    }
  });
}

test('recycling keeps the window\'s counts with PERSIST=outcomes, and forgets them with PERSIST=transitions', async () => {
  for (const [persist, tripsAfterRecycling] of [['outcomes', true], ['transitions', false]]) {
    const persistDir = tempDir();
    const bindings = { ...TEST_BINDINGS, PERSIST: persist };
    let mf = await worker(bindings, persistDir);
    upstream.status = 503;
    try {
      for (let i = 0; i < OPTIONS.failureThreshold - 1; i++) assert.equal((await call(mf, 1_000 + i)).by, null);
    } finally {
      await mf.dispose();
    }
    mf = await startWorker({ upstream: upstream.url, persistDir, bindings });
    try {
      assert.equal((await call(mf, 2_000)).by, null, 'the fifth 503 reaches the upstream');
      const m = await metrics(mf, 2_001);
      assert.equal(m.state, tripsAfterRecycling ? 'open' : 'closed', `PERSIST=${persist}`);
      assert.equal(m.faults, tripsAfterRecycling ? 5 : 1, `PERSIST=${persist}: faults in the window`);
    } finally {
      await mf.dispose();
    }
  }
});

test('control: without persistence (PERSIST=off) a new workerd forgets the open breaker', async () => {
  const persistDir = tempDir();
  const bindings = { ...TEST_BINDINGS, PERSIST: 'off' };
  let mf = await worker(bindings, persistDir);
  let trippedAt;
  try {
    trippedAt = await trip(mf, 1_000);
    assert.equal((await call(mf, trippedAt + 1)).by, 'open');
  } finally {
    await mf.dispose();
  }
  mf = await startWorker({ upstream: upstream.url, persistDir, bindings });
  try {
    upstream.status = 200;
    const r = await call(mf, trippedAt + 5_000);
    assert.equal(r.status, 200, 'closed again: the brownout is forgotten');
    assert.equal(upstream.hits, 6);
  } finally {
    await mf.dispose();
  }
});

test('on workerd\'s own clock (no test binding) a short cooldown still holds, then lets a probe through', async () => {
  const options = { ...OPTIONS, cooldownMs: 1_000, halfOpenRequiredSuccesses: 1 };
  const mf = await worker({ BREAKER_OPTIONS: JSON.stringify(options) });
  try {
    upstream.status = 503;
    for (let i = 0; i < 5; i++) await call(mf);
    const rejected = await call(mf);
    assert.equal(rejected.by, 'open');
    assert.ok(rejected.retryAfterMs > 0 && rejected.retryAfterMs <= 1_000, `retry after ${rejected.retryAfterMs} ms`);
    // The header moves nothing without the binding, and never reaches the upstream.
    const forged = await call(mf, Number.MAX_SAFE_INTEGER);
    assert.equal(forged.by, 'open');
    assert.equal(upstream.hits, 5);
    assert.equal(upstream.lastHeaders['x-tripgate-test-now'], undefined);
    // Real time passes between requests (each one is I/O), so the cooldown ends.
    await new Promise((resolve) => setTimeout(resolve, 1_050));
    upstream.status = 200;
    const probe = await call(mf);
    assert.equal(probe.status, 200);
    assert.equal(probe.by, null);
    assert.equal(upstream.hits, 6);
    assert.equal((await call(mf)).status, 200);
  } finally {
    await mf.dispose();
  }
});

test('the Worker\'s /__tripgate/prometheus route answers in the Prometheus text format that promtool accepts, with the core\'s families', async () => {
  const mf = await worker();
  try {
    const trippedAt = await trip(mf, 1_000);
    await call(mf, trippedAt + 10); // rejected: open
    const res = await mf.dispatchFetch('https://edge.example/__tripgate/prometheus', {
      headers: { 'x-tripgate-test-now': String(trippedAt + 2_500) },
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
    const text = await res.text();
    promtoolCheck(text);
    const families = normalise(text);
    const host = new URL(upstream.url).host;
    const me = `breaker=${JSON.stringify(host)}`;
    assert.equal(families.tripgate_state.samples[`${me},state="open"`], 1);
    assert.equal(families.tripgate_state.samples[`${me},state="closed"`], 0);
    assert.equal(families.tripgate_rejections_total.samples[`${me},reason="open"`], 1);
    assert.equal(families.tripgate_transitions_total.samples[`${me},from="closed",reason="failure-threshold",to="open"`], 1);
    assert.equal(families.tripgate_outcomes_total.samples[`${me},class="fault"`], OPTIONS.failureThreshold);
    assert.equal(families.tripgate_time_in_state_seconds.samples[me], 2.5);
    assert.equal(families.tripgate_cooldown_remaining_seconds.samples[me], OPTIONS.cooldownMs / 1000 - 2.5);
    assert.equal(families.tripgate_fleet_member.samples[me], 0);
    assert.equal(upstream.hits, OPTIONS.failureThreshold, 'the metrics route calls no upstream');
  } finally {
    await mf.dispose();
  }
});

test('the error table vector passes on classifyError inside workerd', async () => {
  const vector = readFileSync(new URL('../../../tests/vectors/errors/errors.json', import.meta.url), 'utf8');
  const mf = await startErrorsWorker();
  try {
    const res = await mf.dispatchFetch('https://edge.example/', { method: 'POST', body: vector });
    const { ran, skipped, failed } = await res.json();
    assert.deepEqual(failed, []);
    assert.equal(skipped.length, 2, skipped.join('\n'));
    assert.equal(ran, JSON.parse(vector).cases.length - 2);
  } finally {
    await mf.dispose();
  }
});

test('the Retry-After vector passes on retryAfter inside workerd (its own Response and Headers)', async () => {
  const vector = readFileSync(new URL('../../../tests/vectors/retry-after/retry-after.json', import.meta.url), 'utf8');
  const mf = await startRetryAfterWorker();
  try {
    const res = await mf.dispatchFetch('https://edge.example/', { method: 'POST', body: vector });
    const { ran, failed } = await res.json();
    assert.deepEqual(failed, []);
    assert.equal(ran, JSON.parse(vector).cases.length);
  } finally {
    await mf.dispose();
  }
});

test('the retry vector passes on breaker.retries() inside workerd', async () => {
  const vector = readFileSync(new URL('../../../tests/vectors/retry/retry.json', import.meta.url), 'utf8');
  const mf = await startRetryWorker();
  try {
    const res = await mf.dispatchFetch('https://edge.example/', { method: 'POST', body: vector });
    const { ran, steps, failed } = await res.json();
    assert.deepEqual(failed, []);
    const { cases } = JSON.parse(vector);
    assert.equal(ran, cases.length);
    assert.equal(steps, cases.reduce((n, c) => n + c.steps.length, 0));
  } finally {
    await mf.dispose();
  }
});
