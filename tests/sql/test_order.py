#!/usr/bin/python3
"""Ordered, grouped and de-duplicated delivery: ORDER BY, GROUP BY and
DISTINCT taken by colstore give exactly the native answer.

colstore takes ORDER BY on columns (any mix of ASC and DESC, with LIMIT and
OFFSET), GROUP BY and DISTINCT when SQLite offers them (aOrderBy and
sqlite3_vtab_distinct), sorting the selected positions in core
(cs_order_rows) and delivering them as a list.  Each shape runs against a
native mirror holding the same rows, with every selection colstore takes
beside it (predicates, rowid ranges and IN lists, _rows, _mask), and the
plan is checked too: what colstore takes shows in its words and leaves no
`USE TEMP B-TREE` line; what it declines (another collation, NULLS LAST,
expressions, the rowid among other keys) leaves SQLite's sorter in place
and still answers right.

Ties: SQL leaves the order of rows with equal keys open, and SQLite's
sorter and colstore's stable sort may differ there, so every exact
comparison ends the ORDER BY with `u`, a unique column; the tie order is
checked separately (colstore keeps ties in row order, whatever SQLite
would have done).  GROUP BY compares whole groups in key order, with
aggregates whose value does not depend on the order within a group.

The randomized part draws its shapes from a fixed seed, printed with any
failure.
"""
import json
import os
import random
import struct
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402

SEED = 20261202
N_ROWS = cstest.scaled(4000, 1500)
N_RANDOM = cstest.scaled(300, 80)


def rows_blob(positions):
    return struct.pack("<%dq" % len(positions), *positions)


