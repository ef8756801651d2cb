#!/usr/bin/python3
"""Pushdown: every WHERE shape colstore takes must return exactly what
SQLite returns on a native table with the same rows, and the plan must show
that colstore took it.

Each table exists twice: `n` (native, rowid = position + 1 is not relied on;
a column `pos` holds the 0-based position) and `t` (colstore).  Queries are
written once with {T} for the table and run on both; rows are compared as
sorted lists (or in order where the query orders), with typeof() of every
value.  Randomised parts use fixed seeds that a failure prints.
"""
import json
import os
import random
import shutil
import sqlite3
import struct
import sys
import tempfile
import unittest

MODULE = os.environ.get("COLSTORE_MODULE", os.path.join(os.path.dirname(__file__), "..", "..", "build", "colstore"))
ASAN = bool(os.environ.get("COLSTORE_ASAN"))
N_ROWS = 2000 if ASAN else 6000


def connect():
    con = sqlite3.connect(":memory:")
    con.enable_load_extension(True)
    con.load_extension(MODULE)
    return con


def typed(rows):
    return [tuple((type(v).__name__, v) for v in r) for r in rows]


class Pushdown(unittest.TestCase):
    seed = 20261130

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="cs_pushdown_")
        cls.con = connect()
        rnd = random.Random(cls.seed)
        con = cls.con
        con.execute("CREATE TABLE n(pos INTEGER, i INT64, s INT8, u UINT16, f FLOAT64, g FLOAT32, b BOOL, txt TEXT, bl BLOB, srt INT64)")
        words = ["", "a", "abc", "abd", "b", "Z", "zz", "é", "10", "9", "x" * 30]
        rows = []
        for k in range(N_ROWS):
            i = rnd.choice([None, rnd.randint(-50, 50), rnd.randint(-2**63, 2**63 - 1), -2**63, 2**63 - 1, 0])
            s = rnd.choice([None, rnd.randint(-128, 127)])
            u = rnd.choice([None, rnd.randint(0, 65535), 0])
            f = rnd.choice([None, rnd.uniform(-100, 100), float(rnd.randint(-5, 5)), 0.5, -0.0, 1e300, 9007199254740993.0])
            g = rnd.choice([None, float(rnd.randint(-1000, 1000)) / 4])
            b = rnd.choice([None, 0, 1])
            t = rnd.choice([None] + words)
            bl = rnd.choice([None, b"", b"\x00\x01", b"abc", bytes([rnd.randint(0, 255)])])
            rows.append((k, i, s, u, f, g, b, t, bl, k // 7))
        con.executemany("INSERT INTO n VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
        path = os.path.join(cls.dir, "t.cst")
        con.execute("SELECT colstore_create(?, 'SELECT * FROM n')", (path,))
        con.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % path)
        # A second store written with small records so zone maps have work.
        # z is written in 20 commits, so it has 20 records with disjoint v;
        # the commits go from the top down, so v is not sorted as a whole
        # (a sorted column would be answered by binary search instead).  The
        # automatic compaction would merge 20 records of 300 rows: off while
        # they are written.
        con.execute("SELECT colstore_config('auto_compact', 0)")
        con.execute("CREATE TABLE zn(pos INTEGER, v INT64, w FLOAT64)")
        con.executemany("INSERT INTO zn VALUES (?,?,?)", [(k, k, k / 10) for k in range(N_ROWS)])
        zpath = os.path.join(cls.dir, "z.cst")
        con.execute("CREATE VIRTUAL TABLE z USING colstore('%s', pos INT64, v INT64, w FLOAT64)" % zpath)
        step = N_ROWS // 20
        for a in reversed(range(0, N_ROWS, step)):
            con.execute("INSERT INTO z SELECT * FROM zn WHERE pos >= ? AND pos < ?", (a, a + step))
            con.commit()
        con.execute("SELECT colstore_config('auto_compact', 4)")

    @classmethod
    def tearDownClass(cls):
        cls.con.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def same(self, sql, params=(), ordered=False, tables=("n", "t")):
        a = self.con.execute(sql.format(T=tables[0]), params).fetchall()
        b = self.con.execute(sql.format(T=tables[1]), params).fetchall()
        if not ordered:
            key = lambda r: repr(typed([r]))
            a, b = sorted(a, key=key), sorted(b, key=key)
        self.assertEqual(typed(a), typed(b), "seed %d, query %s %r" % (self.seed, sql, params))
        return b

    def plan(self, sql, params=()):
        return " ".join(r[3] for r in self.con.execute("EXPLAIN QUERY PLAN " + sql, params))

    # ------------------------------------------------------------------ predicates

    def test_every_operator_on_every_column_matches_native(self):
        operands = [0, 1, -1, 5, 2.5, -0.0, 127, 2**63 - 1, -2**63, 9007199254740992, 9007199254740993.0, 1e300,
                    "5", " 5 ", "2.5", "abc", "", "é", "10", b"", b"abc", None]
        cols = ["i", "s", "u", "f", "g", "b", "txt", "bl"]
        ops = ["=", "!=", "<", "<=", ">", ">=", "IS", "IS NOT"]
        for c in cols:
            for op in ops:
                for v in operands:
                    sql = "SELECT pos, %s FROM {T} WHERE %s %s ?" % (c, c, op)
                    self.same(sql, (v,))
                    if not isinstance(v, bytes):
                        lit = "NULL" if v is None else (repr(v) if not isinstance(v, str) else "'%s'" % v)
                        self.same("SELECT pos FROM {T} WHERE %s %s %s" % (c, op, lit))
            self.same("SELECT pos FROM {T} WHERE %s IS NULL" % c)
            self.same("SELECT pos FROM {T} WHERE %s IS NOT NULL" % c)

    def test_in_lists_and_between_match_native(self):
        for c in ["i", "s", "f", "txt", "pos"]:
            self.same("SELECT pos FROM {T} WHERE %s IN (1, 2, 'abc', 2.5, NULL, -1, '10')" % c)
            self.same("SELECT pos FROM {T} WHERE %s NOT IN (1, 2, 3)" % c)
            self.same("SELECT pos FROM {T} WHERE %s BETWEEN -3 AND 7" % c)
            self.same("SELECT pos FROM {T} WHERE %s BETWEEN 'a' AND 'b'" % c)
        self.same("SELECT pos FROM {T} WHERE i = 1 OR i = 2 OR i = -1")

    def test_combined_predicates_and_collations(self):
        self.same("SELECT pos FROM {T} WHERE i > 0 AND f < 0 AND txt IS NOT NULL")
        self.same("SELECT pos FROM {T} WHERE txt = 'ABC' COLLATE NOCASE")
        self.same("SELECT pos FROM {T} WHERE txt LIKE 'a%'")
        self.same("SELECT pos FROM {T} WHERE txt GLOB 'a*'")
        self.same("SELECT pos FROM {T} WHERE txt > 'Z' COLLATE NOCASE")
        self.same("SELECT count(*), total(i), total(f) FROM {T} WHERE s > 10 AND u < 30000")

    def test_joins_use_column_equality(self):
        con = self.con
        self.same("SELECT a.pos, b.pos FROM {T} a JOIN {T} b ON a.srt = b.srt WHERE a.pos < 200")
        p = self.plan("SELECT a.pos, b.pos FROM t a JOIN t b ON a.srt = b.srt WHERE a.pos < 200")
        self.assertIn("pred(", p)

    def test_predicates_are_pushed_and_reported(self):
        p = self.plan("SELECT i FROM t WHERE i > 5 AND f < 2")
        self.assertIn("pred(", p)
        self.con.execute("SELECT count(*) FROM t WHERE i > 5").fetchall()
        lp = json.loads(self.con.execute("SELECT colstore_last_plan()").fetchone()[0])
        self.assertEqual(lp["table"], "t")
        self.assertEqual(lp["access"], "filtered")
        self.assertGreaterEqual(lp["predicates"], 1)
        native = self.con.execute("SELECT count(*) FROM n WHERE i > 5").fetchone()[0]
        self.assertEqual(lp["rows_selected"], native)
        self.assertEqual(lp["rows_scanned"], N_ROWS)

    def test_zone_maps_skip_records(self):
        self.same("SELECT pos, v FROM {T} WHERE v >= 100 AND v < 140", tables=("zn", "z"))
        self.con.execute("SELECT count(*) FROM z WHERE v = 5").fetchall()
        lp = json.loads(self.con.execute("SELECT colstore_last_plan()").fetchone()[0])
        self.assertEqual(lp["records_scanned"] + lp["records_skipped"], 20)
        self.assertEqual(lp["records_skipped"], 19)
        self.assertEqual(lp["rows_selected"], 1)

    def test_range_on_a_sorted_column_becomes_a_row_range(self):
        for q, params in [("SELECT pos, srt FROM {T} WHERE srt BETWEEN ? AND ?", (10, 20)),
                          ("SELECT pos FROM {T} WHERE srt = ?", (33,)),
                          ("SELECT pos FROM {T} WHERE srt > ? AND pos < ?", (700, 5000)),
                          ("SELECT pos FROM {T} WHERE srt < ?", (2.5,)),
                          ("SELECT pos FROM {T} WHERE srt >= ?", ("800",)),
                          ("SELECT pos FROM {T} WHERE srt = ?", ("abc",)),
                          ("SELECT pos FROM {T} WHERE srt < ?", ("abc",)),
                          ("SELECT pos FROM {T} WHERE srt <= ?", (-1,)),
                          ("SELECT pos FROM {T} WHERE srt > ?", (10**6,))]:
            self.same(q, params)
        self.con.execute("SELECT count(*) FROM t WHERE srt BETWEEN 10 AND 20").fetchall()
        lp = json.loads(self.con.execute("SELECT colstore_last_plan()").fetchone()[0])
        self.assertEqual(lp["sorted_ranges"], 2)
        self.assertEqual(lp["predicates"], 0)
        self.assertEqual(lp["access"], "range")
        self.assertEqual(lp["rows_selected"], 11 * 7)
        self.assertEqual(lp["rows_scanned"], 11 * 7)
        info = json.loads(self.con.execute("SELECT colstore_info('t')").fetchone()[0])
        self.assertTrue([c for c in info["columns"] if c["name"] == "srt"][0]["sorted"])

    # ------------------------------------------------------------------ rowid IN, _rows, _mask

    def test_rowid_in_list_is_taken_all_at_once(self):
        rnd = random.Random(self.seed + 1)
        ids = [rnd.randint(-5, N_ROWS + 5) for _ in range(300)] + [3, 3, 3]
        lst = ",".join(map(str, ids)) + ", NULL, '7', 2.0, 2.5, 'x'"
        got = self.con.execute("SELECT rowid, pos FROM t WHERE rowid IN (%s)" % lst).fetchall()
        want = sorted({v for v in ids + [7, 2] if 0 <= v < N_ROWS})
        self.assertEqual(sorted(r[0] for r in got), want)
        self.assertTrue(all(r[0] == r[1] for r in got))
        self.assertIn("in(rowid)", self.plan("SELECT pos FROM t WHERE rowid IN (%s)" % lst))
        self.con.execute("SELECT pos FROM t WHERE rowid IN (1,2,3)").fetchall()
        lp = json.loads(self.con.execute("SELECT colstore_last_plan()").fetchone()[0])
        self.assertEqual(lp["access"], "list")

    def test_rows_blob_keeps_order_duplicates_and_negatives(self):
        pos = [5, 3, 3, -1, 0, -N_ROWS, N_ROWS - 1]
        blob = struct.pack("<%dq" % len(pos), *pos)
        got = [r[0] for r in self.con.execute("SELECT pos FROM t WHERE _rows = ?", (blob,))]
        self.assertEqual(got, [p if p >= 0 else p + N_ROWS for p in pos])
        got = [r[0] for r in self.con.execute("SELECT pos FROM t(?)", (blob,))]
        self.assertEqual(got, [p if p >= 0 else p + N_ROWS for p in pos])
        # combined with a rowid range and a predicate SQLite checks
        got = [r[0] for r in self.con.execute("SELECT pos FROM t WHERE _rows = ? AND rowid > 2 AND pos != 5", (blob,))]
        self.assertEqual(got, [3, 3, N_ROWS - 1, N_ROWS - 1])
        self.assertEqual(self.con.execute("SELECT count(*) FROM t WHERE _rows = ?", (b"",)).fetchone()[0], 0)

    def test_rows_blob_errors_name_the_problem(self):
        for bad, words in [(struct.pack("<q", N_ROWS), "out of range"), (struct.pack("<q", -N_ROWS - 1), "out of range"),
                           (b"1234567", "multiple of 8"), ("text", "BLOB")]:
            with self.assertRaises(sqlite3.Error) as cm:
                self.con.execute("SELECT pos FROM t WHERE _rows = ?", (bad,)).fetchall()
            self.assertIn("colstore:", str(cm.exception))
            self.assertIn(words, str(cm.exception))

    def test_mask_selects_and_checks_length(self):
        rnd = random.Random(self.seed + 2)
        m = bytes(rnd.choice([0, 0, 0, 1, 7]) for _ in range(N_ROWS))
        got = [r[0] for r in self.con.execute("SELECT pos FROM t WHERE _mask = ?", (m,))]
        self.assertEqual(got, [k for k in range(N_ROWS) if m[k]])
        got = [r[0] for r in self.con.execute("SELECT pos FROM t WHERE _mask = ? AND i > 0 AND rowid < 1000", (m,))]
        want = [r[0] for r in self.con.execute("SELECT pos FROM n WHERE i > 0 AND pos < 1000 ORDER BY pos")]
        self.assertEqual(got, [k for k in want if m[k]])
        with self.assertRaises(sqlite3.Error) as cm:
            self.con.execute("SELECT pos FROM t WHERE _mask = ?", (m[:-1],)).fetchall()
        self.assertIn("%d" % (N_ROWS - 1), str(cm.exception))
        self.assertIn("%d" % N_ROWS, str(cm.exception))

    # ------------------------------------------------------------------ LIMIT, OFFSET, ORDER BY

    def test_limit_offset_and_order_by_rowid(self):
        for q in ["SELECT pos FROM {T} ORDER BY pos LIMIT 10 OFFSET 5",
                  "SELECT pos FROM {T} ORDER BY pos DESC LIMIT 10 OFFSET 5",
                  "SELECT pos FROM {T} WHERE i > 0 ORDER BY pos LIMIT 7 OFFSET 3",
                  "SELECT pos FROM {T} WHERE i > 0 ORDER BY pos DESC LIMIT 7 OFFSET 3",
                  "SELECT pos FROM {T} WHERE pos BETWEEN 100 AND 200 ORDER BY pos DESC",
                  "SELECT pos FROM {T} ORDER BY f LIMIT 5",
                  "SELECT pos FROM {T} WHERE txt LIKE 'a%' ORDER BY pos LIMIT 5",
                  "SELECT pos FROM {T} ORDER BY pos LIMIT 0",
                  "SELECT pos FROM {T} ORDER BY pos LIMIT -1 OFFSET %d" % (N_ROWS - 3)]:
            a = self.con.execute(q.format(T="n")).fetchall()
            b = self.con.execute(q.replace("ORDER BY pos", "ORDER BY rowid").format(T="t")).fetchall()
            self.assertEqual(a, b, q)
        p = self.plan("SELECT pos FROM t ORDER BY rowid DESC LIMIT 3")
        self.assertIn("order(rowid desc)", p)
        # before 3.46 SQLite may offer LIMIT beside a WHERE term it hides
        # (a > b), so colstore takes it only from 3.46 on (colstore_plan.c)
        if sqlite3.sqlite_version_info >= (3, 46, 0):
            self.assertIn("limit", p)
        else:
            self.assertNotIn("limit", p)
        self.assertNotIn("USE TEMP B-TREE", p)

    def test_closing_the_connection_after_a_threaded_query_does_not_crash(self):
        # sqlite3_close unloads the module; the OpenMP runtime's idle workers
        # must not be left running in unmapped code (linked -z nodelete).
        script = """
import sqlite3, sys
con = sqlite3.connect(':memory:')
con.enable_load_extension(True)
con.load_extension(sys.argv[1])
con.execute("SELECT colstore_config('threads', 2)")
con.execute("SELECT colstore_create(sys.argv[2], 'WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM n WHERE i < 399999) SELECT i * 1.0 AS x FROM n')".replace('sys.argv[2]', repr(sys.argv[2])))
con.execute("CREATE VIRTUAL TABLE t USING colstore(%r)" % sys.argv[2])
assert con.execute("SELECT count(*) FROM t WHERE x > 100.5").fetchone()[0] == 399899
con.close()
print('closed')
"""
        import subprocess
        path = os.path.join(self.dir, "close.cst")
        for attempt in range(3):
            if os.path.exists(path):
                os.unlink(path)
            p = subprocess.run([sys.executable, "-c", script, MODULE, path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, "attempt %d: %s" % (attempt, p.stdout))
            self.assertIn("closed", p.stdout)

    # ------------------------------------------------------------------ settings

    def test_config_round_trips_and_rejects_bad_values(self):
        con = self.con
        self.assertEqual(con.execute("SELECT colstore_config('threads', 1)").fetchone()[0], 1)
        self.same("SELECT pos FROM {T} WHERE f > 0")
        self.assertEqual(con.execute("SELECT colstore_config('threads', 0)").fetchone()[0], 0)
        self.assertEqual(con.execute("SELECT colstore_config('prefetch')").fetchone()[0], "auto")
        self.assertEqual(con.execute("SELECT colstore_config('prefetch', 0)").fetchone()[0], 0)
        self.assertEqual(con.execute("SELECT colstore_config('prefetch', 'auto')").fetchone()[0], "auto")
        self.assertEqual(con.execute("SELECT colstore_config('numa', 'interleave')").fetchone()[0], "interleave")
        self.assertEqual(con.execute("SELECT colstore_config('numa', 'auto')").fetchone()[0], "auto")
        self.assertEqual(con.execute("SELECT colstore_config('binding')").fetchone()[0], "off")
        self.assertEqual(con.execute("SELECT colstore_config('mask_gate', 0.25)").fetchone()[0], 0.25)
        self.assertEqual(con.execute("SELECT colstore_config('mask_gate', 'auto')").fetchone()[0], "auto")
        old = con.execute("SELECT colstore_config('batch_bytes')").fetchone()[0]
        self.assertEqual(con.execute("SELECT colstore_config('batch_bytes', 65536)").fetchone()[0], 65536)
        self.same("SELECT pos FROM {T} WHERE i < 0")  # many small batches
        con.execute("SELECT colstore_config('batch_bytes', ?)", (old,))
        for name, value, words in [("nope", None, "threads, prefetch"), ("threads", -1, "thread count"),
                                   ("numa", "sideways", "interleave"), ("binding", "tight", "spread"),
                                   ("batch_bytes", 10, "65536"), ("mask_gate", 2, "0 to 1")]:
            with self.assertRaises(sqlite3.Error) as cm:
                if value is None:
                    con.execute("SELECT colstore_config(?)", (name,)).fetchall()
                else:
                    con.execute("SELECT colstore_config(?, ?)", (name, value)).fetchall()
            self.assertIn("colstore:", str(cm.exception))
            self.assertIn(words, str(cm.exception))
        lp = json.loads(con.execute("SELECT colstore_last_plan()").fetchone()[0])
        self.assertIn("effective", lp["settings"]["numa"])

    def test_config_with_no_argument_lists_every_setting(self):
        """colstore_config() is JSON of every setting: its value (what
        colstore_config(name) returns) and the values it takes (the text a
        bad value's error lists).  Each setting set to the value listed
        keeps it; a word no setting takes is refused with that text."""
        con = self.con
        listing = json.loads(con.execute("SELECT colstore_config()").fetchone()[0])
        names = {"threads", "prefetch", "mask_gate", "numa", "binding", "batch_bytes", "scatter_bytes", "keep_bytes",
                 "cache_limit"}
        self.assertTrue(names <= set(listing), sorted(listing))
        with self.assertRaises(sqlite3.Error) as cm:
            con.execute("SELECT colstore_config('nope')").fetchall()
        for name in listing:
            self.assertIn(name, str(cm.exception), "the unknown-setting error names every setting")
        try:
            for name, entry in listing.items():
                self.assertEqual(set(entry), {"value", "allowed"}, name)
                got = con.execute("SELECT colstore_config(?)", (name,)).fetchone()[0]
                self.assertEqual(got, entry["value"], name)
                self.assertEqual(con.execute("SELECT colstore_config(?, ?)", (name, got)).fetchone()[0], got, name)
                with self.assertRaises(sqlite3.Error) as cm:
                    con.execute("SELECT colstore_config(?, 'sideways')", (name,)).fetchall()
                self.assertIn("colstore: bad value for setting %s; valid values: %s" % (name, entry["allowed"]),
                              str(cm.exception))
        finally:
            con.execute("SELECT colstore_config('cache_limit', 'auto')").fetchall()


if __name__ == "__main__":
    unittest.main(verbosity=2)
