#!/usr/bin/python3
"""colstore_agg: aggregate tables answer exactly what SQLite's own GROUP BY
gives over the same rows, and every condition they cannot take fails.

Each aggregate table here is compared with the native query it replaces:

    SELECT k, count, count_x, sum_x, avg_x, min_x, max_x FROM agg WHERE cond
    SELECT k, count(*), count(x), sum(x), avg(x), min(x), max(x)
      FROM n WHERE cond GROUP BY k

over a native table n and a colstore table t holding the same rows in
several records (so zone maps skip, prove and split records).  Counts,
integer sums, minima and maxima must be equal exactly, by storage class;
float sums and averages may differ in the last bits (the contract leaves
the summation order open), so they are compared to a relative 1e-9.
Groups are compared as sets (their order is unspecified).

The conditions come from a fixed seed (printed with any failure) and cover
every operator of the contract on every type, IN lists, BETWEEN, _rows
(with duplicates and negative positions) and _mask, empty selections, and
keys with NULLs, NaN (read as NULL) and -0.0.  The rejected shapes (OR
across columns, a function of a filter column, two columns compared, an
operator the table cannot take, reading a filter column) must each fail
with a `colstore:` error naming the column, whatever the data.

test_random_conditions (RandomConditions below) draws what a user may
write, not what the table is known to take: conditions on every column
type with literals and parameters of every storage class (integer, real,
numeric and other text, blob, NULL), every operator in both orders
(`x < 5`, `5 > x`), IN lists of mixed classes, BETWEEN, ORs, WHERE clauses
of more than 32 terms with IN lists among them, _rows and _mask, and an
empty source; each answer is compared with the native GROUP BY, and a
refusal is a failure unless the contract names it (an OR that reads a
filter column, which must then fail every time).  Run it longer with
`COLSTORE_AGG_SECONDS=300 COLSTORE_AGG_SEED=7 test_agg.py
Agg.test_random_conditions_long_run`.
"""
import math
import os
import random
import sqlite3
import struct
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402

SEED = 20261201
N_ROWS = cstest.scaled(5000, 1500)
N_RANDOM = cstest.scaled(250, 60)
N_RANDOM_CONDITIONS = cstest.scaled(600, 120)

# name, colstore type, native declared type, value generator
COLUMNS = [
    ("i", "INT64", "INTEGER"),
    ("j", "INT32 NOT NULL", "INTEGER"),
    ("k", "INT8", "INTEGER"),
    ("f", "FLOAT64", "REAL"),
    ("g", "FLOAT32", "REAL"),
    ("b", "BOOL", "INTEGER"),
    ("s", "TEXT", "TEXT"),
    ("y", "BLOB", "BLOB"),
    ("kind", "TEXT NOT NULL", "TEXT"),
    ("run", "INT16", "INTEGER"),
]
NAMES = [c[0] for c in COLUMNS]
NUMERIC = ["i", "j", "k", "f", "g", "b", "run"]
# each aggregate table's keys, and its filter columns
AGG_KEYS = {"tot": [], "by_kind": ["kind"], "by_kr": ["kind", "run"], "by_i": ["k"], "by_f": ["f"], "by_s": ["s", "b"],
            "by_y": ["y"]}
FILTERED = {agg: [c for c in NAMES if c not in keys] for agg, keys in AGG_KEYS.items()}


def make_row(rnd):
    f = rnd.choice([None, 0.0, -0.0, 1.5, -2.25, float("nan"), rnd.uniform(-100, 100), rnd.uniform(0, 1)])
    return (
        rnd.choice([None, rnd.randint(-10**6, 10**6), rnd.randint(-5, 5)]),
        rnd.randint(-1000, 1000),
        rnd.choice([None, rnd.randint(-128, 127)]),
        f,
        rnd.choice([None, float(struct.unpack("<f", struct.pack("<f", rnd.uniform(-10, 10)))[0]), 0.5]),
        rnd.choice([None, 0, 1]),
        rnd.choice([None, "", "a", "ab", "b", "zeta", "Alpha", "a\x00b"]),
        rnd.choice([None, b"", b"\x00", b"\x01\x02", b"\xff"]),
        rnd.choice(["alpha", "beta", "gamma", "delta", ""]),
        rnd.choice([None, 1, 2, 3, 7]),
    )


def rows_blob(positions):
    return struct.pack("<%dq" % len(positions), *positions)


def close(a, b):
    if isinstance(a, float) and isinstance(b, float):
        if a == b or (math.isnan(a) and math.isnan(b)):
            return True
        return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1e-300)
    return cstest.canon(a) == cstest.canon(b)


