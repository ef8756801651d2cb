"""sqllogictest conformance: SQLite's own sqllogictest corpus (all 27 files:
select1-5, evidence, index, random), run with every table turned into a
colstore table (../shared/slt/README.md).  select4 and select5 are
multi-way joins that finish in time only because equality constraints are
pushed down with sensible costs.

The runner converts each native table T with colstore_create + CREATE
VIRTUAL TABLE before each query and requires exactly the native results.
It is skipped (not failed) when ../shared/slt is not present: the file
then exits 77 and ctest reports it as skipped, not passed.
"""
import os
import re
import subprocess
import sys
import unittest

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402

SLT = os.path.join(cstest.SHARED, "slt")
RUNNER = os.path.join(SLT, "run_slt.py")
if not os.path.exists(RUNNER):
    print("skipped: ../shared/slt not present")
FILES = ["corpus"]


@unittest.skipUnless(os.path.exists(RUNNER), "../shared/slt (the sqllogictest corpus) is not present")
class Slt(unittest.TestCase):

    def test_the_whole_corpus_passes_on_colstore_tables(self):
        module = cstest.MODULE + ".so"
        self.assertTrue(os.path.exists(module), "module not built: %s" % module)
        cmd = [cstest.PYTHON, "run_slt.py", "--load", module, "--table-hook", "colstore"] + FILES + ["-j", "2"]
        if cstest.ASAN:
            cmd += ["--timeout", "600"]
        p = subprocess.run(cmd, cwd=SLT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1500)
        out = p.stdout
        lines = [ln for ln in out.splitlines() if ln.strip()]
        self.assertTrue(lines, "run_slt.py printed nothing")
        last = lines[-1]
        tail = "\n".join(lines[-40:])
        self.assertEqual(p.returncode, 0, "run_slt.py exited %d:\n%s" % (p.returncode, tail))
        m = re.match(r"^(\d+) passed, (\d+) failed, (\d+) skipped$", last)
        self.assertTrue(m, "unexpected last line: %r" % last)
        self.assertIn("0 failed", last)
        self.assertEqual(int(m.group(2)), 0, tail)
        self.assertEqual(int(m.group(1)), 108264, "the corpus has 108,264 records that run on SQLite: %s" % last)
        # The hook really turned tables into colstore tables.
        conversions = sum(int(x) for x in re.findall(r"(\d+) conversions", out))
        self.assertGreater(conversions, 0, "no table was converted to colstore:\n%s" % tail)
        print(last)


if __name__ == "__main__":
    cstest.main()
