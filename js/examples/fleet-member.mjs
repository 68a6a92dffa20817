#!/usr/bin/env node
// A Node member of a tripgate fleet, for the fleet demo (FLEET.md "How it is measured"):
// it calls an upstream at a steady rate through one breaker joined to the fleet, and
// reports everything it saw as JSON lines.
//
// ## CLI (stable: the demo driver depends on it)
//
//   node js/examples/fleet-member.mjs <redis-url> <fleet-name> <upstream-url> <quorum> \
//        <key> <label> <rate-per-s> <duration-s> [--option=value ...]
//
//   <redis-url>     redis://[user:pass@]host:port, or a Redis Cluster's node URLs joined by
//                   commas (ignored, but required, with quorum off)
//   <fleet-name>    the fleet (wit/fleet.md naming rule)
//   <upstream-url>  an http:// URL; each call is one GET; 5xx/429 and connection errors are faults
//   <quorum>        fleet-quorum 1-16, or `off` (or 0): a breaker of its own, no Redis at all
//   <key>           the shared HMAC key, or `-` for unsigned messages
//   <label>         a name for this member in the output (any text)
//   <rate-per-s>    calls per second (> 0), spread evenly
//   <duration-s>    how long to run (> 0), then leave the fleet and exit 0
//   options:        --cooldown-ms=5000 --failure-threshold=5 --probes=1 (K)
//                   --required-successes=2 --call-timeout-ms=1000
//                   --reconcile-interval-ms=1000 --store-timeout-ms=250
//                   --member=<name> (a stable member id; default random)
//                   (probe timeout, hence the lease: 2 x call timeout)
//
// Bad arguments: one line on stderr naming the argument, exit code 2.
//
// ## Output: one JSON object per line on stdout; `t` is wall-clock ms (Date.now())
//
//   {"type":"start","t","label","member","fleet":bool,"quorum"}     member: id or null;
//                                                                   once joined (connected,
//                                                                   or after 5 s, degraded)
//   {"type":"transition","t","label","from","to","reason"}          every transition
//   {"type":"degraded","t","label","degraded":bool}                 store lost / back
//   {"type":"calls","t","label","interval_ms","sent","ok","fault","probes",
//    "rejected":{"open","probing","isolated","saturated","probing-elsewhere"}}
//                                                                   once a second: what
//                                                                   the calls of that second did
//   {"type":"summary","t","label","member","sent","ok","fault","probes","rejected":{...},
//    "transitions","max_decision_us","decisions_over_1ms","fleet":{fleet.status()}|null}
//
// `sent` counts calls that reached the upstream (admitted); `probes` those admitted as
// half-open probes. `max_decision_us` is the slowest acquire or record (the breaker's own
// decision, not the upstream call): fleet mode must keep it where it is without fleet
// mode, and `decisions_over_1ms` at 0 — no call waits on the store.
import { CircuitBreaker, rejectReasons } from '../src/node.js';
import { FleetStore } from '../src/fleet/index.js';

function fail(message) {
  process.stderr.write(`fleet-member: ${message}\n`);
  process.exit(2);
}

const positional = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const flags = Object.fromEntries(process.argv.slice(2).filter((a) => a.startsWith('--')).map((a) => {
  const eq = a.indexOf('=');
  if (eq < 0) fail(`option ${a} needs a value (--name=value)`);
  return [a.slice(2, eq), a.slice(eq + 1)];
}));
if (positional.length !== 8) {
  fail('usage: fleet-member.mjs <redis-url> <fleet-name> <upstream-url> <quorum> <key> <label> <rate-per-s> <duration-s> [--option=value ...]');
}
const [redisUrl, name, upstream, quorumArg, keyArg, label, rateArg, durationArg] = positional;

function number(text, what, { integer = false, min = 0, exclusive = true } = {}) {
  const value = Number(text);
  if (text === '' || !Number.isFinite(value) || (integer && !Number.isInteger(value)) ||
    (exclusive ? value <= min : value < min)) {
    fail(`${what} must be a ${integer ? 'whole ' : ''}number ${exclusive ? '>' : '>='} ${min} (got ${JSON.stringify(text)})`);
  }
  return value;
}
const KNOWN = ['cooldown-ms', 'failure-threshold', 'probes', 'required-successes', 'call-timeout-ms',
  'reconcile-interval-ms', 'store-timeout-ms', 'member'];
for (const flag of Object.keys(flags)) if (!KNOWN.includes(flag)) fail(`unknown option --${flag} (known: ${KNOWN.join(', ')})`);
const flag = (f, fallback, integer = true) => (flags[f] === undefined ? fallback : number(flags[f], `--${f}`, { integer }));

