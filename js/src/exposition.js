// The metrics exposition, shared by the Prometheus text writer below, the prom-client
// collector (prometheus.js) and the OpenTelemetry instruments (otel.js). Every family's
// name, type, help, unit and labels, and every series' label values, come from the core's
// table (tripgate_core::exposition, handed over by the wasm module's exposition_table),
// and every value from the core's snapshot in one wasm call per breaker: JS writes no
// metric name or value of its own, so it exposes what the Rust hosts expose.

import { wasm } from './tables.js';

/**
 * Where a breaker writes its series' values (`CircuitBreaker[READ]`, js/src/breaker.js).
 * A registered symbol: a bundle that loads this module twice (as `tripgate/exposition` and
 * as `./exposition.js`, as workerd's module names do) still has one.
 */
export const READ = Symbol.for('tripgate.exposition');

let table = null;

/**
 * The core's families, read from the wasm module once: `{ breakerLabel, series, families:
 * [{ name, stem, type, help, unit, labels, series, offset }] }`, `offset` being where the
 * family's values start in a breaker's reading.
 */
export function expositionTable() {
  if (table !== null) return table;
  if (wasm === null) {
    throw new Error('tripgate: load the package (import "tripgate") before reading its metrics');
  }
  const t = JSON.parse(wasm.exposition_table());
  let offset = 0;
  for (const family of t.families) {
    family.offset = offset;
    offset += family.series.length;
    Object.freeze(family);
  }
  if (offset !== t.series) {
    throw new Error(`tripgate: the exposition table lists ${offset} series, not ${t.series}`);
  }
  table = Object.freeze(t);
  return table;
}

const BREAKERS_FORMS = 'a Map, an object of breakers by name, an array of [name, breaker] pairs, or a function returning one';

/**
 * The breakers to expose as `[name, breaker]` pairs: from a Map, an object of breakers by
 * name, an array of pairs, or a function returning one of those (called at each scrape, so
 * breakers made later are exposed too). A collection that cannot be read (a revoked Proxy,
 * a getter that throws) is the package's TypeError, with what it threw as the cause.
 */
export function breakerEntries(breakers) {
  const source = typeof breakers === 'function' ? breakers() : breakers;
  let entries;
  try {
    if (source instanceof Map || Array.isArray(source)) entries = [...source];
    else if (source !== null && typeof source === 'object') entries = Object.entries(source);
  } catch (cause) {
    throw new TypeError(`tripgate: breakers must be ${BREAKERS_FORMS}; reading them threw`, { cause });
  }
  if (entries === undefined) throw new TypeError(`tripgate: breakers must be ${BREAKERS_FORMS}`);
  return entries;
}

/**
 * A pair's name and its breaker's reading method, or the package's TypeError: the pair
 * and the breaker may be anything a caller put there, revoked Proxies included.
 */
function readerOf(pair) {
  let name;
  let breaker;
  try {
    [name, breaker] = pair;
  } catch (cause) {
    throw new TypeError('tripgate: each breaker must come as a [name, breaker] pair', { cause });
  }
  if (typeof name !== 'string') {
    throw new TypeError(`tripgate: a breaker's name must be a string, not ${typeof name}`);
  }
  const notABreaker = (options) => new TypeError(`tripgate: ${JSON.stringify(name)} is not a CircuitBreaker`, options);
  let read;
  try {
    if (breaker !== null && typeof breaker === 'object') read = breaker[READ];
  } catch (cause) {
    throw notABreaker({ cause });
  }
  if (typeof read !== 'function') throw notABreaker();
  return { name, breaker, read };
}

/**
 * Every breaker's values now, one Float64Array per breaker in the table's series order:
 * one wasm call each. A disposed breaker is left out (it has nothing to expose).
 */
export function readAll(breakers) {
  const { series } = expositionTable();
  const read = [];
  for (const pair of breakerEntries(breakers)) {
    const reader = readerOf(pair);
    const values = new Float64Array(series);
    if (reader.read.call(reader.breaker, values)) read.push([reader.name, values]);
  }
  return read;
}

/** A family's labels for series `index` of the breaker `name`, as an object. */
export function labelsOf(family, index, name, breakerLabel) {
  const labels = { [breakerLabel]: name };
  family.labels.forEach((label, i) => {
    labels[label] = family.series[index][i];
  });
  return labels;
}

const escapeLabel = (value) =>
  value.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n');

/**
 * The breakers' metrics in the Prometheus text format (version 0.0.4), for a `/metrics`
 * route with no client library (edge workers): serve it as
 * `text/plain; version=0.0.4; charset=utf-8`. Nothing at all for no breakers.
 */
export function prometheusText(breakers) {
  const { families, breakerLabel } = expositionTable();
  const read = readAll(breakers);
  if (read.length === 0) return '';
  const lines = [];
  for (const family of families) {
    // The core's help texts need no escaping (its tests check): written as they are.
    lines.push(`# HELP ${family.name} ${family.help}`, `# TYPE ${family.name} ${family.type}`);
    for (const [name, values] of read) {
      family.series.forEach((labelValues, i) => {
        const labels = [`${breakerLabel}="${escapeLabel(name)}"`];
        family.labels.forEach((label, j) => labels.push(`${label}="${labelValues[j]}"`));
        lines.push(`${family.name}{${labels.join(',')}} ${values[family.offset + i]}`);
      });
    }
  }
  return `${lines.join('\n')}\n`;
}

/** The content type of `prometheusText`. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
