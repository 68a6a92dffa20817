// Entry point for workers, edge runtimes and browsers (wasm-bindgen --target web), and the
// one glue every entry shares (node.js and deno.js instantiate it at import). Nothing is
// fetched or compiled at import: call `initSync({ module })` with a compiled
// `WebAssembly.Module` (`tripgate/tripgate.wasm` is one in workerd, Deno and Node), or
// `await init()` / `await init({ module_or_path })`. `Rejected`, `states`, `configFields`
// and the other tables are filled in then.
import initWasm, * as bindings from '../pkg/web/tripgate_wasm.js';
import { install } from './tables.js';

let ready = false;

/** Instantiates the wasm module synchronously from a `WebAssembly.Module` or bytes. */
export function initSync(options) {
  if (!ready) {
    bindings.initSync(options);
    install(bindings);
    ready = true;
  }
}

/** Instantiates the wasm module asynchronously (fetches it next to this file by default). */
export async function init(options) {
  if (!ready) {
    await initWasm(options);
    install(bindings);
    ready = true;
  }
}

export * from './api.js';