class Order(cstest.StoreTest):
    def setUp(self):
        super().setUp()
        rnd = random.Random(SEED)
        con = self.con = self.connect()
        con.execute("CREATE TABLE n(pos INTEGER PRIMARY KEY, u INTEGER, i INTEGER, j INTEGER, f REAL, s TEXT)")
        words = [None, "", "a", "ab", "abc", "b", "B", "zz", "10", "a\x00b"]
        floats = [None, 0.0, -0.0, 1.5, -1.5, 2.0, 1e300, -1e-300]
        data = []
        for k in range(N_ROWS):
            data.append((k, k, rnd.choice([None, rnd.randint(-3, 9)]), rnd.randint(-10**12, 10**12),
                         rnd.choice(floats + [rnd.uniform(-5, 5)]), rnd.choice(words)))
        con.executemany("INSERT INTO n VALUES (?,?,?,?,?,?)", data)
        con.execute("CREATE VIRTUAL TABLE t USING colstore(%r, u INT64 NOT NULL, i INT32, j INT64 NOT NULL, "
                    "f FLOAT64, s TEXT)" % self.path("t.cst"))
        third = N_ROWS // 3
        for a, b in ((0, third), (third, 2 * third), (2 * third, N_ROWS)):
            con.execute("INSERT INTO t SELECT u, i, j, f, s FROM n WHERE pos >= ? AND pos < ? ORDER BY pos", (a, b))
        self.pos = [rnd.randrange(N_ROWS) for _ in range(200)] + [5, 5, 7]
        rnd.shuffle(self.pos)
        con.execute("CREATE TABLE sel(ord INTEGER PRIMARY KEY, pos INTEGER)")
        con.executemany("INSERT INTO sel VALUES (?,?)", list(enumerate(self.pos)))
        self.mask = bytes(1 if rnd.random() < 0.4 else 0 for _ in range(N_ROWS))
        con.execute("CREATE TABLE msk(pos INTEGER PRIMARY KEY)")
        con.executemany("INSERT INTO msk VALUES (?)", [(p,) for p, m in enumerate(self.mask) if m])

    # -- helpers

    def plan(self, sql, params=()):
        return " / ".join(r[3] for r in self.con.execute("EXPLAIN QUERY PLAN " + sql, params))

    def check(self, got_sql, want_sql, params=(), ordered=True, taken=None, what=""):
        got = cstest.canon_rows(self.con.execute(got_sql, params).fetchall(), ordered)
        want = cstest.canon_rows(self.con.execute(want_sql).fetchall(), ordered)
        plan = self.plan(got_sql, params)
        ctx = "%s\n  colstore: %s\n  native:   %s\n  plan: %s" % (what, got_sql, want_sql, plan)
        self.assertEqual(len(got), len(want), ctx)
        if got != want:  # the first difference, not a diff of thousands of rows
            k = next(k for k in range(len(got)) if got[k] != want[k])
            self.fail("%s\n  row %d: colstore %r, native %r" % (ctx, k, got[k], want[k]))
        if taken is not None:
            self.assertIn(taken, plan, ctx)
            self.assertNotIn("TEMP B-TREE", plan, ctx)
        return plan

    # -- fixed shapes

    def test_order_by_each_column_both_ways_with_limit_offset(self):
        for col in ("i", "j", "f", "s"):
            for d in ("", " DESC"):
                for tail in ("", " LIMIT 10", " LIMIT 25 OFFSET 100", " LIMIT 0", " LIMIT -1 OFFSET 3990"):
                    self.check("SELECT u, i, j, f, s FROM t ORDER BY %s%s, u%s" % (col, d, tail),
                               "SELECT u, i, j, f, s FROM n ORDER BY %s%s, u%s" % (col, d, tail), taken="order(")

    def test_ties_keep_row_order(self):
        # colstore's promise beyond SQL's: equal keys come in row order
        for col, d in (("i", ""), ("i", " DESC"), ("s", ""), ("f", " DESC")):
            got = [r[0] for r in self.con.execute("SELECT u FROM t ORDER BY %s%s" % (col, d))]
            want = [r[0] for r in self.con.execute("SELECT u FROM n ORDER BY %s%s, u" % (col, d))]
            self.assertEqual(got, want, "ORDER BY %s%s" % (col, d))

    def test_zero_and_negative_zero_and_nulls(self):
        # -0.0 = 0.0 (ties, one group), NULL first ascending, last descending
        self.check("SELECT f, u FROM t ORDER BY f, u", "SELECT f, u FROM n ORDER BY f, u", taken="order(f,u)")
        self.check("SELECT f, u FROM t ORDER BY f DESC, u", "SELECT f, u FROM n ORDER BY f DESC, u", taken="order(")
        self.check("SELECT f, count(*) FROM t GROUP BY f", "SELECT f, count(*) FROM n GROUP BY f", taken="group(f)")

    def test_group_by_matches_native_in_key_order(self):
        for keys in ("i", "s", "i, s", "f", "j", "s, i, f"):
            for where in ("", " WHERE i > 2", " WHERE rowid BETWEEN 100 AND 2000", " WHERE s IN ('a', 'b', 'zz')"):
                self.check("SELECT %s, count(*), sum(j), min(u), max(s) FROM t%s GROUP BY %s" % (keys, where, keys),
                           "SELECT %s, count(*), sum(j), min(u), max(s) FROM n%s GROUP BY %s"
                           % (keys, where.replace("rowid", "pos"), keys), taken="group(")

    def test_group_by_with_order_by_descending(self):
        # SQLite hands GROUP BY x ORDER BY x DESC over as one descending key
        # (found by fuzz_sql: the groups came ascending)
        for keys, ob in (("f", "f DESC"), ("i", "i DESC"), ("i, s", "i DESC, s DESC"), ("s", "s")):
            self.check("SELECT %s, count(*) FROM t GROUP BY %s ORDER BY %s" % (keys, keys, ob),
                       "SELECT %s, count(*) FROM n GROUP BY %s ORDER BY %s" % (keys, keys, ob), taken="group(")

    def test_distinct(self):
        for keys in ("i", "s", "i, s"):
            # DISTINCT with ORDER BY: sorted here; SQLite drops the repeats
            self.check("SELECT DISTINCT %s FROM t ORDER BY %s" % (keys, keys),
                       "SELECT DISTINCT %s FROM n ORDER BY %s" % (keys, keys))
            self.check("SELECT DISTINCT %s FROM t" % keys, "SELECT DISTINCT %s FROM n" % keys, ordered=False)
            self.check("SELECT DISTINCT %s FROM t WHERE rowid %% 7 = 0" % keys,
                       "SELECT DISTINCT %s FROM n WHERE pos %% 7 = 0" % keys, ordered=False)
            self.check("SELECT DISTINCT %s FROM t WHERE j > 0 AND i < 5" % keys,
                       "SELECT DISTINCT %s FROM n WHERE j > 0 AND i < 5" % keys, ordered=False)
        self.check("SELECT count(DISTINCT i) FROM t", "SELECT count(DISTINCT i) FROM n")

    def test_distinct_then_a_rowid_condition(self):
        # SQLite 3.40 asks for DISTINCT even when a condition on the rowid
        # comes after colstore; one row kept per group could be the one the
        # condition rejects, so at the first xRowid colstore delivers every
        # remaining row.  Conditions seen before it read only the DISTINCT
        # column, so they judged every row of a group alike.
        blob = rows_blob(self.pos)
        for keys, cond, ncond in (
                ("i", "rowid % 7 = 0", "pos % 7 = 0"),
                ("i", "i > 3 OR rowid % 5 = 0", "i > 3 OR pos % 5 = 0"),
                ("s", "rowid > 3990 OR s IS NULL", "pos > 3990 OR s IS NULL"),
                ("i, s", "rowid % 2 = 1 AND i < 6", "pos % 2 = 1 AND i < 6"),
                ("i", "rowid = 17", "pos = 17"),
                ("i", "rowid % 11 = 3 AND rowid > 2000", "pos % 11 = 3 AND pos > 2000")):
            self.check("SELECT DISTINCT %s FROM t WHERE %s" % (keys, cond),
                       "SELECT DISTINCT %s FROM n WHERE %s" % (keys, ncond), ordered=False)
            self.check("SELECT DISTINCT %s FROM t WHERE %s ORDER BY %s" % (keys, cond, keys),
                       "SELECT DISTINCT %s FROM n WHERE %s ORDER BY %s" % (keys, ncond, keys))
        self.check("SELECT DISTINCT i FROM t WHERE _rows = ? AND rowid % 3 = 0",
                   "SELECT DISTINCT n.i FROM sel JOIN n USING (pos) WHERE n.pos % 3 = 0", (blob,), ordered=False)
        self.check("SELECT DISTINCT i FROM t WHERE f > 0 AND rowid % 3 = 0",
                   "SELECT DISTINCT i FROM n WHERE f > 0 AND pos % 3 = 0", ordered=False)
        # no rowid read: de-duplicated here, one row per value
        plan = self.plan("SELECT DISTINCT i FROM t")
        self.assertIn("distinct(i)", plan)
        self.check("SELECT DISTINCT i FROM t", "SELECT DISTINCT i FROM n", ordered=False)
        info = self.con.execute("SELECT colstore_last_plan()").fetchone()[0]
        self.assertIn('"kernels":"order keys, distinct', info)
        self.assertIn('"rows_selected":%d' % self.con.execute("SELECT count(DISTINCT coalesce(i, -99)) FROM n").fetchone()[0],
                      info)

    def test_with_every_selection(self):
        blob = rows_blob(self.pos)
        self.check("SELECT u, i, s FROM t WHERE _rows = ? ORDER BY s DESC, i, u",
                   "SELECT n.u, n.i, n.s FROM sel JOIN n USING (pos) ORDER BY n.s DESC, n.i, n.u, sel.ord",
                   (blob,), taken="order(")
        self.check("SELECT i, count(*) FROM t WHERE _rows = ? GROUP BY i",
                   "SELECT n.i, count(*) FROM sel JOIN n USING (pos) GROUP BY n.i", (blob,), taken="group(")
        self.check("SELECT u, f FROM t WHERE _mask = ? ORDER BY f, u LIMIT 30",
                   "SELECT u, f FROM n JOIN msk USING (pos) ORDER BY f, u LIMIT 30", (self.mask,), taken="order(")
        self.check("SELECT u, j FROM t WHERE rowid IN (3, 99, 1000, 5, 2) ORDER BY j DESC",
                   "SELECT u, j FROM n WHERE pos IN (3, 99, 1000, 5, 2) ORDER BY j DESC", taken="order(")
        self.check("SELECT u, j FROM t WHERE i IN (1, 2) AND f > 0 ORDER BY j LIMIT 7 OFFSET 2",
                   "SELECT u, j FROM n WHERE i IN (1, 2) AND f > 0 ORDER BY j LIMIT 7 OFFSET 2", taken="order(j)")
        self.check("SELECT u FROM t WHERE rowid > 3000 ORDER BY s, u", "SELECT u FROM n WHERE pos > 3000 ORDER BY s, u",
                   taken="order(")

    def test_declined_shapes_still_answer(self):
        for tail in ("s COLLATE NOCASE, u", "f NULLS LAST, u", "i + 0, u", "rowid, i", "f DESC NULLS FIRST, u",
                     "substr(s, 2), u"):
            plan = self.check("SELECT u, s FROM t ORDER BY %s" % tail,
                              "SELECT u, s FROM n ORDER BY %s" % tail.replace("rowid", "pos"))
            self.assertIn("TEMP B-TREE", plan, tail)

    def test_limit_sqlite_applies_after_a_condition_it_keeps(self):
        # `j < i * 1000000` compares two columns: SQLite filters after
        # colstore, so the first LIMIT rows in order are not enough and the
        # cursor orders the rest when SQLite asks for more
        for lim in (1, 5, 60):
            plan = self.check("SELECT u, j FROM t WHERE j < i * 1000000 ORDER BY j DESC, u LIMIT %d" % lim,
                              "SELECT u, j FROM n WHERE j < i * 1000000 ORDER BY j DESC, u LIMIT %d" % lim)
            self.assertIn("order(j DESC,u)", plan)
        info = self.con.execute("SELECT colstore_last_plan()").fetchone()[0]
        self.assertIn("top-k", info)

    def test_correlated_and_joined(self):
        self.check("SELECT m.u, (SELECT x.u FROM t x WHERE x.i = m.i ORDER BY x.j DESC LIMIT 1) FROM t m "
                   "WHERE m.rowid < 40",
                   "SELECT m.u, (SELECT x.u FROM n x WHERE x.i = m.i ORDER BY x.j DESC LIMIT 1) FROM n m "
                   "WHERE m.pos < 40")
        self.check("SELECT a.u, b.u FROM t a JOIN t b ON a.i = b.i WHERE a.rowid < 10 ORDER BY a.u, b.j, b.u",
                   "SELECT a.u, b.u FROM n a JOIN n b ON a.i = b.i WHERE a.pos < 10 ORDER BY a.u, b.j, b.u")

    # -- randomized

    def test_random_shapes(self):
        rnd = random.Random(SEED + 1)
        cols = ["i", "j", "f", "s"]
        wheres = ["", "i > 3", "f < 1", "s >= 'ab'", "i IS NULL", "j BETWEEN 0 AND 500000000000",
                  "rowid BETWEEN 500 AND 2500", "i IN (0, 2, 4, 8)", "s = 'a' AND f IS NOT NULL"]
        for q in range(N_RANDOM):
            keys = rnd.sample(cols, rnd.randint(1, 3))
            where = rnd.choice(wheres)
            w_t = (" WHERE " + where) if where else ""
            w_n = w_t.replace("rowid", "pos")
            kind = rnd.choice(["order", "order", "group", "distinct"])
            what = "seed %d query %d" % (SEED + 1, q)
            if kind == "order":
                ob = ", ".join(k + rnd.choice(["", " DESC"]) for k in keys) + ", u"
                tail = rnd.choice(["", " LIMIT %d" % rnd.randint(0, 50),
                                   " LIMIT %d OFFSET %d" % (rnd.randint(1, 20), rnd.randint(0, 2000))])
                self.check("SELECT u, %s FROM t%s ORDER BY %s%s" % (", ".join(keys), w_t, ob, tail),
                           "SELECT u, %s FROM n%s ORDER BY %s%s" % (", ".join(keys), w_n, ob, tail),
                           taken="order(", what=what)
            elif kind == "group":
                k = ", ".join(keys)
                self.check("SELECT %s, count(*), min(u), max(j) FROM t%s GROUP BY %s" % (k, w_t, k),
                           "SELECT %s, count(*), min(u), max(j) FROM n%s GROUP BY %s" % (k, w_n, k),
                           taken="group(", what=what)
            else:
                k = ", ".join(keys)
                self.check("SELECT DISTINCT %s FROM t%s ORDER BY %s" % (k, w_t, k),
                           "SELECT DISTINCT %s FROM n%s ORDER BY %s" % (k, w_n, k), what=what)


