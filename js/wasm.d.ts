// `tripgate/tripgate.wasm`: the package's compiled wasm module, for `initSync({ module })`
// of `tripgate/web`. workerd (and a bundler that hands `.wasm` imports over as compiled
// modules, as wrangler's does) gives the file itself; Deno and Node get a module whose
// default export is the same `WebAssembly.Module`.
declare const module: WebAssembly.Module;
export default module;
