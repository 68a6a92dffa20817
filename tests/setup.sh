#!/usr/bin/env bash
# Installs what the tests need, each only when it is missing or at another version, so a
# second run takes seconds: the pinned Rust toolchain with its wasm targets
# (rust-toolchain.toml), redis-server and promtool (Debian's redis-server and prometheus
# packages), and the wasm-bindgen CLI at the version the JS crate pins. The npm packages
# and Node 24 are the JS suite's own setup (js/scripts/setup.sh).
#
#   bash tests/setup.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
WASM_BINDGEN_VERSION=0.2.130

step() { printf '\n== %s\n' "$*"; }

step "Rust: the toolchain rust-toolchain.toml pins, with its components and targets"
# No arguments: rustup reads rust-toolchain.toml here (a machine with
# RUSTUP_AUTO_INSTALL=0 never installs it on its own).
rustup toolchain install

# Root installs directly; anyone else through sudo.
apt_install() {
  local run=()
  [ "$(id -u)" -eq 0 ] || run=(sudo)
  "${run[@]}" apt-get install -y "$@" >/dev/null 2>&1 ||
    { "${run[@]}" apt-get update >/dev/null && "${run[@]}" apt-get install -y "$@" >/dev/null; }
}
if ! command -v redis-server >/dev/null 2>&1; then
  step "redis-server (Debian's package): fleet mode's tests start their own"
  apt_install redis-server
fi
if ! command -v promtool >/dev/null 2>&1; then
  step "promtool (Debian's prometheus package): it validates every host's metrics"
  apt_install prometheus
fi

if [ "$(wasm-bindgen --version 2>/dev/null || true)" != "wasm-bindgen $WASM_BINDGEN_VERSION" ]; then
  step "wasm-bindgen CLI $WASM_BINDGEN_VERSION (the JS crate pins it; a few minutes)"
  # No --locked: its lock file names a crate release the registry here does not have.
  # --debug: builds in half the time, and processing a 60 KB module still takes ~70 ms.
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --debug
fi
