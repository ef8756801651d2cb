"""Automatic compaction after small commits (issue 20, item 7).

A store fed by single-row autocommit INSERTs used to keep a record per
commit (593 bytes a 16-byte row, and a footer that every commit rewrote
whole).  Now a commit that leaves many small records compacts the store
under the writer lock it still holds, when the rewrite costs at most
colstore_config('auto_compact') times the bytes it wins back
(docs/performance.md, "Small transactions").  Nothing a user can see may
change but the file's size and record count: rowids never move (the
compaction keeps deleted positions as gaps), a reader in the middle of a
statement keeps its snapshot and sees the new rows from its next one, a
writer in another process loses no commit to the rename, another
connection's pending DELETE is refused at COMMIT rather than applied to
positions of another file, and a SIGKILL at any instant loses no
acknowledged row.  The randomized part draws streams of small autocommit
INSERTs interleaved with DELETE, UPDATE, reads and savepoint transactions
against a native table, with compactions firing all the time (a huge
ratio), from fixed seeds that every failure prints.

Each test sets the ratio it needs and puts back the default, because the
setting belongs to the process.
"""
import json
import os
import random
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402

DEFAULT = 4
EAGER = 1000000  # compact whenever at least 8 small records are there


class AutoTest(cstest.StoreTest):

    def setUp(self):
        super().setUp()
        self._held = {}
        self.con = self.connect()
        self.set(DEFAULT)

    def tearDown(self):
        self.con.execute("SELECT colstore_config('auto_compact', ?)", (DEFAULT,))
        for fd in self._held.values():
            os.close(fd)
        super().tearDown()

    def set(self, ratio):
        self.assertEqual(self.con.execute("SELECT colstore_config('auto_compact', ?)", (ratio,)).fetchone()[0], ratio)

    def ino(self, p):
        """The inode p names now.  Each file seen is kept open until the
        test ends: a file a rename replaced would otherwise free its inode
        number for the next compaction's file, and two files could not be
        told apart by it."""
        fd = os.open(p, os.O_RDONLY)
        ino = os.fstat(fd).st_ino
        if ino in self._held:
            os.close(fd)
        else:
            self._held[ino] = fd
        return ino


