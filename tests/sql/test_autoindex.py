"""The automatic index (core/kernels/cs_index.c, colstore_cursor.c): a
colstore table filtered again and again by `col = ?` or `col IN (...)` on
one numeric column builds the column's sorted positions once per snapshot
and answers later filters by binary search.

What is checked, against native SQLite holding the same rows:
* when: the first filters scan (a single query never pays a sort), the
  COLSTORE_AUTOINDEX_AFTER-th builds, later ones use it (colstore_last_plan's
  kernels say "automatic index"); the knob 0 turns it off;
* exactness through the index: random `=` and IN operands of every class,
  other predicates beside it, rowid bounds, _mask, ORDER BY, LIMIT/OFFSET;
* snapshots: another connection's INSERT, UPDATE and DELETE between
  statements give a new snapshot, whose answers come from a new index;
* loops: a correlated subquery and a join with the colstore table inside.
The seed is COLSTORE_SEED's (printed on failure).
"""
import json
import os
import random
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402

SEED = int(os.environ.get("COLSTORE_SEED", "2718"))
AFTER = 32  # CSX_AUTOINDEX_AFTER


def kernels(con):
    return json.loads(con.execute("SELECT colstore_last_plan()").fetchone()[0]).get("kernels", "")


class AutoIndex(cstest.StoreTest):
    N = 5000

    def setUp(self):
        super().setUp()
        self.rng = random.Random(SEED)
        self.con = cstest.connect()
        self.con.execute("CREATE TABLE n(a INTEGER, f REAL, s TEXT, g INT16)")
        rows = [(i, self.rng.choice([None, self.rng.randrange(-20, 20)]),
                 self.rng.choice([None, float("nan"), -0.0, 0.0, 1.5, 2.0, self.rng.randrange(5) * 0.5]),
                 self.rng.choice(["x", "y", None]), self.rng.randrange(100)) for i in range(self.N)]
        # rowid 0, 1, ... as colstore's positions
        self.con.executemany("INSERT INTO n(rowid, a, f, s, g) VALUES (?, ?, ?, ?, ?)", rows)
        self.path = os.path.join(self.dir, "c.cst")
        self.con.execute("SELECT colstore_create(?, 'SELECT a, f, s, g FROM n')", (self.path,))
        self.con.execute("CREATE VIRTUAL TABLE c USING colstore('%s')" % self.path)
        # native keeps the NaN as NULL, as colstore reads it
        self.con.execute("UPDATE n SET f = NULL WHERE f IS NULL")

    def tearDown(self):
        self.con.close()
        super().tearDown()

    def same(self, template, params=(), ordered=False):
        want = self.con.execute(template.format(T="n"), params).fetchall()
        got = self.con.execute(template.format(T="c"), params).fetchall()
        if not ordered:
            want, got = sorted(map(repr, want)), sorted(map(repr, got))
        else:
            want, got = list(map(repr, want)), list(map(repr, got))
        self.assertEqual(got, want, "COLSTORE_SEED=%d query %s params %r" % (SEED, template, params))

    def test_built_after_the_knob_and_used(self):
        seen = []
        for v in range(AFTER + 3):
            self.same("SELECT rowid, a FROM {T} WHERE a = ?", (v,))
            seen.append("automatic index" in kernels(self.con))
        self.assertEqual(seen, [False] * (AFTER - 1) + [True] * 4, seen)
        # another column has its own count
        self.same("SELECT rowid FROM {T} WHERE g = 5")
        self.assertNotIn("automatic index", kernels(self.con))

    def test_knob_zero_never_builds(self):
        os.environ["COLSTORE_AUTOINDEX_AFTER"] = "0"
        try:
            con = cstest.connect()
            con.execute("CREATE VIRTUAL TABLE c USING colstore('%s')" % self.path)
            for v in range(AFTER + 3):
                con.execute("SELECT count(*) FROM c WHERE a = ?", (v,)).fetchall()
                self.assertNotIn("automatic index", kernels(con))
            con.close()
        finally:
            del os.environ["COLSTORE_AUTOINDEX_AFTER"]

    def test_exact_through_the_index(self):
        for _ in range(AFTER):
            self.con.execute("SELECT count(*) FROM c WHERE a = 1").fetchall()
            self.con.execute("SELECT count(*) FROM c WHERE f = 1").fetchall()
        operands = [None, 0, 1, -1, 3, 19, -20, 1.0, 1.5, 2.0, -0.0, 0.0, "1", "1.5", "x", b"\x01",
                    2**63 - 1, -2**63, 2**53 + 1, float("inf")]
        for _ in range(150):
            col = self.rng.choice(["a", "f"])
            v, w = self.rng.choice(operands), self.rng.choice(operands)
            lo = self.rng.randrange(self.N)
            self.same("SELECT rowid, a, f FROM {T} WHERE %s = ?" % col, (v,))
            self.same("SELECT rowid FROM {T} WHERE %s IN (?, ?, 3)" % col, (v, w))
            self.same("SELECT rowid, s FROM {T} WHERE %s = ? AND g > 50 AND s = 'x'" % col, (v,))
            self.same("SELECT rowid FROM {T} WHERE %s = ? AND rowid BETWEEN ? AND ?" % col, (v, lo, lo + 900))
            self.same("SELECT rowid, g FROM {T} WHERE %s = ? ORDER BY g DESC, rowid LIMIT 5 OFFSET 2" % col, (v,),
                      ordered=True)
            self.same("SELECT rowid FROM {T} WHERE %s = ? LIMIT 3" % col, (v,))
        self.assertIn("automatic index", kernels(self.con))

    def test_mask_beside_the_index(self):
        for _ in range(AFTER):
            self.con.execute("SELECT count(*) FROM c WHERE a = 2").fetchall()
        mask = bytes(self.rng.randrange(2) for _ in range(self.N))
        got = self.con.execute("SELECT rowid FROM c WHERE a = 2 AND _mask = ?", (mask,)).fetchall()
        self.assertIn("automatic index", kernels(self.con))
        want = [(r,) for (r,) in self.con.execute("SELECT rowid FROM n WHERE a = 2").fetchall() if mask[r]]
        self.assertEqual(sorted(got), sorted(want), "COLSTORE_SEED=%d" % SEED)

    def test_commits_from_another_connection(self):
        other = cstest.connect()
        other.execute("CREATE VIRTUAL TABLE c USING colstore('%s')" % self.path)
        for step in range(6):
            for v in range(AFTER + 1):
                self.same("SELECT a, f, s, g FROM {T} WHERE a = ?", (v,))  # rowids part ways after a DELETE
            self.assertIn("automatic index", kernels(self.con))
            r = self.rng.randrange(100)
            if step % 3 == 0:
                stmts = ["INSERT INTO %s VALUES (2, 1.5, 'x', 7), (NULL, 2.0, NULL, 8), (3, -0.0, 'y', 9)"]
            elif step % 3 == 1:
                stmts = ["UPDATE %s SET a = 2, f = 1.5 WHERE g %% 11 = " + str(step)]
            else:
                stmts = ["DELETE FROM %s WHERE g = " + str(r % 100)]
            for sql in stmts:
                self.con.execute(sql % "n")
                other.execute(sql % "c")
            # the next statement sees the commit: a new snapshot, a new index
            self.same("SELECT a, f, s, g FROM {T} WHERE a = 2")
        other.close()

    def test_correlated_subquery_and_join(self):
        self.con.execute("CREATE TABLE o(x, y)")
        self.con.executemany("INSERT INTO o VALUES (?, ?)",
                             [(self.rng.choice([None, 1, 2.0, "3", -4, 2.5]), self.rng.randrange(100))
                              for _ in range(300)])
        self.same("SELECT o.rowid, (SELECT count(*) FROM {T} WHERE {T}.a = o.x) FROM o")
        self.same("SELECT o.rowid, (SELECT max(rowid) FROM {T} WHERE {T}.f = o.x AND {T}.g < o.y) FROM o")
        self.same("SELECT o.rowid, {T}.rowid FROM o JOIN {T} ON {T}.a = o.x WHERE o.y < 20")
        self.same("SELECT o.rowid FROM o WHERE o.y IN (SELECT g FROM {T} WHERE {T}.a = o.x)")
        self.assertIn("automatic index", kernels(self.con))

    def test_join_order_follows_the_index(self):
        """Once a colstore table's snapshot has an index of a, an `=` on a
        costs a search and estimates its rows per value, so SQLite puts the
        table inside the join's loop, as it would a native table with an
        index (before, on a large enough table, it scans it outside: the
        benchmark's `join (planner)` rows, docs/performance.md)."""
        self.con.execute("CREATE TABLE n2(a INTEGER, g INTEGER)")
        self.con.execute("WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < 199999) "
                         "INSERT INTO n2 SELECT (i * 2654435761) % 20000, i % 100 FROM r")
        path = os.path.join(self.dir, "c2.cst")
        self.con.execute("SELECT colstore_create(?, 'SELECT a, g FROM n2')", (path,))
        self.con.execute("CREATE VIRTUAL TABLE c2 USING colstore('%s')" % path)
        self.con.execute("CREATE TABLE o(x, y)")
        self.con.executemany("INSERT INTO o VALUES (?, ?)", [(i * 7 % 20000, i) for i in range(1000)])
        q = "SELECT count(*), sum({T}.g) FROM o JOIN {T} ON {T}.a = o.x"
        for v in range(AFTER):
            self.con.execute("SELECT count(*) FROM c2 WHERE a = ?", (v,)).fetchall()
        after = [r[3] for r in self.con.execute("EXPLAIN QUERY PLAN " + q.format(T="c2") + " ")]
        self.assertEqual(after[0], "SCAN o", after)
        self.assertIn("pred(a=?)", after[1])
        want = self.con.execute(q.format(T="n2")).fetchall()
        self.assertEqual(self.con.execute(q.format(T="c2") + " ").fetchall(), want)
        self.assertIn("automatic index", kernels(self.con))

if __name__ == "__main__":
    unittest.main()
