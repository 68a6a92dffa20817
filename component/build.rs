//! Linker settings for the component:
//! - the release profile's `strip = true` does not reach the core module inside the
//!   component (its name section survives `wasm-component-ld`), so ask the linker directly
//!   (`TRIPGATE_KEEP_NAMES=1` with `CARGO_PROFILE_COMPONENT_STRIP=false` keeps the names,
//!   to see which functions take the component's bytes);
//! - a 64 KiB shadow stack instead of Rust's default 1 MiB: the guest never recurses and
//!   its largest frame holds one breaker (about 2 KB), and every instance's linear memory
//!   starts smaller by almost 1 MiB.

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    let profile = std::env::var("PROFILE").unwrap_or_default();
    if target.starts_with("wasm32") {
        println!("cargo:rustc-link-arg=-zstack-size=65536");
        if profile == "release" && std::env::var_os("TRIPGATE_KEEP_NAMES").is_none() {
            println!("cargo:rustc-link-arg=--strip-all");
        }
    }
    println!("cargo:rerun-if-env-changed=TRIPGATE_KEEP_NAMES");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../wit");
}
