#!/usr/bin/python3
"""What the randomized differential tester (tests/sql/fuzz_sql.py) found,
each reduced to the smallest query that showed it, so the class stays fixed
even when the fuzzer's seeds stop drawing that shape.

Each test names the finding and the fix:

1. `_rows`/`_mask` beside an OR lost every row (the MULTI-INDEX OR plan
   re-checked the selection through xColumn, which read NULL); it also
   depended on which prepared statement ran it: checked twice here.
2. `SELECT DISTINCT ... rowid` over a `_rows` BLOB with repeated positions:
   SQLite takes rowid as unique and skips the DISTINCT step, so the repeats
   stay.  Not a plan colstore chooses; documented (docs/sql.md) and pinned
   here so a change in either is noticed.
3. A numeric TEXT stored into or compared with a FLOAT64 column was read by
   strtod, one ulp from SQLite's own parser for some 16-17 digit texts.
4. colstore_info printed a double's min/max one ulp off (SQLite 3.40's
   printf); now the C library's round-trip form.
5. `WHERE a = b LIMIT n` (two columns of the table) returned every row:
   SQLite offers `a = b` only as unusable, and LIMIT was taken beside it.
"""
import json
import os
import struct
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402


class FuzzRegressions(cstest.StoreTest):
    def setUp(self):
        super().setUp()
        self.con = self.connect()

    def table(self, name, cols, rows):
        self.con.execute("CREATE VIRTUAL TABLE %s USING colstore(%r, %s)" % (name, self.path(name + ".cst"), cols))
        ph = ",".join("?" * len(rows[0]))
        self.con.executemany("INSERT INTO %s VALUES (%s)" % (name, ph), rows)

    def test_1_selection_beside_or_in_every_statement(self):
        self.table("t", "c0 INT64, c1 INT64", [(i % 10, -(i % 13)) for i in range(1000)])
        blob = struct.pack("<4q", 7, 9, 7, -1)
        sql = "SELECT rowid, c0, c1 FROM t WHERE _rows = ? AND (c0 = 7 OR c1 = -9)"
        want = [(7, 7, -7), (9, 9, -9), (7, 7, -7)]
        for q in (sql, sql + " ", sql, sql + "  "):
            self.assertEqual(self.con.execute(q, (blob,)).fetchall(), want)
        mask = bytes(1 if i in (7, 9, 100, 999) else 0 for i in range(1000))
        sql = "SELECT rowid FROM t WHERE _mask = ? AND (c0 = 7 OR c1 = -9)"
        for q in (sql, sql + " "):
            self.assertEqual(sorted(self.con.execute(q, (mask,)).fetchall()), [(7,), (9,), (100,)])

    def test_2_distinct_rowid_over_repeated_positions_is_sqlites_call(self):
        self.table("t", "a INT64", [(i,) for i in range(5)])
        rows = struct.pack("<3q", 2, 2, 4)
        con = self.con
        # without rowid SQLite de-duplicates
        self.assertEqual(con.execute("SELECT DISTINCT a FROM t WHERE _rows = ?", (rows,)).fetchall(), [(2,), (4,)])
        self.assertEqual(con.execute("SELECT rowid FROM t WHERE _rows = ? GROUP BY rowid", (rows,)).fetchall(),
                         [(2,), (4,)])
        # with rowid it does not (docs/sql.md, "rowid repeats with its position")
        self.assertEqual(con.execute("SELECT DISTINCT rowid FROM t WHERE _rows = ?", (rows,)).fetchall(),
                         [(2,), (2,), (4,)])

    def test_3_numeric_text_is_read_as_sqlite_reads_it(self):
        con = self.con
        self.table("t", "f FLOAT64", [(0.0,)])
        con.execute("CREATE TABLE n(f REAL)")
        texts = ["-4.738430993936415e-300", " 1.2345678901234567e+200 ", "0.30000000000000004", "9007199254740993",
                 "1e-320", "-0.0", "123456789012345678901234567890"]
        for x in texts:
            con.execute("INSERT INTO t VALUES (?)", (x,))
            con.execute("INSERT INTO n VALUES (?)", (x,))
        got = [cstest.canon(r[0]) for r in con.execute("SELECT f FROM t WHERE rowid > 0 ORDER BY rowid")]
        want = [cstest.canon(r[0]) for r in con.execute("SELECT f FROM n ORDER BY rowid")]
        self.assertEqual(got, want)
        v = -4.738430993936415e-300
        con.execute("CREATE VIRTUAL TABLE u USING colstore(%r, f FLOAT64)" % self.path("u.cst"))
        con.execute("INSERT INTO u VALUES (?)", (v,))
        con.execute("DELETE FROM n")
        con.execute("INSERT INTO n VALUES (?)", (v,))
        for where in ("f = '-4.738430993936415e-300'", "f < '-4.738430993936415e-300'", "f > ?", "f <= ?"):
            params = ("-4.738430993936415e-300",) if "?" in where else ()
            self.assertEqual(con.execute("SELECT count(*) FROM u WHERE " + where, params).fetchone(),
                             con.execute("SELECT count(*) FROM n WHERE " + where, params).fetchone(), where)

    def test_4_info_min_max_round_trip(self):
        self.table("t", "f FLOAT64", [(-1.7976931348623157e308,), (1.7976931348623157e308,), (0.1,)])
        c = json.loads(self.con.execute("SELECT colstore_info('t')").fetchone()[0])["columns"][0]
        self.assertEqual((c["min"], c["max"]), (-1.7976931348623157e308, 1.7976931348623157e308))

    def test_5_column_to_column_comparison_beside_limit(self):
        self.table("t", "a INT64, b INT64", [(1, 2), (3, 3), (None, None), (4, 1)])
        con = self.con
        self.assertEqual(con.execute("SELECT rowid FROM t WHERE a = b LIMIT 10").fetchall(), [(1,)])
        self.assertEqual(con.execute("SELECT rowid FROM t WHERE a < b ORDER BY rowid LIMIT 10 OFFSET 0").fetchall(), [(0,)])
        self.assertEqual(con.execute("SELECT rowid FROM t WHERE a > b AND rowid >= 0 LIMIT 1").fetchall(), [(3,)])
        self.assertEqual(con.execute("SELECT r FROM (SELECT rowid AS r FROM t WHERE a = b ORDER BY rowid LIMIT 100)").fetchall(),
                         [(1,)])


if __name__ == "__main__":
    cstest.main()
