// Every fleet protocol vector (tests/vectors/protocol/*.json; format: the Rust runner,
// tests/src/protocol.rs, and the generator, generate.py) through the Node adapter's
// MemberProtocol: the core's protocol in the package's wasm, linked to a CircuitBreaker on
// a fake clock, with node:crypto's HMAC-SHA256 as its signer. The same expectations as the
// Rust runner, step by step: the command asked for (none unless the step names one), and
// the deadline, lease, breaker state, fleet status and counts where the step gives them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CircuitBreaker } from '../src/node.js';
import { fleetLink } from '../src/breaker.js';
import { MemberProtocol } from '../src/fleet/protocol.js';
import { FakeClock, VECTOR_DIR, optionsOf } from './helpers.js';

const DIR = join(VECTOR_DIR, 'protocol');
const files = readdirSync(DIR).filter((f) => f.endsWith('.json')).sort();
const bytes = (text) => (text === undefined || text === null ? null : Buffer.from(text, 'utf8'));

/** A vector outcome (`status:503`, `success`, …) as the package's outcome. */
function outcome(text) {
  const [kind, value] = text.split(':');
  if (kind === 'status') return Number(value);
  if (kind === 'grpc') return { grpc: Number(value) };
  return kind;
}

/** A command as the vectors spell it. */
function commandJson(c) {
  if (c === null) return null;
  switch (c.kind) {
    case 'vote':
      return { vote: { entry: c.entry, 'window-ms': c.windowMs } };
    case 'publish':
      return { publish: { line: c.line, 'expire-ms': c.expireMs } };
    case 'take-lease':
    case 'renew-lease':
      return { [c.kind]: { holder: c.holder, ms: c.ms } };
    case 'release-lease':
      return { 'release-lease': { holder: c.holder, notice: c.notice } };
    case 'repair':
      return { repair: { floor: c.floor } };
    default:
      return { [c.kind]: {} };
  }
}

/** A vector reply as the adapter hands it over. */
function replyOf(reply) {
  const [[kind, body]] = Object.entries(reply);
  switch (kind) {
    case 'read':
      return { kind, event: bytes(body.event), eventTtlMs: body['event-ttl-ms'] ?? -2, generation: bytes(body.generation) };
    case 'voted':
      return { kind, nowMs: body['now-ms'] ?? 0, votes: body.votes.map(([entry, at]) => [bytes(entry), at]) };
    case 'generation':
      return { kind, value: body };
    case 'lease':
      return { kind, held: body.held ?? false, ttlMs: body['ttl-ms'] ?? 0 };
    case 'renewed':
      return { kind, renewed: body };
    default:
      return { kind };
  }
}

test('the protocol vector directory holds vectors', () => {
  assert.ok(files.length >= 15, `only ${files.length} protocol vectors`);
});

for (const file of files) {
  test(`protocol vector ${file}`, () => {
    const vector = JSON.parse(readFileSync(join(DIR, file), 'utf8'));
    const clock = new FakeClock();
    const breaker = new CircuitBreaker({ ...optionsOf(vector.config), clock: clock.read });
    const link = breaker[fleetLink](() => {});
    const m = vector.member;
    const protocol = new MemberProtocol({
      name: m.name,
      memberId: m.id,
      session: m.session,
      reconcileIntervalMs: m['reconcile-interval-ms'],
      link,
      key: m.key === undefined ? null : Buffer.from(m.key, 'utf8'),
    });
    const permits = new Map();
    vector.steps.forEach((step, i) => {
      const where = `step ${i} ${JSON.stringify(step)}`;
      const now = step.at;
      clock.now = now;
      let command = null;
      switch (step.op) {
        case 'up':
        case 'down':
        case 'changed':
        case 'tick':
          command = protocol.input(step.op, now);
          break;
        case 'message':
          command = protocol.message(bytes(step.line), now);
          break;
        case 'reply':
          command = protocol.reply(replyOf(step.reply), now);
          break;
        case 'acquire': {
          const permit = breaker.acquire();
          if (permit >= 0 && step.permit !== undefined) permits.set(step.permit, permit);
          if (step.admitted !== undefined) assert.equal(permit >= 0, step.admitted, `${where}: admitted`);
          break;
        }
        case 'record':
          assert.ok(permits.has(step.permit), `${where}: no permit ${step.permit}`);
          breaker.record(permits.get(step.permit), outcome(step.outcome));
          permits.delete(step.permit);
          break;
        default:
          assert.fail(`${where}: unknown op`);
      }
      const expect = step.expect;
      if (expect === undefined) return;
      assert.deepEqual(commandJson(command), expect.command ?? null, `${where}: command`);
      // The Redis call the adapter sends: the core's, as the vector writes it out.
      if ('call' in expect) assert.deepEqual(command.call, expect.call, `${where}: call`);
      if ('deadline-ms' in expect) {
        const got = protocol.deadlineMs === null ? null : Math.floor(protocol.deadlineMs);
        assert.equal(got, expect['deadline-ms'], `${where}: deadline`);
      }
      if ('lease-held' in expect) assert.equal(protocol.leaseHeld, expect['lease-held'], `${where}: lease-held`);
      const status = breaker.fleetStatus();
      if ('state' in expect) assert.equal(breaker.state, expect.state, `${where}: state`);
      if ('breaker-lease' in expect) assert.equal(status.leaseHeld, expect['breaker-lease'], `${where}: breaker-lease`);
      if ('degraded' in expect) assert.equal(status.degraded, expect.degraded, `${where}: degraded`);
      if ('generation' in expect) assert.equal(status.generation, expect.generation, `${where}: generation`);
      if ('cooldown-remaining-ms' in expect) {
        assert.equal(Math.floor(breaker.metrics().cooldownRemainingMs), expect['cooldown-remaining-ms'], `${where}: cooldown`);
      }
      const counts = protocol.counts();
      for (const [name, want] of Object.entries(expect.counts ?? {})) {
        const got = name in counts ? counts[name] : counts.ignored[name];
        assert.notEqual(got, undefined, `${where}: unknown count ${name}`);
        assert.equal(got, want, `${where}: count ${name}`);
      }
    });
    protocol.free();
    breaker.dispose();
  });
}
