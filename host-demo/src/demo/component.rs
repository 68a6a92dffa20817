//! Finds the tripgate component, building it once when it is missing, and loads it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use host_demo::Runtime;

const BUILD: [&str; 6] = [
    "build",
    "-p",
    "tripgate-component",
    "--target",
    "wasm32-wasip2",
    "--release",
];

fn command_text() -> String {
    format!("cargo {}", BUILD.join(" "))
}

/// The component at `--component`, or at the default path (built there first if it is
/// not there yet and this binary still knows its workspace).
pub fn load(explicit: Option<&Path>) -> Result<(Runtime, PathBuf)> {
    let path = match explicit {
        Some(path) => path.to_path_buf(),
        None => {
            let path = host_demo::default_component_path();
            if !path.exists() && std::env::var_os("TRIPGATE_COMPONENT").is_none() {
                build(&path)?;
            }
            path
        }
    };
    let runtime = Runtime::from_file(&path)
        .with_context(|| format!("loading the tripgate component from {}", path.display()))?;
    Ok((runtime, path.canonicalize().unwrap_or(path)))
}

fn build(path: &Path) -> Result<()> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    if !workspace.join("component").join("Cargo.toml").exists() {
        bail!(
            "the tripgate component is not at {} and this binary cannot see the workspace \
             to build it: run `{}` in the repository, or pass --component PATH",
            path.display(),
            command_text()
        );
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!(
        "The tripgate component is not built yet ({}).\nBuilding it once: {}",
        path.display(),
        command_text()
    );
    // A toolchain installed before rust-toolchain.toml named the wasm targets does not get
    // them on its own; adding one that is there already is a no-op. Best effort: without
    // rustup, the build below says what is missing.
    let _ = Command::new("rustup")
        .args(["target", "add", "wasm32-wasip2"])
        .current_dir(&workspace)
        .stdout(Stdio::null())
        .status();
    let status = Command::new(&cargo)
        .args(BUILD)
        .current_dir(&workspace)
        // Cargo reports on stderr; stdout stays clean for --json.
        .stdout(Stdio::null())
        .status()
        .with_context(|| format!("running `{}`", command_text()))?;
    if !status.success() || !path.exists() {
        bail!(
            "building the component did not produce {} ({status}); run `{}` in {} and \
             look at its errors, or pass --component PATH",
            path.display(),
            command_text(),
            workspace.display()
        );
    }
    Ok(())
}
