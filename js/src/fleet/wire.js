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

/**
 * The vote: ZADD at the store's TIME, trim to one cooldown, keep the set no longer than
 * that; returns the store's time (ms) and then member, time pairs.
 * KEYS: votes. ARGV: member, cooldown ms.
 */
export const VOTE_SCRIPT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cooldown = tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - cooldown)
redis.call('PEXPIRE', KEYS[1], cooldown)
local out = { tostring(now) }
for _, v in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1, 'WITHSCORES')) do out[#out + 1] = v end
return out`;

/** PEXPIRE the lease only while it is still this member's. KEYS: lease. ARGV: member, ms. */
export const RENEW_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`;

/** DEL the lease only while it is still this member's. KEYS: lease. ARGV: member. */
export const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/**
 * Raise the generation counter to at least a member's last applied generation: a store
 * restarted empty would otherwise hand out generations every member fences as stale.
 * KEYS: gen. ARGV: generation.
 */
export const RAISE_SCRIPT = `
local g = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if g < tonumber(ARGV[1]) then redis.call('SET', KEYS[1], ARGV[1]) return tonumber(ARGV[1]) end
return g`;
