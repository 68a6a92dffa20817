#!/usr/bin/env bash
# Builds the wasm module and its JS glue into js/pkg/{node,web}. Idempotent.
set -euo pipefail
JS="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROOT="$(cd "$JS/.." && pwd)"
WASM_BINDGEN_VERSION=0.2.130

if [ "$(wasm-bindgen --version 2>/dev/null || true)" != "wasm-bindgen $WASM_BINDGEN_VERSION" ]; then
  echo "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (a few minutes)..." >&2
  # No --locked: its lock file names a crate release the registry mirror lacks.
  # --debug: builds in half the time; processing the module still takes ~70 ms.
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --debug
fi

cd "$ROOT"
cargo build -p tripgate-wasm --target wasm32-unknown-unknown --profile wasm
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
WASM="$TARGET_DIR/wasm32-unknown-unknown/wasm/tripgate_wasm.wasm"

for target in node web; do
  flag=$target
  [ "$target" = node ] && flag=experimental-nodejs-module
  rm -rf "$JS/pkg/$target"
  wasm-bindgen --target "$flag" --remove-name-section --remove-producers-section \
    --out-dir "$JS/pkg/$target" "$WASM"
done
echo "wasm: $(wc -c < "$JS/pkg/node/tripgate_wasm_bg.wasm") bytes" >&2
