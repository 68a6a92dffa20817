#!/usr/bin/env python3
"""The house's rules, checked: ARCHITECTURE.md's map holds in the tree.

    python3 tests/layout/check.py     # prints each rule broken; exits 1 if any

1. No import circle inside a crate or package. Rust: among the modules of one parent, a
   module that names a sibling (`crate::a::…`, `super::a::…`, or an item its parent
   re-exports from `a`) depends on it; a cycle of such edges is a circle. Python and JS:
   a module that imports another at load time depends on it.
2. No source file over MAX_LINES lines, but those ALLOWED names, each with its reason.
   The cap is on concerns, not on lines: with functions held to MAX_FUNCTION_LINES, a
   file's length no longer bounds what a reader must hold at once, so the cap only has to
   catch a file that has grown into several concerns. Files that are one concern each (a
   host's breaker binding, one feature's test suite) run to about 600 lines; 1000 leaves
   such a file room to grow by a feature without a split along an arbitrary line, and a
   file past it is nearly always two concerns.
3. No function over MAX_FUNCTION_LINES lines (Rust `fn`, JS functions, methods and arrow
   functions with a body, Python `def`; counted from the line its head starts on to the
   line its body closes on, in every tracked source file: `functions.py` finds them)
   unless a comment directly above it says why, in the form

       // long: one arm per fleet command, with its fields and its Redis call

   (`#` in Python; the line may also sit in the doc comment, or in a Python function's
   docstring): `long:`, then a reason of at least three words. Test functions count like
   any other: a long test is as hard to read and to fix as long code, and is usually
   several behaviours in one, which split each fail alone and name what broke (a
   scenario whose steps build on each other splits into a function per step). Callbacks
   that only group tests (`describe`) are not functions, as a Rust `mod tests` is not.
4. Dependencies point down: a crate's normal dependencies lie in its own layer or below
   (LAYERS), and no library crate lives inside the demo folder.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

from functions import functions

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 1000
MAX_FUNCTION_LINES = 80

# Files allowed past MAX_LINES, each with the reason it is one concern ("path": "reason").
# An entry for a file back under the cap is reported: the list holds only what it must.
ALLOWED = {}

# Layers, lowest first: a crate may depend on crates of its own layer or a lower one.
LAYERS = [
    ("core", ["core"]),
    ("adapters", ["rust", "redis", "component", "python", "js"]),
    ("demo", ["host-demo"]),
    ("tests", ["tests"]),
]


def tracked():
    """The files git tracks, without links (a package's link to a shared file, such as its
    LICENSE or the WIT, is the file it names, checked there)."""
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / line for line in out.stdout.splitlines() if not (ROOT / line).is_symlink()]


def sources(suffixes):
    for path in tracked():
        if path.suffix in suffixes and path.exists():
            yield path


def strip_rust(text):
    """Code without comments and string literals, so names in prose are not imports."""
    text = _code_only(text)
    # Test modules may reach anywhere in their crate: only shipped code counts.
    while True:
        m = re.search(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", text)
        if not m:
            return text
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        text = text[: m.start()] + text[i:]


# A string literal's start: "…", b"…", r"…", r#"…"#, br#"…"# (the prefix not part of a
# longer name, so `generator"` inside a string is not a raw string's start).
_STRING_START = re.compile(r'(?<![A-Za-z0-9_])(b?r)(#*)"|(?<![A-Za-z0-9_])b?"|"')
# A char literal ('"', '\'', '\u{1F600}'), never a lifetime ('a is not followed by ').
_CHAR = re.compile(r"'(?:\\(?:u\{[0-9a-fA-F]+\}|.)|[^\\'\n])'")


def _code_only(text):
    """Rust source with comments and string and char literals taken out, by a scan from
    the start (the order matters: `//` in a string is no comment, `"` in a comment no
    string)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        elif char := _CHAR.match(text, i):
            out.append("' '")
            i = char.end()
        elif start := _STRING_START.match(text, i):
            raw, hashes = start.group(1), start.group(2) or ""
            i = start.end()
            if raw and "r" in raw:
                end = text.find('"' + hashes, i)
                i = n if end < 0 else end + 1 + len(hashes)
            else:
                while i < n and text[i] != '"':
                    i += 2 if text[i] == "\\" else 1
                i += 1
            out.append('""')
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def rust_crates():
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--no-deps", "--format-version", "1"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout
    )
    for package in meta["packages"]:
        for target in package["targets"]:
            if set(target["kind"]) & {"lib", "bin", "cdylib", "rlib"}:
                yield package["name"], Path(target["src_path"])


