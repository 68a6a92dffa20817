#!/usr/bin/env bash
# The edge-runtime tests: the example Worker (examples/worker/) in real workerd through
# miniflare's programmatic API (on Node 20 and Node 24), and the shared vectors in Deno.
# Both runtimes are pinned dev-dependencies installed from the npm registry by `npm ci`
# (miniflare 4.20260426.0 with workerd 1.20260426.1 from @cloudflare/workerd-linux-64,
# deno 2.9.6 from @deno/linux-x64-glibc): nothing else is downloaded.
# Called by test.sh; on its own it first runs setup.sh (build, npm ci, Node 24).
set -euo pipefail
if [ -z "${NODE24:-}" ]; then
  source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
fi
JS="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$JS"

status=0
for node in node "$NODE24"; do
  echo "== $(node_modules/.bin/workerd --version) via miniflare $(node -p 'require("./node_modules/miniflare/package.json").version') on node $("$node" --version): test/edge/worker.test.js"
  "$node" --test --test-timeout=120000 --test-reporter=spec test/edge/worker.test.js || status=1
done

# Deno keeps its caches in DENO_DIR (under .tools/, ignored by git); no update check, no
# lock file, no type check (tsc checks index.d.ts in test.sh), only the files it reads.
export DENO_DIR="$JS/.tools/deno-dir" DENO_NO_UPDATE_CHECK=1 NO_COLOR=1
echo "== $(node_modules/.bin/deno --version | head -1): test/vectors.test.js, test/errors-vector.test.js, test/retry-after-vector.test.js and test/retry-vector.test.js (the files node --test runs)"
node_modules/.bin/deno test --no-check --no-lock --node-modules-dir=manual --allow-read \
  test/vectors.test.js test/errors-vector.test.js test/retry-after-vector.test.js test/retry-vector.test.js || status=1
exit $status
