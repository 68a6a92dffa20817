// The package's metrics on the shared scenario (tests/metrics/): the Prometheus text
// writer (tripgate/exposition), the prom-client collector (tripgate/prometheus, both
// content types) and the OpenTelemetry instruments (tripgate/otel, through the real
// @opentelemetry/sdk-metrics with an in-memory exporter) must all expose what the Rust
// hosts expose (tests/metrics/expected.prom), and promtool must accept the text.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import promClient from 'prom-client';
import '../src/node.js';
import { expositionTable, prometheusText } from '../src/exposition.js';
import { collectTripgate } from '../src/prometheus.js';
import { observeTripgate } from '../src/otel.js';
import { CircuitBreaker } from '../src/breaker.js';
import { assertMatchesExpected, normalise, promtoolCheck, runScenario } from './exposition-scenario.js';

test('prometheusText exposes the shared scenario as the Rust hosts do, and promtool accepts it', () => {
  const { breakers } = runScenario();
  const text = prometheusText(breakers);
  promtoolCheck(text);
  assertMatchesExpected(text);
  // The same from an object by name and from a function giving the Map.
  assert.equal(prometheusText(Object.fromEntries(breakers)), text);
  assert.equal(prometheusText(() => breakers), text);
  assert.equal(prometheusText(new Map()), '');
});

test('the prom-client collector exposes the shared scenario in both content types, reading each breaker once per scrape', async () => {
  const { breakers } = runScenario();
  // Count the wasm reads: each goes through the breaker's exposition read.
  let reads = 0;
  const counted = new Map([...breakers].map(([name, b]) => {
    const read = b[Symbol.for('tripgate.exposition')].bind(b);
    const proxy = Object.create(b);
    proxy[Symbol.for('tripgate.exposition')] = (out) => {
      reads += 1;
      return read(out);
    };
    return [name, proxy];
  }));
  const text = new promClient.Registry();
  const open = new promClient.Registry(promClient.Registry.OPENMETRICS_CONTENT_TYPE);
  // One collector per registry: an OpenMetrics registry renames the counters it is given
  // (prom-client strips their `_total`), which would leak into a text registry sharing them.
  const collector = collectTripgate({ breakers: counted, registers: [text] });
  collectTripgate({ breakers, registers: [open] });
  assert.equal(collector.metrics.length, expositionTable().families.length);
  const prom = await text.metrics();
  assert.equal(reads, breakers.size, 'one read per breaker per scrape, not one per family');
  promtoolCheck(prom);
  assertMatchesExpected(prom);
  const om = await open.metrics();
  assert.ok(om.includes('# TYPE tripgate_rejections counter\n'), om);
  assertMatchesExpected(om);
  // A second scrape sees later calls.
  breakers.get('ledger').record(breakers.get('ledger').acquire(), 'status:500');
  const later = normalise(await text.metrics());
  assert.equal(later.tripgate_calls_admitted_total.samples['breaker="ledger"'], 9);
  collector.unregister();
  assert.equal(await text.metrics(), '\n');
});

test('a disposed breaker drops out of the exposition; a wrong breakers argument is a clear error', () => {
  const { breakers } = runScenario();
  breakers.get('ledger').dispose();
  const families = normalise(prometheusText(breakers));
  assert.deepEqual(Object.keys(families.tripgate_calls_admitted_total.samples).sort(), ['breaker="payments"', 'breaker="search \\"eu\\"\\\\1"']);
  assert.throws(() => prometheusText(42), /breakers must be a Map/);
  assert.throws(() => prometheusText({ payments: {} }), /"payments" is not a CircuitBreaker/);
  assert.throws(() => collectTripgate({}), /needs breakers/);
  assert.throws(() => observeTripgate({}), /needs breakers/);
});

test('the OpenTelemetry instruments give the shared scenario through the SDK with an in-memory reader', async (t) => {
  let sdk;
  try {
    sdk = await import('@opentelemetry/sdk-metrics');
  } catch (error) {
    // @opentelemetry/sdk-metrics 3 (the one for @opentelemetry/api 1.10) needs Node >= 22.15.
    t.skip(`@opentelemetry/sdk-metrics does not load on Node ${process.version}: ${error.message}`);
    return;
  }
  const { MeterProvider, PeriodicExportingMetricReader, InMemoryMetricExporter, AggregationTemporality } = sdk;
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
  const provider = new MeterProvider({ readers: [reader] });
  const { breakers } = runScenario();
  const observed = observeTripgate({ breakers, meter: provider.getMeter('tripgate-test') });
  await reader.forceFlush();
  const [batch] = exporter.getMetrics();
  const metrics = batch.scopeMetrics[0].metrics;
  // Rebuild the Prometheus view from OpenTelemetry's data points: name by the family's
  // stem, labels from the attributes, and compare with what the Rust hosts expose.
  const { families } = expositionTable();
  const byStem = new Map(families.map((f) => [f.stem, f]));
  let text = '';
  for (const metric of metrics) {
    const family = byStem.get(metric.descriptor.name);
    assert.ok(family, `an instrument ${metric.descriptor.name} not in the table`);
    assert.equal(metric.descriptor.unit, family.unit === 'seconds' ? 's' : '');
    text += `# HELP ${family.name} ${metric.descriptor.description}\n# TYPE ${family.name} ${family.type}\n`;
    for (const point of metric.dataPoints) {
      const labels = Object.entries(point.attributes).map(([k, v]) => `${k}="${String(v).replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`);
      text += `${family.name}{${labels.join(',')}} ${point.value}\n`;
    }
  }
  assert.equal(metrics.length, families.length);
  assertMatchesExpected(text);
  observed.stop();
  await provider.shutdown();
});

test('every family name, help and label comes from the core table (no second copy in JS)', () => {
  const { families, breakerLabel, series } = expositionTable();
  assert.equal(breakerLabel, 'breaker');
  assert.equal(families.reduce((n, f) => n + f.series.length, 0), series);
  const b = new CircuitBreaker({});
  const out = normalise(prometheusText({ x: b }));
  assert.deepEqual(Object.keys(out).sort(), families.map((f) => f.name).sort());
  for (const f of families) {
    assert.equal(out[f.name].help, f.help);
    assert.equal(out[f.name].type, f.type);
    if (f.type === 'counter') assert.ok(f.name.endsWith('_total'), f.name);
  }
});

test("'tripgate/prometheus', 'tripgate/otel' and 'tripgate/exposition' resolve by name, with their declarations, and read the breakers of 'tripgate'", async () => {
  const { CircuitBreaker: ByName } = await import('tripgate');
  const prom = await import('tripgate/prometheus');
  const otel = await import('tripgate/otel');
  const expo = await import('tripgate/exposition');
  assert.equal(prom.collectTripgate, collectTripgate);
  assert.equal(otel.observeTripgate, observeTripgate);
  assert.equal(expo.prometheusText, prometheusText);
  assert.match(expo.prometheusText({ x: new ByName() }), /^tripgate_state\{breaker="x",state="closed"\} 1$/m);
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  for (const entry of ['./prometheus', './otel', './exposition']) {
    for (const file of Object.values(pkg.exports[entry])) {
      assert.ok(existsSync(new URL(`../${file}`, import.meta.url)), `${entry}: ${file}`);
      if (file.endsWith('.d.ts')) assert.ok(pkg.files.includes(file.slice(2)), `${file} is in files`);
    }
  }
  assert.equal(pkg.peerDependenciesMeta['prom-client'].optional, true);
  assert.equal(pkg.peerDependenciesMeta['@opentelemetry/api'].optional, true);
});
