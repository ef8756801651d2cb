"""colstore_compact (docs/sql.md "Writing" and "Functions").

A compaction must be invisible except where the contract says it shows:
without 'renumber' every query gives what it gave before, rowids included;
with it the rows are those of a native table rebuilt in rowid order with
rowids 0..n-1.  Both are checked against a native table given the same
statements, before and after, from this connection, from another that had
the table open, and from a fresh one.  Then what must never happen: a
committed row lost to the rename (a writer in another process appends
throughout), a compaction that changes anything when it fails (damage,
pending changes, a bad argument, a dataset), a half-written store after
SIGKILL, and pending positions of another transaction applied to renumbered
rows (its COMMIT is refused with SQLITE_BUSY instead).

The randomized part runs random DELETE/UPDATE/INSERT/ROLLBACK sequences
with compactions (both kinds) in between, comparing a battery of queries
after every step and from a fresh connection at the end; the seed is in
every failure.
"""
import json
import os
import random
import sys
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402

R = cstest.RECORD_ROWS

# The mutation battery, and one query that compares rows by order alone
# (what a renumbering compaction must keep).
QUERIES = cstest.MUTATION_QUERIES + [("SELECT a, f, s FROM {} ORDER BY rowid", True)]


def series(hi):
    """0..hi as a table of `value` (the stdlib's SQLite has no generate_series)."""
    return "(WITH RECURSIVE s(value) AS (SELECT 0 UNION ALL SELECT value + 1 FROM s WHERE value < %d) SELECT value FROM s)" % hi


def compact(con, target, renumber=False):
    sql = "SELECT colstore_compact(?, 'renumber')" if renumber else "SELECT colstore_compact(?)"
    return json.loads(con.execute(sql, (target,)).fetchone()[0])


def renumber_native(con, table="n"):
    """What 'renumber' does, done to a native table: rowids 0..n-1 in rowid order."""
    con.execute("CREATE TEMP TABLE keep AS SELECT a, f, s FROM %s ORDER BY rowid" % table)
    con.execute("DELETE FROM %s" % table)
    con.execute("INSERT INTO %s (rowid, a, f, s) SELECT rowid - 1, a, f, s FROM temp.keep ORDER BY rowid" % table)
    con.execute("DROP TABLE temp.keep")


