// Types of `tripgate/prometheus` (prom-client 15, an optional peer dependency).
import type { Counter, Gauge, Registry } from 'prom-client';
import type { Breakers } from './exposition.js';

export { prometheusText, PROMETHEUS_CONTENT_TYPE } from './exposition.js';

export interface TripgateCollector {
  /** One prom-client metric per family of the core's table. */
  readonly metrics: ReadonlyArray<Gauge<string> | Counter<string>>;
  /** Removes the metrics from the registries they were registered in. */
  unregister(): void;
}

/** Registers the breakers' metrics with prom-client (default: its global registry). */
export function collectTripgate(options: {
  breakers: Breakers;
  registers?: Registry[];
}): TripgateCollector;
