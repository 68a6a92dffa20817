#!/usr/bin/env bash
# The typed keyed pair of tripgate:breaker@0.3.0 beside the scalar pair of 0.2.0
# (`acquire-handle` / `record-handle`, results in bit fields), in one run on one engine:
# builds the 0.2.0 component from git (the last commit with that WIT) into a target dir
# of its own, then runs the component bench and the interleaved rounds with it.
#
#   bash component/bench/compare-0.2.sh [criterion args...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
V020_COMMIT=a83d066
WORK="${TMPDIR:-/tmp}/tripgate-v020"
COMPONENT="$WORK/target/wasm32-wasip2/component/tripgate_component.wasm"

if [ ! -f "$COMPONENT" ]; then
  rm -rf "$WORK/src"
  mkdir -p "$WORK"
  git -C "$ROOT" worktree prune
  git -C "$ROOT" worktree add --detach "$WORK/src" "$V020_COMMIT" >/dev/null
  (cd "$WORK/src" && cargo build -p tripgate-component --target wasm32-wasip2 \
    --profile component --target-dir "$WORK/target")
  git -C "$ROOT" worktree remove --force "$WORK/src"
fi
export TRIPGATE_COMPONENT_V020="$COMPONENT"
cd "$ROOT"
cargo bench -p tripgate-wasmtime-bench --bench component -- "bare bindings" "$@"
cargo run --release -p tripgate-wasmtime-bench --example interleaved
