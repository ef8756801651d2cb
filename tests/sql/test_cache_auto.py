"""cache=auto: a table that starts on the mapping and, once it has proved
long-lived, copies its store into memory on a background thread and reads
the copy from a later statement on.

Why these tests.  cache=auto changes where a table reads its bytes at a
moment the user does not choose (a later statement's start, when a copy
started in the background by an earlier one has finished), and goes back
to the mapping when a commit refreshes it.  Three things can go wrong: the
copy could show another state than the mapping (a commit that landed while
it was made, the table's own pending writes, deleted rows, updated chunks,
a compacted file), the switch could not happen at all (then the option is
a no-op and every figure in docs/performance.md is wrong), and the thread
could outlive what it copies (a table dropped, a connection closed, a
process forked while it runs).  So:

* a randomized session (seed COLSTORE_SEED, printed on failure) where a
  second connection appends, deletes, updates and compacts the store and a
  native mirror of it, while the first connection reads it through three
  tables, cache=map, cache=memory and cache=auto, and writes through the
  auto one in transactions it commits or rolls back (reading its own
  pending changes in between), with short random pauses so that copies
  finish at random points; every read must equal the native mirror.
  The gap rule is set to 0 ms here (COLSTORE_CACHE_AUTO_GAP_MS) so the auto
  table starts a copy at its second statement of every snapshot, and the
  test counts that it read from the mapping and from the copy both, many
  times;
* the switch itself, with the default rule and real pauses, seen where the
  cache is reported (colstore_info's cache.effective, colstore_last_plan's
  cache): one statement, or statements back to back, stay on the mapping;
  the statement after a 0.25 s pause starts the copy and still reads the
  mapping, a later one reads the copy; another connection's commit puts the
  table back on the mapping until it proves long-lived again; a commit
  (another connection's, or the table's own) that lands while a copy runs
  discards it; a store over the cache limit, and a dataset, stay on the
  mapping;
* dropping the table, closing the connection, or forking while a copy runs
  (a store of tens of MB, so the copy is still running): prompt and clean
  (run under ASan by the sanitizer build: a use after free or a thread
  left running fails there), and a forked child neither waits for the
  parent's thread nor reads its copy;
* the option's spelling in the error that lists the options.

A copy failing midway (out of memory at every allocation of the background
thread in turn) is tests/alloc/check_alloc_fail.c's "scan cache=auto, copy
fails" scenario.
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
        self.saved_env = {k: os.environ.get(k) for k in
                          ("COLSTORE_CACHE_AUTO_GAP_MS", "COLSTORE_CACHE_AUTO_READS", "COLSTORE_CACHE_AUTO_WAIT")}
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
            # table (auto stays on the mapping), sometimes all of them; a
            # pause now and then lets a copy in flight finish before them
            if rng.random() < 0.3:
                time.sleep(rng.choice([0.002, 0.01, 0.05]))
            check(action, n_reads=rng.choice([1, None, None]))
        self.assertGreater(seen["map"], 10, "COLSTORE_SEED=%d: the auto table never read the mapping" % SEED)
        self.assertGreater(seen["memory"], 10, "COLSTORE_SEED=%d: the auto table never switched to memory" % SEED)
        fresh = cstest.connect()
        fresh.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % path)
        self.assertEqual(fresh.execute("SELECT colstore_verify('t')").fetchone()[0], "ok")
        fresh.close()

    def until_memory(self, con, sql, want, limit=200):
        """Runs sql (answer want) until the table reads the copy; how many runs."""
        for n in range(1, limit + 1):
            self.assertEqual(con.execute(sql).fetchall(), want)
            if self.last_cache(con) == "memory":
                return n
            time.sleep(0.02)
        self.fail("the table never read its copy in %d statements" % limit)

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
        # the statement that finds the table long-lived starts the copy and
        # reads the mapping; a later one reads the copy
        self.assertEqual(con.execute("SELECT sum(a) FROM t WHERE f > 10").fetchone()[0], 5000 * 4999 // 2 - 210)
        self.assertEqual(self.last_cache(con), "map")
        self.assertEqual(self.effective(con, "t"), "map")
        self.until_memory(con, "SELECT count(*) FROM t", [(5000,)])
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
        self.assertEqual(self.last_cache(con), "map")
        self.until_memory(con, "SELECT count(*), min(a) FROM t", [(5001, -1)])
        # its own commit refreshes it too
        con.execute("DELETE FROM t WHERE a < 0")
        self.assertEqual(con.execute("SELECT count(*), min(a) FROM t").fetchone(), (5000, 0))
        self.assertEqual(self.last_cache(con), "map")

    def test_wait_knob_swaps_at_the_next_statement(self):
        # COLSTORE_CACHE_AUTO_WAIT: the statement after the one that started
        # the copy waits for it, so the swap lands exactly there
        os.environ["COLSTORE_CACHE_AUTO_GAP_MS"] = "0"
        os.environ["COLSTORE_CACHE_AUTO_WAIT"] = "1"
        con = self.connect()
        path = self.small_store(con)
        con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', cache=auto)" % path)
        got = []
        for _ in range(4):
            self.assertEqual(con.execute("SELECT count(*) FROM t").fetchone()[0], 5000)
            got.append(self.last_cache(con))
        self.assertEqual(got, ["map", "map", "memory", "memory"])

    def big_store(self, con, rows=2000000):
        path = self.path("big.cst")
        con.execute("SELECT colstore_create(?, 'WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c "
                    "WHERE x < %d) SELECT x AS a, x * 0.5 AS f, x %% 7 AS b, -x AS d FROM c')" % (rows - 1), (path,))
        return path, rows

    def test_a_commit_during_the_copy_discards_it(self):
        os.environ["COLSTORE_CACHE_AUTO_GAP_MS"] = "0"
        con = self.connect()
        path, rows = self.big_store(con)
        con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', cache=auto)" % path)
        w = self.connect()
        w.execute("CREATE VIRTUAL TABLE w USING colstore('%s')" % path)
        for own in (False, True):
            self.assertEqual(con.execute("SELECT count(*) FROM t").fetchone()[0], rows)
            self.assertEqual(con.execute("SELECT count(*) FROM t").fetchone()[0], rows)  # starts the copy
            self.assertEqual(self.last_cache(con), "map")
            if own:  # the table's own commit
                con.execute("INSERT INTO t (a, f, b, d) VALUES (-1, 0.0, 0, 0)")
            else:
                w.execute("INSERT INTO w (a, f, b, d) VALUES (-1, 0.0, 0, 0)")
            rows += 1
            # the new state, through the mapping; the old state's copy, finished
            # or not, is never swapped in (it would read rows - 1 rows); the
            # second statement starts the new state's copy (gap rule 0 ms)
            for _ in range(2):
                self.assertEqual(con.execute("SELECT count(*), min(a) FROM t").fetchone(), (rows, -1))
                self.assertEqual(self.last_cache(con), "map")
            self.until_memory(con, "SELECT count(*), min(a) FROM t", [(rows, -1)])
            con.execute("DELETE FROM t WHERE a < 0")
            rows -= 1

    def test_drop_close_and_fork_during_the_copy(self):
        os.environ["COLSTORE_CACHE_AUTO_GAP_MS"] = "0"
        con = self.connect()
        path, rows = self.big_store(con)
        con.close()

        def started():
            c = self.connect()
            c.execute("CREATE VIRTUAL TABLE t USING colstore('%s', cache=auto)" % path)
            for _ in range(2):  # the second starts the copy
                self.assertEqual(c.execute("SELECT count(*) FROM t").fetchone()[0], rows)
            return c

        # DROP TABLE, then the connection goes on
        c = started()
        t = time.perf_counter()
        c.execute("DROP TABLE t")
        dropped = time.perf_counter() - t
        self.assertEqual(c.execute("SELECT 1").fetchone()[0], 1)
        c.close()
        # closing the connection
        c = started()
        t = time.perf_counter()
        c.close()
        closed = time.perf_counter() - t
        # a copy stops at its next 16 MiB piece: well under the whole copy
        # (about a second for these ~60 MB on a loaded host)
        self.assertLess(max(dropped, closed), 5.0)
        # fork(): the child has no copy thread; it reads the mapping and
        # closes without waiting for the parent's
        c = started()
        r, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover (the child)
            try:
                os.close(r)
                ok = all(c.execute("SELECT count(*) FROM t").fetchone()[0] == rows for _ in range(3))
                ok = ok and self.last_cache(c) == "map"
                c.close()
                os.write(wfd, b"ok" if ok else b"bad")
            finally:
                os._exit(0)
        os.close(wfd)
        deadline = time.time() + 30
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.time() > deadline:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                self.fail("the forked child hung")
            time.sleep(0.05)
        self.assertEqual(os.read(r, 16), b"ok")
        os.close(r)
        # the parent's copy is unaffected: it swaps in
        self.until_memory(c, "SELECT count(*) FROM t", [(rows,)])
        c.close()

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
