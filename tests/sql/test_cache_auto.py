"""cache=auto: a table that starts on the mapping and copies its store into
memory once it has proved long-lived.

Why these tests.  cache=auto changes where a table reads its bytes at a
moment the user does not choose (a statement's start, after the table was
read before and a pause), and goes back to the mapping when another
connection's commit refreshes it.  Two things can go wrong: the copy could
show another state than the mapping (a commit that landed meanwhile, the
table's own pending writes, deleted rows, updated chunks, a compacted
file), and the switch could not happen at all (then the option is a no-op
and every figure in docs/performance.md is wrong).  So:

* a randomized session (seed COLSTORE_SEED, printed on failure) where a
  second connection appends, deletes, updates and compacts the store and a
  native mirror of it, while the first connection reads it through three
  tables, cache=map, cache=memory and cache=auto, and writes through the
  auto one in transactions it commits or rolls back (reading its own
  pending changes in between); every read must equal the native mirror.
  The gap rule is set to 0 ms here (COLSTORE_CACHE_AUTO_GAP_MS) so the auto
  table switches on its second statement of every snapshot, and the test
  counts that it read from the mapping and from the copy both, many times;
* the switch itself, with the default rule and real pauses, seen where the
  cache is reported (colstore_info's cache.effective, colstore_last_plan's
  cache): one statement, or statements back to back, stay on the mapping;
  a statement after a 0.25 s pause reads the copy; another connection's
  commit puts the table back on the mapping until it proves long-lived
  again; a store over the cache limit, and a dataset, stay on the mapping;
* the option's spelling in the error that lists the options.

The copy failing midway (out of memory at every allocation in turn) is
tests/alloc/check_alloc_fail.c's "scan cache=auto, copy fails" scenario.
"""
import json
import os
import random
import sys
import time
import unittest

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402

SEED = int(os.environ.get("COLSTORE_SEED") or 20261206)
STEPS = cstest.scaled(40, 20)
START_ROWS = cstest.scaled(20000, 3000)


