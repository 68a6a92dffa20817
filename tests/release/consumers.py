#!/usr/bin/env python3
"""Installs each release artifact (tests/release/artifacts.sh) into an empty project
outside the repository, as a user of its registry would, and runs the first example of its
README verbatim: the example is read from the README itself, so the two cannot drift, and
what it prints is checked against what the README says it prints (the "It prints `…`"
that follows it).

    python3 tests/release/consumers.py ARTIFACTS

- Rust: for each published crate a Cargo project whose dependencies are the README's own
  `[dependencies]` block, with `[patch.crates-io]` pointing at the unpacked `.crate`
  files (nothing is published); built with the oldest toolchain the crate claims.
- npm: `npm init`, `npm install ./tripgate-<v>.tgz`, the README's first `js` example run
  by Node, and its TypeScript example checked by `tsc --strict`.
- Python: a fresh venv with the wheel installed, the README's first example run; once
  more with the sdist, built from source on Rust 1.95.

No artifact may carry this machine's paths (the checkout, the home directory).
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).parent))

from readme import example, expected_output  # noqa: E402


def run(cmd, cwd, env=None, timeout=1800):
    """Runs `cmd` in `cwd`; its stdout, or a failure that shows what it printed."""
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed in {cwd}:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def check_output(what, readme, printed):
    want = expected_output(readme)
    if want not in printed:
        raise SystemExit(f"{what}: the README says it prints {want!r}; it printed {printed!r}")
    print(f"  {what}: printed {printed.strip()!r}")


def no_build_paths(artifacts):
    """No artifact names the checkout or the home directory of the machine that built it."""
    needles = [str(ROOT).encode(), str(Path.home()).encode() + b"/"]
    for path in sorted(p for p in artifacts.rglob("*") if p.is_file()):
        for name, data in members(path):
            for needle in needles:
                if needle in data:
                    raise SystemExit(f"{path.name}: {name} carries the build machine's path {needle.decode()}")
    print("  no artifact carries a build machine's path")


def members(path):
    """Every file inside an artifact (a wheel, a tarball, a .crate), or the file itself."""
    if path.suffix == ".whl":
        with zipfile.ZipFile(path) as z:
            return [(n, z.read(n)) for n in z.namelist()]
    if path.name.endswith((".tar.gz", ".tgz", ".crate")):
        with tarfile.open(path) as t:
            return [(m.name, t.extractfile(m).read()) for m in t.getmembers() if m.isfile()]
    return [(path.name, path.read_bytes())]


def redis_server(work):
    """A redis-server of its own on a free port of 127.0.0.1, for the fleet example."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no", "--dir", str(work)],
        stdout=subprocess.DEVNULL,
    )
    for _ in range(100):
        with socket.socket() as client:
            if client.connect_ex(("127.0.0.1", port)) == 0:
                return port, server
        time.sleep(0.05)
    server.kill()
    raise SystemExit("redis-server did not start")


# ---- Rust ------------------------------------------------------------------------------

CRATES = {
    "tripgate-core": "core/README.md",
    "tripgate": "rust/README.md",
    "tripgate-host": "core/host/README.md",
    "tripgate-redis": "redis/README.md",
    "tripgate-wasmtime": "component/wasmtime/README.md",
}


def rust(artifacts, work, redis_url):
    unpacked = work / "crates"
    unpacked.mkdir()
    versions = {}
    for crate in sorted((artifacts / "crates").glob("*.crate")):
        with tarfile.open(crate) as t:
            t.extractall(unpacked, filter="data")
        name, version = crate.stem.rsplit("-", 1)
        versions[name] = (unpacked / crate.stem, version)
    patch = "\n".join(f'{name} = {{ path = "{path}" }}' for name, (path, _) in sorted(versions.items()))
    target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))
    for crate, readme_path in CRATES.items():
        readme = (ROOT / readme_path).read_text()
        project = work / f"use-{crate}"
        (project / "src").mkdir(parents=True)
        deps = example(readme, "toml")
        (project / "Cargo.toml").write_text(
            f'[package]\nname = "use-{crate}"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n\n'
            f"{deps}\n[patch.crates-io]\n{patch}\n"
        )
        (project / "src" / "main.rs").write_text(example(readme, "rust"))
        # The workspace's lock: the consumer resolves the same versions, so the shared
        # target directory serves its dependencies already built.
        shutil.copy(ROOT / "Cargo.lock", project / "Cargo.lock")
        toolchain = rust_version(versions[crate][0]) + ".0"
        env = dict(os.environ, CARGO_TARGET_DIR=target, REDIS_URL=redis_url, FLEET_KEY="a fleet key of 32 bytes, shared!")
        env.pop("RUSTUP_TOOLCHAIN", None)
        profile = ["--release"] if crate == "tripgate-wasmtime" else []
        printed = run(["cargo", f"+{toolchain}", "run", "--quiet", *profile], project, env)
        check_output(f"{crate} on Rust {toolchain}", readme, printed)


