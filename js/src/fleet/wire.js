// The Redis wire format of fleet mode, version 1 (wit/fleet.md: keys, channel, message
// encoding, HMAC, scripts). A Rust member implements the same page, so nothing here may
// drift from it: a change is a change to wit/fleet.md first.

import { createHmac, timingSafeEqual } from 'node:crypto';

export const VERSION = 'tripgate1';
const NAME = /^[A-Za-z0-9._:-]{1,128}$/;
const MEMBER = /^[0-9a-f]{16}$/;
const MAC = /^[0-9a-f]{64}$/;
const DECIMAL = /^(0|[1-9][0-9]*)$/;

/** Whether a fleet name follows wit/fleet.md's rule. */
export const validName = (name) => typeof name === 'string' && NAME.test(name);
/** Whether a member id is 16 lowercase hex digits. */
export const validMember = (id) => typeof id === 'string' && MEMBER.test(id);

/** The fleet's keys and channel, under its hash-tagged prefix. */
export function keys(name) {
  const prefix = `tripgate:{${name}}:`;
  return {
    gen: `${prefix}gen`,
    event: `${prefix}event`,
    votes: `${prefix}votes`,
    lease: `${prefix}lease`,
    channel: `${prefix}events`,
  };
}

const hmac = (key, text) => createHmac('sha256', key).update(text, 'latin1').digest('hex');

/** A message line; `key` (Uint8Array) signs it, `null` leaves the mac `-`. */
export function format({ name, generation, kind, remainingMs, origin }, key) {
  const body = `${VERSION} ${name} ${generation} ${kind} ${kind === 'open' ? remainingMs : 0} ${origin}`;
  return `${body} ${key === null ? '-' : hmac(key, body)}`;
}

/**
 * A message line read back, checked: `{ event }` or `{ ignored: reason }` with reason
 * `garbage` (not this format: version, field count, a field that does not parse),
 * `wrong-fleet`, `unsigned` (a key is configured and the mac is `-`) or `forged` (a mac
 * that does not match). Staleness is the core's to say, after this.
 */
export function parse(line, name, key) {
  if (typeof line !== 'string' || line.length > 512) return { ignored: 'garbage' };
  const fields = line.split(' ');
  if (fields.length !== 7) return { ignored: 'garbage' };
  const [version, fleet, gen, kind, remaining, origin, mac] = fields;
  if (version !== VERSION || !NAME.test(fleet) || !DECIMAL.test(gen) || !DECIMAL.test(remaining) ||
    !MEMBER.test(origin) || (mac !== '-' && !MAC.test(mac))) {
    return { ignored: 'garbage' };
  }
  const generation = Number(gen);
  const remainingMs = Number(remaining);
  if (!Number.isSafeInteger(generation) || generation === 0 || !Number.isSafeInteger(remainingMs)) {
    return { ignored: 'garbage' };
  }
  if (!(kind === 'open' && remainingMs > 0) && !(kind === 'close' && remainingMs === 0)) {
    return { ignored: 'garbage' };
  }
  if (fleet !== name) return { ignored: 'wrong-fleet' };
  if (key !== null) {
    if (mac === '-') return { ignored: 'unsigned' };
    const want = Buffer.from(hmac(key, line.slice(0, line.length - mac.length - 1)), 'latin1');
    if (!timingSafeEqual(want, Buffer.from(mac, 'latin1'))) return { ignored: 'forged' };
  }
  return { event: { generation, kind, remainingMs, origin } };
}

// The Redis scripts, from core/redis/lua/*.lua (each says its keys, arguments and reply), the
// same files the Rust adapter runs.
export { RAISE_SCRIPT, RELEASE_SCRIPT, RENEW_SCRIPT, VOTE_SCRIPT } from '../../pkg/fleet/scripts.js';
