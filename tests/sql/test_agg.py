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
operator the table cannot take, more than 16 conditions, reading a filter
column) must each fail with a `colstore:` error naming the column.
"""
import math
import os
import random
import struct
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402

SEED = 20261201
N_ROWS = cstest.scaled(5000, 1500)
N_RANDOM = cstest.scaled(250, 60)

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
        self.aggs = {"tot": [], "by_kind": ["kind"], "by_kr": ["kind", "run"], "by_i": ["k"], "by_f": ["f"],
                     "by_s": ["s", "b"], "by_y": ["y"]}
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
                if col == "y" and agg != "by_y":
                    continue  # BLOB comparisons cannot be taken (test_rejected_shapes_fail_loudly)
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
        # dictionary codes cached on the snapshot (cs_agg_codes.c), built by
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
        self.assertSqlError(con, "SELECT count FROM tot WHERE y = x'00'", contains=("y",))
        # more than 16 conditions
        conds = " AND ".join("j != %d" % v for v in range(17))
        self.assertSqlError(con, "SELECT count FROM tot WHERE " + conds, contains=("16",))
        conds16 = " AND ".join("j != %d" % v for v in range(16))
        self.compare("tot", conds16)
        # _rows and _mask only as `= ?`, once
        self.assertSqlError(con, "SELECT _rows FROM tot")
        self.assertSqlError(con, "SELECT count FROM tot WHERE _rows = ? OR f > 0", (rows_blob([1]),))
        self.assertSqlError(con, "SELECT count FROM tot WHERE _rows = ?", (b"abc",), code="SQLITE_MISMATCH")
        self.assertSqlError(con, "SELECT count FROM tot WHERE _mask = ?", (b"\x01",), code="SQLITE_MISMATCH")
        self.assertSqlError(con, "SELECT count FROM tot WHERE _rows = ?", (rows_blob([N_ROWS]),), code="SQLITE_RANGE")

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


if __name__ == "__main__":
    cstest.main()
