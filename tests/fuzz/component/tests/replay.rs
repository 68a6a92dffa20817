//! Replays the committed corpus of the `component` fuzz target
//! (`tests/fuzz/corpus/component/`) through its body on the stable toolchain.

#[test]
fn component_corpus() {
    tripgate_fuzz::replay("component", tripgate_fuzz_component::component);
}
