#!/usr/bin/python3
"""Plan shapes: whatever plan SQLite picks around a colstore table, the
answer is the native one.

The pushdown and differential suites check what colstore does with the
constraints it is given.  This suite checks the plans SQLite builds around
them, which call the table in ways a single query never shows: the
MULTI-INDEX OR plan (one filter per OR branch, the terms beside the OR
re-checked through xColumn, rows de-duplicated by rowid), both sides of a
join, correlated and IN subqueries, automatic indexes on a subquery of the
table, co-routines and LIMIT inside subqueries.  Each runs with every kind
of constraint colstore takes: rowid =, ranges and IN, column comparisons,
column IN, _rows (in its order, with duplicates and negative positions),
_mask, LIMIT/OFFSET and ORDER BY rowid.

The native mirror `n` has `pos INTEGER PRIMARY KEY`, so its rowid is the
colstore position and every rowid term means the same on both sides.  A
_rows query has no native spelling; its reference is the mirror joined to
a table `sel(ord, pos)` holding the BLOB's positions in order, read in
`ord` order: the contract is the BLOB's order, duplicates kept.  A _mask
reference is the mirror joined to `msk(pos)`.

Shapes with no meaning (reading _rows as a value, _rows under OR or NOT,
two _rows terms) must fail with a `colstore:` message, never answer.
"""
import os
import random
import struct
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402

SEED = 20261201
N_ROWS = cstest.scaled(3000, 1200)


def rows_blob(positions):
    return struct.pack("<%dq" % len(positions), *positions)


