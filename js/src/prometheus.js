// `tripgate/prometheus`: the breakers' metrics as prom-client 15 metrics (prom-client is
// an optional peer dependency: only this entry point loads it). The families are the
// core's (exposition.js), so the names, labels and values are those of the Rust hosts.

import promClient from 'prom-client';

import { expositionTable, labelsOf, readAll } from './exposition.js';

export { prometheusText, PROMETHEUS_CONTENT_TYPE } from './exposition.js';

/**
 * Registers one prom-client Gauge or Counter per family in `registers` (default: prom-
 * client's global registry), collected from `breakers` at each scrape (a Map, an object by
 * name, an array of pairs, or a function returning one). Returns the metrics and
 * `unregister()`.
 *
 * Every family of a scrape comes from one reading of each breaker (one wasm call), not
 * one per family. prom-client collects the metrics of a scrape (`metrics()`,
 * `getMetricsAsJSON()`, `getSingleMetricAsString()`) in one synchronous pass, so a reading
 * is shared by the families collected in the same turn of the event loop and dropped at
 * its end (a microtask): the next scrape, even a partial one before it, reads afresh.
 */
export function collectTripgate({ breakers, registers = [promClient.register] } = {}) {
  if (breakers === undefined) {
    throw new TypeError('tripgate/prometheus: collectTripgate({ breakers }) needs breakers');
  }
  const { families, breakerLabel } = expositionTable();
  let reading = null;
  const forget = () => {
    reading = null;
  };
  const readOnce = () => {
    if (reading === null) {
      reading = readAll(breakers);
      queueMicrotask(forget);
    }
    return reading;
  };
  const metrics = families.map((family) => {
    const Kind = family.type === 'counter' ? promClient.Counter : promClient.Gauge;
    return new Kind({
      name: family.name,
      help: family.help,
      labelNames: [breakerLabel, ...family.labels],
      registers,
      collect() {
        // Counters cannot be set, only raised: each scrape starts them from nothing.
        this.reset();
        for (const [name, values] of readOnce()) {
          family.series.forEach((_, i) => {
            const labels = labelsOf(family, i, name, breakerLabel);
            const value = values[family.offset + i];
            if (family.type === 'counter') this.inc(labels, value);
            else this.set(labels, value);
          });
        }
      },
    });
  });
  return {
    metrics,
    unregister() {
      for (const registry of registers) {
        for (const family of families) registry.removeSingleMetric(family.name);
      }
    },
  };
}
