// `tripgate/tripgate.wasm` under the `node` condition: the compiled module, read from the
// package's one .wasm file (the web entry instantiates the same bytes in every runtime).
import { readFileSync } from 'node:fs';

export default new WebAssembly.Module(readFileSync(new URL('../../pkg/web/tripgate_wasm_bg.wasm', import.meta.url)));
