// Where `execute`'s overhead goes, piece by piece, beside cockatiel's ConsecutiveBreaker in
// the same interleaved rounds; and what crosses the wasm boundary per call.
//
//   $NODE24 js/bench/execute-parts.js [rounds] [round-ms]   the ladder (default 21 rounds of 50 ms)
//   $NODE24 js/bench/execute-parts.js count [calls]         the crossings (default 100,000 calls)
//
// The ladder times `await op()` around an already-resolved async fn, minus a bare
// `await fn()` in the same rounds, adding one piece at a time:
//   chain               what `execute` does with fn's promise: `Promise.resolve`, one `then`
//                       with two closures, recording nothing
//   chain+clock         + one `performance.now()` in the reaction (the reading every record takes)
//   chain+2 crossings   + two calls into the wasm module that do nothing (a getter): the
//                       boundary itself
//   chain+core          + `acquire_closed` and `record` on a wasm breaker, on a clock that
//                       costs nothing (a counter): the boundary and the core's work behind it
//   chain+core+clock    + the same with `performance.now()`: all `execute` needs, without
//                       the package's JS
//   execute             the package's `execute` (default clock)
//   execute, free clock the package's `execute` on a clock that costs nothing
//   cockatiel           cockatiel 4's ConsecutiveBreaker `execute` (no clock, no window)
// Each row gives the median and the fastest round; the fastest is what the piece costs
// when nothing else on the machine gets in.
//
// count wraps the wasm instance's exports (JS→wasm) and the glue's imports (wasm→JS)
// before the package loads, runs `execute` `calls` times with fn resolving and with fn
// rejecting, and prints the calls per `execute` by name.

const mode = process.argv[2] === 'count' ? 'count' : 'ladder';

/** `f`, counting its calls under `key` in `counts`. */
function counted(counts, key, f) {
  return function countedCall(...args) {
    counts.set(key, (counts.get(key) ?? 0) + 1);
    return f.apply(this, args);
  };
}

/** Makes every wasm instance created from now on count its exports' and imports' calls. */
function instrumentWasm(counts) {
  const RealInstance = WebAssembly.Instance;
  WebAssembly.Instance = function Instance(module, imports) {
    const wrapped = {};
    for (const [space, fns] of Object.entries(imports)) {
      wrapped[space] = {};
      for (const [name, f] of Object.entries(fns)) {
        wrapped[space][name] = typeof f === 'function' ? counted(counts, `wasm→JS ${name}`, f) : f;
      }
    }
    const instance = new RealInstance(module, wrapped);
    const exports = {};
    for (const [name, value] of Object.entries(instance.exports)) {
      exports[name] = typeof value === 'function' ? counted(counts, `JS→wasm ${name}`, value) : value;
    }
    return { exports };
  };
}

async function count(calls) {
  const counts = new Map();
  instrumentWasm(counts);
  const { CircuitBreaker } = await import('../src/node.js');
  const breaker = new CircuitBreaker({ failureThreshold: 100, minCalls: 2 ** 31 });
  const error = new Error('upstream');
  const paths = {
    'fn resolves': async () => 1,
    'fn rejects': async () => {
      throw error;
    },
  };
  for (const [path, fn] of Object.entries(paths)) {
    counts.clear();
    for (let i = 0; i < calls; i++) await breaker.execute(fn).catch(() => {});
    const per = [...counts].sort().map(([key, n]) => [key, n / calls]);
    const total = (dir) => per.filter(([key]) => key.startsWith(dir)).reduce((sum, [, n]) => sum + n, 0);
    console.log(`${path}: ${calls} calls of execute; per call, JS→wasm ${total('JS→wasm')}, wasm→JS ${total('wasm→JS')}:`);
    for (const [key, n] of per) console.log(`  ${key}: ${n}`);
  }
  breaker.dispose();
}

/** The ladder's ops, one function each: a shared helper would make its call sites polymorphic. */
async function ladderOps() {
  const { CircuitBreaker } = await import('../src/node.js');
  const bindings = await import('../pkg/web/tripgate_wasm.js');
  const { readOptions } = await import('../src/options.js');
  const { SUCCESS } = await import('../src/classify.js');
  const cockatiel = await import('cockatiel');
  const NativePromise = Promise;
  const promiseResolve = Promise.resolve;
  const promiseThen = Promise.prototype.then;
  const fn = async () => 1;
  let sink = 0;
  let counter = 0;
  let freeReading = 0;
  const rethrow = (error) => {
    throw error;
  };
  const { values, statuses, grpcCodes } = readOptions({});
  const onClock = new bindings.Breaker(values, statuses, grpcCodes, performance.now());
  const onCounter = new bindings.Breaker(values, statuses, grpcCodes, 0);
  const execute = new CircuitBreaker();
  const executeFree = new CircuitBreaker({ clock: () => (freeReading += 0.001) });
  const consecutive = cockatiel.circuitBreaker(cockatiel.handleAll, {
    halfOpenAfter: 15_000,
    breaker: new cockatiel.ConsecutiveBreaker(5),
  });
  const chain = (permit) => promiseThen.call(promiseResolve.call(NativePromise, fn()), (v) => {
    sink += permit;
    return v;
  }, rethrow);
  const chainClock = (permit) => promiseThen.call(promiseResolve.call(NativePromise, fn()), (v) => {
    sink += permit + performance.now();
    return v;
  }, rethrow);
  const chainCrossings = (permit) => promiseThen.call(promiseResolve.call(NativePromise, fn()), (v) => {
    sink += permit + onCounter.rejected_state();
    return v;
  }, rethrow);
  const chainCore = (permit) => promiseThen.call(promiseResolve.call(NativePromise, fn()), (v) => {
    sink += onCounter.record(permit, SUCCESS, (counter += 0.001));
    return v;
  }, rethrow);
  const chainCoreClock = (permit) => promiseThen.call(promiseResolve.call(NativePromise, fn()), (v) => {
    sink += onClock.record(permit, SUCCESS, performance.now());
    return v;
  }, rethrow);
  return {
    base: [() => fn(), true],
    chain: [() => chain(0), true],
    'chain+clock': [() => chainClock(0), true],
    'chain+2 crossings': [() => chainCrossings(onCounter.rejected_state()), true],
    'chain+core': [() => chainCore(onCounter.acquire_closed()), true],
    'chain+core+clock': [() => chainCoreClock(onClock.acquire_closed()), true],
    execute: [() => execute.execute(fn), true],
    'execute, free clock': [() => executeFree.execute(fn), true],
    'cockatiel ConsecutiveBreaker': [() => consecutive.execute(fn), true],
  };
}

async function ladder(count, roundMs) {
  const { rounds, median, fastest } = await import('./rounds.js');
  const samples = await rounds(await ladderOps(), count, roundMs);
  const base = samples.base;
  console.log(`execute's overhead by piece, Node ${process.versions.node}: ${count} interleaved rounds of ~${roundMs} ms; ` +
    `bare await fn() ${median(base).toFixed(1)} ns (median), ${fastest(base).toFixed(1)} ns (fastest)`);
  console.log('');
  console.log('| op | over await fn(), median | fastest |');
  console.log('|---|---:|---:|');
  for (const [name, sorted] of Object.entries(samples)) {
    if (name === 'base') continue;
    console.log(`| ${name} | ${(median(sorted) - median(base)).toFixed(1)} ns | ${(fastest(sorted) - fastest(base)).toFixed(1)} ns |`);
  }
}

if (mode === 'count') {
  await count(Number(process.argv[3] ?? 100_000));
} else {
  await ladder(Number(process.argv[2] ?? 21), Number(process.argv[3] ?? 50));
}
