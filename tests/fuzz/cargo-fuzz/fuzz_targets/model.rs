//! libFuzzer entry for `tripgate_fuzz::model` (the body, and what it checks, live there).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tripgate_fuzz::model(data));
