// Type declarations for `tripgate/fleet` (Node only; needs the optional peer dependency
// `redis` 6). FLEET.md is the contract; wit/fleet.md the wire format.
import type { CircuitBreaker } from './index.js';

export interface FleetStoreOptions {
  /** One server: `redis://[user:password@]host:port[/0]` or `rediss://` (TLS). Database 0 only. */
  url?: string;
  /** A Redis Cluster, reached through any of these node URLs (instead of `url`): sharded pub/sub. */
  nodes?: string[];
  /** Shared HMAC-SHA256 key, at least 16 bytes: members drop unsigned and forged messages and votes. Omit to run unsigned. */
  key?: string | Uint8Array | null;
  /** This process's stable name in its fleets (a pod or host name), 1–256 bytes: its member id is derived from it. Default: a random id. */
  member?: string | null;
  /** How often each member reads its fleet's state back. Default 1000 ms; 10 ms – 1 h. */
  reconcileIntervalMs?: number;
  /** A store command slower than this makes the process's members degraded. Default 250 ms; 1 ms – 60 s. */
  storeTimeoutMs?: number;
  /** The longest wait between reconnection attempts (from 10 ms, doubling). Default 1000 ms; 10 ms – 60 s. */
  maxBackoffMs?: number;
  /** Node TLS options for `rediss://` URLs: a private CA, a client certificate. */
  tls?: {
    ca?: string | Uint8Array | Array<string | Uint8Array>;
    cert?: string | Uint8Array | Array<string | Uint8Array>;
    key?: string | Uint8Array | Array<string | Uint8Array>;
    servername?: string;
    rejectUnauthorized?: boolean;
  };
}

/** Why messages, stored values and votes were ignored. */
export type IgnoredReason = 'garbage' | 'wrong-fleet' | 'unsigned' | 'forged' | 'stale' | 'malformed-generation';

/** What a member's protocol counted. */
export interface FleetCounts {
  /** Messages received on the fleet's channel. */
  received: number;
  /** Events applied (from messages and reads back). */
  applied: number;
  /** Events this member published. */
  published: number;
  /** Reads of the fleet's state. */
  reconciles: number;
  /** Probe leases taken. */
  leases: number;
  /** Repairs of the generation counter. */
  repairs: number;
  /** Commands the store refused (an error of its data). */
  refused: number;
  /** Messages, stored values and votes ignored, by reason. */
  ignored: Record<IgnoredReason, number>;
}

export interface FleetStatus {
  /** This process's member id, 16 hex digits. */
  memberId: string;
  /** Who holds the probe lease when this member does: its id and its session, 32 hex digits (the session is random per member, so processes that share a member name never share a lease). */
  holder: string;
  name: string;
  /** The store answers, the channel is subscribed and the fleet's state was read back: the breaker follows the fleet. */
  connected: boolean;
  /** The store is unreachable or too slow (or the member left): the breaker decides on its own. */
  degraded: boolean;
  /** This member holds the fleet's probe lease. */
  leaseHeld: boolean;
  /** Sessions the store began (its first connection and every reconnection). */
  connects: number;
  /** Sessions the store lost (a command failed or timed out, a connection dropped). */
  disconnects: number;
  counts: FleetCounts;
}

/** One breaker's membership of a fleet: a Node `EventEmitter`. */
export interface Fleet {
  readonly name: string;
  readonly store: FleetStore;
  status(): FleetStatus;
  /** Resolves true once the member follows its fleet, false after `timeoutMs` (default 5000). */
  ready(timeoutMs?: number): Promise<boolean>;
  /** Leaves: the breaker is a local one at once; a lease it held is given back. */
  leave(): Promise<void>;
  on(event: 'degraded', listener: (change: { degraded: boolean; error: string | null }) => void): this;
  on(event: 'left', listener: (left: { error: unknown }) => void): this;
  once(event: 'degraded', listener: (change: { degraded: boolean; error: string | null }) => void): this;
  once(event: 'left', listener: (left: { error: unknown }) => void): this;
  off(event: string, listener: (...args: any[]) => void): this;
}

/** A process's link to its Redis, shared by every fleet its breakers join. */
export declare class FleetStore {
  private constructor();
  /**
   * Checks the options (errors name the option: `error.option`) and starts the link in the
   * background; until it is up, members decide on their own (degraded).
   */
  static connect(options: FleetStoreOptions): Promise<FleetStore>;
  /** The ACL rules a member's Redis user needs, after `ACL SETUSER <user> on >password`. */
  static acl(): Promise<string>;
  /** This process's member id (16 hex digits), the same in every fleet. */
  readonly memberId: string;
  /** Why the store was last given up on, for logs (passwords redacted). */
  readonly lastError: string | null;
  /**
   * Why this store may break the bound of K probes, found when the session began: its
   * eviction policy may evict the probe lease (`allkeys-*` with a `maxmemory` limit); null
   * if it keeps the lease or denies `CONFIG GET`. Also emitted once as a process warning
   * (code `TRIPGATE_FLEET_EVICTION`).
   */
  readonly warning: string | null;
  /**
   * Makes `breaker` (created with `fleetQuorum`) a member of fleet `name` (1–128 of
   * `A–Z a–z 0–9 . _ - :`). Throws for a breaker that is a member already, in any store,
   * and for a fleet this store has a member of.
   */
  join(name: string, breaker: CircuitBreaker): Fleet;
  /** Leaves every fleet and closes the connections. */
  close(): Promise<void>;
}

/** A store command that took longer than `storeTimeoutMs`. */
export declare class StoreTimeoutError extends Error {
  readonly code: 'ERR_TRIPGATE_STORE_TIMEOUT';
}
