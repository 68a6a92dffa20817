//! Linker settings for the component:
//! - the release profile's `strip = true` does not reach the core module inside the
//!   component (its name section survives `wasm-component-ld`), so ask the linker directly
//!   (`TRIPGATE_KEEP_NAMES=1` with `CARGO_PROFILE_COMPONENT_STRIP=false` keeps the names,
//!   to see which functions take the component's bytes);
//! - a 32 KiB shadow stack instead of Rust's default 1 MiB: the guest never recurses and
//!   its largest frame holds one breaker (about 2 KB). The stack and the data then fit in
//!   the first 64 KiB page, so an instance's memory starts at one page: hosts that start
//!   an instance per request (the wasi:http guard) reset every page of it after each.

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    let profile = std::env::var("PROFILE").unwrap_or_default();
    if target.starts_with("wasm32") {
        println!("cargo:rustc-link-arg=-zstack-size=32768");
        if profile == "release" && std::env::var_os("TRIPGATE_KEEP_NAMES").is_none() {
            println!("cargo:rustc-link-arg=--strip-all");
        }
    }
    println!("cargo:rerun-if-env-changed=TRIPGATE_KEEP_NAMES");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../wit");
}
