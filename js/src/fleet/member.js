// A fleet member: one breaker joined to a fleet through Redis (FLEET.md; the wire format is
// wit/fleet.md). All of it runs in the background — timers, the subscription, promise
// chains — and talks to the breaker only through its fleet methods, whose rules are the
// core's. `acquire` and `record` never wait on anything here: they read the breaker's own
// memory, and the only thing they touch of this file is a transition listener that
// schedules work for later.

import { EventEmitter, once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { fleetAnnouncementHolds, fleetTimings } from '../breaker.js';
import {
  RAISE_SCRIPT, RELEASE_SCRIPT, RENEW_SCRIPT, VOTE_SCRIPT, format, keys, parse,
} from './wire.js';

/** A command that took longer than `storeTimeoutMs`. */
export class StoreTimeoutError extends Error {
  constructor(ms) {
    super(`the store did not answer within ${ms} ms`);
    this.name = 'StoreTimeoutError';
    this.code = 'ERR_TRIPGATE_STORE_TIMEOUT';
  }
}

const delay = (ms) => new Promise((resolve) => {
  setTimeout(resolve, ms).unref();
});

/** Reconnect backoff: 50 ms doubling to 2 s, with jitter so a fleet does not reconnect in step. */
const backoff = (retries) => Math.min(50 * 2 ** Math.min(retries, 6), 2_000) * (0.75 + Math.random() / 2);

export class FleetMember extends EventEmitter {
  #breaker;
  #name;
  #key;
  #keys;
  #id;
  #reconcileMs;
  #timeoutMs;
  #client;
  #sub;
  /** true, false, or null before the store has first answered or failed. */
  #reachable = null;
  #subscribed = false;
  #leaseHeld = false;
  #leaseTimer = null;
  #leaseRetry = null;
  #tick = null;
  /** Background work runs one task at a time, in order, so no two race on the store. */
  #chain = Promise.resolve();
  #reconcileQueued = false;
  #leaseQueued = false;
  #left = false;
  /** Announcements queued or being published: the store's lease goes back only after them. */
  #announcing = 0;
  /** The newest announcement the store could not take, retried once it is back. */
  #unsent = null;
  #counters = {
    received: 0,
    applied: 0,
    published: 0,
    reconciles: 0,
    storeErrors: 0,
    ignored: { garbage: 0, 'wrong-fleet': 0, stale: 0, forged: 0, unsigned: 0 },
  };
  #onTransition = (t) => {
    // Called from inside acquire/record: only schedule, never do work here.
    queueMicrotask(() => this.#drain(t));
  };

  #onLeave;

  constructor(breaker, options, createClient, onLeave = () => {}) {
    super();
    this.#onLeave = onLeave;
    this.#breaker = breaker;
    this.#name = options.name;
    this.#key = options.key;
    this.#keys = keys(options.name);
    this.#id = options.memberId ?? randomBytes(8).toString('hex');
    this.#reconcileMs = options.reconcileIntervalMs;
    this.#timeoutMs = options.storeTimeoutMs;
    const clientOptions = {
      url: options.url,
      // A command while disconnected fails at once (the member is then degraded) rather
      // than waiting in a queue for a store that may not come back.
      disableOfflineQueue: true,
      socket: {
        connectTimeout: Math.max(options.storeTimeoutMs, 1_000),
        reconnectStrategy: backoff,
        ...(options.tls === undefined ? {} : { tls: true, ...options.tls }),
      },
    };
    this.#client = createClient(clientOptions);
    // The subscriber may queue its SUBSCRIBE until it connects; node-redis re-subscribes
    // after every reconnect.
    this.#sub = createClient({ ...clientOptions, disableOfflineQueue: false });
    for (const client of [this.#client, this.#sub]) {
      // Without a listener an 'error' event would throw and end the process.
      client.on('error', (error) => this.#storeError(error, client === this.#client));
    }
    this.#client.on('ready', () => this.#queueReconcile());
    this.#sub.on('ready', () => {
      this.#subscribed = true;
    });
    for (const event of ['end', 'error', 'reconnecting']) {
      this.#sub.on(event, () => {
        this.#subscribed = false;
      });
    }
  }

  /** Connects, subscribes and reconciles, each bounded by `storeTimeoutMs`; never rejects on a store that is down. */
  async start() {
    // Until the store has answered, the breaker decides on its own.
    this.#breaker.fleetStore({ reachable: false });
    this.#breaker.on('transition', this.#onTransition);
    const bounded = (promise) => Promise.race([promise.catch(() => {}), delay(this.#timeoutMs)]);
    this.#client.connect().catch(() => {});
    const subscribing = this.#sub.connect()
      .then(() => this.#sub.subscribe(this.#keys.channel, (message) => this.#onMessage(message)))
      .then(() => {
        this.#subscribed = true;
      });
    await bounded(Promise.all([once(this.#client, 'ready'), subscribing]));
    await this.#queueReconcile();
    if (this.#reachable !== true) this.#unreachable(new Error('the store is not reachable'));
    this.#tick = setInterval(() => {
      this.#queueReconcile();
      this.#queueLease();
    }, this.#reconcileMs);
    this.#tick.unref();
  }

  /** This member's 16-hex-digit id (its votes and lease carry it). */
  get id() {
    return this.#id;
  }

  /** `{ member, name, degraded, subscribed, generation, leaseHeld, counters }` now. */
  status() {
    const fleet = this.#breaker.fleetStatus();
    const c = this.#counters;
    return {
      member: this.#id,
      name: this.#name,
      degraded: this.#reachable !== true,
      subscribed: this.#subscribed,
      generation: fleet.generation,
      leaseHeld: this.#leaseHeld && fleet.leaseHeld,
      counters: { ...c, ignored: { ...c.ignored } },
    };
  }

  /**
   * Leaves the fleet: stops every timer, gives the lease back if held (bounded), closes
   * both connections. The breaker carries on as a breaker of its own (degraded), so a
   * half-open round is never left waiting for a lease nobody will take.
   */
  async leave() {
    if (this.#left) return;
    this.#left = true;
    this.#onLeave();
    clearInterval(this.#tick);
    this.#stopLease();
    clearTimeout(this.#leaseRetry);
    this.#breaker.off('transition', this.#onTransition);
    await this.#chain;
    if (this.#leaseHeld) await this.#release().catch(() => {});
    try {
      this.#breaker.fleetStore({ reachable: false });
    } catch {
      // A disposed breaker: nothing is left to tell.
    }
    this.#reachable = false;
    for (const client of [this.#sub, this.#client]) {
      try {
        await Promise.race([client.close(), delay(this.#timeoutMs)]);
      } catch {
        // Closing a client that never connected fails; it holds nothing then.
      }
      try {
        client.destroy();
      } catch {
        // Already closed.
      }
    }
  }

  // ---- the background queue ----------------------------------------------------------------

  #run(task) {
    const next = this.#chain.then(() => (this.#left ? undefined : task())).catch((error) => this.#failed(error));
    this.#chain = next;
    return next;
  }

  /**
   * A background task failed. A store failure was counted where it happened; a breaker
   * disposed under the member ends the membership; anything else is reported as a
   * 'warning' event. Never thrown: nothing here may end the process.
   */
  #failed(error) {
    if (error?.storeFailure) return;
    if (error?.code === 'ERR_TRIPGATE_DISPOSED') {
      this.leave().catch(() => {});
      return;
    }
    this.emit('warning', error);
  }

  #queueReconcile() {
    if (this.#reconcileQueued) return this.#chain;
    this.#reconcileQueued = true;
    return this.#run(async () => {
      this.#reconcileQueued = false;
      await this.#reconcile();
    });
  }

  #queueLease() {
    if (this.#leaseQueued || this.#leaseHeld || this.#reachable !== true) return;
    this.#leaseQueued = true;
    this.#run(async () => {
      this.#leaseQueued = false;
      await this.#takeLease();
    });
  }

  /** After a transition: announcements to publish, a lease to take. */
  #drain(t) {
    if (this.#left) return;
    try {
      const announcement = this.#breaker.fleetTakeAnnouncement();
      if (announcement !== null) {
        this.#announcing++;
        this.#run(async () => {
          try {
            await this.#announce(announcement);
          } finally {
            this.#announcing--;
          }
        });
      }
      // After the announcement is published: until its event arrives, nobody else may
      // start a round.
      if (this.#leaseHeld) this.#run(() => this.#releaseIfEnded());
      if (t?.to === 'half-open') this.#queueLease();
    } catch (error) {
      this.#failed(error);
    }
  }

  // ---- the store -----------------------------------------------------------------------------

  /** One command (or MULTI) bounded by `storeTimeoutMs`; a failure makes the member degraded. */
  async #cmd(send) {
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new StoreTimeoutError(this.#timeoutMs)), this.#timeoutMs);
    });
    try {
      return await Promise.race([send(this.#client), timeout]);
    } catch (error) {
      this.#unreachable(error);
      const wrapped = error instanceof Error ? error : new Error(String(error));
      wrapped.storeFailure = true;
      throw wrapped;
    } finally {
      clearTimeout(timer);
    }
  }

  #eval(script, key, ...args) {
    return this.#cmd((c) => c.sendCommand(['EVAL', script, '1', key, ...args.map(String)]));
  }

  #storeError(error, main) {
    this.#counters.storeErrors++;
    if (main) this.#unreachable(error);
  }

  #unreachable(error) {
    if (this.#left || this.#reachable === false) return;
    this.#reachable = false;
    this.#stopLease();
    this.#leaseHeld = false;
    this.#breaker.fleetStore({ reachable: false });
    this.emit('degraded', { degraded: true, error });
  }

  #reachableAgain() {
    if (this.#reachable === true) return;
    this.#reachable = true;
    this.#breaker.fleetStore({ reachable: true });
    this.emit('degraded', { degraded: false, error: null });
  }

  /**
   * Reads the stored event back (GET + PTTL) and applies it: pub/sub drops messages while
   * a member is away, the keys do not. An `open` is applied with the cooldown the store's
   * clock has left (PTTL).
   */
  async #reconcile() {
    const [raw, pttl] = await this.#cmd((c) => c.multi()
      .addCommand(['GET', this.#keys.event])
      .addCommand(['PTTL', this.#keys.event])
      .exec());
    const generation = this.#breaker.fleetStatus().generation;
    if (generation > 0) await this.#eval(RAISE_SCRIPT, this.#keys.gen, generation);
    this.#counters.reconciles++;
    const wasDown = this.#reachable !== true;
    this.#reachableAgain();
    if (raw !== null && raw !== undefined) {
      const parsed = parse(String(raw), this.#name, this.#key);
      if (parsed.ignored !== undefined) {
        this.#ignore(parsed.ignored, String(raw), 'reconcile');
      } else if (parsed.event.generation > this.#breaker.fleetStatus().generation) {
        // Already applied events are skipped here, not handed to the core: a reconcile
        // every second would otherwise count one stale event a second.
        const event = parsed.event;
        if (event.kind === 'close') this.#apply(event, 'reconcile');
        else if (Number(pttl) > 0) this.#apply({ ...event, remainingMs: Number(pttl) }, 'reconcile');
      }
    }
    if (wasDown && this.#unsent !== null) {
      const unsent = this.#unsent;
      this.#unsent = null;
      // Unless the fleet's events applied since have made it untrue.
      if (this.#stillTrue(unsent)) await this.#announce(unsent);
    }
    this.#queueLease();
  }

  #onMessage(message) {
    if (this.#left) return;
    this.#counters.received++;
    try {
      const parsed = parse(message, this.#name, this.#key);
      if (parsed.ignored !== undefined) this.#ignore(parsed.ignored, message, 'message');
      else this.#apply(parsed.event, 'message');
    } catch (error) {
      // Inside the Redis client's callback: a throw here would land in its machinery.
      this.#failed(error);
    }
  }

  #ignore(reason, raw, source) {
    this.#counters.ignored[reason]++;
    this.emit('ignored', { reason, source, message: raw.length > 200 ? `${raw.slice(0, 200)}…` : raw });
  }

  #apply(event, source) {
    const applied = this.#breaker.fleetApply(event);
    if (applied === 'stale') {
      this.#ignore('stale', `generation ${event.generation}`, source);
      return;
    }
    this.#counters.applied++;
    // A newer event ends any round this member led; the core has dropped the lease.
    if (this.#leaseHeld) this.#run(() => this.#releaseIfEnded());
    this.emit('event', { ...event, applied, source });
  }

  // ---- announcements -------------------------------------------------------------------------

  async #announce(announcement) {
    try {
      // The core says whose round it was: a round of this member's own (below the
      // quorum) ends in `tripped` or in nothing, never in the fleet's events.
      if (announcement.kind === 'tripped') await this.#vote();
      else if (announcement.kind === 'reopened') await this.#publishOpen();
      else await this.#publish('close', 0);
    } catch (error) {
      if (error?.storeFailure) this.#unsent = this.#stillTrue(announcement) ? announcement : null;
      throw error;
    }
  }

  /** Whether an announcement still describes the breaker (the core's rule): worth sending after an outage. */
  #stillTrue(announcement) {
    return this.#breaker[fleetAnnouncementHolds](announcement);
  }

  /** Records this member's trip in the store and opens the fleet when the core says quorum. */
  async #vote() {
    // Votes count within one configured cooldown (the core's rule), however long this
    // opening is after backoff.
    const cooldown = Math.max(1, Math.ceil(this.#breaker[fleetTimings]().cooldownMs));
    const reply = await this.#eval(VOTE_SCRIPT, this.#keys.votes, this.#id, cooldown);
    const now = Number(reply[0]);
    const votes = [];
    for (let i = 1; i + 1 < reply.length; i += 2) {
      const member = String(reply[i]);
      const at = Number(reply[i + 1]);
      // A vote someone else wrote in a shape that is not ours counts for nothing.
      if (/^[0-9a-f]{16}$/.test(member) && Number.isFinite(at)) votes.push({ member, ageMs: Math.max(0, now - at) });
    }
    if (this.#breaker.fleetVotes(votes)) await this.#publishOpen();
  }

  /** Publishes `open` with the cooldown this member's own opening has left, if it is still open. */
  async #publishOpen() {
    const remaining = this.#breaker.metrics().cooldownRemainingMs;
    if (this.#breaker.state === 'open' && remaining > 0) await this.#publish('open', Math.ceil(remaining));
  }

  /** INCR gen, then SET event + DEL votes + PUBLISH in one MULTI. */
  async #publish(kind, remainingMs) {
    const generation = Number(await this.#cmd((c) => c.sendCommand(['INCR', this.#keys.gen])));
    const message = format({ name: this.#name, generation, kind, remainingMs, origin: this.#id }, this.#key);
    const set = ['SET', this.#keys.event, message];
    if (kind === 'open') set.push('PX', String(remainingMs));
    await this.#cmd((c) => c.multi()
      .addCommand(set)
      .addCommand(['DEL', this.#keys.votes])
      .addCommand(['PUBLISH', this.#keys.channel, message])
      .exec());
    this.#counters.published++;
    this.emit('published', { generation, kind, remainingMs });
  }

  // ---- the probe lease -----------------------------------------------------------------------

  async #takeLease() {
    clearTimeout(this.#leaseRetry);
    if (this.#leaseHeld || this.#reachable !== true || !this.#breaker.fleetStatus().wantsLease) return;
    const ms = Math.max(1, Math.ceil(this.#breaker[fleetTimings]().probeTimeoutMs));
    const reply = await this.#cmd((c) => c.sendCommand(['SET', this.#keys.lease, this.#id, 'NX', 'PX', String(ms)]));
    if (reply === 'OK') {
      this.#leaseHeld = true;
      this.#breaker.fleetStore({ reachable: true, leaseMs: ms });
      this.#leaseTimer = setInterval(() => this.#run(() => this.#renew(ms)), Math.max(1, Math.floor(ms / 3)));
      this.#leaseTimer.unref();
      this.emit('lease', { held: true });
      return;
    }
    // Someone else probes: try again when their lease would run out (or sooner, at the
    // next tick, if their round ends with an event first).
    const left = Number(await this.#cmd((c) => c.sendCommand(['PTTL', this.#keys.lease])));
    const wait = Math.min(Math.max(left, 5), this.#reconcileMs);
    this.#leaseRetry = setTimeout(() => this.#queueLease(), wait);
    this.#leaseRetry.unref();
  }

  async #renew(ms) {
    if (!this.#leaseHeld) return;
    if (!this.#breaker.fleetStatus().leaseHeld) {
      // The round is over: never renewed again, given back after its announcement.
      await this.#releaseIfEnded();
      return;
    }
    const renewed = Number(await this.#eval(RENEW_SCRIPT, this.#keys.lease, this.#id, ms));
    if (renewed === 1) {
      this.#breaker.fleetStore({ reachable: true, leaseMs: ms });
    } else {
      this.#stopLease();
      this.#leaseHeld = false;
      this.#breaker.fleetStore({ reachable: true, leaseMs: null });
      this.emit('lease', { held: false });
    }
  }

  /**
   * Gives the store's lease back once the core holds it no longer: the round ended
   * (announced or not), a fleet event ended it, or it ran out. Not while an announcement
   * is still to be published: the release queued after it does it then.
   */
  async #releaseIfEnded() {
    if (!this.#leaseHeld || this.#announcing > 0 || this.#breaker.fleetStatus().leaseHeld) return;
    await this.#release();
  }

  async #release() {
    this.#stopLease();
    this.#leaseHeld = false;
    this.emit('lease', { held: false });
    await this.#eval(RELEASE_SCRIPT, this.#keys.lease, this.#id);
  }

  #stopLease() {
    clearInterval(this.#leaseTimer);
    this.#leaseTimer = null;
  }
}
