#!/usr/bin/env bash
# Every test of tripgate, installing what it needs first. Idempotent: what is already
# installed at the right version is skipped, so a second run only runs the tests.
#
#   bash tests/run-all.sh
#
# Honours CARGO_TARGET_DIR (CI keeps one outside the clone so reruns reuse builds).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

step() { printf '\n== %s\n' "$*"; }

bash tests/setup.sh

step "layout: no import circle in any crate or package, no source file over 1000 lines, no function over 80 without its reason, dependencies pointing down (ARCHITECTURE.md)"
python3 -m unittest discover -s tests/layout -p 'test_*.py'
python3 tests/layout/check.py

step "core: builds for x86_64-unknown-none, a target with no std at all"
cargo build -p tripgate-core --no-default-features --target x86_64-unknown-none --profile wasm

step "component: WASI 0.2 component (wasm32-wasip2), and the bytes tripgate-wasmtime ships are what it builds"
cargo run --quiet -p tripgate-artifacts -- check

# Two invocations, so that each resolves features for its own crates only: the core's
# dev-dependencies (proptest, the peer breakers) would otherwise change the features of
# crates wasmtime depends on, and wasmtime would be compiled a second time instead of
# reusing the demo's build (`cargo run --release -p host-demo`).
# The thread-safe breaker (tripgate) links no wasmtime, so it belongs here: its tower,
# hyper and tokio dev-dependencies then never touch the features the wasmtime build sees.
step "Rust: the core (spec, no-heap, doctests), the host machinery, the vectors on the native core, the thread-safe breaker with its tower layer, the model proptests and the fuzz corpus replay"
cargo test --release -p tripgate-core -p tripgate-host -p tripgate-vectors -p tripgate --all-features -p tripgate-fuzz

# The Python package (python): a venv in the target dir with the pinned test
# dependencies, the abi3 wheel built by maturin and installed, then pytest: every shared
# vector, the metrics scenario against expected.prom and promtool, the API, asyncio, and
# classification against real HTTP and gRPC services on 127.0.0.1.
step "Python: the native package (maturin abi3 wheel) under pytest: vectors, metrics and promtool, API, classification"
bash python/scripts/test.sh

# The JS package comes before the wasmtime invocation: it builds js/pkg and installs the
# redis client, so the fleet demo's test there runs a mixed fleet of Rust and Node
# member processes (TRIPGATE_FLEET_MIXED makes it insist on one).
step "JS: wasm-bindgen package and the component under jco, on Node 20 and Node 24"
js_status=0
bash js/scripts/test.sh || js_status=$?

# tripgate-fuzz-component (the component target's corpus replay) joins this invocation:
# its dependencies resolve with exactly the features the demo's do (`cargo tree -e
# features` shows the same set with and without it), so wasmtime is still built once.
# The features prometheus and tracing add prometheus-client (with dtoa, parking_lot) and
# tracing; none of them is a dependency of wasmtime, and `cargo tree -e features` lists
# the same features for every crate wasmtime shares with and without them.
# tripgate-redis (fleet mode) joins this invocation too: its tests put native and wasmtime
# breakers in one fleet, and the demo depends on it anyway; its redis, tokio and quanta
# dependencies leave the features wasmtime's dependencies see unchanged (wasmtime is not
# rebuilt after `cargo run --release -p host-demo`). Its tests and the fleet demo's start
# their own redis-server (Debian's package: apt-get install redis-server).
step "Rust: the component in wasmtime (tripgate-wasmtime, with its metrics and tracing), the demo, the fleet adapter on a real redis-server, and the component fuzz corpus replay"
TRIPGATE_FLEET_MIXED=1 cargo test --release -p tripgate-wasmtime -p host-demo -p tripgate-fuzz-component -p tripgate-redis --features tripgate-wasmtime/tokio,tripgate-wasmtime/prometheus,tripgate-wasmtime/tracing,tripgate-redis/server

# Fleet mode over TLS (`rediss://`, a private CA made with the openssl command) in an
# invocation of its own: the feature brings rustls and ring into the redis client, which
# the demo's invocation above does not need.
step "Rust: fleet mode over TLS on a real redis-server (tripgate-redis, feature tls)"
cargo test --release -p tripgate-redis --features server,tls --test tls

# The edge guard (tripgate-edge) in an invocation of its own: wasmtime-wasi and
# wasmtime-wasi-http turn on wasmtime features the library does not use (async, the
# component model's async ABI), so `cargo tree -e features -i wasmtime` differs between
# tripgate-edge and tripgate-wasmtime. Joined to the invocation above, those features
# would reach the demo's wasmtime and rebuild it; apart, each feature set is built once
# and kept in the target directory. Its build script builds component/http-guard for
# wasm32-wasip2 and composes it with the tripgate component (wac-graph).
step "Rust: the wasi:http guard composed with the component, served by wasmtime over real HTTP, a fresh instance per request (tripgate-edge)"
cargo test --release -p tripgate-edge

# Every artifact a registry would get, built into one folder from this checkout, then each
# installed into an empty project outside it (Cargo with [patch] to the .crate files on the
# toolchain each crate claims, npm install of the tarball, pip install of the wheel and of
# the sdist on Rust 1.95), running its README's first example verbatim.
step "release: every artifact built for a registry, installed into an empty project, its README's first example run"
TARGET="$(cargo metadata --format-version 1 --no-deps |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')"
bash tests/release/artifacts.sh "$TARGET/release-artifacts"
python3 tests/release/consumers.py "$TARGET/release-artifacts"

exit "$js_status"
