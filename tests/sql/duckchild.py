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
import os

import cstest

HERE = os.path.dirname(os.path.abspath(__file__))


class Duck(cstest.NodeChild):
    """The DuckDB child (tests/sql/duckdb_parquet.mjs): rows(sql) answers a query."""

    def __init__(self):
        super().__init__("duckdb_client", "@duckdb/node-api", os.path.join(HERE, "duckdb_parquet.mjs"))

    def rows(self, sql):
        return self.ask({"sql": sql})["rows"]


class DuckTest(cstest.StoreTest):
    """A StoreTest with one DuckDB child for the class: self.duck."""

    @classmethod
    def setUpClass(cls):
        cls.duck = Duck()

    @classmethod
    def tearDownClass(cls):
        cls.duck.close()
