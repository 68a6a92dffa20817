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
 * A scrape reads each breaker once (one wasm call), not once per family: the reading is
 * shared by every family until a family is collected a second time, which starts the next
 * scrape.
 */
export function collectTripgate({ breakers, registers = [promClient.register] } = {}) {
  if (breakers === undefined) {
    throw new TypeError('tripgate/prometheus: collectTripgate({ breakers }) needs breakers');
  }
  const { families, breakerLabel } = expositionTable();
  let reading = null;
  const collected = new Set();
  const readOnce = (family) => {
    if (reading === null || collected.has(family)) {
      reading = readAll(breakers);
      collected.clear();
    }
    collected.add(family);
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
        for (const [name, values] of readOnce(family)) {
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
