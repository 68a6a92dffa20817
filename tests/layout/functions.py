"""Functions and their lengths in Rust, JS and Python sources, for check.py's length rule.

A function's length is the number of lines from the line its head starts on (`fn`,
`function`, a method's name, an arrow function's parameters, `def`) to the line its body
closes on, both included; attributes, decorators and the comments above it are not counted.
A nested function is counted on its own and as part of the function around it.

`long_reason` reads the reason a function may be long: a line holding `long:` and then the
reason, in a comment directly above the function (its doc comment, or a plain comment
between the doc comment, attributes or decorators and the head) or, in Python, in its
docstring.
"""

import ast
import re

# A reason needs a few words: "long: yes" says nothing.
REASON = re.compile(r"\blong:\s*(\S+(?:\s+\S+){2,})")

JS_KEYWORDS = {
    "if", "for", "while", "switch", "catch", "function", "return", "with", "else",
    "typeof", "await", "new", "delete", "void", "in", "of", "do", "try", "yield",
}

# Callbacks that only group tests, as a Rust `mod tests` does, are not functions.
JS_GROUPS = {"describe", "suite"}


class Function:
    def __init__(self, name, start, end, reason):
        self.name, self.start, self.end, self.reason = name, start, end, reason

    @property
    def lines(self):
        return self.end - self.start + 1


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def close_of(code, open_at, pair="{}"):
    """The offset just past the bracket that closes the one at `open_at`, or None."""
    depth = 0
    for i in range(open_at, len(code)):
        if code[i] == pair[0]:
            depth += 1
        elif code[i] == pair[1]:
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def wiper(out):
    """A function that blanks `out[a:b]` (a list of characters), keeping its newlines."""

    def wipe(a, b):
        for k in range(a, min(b, len(out))):
            if out[k] != "\n":
                out[k] = " "

    return wipe


def comment_end(text, i, nested):
    """Where the comment that starts at `i` ends, None if none starts there: a line comment
    at its newline, a block comment past its `*/` (Rust's nest: `nested`)."""
    if text.startswith("//", i):
        j = text.find("\n", i)
        return len(text) if j < 0 else j
    if not text.startswith("/*", i):
        return None
    depth, j = 1, i + 2
    while j < len(text) and depth:
        if nested and text.startswith("/*", j):
            depth, j = depth + 1, j + 2
        elif text.startswith("*/", j):
            depth, j = depth - 1, j + 2
        else:
            j += 1
    return j


def quoted_end(text, i, one_line):
    """Where the string whose quote is at `i` closes (escapes skipped); a JS string
    (`one_line`) ends at the line's end at the latest."""
    j = i + 1
    while j < len(text) and text[j] != text[i] and not (one_line and text[j] == "\n"):
        j += 2 if text[j] == "\\" else 1
    return j


def rust_code(text):
    """Rust with comments and the insides of string and char literals blanked."""
    out, i, n = list(text), 0, len(text)
    wipe = wiper(out)
    while i < n:
        if (end := comment_end(text, i, nested=True)) is not None:
            wipe(i, end)
            i = end
        elif (m := re.compile(r'b?r(#*)"').match(text, i)) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
            j = text.find('"' + m.group(1), m.end())
            j = n if j < 0 else j + 1 + len(m.group(1))
            wipe(m.end(), j - 1 - len(m.group(1)))
            i = j
        elif text[i] == '"':
            j = quoted_end(text, i, one_line=False)
            wipe(i + 1, j)
            i = j + 1
        elif text[i] == "'" and (m := re.compile(r"'(?:\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'").match(text, i)):
            wipe(i + 1, m.end() - 1)
            i = m.end()
        else:
            i += 1
    return "".join(out)


def rust_functions(text):
    code = rust_code(text)
    lines = text.splitlines()
    found = []
    for m in re.finditer(r"\bfn\s+(\w+)", code):
        # The body opens at the first `{` outside the signature's brackets; a `;` there
        # ends a declaration without a body.
        depth, i = 0, m.end()
        while i < len(code):
            c = code[i]
            if c in "([":
                depth += 1
            elif c in ")]":
                depth -= 1
            elif depth == 0 and c in "{;":
                break
            i += 1
        if i >= len(code) or code[i] == ";":
            continue
        end = close_of(code, i)
        if end is None:
            continue
        start = line_of(code, m.start())
        found.append(Function(m.group(1), start, line_of(code, end - 1), reason_above(lines, start)))
    return found


def js_code(text):
    """JS with comments and the insides of strings, template text and regex literals blanked
    (a template's `${…}` stays code)."""
    out, i, n = list(text), 0, len(text)
    # Each open `${` of a template, by the brace depth it opened at.
    templates, depth = [], 0

    wipe = wiper(out)

    def template_text(j):
        """Blank template text from j to its end or its next `${`; where scanning resumes."""
        nonlocal depth
        start = j
        while j < n and text[j] != "`" and not text.startswith("${", j):
            j += 2 if text[j] == "\\" else 1
        wipe(start, j)
        if j < n and text[j] == "`":
            return j + 1
        templates.append(depth)
        depth += 1
        return j + 2

    def previous_significant(j):
        k = j - 1
        while k >= 0 and out[k] in " \t\n":
            k -= 1
        return k

    while i < n:
        c = text[i]
        if (end := comment_end(text, i, nested=False)) is not None:
            wipe(i, end)
            i = end
        elif c in "'\"":
            j = quoted_end(text, i, one_line=True)
            wipe(i + 1, j)
            i = j + 1
        elif c == "`":
            i = template_text(i + 1)
        elif c == "{":
            depth += 1
            i += 1
        elif c == "}":
            depth -= 1
            i += 1
            if templates and templates[-1] == depth:
                templates.pop()
                i = template_text(i)
        elif c == "/" and regex_may_start(out, previous_significant(i)) and (j := regex_end(text, i)):
            wipe(i + 1, j)
            i = j + 1
        else:
            i += 1
    return "".join(out)


