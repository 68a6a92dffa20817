//! The library works outside this repository: a throwaway crate in a temporary
//! directory, in no workspace, depends on `tripgate-wasmtime` by path, builds (the
//! component embedded by the build script) and runs a breaker through it.

use std::path::{Path, PathBuf};
use std::process::Command;

const MAIN: &str = r#"
use tripgate_wasmtime::{Config, Outcome, Runtime, State};

fn main() -> anyhow::Result<()> {
    let runtime = Runtime::new()?;
    let breaker = runtime.breaker(&Config { failure_threshold: 3, min_calls: 3, ..Config::default() })?;
    for _ in 0..20 {
        let permit = breaker.acquire()?.decision.expect("404s never trip");
        permit.record(Outcome::Status(404))?;
    }
    for _ in 0..3 {
        let permit = breaker.acquire()?.decision.expect("closed");
        permit.record(Outcome::Status(503))?;
    }
    assert_eq!(breaker.state()?, State::Open);
    let rejection = breaker.acquire()?.decision.expect_err("open rejects");
    println!("outside: open after 3 x 503, retry after {} ns", rejection.retry_after);
    Ok(())
}
"#;

/// The demo's hyper turns these smallvec features on, and cranelift depends on smallvec:
/// without them this crate would resolve wasmtime with other dependency features and
/// compile it again (three minutes) instead of reusing the build this test runs from.
const SAME_FEATURES: &str =
    "smallvec = { version = \"1\", features = [\"const_generics\", \"const_new\"] }";

/// The target directory this test binary was built in (`<target>/release/deps/<exe>`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.ancestors().nth(3).unwrap().to_path_buf()
}

#[test]
fn a_crate_outside_the_workspace_depends_on_the_library_by_path() {
    let library = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::temp_dir().join(format!("tripgate-outside-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"outside\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n\
             [dependencies]\ntripgate-wasmtime = {{ path = {:?} }}\nanyhow = \"1\"\n{SAME_FEATURES}\n\
             [workspace]\n",
            library.display().to_string()
        ),
    )
    .unwrap();
    std::fs::write(dir.join("src/main.rs"), MAIN).unwrap();
    // The repository's lock file pins the same dependency versions, so the build reuses
    // this target directory's wasmtime instead of resolving (and compiling) newer ones.
    std::fs::copy(library.join("../../Cargo.lock"), dir.join("Cargo.lock")).unwrap();

    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .args(["run", "--release", "--quiet"])
        .env("CARGO_TARGET_DIR", target_dir())
        .current_dir(&dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("outside: open after 3 x 503"), "{stdout}");
    let _ = std::fs::remove_dir_all(dir);
}
