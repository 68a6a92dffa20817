// Starts the example Worker (examples/worker/worker.js) in workerd through miniflare's
// programmatic API, with the package's files as the modules that `tripgate/web` and
// `tripgate/tripgate.wasm` resolve to (what wrangler's bundler does from the exports map).
import { readFileSync, readdirSync } from 'node:fs';
import { Miniflare } from 'miniflare';

const JS = new URL('../../', import.meta.url);
const read = (path) => readFileSync(new URL(path, JS), 'utf8');

/**
 * workerd resolves an import against the importing module's name, so the worker sits at
 * the root, the package's entry under the bare name `tripgate/web`, and its own relative
 * imports (`./breaker.js`, `../pkg/web/tripgate_wasm.js`) land on the names below: every
 * module of src/ but the Node entry sits next to the entry.
 */
function modules(worker = read('examples/worker/worker.js'), extra = []) {
  // prometheus.js and otel.js import their peer dependencies, which a Worker has not.
  // node.js and deno.js load the module with node:fs or a source phase import (src/wasm/).
  const entries = ['node.js', 'deno.js', 'web.js', 'prometheus.js', 'otel.js'];
  const shared = readdirSync(new URL('src/', JS)).filter((f) => f.endsWith('.js') && !entries.includes(f));
  return [
    { type: 'ESModule', path: '/worker/worker.js', contents: worker },
    ...extra,
    { type: 'ESModule', path: '/worker/tripgate/web', contents: read('src/web.js') },
    { type: 'ESModule', path: '/worker/tripgate/exposition', contents: read('src/exposition.js') },
    ...shared.map((f) => ({ type: 'ESModule', path: `/worker/tripgate/${f}`, contents: read(`src/${f}`) })),
    { type: 'ESModule', path: '/worker/pkg/web/tripgate_wasm.js', contents: read('pkg/web/tripgate_wasm.js') },
    { type: 'CompiledWasm', path: '/worker/tripgate/tripgate.wasm', contents: readFileSync(new URL('pkg/web/tripgate_wasm_bg.wasm', JS)) },
  ];
}

/** The compatibility date the example's wrangler.toml names. */
export const COMPATIBILITY_DATE = '2026-04-01';

/**
 * A Miniflare running the example Worker. `persistDir`: where its Durable Object storage
 * lives (a second instance on the same folder sees the same state); `bindings` override the
 * Worker's vars (UPSTREAM, BREAKER_OPTIONS, TRIPGATE_TEST_CLOCK, PERSIST, TIMEOUT_MS).
 */
export async function startWorker({ upstream, persistDir, bindings = {} }) {
  const mf = new Miniflare({
    modules: modules(),
    modulesRoot: '/worker',
    compatibilityDate: COMPATIBILITY_DATE,
    bindings: { UPSTREAM: upstream, ...bindings },
    durableObjects: { BREAKER: { className: 'UpstreamBreaker', useSQLite: true } },
    durableObjectsPersist: persistDir ?? false,
  });
  await mf.ready;
  return mf;
}

/**
 * A Miniflare running a shared vector's runner inside workerd: a Worker whose `fetch` runs
 * `test/${file}`'s `run` export over the vector it is posted, with the package export
 * `name` (the runner imports nothing itself).
 */
async function startVectorWorker(file, run, name) {
  const worker = `
    import { ${name}, initSync } from 'tripgate/web';
    import wasm from 'tripgate/tripgate.wasm';
    import { ${run} } from './${file}';
    initSync({ module: wasm });
    export default {
      async fetch(request) {
        return Response.json(${run}(await request.json(), ${name}));
      },
    };`;
  const runner = { type: 'ESModule', path: `/worker/${file}`, contents: read(`test/${file}`) };
  const mf = new Miniflare({
    modules: modules(worker, [runner]),
    modulesRoot: '/worker',
    compatibilityDate: COMPATIBILITY_DATE,
  });
  await mf.ready;
  return mf;
}

/** The error table's vector inside workerd: test/errors-vector.js with `classifyError`. */
export function startErrorsWorker() {
  return startVectorWorker('errors-vector.js', 'runErrorsVector', 'classifyError');
}

/** The Retry-After vector inside workerd: test/retry-after-vector.js with `retryAfter`. */
export function startRetryAfterWorker() {
  return startVectorWorker('retry-after-vector.js', 'runRetryAfterVector', 'retryAfter');
}

/** The retry vector inside workerd: test/retry-vector.js with `CircuitBreaker`. */
export function startRetryWorker() {
  return startVectorWorker('retry-vector.js', 'runRetryVector', 'CircuitBreaker');
}