class ScatterDelivery(cstest.StoreTest):
    """GROUP BY and ORDER BY over a key of many codes are delivered by
    scatter (colstore_config('scatter_bytes') on, the default) and must be
    exactly what the gather through sorted positions delivered
    (scatter_bytes 0): the same rows in the same order, within groups too,
    which order-sensitive SQL shows (group_concat, a bare column taking the
    group's last row, rowids, full rows ORDER BY the key alone), with every
    selection colstore takes and deleted rows among them; and the
    order-insensitive answers equal native SQLite's."""

    def setUp(self):
        super().setUp()
        rnd = random.Random(SEED + 7)
        con = self.con = self.connect()
        self.default_scatter = con.execute("SELECT colstore_config('scatter_bytes')").fetchone()[0]
        con.execute("CREATE TABLE n(pos INTEGER PRIMARY KEY, u INTEGER, k INTEGER, g INTEGER, a REAL, s TEXT)")
        words = [None, "", "a", "ab", "b", "zz"]
        data = [(p, p, rnd.choice([None] + list(range(1000)) * 20), rnd.randrange(10),
                 rnd.choice([None, rnd.random()]), rnd.choice(words)) for p in range(N_ROWS)]
        con.executemany("INSERT INTO n VALUES (?,?,?,?,?,?)", data)
        con.execute("CREATE VIRTUAL TABLE t USING colstore(%r, u INT64 NOT NULL, k INT32, g INT16 NOT NULL, "
                    "a FLOAT64, s TEXT)" % self.path("t.cst"))
        third = N_ROWS // 3
        for lo, hi in ((0, third), (third, 2 * third), (2 * third, N_ROWS)):
            con.execute("INSERT INTO t SELECT u, k, g, a, s FROM n WHERE pos >= ? AND pos < ? ORDER BY pos", (lo, hi))
        # u: the same rows without deletions (a range is then counted with
        # no positions written)
        con.execute("CREATE VIRTUAL TABLE u USING colstore(%r, u INT64 NOT NULL, k INT32, g INT16 NOT NULL, "
                    "a FLOAT64, s TEXT)" % self.path("u.cst"))
        con.execute("INSERT INTO u SELECT u, k, g, a, s FROM n ORDER BY pos")
        for tab in ("t", "n"):
            con.execute("DELETE FROM %s WHERE u %% 13 = 5 OR (u > 1000 AND u < 1100)" % tab)
        self.pos = sorted(rnd.randrange(N_ROWS) for _ in range(600)) + [7, 7, 7]
        self.pos.sort()
        self.shuffled = self.pos[:]
        rnd.shuffle(self.shuffled)
        self.mask = bytes(1 if rnd.random() < 0.5 else 0 for _ in range(N_ROWS))

    def tearDown(self):
        self.con.execute("SELECT colstore_config('scatter_bytes', ?)", (self.default_scatter,)).fetchall()
        super().tearDown()

    def deliveries(self, sql, params=()):
        got = {}
        for name, v in (("gather", 0), ("scatter", self.default_scatter)):
            self.con.execute("SELECT colstore_config('scatter_bytes', ?)", (v,)).fetchall()
            got[name] = self.con.execute(sql, params).fetchall()
            got[name + " kernels"] = json.loads(self.con.execute("SELECT colstore_last_plan()").fetchone()[0])["kernels"]
        return got

    def test_scatter_delivers_exactly_what_the_gather_did(self):
        selections = [("", ()), (" WHERE a > 0.3", ()), (" WHERE rowid BETWEEN 200 AND 3500", ()),
                      (" WHERE rowid IN (1, 5, 9, 100, 2000, 3999, 5)", ()), (" WHERE k IN (3, 500, 999, 7)", ()),
                      (" WHERE _rows = ?", (rows_blob(self.pos),)), (" WHERE _mask = ? AND g < 6", (self.mask,)),
                      (" WHERE _rows = ?", (rows_blob(self.shuffled),)), (" WHERE s >= 'ab' AND rowid < 3000", ())]
        shapes = ["SELECT k, count(*), group_concat(u), sum(a) FROM t{w} GROUP BY k",
                  "SELECT k, u, s, a FROM t{w} GROUP BY k",
                  "SELECT s, k, count(*), group_concat(u) FROM t{w} GROUP BY k, s",
                  "SELECT k, g, group_concat(rowid), max(s) FROM t{w} GROUP BY k, g",
                  "SELECT g, k, count(*), group_concat(u) FROM t{w} GROUP BY g, k ORDER BY g DESC, k DESC",
                  "SELECT rowid, u, k, s FROM t{w} ORDER BY k",
                  "SELECT rowid, u, k, a FROM t{w} ORDER BY k DESC, g",
                  "SELECT k, count(*) FROM t{w} GROUP BY k LIMIT 5 OFFSET 3"]
        scattered = 0
        for where, params in selections:
            for shape in shapes + [sh.replace("FROM t", "FROM u") for sh in shapes]:
                sql = shape.format(w=where)
                got = self.deliveries(sql, params)
                self.assertEqual(got["scatter"], got["gather"], sql)
                scattered += "scatter" in got["scatter kernels"]
                self.assertNotIn("scatter", got["gather kernels"], sql)
        # everything but the unsorted _rows list
        self.assertEqual(scattered, 2 * len(shapes) * (len(selections) - 1), "not scattered where expected")

    def test_scatter_answers_match_native(self):
        for where in ("", " WHERE a > 0.5", " WHERE rowid BETWEEN 10 AND 3000", " WHERE k < 300 AND g IN (1, 2, 3)"):
            sql = "SELECT k, count(*), sum(u), min(s), max(a) FROM t%s GROUP BY k" % where
            got = self.con.execute(sql).fetchall()
            self.assertIn("scatter", json.loads(self.con.execute("SELECT colstore_last_plan()").fetchone()[0])["kernels"])
            want = self.con.execute(sql.replace("FROM t", "FROM n").replace("rowid", "pos")).fetchall()
            self.assertEqual(cstest.canon_rows(got, True), cstest.canon_rows(want, True), sql)

    def test_few_codes_and_limits_keep_the_gather(self):
        for sql in ("SELECT g, count(*) FROM t GROUP BY g", "SELECT u FROM t ORDER BY k LIMIT 10",
                    "SELECT DISTINCT k FROM t"):
            self.con.execute(sql).fetchall()
            self.assertNotIn("scatter", json.loads(self.con.execute("SELECT colstore_last_plan()").fetchone()[0])["kernels"], sql)
        # a budget too small for the selection's buffers keeps the gather too
        self.con.execute("SELECT colstore_config('scatter_bytes', 1000)").fetchall()
        self.con.execute("SELECT k, count(*) FROM t GROUP BY k").fetchall()
        self.assertNotIn("scatter", json.loads(self.con.execute("SELECT colstore_last_plan()").fetchone()[0])["kernels"])


