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
        .map_err(|e| format!("{} is not a well-formed component: {e}", built.display()))?;
    std::fs::write(out.join(FILE), shipped)
        .map_err(|e| format!("writing {}: {e}", out.join(FILE).display()))
}

/// The component without its `component-name` custom section: the names of its types and
/// functions for debuggers (about 4.5 KB), which the linker writes and no host needs, as
/// `strip = true` leaves out the core module's own. `wasmparser` walks the top-level
/// sections (a nested module or component is one section, stepped over whole) and
/// `wasm-encoder` writes every other one back as it was.
fn without_debug_names(component: &[u8]) -> Result<Vec<u8>, String> {
    use wasmparser::{Chunk, Parser, Payload};
    let malformed = |e: wasmparser::BinaryReaderError| e.to_string();
    let mut out = wasm_encoder::Component::new();
    let mut parser = Parser::new(0);
    let mut rest = component;
    loop {
        let (consumed, payload) = match parser.parse(rest, true).map_err(malformed)? {
            Chunk::Parsed { consumed, payload } => (consumed, payload),
            Chunk::NeedMoreData(_) => return Err("the component ends early".into()),
        };
        rest = rest
            .get(consumed..)
            .ok_or("the parser overran the component")?;
        let nested = match &payload {
            Payload::End(_) => break,
            Payload::CustomSection(custom) if custom.name() == "component-name" => continue,
            Payload::ModuleSection {
                unchecked_range, ..
            }
            | Payload::ComponentSection {
                unchecked_range, ..
            } => Some(unchecked_range.end.saturating_sub(unchecked_range.start)),
            _ => None,
        };
        if let Some((id, range)) = payload.as_section() {
            let data = component
                .get(range.start as usize..range.end as usize)
                .ok_or("a section runs past the component's end")?;
            out.section(&wasm_encoder::RawSection { id, data });
        }
        if let Some(len) = nested {
            // Copied whole above: step over its bytes instead of feeding them to its own
            // parser; the parent parser resumes after it.
            let len = usize::try_from(len).map_err(|e| e.to_string())?;
            rest = rest
                .get(len..)
                .ok_or("a nested section runs past the end")?;
        }
    }
    Ok(out.finish())
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
