// Node entry point (ESM): the package's wasm module, compiled from its file at import and
// instantiated by the web entry's glue, so Node and the web share one .wasm. `initSync` and
// `init` are then no-ops, kept so that code written for workers runs unchanged.
import module from './wasm/node.js';
import { initSync } from './web.js';

initSync({ module });

export * from './web.js';
