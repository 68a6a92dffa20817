//! Embeds the tripgate component, so `Runtime::new()` needs no file at run time.
//!
//! The component comes from `TRIPGATE_COMPONENT` (a path to a built
//! `tripgate_component.wasm`) when that is set, else it is built from the source tree this
//! crate sits in (`component/`, two levels up), for `wasm32-wasip2` in the workspace's `component`
//! profile: a nested cargo, as wasm runtimes' build helpers do. That build shares the
//! outer build's target directory (its own profile directory, so neither waits on the
//! other) and is as incremental as any cargo build.

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const FILE: &str = "tripgate_component.wasm";

fn main() {
    if let Err(message) = run() {
        // A build script's panic is how cargo shows the reason; make it one clear line.
        eprintln!("tripgate-wasmtime: {message}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let out = PathBuf::from(env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?);
    println!("cargo:rerun-if-env-changed=TRIPGATE_COMPONENT");
    let built = match env::var_os("TRIPGATE_COMPONENT") {
        Some(path) => {
            let path = PathBuf::from(path);
            println!("cargo:rerun-if-changed={}", path.display());
            path
        }
        None => build_from_source(&out)?,
    };
    let bytes = std::fs::read(&built)
        .map_err(|e| format!("reading the component at {}: {e}", built.display()))?;
    // A component, not a core module: `\0asm`, then layer 1 (component encoding 0x0d).
    if bytes.get(..8) != Some(&[0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00][..]) {
        return Err(format!(
            "{} is not a WebAssembly component (wrong header)",
            built.display()
        ));
    }
    let shipped = without_debug_names(&bytes)
        .ok_or_else(|| format!("{} is not a well-formed component", built.display()))?;
    std::fs::write(out.join(FILE), shipped)
        .map_err(|e| format!("writing {}: {e}", out.join(FILE).display()))
}

/// The component without its `component-name` custom section: the names of its types and
/// functions for debuggers (about 4.5 KB), which the linker writes and no host needs, as
/// `strip = true` leaves out the core module's own. A component's top level is a header
/// and then sections, each an id byte, a LEB128 length and that many bytes; a custom
/// section (id 0) starts with its name. Everything else is copied as it is.
fn without_debug_names(component: &[u8]) -> Option<Vec<u8>> {
    let (header, mut rest) = component.split_at_checked(8)?;
    let mut out = header.to_vec();
    while let Some((&id, after_id)) = rest.split_first() {
        let (len, after_len) = leb128(after_id)?;
        let (body, after) = after_len.split_at_checked(len)?;
        let section = rest.get(..rest.len().checked_sub(after.len())?)?;
        let debug_names = id == 0
            && leb128(body)
                .is_some_and(|(name_len, name)| name.get(..name_len) == Some(b"component-name"));
        if !debug_names {
            out.extend_from_slice(section);
        }
        rest = after;
    }
    Some(out)
}

/// An unsigned LEB128 number (as section lengths are written) and what follows it.
fn leb128(bytes: &[u8]) -> Option<(usize, &[u8])> {
    let mut value = 0usize;
    for (i, &byte) in bytes.iter().enumerate().take(5) {
        value |= usize::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((value, bytes.get(i + 1..)?));
        }
    }
    None
}

fn build_from_source(out: &Path) -> Result<PathBuf, String> {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").ok_or("no manifest dir")?);
    let workspace = manifest.join("../..");
    let component = workspace.join("component");
    if !component.join("Cargo.toml").is_file() {
        return Err(format!(
            "no component source at {} to build: set TRIPGATE_COMPONENT to a built \
             tripgate_component.wasm",
            component.display()
        ));
    }
    for input in [
        "component",
        "core/src",
        "core/Cargo.toml",
        "wit",
        "Cargo.toml",
        "Cargo.lock",
    ] {
        println!("cargo:rerun-if-changed={}", workspace.join(input).display());
    }

    // `OUT_DIR` is `<target>/<profile>/build/<crate>-<hash>/out` (with a triple after
    // `<target>` when cross-compiling); the nested build goes under that `<target>`.
    let target_dir = out
        .ancestors()
        .nth(4)
        .ok_or("cannot find the target directory from OUT_DIR")?
        .to_path_buf();
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let args = [
        "build",
        "--package",
        "tripgate-component",
        "--target",
        "wasm32-wasip2",
        "--profile",
        "component",
    ];
    // A toolchain installed before rust-toolchain.toml named the wasm targets lacks them;
    // adding one that is there is a no-op. Best effort: without rustup, the build below
    // says what is missing.
    let _ = Command::new("rustup")
        .args(["target", "add", "wasm32-wasip2"])
        .current_dir(&workspace)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    let mut command = Command::new(&cargo);
    command
        .args(args)
        .arg("--target-dir")
        .arg(&target_dir)
        .current_dir(&workspace)
        .stdout(Stdio::null());
    // The outer build's settings are for the host crate, not for a wasm guest.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_PRIMARY_PACKAGE",
    ] {
        command.env_remove(var);
    }
    for (key, _) in env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("CARGO_PROFILE_") || key.starts_with("CARGO_FEATURE_") {
            command.env_remove(&*key);
        }
    }
    let status = command
        .status()
        .map_err(|e| format!("running cargo: {e}"))?;
    let built = target_dir
        .join("wasm32-wasip2")
        .join("component")
        .join(FILE);
    if !status.success() || !built.is_file() {
        return Err(format!(
            "building the component failed ({status}); run `cargo {}` in {} to see why \
             (is the wasm32-wasip2 target installed? `rustup target add wasm32-wasip2`)",
            args.join(" "),
            workspace.display()
        ));
    }
    Ok(built)
}
