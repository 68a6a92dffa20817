#!/usr/bin/env bash
# The JS package's tests, on the machine's Node (20) and on Node 24. Idempotent: builds
# the wasm (cargo + wasm-bindgen CLI), runs `npm ci` and installs Node 24 only when needed.
# Then the packed package on every runtime (test/tarball/), and the edge runtimes
# (scripts/edge-test.sh: workerd via miniflare, and Deno).
# test/fleet.test.js (fleet mode, Node only) starts real redis-servers of its own: it
# needs Debian's redis-server (apt-get install redis-server) and fails, saying so, without.
# Exits non-zero if any test fails on either version or runtime.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$JS"

status=0
echo "== cargo test -p tripgate-wasm: the wasm layer's own unit tests (native)"
(cd "$JS/.." && cargo test -p tripgate-wasm --quiet) || status=1
echo "== tsc: the TypeScript declarations (index.d.ts) against test/types-check.ts"
node node_modules/typescript/bin/tsc -p test || status=1
command -v redis-server >/dev/null || echo "tripgate: redis-server is missing (apt-get install redis-server): test/fleet.test.js will fail" >&2
for node in node "$NODE24"; do
  echo "== node $("$node" --version): node --test test/*.test.js (fleet.test.js among them)"
  "$node" --test --test-reporter=spec test/*.test.js || status=1
done
# The packed package (npm pack, with its prepack) installed into an empty project, on Node
# 20.19.0, 20 and 24, Deno and workerd: once, since each test runs every runtime itself.
echo "== node $(node --version): node --test test/tarball/*.test.js (npm pack, installed and run on every runtime)"
node --test --test-reporter=spec test/tarball/*.test.js || status=1
bash "$JS/scripts/edge-test.sh" || status=1
exit $status