class KeptBlocks(cstest.StoreTest):
    """A query's big blocks (positions, sort scratch, scatter buffers) are
    kept for the next one (colstore_config('keep_bytes')): a reused block
    holds the previous query's bytes, so the same GROUP BY and ORDER BY run
    again and again, with keeping on and off, must give native's answer
    every time, and the settings must say that blocks were reused."""

    def keep(self):
        return json.loads(self.con.execute("SELECT colstore_last_plan()").fetchone()[0])["settings"]["keep_bytes"]

    def test_repeated_queries_over_kept_blocks_match_native(self):
        rnd = random.Random(SEED + 11)
        con = self.con = self.connect()
        default = con.execute("SELECT colstore_config('keep_bytes')").fetchone()[0]
        self.assertEqual(default, 1073741824)
        n = cstest.scaled(200000, 120000)  # scatter buffers over 2 MiB: blocks on huge pages
        con.execute("CREATE TABLE n(k INTEGER, a REAL, c INTEGER)")
        con.executemany("INSERT INTO n VALUES (?,?,?)",
                        [(rnd.randrange(700), rnd.random(), rnd.randrange(1 << 40)) for _ in range(n)])
        con.execute("CREATE VIRTUAL TABLE t USING colstore(%r, k INT32 NOT NULL, a FLOAT64 NOT NULL, c INT64 NOT NULL)"
                    % self.path("t.cst"))
        con.execute("INSERT INTO t SELECT k, a, c FROM n ORDER BY rowid")
        con.execute("DELETE FROM t WHERE k = 3")
        con.execute("DELETE FROM n WHERE k = 3")
        # (t's rowids start at 0, n's at 1)
        queries = [("SELECT k, count(*), sum(c), min(a) FROM %s GROUP BY k",) * 2,
                   ("SELECT k, c FROM %s WHERE a > 0.25 ORDER BY k, c",) * 2,
                   ("SELECT c, k FROM %s ORDER BY c DESC LIMIT 50 OFFSET 1000",) * 2,
                   ("SELECT rowid, c FROM %s ORDER BY c", "SELECT rowid - 1, c FROM %s ORDER BY c")]
        want = [con.execute(q_n % "n").fetchall() for _, q_n in queries]
        try:
            for limit in (default, 0, default):
                con.execute("SELECT colstore_config('keep_bytes', ?)", (limit,)).fetchall()
                before = self.keep()
                self.assertEqual(before["limit"], limit)
                for rep in range(3):
                    for (q, _), w in zip(queries, want):
                        got = con.execute(q % "t").fetchall()
                        # (no assertEqual: difflib over 200,000 rows takes minutes)
                        first = next((i for i, (x, y) in enumerate(zip(got, w)) if x != y), None)
                        self.assertTrue(got == w, "%s, keep_bytes %d, run %d: %d rows against %d, first difference at %s" %
                                        (q, limit, rep, len(got), len(w), first))
                after = self.keep()
                if limit:
                    self.assertGreater(after["reused"], before["reused"], "no block was reused")
                    self.assertGreater(after["kept"], 0)
                    self.assertLessEqual(after["kept"], limit)
                else:
                    self.assertEqual(after["reused"], before["reused"])
                    self.assertEqual((after["kept"], after["blocks"]), (0, 0))
        finally:
            con.execute("SELECT colstore_config('keep_bytes', ?)", (default,)).fetchall()
        with self.assertRaises(Exception) as cm:
            con.execute("SELECT colstore_config('keep_bytes', -1)").fetchall()
        self.assertIn("colstore: bad value for setting keep_bytes", str(cm.exception))


if __name__ == "__main__":
    cstest.main()