def rust_version(unpacked):
    manifest = (unpacked / "Cargo.toml").read_text()
    found = re.search(r'^rust-version = "(\d+\.\d+)"', manifest, re.M)
    if not found:
        raise SystemExit(f"{unpacked.name}: its package names no rust-version")
    return found.group(1)


# ---- npm -------------------------------------------------------------------------------


def npm(artifacts, work):
    readme = (ROOT / "js/README.md").read_text()
    project = work / "use-npm"
    project.mkdir()
    (tarball,) = (artifacts / "npm").glob("tripgate-*.tgz")
    packed = dict(members(tarball))
    wasm = sorted(name for name in packed if name.endswith(".wasm"))
    if wasm != ["package/pkg/web/tripgate_wasm_bg.wasm"] or not all(f"package/{n}" in packed for n in ("LICENSE-MIT", "LICENSE-APACHE")):
        raise SystemExit(f"{tarball.name}: want one wasm and both licenses; it holds {sorted(packed)}")
    print(f"  {tarball.name}: {tarball.stat().st_size} bytes, {len(packed)} files, one wasm ({len(packed[wasm[0]])} bytes)")
    run(["npm", "init", "-y"], project)
    installed = run(["npm", "install", "--no-audit", "--no-fund", str(tarball)], project)
    print(f"  npm install {tarball.name}: {' '.join(installed.split())}")
    package = json.loads((project / "package.json").read_text())
    package["type"] = "module"
    (project / "package.json").write_text(json.dumps(package, indent=2))
    (project / "first.mjs").write_text(example(readme, "js"))
    check_output("npm package on Node", readme, run(["node", "first.mjs"], project))
    typescript(readme, project)


def typescript(readme, project):
    """The README's TypeScript example, as a user with `strict` on would compile it (the
    settings js/test/tarball/install.test.js compiles it with too)."""
    version = json.loads((ROOT / "js/package.json").read_text())["devDependencies"]["typescript"]
    run(["npm", "install", "--no-audit", "--no-fund", f"typescript@{version}"], project)
    (project / "example.ts").write_text(example(readme, "ts"))
    config = json.loads((ROOT / "js/test/tarball/consumer-tsconfig.json").read_text())
    (project / "tsconfig.json").write_text(json.dumps({**config, "files": ["example.ts"]}))
    run([str(project / "node_modules/.bin/tsc"), "-p", "."], project)
    print(f"  npm package's TypeScript example: tsc {version} --strict passes")


# ---- Python ----------------------------------------------------------------------------


def python(artifacts, work):
    readme = (ROOT / "python/README.md").read_text()
    first = example(readme, "python")
    (wheel,) = (artifacts / "python").glob("tripgate-*.whl")
    (sdist,) = (artifacts / "python").glob("tripgate-*.tar.gz")
    for what, artifact, env in [
        ("wheel", wheel, None),
        # The sdist builds with the oldest toolchain the crates claim: a user's stable, in a
        # target dir of its own as a user's would be. (A shared one holds units built from an
        # earlier sdist at the same relative paths, and the sdist's files carry fixed old
        # times, so cargo would take those stale units as fresh.)
        ("sdist on Rust 1.95.0", sdist, dict(
            os.environ, RUSTUP_TOOLCHAIN="1.95.0", CARGO_TARGET_DIR=str(work / "sdist-target"),
        )),
    ]:
        venv = work / f"venv-{artifact.suffix.strip('.')}"
        run([sys.executable, "-m", "venv", str(venv)], work)
        pip = [str(venv / "bin/python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        run([*pip, str(artifact)], work, env)
        (work / "first.py").write_text(first)
        printed = run([str(venv / "bin/python"), "first.py"], work)
        check_output(f"Python {what}", readme, printed)


def main():
    if len(sys.argv) != 2:
        raise SystemExit("usage: consumers.py ARTIFACTS (made by tests/release/artifacts.sh)")
    artifacts = Path(sys.argv[1]).resolve()

    print("== artifacts")
    no_build_paths(artifacts)
    with tempfile.TemporaryDirectory(prefix="tripgate-consumers-") as tmp:
        work = Path(tmp)
        port, server = redis_server(work)
        try:
            print("== Rust crates")
            rust(artifacts, work, f"redis://127.0.0.1:{port}")
        finally:
            server.kill()
            server.wait()
        print("== npm package")
        npm(artifacts, work)
        print("== Python package")
        python(artifacts, work)


if __name__ == "__main__":
    main()
