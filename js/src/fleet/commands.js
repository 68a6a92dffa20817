// The store's side of a member's commands (wit/fleet.md): each protocol command as the
// script or command Redis runs, and the reply read back into the shape the protocol takes.
// A reply of a shape no script returns is `WrongShape`: the store is up, holding data that
// is not ours.

import { createHash } from 'node:crypto';
import { SCRIPTS } from '../../pkg/fleet/scripts.js';
import { fleetEviction } from './protocol.js';

/** A reply of a shape no script returns: the store is up, but its data is not ours. */
class WrongShape extends Error {}

const SHA = Object.fromEntries(Object.entries(SCRIPTS).map(([name, text]) => [name, createHash('sha1').update(text).digest('hex')]));

const isBytes = (v) => v instanceof Uint8Array;
const bytesOrNull = (v) => v === null || isBytes(v);

/** A vote script's time: a decimal (a score may come as a float). */
function storeTime(v) {
  if (!isBytes(v) && typeof v !== 'number') return null;
  const n = Number(isBytes(v) ? Buffer.from(v).toString('latin1') : v);
  return Number.isFinite(n) ? Math.max(0, Math.trunc(n)) : null;
}

/**
 * What a failed command means, read by the core (`fleet::store::fault`): `null` when the
 * store refused it for what a key holds, or answered with a reply of the wrong shape (the
 * store is up, holding bad data: the protocol is answered `refused`); otherwise the error
 * that ends the session: unreachable, slow, or an error reply that is no data's fault (its
 * ACL denies a command, key or channel; out of memory; read-only; loading), named.
 */
export function failure(error, ErrorReply, protocol) {
  if (error instanceof WrongShape) return null;
  if (!(error instanceof ErrorReply)) return error;
  const { kind, explanation } = protocol.fault(String(error.message));
  return kind === 'bad-data' ? null : new StoreFault(explanation);
}

/** An error reply that ends the session: its message is the core's explanation. */
export class StoreFault extends Error {
  name = 'StoreFault';
}

/**
 * The warning for a store whose eviction policy may evict the probe lease (the core's
 * verdict), or null: it keeps the lease, or does not let this user read its config.
 */
async function evictionWarning(send) {
  const value = async (name) => {
    const reply = await send(['CONFIG', 'GET', name]);
    // A pair under RESP2, a map under RESP3.
    const found = Array.isArray(reply) ? reply[1] : reply instanceof Map ? reply.get(name) : reply?.[name];
    if (found === undefined || found === null) throw new WrongShape();
    return String(found);
  };
  try {
    return fleetEviction(await value('maxmemory-policy'), Number(await value('maxmemory')));
  } catch {
    return null;
  }
}

/** The channels a member listens on: its fleet's, and its own (where a release wakes it). */
export const channelsOf = (keys) => [keys.channel, keys.ownChannel];

/**
 * Runs the protocol's commands on one store: `cluster` sends each to its key's slot and
 * publishes sharded (the channels share the keys' slot).
 */
export class Commands {
  #cluster;
  #ErrorReply;
  #blobs;

  constructor(redis, cluster) {
    this.#cluster = cluster;
    this.#ErrorReply = redis.ErrorReply;
    this.#blobs = { typeMapping: { [redis.RESP_TYPES.BLOB_STRING]: Buffer } };
  }

  #send(client, key, args) {
    return this.#cluster ? client.sendCommand(key, false, args, this.#blobs) : client.sendCommand(args, this.#blobs);
  }

  /** The core's warning if the store may evict the probe lease (see `evictionWarning`), or null. */
  evictionWarning(client) {
    return evictionWarning((args) => this.#send(client, undefined, args));
  }

  /** Runs a script by its hash, loading it on a store that does not have it yet. */
  async #script(client, name, keys, args) {
    const tail = [String(keys.length), ...keys, ...args.map(String)];
    try {
      return await this.#send(client, keys[0], ['EVALSHA', SHA[name], ...tail]);
    } catch (error) {
      if (!(error instanceof this.#ErrorReply) || !String(error.message).startsWith('NOSCRIPT')) throw error;
      return this.#send(client, keys[0], ['EVAL', SCRIPTS[name], ...tail]);
    }
  }

  /**
   * Executes a protocol command by the Redis call the core made for it (`command.call`);
   * its reply as the protocol reads it, by the script that answered.
   */
  async run(client, command) {
    const { script, keys: callKeys, args } = command.call;
    if (script === 'INCR') {
      const value = await this.#send(client, callKeys[0], ['INCR', ...callKeys]);
      if (typeof value !== 'number') throw new WrongShape();
      return { kind: 'generation', value };
    }
    const r = await this.#script(client, script, callKeys, args);
    switch (script) {
      case 'read':
        if (!Array.isArray(r) || r.length !== 3 || !bytesOrNull(r[0]) || !Number.isInteger(r[1]) || !bytesOrNull(r[2])) {
          throw new WrongShape();
        }
        return { kind: 'read', event: r[0], eventTtlMs: r[1], generation: r[2] };
      case 'vote':
        return voted(r);
      case 'publish':
        return { kind: 'published' };
      case 'take':
        if (!Array.isArray(r) || r.length !== 2 || !Number.isInteger(r[0]) || !Number.isInteger(r[1])) throw new WrongShape();
        return { kind: 'lease', held: r[0] === 1, ttlMs: r[1] };
      case 'renew':
        if (!Number.isInteger(r)) throw new WrongShape();
        return { kind: 'renewed', renewed: r === 1 };
      case 'release':
        return { kind: 'released' };
      case 'repair':
        return { kind: 'repaired' };
      default:
        throw new WrongShape();
    }
  }
}

/** The vote script's reply: the store's time, then entry, time pairs. */
function voted(r) {
  const nowMs = Array.isArray(r) ? storeTime(r[0]) : null;
  if (nowMs === null) throw new WrongShape();
  const votes = [];
  for (let i = 1; i + 1 < r.length; i += 2) {
    const at = storeTime(r[i + 1]);
    // Anything else in the reply is not a vote.
    if (isBytes(r[i]) && at !== null) votes.push([r[i], at]);
  }
  return { kind: 'voted', nowMs, votes };
}
