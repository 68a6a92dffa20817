// Type declarations for `tripgate/fleet` (Node only; needs the optional peer dependency
// `redis` 6). FLEET.md is the contract; wit/fleet.md the wire format.
import type { CircuitBreaker } from './index.js';

export interface FleetOptions {
  /** `redis://[user:password@]host:port[/db]` or `rediss://` (TLS). */
  url: string;
  /** The fleet: 1–128 characters from `A–Z a–z 0–9 . _ - :`. Members guarding one upstream share it. */
  name: string;
  /** Shared HMAC key: members drop unsigned and forged messages. Omit to run unsigned. */
  key?: string | Uint8Array | null;
  /** How often the member re-reads the stored event (pub/sub drops messages). Default 1000 ms. */
  reconcileIntervalMs?: number;
  /** A store command slower than this makes the member degraded. Default 250 ms. */
  storeTimeoutMs?: number;
  /** Node TLS options for a `rediss://` url: a private CA, a client certificate. */
  tls?: {
    ca?: string | Uint8Array | Array<string | Uint8Array>;
    cert?: string | Uint8Array | Array<string | Uint8Array>;
    key?: string | Uint8Array | Array<string | Uint8Array>;
    servername?: string;
    rejectUnauthorized?: boolean;
  };
  /** This member's id, 16 lowercase hex digits. Default random. */
  memberId?: string;
}

export type IgnoredReason = 'garbage' | 'wrong-fleet' | 'stale' | 'forged' | 'unsigned';

export interface FleetCounters {
  /** Messages received on the channel. */
  received: number;
  /** Events handed to the breaker that were not stale (messages and reconciles). */
  applied: number;
  /** Events this member published. */
  published: number;
  /** Successful reconciles. */
  reconciles: number;
  /** Connection and command errors. */
  storeErrors: number;
  /** Messages (and stored events) ignored, by reason. */
  ignored: Record<IgnoredReason, number>;
}

export interface FleetMemberStatus {
  member: string;
  name: string;
  /** The store is unreachable or slow: the breaker decides on its own. */
  degraded: boolean;
  subscribed: boolean;
  /** The last fleet generation the breaker applied. */
  generation: number;
  /** This member holds the fleet's probe lease. */
  leaseHeld: boolean;
  counters: FleetCounters;
}

/** A Node `EventEmitter` with these events. */
export interface FleetMember {
  readonly id: string;
  status(): FleetMemberStatus;
  /** Stops, gives the lease back, disconnects; the breaker carries on on its own. */
  leave(): Promise<void>;
  on(event: 'degraded', listener: (change: { degraded: boolean; error: unknown }) => void): this;
  on(event: 'event', listener: (event: { generation: number; kind: 'open' | 'close'; remainingMs: number; origin: string; applied: string; source: 'message' | 'reconcile' }) => void): this;
  on(event: 'ignored', listener: (ignored: { reason: IgnoredReason; source: 'message' | 'reconcile'; message: string }) => void): this;
  on(event: 'published', listener: (published: { generation: number; kind: 'open' | 'close'; remainingMs: number }) => void): this;
  on(event: 'lease', listener: (lease: { held: boolean }) => void): this;
  on(event: 'warning', listener: (error: unknown) => void): this;
  once(event: string, listener: (...args: any[]) => void): this;
  off(event: string, listener: (...args: any[]) => void): this;
}

/**
 * Joins `breaker` (created with `fleetQuorum`) to a fleet. Resolves once connected,
 * subscribed and reconciled, or degraded after `storeTimeoutMs` when the store is down
 * (it keeps reconnecting). Option errors name the option (`error.option`).
 */
export declare function joinFleet(breaker: CircuitBreaker, options: FleetOptions): Promise<FleetMember>;

/** A store command that took longer than `storeTimeoutMs`. */
export declare class StoreTimeoutError extends Error {
  readonly code: 'ERR_TRIPGATE_STORE_TIMEOUT';
}
