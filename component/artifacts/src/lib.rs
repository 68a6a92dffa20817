//! Builds tripgate's guest artifacts: the one place that runs a nested
//! `cargo build --target wasm32-wasip2` of a workspace crate and says what the build read.
//!
//! Two callers: the `tripgate-artifacts` tool, which builds the shipped component
//! (`component/wasmtime/tripgate.wasm`), and `tripgate-edge`'s build script, which builds
//! the `wasi:http` guard in its three forms and composes it with the shipped component.
//! A build script reruns when a file the guest's compiler read changes ([`Built::inputs`],
//! from the dep-info file cargo writes beside the artifact), and on nothing else.
//!
//! Without the default `cli` feature this library needs nothing beyond `std`, so a build
//! script pays for no WebAssembly crates to use it.

pub mod guest;

pub use guest::{Built, Guest};
