// A Cloudflare Worker that guards the calls to one upstream with a tripgate breaker.
//
//   client ──▶ Worker (fetch) ──▶ Durable Object "UpstreamBreaker" ──▶ upstream (env.UPSTREAM)
//
// The breaker lives in a Durable Object, one per upstream host: every isolate of the Worker,
// wherever it runs, asks the same breaker, so a brownout trips it once for everyone and a
// recovering upstream sees one probe, not one per isolate. While the breaker is open the
// Durable Object answers 503 with `Retry-After` at once, without I/O; otherwise it passes
// the upstream's answer through unchanged (status, headers, body).
//
// State survives recycling: after every recorded outcome the object saves
// `breaker.exportState()` (509 bytes with the default window, times relative to the export)
// and the wall-clock time of the save in its storage (PERSIST = "transitions" saves only
// when the state changed; "off" never saves). A new isolate (after eviction, a deploy, a crash) restores
// it with `CircuitBreaker.importState(bytes, options, now - savedAt)`: an open breaker comes
// back open with the rest of its cooldown, a half-open one comes back open (its probe
// belonged to the dead isolate). See README.md beside this file for clocks and costs.
//
// `/__tripgate/metrics` answers the breaker's metrics as JSON, `/__tripgate/prometheus` in
// the Prometheus text format (the families every tripgate host exposes, labelled
// breaker="<upstream host>"), for a scrape.
//
// Bindings (wrangler.toml): UPSTREAM (the upstream's origin), BREAKER (the Durable Object
// namespace), optional BREAKER_OPTIONS (JSON CircuitBreaker options), TIMEOUT_MS and
// PERSIST (`outcomes`, the default; `transitions`; `off`).
// TRIPGATE_TEST_CLOCK is for tests only: see `clockOf` below.
import { CircuitBreaker, CircuitOpenError, initSync } from 'tripgate/web';
import { PROMETHEUS_CONTENT_TYPE, prometheusText } from 'tripgate/exposition';
import wasm from 'tripgate/tripgate.wasm'; // workerd hands over a compiled WebAssembly.Module

initSync({ module: wasm });

/** Storage key of the saved breaker state. */
const STATE_KEY = 'tripgate';
/** Header the Durable Object adds to the answers it makes itself (rejections, errors). */
const ANSWERED_BY = 'x-tripgate';
/** Test-only header carrying the test's clock; ignored unless TRIPGATE_TEST_CLOCK is set. */
const TEST_NOW = 'x-tripgate-test-now';

export default {
  /** Sends every request to the breaker of its upstream. */
  async fetch(request, env) {
    const upstream = new URL(env.UPSTREAM);
    const stub = env.BREAKER.get(env.BREAKER.idFromName(upstream.host));
    return stub.fetch(request);
  },
};

/**
 * Time, in milliseconds. `mono` feeds the breaker (cooldowns, windows); `wall` only measures
 * how long a saved state sat in storage between two isolates, whose `performance.now()`
 * origins differ. In workerd both are frozen while a request runs JavaScript and move
 * forward across I/O (a Spectre mitigation): every request and every upstream answer is
 * I/O, so the breaker reads the time the event arrived, which is what it needs.
 *
 * With the binding TRIPGATE_TEST_CLOCK = "1" (set by the tests, never in wrangler.toml)
 * both read the header `x-tripgate-test-now` of the request being handled instead, so the
 * tests move time without sleeping. Without the binding the header is ignored (and stripped
 * before the upstream sees it), so a client cannot move a production breaker's clock.
 */
function clockOf(env) {
  if (env.TRIPGATE_TEST_CLOCK !== '1') {
    // workerd's performance.now() counts from the Unix epoch (timeOrigin 0); counting from
    // the object's start keeps the core's nanoseconds small and exact.
    const origin = performance.now();
    return { mono: () => performance.now() - origin, wall: () => Date.now(), set() {} };
  }
  let now = 0;
  return {
    mono: () => now,
    wall: () => now,
    set(request) {
      const value = Number(request.headers.get(TEST_NOW));
      if (Number.isFinite(value) && value > now) now = value;
    },
  };
}

