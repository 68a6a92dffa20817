//! The release profile's `strip = true` does not reach the core module inside the
//! component (its name section survives `wasm-component-ld`), so ask the linker directly.

fn main() {
    let target = std::env::var("TARGET").unwrap_or_default();
    let profile = std::env::var("PROFILE").unwrap_or_default();
    if target.starts_with("wasm32") && profile == "release" {
        println!("cargo:rustc-link-arg=--strip-all");
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../wit");
}