def module_of(root_dir, file):
    """The module path of `file` in the crate whose root file is in `root_dir`."""
    rel = file.relative_to(root_dir).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def rust_cycles():
    problems = []
    for crate, root_file in rust_crates():
        root_dir = root_file.parent
        files = {}
        for file in root_dir.rglob("*.rs"):
            if "bin" in file.relative_to(root_dir).parts and file != root_file:
                continue
            files[module_of(root_dir, file)] = strip_rust(file.read_text())
        if root_file.name == "main.rs" and (root_dir / "lib.rs").exists():
            continue  # the binary's modules are the library's, checked with it
        modules = set(files)
        # Names each module re-exports from a child: `pub use child::{A, B}`.
        reexports = {}
        for module, code in files.items():
            for m in re.finditer(r"pub(?:\([^)]*\))?\s+use\s+(?:self::)?(\w+)::([^;]+);", code):
                child = module + (m.group(1),)
                if child in modules:
                    for name in re.findall(r"\b([A-Za-z_]\w*)\b", m.group(2)):
                        reexports.setdefault(module, {})[name] = child
        edges = {m: set() for m in modules}
        for module, code in files.items():
            for path in referenced_paths(module, code):
                target = resolve(path, modules, reexports)
                if target is None:
                    continue
                # Compare at the level where the two modules part: siblings only.
                common = 0
                while common < min(len(module), len(target)) and module[common] == target[common]:
                    common += 1
                if common == len(module) or common == len(target):
                    continue  # an ancestor or a descendant: nesting, not a circle
                a, b = module[: common + 1], target[: common + 1]
                edges.setdefault(a, set()).add(b)
        for cycle in find_cycles(edges):
            problems.append(f"{crate}: import circle {' -> '.join('::'.join(m) or 'crate' for m in cycle)}")
    return problems


def referenced_paths(module, code):
    """Absolute module paths (tuples) a module's code names."""
    paths = []
    for m in re.finditer(r"\b(crate|super|self)((?:::\w+)+)", code):
        head, rest = m.group(1), m.group(2).split("::")[1:]
        if head == "crate":
            base = ()
        elif head == "self":
            base = module
        else:
            base = module[:-1]
            while rest and rest[0] == "super":
                base, rest = base[:-1], rest[1:]
        paths.append(base + tuple(rest))
    # `use crate::{a::X, b::Y}` and `use super::{a, b}`.
    for m in re.finditer(r"\buse\s+(crate|super|self)::\{([^;]*)\};", code):
        head = m.group(1)
        base = () if head == "crate" else (module if head == "self" else module[:-1])
        for item in re.split(r",\s*(?![^{]*\})", m.group(2)):
            first = re.match(r"\s*(\w+)", item)
            if first:
                paths.append(base + (first.group(1),))
    return paths


def resolve(path, modules, reexports):
    """The deepest module a path lies in, following one level of re-export."""
    for length in range(len(path), -1, -1):
        prefix = tuple(path[:length])
        if prefix in modules:
            if length < len(path):
                child = reexports.get(prefix, {}).get(path[length])
                if child is not None:
                    return child
            return prefix
    return None


