// `tripgate/otel`: the breakers' metrics as OpenTelemetry observable instruments through
// `@opentelemetry/api` (an optional peer dependency: only this entry point loads it). One
// instrument per family of the core's table (exposition.js), named by the family's stem
// (no `_total`, no unit suffix: OpenTelemetry carries those as the instrument's kind and
// unit, and its Prometheus exporter adds them back), observed in one batch callback.

import { metrics } from '@opentelemetry/api';

import { expositionTable, labelsOf, readAll } from './exposition.js';

/** UCUM units, as OpenTelemetry spells them, for the core's unit names. */
const UNITS = { seconds: 's' };

/**
 * Creates the instruments on `meter` (default: the global meter provider's `tripgate`
 * meter) and observes `breakers` (a Map, an object by name, an array of pairs, or a
 * function returning one) on every collection: each breaker is read once per collection.
 * Returns the instruments and `stop()`, which removes the callback.
 */
export function observeTripgate({ breakers, meter = metrics.getMeter('tripgate') } = {}) {
  if (breakers === undefined) {
    throw new TypeError('tripgate/otel: observeTripgate({ breakers }) needs breakers');
  }
  const { families, breakerLabel } = expositionTable();
  const instruments = families.map((family) => {
    const options = { description: family.help };
    if (family.unit !== null) options.unit = UNITS[family.unit] ?? family.unit;
    return family.type === 'counter'
      ? meter.createObservableCounter(family.stem, options)
      : meter.createObservableGauge(family.stem, options);
  });
  const callback = (result) => {
    for (const [name, values] of readAll(breakers)) {
      families.forEach((family, f) => {
        family.series.forEach((_, i) => {
          result.observe(instruments[f], values[family.offset + i], labelsOf(family, i, name, breakerLabel));
        });
      });
    }
  };
  meter.addBatchObservableCallback(callback, instruments);
  return {
    instruments,
    stop() {
      meter.removeBatchObservableCallback(callback, instruments);
    },
  };
}
