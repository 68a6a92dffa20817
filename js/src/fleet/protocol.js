// The core's member protocol of fleet mode (core/src/fleet/protocol/) as JS sees it:
// what happened goes in, the one command to run on the store comes out as a plain object,
// and the reply goes back in. The protocol runs in the same wasm instance as its breaker
// (js/crate/src/fleet_protocol.rs), so nothing here decides anything: every rule — when to
// vote, publish, take, renew and give back the lease, reconcile, repair, what a line or a
// vote says, how long an open lasts, the backoff, the option bounds — is the core's. The
// one thing JS computes is the HMAC-SHA256 of the shared key (node:crypto), which the core
// asks for through `sign`.
//
// Commands (kebab-case kinds, as the shared protocol vectors spell them):
//   { kind: 'read' }                           { kind: 'vote', entry, windowMs }
//   { kind: 'next-generation' }                { kind: 'publish', line, expireMs | null }
//   { kind: 'take-lease', holder, ms }         { kind: 'renew-lease', holder, ms }
//   { kind: 'release-lease', holder, notice }  { kind: 'repair', floor }
// Replies (`kind` and data; bytes are Uint8Arrays, absent ones null):
//   { kind: 'read', event, eventTtlMs, generation }
//   { kind: 'voted', nowMs, votes: [[entry, atMs], …] }
//   { kind: 'generation', value }  { kind: 'published' }  { kind: 'lease', held, ttlMs }
//   { kind: 'renewed', renewed }   { kind: 'released' }   { kind: 'repaired' }
//   { kind: 'refused' }: the store answered with an error of its data, or the wrong shape.

import { createHmac, randomBytes } from 'node:crypto';
import { onInstall, wasm } from '../tables.js';

/** Fleet mode's tables from the core: command and ignored-reason names, option bounds. */
export const fleetTables = {};

onInstall(() => {
  const t = JSON.parse(wasm.fleet_tables());
  Object.assign(fleetTables, {
    commands: Object.freeze(t.commands),
    ignored: Object.freeze(t.ignored),
    /** Duration options by core name: `{ code, defaultMs, minMs, maxMs }`. */
    options: Object.freeze(Object.fromEntries(t.options.map((o) => [o.name, Object.freeze(o)]))),
    minKeyBytes: t.minKeyBytes,
    maxLine: t.maxLine,
    maxVotes: t.maxVotes,
    stateLen: t.stateLen,
    moved: t.moved,
    /** The ACL rules a member's Redis user needs (the core's `fleet::store::ACL`). */
    acl: t.acl,
  });
  Object.freeze(fleetTables);
});

const INPUTS = { up: 0, down: 1, changed: 2, tick: 3 };
const MESSAGE = 4;
const READ = 5;
const VOTED = 6;
const REPLIES = { generation: 7, published: 8, lease: 9, renewed: 10, released: 11, repaired: 12, refused: 13 };
const LEAVE = 14;
const NONE = 0xffff_ffff;
const EMPTY_BYTES = new Uint8Array(0);
const EMPTY_LENGTHS = new Uint32Array(0);
const EMPTY_NUMBERS = new Float64Array(0);

/**
 * The core's `Signer` for a shared key: `sign(body, out)` writes the HMAC-SHA256 of
 * `body` into `out` (both views of the wasm memory, valid during the call only).
 */
export function signer(key) {
  if (key === null || key === undefined) return undefined;
  return {
    sign(body, out) {
      out.set(createHmac('sha256', key).update(body).digest());
    },
  };
}

/** A member's session: 16 random hex digits, never all zero. */
export function randomSession() {
  const bytes = randomBytes(8);
  bytes[7] |= 1;
  return bytes.toString('hex');
}

/** The core's verdict on a store's eviction policy: null, or the warning to report. */
export const fleetEviction = (policy, maxmemory) => wasm.fleet_eviction(policy, maxmemory) ?? null;

