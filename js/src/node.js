// Node entry point (ESM): the wasm module is compiled and instantiated synchronously at
// import, from the file next to the glue (wasm-bindgen --target experimental-nodejs-module).
import * as bindings from '../pkg/node/tripgate_wasm.js';
import { install } from './tables.js';

install(bindings);

export * from './api.js';

/** Node needs no initialisation; present so code written for workers runs unchanged. */
export function initSync() {}
/** Node needs no initialisation; present so code written for workers runs unchanged. */
export async function init() {}