class Agg(cstest.StoreTest):
    def setUp(self):
        super().setUp()
        rnd = random.Random(SEED)
        con = self.con = self.connect()
        con.execute("CREATE TABLE n(pos INTEGER PRIMARY KEY, %s)" % ", ".join("%s %s" % (c, d) for c, _, d in COLUMNS))
        self.data = [(p,) + make_row(rnd) for p in range(N_ROWS)]
        con.executemany("INSERT INTO n VALUES (%s)" % ",".join("?" * (len(COLUMNS) + 1)), self.data)
        con.execute("CREATE VIRTUAL TABLE t USING colstore(%r, %s)" % (self.path("t.cst"), ", ".join("%s %s" % (c, ty) for c, ty, _ in COLUMNS)))
        cuts = [0, N_ROWS // 4, N_ROWS // 2, N_ROWS - 7, N_ROWS]
        for a, b in zip(cuts, cuts[1:]):
            con.execute("INSERT INTO t SELECT %s FROM n WHERE pos >= ? AND pos < ? ORDER BY pos" % ", ".join(NAMES), (a, b))
        con.execute("CREATE VIRTUAL TABLE temp.tot USING colstore_agg(t)")
        con.execute("CREATE VIRTUAL TABLE temp.by_kind USING colstore_agg(t, kind)")
        con.execute("CREATE VIRTUAL TABLE temp.by_kr USING colstore_agg(t, kind, run)")
        con.execute("CREATE VIRTUAL TABLE temp.by_i USING colstore_agg(t, k)")
        con.execute("CREATE VIRTUAL TABLE temp.by_f USING colstore_agg(t, f)")
        con.execute("CREATE VIRTUAL TABLE temp.by_s USING colstore_agg(t, s, b)")
        con.execute("CREATE VIRTUAL TABLE temp.by_y USING colstore_agg(%r, y)" % self.path("t.cst"))
        self.aggs = {k: list(v) for k, v in AGG_KEYS.items()}
        self.rnd = rnd
        self.n_checked = 0

    # -- the comparison

    def outputs(self, cols):
        got, want = [], []
        for c in cols:
            got += ["count_%s" % c, "min_%s" % c, "max_%s" % c]
            want += ["count(%s)" % c, "min(%s)" % c, "max(%s)" % c]
            if c in NUMERIC:
                got += ["sum_%s" % c, "avg_%s" % c]
                want += ["sum(%s)" % c, "avg(%s)" % c]
        return got, want

    def compare(self, agg, where="", params=(), native_from="n", cols=NAMES, native_where=None, what="",
                native_params=None):
        keys = self.aggs[agg]
        got_out, want_out = self.outputs(cols)
        got_sql = "SELECT %s FROM %s%s" % (", ".join(keys + ["count"] + got_out), agg, " WHERE " + where if where else "")
        nw = where if native_where is None else native_where
        want_sql = "SELECT %s FROM %s%s%s" % (", ".join(["n." + k for k in keys] + ["count(*)"] + want_out), native_from,
                                              " WHERE " + nw if nw else "",
                                              " GROUP BY " + ", ".join("n." + k for k in keys) if keys else "")
        want_sql = want_sql.replace("count(*)", "count(*)")
        ctx = "seed %d %s\n  colstore: %s\n  native:   %s\n  params: %r" % (SEED, what, got_sql, want_sql, params)
        try:
            got = self.con.execute(got_sql, params).fetchall()
        except Exception as e:  # noqa: BLE001
            self.fail("%s\n  failed: %s" % (ctx, e))
        want = self.con.execute(want_sql, params if native_params is None else native_params).fetchall()
        key = lambda r: repr([cstest.canon(v) for v in r[:len(keys)]])  # noqa: E731
        got.sort(key=key)
        want.sort(key=key)
        if not keys and not got and len(want) == 1 and want[0][0] == 0 and where:
            # SQLite proved the WHERE false (`x IS NULL AND x = ?`, `x IS 1 AND
            # x IN (2)`: constant propagation) and never ran the table:
            # documented, see test_sqlite_proves_false_runs_no_scan.
            return got
        self.assertEqual(len(got), len(want), "%s\n  groups: colstore %d, native %d" % (ctx, len(got), len(want)))
        names = keys + ["count"] + got_out
        for g, w in zip(got, want):
            for name, a, b in zip(names, g, w):
                if not close(a, b):
                    self.fail("%s\n  group %r: %s colstore %r native %r" % (ctx, g[:len(keys)], name, a, b))
        self.n_checked += 1
        return got

    # -- fixed shapes

    def test_unfiltered_every_table(self):
        for agg in self.aggs:
            self.compare(agg, what=agg)

    def test_nan_reads_as_null_and_negative_zero_is_zero(self):
        rows = self.compare("by_f", what="float key")
        keys = [r[0] for r in rows]
        self.assertIn(None, keys)
        self.assertEqual(sum(1 for k in keys if k == 0.0), 1)

    def test_each_operator_on_each_type(self):
        values = {"i": [0, 3, -5, 1000000], "j": [0, 17, -1000], "k": [0, -1, 100], "f": [0.0, 1.5, -2.25, 50.5],
                  "g": [0.5, 0.0, -3.0], "b": [0, 1], "s": ["a", "", "b", "zz"], "kind": ["alpha", "", "omega"],
                  "run": [1, 7, 4]}
        for col, vals in values.items():
            for v in vals:
                for op in ("=", "!=", "<", "<=", ">", ">=", "IS", "IS NOT"):
                    self.compare("tot", "%s %s ?" % (col, op), (v,), what="op")
                    self.compare("by_kind" if col != "kind" else "by_kr", "%s %s ?" % (col, op), (v,), what="op")
            self.compare("tot", "%s IS NULL" % col)
            self.compare("tot", "%s IS NOT NULL" % col)
            self.compare("by_kr", "%s IN (%s)" % (col, ",".join("?" * len(vals))), tuple(vals))
            self.compare("by_kind", "%s BETWEEN ? AND ?" % col, (min(vals), max(vals)))
            self.compare("tot", "%s = NULL" % col)
            self.compare("by_kind", "%s IS NOT ?" % col, (None,), what="op")

    def test_key_conditions_select_source_rows(self):
        self.compare("by_kind", "kind = 'beta'")
        self.compare("by_kind", "kind IN ('beta', 'gamma') AND f > 0")
        self.compare("by_kr", "run > 2 AND kind != 'alpha'")
        self.compare("by_i", "k < 0")
        # a key condition it cannot take is SQLite's, on whole groups: the same answer
        self.compare("by_kind", "length(kind) = 4", native_where="length(n.kind) = 4")
        self.compare("by_kind", "kind LIKE 'a%'", native_where="n.kind LIKE 'a%'")

    def test_rows_and_mask(self):
        pos = [self.rnd.randrange(N_ROWS) for _ in range(300)] + [3, 3, 3, -1, -N_ROWS]
        self.con.execute("CREATE TEMP TABLE sel(ord INTEGER PRIMARY KEY, pos INTEGER)")
        self.con.executemany("INSERT INTO sel(pos) VALUES (?)", [(p % N_ROWS,) for p in pos])
        blob = rows_blob(pos)
        for agg in ("tot", "by_kind", "by_kr", "by_s"):
            self.compare(agg, "_rows = ?", (blob,), native_from="sel JOIN n ON n.pos = sel.pos", native_where="",
                         native_params=())
            self.compare(agg, "_rows = ? AND f > 0", (blob,), native_from="sel JOIN n ON n.pos = sel.pos",
                         native_where="n.f > 0", native_params=())
        mask = bytes(1 if self.rnd.random() < 0.3 else 0 for _ in range(N_ROWS))
        self.con.execute("CREATE TEMP TABLE msk(pos INTEGER PRIMARY KEY)")
        self.con.executemany("INSERT INTO msk VALUES (?)", [(p,) for p, m in enumerate(mask) if m])
        for agg in ("tot", "by_kind", "by_y"):
            self.compare(agg, "_mask = ?", (mask,), native_from="msk JOIN n ON n.pos = msk.pos", native_where="",
                         native_params=())
            self.compare(agg, "_mask = ? AND i > 0", (mask,), native_from="msk JOIN n ON n.pos = msk.pos",
                         native_where="n.i > 0", native_params=())
            self.compare(agg, "_mask = ? AND _rows = ?", (mask, blob),
                         native_from="sel JOIN n ON n.pos = sel.pos JOIN msk ON msk.pos = n.pos", native_where="",
                         native_params=())

    def test_empty_selection(self):
        got = self.compare("tot", "f > 1e9")
        self.assertEqual(len(got), 1)
        self.assertEqual(got[0][0], 0)
        self.assertEqual(self.compare("by_kind", "f > 1e9"), [])
        got = self.compare("tot", "_rows = ?", (b"",), native_from="n", native_where="0", native_params=())
        self.assertEqual(got[0][0], 0)

    def test_sqlite_proves_false_runs_no_scan(self):
        # SQLite never runs the table for a WHERE it proves false on its own:
        # then even the table without keys returns no row (documented).
        self.assertEqual(self.con.execute("SELECT count FROM tot WHERE 0").fetchall(), [])

    def test_randomized(self):
        rnd = random.Random(SEED + 1)
        ops = ["=", "!=", "<", "<=", ">", ">=", "IS", "IS NOT"]
        for q in range(N_RANDOM):
            agg = rnd.choice(list(self.aggs))
            conds, params = [], []
            for _ in range(rnd.randint(0, 4)):
                col = rnd.choice(NAMES)
                row = self.data[rnd.randrange(N_ROWS)]
                v = row[1 + NAMES.index(col)]
                if isinstance(v, float) and math.isnan(v):
                    v = None
                kind = rnd.random()
                if kind < 0.1:
                    conds.append("%s IS %sNULL" % (col, rnd.choice(["", "NOT "])))
                elif kind < 0.25:
                    members = [self.data[rnd.randrange(N_ROWS)][1 + NAMES.index(col)] for _ in range(rnd.randint(1, 4))]
                    members = [None if isinstance(m, float) and math.isnan(m) else m for m in members]
                    conds.append("%s IN (%s)" % (col, ",".join("?" * len(members))))
                    params += members
                elif kind < 0.35:
                    w = self.data[rnd.randrange(N_ROWS)][1 + NAMES.index(col)]
                    w = None if isinstance(w, float) and math.isnan(w) else w
                    conds.append("%s BETWEEN ? AND ?" % col)
                    params += [v, w]
                else:
                    op = rnd.choice(ops)
                    conds.append("%s %s ?" % (col, op))
                    params.append(v)
            self.compare(agg, " AND ".join(conds), tuple(params), what="random query %d" % q)
        self.assertGreater(self.n_checked, N_RANDOM // 2)

    def test_appended_rows_show(self):
        before = self.con.execute("SELECT count FROM tot").fetchone()[0]
        other = self.connect()
        other.execute("CREATE VIRTUAL TABLE t2 USING colstore(%r)" % self.path("t.cst"))
        other.execute("INSERT INTO t2 SELECT * FROM t2 LIMIT 10")
        self.assertEqual(self.con.execute("SELECT count FROM tot").fetchone()[0], before + 10)
        self.assertEqual(self.con.execute("SELECT sum(count) FROM by_y").fetchone()[0], before + 10)

    def test_text_key_codes_follow_updates_and_deletes(self):
        # A GROUP BY on one TEXT or BLOB key reads a record through the
        # dictionary codes cached on the snapshot (kernels/cs_codes.c), built by
        # the first query that reads it; an UPDATE or a DELETE commits a new
        # snapshot with codes of its own.  colstore_last_plan says how many
        # records were read so.
        import json

        def coded():
            return json.loads(self.con.execute("SELECT colstore_last_plan()").fetchone()[0])["records_coded"]

        def check(what, aggs=("by_kind", "by_y")):
            for agg in aggs:
                self.compare(agg, what="%s, %s" % (what, agg))
                self.assertGreater(coded(), 0, "%s, %s" % (what, agg))
                self.compare(agg, "f > 0 AND run IS NOT 2", what="%s, %s, filtered" % (what, agg))
                self.assertGreater(coded(), 0, "%s, %s, filtered" % (what, agg))

        check("first queries")
        check("cached codes")
        for t_sql, n_sql in (
                ("UPDATE t SET kind = 'new' || (rowid % 3), y = x'0aff' WHERE rowid % 4 = 1",
                 "UPDATE n SET kind = 'new' || (pos % 3), y = x'0aff' WHERE pos % 4 = 1"),
                ("DELETE FROM t WHERE rowid % 7 = 2", "DELETE FROM n WHERE pos % 7 = 2"),
                ("UPDATE t SET kind = '' WHERE rowid < 40", "UPDATE n SET kind = '' WHERE pos < 40")):
            self.con.execute(t_sql)
            self.con.execute(n_sql)
            check("after " + t_sql)
        # a transaction's pending changes: a view over the snapshot, which
        # by_kind reads through t (by_y, over the file, reads the commits)
        self.con.execute("BEGIN")
        self.con.execute("UPDATE t SET kind = 'pending', y = NULL WHERE rowid % 6 = 3")
        self.con.execute("UPDATE n SET kind = 'pending', y = NULL WHERE pos % 6 = 3")
        self.con.execute("DELETE FROM t WHERE rowid % 11 = 4")
        self.con.execute("DELETE FROM n WHERE pos % 11 = 4")
        check("pending changes", ("by_kind",))
        self.con.execute("COMMIT")
        check("after COMMIT")

    def test_datasets(self):
        # A dataset (a directory of stores) as the SOURCE, and through a
        # colstore table over it: the same answers as native.
        ddir = self.path("ds")
        os.mkdir(ddir)
        cuts = [0, N_ROWS // 3, N_ROWS // 3 + 1, N_ROWS]
        for i, (a, b) in enumerate(zip(cuts, cuts[1:])):
            self.con.execute("SELECT colstore_create(?, 'SELECT %s FROM t WHERE rowid >= %d AND rowid < %d')"
                             % (", ".join(NAMES), a, b), (os.path.join(ddir, "p%02d.cst" % i),))
        self.con.execute("CREATE VIRTUAL TABLE temp.ds_kind USING colstore_agg(%r, kind)" % ddir)
        self.con.execute("CREATE VIRTUAL TABLE dst USING colstore(%r)" % ddir)
        self.con.execute("CREATE VIRTUAL TABLE temp.ds_tot USING colstore_agg(dst)")
        self.aggs.update({"ds_kind": ["kind"], "ds_tot": []})
        for agg in ("ds_kind", "ds_tot"):
            self.compare(agg)
            self.compare(agg, "f > 0 AND run IN (1, 7)")
        # duplicates in _rows count twice, across files
        blob = rows_blob([0, N_ROWS - 1, N_ROWS // 3, 5, 5])
        self.con.execute("CREATE TEMP TABLE dsel(ord INTEGER PRIMARY KEY, pos INTEGER)")
        self.con.executemany("INSERT INTO dsel(pos) VALUES (?)", [(0,), (N_ROWS - 1,), (N_ROWS // 3,), (5,), (5,)])
        for agg in ("ds_kind", "ds_tot"):
            self.compare(agg, "_rows = ?", (blob,), native_from="dsel JOIN n ON n.pos = dsel.pos", native_where="",
                         native_params=())

    # -- plans

    def test_plan_words_and_last_plan(self):
        plan = " ".join(r[3] for r in self.con.execute("EXPLAIN QUERY PLAN SELECT count FROM by_kind WHERE f > 0.5 AND _mask = ?",
                                                        (bytes(N_ROWS),)))
        self.assertIn("aggregate by(kind)", plan)
        self.assertIn("pred(f>?)", plan)
        self.assertIn("mask(_mask)", plan)
        self.con.execute("SELECT count FROM by_kind WHERE f > 0.5").fetchall()
        import json
        lp = json.loads(self.con.execute("SELECT colstore_last_plan()").fetchone()[0])
        self.assertEqual(lp["table"], "by_kind")
        self.assertTrue(lp["access"].startswith("aggregate"), lp)
        self.assertEqual(lp["rows_selected"], self.con.execute("SELECT count(*) FROM n WHERE f > 0.5").fetchone()[0])

    # -- errors

    def test_rejected_shapes_fail_loudly(self):
        con = self.con
        for sql in ("SELECT count FROM tot WHERE f > 0 OR i > 0",
                    "SELECT count FROM tot WHERE abs(f) > 1",
                    "SELECT count FROM tot WHERE f > i",
                    "SELECT count FROM tot WHERE s LIKE 'a%'",
                    "SELECT count FROM tot WHERE s GLOB 'a*'",
                    "SELECT count FROM by_kind WHERE f + 1 > 2",
                    "SELECT count FROM tot WHERE NOT (f > 0)",
                    "SELECT f FROM tot",
                    "SELECT count FROM tot WHERE f > 0 AND (f < 1 OR i = 2)"):
            self.assertSqlError(con, sql, contains=("tot" if "tot" in sql else "by_kind",))
        # a column read beside a condition the table took: `f < 2` holds for
        # the 1 a re-check reads, so this must fail, not drop the OR
        self.assertSqlError(con, "SELECT count FROM tot WHERE f > 0 AND (f < 2 OR i = 2)", contains=("reads i",))
        self.assertSqlError(con, "SELECT count FROM tot WHERE f > 0 AND (f < 2 OR f > 50)", contains=("reads f",))
        self.assertSqlError(con, "SELECT count FROM tot WHERE i = 1 OR i > 5", contains=("reads i",))
        self.assertSqlError(con, "SELECT kind, count FROM by_kind WHERE (i = 1 AND kind = 'beta') OR (i = 2 AND kind = 'gamma')",
                            contains=("reads i",))
        self.assertSqlError(con, "SELECT rowid, count FROM by_kind", contains=("rowid",))
        # _rows and _mask only as `= ?`, once
        self.assertSqlError(con, "SELECT _rows FROM tot")
        self.assertSqlError(con, "SELECT count FROM tot WHERE _rows = ? OR f > 0", (rows_blob([1]),))
        self.assertSqlError(con, "SELECT count FROM tot WHERE _rows = ?", (b"abc",), code="SQLITE_MISMATCH")
        self.assertSqlError(con, "SELECT count FROM tot WHERE _mask = ?", (b"\x01",), code="SQLITE_MISMATCH")
        self.assertSqlError(con, "SELECT count FROM tot WHERE _rows = ?", (rows_blob([N_ROWS]),), code="SQLITE_RANGE")

    def test_selection_inputs_refused_as_the_table_refuses_them(self):
        # One planner (colstore_plan.c) for both modules: a _rows/_mask term
        # that is not one `= ?` fails with the table's words, and one given
        # twice with the selection's, on the aggregate table as on its source.
        con, blob, mask = self.con, rows_blob([1, 2, 2]), b"\x01" * N_ROWS
        for table, count in (("tot", "count"), ("t", "count(*)")):
            for where, params in (("_rows IN (?, ?)", (blob, blob)), ("_rows IS ?", (blob,)), ("_mask > ?", (mask,))):
                with self.subTest(table=table, where=where):
                    self.assertSqlError(con, "SELECT %s FROM %s WHERE %s" % (count, table, where), params,
                                        contains=("_rows and _mask of", "select rows only as `_rows = ?`"))
            for where, params in (("_rows = ?1 AND _rows = ?1", (blob,)), ("_mask = ?1 AND _mask = ?1", (mask,))):
                with self.subTest(table=table, where=where):
                    self.assertSqlError(con, "SELECT %s FROM %s WHERE %s" % (count, table, where), params,
                                        contains=("given twice", table))

    def test_selection_input_past_the_32nd_condition(self):
        # Past constraint 31 SQLite cannot tell `_rows = ?` from `_rows IN
        # (?, ?)`, which it would walk BLOB by BLOB: the aggregate table gave
        # one row of counts per BLOB.  It refuses there, as it refuses a
        # column's `= ?` there; among the first 32 conditions it answers.
        con, blob, other = self.con, rows_blob([1, 2, 2, 7]), rows_blob([3, 4])
        pad = " AND ".join("j > %d" % (-10**9 - v) for v in range(34))
        for where, params in (("%s AND _rows IN (?, ?)" % pad, (blob, other)), ("%s AND _rows = ?" % pad, (blob,)),
                              ("%s AND _mask = ?" % pad, (b"\x01" * N_ROWS,))):
            with self.subTest(where=where[-20:]):
                self.assertSqlError(con, "SELECT count FROM tot WHERE " + where, params, contains=("32nd", "_"))
        con.execute("CREATE TEMP TABLE sel32(ord INTEGER PRIMARY KEY, pos INTEGER)")
        con.executemany("INSERT INTO sel32(pos) VALUES (?)", [(1,), (2,), (2,), (7,)])
        self.compare("tot", "_rows = ? AND " + pad, (blob,), native_from="sel32 JOIN n ON n.pos = sel32.pos",
                     native_where=pad, native_params=())

    def test_or_refused_whatever_the_data(self):
        # issue 20: `k = 5 OR v = 0` answered while k = 5 held for every
        # group SQLite checked (v never read) and failed on other data
        con = self.con
        for name, rows in (("all5", [(5, 0), (5, 1)] * 50), ("mixed", [(5, 0), (6, 1), (6, 0)] * 50)):
            con.execute("CREATE VIRTUAL TABLE %s USING colstore(%r, k INT32, v INT32)" % (name, self.path(name + ".cst")))
            con.executemany("INSERT INTO %s VALUES (?, ?)" % name, rows)
            con.execute("CREATE VIRTUAL TABLE temp.%s_k USING colstore_agg(%s, k)" % (name, name))
            for sql in ("SELECT k, count FROM %s_k WHERE k = 5 OR v = 0",
                        "SELECT k, count FROM %s_k WHERE v = 0 OR k = 5",
                        "SELECT count FROM %s_k WHERE k = 5 AND (v = 0 OR v > 3)"):
                self.assertSqlError(con, sql % name, contains=("reads v", "%s_k" % name, "v OP value"))
            self.assertEqual(con.execute("SELECT k, count FROM %s_k WHERE v = 0 OR v = 1 ORDER BY k" % name).fetchall(),
                             con.execute("SELECT k, count(*) FROM %s WHERE v = 0 OR v = 1 GROUP BY k ORDER BY k" % name)
                             .fetchall())

    def test_like_bounds_never_stand_for_the_like(self):
        # SQLite derives `f >= 'IN' AND f < 'in'` from a LIKE and drops the
        # LIKE once both are taken; an infinity's text ('Inf') is LIKE 'in%'
        con = self.con
        rows = [(float("inf"), 1), (float("-inf"), 2), (1.5, 1), (None, 2)]
        con.execute("CREATE VIRTUAL TABLE lk USING colstore(%r, f FLOAT64, k INT32)" % self.path("lk.cst"))
        con.executemany("INSERT INTO lk VALUES (?, ?)", rows)
        con.execute("CREATE TABLE nlk(f REAL, k INTEGER)")
        con.executemany("INSERT INTO nlk VALUES (?, ?)", rows)
        con.execute("CREATE VIRTUAL TABLE temp.lk_k USING colstore_agg(lk, k)")
        con.execute("CREATE VIRTUAL TABLE temp.lk_f USING colstore_agg(lk, f)")
        for like in ("f LIKE 'in%' ESCAPE '!'", "f LIKE 'in%'", "f GLOB 'I*'"):
            self.assertSqlError(con, "SELECT k, count FROM lk_k WHERE " + like, contains=("f",))
            self.assertEqual(sorted(con.execute("SELECT f, count FROM lk_f WHERE " + like).fetchall()),
                             sorted(con.execute("SELECT f, count(*) FROM nlk WHERE %s GROUP BY f" % like).fetchall()), like)

    def test_literals_of_every_class(self):
        # issue 20: each was refused; the affinity rules of a native column decide
        for where in ("y < x'01'", "y > x''", "y IN (?, x'7f41')", "y = 'a'", "y > 5", "y <= 'zzz'",
                      "f BETWEEN '0.0' AND ?", "k BETWEEN -107 AND '111.0'", "run >= '5'", "i > ' 7 '", "i = '0x10'",
                      "f < 'abc'", "f > 'abc'", "i IN ('3', 3.0, x'03', 'x')", "s < 5", "s > 1.5", "s = x'61'",
                      "b = '1'", "b > 'true'", "g <= '0.5'", "k BETWEEN NULL AND 0", "NULL < k", "5 > i",
                      "'a' <= s", "x'00' < y", "kind IN (1, 'beta', x'00')"):
            params = (b"\x01\x02",) if "y IN" in where else (10,) if "?" in where else ()
            for agg in ("tot", "by_kind", "by_y"):
                self.compare(agg, where, params, what="literal")

    def test_long_where_clauses(self):
        # more than 16 conditions (SQLite checks those past the 16th again
        # itself) and more than 32 (where it cannot tell IN from `=`)
        ne = " AND ".join("j != %d" % v for v in range(2000, 2033))
        self.compare("tot", ne + " AND j IN (1, 2, 3)")
        self.compare("by_kind", ne + " AND i > -100 AND f < 40 AND s IS NOT NULL AND j IN (?, ?, ?)", (1, 2, 3))
        # IN lists past SQLite's 32-bit masks: the first 32 are handed over
        # whole; past them SQLite cannot tell an IN list from `= ?`, which
        # is refused the same way every time, naming the limit
        ins = ["j IN (%s)" % ",".join(str(v) for v in range(-300 + 7 * d, 900)) for d in range(40)]
        self.compare("tot", " AND ".join(ins[:30]) + " AND " + ne)
        self.compare("by_kr", " AND ".join(ins[:31]) + " AND k IN (1, 2, 3, -1) AND f BETWEEN -50 AND 50")
        for agg in ("tot", "by_kind"):
            self.assertSqlError(self.con, "SELECT count FROM %s WHERE %s" % (agg, " AND ".join(ins)), contains=("32nd", "j"))
        self.compare("tot", " AND ".join("i > %d" % (-10**7 + v) for v in range(40)) + " AND g IS NOT NULL")
        # contradictory, past the 16th: no row matches; the table's one row
        # (count 0) either comes back or the query fails saying why
        bad = ne + " AND j = 1 AND j > 5"
        try:
            self.compare("tot", bad)
        except AssertionError as e:
            self.assertIn("contradict", str(e))

    def test_empty_source(self):
        con = self.con
        con.execute("CREATE VIRTUAL TABLE e USING colstore(%r, v INT32, s TEXT)" % self.path("e.cst"))
        con.execute("CREATE VIRTUAL TABLE temp.e_tot USING colstore_agg(e)")
        con.execute("CREATE VIRTUAL TABLE temp.e_s USING colstore_agg(e, s)")
        self.assertEqual(con.execute("SELECT count, sum_v, min_s FROM e_tot").fetchall(), [(0, None, None)])
        self.assertEqual(con.execute("SELECT count FROM e_tot WHERE v > 3 AND s = 'a'").fetchall(), [(0,)])
        self.assertEqual(con.execute("SELECT count FROM e_tot WHERE _rows = ?", (b"",)).fetchall(), [(0,)])
        self.assertEqual(con.execute("SELECT s, count FROM e_s").fetchall(), [])
        for pos in (1000, -1, 0):
            for sql in ("SELECT count FROM e_tot WHERE _rows = ?", "SELECT count FROM e_tot WHERE _rows = ? AND v = NULL",
                        "SELECT s, count FROM e_s WHERE _rows = ?"):
                self.assertSqlError(con, sql, (rows_blob([pos]),), code="SQLITE_RANGE", contains=(str(pos), "out of range"))
        self.assertSqlError(con, "SELECT count FROM e_tot WHERE _mask = ?", (b"\x01",), code="SQLITE_MISMATCH")
        self.assertEqual(con.execute("SELECT count FROM e_tot WHERE _mask = ?", (b"",)).fetchall(), [(0,)])

    def test_random_conditions(self):
        counts = RandomConditions(self, SEED + 2).run(N_RANDOM_CONDITIONS)
        self.assertGreater(counts["answered"], N_RANDOM_CONDITIONS // 2, counts)
        self.assertGreater(counts["refused_or"], 0, counts)
        self.assertGreater(counts["long"], 0, counts)

    def test_random_conditions_long_run(self):
        """COLSTORE_AGG_SECONDS of random conditions from COLSTORE_AGG_SEED."""
        seconds = float(os.environ.get("COLSTORE_AGG_SECONDS", "0"))
        if not seconds:
            self.skipTest("set COLSTORE_AGG_SECONDS (and COLSTORE_AGG_SEED)")
        seed = int(os.environ.get("COLSTORE_AGG_SEED", SEED + 2))
        counts = RandomConditions(self, seed).run(seconds=seconds)
        print("\nseed %d, %.0f s: %r" % (seed, seconds, counts), file=sys.stderr)

    def test_is_not_null_recheck_still_answers(self):
        self.compare("tot", "f IS NOT NULL")
        self.compare("by_kind", "s IS NOT NULL AND i IS NOT NULL")

    def test_create_errors(self):
        con = self.con
        self.assertSqlError(con, "CREATE VIRTUAL TABLE temp.bad USING colstore_agg(t, nosuch)", contains=("nosuch",))
        self.assertSqlError(con, "CREATE VIRTUAL TABLE temp.bad USING colstore_agg(t, kind, kind)", contains=("kind",))
        self.assertSqlError(con, "CREATE VIRTUAL TABLE temp.bad USING colstore_agg(%r)" % self.path("nope.cst"),
                            code="SQLITE_CANTOPEN", contains=("nope.cst",))
        con.execute("SELECT colstore_create(?, 'SELECT 1 AS a, 2 AS sum_a')", (self.path("clash.cst"),))
        msg = self.assertSqlError(con, "CREATE VIRTUAL TABLE temp.bad USING colstore_agg(%r)" % self.path("clash.cst"),
                                  contains=("sum_a",))
        self.assertIn("the sum of column a", msg)
        self.assertIn("the filter column sum_a", msg)

    def test_source_dropped_or_changed(self):
        con = self.con
        con.execute("CREATE VIRTUAL TABLE t3 USING colstore(%r)" % self.path("t.cst"))
        con.execute("CREATE VIRTUAL TABLE temp.a3 USING colstore_agg(t3, kind)")
        self.assertGreater(len(con.execute("SELECT * FROM a3").fetchall()), 0)
        con.execute("DROP TABLE t3")
        self.assertSqlError(con, "SELECT count FROM a3", contains=("t3", "DROP TABLE a3"))
        con.execute("DROP TABLE a3")

    def test_integer_overflow_is_an_error(self):
        con = self.con
        con.execute("CREATE VIRTUAL TABLE big USING colstore(%r, v INT64)" % self.path("big.cst"))
        con.execute("INSERT INTO big VALUES (9223372036854775807), (1)")
        con.execute("CREATE VIRTUAL TABLE temp.big_tot USING colstore_agg(big)")
        self.assertSqlError(con, "SELECT sum_v FROM big_tot", contains=("overflow", "sum_v"))
        self.assertEqual(con.execute("SELECT count, max_v FROM big_tot").fetchone(), (2, 9223372036854775807))
        con.execute("INSERT INTO big VALUES (-5)")
        self.assertEqual(con.execute("SELECT sum_v FROM big_tot").fetchone()[0], 9223372036854775803)


# -- the randomized conditions (test_random_conditions, RandomLong)

# Operands of every storage class: integers at the types' edges, reals,
# numeric text (which numeric affinity converts), other text, blobs, NULL.
INTS = [0, 1, -1, 2, 3, 7, 100, 127, 128, -128, -129, 1000, 32767, 32768, -1000, 2**31, 2**53 + 1, 2**63 - 1, -2**63]
REALS = [0.0, -0.0, 0.5, 1.5, -2.25, 3.0, 1e300, -1e300, 127.5, 0.1, float("inf"), float("-inf")]
NUM_TEXTS = ["0", "5", " 7 ", "1.5", "-0.0", "1e2", "3.0", "-2.25", "111.0", "0x10", "1e400", "+3"]
TEXTS = ["", "a", "ab", "b", "zeta", "Alpha", "a\x00b", "abc", "Inf", "-", "é"]
BLOBS = [b"", b"\x00", b"\x01", b"\x01\x02", b"\xff", b"\x7fA", b"a"]


class RandomConditions:
    """Draws WHERE clauses on the aggregate tables of an Agg test and checks
    each against the native GROUP BY.  Counts what it ran in self.counts."""

    def __init__(self, test, seed):
        self.t, self.seed, self.rnd = test, seed, random.Random(seed)
        self.counts = {"queries": 0, "answered": 0, "refused_or": 0, "contradiction": 0, "long": 0, "rows": 0,
                       "empty_source": 0, "proved_false": 0, "refused_other": 0,
                       "known_limit": 0}
        con = test.con
        con.execute("CREATE TABLE ne(pos INTEGER PRIMARY KEY, %s)" % ", ".join("%s %s" % (c, d) for c, _, d in COLUMNS))
        con.execute("CREATE VIRTUAL TABLE te USING colstore(%r, %s)" % (test.path("te.cst"), ", ".join("%s %s" % (c, ty) for c, ty, _ in COLUMNS)))
        con.execute("CREATE VIRTUAL TABLE temp.e_tot USING colstore_agg(te)")
        con.execute("CREATE VIRTUAL TABLE temp.e_kind USING colstore_agg(te, kind)")

    def value(self, col):
        rnd = self.rnd
        r = rnd.random()
        if r < 0.3:  # a value of the data
            v = self.t.data[rnd.randrange(N_ROWS)][1 + NAMES.index(col)]
            return None if isinstance(v, float) and math.isnan(v) else v
        return rnd.choice([rnd.choice(INTS), rnd.choice(REALS), rnd.choice(NUM_TEXTS), rnd.choice(TEXTS),
                           rnd.choice(BLOBS), None] + [rnd.choice(INTS)] * 2)

    def operand(self, col, params):
        """A literal, or a parameter appended to params (text holding NUL always)."""
        v = self.value(col)
        if self.rnd.random() < 0.5 or (isinstance(v, str) and "\x00" in v):
            params.append(v)
            return "?"
        return cstest.sql_literal(v)

    def condition(self, col, params):
        rnd = self.rnd
        r = rnd.random()
        if r < 0.08:
            return "%s IS %sNULL" % (col, rnd.choice(["", "NOT "]))
        if r < 0.22:
            members = [self.operand(col, params) for _ in range(rnd.randint(1, 5))]
            return "%s %sIN (%s)" % (col, "", ", ".join(members))
        if r < 0.32:
            return "%s BETWEEN %s AND %s" % (col, self.operand(col, params), self.operand(col, params))
        op = rnd.choice(["=", "!=", "<", "<=", ">", ">=", "IS", "IS NOT", "<>", "=="])
        rhs = self.operand(col, params)
        if rnd.random() < 0.2 and op not in ("IS", "IS NOT"):
            flip = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}.get(op, op)
            return "%s %s %s" % (rhs, flip, col)
        return "%s %s %s" % (col, op, rhs)

    def or_term(self, params):
        """(text, the columns it reads, or None when SQLite makes it an IN)."""
        rnd = self.rnd
        if rnd.random() < 0.3:  # one column, `=` only: SQLite makes it an IN
            col = rnd.choice(NAMES)
            return "(%s)" % " OR ".join("%s = %s" % (col, self.operand(col, params)) for _ in range(rnd.randint(2, 3))), None
        cols = [rnd.choice(NAMES) for _ in range(rnd.randint(2, 3))]
        if rnd.random() < 0.3:
            cols = [cols[0]] * len(cols)
        branches = [self.condition(c, params) for c in cols]
        # SQLite itself makes an OR of `=` on one column an IN list (an IN
        # of one member is an `=`; an OR of longer IN lists stays an OR)
        def eq(b, c):
            one_in = b.startswith("%s IN (" % c) and "," not in b
            return one_in or b.startswith(("%s = " % c, "%s == " % c)) or b.endswith((" = " + c, " == " + c))

        if len(set(cols)) == 1 and all(eq(b, cols[0]) for b in branches):
            cols = None
        return "(%s)" % " OR ".join(branches), cols

    def where(self, agg):
        """(conditions, params, refuse, long): refuse is "plan" when the
        query must fail whatever the data (an OR reads a filter column with
        no condition outside it), "maybe" when it may fail only as the OR
        is evaluated (its filter columns have conditions the table took:
        then a row that needs the OR fails, and a query that needs none
        answers), else None."""
        rnd = self.rnd
        self.foreign = set()
        params, conds, refuse, used = [], [], None, set()
        cols = FILTERED[agg] + self.t.aggs[agg]
        long = rnd.random() < 0.15
        n = rnd.randint(33, 45) if long else rnd.randint(0, 5)
        hot = rnd.sample(cols, min(len(cols), 3))  # long clauses pile onto a few columns
        for _ in range(n):
            col = rnd.choice(hot) if long else rnd.choice(cols)
            used.add(col)
            conds.append(self.condition(col, params))
        if rnd.random() < 0.12:
            text, or_cols = self.or_term(params)
            conds.insert(rnd.randrange(len(conds) + 1), text)
            filters = [c for c in (or_cols or []) if c in FILTERED[agg]]
            refuse = "plan" if any(c not in used for c in filters) else "maybe" if filters else None
            self.foreign = set(filters)
        elif rnd.random() < 0.08:
            # what SQLite cannot hand over: LIKE, GLOB, NOT, a function, two
            # columns; on a key SQLite checks it on the groups (answered)
            col, other = rnd.choice(NAMES), rnd.choice(NAMES)
            shape = rnd.choice(["{c} LIKE 'a%'", "{c} LIKE '1%'", "{c} GLOB 'I*'", "NOT ({c} > 0)", "abs({c}) > 1",
                                "{c} + 1 > 2", "{c} > {o}", "{c} LIKE 'in%' ESCAPE '!'"])
            conds.insert(rnd.randrange(len(conds) + 1), shape.format(c=col, o=other))
            reads = [c for c in ([col, other] if "{o}" in shape else [col]) if c in FILTERED[agg]]
            # beside a condition on the column SQLite may never read it
            # (`j + 1 > 2 AND j = 2` is `3 > 2` to its constant propagation)
            # and `k > b AND b = 0` is `k > 0`, a condition it hands over
            must = any(c not in used for c in reads) and "{o}" not in shape
            refuse = "any" if must else "maybe_any" if reads else None
            self.foreign = set(reads)
        # the known limit (docs/sql.md): a column SQLite checks again (IS
        # NOT NULL, or past the 16th condition) reads as a witness, and a
        # read of it by an OR, NOT or function cannot be told from that
        rechecked = {c for c in used if any(x.startswith(c + " IS NOT NULL") for x in conds)} | (used if long else set())
        self.limit = bool(self.foreign & rechecked)
        return conds, params, refuse, long

    def one(self, q):
        rnd, t = self.rnd, self.t
        self.counts["queries"] += 1
        if rnd.random() < 0.05:
            return self.empty_source(q)
        agg = rnd.choice(list(t.aggs))
        conds, params, refuse, long = self.where(agg)
        self.counts["long"] += long
        where = " AND ".join(conds)
        what = "seed %d query %d" % (self.seed, q)
        native_from, native_where, native_params = "n", None, None
        if rnd.random() < 0.12:
            pos = [rnd.randrange(-N_ROWS, N_ROWS) for _ in range(rnd.randint(0, 40))]
            self.counts["rows"] += 1
            t.con.execute("DROP TABLE IF EXISTS temp.rsel")
            t.con.execute("CREATE TEMP TABLE rsel(ord INTEGER PRIMARY KEY, pos INTEGER)")
            t.con.executemany("INSERT INTO rsel(pos) VALUES (?)", [(p % N_ROWS,) for p in pos])
            where = "_rows = ?" + (" AND " + where if where else "")
            native_from = "rsel JOIN n ON n.pos = rsel.pos"
            native_where = where.replace("_rows = ?", "1")
            native_params = tuple(params)
            params = [rows_blob(pos)] + params
        if refuse in ("plan", "any"):
            # refused at xFilter, so whatever the data; only a WHERE that
            # SQLite proves false itself never runs the table (documented)
            sql = "SELECT count FROM %s WHERE %s" % (agg, where)
            try:
                got = t.con.execute(sql, tuple(params)).fetchall()
            except sqlite3.Error as e:
                t.assertIn("colstore: the query reads" if refuse == "plan" else "colstore: ", str(e), "%s: %s" % (what, sql))
                self.counts["refused_or" if refuse == "plan" else "refused_other"] += 1
                return
            t.assertEqual(got, [], "%s: answered %r, expected a refusal: %s %r" % (what, got, sql, params))
            self.counts["proved_false"] += 1
            return
        try:
            t.compare(agg, where, tuple(params), native_from=native_from, native_where=native_where, what=what,
                      native_params=native_params)
            self.counts["answered"] += 1
        except AssertionError as e:
            if self.limit and "failed: colstore: " not in str(e):
                self.counts["known_limit"] += 1
                return
            if (refuse == "maybe" and "colstore: the query reads" in str(e)) or \
                    (refuse == "maybe_any" and "failed: colstore: " in str(e)):
                self.counts["refused_or"] += 1
                return
            # the one refusal the docs name for a WHERE the table can take:
            # conditions past the 16th that contradict each other (no row
            # matches) on a table without keys
            if "contradict" in str(e) and not t.aggs[agg]:
                want = t.con.execute("SELECT count(*) FROM %s WHERE %s" % (native_from, native_where or where),
                                     native_params if native_params is not None else tuple(params)).fetchone()[0]
                t.assertEqual(want, 0, "%s: refused as contradictory, but %d rows match" % (what, want))
                self.counts["contradiction"] += 1
                return
            raise

    def empty_source(self, q):
        t, rnd = self.t, self.rnd
        self.counts["empty_source"] += 1
        agg = rnd.choice(["e_tot", "e_kind"])
        params = []
        conds = [self.condition(rnd.choice(NAMES), params) for _ in range(rnd.randint(0, 3))]
        where = " AND ".join(conds)
        what = "seed %d query %d (empty source) %s %r" % (self.seed, q, where, params)
        if rnd.random() < 0.4:
            pos = [rnd.choice([0, 1, -1, 1000])] if rnd.random() < 0.7 else []
            sql = "SELECT count FROM %s WHERE _rows = ?%s" % (agg, " AND " + where if where else "")
            if pos:
                try:
                    got = t.con.execute(sql, tuple([rows_blob(pos)] + params)).fetchall()
                except sqlite3.Error as e:
                    t.assertEqual(getattr(e, "sqlite_errorname", None), "SQLITE_RANGE", "%s: %s" % (what, e))
                    return
                # only a WHERE that SQLite proves false never runs the table
                t.assertTrue(got == [] and where, "%s: _rows %r answered %r" % (what, pos, got))
                self.counts["proved_false"] += 1
                return
            got = t.con.execute(sql, tuple([b""] + params)).fetchall()
        else:
            got = t.con.execute("SELECT count FROM %s%s" % (agg, " WHERE " + where if where else ""), tuple(params)).fetchall()
        want = t.con.execute("SELECT count(*) FROM ne%s%s" % (" WHERE " + where if where else "",
                                                               " GROUP BY kind" if agg == "e_kind" else ""),
                             tuple(params)).fetchall()
        if got == [] and want == [(0,)]:
            return  # SQLite proved the WHERE false (documented)
        t.assertEqual(got, want, what)

    def run(self, n_queries=None, seconds=None):
        import time
        end = time.time() + seconds if seconds else None
        q = 0
        while (n_queries is None or q < n_queries) and (end is None or time.time() < end):
            self.one(q)
            q += 1
        return self.counts


if __name__ == "__main__":
    cstest.main()
