// A Node fleet member in a process of its own, driven over stdin, for the tests that need
// a member the operating system can freeze (SIGSTOP) and thaw (SIGCONT). Its breaker runs
// on a fake clock the parent moves.
//
//   node test/fleet-child-member.js <redis-url> <fleet> <member-name> <breaker-options-json>
//
// stdin, one command a line: `advance <ms>`, `acquire` (turned away or a permit, kept),
// `record <outcome>` (the kept permit), `status`, and `time-out <ms>`: the kept permit's
// call times out after `ms` of real time (a timer, as a fetch with a timeout has), its
// clock a minute later, and fails. stdout, one JSON line each:
// `{ "ready": true }` once joined, then `{ "reply": …, "status": { state, generation,
// breakerLease, connected, leaseHeld, counts } }` per command.
import { createInterface } from 'node:readline';
import { CircuitBreaker } from '../src/node.js';
import { FleetStore } from '../src/fleet/index.js';
import { FakeClock } from './helpers.js';
import { KEY } from './fleet-helpers.js';

const [url, name, memberName, options] = process.argv.slice(2);
const clock = new FakeClock();
clock.now = 5_000_000;
const breaker = new CircuitBreaker({ ...JSON.parse(options), clock: clock.read });
const store = await FleetStore.connect({ url, key: KEY, member: memberName, reconcileIntervalMs: 100, storeTimeoutMs: 200, maxBackoffMs: 50 });
const fleet = store.join(name, breaker);
await fleet.ready();
let permit = -1;
const transitions = [];
breaker.on('transition', (t) => transitions.push(`${t.from}>${t.to}:${t.reason}`));

const status = () => {
  const s = fleet.status();
  const f = breaker.fleetStatus();
  return {
    state: breaker.state,
    generation: f.generation,
    breakerLease: f.leaseHeld,
    connected: s.connected,
    leaseHeld: s.leaseHeld,
    counts: s.counts,
    transitions,
  };
};
const say = (reply) => process.stdout.write(`${JSON.stringify({ reply, status: status() })}\n`);
process.stdout.write(`${JSON.stringify({ ready: true, memberId: store.memberId })}\n`);

for await (const line of createInterface({ input: process.stdin })) {
  const [command, arg] = line.trim().split(' ');
  if (command === 'advance') {
    clock.advance(Number(arg));
    say(clock.now);
  } else if (command === 'acquire') {
    const p = breaker.acquire();
    if (p >= 0) permit = p;
    say(p >= 0 ? { permit: p, probe: CircuitBreaker.isProbe(p) } : { rejected: breaker.lastRejection.reason });
  } else if (command === 'record') {
    say(breaker.record(permit, Number.isNaN(Number(arg)) ? arg : Number(arg)));
    permit = -1;
  } else if (command === 'time-out') {
    const timedOut = permit;
    permit = -1;
    setTimeout(() => {
      clock.advance(60_000);
      breaker.record(timedOut, 'timeout');
    }, Number(arg));
    say(null);
  } else if (command === 'status') {
    say(null);
  }
}
await store.close();
