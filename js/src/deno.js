// Deno entry point: the package's wasm module, loaded by Deno's module loader (no
// --allow-read) and instantiated at import by the web entry's glue. `initSync` and `init`
// are then no-ops, kept so that code written for workers runs unchanged.
import module from './wasm/deno.js';
import { initSync } from './web.js';

initSync({ module });

export * from './web.js';
