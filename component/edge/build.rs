//! Builds the guard and composes it with the shipped tripgate component.
//!
//! 1. The shipped component: `TRIPGATE_COMPONENT` (a built `tripgate_component.wasm`)
//!    when set, else `cargo build -p tripgate-component --target wasm32-wasip2 --profile
//!    component`, the command `component/README.md` gives (the same artefact
//!    `tripgate-wasmtime` embeds, built in the outer build's target directory).
//! 2. The guard, `component/http-guard`, for `wasm32-wasip2` in the `wasm` profile, and
//!    again with its `bare` feature (no breaker, no store: the baseline) and with its
//!    `draft` feature (`wasi:keyvalue@0.2.0-draft`), each in a target directory of its
//!    own, so no build undoes another's.
//! 3. wac-graph plugs the tripgate component's `tripgate:breaker/circuit-breaker` export
//!    into the guard's import (what `wac plug` does) and encodes one component, validated.
//!
//! `OUT_DIR` then holds `guard.wasm` and `guard-draft.wasm` (composed) and `bare.wasm`;
//! the library embeds them.

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn main() {
    if let Err(message) = run() {
        eprintln!("tripgate-edge: {message}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let out = PathBuf::from(env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?);
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").ok_or("no manifest dir")?);
    let workspace = manifest.join("../..");
    // `OUT_DIR` is `<target>/<profile>/build/<crate>-<hash>/out`.
    let target_dir = out
        .ancestors()
        .nth(4)
        .ok_or("cannot find the target directory from OUT_DIR")?
        .to_path_buf();
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
    println!("cargo:rerun-if-env-changed=TRIPGATE_COMPONENT");

    let tripgate = match env::var_os("TRIPGATE_COMPONENT") {
        Some(path) => PathBuf::from(path),
        None => {
            cargo(
                &workspace,
                &target_dir,
                &["-p", "tripgate-component", "--profile", "component"],
            )?;
            target_dir.join("wasm32-wasip2/component/tripgate_component.wasm")
        }
    };
    cargo(
        &workspace,
        &target_dir,
        &["-p", "tripgate-http-guard", "--profile", "wasm"],
    )?;
    let guard = target_dir.join("wasm32-wasip2/wasm/tripgate_http_guard.wasm");
    let bare_dir = target_dir.join("tripgate-edge-bare");
    cargo(
        &workspace,
        &bare_dir,
        &[
            "-p",
            "tripgate-http-guard",
            "--features",
            "bare",
            "--profile",
            "wasm",
        ],
    )?;
    let bare = bare_dir.join("wasm32-wasip2/wasm/tripgate_http_guard.wasm");
    let draft_dir = target_dir.join("tripgate-edge-draft");
    cargo(
        &workspace,
        &draft_dir,
        &[
            "-p",
            "tripgate-http-guard",
            "--features",
            "draft",
            "--profile",
            "wasm",
        ],
    )?;
    let draft = draft_dir.join("wasm32-wasip2/wasm/tripgate_http_guard.wasm");

    let read =
        |path: &Path| std::fs::read(path).map_err(|e| format!("reading {}: {e}", path.display()));
    let composed = |guard: &Path| {
        compose(read(&tripgate)?, read(guard)?).map_err(|e| {
            format!(
                "composing {} into {}: {e:#}",
                tripgate.display(),
                guard.display()
            )
        })
    };
    let write = |name: &str, bytes: &[u8]| {
        std::fs::write(out.join(name), bytes)
            .map_err(|e| format!("writing {}: {e}", out.join(name).display()))
    };
    write("guard.wasm", &composed(&guard)?)?;
    write("guard-draft.wasm", &composed(&draft)?)?;
    write("bare.wasm", &read(&bare)?)
}

/// `wac plug`: the tripgate component's exports into the guard's matching imports.
fn compose(tripgate: Vec<u8>, guard: Vec<u8>) -> Result<Vec<u8>, Box<dyn std::error::Error>> {
    use wac_graph::types::Package;
    use wac_graph::{plug, CompositionGraph, EncodeOptions};

    let mut graph = CompositionGraph::new();
    let tripgate = Package::from_bytes("tripgate:breaker", None, tripgate, graph.types_mut())?;
    let tripgate = graph.register_package(tripgate)?;
    let guard = Package::from_bytes("tripgate:http-guard", None, guard, graph.types_mut())?;
    let guard = graph.register_package(guard)?;
    plug(&mut graph, vec![tripgate], guard)?;
    Ok(graph.encode(EncodeOptions::default())?)
}

/// A nested `cargo build --target wasm32-wasip2` of a workspace crate into `target_dir`.
fn cargo(workspace: &Path, target_dir: &Path, args: &[&str]) -> Result<(), String> {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(&cargo);
    command
        .args(["build", "--target", "wasm32-wasip2"])
        .args(args)
        .arg("--target-dir")
        .arg(target_dir)
        .current_dir(workspace)
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
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "`cargo build --target wasm32-wasip2 {}` failed ({status}); run it in {} to see why \
             (is the wasm32-wasip2 target installed? `rustup target add wasm32-wasip2`)",
            args.join(" "),
            workspace.display()
        ))
    }
}
