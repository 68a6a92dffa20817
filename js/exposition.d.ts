// Types of `tripgate/exposition`: the core's metric families and a Prometheus text writer
// that needs no client library (for edge workers).
import type { CircuitBreaker } from './index.js';

/** The breakers to expose: by name, as pairs, or a function giving them at each scrape. */
export type Breakers =
  | Map<string, CircuitBreaker>
  | Record<string, CircuitBreaker>
  | ReadonlyArray<readonly [string, CircuitBreaker]>
  | (() =>
      | Map<string, CircuitBreaker>
      | Record<string, CircuitBreaker>
      | ReadonlyArray<readonly [string, CircuitBreaker]>);

/** One metric family of the core's table. */
export interface Family {
  /** The name of its samples in the Prometheus text format (`tripgate_rejections_total`). */
  readonly name: string;
  /** The name without `_total` and the unit (`tripgate_rejections`), as OpenTelemetry names it. */
  readonly stem: string;
  readonly type: 'gauge' | 'counter';
  readonly help: string;
  readonly unit: string | null;
  /** Labels besides `breaker`. */
  readonly labels: readonly string[];
  /** Each series' label values, in `labels` order. */
  readonly series: readonly (readonly string[])[];
  /** Where the family's values start in a breaker's reading. */
  readonly offset: number;
}

export interface ExpositionTable {
  readonly breakerLabel: string;
  /** Series per breaker. */
  readonly series: number;
  readonly families: readonly Family[];
}

/** The core's families (read from the wasm module once). */
export function expositionTable(): ExpositionTable;
/** The breakers' metrics in the Prometheus text format 0.0.4 ('' for no breakers). */
export function prometheusText(breakers: Breakers): string;
/** `text/plain; version=0.0.4; charset=utf-8`. */
export const PROMETHEUS_CONTENT_TYPE: string;
