// A process's link to its Redis (FLEET.md; the wire format is wit/fleet.md): one command
// connection and one subscriber connection for every fleet its breakers join (two
// channels per fleet: the fleet's, and the member's own, where a holder's release wakes
// it alone), and the core's member protocol for each of them (protocol.js). What each
// command sends is commands.js; the deadlines wait in deadlines.js. This file
// only moves bytes: it tells a member's protocol what happened — the store up or down, its
// breaker woken, a message on its channel, the reply to its command, its deadline come —
// runs the one command the protocol asks for, and sleeps until something happens. Nothing
// polls: a breaker wakes its member (on a transition, on a caller turned away for the want
// of the probe lease — once, until the protocol stops asking — and on a probe's outcome),
// and time comes from the protocols' deadlines, on one timer.
//
// `acquire` and `record` never wait on anything here: all of it runs after the breaker's
// call has returned (a microtask), on Redis replies and on timers.

import { EventEmitter } from 'node:events';
import { CircuitBreaker, fleetLink } from '../breaker.js';
import { rangeError, typeError } from '../errors.js';
import { Commands, channelsOf, failure } from './commands.js';
import { Deadlines } from './deadlines.js';
import { MemberProtocol, backoff, fleetSlot, fleetTables, validFleetName } from './protocol.js';
import { readStoreOptions, redact } from './options.js';

/** A command that took longer than `storeTimeoutMs`. */
export class StoreTimeoutError extends Error {
  constructor(ms) {
    super(`the store did not answer within storeTimeoutMs (${ms} ms)`);
    this.name = 'StoreTimeoutError';
    this.code = 'ERR_TRIPGATE_STORE_TIMEOUT';
  }
}

/** `promise` within `ms`; a late answer is the store being down. */
function bounded(promise, ms) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new StoreTimeoutError(ms)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** The link's states. */
const DOWN = 0;
const CONNECTING = 1;
const UP = 2;

/** Members of every store: a breaker joins one fleet once, in any store. */
let slots = 0;

/**
 * A process's store: `await FleetStore.connect(options)`, then `store.join(name, breaker)`
 * for each breaker in fleet mode. The connection is made in the background; until it is,
 * every member decides on its own (degraded).
 */
export class FleetStore {
  #options;
  #redis;
  #commands;
  #members = new Map();
  #names = new Set();
  #link = DOWN;
  #retryAt = 0;
  #epoch = 0;
  #clients = null;
  #backoff;
  #deadlines = new Deadlines();
  #timer = null;
  #armedAt = Infinity;
  #woken = [];
  #draining = false;
  #connects = 0;
  #disconnects = 0;
  #up = false;
  #lastError = null;
  #warning = null;
  #closed = false;

  /** Use `FleetStore.connect`. */
  constructor(options, redis, token) {
    if (token !== TOKEN) throw new TypeError('use `await FleetStore.connect(options)`');
    this.#options = options;
    this.#redis = redis;
    this.#commands = new Commands(redis, options.cluster);
    this.#backoff = backoff(options.maxBackoffMs, options.memberId);
    this.#connect();
  }

  /**
   * Checks `options` (errors name the option) and starts the process's link to Redis. It
   * resolves at once: the connection is made in the background.
   */
  static async connect(options) {
    await installed();
    const checked = readStoreOptions(options);
    return new FleetStore(checked, await redisModule(), TOKEN);
  }

  /** The ACL rules a member's Redis user needs, after `ACL SETUSER <user> on >password` (the core's). */
  static async acl() {
    await installed();
    return fleetTables.acl;
  }

  /** This process's member id (16 hex digits), the same in every fleet it joins. */
  get memberId() {
    return this.#options.memberId;
  }

  /** Why the store was last given up on (a failed or slow command, a dropped connection). */
  get lastError() {
    return this.#lastError;
  }

  /**
   * Why this store may break fleet mode's bound of K probes (its eviction policy may evict
   * the probe lease), as found when the session began; null if it keeps the lease or does
   * not let this user read its config. Also emitted once as a process warning
   * (`TRIPGATE_FLEET_EVICTION`).
   */
  get warning() {
    return this.#warning;
  }

