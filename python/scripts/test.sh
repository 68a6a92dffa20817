#!/usr/bin/env bash
# Builds the Python package (one abi3 wheel, maturin) in a venv with the pinned test
# dependencies and bench peers, installs it as a user would, and runs its tests: every
# shared vector, the metrics scenario against tests/metrics/expected.prom and promtool, the
# API, asyncio, classification against real services on 127.0.0.1, the brownout's verdicts,
# fleet mode through redis-py on a real redis-server (with a mixed fleet of Python, Rust and,
# where node and the wasm-bindgen CLI are, Node members), and a one-run smoke of the bench
# (which asserts no speed).
#
#   bash python/scripts/test.sh        (from anywhere; tests/run-all.sh runs it)
#
# The venv and the wheel live in cargo's target dir (CARGO_TARGET_DIR, else what cargo's
# config says, else target/), so a second run reuses both; pip only installs what is
# missing.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
TARGET="$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps 2>/dev/null |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])' 2>/dev/null ||
  echo "${CARGO_TARGET_DIR:-$ROOT/target}")"
case "$TARGET" in /*) ;; *) TARGET="$ROOT/$TARGET" ;; esac
VENV="$TARGET/python-venv"
PYTHON="${PYTHON:-python3}"

# Fleet mode's tests start their own redis-server (Debian's package).
if ! command -v redis-server >/dev/null 2>&1 && [ ! -x /usr/bin/redis-server ]; then
  run=()
  [ "$(id -u)" -eq 0 ] || run=(sudo)
  "${run[@]}" apt-get install -y redis-server >/dev/null 2>&1 ||
    { "${run[@]}" apt-get update >/dev/null && "${run[@]}" apt-get install -y redis-server >/dev/null; }
fi

# The mixed fleet's Rust member (`host-demo fleet-member`), unless TRIPGATE_HOST_DEMO names
# one: the same build as `cargo run --release -p host-demo`, which tests/run-all.sh's
# wasmtime step then reuses.
if [ -z "${TRIPGATE_HOST_DEMO:-}" ]; then
  (cd "$ROOT" && cargo build --release --quiet -p host-demo)
fi
export TRIPGATE_TARGET_DIR="$TARGET"

# The mixed fleet's Node member (js/examples/fleet-member.mjs) needs the JS package built
# (js/pkg) and its redis client: made here when node and the wasm-bindgen CLI are on the
# machine (tests/setup.sh installs the CLI), unless TRIPGATE_NODE_MEMBER names a member
# elsewhere. Without them its test is skipped, saying why.
if [ -z "${TRIPGATE_NODE_MEMBER:-}" ] && command -v node >/dev/null 2>&1 &&
  command -v wasm-bindgen >/dev/null 2>&1; then
  bash "$ROOT/js/scripts/build.sh" >/dev/null
  # Built here, so the Node member must run: its test fails rather than skips.
  export TRIPGATE_NODE_MEMBER_REQUIRED=1
  if [ ! -f "$ROOT/js/node_modules/.package-lock.json" ] ||
    [ "$ROOT/js/package-lock.json" -nt "$ROOT/js/node_modules/.package-lock.json" ]; then
    (cd "$ROOT/js" && npm ci --no-audit --no-fund --loglevel=error)
  fi
fi

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install -q --disable-pip-version-check \
  -r "$HERE/requirements-test.txt" -r "$HERE/requirements-bench.txt"

rm -rf "$TARGET/python-wheels"
"$VENV/bin/maturin" build --release --quiet -m "$HERE/Cargo.toml" --out "$TARGET/python-wheels" \
  --interpreter "$VENV/bin/python"
wheel="$(ls "$TARGET"/python-wheels/tripgate-*-abi3-*.whl)"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps "$wheel"
echo "wheel: $(basename "$wheel") ($(stat -c %s "$wheel") bytes)"

cd "$HERE/tests"
"$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"
