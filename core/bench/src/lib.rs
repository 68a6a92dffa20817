//! Benchmarks only: see `benches/`. The library is empty so that the benches can share a
//! crate with `examples/hot_path.rs`, the loop profiled under perf and callgrind.
