//! libFuzzer entry for `tripgate_fuzz_component::component` (the body, and what it
//! checks, live there).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tripgate_fuzz_component::component(data));