class Basics(cstest.MirrorTest):

    def setUp(self):
        super().setUp()
        self.p = self.path("c.cst")
        self.con = self.connect()
        self.n = R + 3000  # two records
        self.con.execute("CREATE TABLE n (a INTEGER, f REAL, s TEXT)")
        self.con.execute("INSERT INTO n (rowid, a, f, s) SELECT value, value * 3 % 1000, value * 0.5, "
                         "'s' || (value % 17) FROM " + series(self.n - 1))
        self.con.execute("SELECT colstore_create(?, 'SELECT a, f, s FROM n ORDER BY rowid')", (self.p,))
        self.con.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % self.p)
        self.both("DELETE FROM {} WHERE a > 900")
        self.both("UPDATE {} SET s = 'u' || a, f = -f WHERE rowid % 97 = 3")
        self.both("DELETE FROM {} WHERE rowid BETWEEN 100 AND 5000")
        for k in range(5):  # small records
            self.con.execute("INSERT INTO n (rowid, a, f, s) VALUES (?, ?, ?, ?)", (self.n + k, k, k * 1.5, None))
            self.con.execute("INSERT INTO t (a, f, s) VALUES (?, ?, ?)", (k, k * 1.5, None))
        self.n += 5

    def battery(self, con=None):
        """The battery on this connection's n against t (another connection's t when con is given)."""
        cstest.assert_mirrored(self, self.con, "other connection" if con else "this connection", QUERIES, other=con)

    def test_compact_keeps_every_rowid_and_answer(self):
        other = self.connect()
        other.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % self.p)
        self.battery(other)
        before = self.info(self.con, "t")
        live = self.con.execute("SELECT count(*) FROM n").fetchone()[0]
        rep = compact(self.con, "t")
        self.assertEqual(rep["renumbered"], False)
        self.assertEqual(rep["before"]["rows"], live)
        self.assertEqual(rep["before"]["positions"], self.n)
        self.assertEqual(rep["before"]["records"], before["records"])
        self.assertEqual(rep["before"]["bytes"], before["bytes"])
        self.assertGreater(rep["before"]["free_bytes"], 0)  # the UPDATE's replaced chunks
        self.assertEqual((rep["after"]["rows"], rep["after"]["positions"], rep["after"]["records"], rep["after"]["free_bytes"]),
                         (live, self.n, 2, 0))
        self.assertLess(rep["after"]["bytes"], rep["before"]["bytes"])
        self.assertEqual(rep["generation"], before["generation"] + 1)
        self.assertEqual(rep["records_copied"], 1)  # the first full record, byte for byte; the rest re-laid
        after = self.info(self.con, "t")
        self.assertEqual((after["rows"], after["positions"], after["records"], after["bytes"], after["generation"]),
                         (live, self.n, 2, rep["after"]["bytes"], rep["generation"]))
        self.battery()
        self.battery(other)  # a connection that had the old file open
        fresh = self.connect()
        fresh.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % self.p)
        self.battery(fresh)
        self.assertEqual(fresh.execute("SELECT colstore_verify('t')").fetchone()[0], "ok")
        # and the compacted store takes writes as before
        self.both("DELETE FROM {} WHERE rowid = 7")
        self.both("UPDATE {} SET a = a + 1 WHERE rowid BETWEEN 6000 AND 6010")
        self.con.execute("INSERT INTO n (rowid, a, f, s) VALUES (?, 1, 2.0, 'x')", (self.n,))
        self.con.execute("INSERT INTO t (a, f, s) VALUES (1, 2.0, 'x')")
        self.battery()

    def test_renumber_gives_the_rows_in_order_as_rowids_0_to_n(self):
        live = self.con.execute("SELECT count(*) FROM n").fetchone()[0]
        rep = compact(self.con, self.p, renumber=True)  # by path
        self.assertEqual(rep["renumbered"], True)
        self.assertEqual((rep["after"]["rows"], rep["after"]["positions"], rep["after"]["records"]), (live, live, 1))
        renumber_native(self.con)
        self.battery()
        info = self.info(self.con, "t")
        self.assertEqual((info["rows"], info["positions"], info["format_version"]), (live, live, 1))
        self.assertEqual(self.con.execute("SELECT min(rowid), max(rowid) FROM t").fetchone(), (0, live - 1))
        # _rows and _mask address the new positions
        blob = b"".join(int(r).to_bytes(8, "little") for r in (0, live - 1, 5))
        self.assertEqual(self.con.execute("SELECT a FROM t WHERE _rows = ?", (blob,)).fetchall(),
                         self.con.execute("SELECT a FROM n WHERE rowid IN (0, ?, 5) ORDER BY rowid = 5, rowid", (live - 1,)).fetchall())
        self.assertEqual(self.con.execute("SELECT count(*) FROM t WHERE _mask = ?", (b"\x01" * live,)).fetchone()[0], live)

    def test_refusals_change_nothing(self):
        before = self.state(self.con, "t", self.p)
        self.assertSqlError(self.con, "SELECT colstore_compact('t', 'renumbr')", code="SQLITE_MISUSE", contains=("usage",))
        self.assertSqlError(self.con, "SELECT colstore_compact(NULL)", code="SQLITE_MISUSE", contains=("usage",))
        self.assertSqlError(self.con, "SELECT colstore_compact(?)", (self.path("none.cst"),), code="SQLITE_CANTOPEN")
        self.assertSqlError(self.con, "SELECT colstore_compact(?)", (self.dir,), code="SQLITE_MISUSE", contains=("dataset", "each"))
        # this connection's uncommitted changes
        for write in ("DELETE FROM t WHERE rowid = 6000", "UPDATE t SET a = 1 WHERE rowid = 6000", "INSERT INTO t VALUES (1, 1.0, 'x')"):
            self.con.execute("BEGIN")
            self.con.execute(write)
            self.assertSqlError(self.con, "SELECT colstore_compact('t')", code="SQLITE_BUSY", contains=("uncommitted", "COMMIT"))
            # the same file by another spelling of its path
            self.assertSqlError(self.con, "SELECT colstore_compact(?)", (os.path.join(self.dir, ".", "c.cst"),), code="SQLITE_BUSY")
            self.con.execute("ROLLBACK")
        self.assertStateUnchanged(before, self.con, "t", self.p, "refused compactions")
        # damage in a live chunk (record 0's column a, which no UPDATE replaced): refused, file untouched
        data = bytearray(cstest.read_bytes(self.p))
        data[8192] ^= 0x40
        cstest.write_bytes(self.p, bytes(data))
        self.assertSqlError(self.con, "SELECT colstore_compact(?)", (self.p,), code="SQLITE_CORRUPT", contains=("checksum",))
        self.assertEqual(cstest.read_bytes(self.p), bytes(data))
        self.assertEqual(sorted(os.listdir(self.dir)), ["c.cst"])  # no temporary file left

    def test_another_transactions_pending_positions_are_refused_after_renumber(self):
        other = self.connect()
        other.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % self.p)
        other.execute("BEGIN")
        other.execute("DELETE FROM t WHERE rowid = 6000")
        compact(self.con, "t", renumber=True)
        self.assertSqlError(other, "COMMIT", code="SQLITE_BUSY", contains=("replaced",))
        other.execute("ROLLBACK")
        renumber_native(self.con)
        self.battery(other)
        # pending INSERTs only are appended to the new file
        other.execute("BEGIN")
        other.execute("INSERT INTO t VALUES (5, 5.5, 'late')")
        compact(self.con, "t")
        other.execute("COMMIT")
        live = self.con.execute("SELECT count(*) FROM n").fetchone()[0]
        self.assertEqual(self.con.execute("SELECT rowid, a, f, s FROM t WHERE s = 'late'").fetchall(), [(live, 5, 5.5, "late")])


