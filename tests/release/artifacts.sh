#!/usr/bin/env bash
# Builds every release artifact of tripgate into one folder, from this checkout:
#
#   crates/      tripgate-core, tripgate-host, tripgate, tripgate-redis, tripgate-wasmtime
#                (.crate files, as `cargo publish` would upload them)
#   npm/         tripgate-<version>.tgz (`npm pack`; its prepack builds the wasm)
#   python/      the wheel (abi3, manylinux2014 through zig) and the sdist
#   component/   tripgate.wasm and its WIT (breaker.wit), for any component host
#
#   bash tests/release/artifacts.sh [OUT]      (default: <cargo target dir>/release-artifacts)
#
# Nothing is published. No artifact carries this machine's paths: the wheel is built with
# them remapped, and tests/release/consumers.py checks every artifact for them.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
TARGET="$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
OUT="${1:-$TARGET/release-artifacts}"
rm -rf "$OUT"
mkdir -p "$OUT"/{crates,npm,python,component}
step() { printf '\n== %s\n' "$*"; }

step "crates: cargo package"
# --no-verify: verifying builds each crate against crates.io, where its tripgate
# dependencies are not published; the consumer test builds them from these files instead.
cargo package --quiet --no-verify --allow-dirty \
  -p tripgate-core -p tripgate-host -p tripgate -p tripgate-redis -p tripgate-wasmtime
cp "$TARGET"/package/tripgate-*.crate "$OUT/crates/"

step "component: the shipped component and its WIT"
cargo run --quiet -p tripgate-artifacts -- check
cp component/wasmtime/tripgate.wasm "$OUT/component/tripgate.wasm"
cp wit/breaker.wit "$OUT/component/breaker.wit"

step "npm: npm pack"
(cd js && npm pack --silent --pack-destination "$OUT/npm" >/dev/null)

step "python: the wheel (manylinux2014, through zig) and the sdist"
VENV="$TARGET/release-venv"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check maturin==1.16.0 ziglang==0.17.0
# maturin finds zig as `python3 -m ziglang`: the venv's python3 must come first.
# The build machine's paths (the checkout, cargo's home) are remapped in every crate.
CARGO_HOME_DIR="${CARGO_HOME:-$HOME/.cargo}"
(
  export PATH="$VENV/bin:$PATH"
  export RUSTFLAGS="--remap-path-prefix=$ROOT=/tripgate --remap-path-prefix=$CARGO_HOME_DIR=/cargo"
  export CARGO_TARGET_DIR="$TARGET/release-wheel"
  maturin build --quiet --release --zig --compatibility manylinux2014 \
    -m python/Cargo.toml --out "$OUT/python"
  maturin sdist -m python/Cargo.toml --out "$OUT/python"
)

step "artifacts"
(cd "$OUT" && find . -type f -printf '%P\t%s bytes\n' | sort)
