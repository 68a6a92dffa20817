//! One guest crate of the workspace, built for `wasm32-wasip2` by a nested cargo.

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The target every guest is built for.
pub const TARGET: &str = "wasm32-wasip2";

/// What to build: a workspace package, in a profile, with some features.
#[derive(Clone, Copy, Debug)]
pub struct Guest<'a> {
    /// The package's name (`tripgate-component`, `tripgate-http-guard`).
    pub package: &'a str,
    /// Its directory in the workspace (`component`, `component/http-guard`): its manifest
    /// and build script are inputs too, which dep-info does not list.
    pub dir: &'a str,
    /// The cargo profile (`component`, `wasm`).
    pub profile: &'a str,
    /// Features of the package to turn on.
    pub features: &'a [&'a str],
}

/// A built guest: where its `.wasm` is, and every file its compiler read.
#[derive(Clone, Debug)]
pub struct Built {
    /// The artifact.
    pub wasm: PathBuf,
    /// The sources, WIT files and manifests the build read (cargo's dep-info for the
    /// artifact, with the workspace's and the package's manifests, the package's build
    /// script and the lock file).
    pub inputs: Vec<PathBuf>,
}

impl Guest<'_> {
    /// Builds the guest from the workspace at `workspace` into `target_dir`, and reads what
    /// the build read. The caller's own cargo settings (its target, flags, profile and
    /// features) are not passed on: they are for the host crate, not for the guest.
    pub fn build(&self, workspace: &Path, target_dir: &Path) -> Result<Built, String> {
        let mut args = vec!["build", "--target", TARGET, "--package", self.package];
        args.extend(["--profile", self.profile]);
        let features = self.features.join(",");
        if !features.is_empty() {
            args.extend(["--features", &features]);
        }
        run_cargo(workspace, target_dir, &args)?;
        let dir = target_dir.join(TARGET).join(self.profile);
        let stem = self.package.replace('-', "_");
        let wasm = dir.join(format!("{stem}.wasm"));
        let mut inputs = dep_info(&dir.join(format!("{stem}.d")))?;
        inputs.extend(["Cargo.toml", "Cargo.lock"].map(|file| workspace.join(file)));
        let package = workspace.join(self.dir);
        inputs.extend(["Cargo.toml", "build.rs"].map(|file| package.join(file)));
        Ok(Built { wasm, inputs })
    }
}

impl Built {
    /// The artifact's bytes.
    pub fn read(&self) -> Result<Vec<u8>, String> {
        std::fs::read(&self.wasm).map_err(|e| format!("reading {}: {e}", self.wasm.display()))
    }

    /// Tells cargo to run the calling build script again when one of the inputs changes.
    pub fn rerun_if_changed(&self) {
        for input in &self.inputs {
            println!("cargo:rerun-if-changed={}", input.display());
        }
    }
}

/// Runs `cargo <args> --target-dir <target_dir>` in `workspace`, without the caller's cargo
/// settings, its output on stderr (a build script's stdout is cargo's instructions).
fn run_cargo(workspace: &Path, target_dir: &Path, args: &[&str]) -> Result<(), String> {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .args(args)
        .arg("--target-dir")
        .arg(target_dir)
        .current_dir(workspace)
        .stdout(Stdio::null());
    for (key, _) in env::vars_os() {
        let key = key.to_string_lossy();
        if is_callers(&key) {
            command.env_remove(&*key);
        }
    }
    let status = command
        .status()
        .map_err(|e| format!("running cargo: {e}"))?;
    if status.success() {
        return Ok(());
    }
    Err(format!(
        "`cargo {}` failed ({status}); run it in {} to see why (the toolchain in \
         rust-toolchain.toml lists the {TARGET} target: `rustup toolchain install` adds it)",
        args.join(" "),
        workspace.display()
    ))
}

/// The variables that say how the calling crate is built, which a guest's build must not
/// inherit.
fn is_callers(key: &str) -> bool {
    matches!(
        key,
        "CARGO_ENCODED_RUSTFLAGS"
            | "RUSTFLAGS"
            | "CARGO_BUILD_TARGET"
            | "CARGO_TARGET_DIR"
            | "CARGO_PRIMARY_PACKAGE"
            | "CARGO_MAKEFLAGS"
    ) || key.starts_with("CARGO_PROFILE_")
        || key.starts_with("CARGO_FEATURE_")
}

/// The files a dep-info file (`<artifact>: <input> <input> …`, spaces in a path escaped
/// with a backslash) lists as the artifact's inputs.
fn dep_info(path: &Path) -> Result<Vec<PathBuf>, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let line = text.lines().next().unwrap_or_default();
    let (_, inputs) = line
        .split_once(": ")
        .ok_or_else(|| format!("{} is not a dep-info file", path.display()))?;
    Ok(split_escaped(inputs)
        .into_iter()
        .map(PathBuf::from)
        .collect())
}

/// Splits at unescaped spaces, and unescapes `\ ` and `\\`.
fn split_escaped(line: &str) -> Vec<String> {
    let (mut words, mut word) = (Vec::new(), String::new());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => word.extend(chars.next()),
            ' ' => words.push(std::mem::take(&mut word)),
            c => word.push(c),
        }
    }
    words.push(word);
    words.retain(|word| !word.is_empty());
    words
}

#[cfg(test)]
mod tests {
    use super::split_escaped;

    #[test]
    fn dep_info_paths_keep_their_escaped_spaces() {
        assert_eq!(
            split_escaped(r"/a/b.rs /my\ dir/c.wit  /d\\e.rs"),
            ["/a/b.rs", "/my dir/c.wit", r"/d\e.rs"]
        );
    }
}