class RandomMutations(cstest.StoreTest):
    """Random DELETE/UPDATE/INSERT/ROLLBACK sequences with compactions in between."""

    def run_seed(self, seed, steps, record_rows):
        rng = random.Random(seed)
        con = self.connect()
        p = self.path("m%d.cst" % seed)
        m = cstest.MutationMirror(self, con, p, rng, seed)
        run = m.run
        next_row = [0]

        def insert(k):
            con.execute("BEGIN")
            next_row[0] = m.insert(k) + k
            con.execute("COMMIT")

        for _ in range(3):
            insert(rng.randint(1, record_rows))
        log = []
        for step in range(steps):
            op = rng.choice(["delete", "delete", "update", "insert", "rolled_back", "compact", "renumber"])
            log.append(op)
            where = "seed %d step %d (%s)" % (seed, step, " ".join(log[-8:]))
            if op == "delete":
                lo = rng.randint(0, 999)
                run("DELETE FROM {} WHERE a BETWEEN ? AND ?", (lo, lo + rng.randint(0, 60)))
            elif op == "update":
                lo = rng.randrange(max(1, next_row[0]))
                run("UPDATE {} SET a = (a * 7 + 3) % 1000, s = CASE WHEN s IS NULL THEN 'n' ELSE NULL END "
                    "WHERE rowid BETWEEN ? AND ?", (lo, lo + rng.randint(0, 150)))
            elif op == "insert":
                insert(rng.randint(1, 200))
            elif op == "rolled_back":
                con.execute("BEGIN")
                run("DELETE FROM {} WHERE a < ?", (rng.randint(0, 500),))
                con.execute("ROLLBACK")
            elif op == "compact":
                rep = compact(con, "t")
                self.assertEqual(rep["after"]["free_bytes"], 0, where)
            elif op == "renumber":
                compact(con, "t", renumber=True)
                renumber_native(con)
                next_row[0] = con.execute("SELECT count(*) FROM n").fetchone()[0]
            cstest.assert_mirrored(self, con, where, QUERIES)
        cstest.assert_reopened(self, con, p, "seed %d" % seed)

    def test_random_sequences(self):
        for seed in (201, 202, 203):
            self.run_seed(seed, cstest.scaled(40, 15), 400)

    def test_random_sequences_across_records(self):
        self.run_seed(204, cstest.scaled(15, 6), R + 100)