/** A member's stable id from its name (the wire's `member_id`): 16 hex digits. */
export const memberIdOf = (name) => wasm.fleet_member_id(name);

/** The Redis Cluster slot of fleet `name`'s keys and channels. */
export const fleetSlot = (name) => wasm.fleet_slot(name);

/** Whether `name` is a fleet name (the wire's rule). */
export const validFleetName = (name) => typeof name === 'string' && wasm.fleet_valid_name(name);

/**
 * The core's rule for a duration option (`reconcile-interval`, `store-timeout`,
 * `max-backoff`): null when `ms` is valid, else the rule in words, naming the core option.
 */
export function checkDuration(option, ms) {
  return wasm.fleet_check_duration(fleetTables.options[option].code, ms) ?? null;
}

/** The core's reconnect backoff: `up(nowMs)`, `down(nowMs)` → ms to wait, `free()`. */
export function backoff(maxMs, memberId) {
  return new wasm.FleetBackoff(maxMs, memberId);
}

/**
 * One member of one fleet: the core's protocol, driving `link`'s breaker. `link` is the
 * breaker's `[fleetLink]` hold: `wasm()` its wasm breaker, `now()` its clock reading,
 * `emit()` tells its listeners what a fleet event did.
 */
export class MemberProtocol {
  #p;
  #link;
  #state = new Float64Array(fleetTables.stateLen);
  #sharded;

  /**
   * `session` (16 hex digits) is random unless given: with the member id it holds the
   * probe lease, so two processes that share a member name never share a lease.
   */
  constructor({ name, memberId, session = randomSession(), reconcileIntervalMs, link, key, sharded = false }) {
    this.#link = link;
    this.#sharded = sharded;
    this.#p = new wasm.FleetProtocol(name, memberId, session, reconcileIntervalMs, link.wasm(), signer(key));
    const [gen, event, votes, lease, channel, waiters, wake, ownChannel] = this.#p.keys().split(' ');
    /**
     * The fleet's keys and channel, the lease's waiters, the prefix of members' own
     * channels and this member's own (the wire's names).
     */
    this.keys = Object.freeze({ gen, event, votes, lease, channel, waiters, wake, ownChannel });
    /** Who holds the lease when this member does: its id and session, 32 hex digits. */
    this.holder = this.#p.holder();
    this.#p.state(this.#state);
  }

  /**
   * The store's error reply to the command in flight, read by the core: `{ kind,
   * explanation }`, kind `bad-data` (answer `refused`), `denied` or `unavailable`.
   */
  fault(message) {
    const text = this.#p.fault(message);
    const space = text.indexOf(' ');
    return { kind: text.slice(0, space), explanation: text.slice(space + 1) };
  }

  /** `up`, `down`, `changed` (the breaker woke the member) or `tick` (the deadline came). */
  input(kind, nowMs) {
    return this.#handle(INPUTS[kind], EMPTY_BYTES, EMPTY_LENGTHS, EMPTY_NUMBERS, nowMs);
  }

  /** A line from the fleet's channel (anything past the longest line is never read). */
  message(bytes, nowMs) {
    const line = bytes.length > fleetTables.maxLine ? bytes.subarray(0, fleetTables.maxLine + 1) : bytes;
    return this.#handle(MESSAGE, line, EMPTY_LENGTHS, EMPTY_NUMBERS, nowMs);
  }

