//! Benchmarks only: `cargo bench -p tripgate-wasmtime-bench` (see `benches/`).
