"""functions.py finds the functions check.py measures, with their lengths and reasons.

    python3 -m unittest discover -s tests/layout -p 'test_*.py'
"""

import unittest
from pathlib import Path

from functions import functions


def found(suffix, text):
    return {(f.name, f.lines, f.reason) for f in functions(Path(f"x{suffix}"), text)}


def body(n):
    """`n` lines of statements."""
    return "".join(f"    x{i} = {i};\n" for i in range(n))


class RustFunctions(unittest.TestCase):
    def test_lengths_from_head_to_closing_brace(self):
        text = "fn short() {\n}\n\npub(crate) fn long<'a>(\n    a: &'a str,\n) -> u8 {\n" + body(3) + "}\n"
        self.assertEqual(found(".rs", text), {("short", 2, None), ("long", 7, None)})

    def test_braces_in_strings_chars_and_comments_are_not_code(self):
        text = (
            'fn f() {\n    let a = "}";\n    let b = r#"}"#;\n    let c = \'}\';\n'
            "    // }\n    /* } /* } */ } */\n    let d: &'static str = \"\";\n}\n"
            "fn g() {\n}\n"
        )
        self.assertEqual(found(".rs", text), {("f", 8, None), ("g", 2, None)})

    def test_declarations_without_a_body_are_not_functions(self):
        text = "trait T {\n    fn declared(&self) -> [u8; 4];\n    fn given(&self) {\n    }\n}\n"
        self.assertEqual(found(".rs", text), {("given", 2, None)})

    def test_a_reason_above_attributes_and_docs_is_read(self):
        text = (
            "/// Does a thing.\n// long: one arm per variant of the event\n#[test]\n"
            "fn f() {\n}\n"
        )
        self.assertEqual(found(".rs", text), {("f", 2, "one arm per variant of the event")})

    def test_a_reason_needs_words_and_must_be_directly_above(self):
        text = "// long: yes\nfn f() {\n}\n// long: one arm per variant\n\nfn g() {\n}\n"
        self.assertEqual(found(".rs", text), {("f", 2, None), ("g", 2, None)})


class JsFunctions(unittest.TestCase):
    def test_declarations_methods_and_arrows(self):
        text = (
            "function a(x) {\n  return x;\n}\n"
            "class C {\n  static b() {\n  }\n  async #c(y) {\n    if (y) {\n    }\n  }\n}\n"
            "const d = async (z) => {\n  call(z);\n};\n"
            "const e = (z) => z + 1;\n"
        )
        self.assertEqual(
            found(".js", text),
            {("a", 3, None), ("b", 2, None), ("#c", 4, None), ("d", 3, None)},
        )

    def test_strings_templates_and_regexes_are_not_code(self):
        text = (
            "function f() {\n  const a = '}';\n  const b = `${'{'}}${x}`;\n"
            "  const c = /[}]\\}/g;\n  return a / b / c;\n}\n"
        )
        self.assertEqual(found(".js", text), {("f", 6, None)})

    def test_test_callbacks_count_and_describe_callbacks_do_not(self):
        text = "describe('group', () => {\n  test('one thing', async () => {\n    go();\n  });\n});\n"
        self.assertEqual(found(".js", text), {("test 'one thing'", 3, None)})


class PythonFunctions(unittest.TestCase):
    def test_lengths_and_reasons_above_or_in_the_docstring(self):
        text = (
            "# long: a table of every measured path\n@decorated\ndef a():\n    pass\n\n\n"
            'def b():\n    """Does b.\n\n    long: one branch per option given\n    """\n    return 1\n\n\n'
            "def c():\n    def inner():\n        pass\n    return inner\n"
        )
        self.assertEqual(
            found(".py", text),
            {
                ("a", 2, "a table of every measured path"),
                ("b", 6, "one branch per option given"),
                ("c", 4, None),
                ("inner", 2, None),
            },
        )


if __name__ == "__main__":
    unittest.main()