export class UpstreamBreaker {
  constructor(ctx, env) {
    this.ctx = ctx;
    this.env = env;
    this.clock = clockOf(env);
    this.options = { ...JSON.parse(env.BREAKER_OPTIONS ?? '{}'), clock: this.clock.mono };
    this.timeoutMs = Number(env.TIMEOUT_MS ?? 10_000);
    this.persist = env.PERSIST ?? 'outcomes';
    if (!['outcomes', 'transitions', 'off'].includes(this.persist)) {
      throw new Error(`PERSIST must be outcomes, transitions or off (got ${this.persist})`);
    }
    this.changed = false; // a transition since the last save
    this.breaker = null;
    this.ready = null;
  }

  /** The breaker, restored from storage the first time (once per isolate). */
  async #load() {
    const saved = this.persist !== 'off' ? await this.ctx.storage.get(STATE_KEY) : undefined;
    if (saved !== undefined) {
      const elapsedMs = Math.max(0, this.clock.wall() - saved.savedAt);
      try {
        this.breaker = CircuitBreaker.importState(saved.bytes, this.options, elapsedMs);
      } catch (error) {
        // Bytes from an incompatible version (or damaged): start closed rather than fail.
        console.warn(`tripgate: saved state ignored: ${error.message}`);
      }
    }
    this.breaker ??= new CircuitBreaker(this.options);
    this.breaker.on('transition', () => {
      this.changed = true;
    });
  }

  async fetch(request) {
    this.clock.set(request);
    this.ready ??= this.#load();
    await this.ready;
    const url = new URL(request.url);
    if (url.pathname === '/__tripgate/metrics') return Response.json(this.breaker.metrics());
    if (url.pathname === '/__tripgate/prometheus') {
      // For a Prometheus scrape: the core's families, the breaker labelled by its upstream.
      const text = prometheusText({ [new URL(this.env.UPSTREAM).host]: this.breaker });
      return new Response(text, { headers: { 'content-type': PROMETHEUS_CONTENT_TYPE } });
    }

    const target = new URL(url.pathname + url.search, this.env.UPSTREAM);
    const forwarded = new Request(target, request);
    forwarded.headers.delete(TEST_NOW);
    let response;
    try {
      response = await this.breaker.execute(
        (signal) => fetch(forwarded, { signal }),
        { timeoutMs: this.timeoutMs },
      );
    } catch (error) {
      if (error instanceof CircuitOpenError) return rejection(error);
      await this.#save(); // a timeout or a connection error was recorded
      return Response.json({ error: 'upstream unreachable', detail: String(error.message ?? error) },
        { status: error.name === 'TimeoutError' ? 504 : 502, headers: { [ANSWERED_BY]: 'error' } });
    }
    await this.#save();
    return response;
  }

  /**
   * Saves the state after an outcome was recorded: always (`outcomes`: a new isolate gets
   * the window's exact counts), or only if it changed state (`transitions`: a recycled
   * breaker is still open, half-open or closed as it was, but a closed one forgets the
   * window's calls since its last transition). Rejections change nothing worth saving (an
   * open breaker's state is a function of the time), so the fail-fast path does no I/O.
   */
  async #save() {
    if (this.persist === 'off' || (this.persist === 'transitions' && !this.changed)) return;
    this.changed = false;
    await this.ctx.storage.put(STATE_KEY, { bytes: this.breaker.exportState(), savedAt: this.clock.wall() });
  }
}

/** 503 with Retry-After (whole seconds, rounded up) from the breaker's rejection. */
function rejection(error) {
  const seconds = Math.max(1, Math.ceil(error.retryAfterMs / 1000));
  return Response.json(
    { error: 'upstream circuit open', reason: error.reason, retryAfterMs: error.retryAfterMs },
    {
      status: 503,
      headers: {
        'retry-after': String(seconds),
        'x-tripgate-retry-after-ms': String(error.retryAfterMs),
        [ANSWERED_BY]: error.reason,
      },
    },
  );
}
