// Types of `tripgate/otel` (@opentelemetry/api, an optional peer dependency).
import type { Meter, ObservableCounter, ObservableGauge } from '@opentelemetry/api';
import type { Breakers } from './exposition.js';

export interface TripgateInstruments {
  /** One observable instrument per family of the core's table. */
  readonly instruments: ReadonlyArray<ObservableGauge | ObservableCounter>;
  /** Stops observing (removes the batch callback). */
  stop(): void;
}

/** Observes the breakers with OpenTelemetry instruments (default: the global `tripgate` meter). */
export function observeTripgate(options: { breakers: Breakers; meter?: Meter }): TripgateInstruments;
