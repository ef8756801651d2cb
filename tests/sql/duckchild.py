"""duckchild - DuckDB (npm @duckdb/node-api) as an oracle for the SQL tests
that check colstore against a real Parquet implementation: test_parquet.py
(DuckDB writes, colstore imports) and test_export.py (colstore writes,
DuckDB reads).

The package is installed into $BUILD/duckdb_client on first use, as the
benchmarks install it; the child is tests/sql/duckdb_parquet.mjs, fed one
JSON request a line.  Without node, npm or the package (no network for
npm), the test exits 77: SKIP.

It is named without the test_ prefix so ctest does not run it by itself.
"""
import json
import os
import shutil
import subprocess
import sys

import cstest

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.dirname(os.path.abspath(cstest.MODULE))
CLIENT = os.path.join(BUILD, "duckdb_client")


def skip(why):
    print("SKIP: %s" % why)
    sys.exit(77)


class Duck:
    """The DuckDB child (tests/sql/duckdb_parquet.mjs): rows(sql) answers a query."""

    def __init__(self):
        if not shutil.which("node") or not shutil.which("npm"):
            skip("node or npm is not installed")
        os.makedirs(CLIENT, exist_ok=True)
        if not os.path.isdir(os.path.join(CLIENT, "node_modules", "@duckdb", "node-api")):
            if not os.path.exists(os.path.join(CLIENT, "package.json")):
                with open(os.path.join(CLIENT, "package.json"), "w") as f:
                    f.write('{"name": "colstore-duckdb-client", "private": true, "type": "module"}\n')
            try:
                r = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "@duckdb/node-api"],
                                   cwd=CLIENT, capture_output=True, text=True, timeout=300)
            except subprocess.TimeoutExpired:
                skip("npm install @duckdb/node-api took over 300 s")
            if r.returncode != 0:
                skip("npm install @duckdb/node-api failed: %s" % (r.stderr.strip().splitlines() or ["?"])[-1])
        script = os.path.join(CLIENT, "duckdb_parquet.mjs")
        shutil.copyfile(os.path.join(HERE, "duckdb_parquet.mjs"), script)
        self.proc = subprocess.Popen(["node", script], cwd=CLIENT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)
        line = self.proc.stdout.readline()
        if not line:
            skip("the DuckDB child did not start")
        self.version = json.loads(line)["ready"]

    def rows(self, sql):
        self.proc.stdin.write(json.dumps({"sql": sql}) + "\n")
        answer = json.loads(self.proc.stdout.readline())
        if "error" in answer:
            raise AssertionError("DuckDB: %s\n%s" % (answer["error"], sql))
        return answer["rows"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


class DuckTest(cstest.StoreTest):
    """A StoreTest with one DuckDB child for the class: self.duck."""

    @classmethod
    def setUpClass(cls):
        cls.duck = Duck()

    @classmethod
    def tearDownClass(cls):
        cls.duck.close()