CHILD_APPENDER = r"""
import sys, cstest
con = cstest.connect()
con.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % sys.argv[1])
print("ready", flush=True)
k = 0
while True:
    con.execute("INSERT INTO t VALUES (?)", (k,))
    print(k, flush=True)
    k += 1
"""

CHILD_COMPACTOR = r"""
import sys, cstest
con = cstest.connect()
print("ready", flush=True)
k = 0
while True:
    con.execute("SELECT colstore_compact(?%s)" % (", 'renumber'" if k % 2 else ""), (sys.argv[1],)).fetchone()
    k += 1
"""


class Concurrency(cstest.StoreTest):

    def test_no_committed_row_is_lost_to_a_compaction(self):
        con = self.connect()
        p = self.path("w.cst")
        con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', g INT64)" % p)
        con.execute("INSERT INTO t SELECT value FROM " + series(999))
        con.execute("DELETE FROM t WHERE g % 3 = 0")  # something to renumber
        child = cstest.CommitReporter(CHILD_APPENDER, p)
        self.assertEqual(child.ready, "ready")
        # The child's appends must overlap the compactions, whatever the
        # host's speed: a reader thread collects each committed k; the
        # compactions start after the first commit and go on until the child
        # has committed more rows while they ran (a fixed count of compactions
        # once finished before a slow child's first INSERT, and proved nothing).
        committed = child.values
        deadline = time.monotonic() + 60
        while not committed and time.monotonic() < deadline and child.proc.poll() is None:
            time.sleep(0.005)
        self.assertGreater(len(committed), 0, "the appender committed nothing in 60 s")
        reports = []
        seen_at_start = len(committed)
        while (len(reports) < cstest.scaled(12, 5) or len(committed) < seen_at_start + 20) and time.monotonic() < deadline:
            reports.append(compact(con, "t", renumber=bool(len(reports) % 2)))
        rc = child.proc.poll()
        self.assertIsNone(rc, "the appender exited (%s): %s" % (rc, child.proc.stderr.read() if rc is not None else ""))
        err = child.stop()
        self.assertGreater(len(committed), seen_at_start, "no append committed during the compactions " + err)
        got = {g for (g,) in con.execute("SELECT g FROM t WHERE rowid >= 0 AND g < 1000000")}
        original = {g for g in range(1000) if g % 3}
        # every committed append is there (the child printed k after COMMIT); it
        # appended 0, 1, ... which overlap the original values, so count them
        counts = dict(con.execute("SELECT g, count(*) FROM t GROUP BY g").fetchall())
        for k in committed:
            self.assertEqual(counts.get(k, 0), (1 if k in original else 0) + 1, "append %d lost (%d compactions)" % (k, len(reports)))
        self.assertTrue(original <= got)
        self.assertEqual(con.execute("SELECT colstore_verify('t')").fetchone()[0], "ok")

    def test_sigkill_during_compactions_leaves_one_whole_store(self):
        con = self.connect()
        p = self.path("k.cst")
        con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', g INT64, s TEXT)" % p)
        con.execute("INSERT INTO t SELECT value, 'v' || value FROM " + series(3 * R // 2))
        con.execute("DELETE FROM t WHERE g % 5 = 1")
        con.execute("UPDATE t SET s = 'u' || g WHERE g % 7 = 2")
        want = con.execute("SELECT g, s FROM t ORDER BY rowid").fetchall()
        rng = random.Random(99)
        for attempt in range(cstest.scaled(6, 3)):
            fresh = self.after_sigkill(CHILD_COMPACTOR, p, rng.uniform(0.05, 0.8))
            self.assertEqual(fresh.execute("SELECT g, s FROM t ORDER BY rowid").fetchall(), want, "attempt %d" % attempt)
            positions = self.info(fresh, "t")["positions"]
            self.assertIn(positions, (3 * R // 2 + 1, len(want)), "attempt %d" % attempt)
            fresh.close()



NOBODY = 65534  # nobody and nogroup on Debian

CHILD_AS_NOBODY = r"""
import os, sys, sqlite3, cstest
os.setgroups([]); os.setgid(%d); os.setuid(%d)
con = cstest.connect()
try:
    con.execute(sys.argv[2], (sys.argv[1],)).fetchone()
    print("ok")
except sqlite3.Error as e:
    print(str(e))
""" % (NOBODY, NOBODY)


class Permissions(cstest.StoreTest):
    """docs/security.md 5: a compaction or a colstore_create 'replace' keeps
    the store's mode, owner and group, or fails before the rename.  CI runs
    as root, which can chown a store to nobody:nogroup; elsewhere the owner
    parts print SKIP and the mode parts run."""

    def make(self, name, mode, owner):
        con = self.connect()
        p = self.path(name)
        con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', g INT64)" % p)
        for k in range(6):
            con.execute("INSERT INTO t VALUES (?)", (k,))
        os.chmod(p, mode)
        if owner is not None:
            os.chown(p, owner[0], owner[1])
        return con, p

    def root_or_skip(self, what):
        if os.geteuid() != 0:
            print("SKIP (not root): " + what, file=sys.stderr)
            return False
        return True

    def test_compact_and_replace_keep_mode_owner_and_group(self):
        root = self.root_or_skip("owner nobody:nogroup kept by compact and replace; the mode part runs")
        for mode in (0o600, 0o640, 0o444):
            for how in ("compact", "renumber", "replace"):
                con, p = self.make("%s-%o.cst" % (how, mode), mode, (NOBODY, NOBODY) if root else None)
                before = os.stat(p)
                if how == "replace":
                    con.execute("SELECT colstore_create(?, 'SELECT 1 AS x', 'replace')", (p,))
                else:
                    compact(con, p, renumber=how == "renumber")
                after = os.stat(p)
                ctx = "%s of a %o store" % (how, mode)
                self.assertNotEqual(after.st_ino, before.st_ino, ctx)
                self.assertEqual(oct(after.st_mode & 0o7777), oct(mode), ctx)
                self.assertEqual((after.st_uid, after.st_gid), (before.st_uid, before.st_gid), ctx)
                self.assertEqual(sorted(os.listdir(self.dir)), sorted(x for x in os.listdir(self.dir) if ".tmp." not in x))

    def test_new_store_mode_is_0644_less_the_umask(self):
        con = self.connect()
        for mask in (0o022, 0o077):
            p = self.path("u%o.cst" % mask)
            was = os.umask(mask)
            try:
                con.execute("SELECT colstore_create(?, 'SELECT 1 AS x')", (p,))
            finally:
                os.umask(was)
            self.assertEqual(oct(os.stat(p).st_mode & 0o7777), oct(0o644 & ~mask))

    def test_a_user_who_cannot_keep_the_owner_is_refused_before_the_rename(self):
        if not self.root_or_skip("a non-root user refused a compaction that would change the owner"):
            return
        import subprocess
        os.chmod(self.dir, 0o777)
        # root:nogroup at 0660 lets nobody write it (as a member of nogroup) but not own it
        for owner, ok in (((0, NOBODY), False), ((NOBODY, 0), False), ((NOBODY, NOBODY), True)):
            for sql in ("SELECT colstore_compact(?)", "SELECT colstore_create(?, 'SELECT 1 AS x', 'replace')"):
                con, p = self.make("o%d-%d-%d.cst" % (owner + (len(sql),)), 0o660, owner)
                con.close()
                before = os.stat(p)
                data = cstest.read_bytes(p)
                out = subprocess.run([cstest.PYTHON, "-c", CHILD_AS_NOBODY, p, sql], capture_output=True, text=True,
                                     env=cstest.child_env(), timeout=120)
                ctx = "%s on a store owned by %s: %s" % (sql, owner, out.stderr)
                msg = out.stdout.strip()
                after = os.stat(p)
                self.assertEqual((after.st_uid, after.st_gid, after.st_mode & 0o7777), owner + (0o660,), ctx)
                if ok:
                    self.assertEqual(msg, "ok", ctx)
                    self.assertNotEqual(after.st_ino, before.st_ino, ctx)
                else:
                    self.assertTrue(msg.startswith("colstore: cannot give the new"), ctx + " said " + msg)
                    self.assertEqual(after.st_ino, before.st_ino, ctx)
                    self.assertTrue(cstest.read_bytes(p) == data, ctx)
                self.assertFalse([x for x in os.listdir(self.dir) if ".tmp." in x], ctx)


if __name__ == "__main__":
    cstest.main()