  /**
   * Makes `breaker` (created with `fleetQuorum`) a member of fleet `name`. Refused for a
   * breaker that is a member already (of any store) and for a fleet this store has a
   * member of (one breaker per fleet and process: a second would share its member id,
   * lease and votes).
   */
  join(name, breaker) {
    if (this.#closed) throw new Error('the store is closed');
    if (!(breaker instanceof CircuitBreaker)) {
      throw typeError('breaker', 'breaker must be a CircuitBreaker from tripgate', breaker);
    }
    if (!validFleetName(name)) {
      throw (typeof name === 'string' ? rangeError : typeError)('name',
        'name must be 1-128 characters of A-Z a-z 0-9 . _ - :', name);
    }
    if (!breaker.fleetStatus().enabled) {
      throw rangeError('breaker', 'breaker must be created with fleetQuorum to join a fleet', breaker);
    }
    if (this.#names.has(name)) {
      throw rangeError('name', `this store has a member of fleet ${JSON.stringify(name)} already (one breaker per fleet and process)`, name);
    }
    const entry = {
      slot: ++slots,
      name,
      keySlot: this.#options.cluster ? fleetSlot(name) : null,
      breaker,
      protocol: null,
      fleet: null,
      woken: false,
      askIsNews: true,
      scheduled: null,
      connected: false,
      left: false,
      last: null,
      listener: null,
    };
    const link = breaker[fleetLink]((ask) => this.#wake(entry, ask));
    if (link === null) throw rangeError('breaker', 'breaker is a member of a fleet already: leave() that membership first', breaker);
    try {
      // Until its first session, the breaker is on its own.
      breaker.fleetStore({ reachable: false });
      entry.protocol = new MemberProtocol({
        name,
        memberId: this.#options.memberId,
        reconcileIntervalMs: this.#options.reconcileIntervalMs,
        link,
        key: this.#options.key,
        sharded: this.#options.cluster,
      });
    } catch (error) {
      breaker[fleetLink](null);
      throw error;
    }
    entry.listener = (message) => this.#step(entry, 'message', message);
    entry.fleet = new Fleet(this, entry, TOKEN);
    this.#names.add(name);
    this.#members.set(entry.slot, entry);
    if (this.#link === UP) this.#subscribe(entry);
    return entry.fleet;
  }

  /** Leaves every fleet and closes the connections; the breakers go on as local ones. */
  async close() {
    if (this.#closed) return;
    this.#closed = true;
    await Promise.allSettled([...this.#members.values()].map((entry) => this.leave(entry)));
    this.#epoch++;
    clearTimeout(this.#timer);
    this.#timer = null;
    this.#drop(this.#clients);
    this.#clients = null;
    this.#link = DOWN;
    this.#backoff.free();
  }

  // ---- members ---------------------------------------------------------------------------

  /** @internal (Fleet.leave) */
  async leave(entry) {
    if (entry.left) return;
    let release = null;
    try {
      release = entry.protocol.leave(performance.now());
    } catch {
      // A disposed breaker: it holds nothing to give back.
    }
    this.#forget(entry);
    if (this.#link !== UP) return;
    const { command, subscriber } = this.#clients;
    const work = [this.#unsubscribe(subscriber, entry)];
    if (release !== null) work.push(this.#commands.run(command, release));
    await bounded(Promise.allSettled(work), this.#options.storeTimeoutMs).catch(() => {});
  }

  /** Out of the fleet: the breaker is a local one from here on. */
  #forget(entry) {
    entry.last = this.status(entry);
    entry.left = true;
    entry.connected = false;
    this.#members.delete(entry.slot);
    this.#names.delete(entry.name);
    entry.breaker[fleetLink](null);
    try {
      entry.breaker.fleetStore({ reachable: false });
    } catch {
      // Disposed: nothing is left to tell.
    }
    entry.protocol.free();
  }

  /** @internal (Fleet.status) */
  status(entry) {
    if (entry.left) return { ...entry.last, connected: false, degraded: true, leaseHeld: false };
    const p = entry.protocol;
    return {
      memberId: this.#options.memberId,
      holder: p.holder,
      name: entry.name,
      connected: p.synced,
      degraded: !p.synced,
      leaseHeld: p.leaseHeld,
      connects: this.#connects,
      disconnects: this.#disconnects,
      counts: p.counts(),
    };
  }

  /** Called inside the breaker's call: only schedules. */
  #wake(entry, ask) {
    if (ask) {
      // One ask wakes the member; the breaker keeps asking until a lease or a transition
      // answers it, so the rest are not news (a busy caller does not spin the member).
      if (!entry.askIsNews) return;
      entry.askIsNews = false;
    }
    if (entry.woken) return;
    entry.woken = true;
    this.#woken.push(entry);
    if (!this.#draining) {
      this.#draining = true;
      queueMicrotask(this.#drain);
    }
  }

  #drain = () => {
    this.#draining = false;
    const woken = this.#woken;
    this.#woken = [];
    for (const entry of woken) {
      entry.woken = false;
      this.#step(entry, 'changed');
    }
  };

  /**
   * Feeds `kind` (with `data`) to a member's protocol, then books its deadline, tells its
   * fleet handle, and starts the command it asks for.
   */
  #step(entry, kind, data) {
    if (entry.left) return;
    const now = performance.now();
    let command;
    try {
      if (kind === 'message') command = entry.protocol.message(data, now);
      else if (kind === 'reply') command = entry.protocol.reply(data, now);
      else command = entry.protocol.input(kind, now);
    } catch (error) {
      // The breaker cannot answer (disposed): it leaves the fleet, and its handle says why.
      this.#forget(entry);
      entry.fleet.emit('left', { error });
      if (this.#link === UP) this.#unsubscribe(this.#clients.subscriber, entry).catch(() => {});
      return;
    }
    // A listener told of the transitions may have left the fleet.
    if (entry.left) return;
    const p = entry.protocol;
    if (!p.wantsLease) entry.askIsNews = true;
    this.#schedule(entry, p.deadlineMs);
    if (p.synced !== entry.connected) {
      entry.connected = p.synced;
      entry.fleet.emit('degraded', { degraded: !p.synced, error: p.synced ? null : this.#lastError });
    }
    if (command !== null && this.#link === UP) this.#execute(entry, command);
  }

  async #execute(entry, command) {
    const epoch = this.#epoch;
    let reply;
    try {
      reply = await bounded(this.#commands.run(this.#clients.command, command), this.#options.storeTimeoutMs);
    } catch (error) {
      if (epoch !== this.#epoch || entry.left) return;
      const fatal = failure(error, this.#redis.ErrorReply, entry.protocol);
      if (fatal !== null) {
        this.#lost(fatal);
        return;
      }
      reply = { kind: 'refused' };
    }
    if (epoch === this.#epoch) this.#step(entry, 'reply', reply);
  }

  // ---- the store -------------------------------------------------------------------------

  #clientOptions() {
    const o = this.#options;
    const socket = {
      connectTimeout: o.storeTimeoutMs,
      // Reconnects are the member's: with its backoff, and a read back first.
      reconnectStrategy: false,
      ...(o.tls === undefined ? {} : { tls: true, ...o.tls }),
    };
    // A command while disconnected fails at once rather than waiting in a queue.
    return { socket, disableOfflineQueue: true };
  }

  /** Starts a session: both connections, then each fleet's channel. */
  #connect() {
    const epoch = ++this.#epoch;
    this.#link = CONNECTING;
    const o = this.#options;
    let command;
    let subscriber;
    if (o.cluster) {
      // Every node is reached with the first URL's user, password and TLS: node-redis takes
      // a root node's URL only to find the cluster.
      const first = new URL(o.urls[0]);
      const defaults = this.#clientOptions();
      if (first.username !== '') defaults.username = decodeURIComponent(first.username);
      if (first.password !== '') defaults.password = decodeURIComponent(first.password);
      if (first.protocol === 'rediss:') defaults.socket = { tls: true, ...defaults.socket };
      command = this.#redis.createCluster({
        rootNodes: o.urls.map((url) => ({ url })),
        defaults,
        // A node that fails is the member's to retry, with its backoff.
        maxCommandRedirections: 4,
      });
      subscriber = command;
      // A node's connection that breaks is told at once ('node-error'), while a command to
      // it would wait for the next deadline: the master of a fleet's slot gone is the
      // session's end, as a single server's dropped connection is.
      command.on('node-error', (error, node) => {
        if (epoch === this.#epoch && this.#link === UP && this.#servesFleet(command, node)) this.#lost(error);
      });
    } else {
      command = this.#redis.createClient({ url: o.urls[0], ...this.#clientOptions() });
      subscriber = command.duplicate();
    }
    const lost = (error) => {
      if (epoch === this.#epoch) this.#lost(error);
    };
    for (const client of new Set([command, subscriber])) {
      client.on('error', lost);
      client.on('end', () => lost(new Error('the connection to the store closed')));
    }
    const connecting = Promise.all([...new Set([command, subscriber])].map((c) => c.connect()));
    const clients = { command, subscriber, connecting, settled: false };
    const settled = () => {
      clients.settled = true;
    };
    connecting.then(settled, settled);
    this.#clients = clients;
    bounded(connecting, o.storeTimeoutMs).then(() => {
      if (epoch !== this.#epoch) return;
      this.#link = UP;
      this.#up = true;
      this.#connects++;
      this.#backoff.up(performance.now());
      for (const entry of this.#members.values()) this.#subscribe(entry);
      this.#checkEviction(command, epoch);
    }, lost);
  }

  /** Reads the store's eviction policy as a session begins; warns once if it may evict the lease. */
  #checkEviction(command, epoch) {
    this.#commands.evictionWarning(command).then((warning) => {
      if (epoch !== this.#epoch) return;
      if (warning !== null && warning !== this.#warning) process.emitWarning(warning, { code: 'TRIPGATE_FLEET_EVICTION' });
      this.#warning = warning;
    });
  }

  /** Whether cluster node `node` ({ host, port }) is the master of a member's slot. */
  #servesFleet(cluster, node) {
    for (const entry of this.#members.values()) {
      const master = cluster.slots[entry.keySlot]?.master;
      if (master !== undefined && master.host === node.host && master.port === node.port) return true;
    }
    return false;
  }

  #subscribe(entry) {
    const epoch = this.#epoch;
    const { subscriber } = this.#clients;
    // Its own channel shares the fleet's slot, so one sharded subscribe takes both.
    const channels = channelsOf(entry.protocol.keys);
    const subscribe = this.#options.cluster
      ? subscriber.sSubscribe(channels, entry.listener, true)
      : subscriber.subscribe(channels, entry.listener, true);
    bounded(subscribe, this.#options.storeTimeoutMs).then(() => {
      if (epoch === this.#epoch) this.#step(entry, 'up');
    }, (error) => {
      if (epoch === this.#epoch) this.#lost(error);
    });
  }

  #unsubscribe(subscriber, entry) {
    const channels = channelsOf(entry.protocol.keys);
    return this.#options.cluster
      ? subscriber.sUnsubscribe(channels, entry.listener, true)
      : subscriber.unsubscribe(channels, entry.listener, true);
  }

  /**
   * The session is over: every member decides locally, and the store is tried again after
   * the backoff (which a session that failed at once does not start over).
   */
  #lost(error) {
    if (this.#link === DOWN || this.#closed) return;
    this.#lastError = error instanceof Error ? `${error.name}: ${redact(error.message)}` : String(error);
    if (this.#up) {
      this.#up = false;
      this.#disconnects++;
    }
    this.#epoch++;
    const now = performance.now();
    this.#link = DOWN;
    this.#retryAt = now + this.#backoff.down(now);
    this.#drop(this.#clients);
    this.#clients = null;
    for (const entry of [...this.#members.values()]) this.#step(entry, 'down');
    this.#arm();
  }

  #drop(clients) {
    if (clients === null) return;
    const destroy = () => {
      for (const client of new Set([clients.command, clients.subscriber])) {
        try {
          client.destroy();
        } catch {
          // Never connected, or closed already.
        }
      }
    };
    // A client destroyed while its sockets still connect (a session that timed out while
    // a cluster's master was down or coming back) keeps the sockets that connect after:
    // node-redis 6 neither stops a discovery in flight nor closes a socket still
    // connecting. So a client is destroyed once its connect has settled, which the
    // socket's connect timeout bounds; no connection outlives its session, however many
    // sessions an outage fails.
    if (clients.settled) destroy();
    else clients.connecting.then(destroy, destroy);
  }

  // ---- time ------------------------------------------------------------------------------

  /** Books a member's deadline (a rebooked one is skipped when it comes up). */
  #schedule(entry, at) {
    if (at === entry.scheduled) return;
    entry.scheduled = at;
    if (at === null) return;
    this.#deadlines.push(at, entry);
    this.#arm();
  }

  /** One timer, for the earliest of the deadlines and the reconnect. */
  #arm() {
    if (this.#closed) return;
    let at = this.#deadlines.next;
    if (this.#link === DOWN) at = Math.min(at, this.#retryAt);
    if (at === this.#armedAt) return;
    clearTimeout(this.#timer);
    this.#armedAt = at;
    this.#timer = null;
    if (at === Infinity) return;
    this.#timer = setTimeout(this.#alarm, Math.max(1, Math.ceil(at - performance.now())));
    this.#timer.unref();
  }

  #alarm = () => {
    this.#timer = null;
    this.#armedAt = Infinity;
    const now = performance.now();
    if (this.#link === DOWN && now >= this.#retryAt) this.#connect();
    while (this.#deadlines.next <= now) {
      const [at, entry] = this.#deadlines.pop();
      if (entry.scheduled === at && !entry.left) {
        entry.scheduled = null;
        this.#step(entry, 'tick');
      }
    }
    this.#arm();
  };
}

/** A breaker's membership of a fleet (an EventEmitter). */
export class Fleet extends EventEmitter {
  #store;
  #entry;

  /** Use `store.join(name, breaker)`. */
  constructor(store, entry, token) {
    super();
    if (token !== TOKEN) throw new TypeError('use `store.join(name, breaker)`');
    this.#store = store;
    this.#entry = entry;
  }

  /** The fleet's name. */
  get name() {
    return this.#entry.name;
  }

  /** The store this member runs on. */
  get store() {
    return this.#store;
  }

  /**
   * The member now: `{ memberId, holder, name, connected, degraded, leaseHeld, connects,
   * disconnects, counts }` (`counts`: what its protocol counted, `ignored` by reason).
   */
  status() {
    return this.#store.status(this.#entry);
  }

  /**
   * Resolves true once the member follows its fleet (connected, subscribed, its fleet's
   * state read back), or false if that takes longer than `timeoutMs`.
   */
  ready(timeoutMs = 5_000) {
    if (this.#entry.connected) return Promise.resolve(true);
    if (this.#entry.left) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (value) => {
        clearTimeout(timer);
        this.off('degraded', changed);
        this.off('left', gone);
        resolve(value);
      };
      const changed = ({ degraded }) => {
        if (!degraded) done(true);
      };
      const gone = () => done(false);
      const timer = setTimeout(() => done(false), timeoutMs);
      this.on('degraded', changed);
      this.on('left', gone);
    });
  }

  /**
   * Leaves the fleet: the breaker is a local one when this is called, and a lease it held
   * is given back (within `storeTimeoutMs`).
   */
  leave() {
    return this.#store.leave(this.#entry);
  }
}

const TOKEN = Symbol('tripgate.fleet');

/** The wasm module is installed by the entry point; Node's installs it at import. */
async function installed() {
  const { wasm } = await import('../tables.js');
  if (wasm === null) await import('../node.js');
}

async function redisModule() {
  try {
    return await import('redis');
  } catch (cause) {
    const error = new Error('tripgate/fleet needs the npm package redis 6 (an optional peer dependency): npm install redis@6');
    error.code = 'ERR_TRIPGATE_NO_REDIS';
    error.cause = cause;
    throw error;
  }
}
