//! libFuzzer entry for `tripgate_fuzz::snapshot` (the body, and what it checks, live there).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tripgate_fuzz::snapshot(data));