class PlanShapes(cstest.StoreTest):
    def setUp(self):
        super().setUp()
        rnd = random.Random(SEED)
        con = self.con = self.connect()
        con.execute("CREATE TABLE n(pos INTEGER PRIMARY KEY, c0 INTEGER, c1 INTEGER, f REAL, s TEXT)")
        words = [None, "", "a", "abc", "b", "zz", "10"]
        self.data = []
        for k in range(N_ROWS):
            self.data.append((k, rnd.choice([None, rnd.randint(0, 9)]), -rnd.randint(0, 12),
                              rnd.choice([None, rnd.uniform(-5, 5), 0.5]), rnd.choice(words)))
        con.executemany("INSERT INTO n VALUES (?,?,?,?,?)", self.data)
        con.execute("CREATE VIRTUAL TABLE t USING colstore(%r, c0 INT64, c1 INT32 NOT NULL, f FLOAT64, s TEXT)"
                    % self.path("t.cst"))
        # three commits: three records, so every shape crosses records
        third = N_ROWS // 3
        for a, b in ((0, third), (third, 2 * third), (2 * third, N_ROWS)):
            con.execute("INSERT INTO t SELECT c0, c1, f, s FROM n WHERE pos >= ? AND pos < ? ORDER BY pos", (a, b))
        self.assertEqual(con.execute("SELECT count(*) FROM t").fetchone()[0], N_ROWS)
        # the selections: positions with duplicates and negatives, a mask
        pos = [rnd.randrange(N_ROWS) for _ in range(300)]
        pos += pos[:40]                      # duplicates
        pos += [-1, -2, -N_ROWS]             # from the end
        rnd.shuffle(pos)
        self.pos = pos
        self.blob = rows_blob(pos)
        con.execute("CREATE TABLE sel(ord INTEGER PRIMARY KEY, pos INTEGER)")
        con.executemany("INSERT INTO sel VALUES (?,?)", [(i, p % N_ROWS) for i, p in enumerate(pos)])
        self.mask = bytes(1 if rnd.random() < 0.3 else 0 for _ in range(N_ROWS))
        con.execute("CREATE TABLE msk(pos INTEGER PRIMARY KEY)")
        con.executemany("INSERT INTO msk VALUES (?)", [(i,) for i, m in enumerate(self.mask) if m])
        con.execute("CREATE TABLE m2(x INTEGER, y INTEGER)")
        con.executemany("INSERT INTO m2 VALUES (?,?)", [(rnd.randint(-1, 10), rnd.randrange(N_ROWS)) for _ in range(60)])

    # -- helpers

    def same(self, got_sql, want_sql, params=(), want_params=None, ordered=False):
        got = self.con.execute(got_sql, params).fetchall()
        want = self.con.execute(want_sql, params if want_params is None else want_params).fetchall()
        a, b = cstest.canon_rows(want, ordered), cstest.canon_rows(got, ordered)
        self.assertEqual(b, a, "seed %d\ncolstore: %s\nnative:   %s\n%d vs %d rows" % (SEED, got_sql, want_sql, len(got), len(want)))
        return len(want)

    def plan(self, sql, params=()):
        return " | ".join(r[3] for r in self.con.execute("EXPLAIN QUERY PLAN " + sql, params))

    # -- OR beside a selection: the examples and their class

    ORS = ["c0 = 7 OR c1 = -9", "c0 = 3 OR s = 'abc' OR f > 4", "rowid < 50 OR rowid > %d" % (N_ROWS - 50),
           "c0 IS NULL OR c1 IN (-1, -2)", "(c0 = 1 AND c1 < -5) OR (s IS NULL AND f < 0)",
           "rowid IN (1, 3, 5, 2000) OR c0 = 2", "c0 > 8 OR rowid BETWEEN 100 AND 120"]

    def test_rows_beside_or_keeps_order_and_duplicates(self):
        n_nonempty = 0
        for cond in self.ORS:
            got = "SELECT rowid, c0, c1, f, s FROM t WHERE _rows = ? AND (%s)" % cond
            want = ("SELECT n.pos, c0, c1, f, s FROM sel JOIN n ON n.pos = sel.pos WHERE (%s) ORDER BY sel.ord"
                    % cond.replace("rowid", "n.pos"))
            n_nonempty += self.same(got, want, (self.blob,), (), ordered=True) > 0
            self.assertNotIn("MULTI-INDEX OR", self.plan(got, (self.blob,)), cond)
        self.assertGreaterEqual(n_nonempty, len(self.ORS) - 1)

    def test_mask_beside_or(self):
        for cond in self.ORS:
            got = "SELECT rowid, c0, c1, f, s FROM t WHERE _mask = ? AND (%s)" % cond
            want = "SELECT n.pos, c0, c1, f, s FROM n JOIN msk USING (pos) WHERE (%s)" % cond.replace("rowid", "n.pos")
            self.assertGreater(self.same(got, want, (self.mask,), ()), 0, cond)

    def test_rowid_and_predicates_beside_or(self):
        for sel in ("rowid IN (1,3,5,7,9,100,2001)", "rowid BETWEEN 10 AND 2500", "c1 < -3", "c0 IN (1, 7)",
                    "rowid = 77"):
            for cond in self.ORS:
                q = "SELECT rowid, c0, c1, f, s FROM {T} WHERE %s AND (%s)" % (sel, cond)
                self.same(q.format(T="t"), q.format(T="n"))

    # -- IN lists beside a selection (issue 20, item 2): SQLite walks an
    # IN list it is not handed whole value by value, calling xFilter once
    # per value, so the rows would come in the list's order

    def test_rows_beside_in_lists_keeps_order_and_duplicates(self):
        hits = sorted({p % N_ROWS for p in self.pos})
        a, b = hits[::3][:20], hits[1::2][:25]
        lit = lambda xs: ", ".join(map(str, xs))
        # constraint 32 and on: sqlite3_vtab_in cannot tell an IN list from `=` there
        pad = " AND ".join("c1 > %d" % (-100 - i) for i in range(34))
        conds = ["rowid IN (SELECT y FROM m2) AND rowid IN (%s)" % lit(a + b),
                 "rowid IN (%s) AND rowid IN (%s)" % (lit(a + b), lit(b + a[:5])),
                 "rowid IN (%s) AND rowid IN (%s) AND rowid IN (SELECT value FROM json_each('[%s]'))"
                 % (lit(a + b), lit(b + a), lit(b)),
                 "rowid IN (SELECT pos FROM msk) AND rowid IN (%s)" % lit(hits),
                 "c0 IN (1, 2, 3, 7) AND rowid IN (%s) AND c1 IN (SELECT -x FROM m2)" % lit(hits),
                 "%s AND rowid IN (%s)" % (pad, lit(b)),
                 "%s AND rowid IN (%s) AND rowid IN (%s)" % (pad, lit(a + b), lit(b)),
                 "rowid IN (%s) AND %s AND rowid IN (SELECT value FROM json_each('[%s]'))" % (lit(a + b), pad, lit(a)),
                 "%s AND c0 IN (0, 1, 2, 5, 9)" % pad,
                 "rowid = %d AND rowid IN (%s)" % (b[0], lit(b))]
        for cond in conds:
            for form in ("WHERE _rows = ? AND %s", "WHERE %s AND _rows = ?"):
                got = "SELECT rowid, c0, c1 FROM t " + form % cond
                want = ("SELECT n.pos, c0, c1 FROM sel JOIN n ON n.pos = sel.pos WHERE %s ORDER BY sel.ord"
                        % cond.replace("rowid", "n.pos"))
                one = "rowid =" in cond
                self.assertGreater(self.same(got, want, (self.blob,), (), ordered=True), 0 if one else 1, cond)
                self.assertNotIn("eq(rowid)", "" if one else self.plan(got, (self.blob,)), cond)
            # the same through a mask: a set, each row once
            got = "SELECT rowid, c0, c1 FROM t WHERE _mask = ? AND %s" % cond
            want = "SELECT n.pos, c0, c1 FROM n JOIN msk USING (pos) WHERE %s" % cond.replace("rowid", "n.pos")
            self.same(got, want, (self.mask,), ())
        # an `=` that is surely not a list is still taken beside _rows
        self.assertIn("eq(rowid)", self.plan("SELECT c0 FROM t WHERE _rows = ? AND rowid = 5", (self.blob,)))
        # and without a selection a second IN list may be walked (the answer is a set)
        q = "SELECT rowid, c0 FROM {T} WHERE rowid IN (SELECT y FROM m2) AND rowid IN (%s)" % lit(hits)
        self.assertGreater(self.same(q.format(T="t"), q.format(T="n")), 0)

    def test_or_branches_each_with_a_selection(self):
        """Selections inside the branches of an OR: SQLite answers branch by
        branch (MULTI-INDEX OR), the union with each row once."""
        blob2 = rows_blob(list(range(0, N_ROWS, 7)))
        got = "SELECT rowid, c0 FROM t WHERE (_rows = ?1 AND c0 = 7) OR (_rows = ?2 AND c1 = -9)"
        self.assertIn("MULTI-INDEX OR", self.plan(got, (self.blob, blob2)))
        # each branch in its BLOB's order with its duplicates; a row an
        # earlier branch produced is not repeated (docs/sql.md, "Under OR")
        c0 = {r[0]: r[1] for r in self.data}
        c1 = {r[0]: r[2] for r in self.data}
        first = [p % N_ROWS for p in self.pos if c0[p % N_ROWS] == 7]
        second = [p for p in range(0, N_ROWS, 7) if c1[p] == -9 and p not in set(first)]
        rows = self.con.execute(got, (self.blob, blob2)).fetchall()
        self.assertEqual(sorted(rows), sorted((p, c0[p]) for p in first + second))
        self.assertGreater(len(first), 0)
        self.assertGreater(len(first), len(set(first)))  # the duplicates were there to keep
        # a selection in one branch only, and selections as whole branches
        mask2 = bytes(1 if i % 5 == 0 else 0 for i in range(N_ROWS))
        for got, want, params in (
                ("SELECT rowid FROM t WHERE _mask = ?1 OR _mask = ?2",
                 "SELECT pos FROM n WHERE pos IN (SELECT pos FROM msk) OR pos % 5 = 0", (self.mask, mask2)),
                ("SELECT rowid FROM t WHERE c1 > -6 AND (_mask = ?1 OR c0 = 4)",
                 "SELECT pos FROM n WHERE c1 > -6 AND (pos IN (SELECT pos FROM msk) OR c0 = 4)", (self.mask,))):
            rows = self.con.execute(got, params).fetchall()
            self.assertEqual(sorted(rows), sorted(self.con.execute(want).fetchall()), got)
            self.assertIn("MULTI-INDEX OR", self.plan(got, params))
        got = "SELECT rowid FROM t WHERE _rows = ?1 OR c0 = 4"
        self.assertIn("MULTI-INDEX OR", self.plan(got, (self.blob,)))
        first = [p % N_ROWS for p in self.pos]
        second = [p for p in range(N_ROWS) if c0[p] == 4 and p not in set(first)]
        self.assertEqual(sorted(self.con.execute(got, (self.blob,)).fetchall()), sorted((p,) for p in first + second))
        got = "SELECT rowid, c0 FROM t WHERE (_mask = ?1 AND c0 = 7) OR (rowid < 100 AND c1 = -9)"
        want = ("SELECT pos, c0 FROM n WHERE (pos IN (SELECT pos FROM msk) AND c0 = 7) OR (pos < 100 AND c1 = -9)")
        rows = self.con.execute(got, (self.mask,)).fetchall()
        self.assertEqual(cstest.canon_rows(rows, False), cstest.canon_rows(self.con.execute(want).fetchall(), False))

    # -- shapes without a meaning fail loudly

    def test_selection_columns_are_not_values(self):
        for sql, params in (("SELECT _rows FROM t", ()),
                            ("SELECT count(*) FROM t WHERE NOT (_mask = ?)", (self.mask,)),
                            ("SELECT count(*) FROM t WHERE _rows IS ?", (self.blob,)),
                            ("SELECT count(*) FROM t WHERE _rows IN (?, ?)", (self.blob, self.blob)),
                            ("SELECT count(*) FROM t WHERE length(_mask) > 0", ()),
                            ("SELECT count(*) FROM t WHERE _rows = ?1 AND _rows = ?1", (self.blob,)),
                            ("SELECT count(*) FROM t WHERE _mask = ?1 AND _mask = ?1", (self.mask,))):
            self.assertSqlError(self.con, sql, params, code=None, contains=("_",))
        # two different BLOBs: SQLite itself derives ?1 = ?2 from the two
        # equalities and answers no rows before asking colstore
        try:
            got = self.con.execute("SELECT count(*) FROM t WHERE _rows = ?1 AND _rows = ?2",
                                   (self.blob, rows_blob([1]))).fetchall()
            self.assertEqual(got, [(0,)])
        except cstest.sqlite3.Error as e:
            self.assertTrue(str(e).startswith("colstore:"), str(e))
        # read back where it was given: the BLOB itself
        got = self.con.execute("SELECT _rows FROM t WHERE _rows = ? LIMIT 1", (self.blob,)).fetchone()[0]
        self.assertEqual(got, self.blob)

    # -- joins, both sides

    def test_joins_both_sides(self):
        shapes = [
            # colstore inner, probed by rowid and by a column from the outer
            "SELECT m2.x, {T}.rowid, {T}.c1 FROM m2 CROSS JOIN {T} ON {T}.rowid = m2.y",
            "SELECT m2.x, {T}.rowid, {T}.f FROM m2 CROSS JOIN {T} ON {T}.c0 = m2.x WHERE {T}.rowid < 400",
            # colstore outer
            "SELECT m2.x, {T}.rowid FROM {T} CROSS JOIN m2 ON {T}.c0 = m2.x WHERE {T}.rowid < 300",
            "SELECT {T}.rowid, m2.y FROM {T} CROSS JOIN m2 ON m2.y = {T}.rowid",
            # the planner's choice, with a LEFT JOIN
            "SELECT m2.y, {T}.c0, {T}.s FROM m2 LEFT JOIN {T} ON {T}.rowid = m2.y AND {T}.c0 > 4",
            # colstore with itself
            "SELECT a.rowid, b.rowid FROM {T} a JOIN {T} b ON b.rowid = a.rowid + 1 WHERE a.c0 = 3 AND b.c0 = 4",
            "SELECT a.rowid, b.rowid FROM {T} a JOIN {T} b ON a.c1 = b.c1 WHERE a.rowid < 20 AND b.rowid < 30",
        ]
        for q in shapes:
            self.assertGreater(self.same(q.format(T="t"), q.format(T="n")), 0, q)

    def test_joins_with_selections(self):
        # the mask or the positions on the inner side, re-filtered per outer row
        got = "SELECT m2.x, t.rowid FROM m2 CROSS JOIN t ON t.c0 = m2.x WHERE t._mask = ?"
        want = "SELECT m2.x, n.pos FROM m2 CROSS JOIN n ON n.c0 = m2.x WHERE n.pos IN (SELECT pos FROM msk)"
        self.assertGreater(self.same(got, want, (self.mask,), ()), 0)
        got = "SELECT m2.x, t.rowid FROM t CROSS JOIN m2 ON t.c0 = m2.x WHERE t._mask = ?"
        self.assertGreater(self.same(got, want, (self.mask,), ()), 0)
        got = "SELECT m2.y, t.rowid, t.c0 FROM m2, t WHERE t._rows = ? AND t.rowid = m2.y"
        want = "SELECT m2.y, n.pos, n.c0 FROM m2, sel JOIN n ON n.pos = sel.pos WHERE n.pos = m2.y"  # duplicates kept
        self.same(got, want, (self.blob,), ())
        # _rows from another table's column: inner side only (the outer side cannot take it)
        self.con.execute("CREATE TABLE blobs(id INTEGER, b BLOB)")
        self.con.executemany("INSERT INTO blobs VALUES (?, ?)", [(1, rows_blob([5, 5, 2])), (2, rows_blob([-1, 0]))])
        got = self.con.execute("SELECT blobs.id, t.rowid FROM blobs, t WHERE t._rows = blobs.b").fetchall()
        self.assertEqual(got, [(1, 5), (1, 5), (1, 2), (2, N_ROWS - 1), (2, 0)])
        got = self.con.execute("SELECT blobs.id, t.rowid FROM t(blobs.b) JOIN blobs").fetchall()
        self.assertEqual(sorted(got), sorted([(1, 5), (1, 5), (1, 2), (2, N_ROWS - 1), (2, 0)]))

    # -- subqueries

    def test_correlated_and_in_subqueries(self):
        shapes = [
            "SELECT x, (SELECT count(*) FROM {T} WHERE {T}.c0 = m2.x AND {T}.c1 < -6) FROM m2",
            "SELECT x, (SELECT max(rowid) FROM {T} WHERE {T}.rowid < m2.y) FROM m2",
            "SELECT x FROM m2 WHERE EXISTS (SELECT 1 FROM {T} WHERE {T}.rowid = m2.y AND {T}.c0 = m2.x)",
            "SELECT x, y FROM m2 WHERE y IN (SELECT rowid FROM {T} WHERE c0 = 5)",
            "SELECT rowid, c0 FROM {T} WHERE rowid IN (SELECT y FROM m2)",
            "SELECT rowid, c0 FROM {T} WHERE c0 IN (SELECT x FROM m2) AND rowid < 500",
            "SELECT rowid FROM {T} WHERE c1 NOT IN (SELECT -x FROM m2 WHERE x IS NOT NULL) AND rowid < 900",
            "SELECT rowid, (SELECT s FROM {T} AS u WHERE u.rowid = {T}.rowid + 1) FROM {T} WHERE c0 = 9",
        ]
        for q in shapes:
            self.same(q.format(T="t"), q.format(T="n"))
        got = "SELECT x, (SELECT count(*) FROM t WHERE t.c0 = m2.x AND t._mask = ?) FROM m2"
        want = "SELECT x, (SELECT count(*) FROM n WHERE n.c0 = m2.x AND n.pos IN (SELECT pos FROM msk)) FROM m2"
        self.same(got, want, (self.mask,), ())
        got = "SELECT x FROM m2 WHERE x IN (SELECT c0 FROM t WHERE _rows = ?)"
        want = "SELECT x FROM m2 WHERE x IN (SELECT c0 FROM n WHERE pos IN (SELECT pos FROM sel))"
        self.same(got, want, (self.blob,), ())

    def test_automatic_index_on_a_subquery(self):
        # a subquery of the table materialized and probed by an automatic index
        q = ("SELECT m2.x, s.k FROM m2 JOIN (SELECT c0, count(*) AS k FROM {T} WHERE c1 > -8 GROUP BY c0) AS s "
             "ON s.c0 = m2.x")
        self.same(q.format(T="t"), q.format(T="n"))
        got = ("SELECT m2.x, s.k FROM m2 JOIN (SELECT c0, count(*) AS k FROM t WHERE _mask = ? GROUP BY c0) AS s "
               "ON s.c0 = m2.x")
        want = ("SELECT m2.x, s.k FROM m2 JOIN (SELECT c0, count(*) AS k FROM n JOIN msk USING (pos) GROUP BY c0) "
                "AS s ON s.c0 = m2.x")
        self.same(got, want, (self.mask,), ())

    def test_limits_inside_subqueries_and_coroutines(self):
        shapes = [
            ("SELECT * FROM (SELECT rowid AS r, c0 FROM {T} WHERE c0 > 3 LIMIT 10 OFFSET 5) WHERE c0 < 9", True),
            ("SELECT * FROM (SELECT rowid AS r, c0 FROM {T} ORDER BY rowid DESC LIMIT 7) ORDER BY r", True),
            ("SELECT r FROM (SELECT rowid AS r FROM {T} WHERE rowid > 100 LIMIT 20) JOIN m2 ON m2.y > r", False),
            ("SELECT x, (SELECT rowid FROM {T} WHERE c0 = m2.x LIMIT 1 OFFSET 2) FROM m2", False),
            ("WITH w AS MATERIALIZED (SELECT rowid AS r, c1 FROM {T} WHERE c1 = -4 LIMIT 30) "
             "SELECT a.r, b.r FROM w a JOIN w b ON a.r = b.r + 0", False),
            ("SELECT rowid, c0 FROM {T} WHERE c0 = 1 UNION ALL SELECT rowid, c0 FROM {T} WHERE rowid < 5 LIMIT 40", True),
        ]
        for q, ordered in shapes:
            self.assertGreater(self.same(q.format(T="t"), q.format(T="n"), ordered=ordered), 0, q)
        got = "SELECT * FROM (SELECT rowid AS r, c0 FROM t WHERE _rows = ? LIMIT 25 OFFSET 3) WHERE c0 IS NOT NULL"
        want = ("SELECT * FROM (SELECT n.pos AS r, c0 FROM sel JOIN n ON n.pos = sel.pos ORDER BY sel.ord "
                "LIMIT 25 OFFSET 3) WHERE c0 IS NOT NULL")
        self.same(got, want, (self.blob,), (), ordered=True)


if __name__ == "__main__":
    cstest.main()