  /** The store's reply to the command last asked for. */
  reply(reply, nowMs) {
    switch (reply.kind) {
      case 'read': {
        const { event, generation } = reply;
        const bytes = concat([event ?? EMPTY_BYTES, generation ?? EMPTY_BYTES]);
        const lengths = Uint32Array.of(event === null ? NONE : event.length, generation === null ? NONE : generation.length);
        return this.#handle(READ, bytes, lengths, Float64Array.of(reply.eventTtlMs), nowMs);
      }
      case 'voted': {
        const entries = reply.votes.map(([entry]) => entry.subarray(0, fleetTables.maxLine + 1));
        const lengths = Uint32Array.from(entries, (entry) => entry.length);
        const numbers = Float64Array.of(reply.nowMs, ...reply.votes.map(([, at]) => at));
        return this.#handle(VOTED, concat(entries), lengths, numbers, nowMs);
      }
      case 'generation':
        return this.#handle(REPLIES.generation, EMPTY_BYTES, EMPTY_LENGTHS, Float64Array.of(reply.value), nowMs);
      case 'lease':
        return this.#handle(REPLIES.lease, EMPTY_BYTES, EMPTY_LENGTHS, Float64Array.of(reply.held ? 1 : 0, reply.ttlMs), nowMs);
      case 'renewed':
        return this.#handle(REPLIES.renewed, EMPTY_BYTES, EMPTY_LENGTHS, Float64Array.of(reply.renewed ? 1 : 0), nowMs);
      default:
        return this.#handle(REPLIES[reply.kind] ?? REPLIES.refused, EMPTY_BYTES, EMPTY_LENGTHS, EMPTY_NUMBERS, nowMs);
    }
  }

  /** The command that gives the lease back as the member leaves, if it holds it, or null. */
  leave(nowMs) {
    return this.#handle(LEAVE, EMPTY_BYTES, EMPTY_LENGTHS, EMPTY_NUMBERS, nowMs);
  }

  #handle(kind, bytes, lengths, numbers, nowMs) {
    const link = this.#link;
    const r = this.#p.handle(kind, bytes, lengths, numbers, link.wasm(), link.now(), nowMs);
    this.#p.state(this.#state);
    if (r >= fleetTables.moved) link.emit();
    const code = (r % fleetTables.moved) - 1;
    return code < 0 ? null : this.#command(fleetTables.commands[code]);
  }

  #command(kind) {
    return { ...this.#fields(kind), call: this.#call() };
  }

  /** The command's Redis call, as the core makes it: `{ script, keys, args }` (`INCR`: no script). */
  #call() {
    const [script, count, ...parts] = this.#p.call(this.#sharded).split('\n');
    const n = Number(count);
    return { script, keys: parts.slice(0, n), args: parts.slice(n) };
  }

  #fields(kind) {
    const number = this.#state[4];
    switch (kind) {
      case 'vote':
        return { kind, entry: this.#p.command(), windowMs: number };
      case 'publish':
        return { kind, line: this.#p.command(), expireMs: Number.isNaN(number) ? null : number };
      case 'take-lease':
      case 'renew-lease':
        return { kind, holder: this.#p.command(), ms: number };
      case 'release-lease': {
        const text = this.#p.command();
        const at = text.indexOf('\n');
        return { kind, holder: text.slice(0, at), notice: text.slice(at + 1) };
      }
      case 'repair':
        return { kind, floor: number };
      default:
        return { kind };
    }
  }

  /** When to feed `tick`, in the adapter's ms; null when the member waits on no time. */
  get deadlineMs() {
    const at = this.#state[0];
    return Number.isNaN(at) ? null : at;
  }

  /** The store answers and the member has read its fleet back: the breaker follows it. */
  get synced() {
    return this.#state[1] === 1;
  }

  /** This member holds the store's probe lease. */
  get leaseHeld() {
    return this.#state[2] === 1;
  }

  /** The breaker asked for the lease when last looked at. */
  get wantsLease() {
    return this.#state[3] === 1;
  }

  /** What the member counted: `{ received, applied, …, ignored: { garbage, … } }`. */
  counts() {
    const s = this.#state;
    const ignored = {};
    fleetTables.ignored.forEach((name, code) => {
      ignored[name] = s[12 + code];
    });
    return {
      received: s[5],
      applied: s[6],
      published: s[7],
      reconciles: s[8],
      leases: s[9],
      repairs: s[10],
      refused: s[11],
      ignored,
    };
  }

  /** Frees the wasm side. */
  free() {
    this.#p.free();
  }
}

function concat(parts) {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
