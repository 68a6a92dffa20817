//! libFuzzer entry for `tripgate_fuzz::config` (the body, and what it checks, live there).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tripgate_fuzz::config(data));
