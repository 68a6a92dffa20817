// `tripgate/tripgate.wasm` under the `deno` condition: the compiled module, loaded by Deno's
// module loader (a source phase import), which needs no --allow-read.
import source module from '../../pkg/web/tripgate_wasm_bg.wasm';

export default module;
