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
   SQLite 3.40 offers LIMIT beside a term it hides from the table; LIMIT
   and OFFSET are now taken only from SQLite 3.46 on.
6. An IN list arriving past constraint 31 looked like `=` (sqlite3_vtab_in
   cannot answer there) and was taken as one, so SQLite called xFilter
   once per member, nested for several lists: 204 s for a query native
   answers in 1 ms.  Past 31 only an `=` with a literal is taken.
7. An IN list taken as a list but given argv position 32 or later came to
   xFilter one member at a time (SQLite's mask of IN lists is by argv
   position, 32 bits), read as an empty list: no rows.  IN lists are taken
   only at argv positions 0..31, and a list that does not arrive as one is
   an error, never an empty answer.
8. `x LIKE 'in%'` on a float column holding infinity found no row: SQLite's
   LIKE optimization offers `x >= 'IN' AND x < 'in'` as if the user had
   written them, assuming no number's text starts with letters, and
   colstore took them (a number is below any text).  A numeric column
   compared with a literal TEXT or BLOB is now left to SQLite.
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

    def test_6_in_lists_past_constraint_31_are_left_to_sqlite(self):
        rows = [(i, i % 40, i % 7, i % 3) for i in range(1000)]
        self.table("t", "a INT64, b INT64, c INT64, d INT64", rows)
        con = self.con
        con.execute("CREATE TABLE n (a INTEGER, b INTEGER, c INTEGER, d INTEGER)")
        con.executemany("INSERT INTO n VALUES (?, ?, ?, ?)", rows)
        ins = " AND ".join("%s IN (%s)" % (col, ", ".join(str(v) for v in range(40))) for col in "bcd")
        for n_before in (31, 32, 40):
            sql = "SELECT count(*) FROM {} WHERE " + " AND ".join(["a >= 0"] * n_before + [ins, "d = 2", "c = ?"])
            self.assertEqual(con.execute(sql.format("t"), (3,)).fetchone(), con.execute(sql.format("n"), (3,)).fetchone())
            plan = con.execute("EXPLAIN QUERY PLAN " + sql.format("t"), (3,)).fetchall()[0][3]
            if n_before >= 32:  # c and d are past 31: c's parameter is SQLite's to check, d's literal ours
                self.assertNotIn("c=?", plan)
                self.assertIn("d=?", plan)

    def test_7_in_list_at_argv_32_and_later(self):
        self.table("t", "a INT64, b INT64", [(i, i % 7) for i in range(100)])
        con = self.con
        con.execute("CREATE TABLE n (a INTEGER, b INTEGER)")
        con.executemany("INSERT INTO n VALUES (?, ?)", [(i, i % 7) for i in range(100)])
        for k in (29, 30, 31, 32, 33):
            for tail in ("", " AND rowid >= 0", " AND _mask = ?"):
                w = " AND ".join(["a >= 0"] * k + ["b IN (1, 2, ?)"])
                q = "SELECT count(*) FROM {} WHERE " + w + tail
                params = (3, bytes([1]) * 100) if "_mask" in tail else (3,)
                want = con.execute(q.format("n").replace(" AND _mask = ?", ""), params[:1]).fetchone()
                self.assertEqual(con.execute(q.format("t"), params).fetchone(), want, (k, tail))

    def test_8_like_over_infinity(self):
        inf = float("inf")
        rows = [(inf, -inf, 1), (-inf, inf, 2), (1.5, 2.5, 3), (None, inf, 4), (0.0, -0.0, 5)]
        self.table("t", "f FLOAT32, d FLOAT64, i INT64", rows)
        con = self.con
        con.execute("CREATE TABLE n (f REAL, d REAL, i INTEGER)")
        con.executemany("INSERT INTO n VALUES (?, ?, ?)", rows)
        con.execute("CREATE VIRTUAL TABLE temp.by_f USING colstore_agg(t, f)")
        conds = ["{c} LIKE 'in%'", "{c} LIKE 'INF'", "{c} LIKE '-in%'", "{c} GLOB 'I*'", "{c} GLOB '-I*'",
                 "{c} LIKE 'i_f'", "{c} NOT LIKE 'in%'", "{c} LIKE '1%'", "{c} >= 'IN' AND {c} < 'in'",
                 "{c} < 'a'", "{c} > x'00'", "{c} = 'Inf'", "{c} LIKE ?", "{c} GLOB ? AND i > 0"]
        for cond in conds:
            for col in ("f", "d", "i"):
                w = cond.format(c=col)
                params = ("in%",) if "LIKE ?" in w else ("I*",) if "GLOB ?" in w else ()
                for sql in ("SELECT f, d, i FROM {} WHERE %s ORDER BY i",
                            "SELECT count(*), min(i) FROM {} WHERE %s"):
                    want = con.execute((sql % w).format("n"), params).fetchall()
                    got = con.execute((sql % w).format("t"), params).fetchall()
                    self.assertEqual(got, want, w)
        # a float key of an aggregate table: the LIKE's terms never filter the source
        for cond, params in (("f LIKE 'in%'", ()), ("f GLOB '-I*'", ()), ("f LIKE ?", ("in%",))):
            want = con.execute("SELECT f, count(*) FROM n WHERE %s GROUP BY f ORDER BY f" % cond, params).fetchall()
            got = con.execute("SELECT f, count FROM by_f WHERE %s ORDER BY f" % cond, params).fetchall()
            self.assertEqual(got, want, cond)


if __name__ == "__main__":
    cstest.main()
