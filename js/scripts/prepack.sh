#!/usr/bin/env bash
# `prepack` (npm pack, npm publish): builds the wasm module and its glue into pkg/
# (scripts/build.sh) and copies the repository's licenses beside package.json, or fails
# naming what is missing. A tarball without the wasm would install and then fail at import
# (ERR_MODULE_NOT_FOUND), so there is never one. Nothing is installed here: the tools are
# checked, not fetched.
set -euo pipefail
JS="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROOT="$(cd "$JS/.." && pwd)"

refuse() {
  echo "tripgate prepack: $*" >&2
  echo "tripgate prepack: no tarball without the wasm module: nothing was packed" >&2
  exit 1
}

for source in Cargo.toml rust-toolchain.toml core/Cargo.toml js/crate/Cargo.toml LICENSE-MIT LICENSE-APACHE tests/setup.sh; do
  [ -f "$ROOT/$source" ] || refuse "$ROOT/$source is missing: pack from a checkout of the whole repository, which builds the wasm from core/ and js/crate/"
done
command -v cargo >/dev/null 2>&1 ||
  refuse "cargo is missing: install Rust (rustup), then run 'rustup toolchain install' in the repository (the toolchain and wasm target rust-toolchain.toml pins)"
sysroot="$(cd "$ROOT" && rustc --print sysroot 2>/dev/null)" ||
  refuse "the Rust toolchain that rust-toolchain.toml pins is not installed: run 'rustup toolchain install' in the repository"
[ -d "$sysroot/lib/rustlib/wasm32-unknown-unknown" ] ||
  refuse "the Rust target wasm32-unknown-unknown is missing: run 'rustup target add wasm32-unknown-unknown' in the repository"
WASM_BINDGEN_VERSION="$(sed -n 's/^WASM_BINDGEN_VERSION=//p' "$ROOT/tests/setup.sh")"
found="$(wasm-bindgen --version 2>/dev/null || echo none)"
[ "$found" = "wasm-bindgen $WASM_BINDGEN_VERSION" ] ||
  refuse "the wasm-bindgen CLI $WASM_BINDGEN_VERSION is missing (found: $found): cargo install wasm-bindgen-cli --version $WASM_BINDGEN_VERSION"

bash "$JS/scripts/build.sh" || refuse "scripts/build.sh failed (its output is above)"
cp "$ROOT/LICENSE-MIT" "$ROOT/LICENSE-APACHE" "$JS/"

# Every file package.json's `files` names (folders aside) must now exist and hold something.
cd "$JS"
missing="$(node -e '
  const { statSync } = require("node:fs");
  const size = (file) => { try { return statSync(file).size; } catch { return 0; } };
  console.log(require("./package.json").files.filter((f) => !f.endsWith("/") && size(f) === 0).join(" "));
')"
[ -z "$missing" ] || refuse "the build left out $missing"
