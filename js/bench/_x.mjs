import { CircuitBreaker } from '../src/node.js';
const fn = async () => 1;
async function time(name, op, n = 1e6) {
  for (let i = 0; i < 2e5; i++) await op();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await op();
  console.log(name, (((performance.now() - t0) * 1e6) / n).toFixed(1), 'ns');
}
let t = 0;
await time('baseline', () => fn());
const a = new CircuitBreaker({ clock: () => t }); await time('tripgate fixed clock', () => a.execute(fn));
const b = new CircuitBreaker(); await time('tripgate perf clock', () => b.execute(fn));
async function wrap(f) { const v = await f(); return v; }
await time('async wrapper only', () => wrap(fn));
await time('baseline', () => fn());
const c = new CircuitBreaker({ clock: () => t });
await time('acquire+record sync in async', async () => c.record(c.acquire(), 'success'));
