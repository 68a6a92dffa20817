//! Builds the guest artifacts this repository ships, from its sources:
//!
//! - `component/wasmtime/tripgate.wasm`: the tripgate component (`component/`, for
//!   `wasm32-wasip2` in the workspace's `component` profile) without its debug names,
//!   which `tripgate-wasmtime` embeds, so that the crate builds from its package alone.
//!
//! ```sh
//! cargo run -p tripgate-artifacts -- refresh   # build, and write the shipped file
//! cargo run -p tripgate-artifacts -- check     # build, and fail if the shipped file differs
//! ```
//!
//! `tests/run-all.sh` runs `check`, so a change to the component's sources (the core, the
//! WIT, the lock file) that is not refreshed fails the tests.

use std::env;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use tripgate_artifacts::Guest;

mod strip;

/// Where the shipped component lives, from the workspace's root.
const SHIPPED: &str = "component/wasmtime/tripgate.wasm";

fn main() -> ExitCode {
    let mode = env::args().nth(1).unwrap_or_default();
    let result = match mode.as_str() {
        "refresh" => refresh(),
        "check" => check(),
        _ => Err("usage: tripgate-artifacts refresh|check".into()),
    };
    match result {
        Ok(said) => {
            println!("{said}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("tripgate-artifacts: {message}");
            ExitCode::FAILURE
        }
    }
}

fn refresh() -> Result<String, String> {
    let root = workspace()?;
    let built = component(&root)?;
    let path = root.join(SHIPPED);
    std::fs::write(&path, &built).map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(format!("{SHIPPED}: {} bytes", built.len()))
}

fn check() -> Result<String, String> {
    let root = workspace()?;
    let built = component(&root)?;
    let path = root.join(SHIPPED);
    let shipped = std::fs::read(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    if shipped != built {
        return Err(format!(
            "{SHIPPED} ({} bytes) is not what its sources build ({} bytes): run `cargo run -p \
             tripgate-artifacts -- refresh` and commit it",
            shipped.len(),
            built.len()
        ));
    }
    Ok(format!(
        "{SHIPPED}: {} bytes, as its sources build it",
        built.len()
    ))
}

/// The workspace's root: two levels above this crate.
fn workspace() -> Result<PathBuf, String> {
    // `cargo run` says where this crate is now; the path built in may be another
    // checkout's when a target dir is shared.
    let manifest = env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    manifest
        .ancestors()
        .nth(2)
        .map(Path::to_path_buf)
        .ok_or_else(|| "no workspace above component/artifacts".into())
}

/// Builds the tripgate component and returns it as shipped: without debug names.
fn component(root: &Path) -> Result<Vec<u8>, String> {
    let guest = Guest {
        package: "tripgate-component",
        dir: "component",
        profile: "component",
        features: &[],
    };
    let built = guest.build(root, &target_dir()?)?;
    let bytes = built.read()?;
    let path = built.wasm.display();
    // A component, not a core module: `\0asm`, then layer 1 (component encoding 0x0d).
    if bytes.get(..8) != Some(&[0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00][..]) {
        return Err(format!("{path} is not a WebAssembly component"));
    }
    strip::without_debug_names(&bytes)
        .map_err(|e| format!("{path} is not a well-formed component: {e}"))
}

/// Cargo's target directory: this tool runs from `<target>/<profile>/`, built by `cargo run`.
fn target_dir() -> Result<PathBuf, String> {
    let exe = env::current_exe().map_err(|e| format!("where this tool runs from: {e}"))?;
    exe.ancestors()
        .nth(2)
        .map(Path::to_path_buf)
        .ok_or_else(|| format!("no target directory above {}", exe.display()))
}