class CacheAutoTest(cstest.StoreTest):

    def setUp(self):
        super().setUp()
        self.saved_env = {k: os.environ.get(k) for k in ("COLSTORE_CACHE_AUTO_GAP_MS", "COLSTORE_CACHE_AUTO_READS")}
        for k in self.saved_env:
            os.environ.pop(k, None)

    def tearDown(self):
        for k, v in self.saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        super().tearDown()

    def effective(self, con, table):
        return self.info(con, table)["cache"]["effective"]

    def last_cache(self, con):
        return json.loads(con.execute("SELECT colstore_last_plan()").fetchone()[0])["cache"]

    def small_store(self, con, name="s.cst", rows=5000):
        path = self.path(name)
        con.execute("SELECT colstore_create(?, 'WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c "
                    "WHERE x < %d) SELECT x AS a, x * 0.5 AS f FROM c')" % (rows - 1), (path,))
        return path

    def test_randomized_session_matches_native(self):
        os.environ["COLSTORE_CACHE_AUTO_GAP_MS"] = "0"
        rng = random.Random(SEED)
        path = self.path("m.cst")
        w = self.connect("nat.db")
        w.execute("PRAGMA synchronous = OFF")
        mirror = cstest.MutationMirror(self, w, path, rng, SEED)

        def append(k):  # one transaction: a commit per row would be a record per row
            w.execute("BEGIN")
            mirror.insert(k)
            w.execute("COMMIT")

        append(START_ROWS)
        r = self.connect()
        r.execute("ATTACH ? AS nat", (self.path("nat.db"),))
        for t, cache in (("tm", "map"), ("tc", "memory"), ("ta", "auto")):
            r.execute("CREATE VIRTUAL TABLE %s USING colstore('%s', cache=%s)" % (t, path, cache))
        seen = {"map": 0, "memory": 0}

        def check(where, tables=("tm", "tc", "ta"), n_reads=None):
            queries = cstest.MUTATION_QUERIES[:n_reads or len(cstest.MUTATION_QUERIES)]
            for q, ordered in queries:
                want = r.execute(q.format("nat.n")).fetchall()
                for t in tables:
                    got = r.execute(q.format(t)).fetchall()
                    if t == "ta":
                        seen[self.last_cache(r)] += 1
                    if not ordered:
                        want, got = sorted(want, key=repr), sorted(got, key=repr)
                    self.assertEqual(got, want, "COLSTORE_SEED=%d, step %d %s: %s on %s" % (SEED, step, where, q, t))

        for step in range(STEPS):
            action = rng.choice(["append", "append", "delete", "update", "compact", "own", "own", "read"])
            if action == "append":
                append(rng.choice([1, 10, 500, 3000]))
            elif action == "delete":
                mirror.run_selected("DELETE FROM {}")
            elif action == "update":
                mirror.run_selected("UPDATE {} SET a = ?, s = ?", (rng.randint(0, 999), "u%d" % rng.randint(0, 3)))
            elif action == "compact":
                w.execute("SELECT colstore_compact('t')")
            elif action == "own":
                # This connection writes through the auto table: its pending
                # changes must show on it (and only on it) until COMMIT.
                r.execute("BEGIN")
                lo = rng.randrange(0, START_ROWS)
                odd = rng.randint(0, 1)
                for t in ("ta", "nat.n"):
                    r.execute("DELETE FROM %s WHERE rowid BETWEEN ? AND ? AND a %% 2 = ?" % t, (lo, lo + 40, odd))
                v = rng.randint(0, 999)
                r.execute("UPDATE ta SET a = ? WHERE rowid BETWEEN ? AND ?", (v, lo + 50, lo + 60))
                r.execute("UPDATE nat.n SET a = ? WHERE rowid BETWEEN ? AND ?", (v, lo + 50, lo + 60))
                if rng.random() < 0.5:
                    r.execute("INSERT INTO ta (a, f, s) VALUES (?, ?, 'own')", (v, 1.5))
                    r.execute("INSERT INTO nat.n (rowid, a, f, s) VALUES (?, ?, ?, 'own')",
                              (r.execute("SELECT last_insert_rowid()").fetchone()[0], v, 1.5))
                check("own writes pending", tables=("ta",))
                r.execute("COMMIT" if rng.random() < 0.6 else "ROLLBACK")
            # reads on the state the step left: sometimes one statement per
            # table (auto stays on the mapping), sometimes all of them
            check(action, n_reads=rng.choice([1, None, None]))
        self.assertGreater(seen["map"], 10, "COLSTORE_SEED=%d: the auto table never read the mapping" % SEED)
        self.assertGreater(seen["memory"], 10, "COLSTORE_SEED=%d: the auto table never switched to memory" % SEED)
        fresh = cstest.connect()
        fresh.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % path)
        self.assertEqual(fresh.execute("SELECT colstore_verify('t')").fetchone()[0], "ok")
        fresh.close()

    def test_switches_after_a_pause_and_back_after_a_commit(self):
        con = self.connect()
        path = self.small_store(con)
        con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', cache=auto)" % path)
        c = self.info(con, "t")["cache"]
        self.assertEqual((c["requested"], c["effective"], c["bytes"]), ("auto", "map", 0))
        # back to back: the mapping serves them at full speed, no copy
        for _ in range(3):
            self.assertEqual(con.execute("SELECT sum(a) FROM t").fetchone()[0], 5000 * 4999 // 2)
            self.assertEqual(self.last_cache(con), "map")
        time.sleep(0.25)
        self.assertEqual(con.execute("SELECT sum(a) FROM t WHERE f > 10").fetchone()[0], 5000 * 4999 // 2 - 210)
        self.assertEqual(self.last_cache(con), "memory")
        c = self.info(con, "t")["cache"]
        self.assertEqual((c["requested"], c["effective"]), ("auto", "memory"))
        self.assertGreater(c["bytes"], 5000 * 16)
        self.assertEqual(c["read_bytes"], c["bytes"])
        # another connection appends: the next statement reads the new state
        # through the mapping, and copies it only once it proves long-lived
        w = self.connect()
        w.execute("CREATE VIRTUAL TABLE w USING colstore('%s')" % path)
        w.execute("INSERT INTO w VALUES (-1, -1.0)")
        self.assertEqual(con.execute("SELECT count(*), min(a) FROM t").fetchone(), (5001, -1))
        self.assertEqual(self.last_cache(con), "map")
        self.assertEqual(self.effective(con, "t"), "map")
        time.sleep(0.25)
        self.assertEqual(con.execute("SELECT count(*), min(a) FROM t").fetchone(), (5001, -1))
        self.assertEqual(self.last_cache(con), "memory")
        # its own commit refreshes it too
        con.execute("DELETE FROM t WHERE a < 0")
        self.assertEqual(con.execute("SELECT count(*), min(a) FROM t").fetchone(), (5000, 0))
        self.assertEqual(self.last_cache(con), "map")

    def test_one_statement_never_copies(self):
        con = self.connect()
        path = self.small_store(con)
        con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', cache=auto)" % path)
        time.sleep(0.25)
        self.assertEqual(con.execute("SELECT count(*) FROM t").fetchone()[0], 5000)
        self.assertEqual(self.effective(con, "t"), "map")

    def test_what_does_not_fit_stays_on_the_mapping(self):
        con = self.connect()
        path = self.small_store(con)
        con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', cache=auto)" % path)
        try:
            con.execute("SELECT colstore_config('cache_limit', 4096)")
            for _ in range(3):
                self.assertEqual(con.execute("SELECT count(*) FROM t").fetchone()[0], 5000)
                time.sleep(0.25)
            self.assertEqual(self.effective(con, "t"), "map")
        finally:
            con.execute("SELECT colstore_config('cache_limit', 'auto')")
        # a dataset stays on its mappings under auto (documented)
        ddir = self.path("ds")
        os.mkdir(ddir)
        os.rename(path, os.path.join(ddir, "p0.cst"))
        con.execute("CREATE VIRTUAL TABLE d USING colstore('%s', cache=auto)" % ddir)
        for _ in range(3):
            self.assertEqual(con.execute("SELECT count(*) FROM d").fetchone()[0], 5000)
            time.sleep(0.25)
        self.assertEqual(self.info(con, "d")["cache"]["requested"], "auto")
        self.assertEqual(self.effective(con, "d"), "map")

    def test_error_lists_auto(self):
        con = self.connect()
        path = self.small_store(con)
        self.assertSqlError(con, "CREATE VIRTUAL TABLE e USING colstore('%s', cache=sometimes)" % path,
                            contains=("unknown option cache=sometimes", "cache=auto", "cache=memory"))


if __name__ == "__main__":
    unittest.main()
