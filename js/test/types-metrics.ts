// Compiled with `tsc --noEmit -p test` by scripts/test.sh: the metrics entry points'
// declarations as the tests use them. Not run.
import { CircuitBreaker } from 'tripgate';
import { PROMETHEUS_CONTENT_TYPE, expositionTable, prometheusText } from 'tripgate/exposition';
import { collectTripgate } from 'tripgate/prometheus';
import { observeTripgate } from 'tripgate/otel';
import { Registry } from 'prom-client';
import { metrics } from '@opentelemetry/api';

const breakers = new Map([['payments', new CircuitBreaker({})]]);
const text: string = prometheusText(breakers);
const type: string = PROMETHEUS_CONTENT_TYPE;
const names: string[] = expositionTable().families.map((f) => `${f.name} ${f.stem} ${f.type} ${f.unit ?? ''}`);
const collector = collectTripgate({ breakers: () => breakers, registers: [new Registry()] });
collector.unregister();
const observed = observeTripgate({ breakers: { payments: breakers.get('payments')! }, meter: metrics.getMeter('x') });
observed.stop();
void [text, type, names, collector.metrics.length, observed.instruments.length];
