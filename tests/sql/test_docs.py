"""The examples in README.md and docs/*.md run as written.

A reader copies an example and expects it to work; an example that has rotted
(a renamed function, a missing import, a result never fetched) costs them
their first hour.  So every fenced block whose language is sql, python or sh
is run here, in the order the document gives, in one fresh directory per
document, as a user following the page would run them:

- sql: the sqlite3 shell, `sqlite3 -batch -bail :memory:`, the block on its
  standard input: any error stops it with a non-zero exit.
- python: /usr/bin/python3 -c BLOCK: an exception fails it.
- sh: bash -e: a failing command fails it.

`build/colstore` (with or without `./`) in a block stands for the module under
test.  A block that cannot run here says so in its fence, with the reason:
```` ```sh no-run: installs into /usr/local ````; the test checks that every
such marker gives a reason.  A python block that needs numpy is skipped (and
reported) when numpy is not installed.  Blocks of other languages (json, text,
none: file contents, outputs, grammar) are not examples and are not run.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
RUN_LANGS = {"sql", "python", "sh"}
FENCE = re.compile(r"^```(\S*)(.*)$")


def documents():
    docs = [os.path.join(ROOT, "README.md")]
    docs += sorted(os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs")) if f.endswith(".md"))
    return docs


def blocks(path):
    """(first line number, language, marker text, code) of each fenced block."""
    out, cur = [], None
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            m = FENCE.match(line.rstrip("\n"))
            if cur is None and m:
                cur = (n, m.group(1).lower(), m.group(2).strip(), [])
            elif cur is not None and line.rstrip("\n") == "```":
                out.append((cur[0], cur[1], cur[2], "".join(cur[3])))
                cur = None
            elif cur is not None:
                cur[3].append(line)
    if cur is not None:
        raise AssertionError("%s:%d: a fenced block is never closed" % (path, cur[0]))
    return out


def with_module(code):
    """The block with build/colstore replaced by the module under test."""
    return re.sub(r"(?<![\w/])(\./)?build/colstore\b", cstest.MODULE, code)


def has_numpy():
    return subprocess.run([cstest.PYTHON, "-c", "import numpy"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


class DocExamples(unittest.TestCase):

    def run_block(self, where, lang, code, cwd):
        code = with_module(code)
        if lang == "sql":
            cmd, stdin = ["sqlite3", "-batch", "-bail", ":memory:"], code
        elif lang == "python":
            cmd, stdin = [cstest.PYTHON, "-c", code], None
        else:
            cmd, stdin = ["bash", "-e", "-c", code], None
        p = subprocess.run(cmd, input=stdin, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=600, env=cstest.child_env())
        self.assertEqual(p.returncode, 0, "%s (%s) failed, exit %d:\n--- block ---\n%s--- output ---\n%s"
                         % (where, lang, p.returncode, code, p.stdout[-4000:]))
        self.assertNotIn("Error:", p.stdout, "%s (%s) printed an error:\n%s" % (where, lang, p.stdout[-4000:]))
        return p.stdout

    def test_every_example_runs_as_written(self):
        numpy = has_numpy()
        ran, skipped = 0, []
        for doc in documents():
            rel = os.path.relpath(doc, ROOT)
            todo = [b for b in blocks(doc) if b[1] in RUN_LANGS]
            if not todo:
                continue
            d = tempfile.mkdtemp(prefix="colstore-docs-")
            try:
                for line, lang, marker, code in todo:
                    where = "%s:%d" % (rel, line)
                    if marker.startswith("no-run"):
                        self.assertRegex(marker, r"^no-run: \S", "%s: a no-run marker must say why" % where)
                        skipped.append("%s (%s)" % (where, marker))
                        continue
                    self.assertEqual(marker, "", "%s: unknown fence marker %r (only 'no-run: why')" % (where, marker))
                    if lang == "python" and "import numpy" in code and not numpy:
                        skipped.append("%s (numpy is not installed)" % where)
                        continue
                    with self.subTest(block=where):
                        self.run_block(where, lang, code, d)
                    ran += 1
            finally:
                shutil.rmtree(d, ignore_errors=True)
        print("ran %d examples; not run: %s" % (ran, "; ".join(skipped) or "none"))
        self.assertGreaterEqual(ran, 5, "the documents lost their examples")

    def test_the_extractor_sees_markers_and_languages(self):
        """A fixed page: the parser finds the blocks, their languages and markers."""
        d = tempfile.mkdtemp(prefix="colstore-docs-")
        try:
            page = os.path.join(d, "p.md")
            with open(page, "w") as f:
                f.write("text\n```sql\nSELECT 1;\n```\n\n```python no-run: needs a GPU\nx\n```\n```json\n{}\n```\n")
            got = blocks(page)
            self.assertEqual([(b[1], b[2]) for b in got], [("sql", ""), ("python", "no-run: needs a GPU"), ("json", "")])
            self.assertEqual(got[0][3], "SELECT 1;\n")
            self.assertEqual(with_module('con.load_extension("build/colstore")'),
                             'con.load_extension("%s")' % cstest.MODULE)
            self.assertEqual(with_module(".load ./build/colstore"), ".load %s" % cstest.MODULE)
            self.assertEqual(with_module("x/build/colstore"), "x/build/colstore")
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_a_broken_example_fails(self):
        """The runner's own control: a block with an error is caught."""
        d = tempfile.mkdtemp(prefix="colstore-docs-")
        try:
            for lang, code in [("sql", ".load build/colstore\nSELECT colstore_nope();\n"),
                               ("python", "import numpyy\n"), ("sh", "false\necho after\n")]:
                with self.assertRaises(AssertionError, msg=lang):
                    self.run_block("control", lang, code, d)
        finally:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    cstest.main()