def regex_end(text, i):
    """Where the regex literal whose `/` is at `i` closes, or None if the line ends first
    (a division after all)."""
    j, in_class = i + 1, False
    while j < len(text) and text[j] != "\n" and (in_class or text[j] != "/"):
        if text[j] == "\\":
            j += 1
        elif text[j] == "[":
            in_class = True
        elif text[j] == "]":
            in_class = False
        j += 1
    return j if j < len(text) and text[j] == "/" else None


def regex_may_start(out, k):
    """A `/` starts a regex literal where an operand is expected, not after one."""
    if k < 0 or out[k] in "(,=:[!&|?{};+-*%<>~^":
        return True
    m = re.search(r"(\w+)$", "".join(out[max(0, k - 10) : k + 1]))
    return bool(m) and m.group(1) in {"return", "typeof", "case", "in", "of", "yield", "await"}


def js_functions(text):
    code = js_code(text)
    lines = text.splitlines()
    heads = []  # (offset of the head, offset of its parameter list's `(` or None, name)
    for m in re.finditer(r"\bfunction\b\s*\*?\s*(\w*)\s*(?=\()", code):
        heads.append((m.start(), m.end(), m.group(1) or callee_name(code, text, m.start())))
    method = r"^[ \t]*(?:(?:static|async|get|set)\s+|\*\s*)*(#?[A-Za-z_$][\w$]*)\s*(?=\()"
    for m in re.finditer(method, code, flags=re.M):
        if m.group(1) not in JS_KEYWORDS:
            heads.append((m.start(1), m.end(), m.group(1)))
    for m in re.finditer(r"=>\s*\{", code):
        start = arrow_start(code, m.start())
        heads.append((start, None, arrow_name(code, text, start), m.end() - 1))
    found = []
    for head in heads:
        if len(head) == 4:
            start, _, name, open_at = head
        else:
            start, params, name = head
            after = close_of(code, params, "()")
            if after is None:
                continue
            brace = re.compile(r"\s*\{").match(code, after)
            if not brace:
                continue  # a call, not a definition
            open_at = brace.end() - 1
        if name is None:
            continue  # a callback that only groups tests
        end = close_of(code, open_at)
        if end is None:
            continue
        first = line_of(code, start)
        found.append(Function(name, first, line_of(code, end - 1), reason_above(lines, first)))
    return found


def arrow_start(code, arrow):
    """Where an arrow function's parameters start: its `(` or its one bare name, after an
    `async` if it has one."""
    k = arrow - 1
    while k >= 0 and code[k] in " \t\n":
        k -= 1
    if code[k] == ")":
        depth = 0
        while k >= 0:
            depth += {")": 1, "(": -1}.get(code[k], 0)
            if depth == 0:
                break
            k -= 1
    else:
        while k > 0 and (code[k - 1].isalnum() or code[k - 1] in "_$"):
            k -= 1
    m = re.search(r"\basync\s*$", code[max(0, k - 12) : k])
    return k - len(m.group(0)) if m else k


def arrow_name(code, text, start):
    before = code[max(0, start - 200) : start]
    m = re.search(r"([#\w$]+)\s*[:=]\s*$", before)
    if m:
        return m.group(1)
    return callee_name(code, text, start)


def callee_name(code, text, start):
    """The name of a function passed to a call: `test "…"` for `test('…', () => {…})`;
    None for a callback that only groups tests."""
    depth, k = 0, start - 1
    while k >= 0:
        if code[k] in ")]}":
            depth += 1
        elif code[k] in "([{":
            if depth == 0:
                break
            depth -= 1
        k -= 1
    if k < 0 or code[k] != "(":
        return "(anonymous)"
    m = re.search(r"([\w$.]+)\s*$", code[max(0, k - 80) : k])
    callee = m.group(1) if m else "(anonymous)"
    if callee.split(".")[0] in JS_GROUPS:
        return None
    title = re.match(r"\s*(['\"`])(.*?)\1", text[k + 1 : k + 200])
    if not title:
        return f"{callee} callback"
    name = title.group(2)
    return f"{callee} '{name[:60]}…'" if len(name) > 60 else f"{callee} '{name}'"


def python_functions(text):
    tree = ast.parse(text)
    lines = text.splitlines()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            reason = reason_above(lines, first)
            if reason is None:
                doc = ast.get_docstring(node) or ""
                m = REASON.search(doc)
                reason = m.group(1) if m else None
            found.append(Function(node.name, node.lineno, node.end_lineno, reason))
    return found


def reason_above(lines, first):
    """The `long:` reason in the comments, attributes and decorators right above line `first`
    (1-based), or None."""
    k = first - 2
    while k >= 0:
        line = lines[k].strip()
        if not re.match(r"(//|/\*|\*|#|@)", line):
            break
        m = REASON.search(line)
        if m:
            return m.group(1)
        k -= 1
    return None


def functions(path, text):
    """Every function with a body in a Rust, JS or Python source (SyntaxError for Python
    this interpreter cannot parse)."""
    if path.suffix == ".rs":
        return rust_functions(text)
    if path.suffix in {".js", ".mjs", ".cjs"}:
        return js_functions(text)
    if path.suffix == ".py":
        return python_functions(text)
    return []
