#!/usr/bin/env bash
# Fuzzes tripgate with cargo-fuzz (libFuzzer), outside the stable CI path: it installs a
# nightly toolchain and cargo-fuzz itself when they are missing (idempotent).
#
#   bash tests/fuzz/run.sh run TARGET [SECONDS]   # fuzz one target (default 600 s)
#   bash tests/fuzz/run.sh cmin TARGET            # minimize its corpus into tests/fuzz/corpus/
#   bash tests/fuzz/run.sh build TARGET           # just build
#
# Targets: snapshot, config, model, component. One job and one worker, under `nice`: the
# machine is shared. The fuzzer works on its own copy of the corpus (under the target
# dir), seeded from the committed one, so the committed corpus changes only by `cmin`.
# Crashes land in tests/fuzz/cargo-fuzz/artifacts/TARGET/; once fixed, copy the input into
# tests/fuzz/corpus/TARGET/ so that the replay (`cargo test`) keeps it.
#
# Honours CARGO_TARGET_DIR: nightly builds go to its `cargo-fuzz/` subfolder.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
FUZZ="$ROOT/tests/fuzz"
cd "$ROOT"

mode="${1:-}"
target="${2:-}"
seconds="${3:-600}"
case "$mode" in
  run | cmin | build) [ -n "$target" ] || { echo "usage: $0 $mode TARGET" >&2; exit 2; } ;;
  *) sed -n '2,16p' "$0" >&2; exit 2 ;;
esac

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
  rustup toolchain install nightly --profile minimal
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  # No --locked: cargo-fuzz's lock file may name crate releases this registry lacks.
  cargo +nightly install cargo-fuzz
fi

TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}/cargo-fuzz"
features=()
if [ "$target" = component ]; then
  # The component is built by the pinned stable toolchain, exactly as CI ships it, and
  # embedded from that file (tripgate-wasmtime's build script would otherwise build it
  # with nightly).
  cargo build -p tripgate-component --target wasm32-wasip2 --profile wasm
  export TRIPGATE_COMPONENT="${CARGO_TARGET_DIR:-$ROOT/target}/wasm32-wasip2/wasm/tripgate_component.wasm"
  features=(--features component)
fi

# No sanitizer: the bodies are safe Rust (the core forbids `unsafe`), so AddressSanitizer
# would only slow them; debug assertions (-a) turn overflow checks on in the harness too.
fuzz() {
  local command="$1"
  shift
  nice -n 10 cargo +nightly fuzz "$command" --fuzz-dir "$FUZZ/cargo-fuzz" \
    --target-dir "$TARGET_DIR" --sanitizer none --debug-assertions "${features[@]}" "$@"
}

case "$mode" in
  build)
    fuzz build "$target"
    ;;
  run)
    work="$TARGET_DIR/corpus/$target"
    mkdir -p "$work" "$FUZZ/corpus/$target"
    cp -n "$FUZZ/corpus/$target"/* "$work/" 2>/dev/null || true
    # With -jobs, libFuzzer writes its log to fuzz-0.log in the current folder.
    logs="$TARGET_DIR/logs/$target"
    mkdir -p "$logs"
    # KEEP_GOING=1: one forked job that records each crash and carries on, so a run
    # lasts its full time and reports every distinct failure.
    if [ "${KEEP_GOING:-0}" = 1 ]; then mode_args=(-fork=1 -ignore_crashes=1); else mode_args=(-jobs=1 -workers=1); fi
    (cd "$logs" && fuzz run "$target" "$work" -- "${mode_args[@]}" \
      -max_total_time="$seconds" -print_final_stats=1 -max_len=4096 >"$logs/fuzz-0.log" 2>&1) || status=$?
    grep -E '^stat::|panicked|SUMMARY' "$logs/fuzz-0.log" || true
    echo "log: $logs/fuzz-0.log; corpus: $(ls "$work" | wc -l) inputs in $work"
    exit "${status:-0}"
    ;;
  cmin)
    # Everything the fuzzer kept, plus the committed inputs, minimized in place by
    # `cargo fuzz cmin` into the committed folder.
    work="$TARGET_DIR/corpus/$target"
    mkdir -p "$FUZZ/corpus/$target"
    [ -d "$work" ] && cp -n "$work"/* "$FUZZ/corpus/$target/" 2>/dev/null || true
    fuzz cmin "$target" "$FUZZ/corpus/$target" -- -max_len=4096
    echo "$target: $(ls "$FUZZ/corpus/$target" | wc -l) inputs, $(du -sh "$FUZZ/corpus/$target" | cut -f1)"
    ;;
esac