let upstreamUrl;
try {
  upstreamUrl = new URL(upstream);
} catch {
  fail(`upstream-url must be an http:// URL (got ${JSON.stringify(upstream)})`);
}
if (upstreamUrl.protocol !== 'http:' && upstreamUrl.protocol !== 'https:') fail('upstream-url must be an http:// URL');
const fleetOn = !(quorumArg === 'off' || quorumArg === '0');
const quorum = fleetOn ? number(quorumArg, 'quorum', { integer: true }) : undefined;
const rate = number(rateArg, 'rate-per-s');
const durationMs = number(durationArg, 'duration-s') * 1_000;
const callTimeoutMs = flag('call-timeout-ms', 1_000, false);

const out = (record) => process.stdout.write(`${JSON.stringify({ ...record, t: Date.now(), label })}\n`);

let breaker;
try {
  breaker = new CircuitBreaker({
    fleetQuorum: quorum,
    cooldownMs: flag('cooldown-ms', 5_000, false),
    failureThreshold: flag('failure-threshold', 5),
    halfOpenMaxProbes: flag('probes', 1),
    halfOpenRequiredSuccesses: flag('required-successes', 2),
    probeTimeoutMs: Math.max(callTimeoutMs * 2, 1),
  });
} catch (error) {
  fail(error.message);
}
breaker.on('transition', (t) => out({ type: 'transition', from: t.from, to: t.to, reason: t.reason }));

let store = null;
let fleet = null;
if (fleetOn) {
  try {
    store = await FleetStore.connect({
      // Several URLs, comma-separated: a Redis Cluster's nodes.
      ...(redisUrl.includes(',') ? { nodes: redisUrl.split(',') } : { url: redisUrl }),
      key: keyArg === '-' ? undefined : keyArg,
      member: flags.member,
      reconcileIntervalMs: flag('reconcile-interval-ms', 1_000, false),
      storeTimeoutMs: flag('store-timeout-ms', 250, false),
    });
    fleet = store.join(name, breaker);
  } catch (error) {
    fail(error.message);
  }
  fleet.on('degraded', ({ degraded }) => out({ type: 'degraded', degraded }));
  await fleet.ready(5_000);
}
out({ type: 'start', member: store?.memberId ?? null, fleet: fleetOn, quorum: quorum ?? null });

const zero = () => ({ sent: 0, ok: 0, fault: 0, probes: 0, rejected: Object.fromEntries(rejectReasons.map((r) => [r, 0])) });
const total = zero();
let second = zero();
let transitions = 0;
let maxDecisionNs = 0n;
let decisionsOver1ms = 0;
breaker.on('transition', () => transitions++);

/** Times one breaker decision (acquire or record): the call path, which must never wait. */
function timed(fn) {
  const start = process.hrtime.bigint();
  const result = fn();
  const took = process.hrtime.bigint() - start;
  if (took > maxDecisionNs) maxDecisionNs = took;
  if (took > 1_000_000n) decisionsOver1ms++;
  return result;
}

const count = (key, reason) => {
  for (const c of [total, second]) {
    if (reason === undefined) c[key]++;
    else c.rejected[reason]++;
  }
};

async function call() {
  const permit = timed(() => breaker.acquire());
  if (permit < 0) {
    count('rejected', breaker.lastRejection.reason);
    return;
  }
  count('sent');
  if (CircuitBreaker.isProbe(permit)) count('probes');
  let outcome;
  try {
    const response = await fetch(upstreamUrl, { signal: AbortSignal.timeout(callTimeoutMs) });
    await response.arrayBuffer();
    outcome = response.status;
  } catch (error) {
    outcome = error?.name === 'TimeoutError' ? 'timeout' : 'connection-error';
  }
  const cls = timed(() => breaker.record(permit, outcome));
  count(cls === 'fault' ? 'fault' : 'ok');
}

const started = Date.now();
let lastReport = started;
const pending = new Set();
const interval = 1_000 / rate;
let next = performance.now();
while (Date.now() - started < durationMs) {
  const p = call();
  pending.add(p);
  p.finally(() => pending.delete(p));
  next += interval;
  const now = Date.now();
  if (now - lastReport >= 1_000) {
    out({ type: 'calls', interval_ms: now - lastReport, ...second });
    second = zero();
    lastReport = now;
  }
  const wait = next - performance.now();
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
}
await Promise.all(pending);
out({ type: 'calls', interval_ms: Date.now() - lastReport, ...second });
const status = fleet?.status() ?? null;
if (store !== null) await store.close();
out({
  type: 'summary',
  member: store?.memberId ?? null,
  ...total,
  transitions,
  max_decision_us: Number(maxDecisionNs) / 1_000,
  decisions_over_1ms: decisionsOver1ms,
  fleet: status,
});
