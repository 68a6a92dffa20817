//! Replays the committed fuzz corpus (`tests/fuzz/corpus/<target>/`) through the target
//! bodies on the stable toolchain: every input the fuzzers kept, and every crash they
//! found (kept there once fixed), runs on each `cargo test`.

use tripgate_fuzz::replay;

#[test]
fn snapshot_corpus() {
    replay("snapshot", tripgate_fuzz::snapshot);
}

#[test]
fn config_corpus() {
    replay("config", tripgate_fuzz::config);
}

#[test]
fn model_corpus() {
    replay("model", tripgate_fuzz::model);
}