def find_cycles(edges):
    """Each strongly connected component of more than one node, as a list."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def script_cycles(suffix, pattern, package_roots):
    problems = []
    for root in package_roots:
        root = ROOT / root
        if not root.exists():
            continue
        files = [p for p in tracked() if p.suffix == suffix and root in p.parents]
        edges = {f: set() for f in files}
        for file in files:
            for target in pattern(file):
                if target in edges:
                    edges[file].add(target)
        for cycle in find_cycles(edges):
            names = " -> ".join(str(p.relative_to(ROOT)) for p in cycle)
            problems.append(f"import circle {names}")
    return problems


def js_imports(file):
    text = file.read_text()
    for m in re.finditer(r"^\s*(?:import|export)\s[^;]*?from\s+'(\.[^']+)'", text, flags=re.M):
        yield (file.parent / m.group(1)).resolve()


def python_imports(file):
    text = file.read_text()
    package = file.parent
    for m in re.finditer(r"^(?:from\s+(\.+)(\w*)\s+import\s+([\w, ]+)|import\s+(\w+))", text, flags=re.M):
        if m.group(1):
            base = package
            for _ in range(len(m.group(1)) - 1):
                base = base.parent
            if m.group(2):
                yield (base / f"{m.group(2)}.py").resolve()
            else:
                for name in m.group(3).split(","):
                    yield (base / f"{name.strip()}.py").resolve()


def long_files():
    problems = []
    for path in sources({".rs", ".js", ".mjs", ".py", ".ts", ".wit", ".lua", ".sh"}):
        rel = str(path.relative_to(ROOT))
        lines = path.read_text(errors="replace").count("\n")
        if lines > MAX_LINES and rel not in ALLOWED:
            problems.append(f"{rel}: {lines} lines (more than {MAX_LINES})")
        elif lines <= MAX_LINES and rel in ALLOWED:
            problems.append(f"{rel}: {lines} lines, within {MAX_LINES}: drop it from ALLOWED")
    return problems


def long_functions():
    problems = []
    for path in sources({".rs", ".js", ".mjs", ".cjs", ".py"}):
        rel = str(path.relative_to(ROOT))
        try:
            found = functions(path, path.read_text(errors="replace"))
        except SyntaxError as error:
            problems.append(f"{rel}: not parsed, so not measured ({error.msg}, line {error.lineno})")
            continue
        for function in found:
            if function.lines > MAX_FUNCTION_LINES and function.reason is None:
                problems.append(
                    f"{rel}:{function.start}: {function.name} is {function.lines} lines "
                    f"(more than {MAX_FUNCTION_LINES}) with no `long:` reason above it"
                )
    return problems


def layer_of(manifest_dir):
    top = manifest_dir.relative_to(ROOT).parts[0]
    for index, (_, folders) in enumerate(LAYERS):
        if top in folders:
            return index
    return None


def dependencies_point_down():
    """Each crate's normal (not dev) path dependencies lie in its layer or below; the demo
    folder holds the demo alone."""
    meta = json.loads(
        subprocess.run(
            ["cargo", "metadata", "--format-version", "1", "--no-deps"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout
    )
    dirs = {p["name"]: Path(p["manifest_path"]).parent for p in meta["packages"]}
    problems = []
    for package in meta["packages"]:
        here = dirs[package["name"]]
        mine = layer_of(here)
        if mine is None:
            problems.append(f"{package['name']}: {here.relative_to(ROOT)} is in no layer")
            continue
        kinds = {k for t in package["targets"] for k in t["kind"]}
        if LAYERS[mine][0] == "demo" and kinds - {"bin", "test", "custom-build"}:
            problems.append(f"{package['name']}: a library crate inside the demo folder")
        for dep in package["dependencies"]:
            if dep.get("kind") is not None or dep["name"] not in dirs:
                continue
            theirs = layer_of(dirs[dep["name"]])
            if theirs is not None and theirs > mine:
                problems.append(
                    f"{package['name']} ({LAYERS[mine][0]}) depends on {dep['name']} "
                    f"({LAYERS[theirs][0]}): dependencies point down"
                )
    return problems


def main():
    problems = rust_cycles() + long_files() + long_functions() + dependencies_point_down()
    problems += script_cycles(".js", js_imports, ["js/src"])
    problems += script_cycles(".py", python_imports, ["python/python/tripgate"])
    for problem in problems:
        print(problem)
    print(f"layout: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