class Basics(AutoTest):

    def test_setting(self):
        self.assertEqual(self.con.execute("SELECT colstore_config('auto_compact')").fetchone()[0], DEFAULT)
        self.assertEqual(self.con.execute("SELECT colstore_config('auto_compact', 'off')").fetchone()[0], 0)
        for bad in (-1, 2.5, "x", 10000001):
            self.assertSqlError(self.con, "SELECT colstore_config('auto_compact', ?)", (bad,), contains=("auto_compact", "default 4"))
        self.assertEqual(self.con.execute("SELECT colstore_config('auto_compact')").fetchone()[0], 0)
        self.con.execute("CREATE VIRTUAL TABLE s USING colstore('%s', a INT64)" % self.path("s.cst"))
        self.con.execute("SELECT count(*) FROM s").fetchone()
        settings = json.loads(self.con.execute("SELECT colstore_last_plan()").fetchone()[0])["settings"]
        self.assertEqual(settings["auto_compact"], 0)

    def test_single_row_inserts_stay_compact_and_keep_their_rowids(self):
        p, q = self.path("ac.cst"), self.path("one.cst")
        self.con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', a INT64, b FLOAT64)" % p)
        self.con.execute("CREATE VIRTUAL TABLE o USING colstore('%s', a INT64, b FLOAT64)" % q)
        n = 1500
        # A compaction shows as the file shrinking (it runs only when it wins
        # back a quarter of the file); inode numbers cannot count them, since
        # the file a rename frees gives its number to the next one.
        shrinks, size = 0, os.path.getsize(p)
        for i in range(n):
            self.con.execute("INSERT INTO t VALUES (?, ?)", (i * 7919 % 1000, i / 2))
            now = os.path.getsize(p)
            shrinks += now < size
            size = now
        self.con.execute("BEGIN")
        for i in range(n):
            self.con.execute("INSERT INTO o VALUES (?, ?)", (i * 7919 % 1000, i / 2))
        self.con.execute("COMMIT")
        self.assertGreater(shrinks, 5, "no automatic compaction ran")
        auto, one = self.info(self.con, p), self.info(self.con, q)
        self.assertLessEqual(auto["bytes"], 2 * one["bytes"], (auto, one))
        self.assertLess(auto["records"], n // 10, auto)
        self.assertEqual(auto["positions"], n)
        self.assertEqual(self.con.execute("SELECT rowid, a, b FROM t ORDER BY rowid").fetchall(),
                         [(i, i * 7919 % 1000, i / 2) for i in range(n)])
        self.assertEqual(self.con.execute("SELECT colstore_verify('t')").fetchone()[0], "ok")
        # The plan reads the compacted file's records, not one per commit.
        self.con.execute("SELECT sum(b) FROM t WHERE a > 500").fetchone()
        plan = json.loads(self.con.execute("SELECT colstore_last_plan()").fetchone()[0])
        self.assertEqual(plan["records_scanned"] + plan["records_skipped"], auto["records"])

    def test_off_keeps_a_record_per_commit(self):
        self.set(0)
        p = self.path("off.cst")
        self.con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', a INT64)" % p)
        for i in range(40):
            self.con.execute("INSERT INTO t VALUES (?)", (i,))
        self.assertEqual(self.info(self.con, p)["records"], 40)

    def test_deleted_positions_stay_gaps(self):
        self.set(EAGER)
        p = self.path("d.cst")
        self.con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', a INT64)" % p)
        self.con.execute("CREATE TABLE n (a INTEGER)")
        for i in range(300):
            for tb in ("t", "n"):
                self.con.execute("INSERT INTO %s VALUES (?)" % tb, (i,))
            if i % 7 == 3:
                for tb in ("t", "n"):
                    self.con.execute("DELETE FROM %s WHERE rowid = ?" % tb, (i - 2 + (tb == "n"),))
        got = self.con.execute("SELECT rowid, a FROM t ORDER BY rowid").fetchall()
        want = [(r - 1, a) for r, a in self.con.execute("SELECT rowid, a FROM n ORDER BY rowid")]
        self.assertEqual(got, want)
        info = self.info(self.con, p)
        self.assertEqual(info["positions"], 300)
        self.assertLess(info["records"], 20)


class Interactions(AutoTest):

    def test_a_reader_mid_statement_keeps_its_snapshot_and_sees_new_rows_next(self):
        self.set(EAGER)
        p = self.path("r.cst")
        self.con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', a INT64)" % p)
        for i in range(5):
            self.con.execute("INSERT INTO t VALUES (?)", (i,))
        reader = self.connect()
        reader.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % p)
        cur = reader.execute("SELECT rowid, a FROM t")
        first = cur.fetchone()
        before = self.ino(p)
        for i in range(5, 60):
            self.con.execute("INSERT INTO t VALUES (?)", (i,))
        self.assertNotEqual(self.ino(p), before, "no automatic compaction ran under the reader")
        self.assertEqual([first] + cur.fetchall(), [(i, i) for i in range(5)])
        self.assertEqual(reader.execute("SELECT rowid, a FROM t").fetchall(), [(i, i) for i in range(60)])

    def test_another_connections_pending_delete_is_refused_not_misapplied(self):
        self.set(EAGER)
        p = self.path("b.cst")
        self.con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', a INT64)" % p)
        for i in range(5):
            self.con.execute("INSERT INTO t VALUES (?)", (i,))
        other = self.connect()
        other.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % p)
        other.execute("BEGIN")
        other.execute("DELETE FROM t WHERE a = 3")
        before = self.ino(p)
        for i in range(5, 30):
            self.con.execute("INSERT INTO t VALUES (?)", (i,))
        self.assertNotEqual(self.ino(p), before)
        self.assertSqlError(other, "COMMIT", code="SQLITE_BUSY", contains=("ROLLBACK",))
        other.execute("ROLLBACK")
        self.assertEqual(self.con.execute("SELECT count(*) FROM t").fetchone()[0], 30)
        other.execute("DELETE FROM t WHERE a = 3")  # again, from the new file: positions never moved
        self.assertEqual(self.con.execute("SELECT rowid, a FROM t ORDER BY rowid").fetchall(),
                         [(i, i) for i in range(30) if i != 3])

    def test_writers_in_two_processes_lose_no_commit(self):
        self.set(EAGER)
        p = self.path("w.cst")
        self.con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', g INT64)" % p)
        child = cstest.CommitReporter(CHILD_APPENDER, p, EAGER)
        self.assertEqual(child.ready, "ready")
        committed = child.values
        deadline = time.monotonic() + 60
        mine, inodes = 0, set()
        while (mine < cstest.scaled(300, 100) or len(committed) < 100) and time.monotonic() < deadline:
            self.con.execute("INSERT INTO t VALUES (?)", (-1 - mine,))
            inodes.add(self.ino(p))
            mine += 1
        err = child.stop()
        self.assertGreater(len(committed), 0, "the child committed nothing: " + err)
        self.assertGreater(len(inodes), 2, "no automatic compactions ran")
        got = {g for (g,) in self.con.execute("SELECT g FROM t")}
        self.assertTrue(set(range(-mine, 0)) <= got, "a commit of this process was lost")
        self.assertTrue(set(committed) <= got, "a commit of the child was lost")
        self.assertEqual(self.con.execute("SELECT colstore_verify('t')").fetchone()[0], "ok")

    def test_sigkill_during_automatic_compactions_loses_no_acknowledged_row(self):
        p = self.path("k.cst")
        self.con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', g INT64, s TEXT)" % p)
        self.con.execute("INSERT INTO t SELECT value, 'v' || value FROM (WITH RECURSIVE s(value) AS "
                         "(SELECT 0 UNION ALL SELECT value + 1 FROM s WHERE value < 20000) SELECT value FROM s)")
        rng = random.Random(2020)
        temps = 0
        for attempt in range(cstest.scaled(8, 4)):
            child = cstest.CommitReporter(CHILD_APPENDER, p, EAGER, 100000 * (attempt + 1))
            self.assertEqual(child.ready, "ready")
            acked = child.values
            deadline = time.monotonic() + 60
            while len(acked) < 10 and time.monotonic() < deadline:
                time.sleep(0.002)
            time.sleep(rng.uniform(0, 0.3))
            child.stop()
            temps += len([x for x in os.listdir(self.dir) if ".tmp." in x])
            fresh = self.connect()
            fresh.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % p)
            self.assertEqual(fresh.execute("SELECT colstore_verify('t')").fetchone()[0], "ok", "attempt %d" % attempt)
            got = {g for (g,) in fresh.execute("SELECT g FROM t WHERE g >= 100000")}
            self.assertTrue(set(acked) <= got, "attempt %d: acknowledged rows lost: %s" % (attempt, sorted(set(acked) - got)[:5]))
            self.assertEqual(fresh.execute("SELECT count(*), sum(g) FROM t WHERE g <= 20000").fetchone(), (20001, 20000 * 20001 // 2))
            # A temporary file left by the kill is no member of the directory.
            ds = fresh.execute("SELECT colstore_info(?)", (self.dir,)).fetchone()[0]
            self.assertEqual(len(json.loads(ds)["files"]), 1, ds)
            fresh.close()
        print("SIGKILL: %d temporary files left by kills inside a compaction" % temps, file=sys.stderr)


CHILD_APPENDER = r"""
import sys, cstest
con = cstest.connect()
con.execute("SELECT colstore_config('auto_compact', ?)", (int(sys.argv[2]),))
con.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % sys.argv[1])
n = con.execute("SELECT count(*) FROM pragma_table_info('t')").fetchone()[0]
sql = "INSERT INTO t VALUES (%s)" % ", ".join(["?"] * n)
k = int(sys.argv[3]) if len(sys.argv) > 3 else 0
print("ready", flush=True)
while True:
    con.execute(sql, (k,) + ("c%d" % k,) * (n - 1))
    print(k, flush=True)
    k += 1
"""


class Randomized(AutoTest):
    """Streams of small autocommit INSERTs with DELETE, UPDATE, reads and
    savepoint transactions, against a native table, compactions firing
    whenever 8 small records are there (or at the default ratio)."""

    def run_seed(self, seed, steps, ratio):
        self.set(ratio)
        rng = random.Random(seed)
        con = self.connect()
        p = self.path("r%d.cst" % seed)
        m = cstest.MutationMirror(self, con, p, rng, seed)
        renames, last = 0, None
        for step in range(steps):
            where = "seed %d (ratio %d), step %d" % (seed, ratio, step)
            x = rng.random()
            try:
                if x < 0.55:
                    m.insert(1 if rng.random() < 0.9 else rng.randint(2, 5))
                elif x < 0.65:
                    m.run("DELETE FROM {} WHERE rowid = ?", (rng.randint(0, max(0, step)),))
                elif x < 0.72:
                    m.run("DELETE FROM {} WHERE a BETWEEN ? AND ?", (lambda lo: (lo, lo + 5))(rng.randint(0, 999)))
                elif x < 0.80:
                    m.run("UPDATE {} SET a = ?, s = ? WHERE rowid = ?", (rng.randint(0, 999), "u%d" % step, rng.randint(0, max(0, step))))
                elif x < 0.88:
                    con.execute("BEGIN")
                    m.insert(rng.randint(1, 3))
                    con.execute("SAVEPOINT sp")
                    m.insert(1)
                    m.run("DELETE FROM {} WHERE rowid = ?", (rng.randint(0, max(0, step)),))
                    con.execute("ROLLBACK TO sp" if rng.random() < 0.5 else "RELEASE sp")
                    con.execute("COMMIT" if rng.random() < 0.8 else "ROLLBACK")
                else:
                    cstest.assert_mirrored(self, con, where)
            except AssertionError:
                raise
            except Exception as e:
                raise AssertionError("%s: %s" % (where, e))
            ino = self.ino(p)
            if last is not None and ino != last:
                renames += 1
            last = ino
        cstest.assert_mirrored(self, con, "seed %d, end" % seed)
        cstest.assert_reopened(self, con, p, "seed %d" % seed)
        con.close()
        return renames

    def test_random_streams(self):
        total = 0
        for seed in range(3):
            total += self.run_seed(700 + seed, cstest.scaled(400, 150), EAGER if seed < 2 else DEFAULT)
        self.assertGreater(total, 10, "the streams ran no automatic compaction")


if __name__ == "__main__":
    cstest.main()
