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
* ranges: one bound, two, BETWEEN, counted toward the build and answered
  by the index when they select at most CSX_AUTOINDEX_RANGE_PPM (0.5%) of
  the rows (a wider one scans); against native with other conditions, ORDER
  BY/LIMIT/OFFSET, deleted and updated rows;
* cache=auto's swap to a memory copy keeps the indexes (cs_index_adopt).
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

    def test_ranges_through_the_index(self):
        """Ranges (one bound, two bounds, BETWEEN) on the unsorted a and f:
        counted toward the build like `=`, then answered by the index when
        narrow enough.  Two connections: the default width rule, and
        COLSTORE_AUTOINDEX_RANGE_PPM=1000000 (every range through the index,
        so the wide ones are checked there too); both against native, with
        other conditions, rowid bounds, ORDER BY/LIMIT/OFFSET, and rows
        deleted and updated by a commit halfway."""
        os.environ["COLSTORE_AUTOINDEX_RANGE_PPM"] = "1000000"
        try:
            wide = cstest.connect()
            wide.execute("CREATE VIRTUAL TABLE c USING colstore('%s')" % self.path)
        finally:
            del os.environ["COLSTORE_AUTOINDEX_RANGE_PPM"]
        wide.execute("ATTACH ? AS nat", (":memory:",))
        bounds = [None, -21, -20, -3, 0, 1, 1.5, 2, 2.5, 19, 20, -0.0, "1", float("inf"), float("-inf"), 2**63 - 1]
        shapes = [
            ("SELECT rowid, a, f FROM {T} WHERE %(c)s > ? AND %(c)s < ?", 2, False),
            ("SELECT rowid FROM {T} WHERE %(c)s BETWEEN ? AND ?", 2, False),
            ("SELECT rowid, g FROM {T} WHERE %(c)s >= ?", 1, False),
            ("SELECT rowid FROM {T} WHERE %(c)s <= ? AND g < 30", 1, False),
            ("SELECT rowid, s FROM {T} WHERE %(c)s >= ? AND %(c)s <= ? AND s = 'x' AND rowid > 100", 2, False),
            ("SELECT rowid, g FROM {T} WHERE %(c)s > ? AND %(c)s <= ? ORDER BY g DESC, rowid LIMIT 4 OFFSET 3",
             2, True),
            ("SELECT rowid FROM {T} WHERE %(c)s < ? AND %(c)s >= ? LIMIT 3 OFFSET 1", 2, True),
            ("SELECT count(*), total(g) FROM {T} WHERE %(c)s BETWEEN ? AND ? AND a = ?", 3, False),
        ]
        used = {"default": 0, "wide": 0}
        other = cstest.connect()
        other.execute("CREATE VIRTUAL TABLE c USING colstore('%s')" % self.path)
        for rnd in range(2 * AFTER + 200):
            if rnd == AFTER + 100:  # a commit: deleted and updated rows, a new snapshot, a new count
                for sql in ("DELETE FROM %s WHERE g %% 7 = 3", "UPDATE %s SET a = g - 50, f = g * 0.5 WHERE g %% 5 = 1"):
                    self.con.execute(sql % "n")
                    other.execute(sql % "c")
            col = self.rng.choice(["a", "f"])
            template, n_params, ordered = shapes[rnd % len(shapes)]
            params = tuple(self.rng.choice(bounds) for _ in range(n_params))
            if n_params >= 2 and self.rng.randrange(2) and all(isinstance(p, int) and abs(p) < 1000 for p in params[:2]):
                params = (params[0], params[0] + self.rng.randrange(3)) + params[2:]  # narrow windows
            sql = template % {"c": col}
            want = self.con.execute(sql.format(T="n"), params).fetchall()
            for name, con in (("default", self.con), ("wide", wide)):
                got = con.execute(sql.format(T="c"), params).fetchall()
                if not ordered or "LIMIT" in sql and "ORDER" not in sql:
                    w, g = sorted(map(repr, want)), sorted(map(repr, got))
                else:
                    w, g = list(map(repr, want)), list(map(repr, got))
                if "LIMIT" in sql and "ORDER" not in sql:  # any 3 rows: check they are rows of the full answer
                    full = sorted(map(repr, self.con.execute(sql.split(" LIMIT")[0].format(T="n"), params)))
                    self.assertEqual(len(g), len(w), "COLSTORE_SEED=%d %s %s %r" % (SEED, name, sql, params))
                    self.assertTrue(set(g) <= set(full), "COLSTORE_SEED=%d %s %s %r" % (SEED, name, sql, params))
                else:
                    self.assertEqual(g, w, "COLSTORE_SEED=%d %s %s %r" % (SEED, name, sql, params))
                used[name] += "automatic index" in kernels(con)
        other.close()
        wide.close()
        # the index answered ranges on both; the wide connection took every one it could
        self.assertGreater(used["default"], 20, used)
        self.assertGreater(used["wide"], used["default"], used)

    def test_range_width_rule(self):
        """After the build, a narrow window goes through the index and one
        past CSX_AUTOINDEX_RANGE_PPM (0.5%) of the rows scans.  A column of
        distinct values in no order, so the widths are exact."""
        path = os.path.join(self.dir, "u.cst")
        self.con.execute("CREATE TABLE nu(u INTEGER)")
        self.con.executemany("INSERT INTO nu(rowid, u) VALUES (?, ?)", [(i, i * 7919 % 20000) for i in range(20000)])
        self.con.execute("SELECT colstore_create(?, 'SELECT u FROM nu')", (path,))
        self.con.execute("CREATE VIRTUAL TABLE cu USING colstore('%s')" % path)
        for v in range(AFTER):
            self.con.execute("SELECT count(*) FROM cu WHERE u > ? AND u < ?", (v, v + 2)).fetchall()
        self.assertIn("automatic index", kernels(self.con))  # the 32nd builds it and uses it
        for lo, hi, indexed in ((500, 599, True), (7000, 7099, True), (500, 5000, False), (0, 19999, False)):
            q = "SELECT rowid FROM {T} WHERE u BETWEEN ? AND ?"
            want = self.con.execute(q.format(T="nu"), (lo, hi)).fetchall()
            self.assertEqual(self.con.execute(q.format(T="cu"), (lo, hi)).fetchall(), want)  # rowid order both
            self.assertEqual("automatic index" in kernels(self.con), indexed, (lo, hi))
        self.same("SELECT count(*) FROM {T} WHERE g >= 99")  # 1% of n: the scan, the same rows

    def test_cache_auto_swap_keeps_the_index(self):
        """cache=auto's swap to a memory copy hands the copy the snapshot's
        indexes and counts (cs_index_adopt): the first filter after the swap
        is answered by the index, not a scan that counts to 32 again.  The
        swap lands at a known statement: COLSTORE_CACHE_AUTO_READS=AFTER + 2
        starts the copy at statement AFTER + 3, COLSTORE_CACHE_AUTO_WAIT=1
        swaps at the next one, and COLSTORE_CACHE_AUTO_GAP_MS=0 takes the
        pause rule out."""
        env = {"COLSTORE_CACHE_AUTO_WAIT": "1", "COLSTORE_CACHE_AUTO_GAP_MS": "0",
               "COLSTORE_CACHE_AUTO_READS": str(AFTER + 2)}
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            con = cstest.connect()
            con.execute("CREATE VIRTUAL TABLE ca USING colstore('%s', cache=auto)" % self.path)
            caches, indexed = [], []
            for v in range(AFTER + 6):
                q = "SELECT rowid, f FROM {T} WHERE a = ?"
                want = sorted(map(repr, self.con.execute(q.format(T="n"), (v % 40 - 20,)).fetchall()))
                got = sorted(map(repr, con.execute(q.format(T="ca"), (v % 40 - 20,)).fetchall()))
                self.assertEqual(got, want, "COLSTORE_SEED=%d statement %d" % (SEED, v))
                plan = json.loads(con.execute("SELECT colstore_last_plan()").fetchone()[0])
                caches.append(plan["cache"])
                indexed.append("automatic index" in plan.get("kernels", ""))
            swap = caches.index("memory")
            self.assertEqual(swap, AFTER + 3, caches)
            self.assertEqual(indexed, [False] * (AFTER - 1) + [True] * 7, (indexed, caches))
            # a range through the adopted index, exact
            for lo in range(-20, 20, 3):
                q = "SELECT rowid FROM {T} WHERE a BETWEEN ? AND ?"
                want = sorted(self.con.execute(q.format(T="n"), (lo, lo + 1)).fetchall())
                self.assertEqual(sorted(con.execute(q.format(T="ca"), (lo, lo + 1)).fetchall()), want)
            con.close()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


if __name__ == "__main__":
    unittest.main()
