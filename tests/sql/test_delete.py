"""DELETE on colstore tables (docs/sql.md "Writing").

What a user of a native rowid table expects, checked against one: a deleted
row is in no result (scans, counts, rowid =, IN, _rows, _mask, ordered and
grouped delivery, aggregate tables), every other row keeps its rowid, and
the deletion is transactional exactly like INSERT: ROLLBACK, SAVEPOINT, a
failed statement, other connections and processes, SIGKILL at any moment.
The connection that deletes reads its own deletions from its next statement
on, before COMMIT.

The randomized part applies the same random sequence of DELETE, INSERT,
SAVEPOINT, ROLLBACK TO, RELEASE, COMMIT and ROLLBACK to a native table and a
colstore table and compares a battery of queries after every step, then
again from a fresh connection.  A failure prints the seed and the step.
Writes and reads also go through _rows and _mask (cstest.MutationMirror's
run_selected and check_selected_read: repeated, negative and deleted
positions, beside rowid ranges, IN lists and predicates), the native side
naming the same positions with rowid IN.
"""
import json
import os
import random
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402

R = cstest.RECORD_ROWS


def series(hi):
    """0..hi as a table of `value` (the stdlib's SQLite has no generate_series)."""
    return "(WITH RECURSIVE s(value) AS (SELECT 0 UNION ALL SELECT value + 1 FROM s WHERE value < %d) SELECT value FROM s)" % hi


def mask_blob(n, on):
    b = bytearray(n)
    for i in on:
        b[i] = 1
    return bytes(b)


def rows_blob(rows):
    return b"".join(int(r).to_bytes(8, "little", signed=True) for r in rows)


class Basics(cstest.MirrorTest):

    def setUp(self):
        super().setUp()
        self.p = self.path("d.cst")
        self.con = self.connect()
        self.n = R + 3000  # two records
        self.con.execute("CREATE TABLE n (a INTEGER, f REAL, s TEXT)")
        self.con.execute("INSERT INTO n (rowid, a, f, s) SELECT value, value * 3 % 1000, value * 0.5, "
                         "'s' || (value % 17) FROM " + series(self.n - 1))
        self.con.execute("SELECT colstore_create(?, 'SELECT a, f, s FROM n ORDER BY rowid')", (self.p,))
        self.con.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % self.p)

    def test_delete_by_rowid_predicate_and_range_keeps_other_rowids(self):
        info = self.info(self.con, "t")
        self.assertEqual((info["format_version"], info["rows"], info["positions"]), (1, self.n, self.n))
        self.assertEqual(self.both("DELETE FROM {} WHERE rowid = 5"), 1)
        self.assertEqual(self.both("DELETE FROM {} WHERE rowid = 5"), 0)
        self.assertEqual(self.both("DELETE FROM {} WHERE a > 990"), self.con.execute("SELECT changes()").fetchone()[0])
        self.both("DELETE FROM {} WHERE rowid BETWEEN ? AND ?", (R - 10, R + 10))
        self.both("DELETE FROM {} WHERE s = 's3' AND rowid < 1000")
        info = self.info(self.con, "t")
        live = self.con.execute("SELECT count(*) FROM n").fetchone()[0]
        self.assertEqual((info["format_version"], info["rows"], info["positions"]), (2, live, self.n))
        self.same("SELECT rowid, * FROM {}", ordered=False)
        self.same("SELECT rowid, a FROM {} ORDER BY rowid DESC LIMIT 30 OFFSET 7", ordered=True)
        self.same("SELECT rowid FROM {} LIMIT 40 OFFSET ?", (R - 30,), ordered=True)
        self.same("SELECT rowid FROM {} WHERE rowid IN (4, 5, 6, ?, ?)", (R, R + 11))
        self.same("SELECT count(*), sum(a), min(f), max(s) FROM {} WHERE a BETWEEN 100 AND 200")
        self.same("SELECT a, count(*) FROM {} GROUP BY a")
        self.same("SELECT DISTINCT s FROM {}")
        self.same("SELECT rowid, f FROM {} ORDER BY f DESC LIMIT 5", ordered=True)
        self.same("SELECT rowid FROM {} ORDER BY a, rowid LIMIT 20 OFFSET 100", ordered=True)
        # another connection reads the same file
        other = self.connect()
        other.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % self.p)
        self.assertEqual(other.execute("SELECT count(*), sum(rowid) FROM t").fetchone(),
                         self.con.execute("SELECT count(*), sum(rowid) FROM n").fetchone())
        self.assertEqual(other.execute("SELECT colstore_verify('t')").fetchone()[0], "ok")

    def test_deleted_positions_yield_nothing_through_rows_and_mask(self):
        self.both("DELETE FROM {} WHERE rowid IN (1, 3, 5, 66000)")
        got = self.con.execute("SELECT rowid FROM t WHERE _rows = ?", (rows_blob([5, 1, 2, 2, 3, 4, 66000, 65999]),)).fetchall()
        self.assertEqual(got, [(2,), (2,), (4,), (65999,)], "_rows keeps order and duplicates, drops deleted")
        got = self.con.execute("SELECT rowid FROM t WHERE _mask = ?", (mask_blob(self.n, [0, 1, 3, 4, 66000]),)).fetchall()
        self.assertEqual(got, [(0,), (4,)])
        # the mask is as long as the positions, deleted ones included
        self.assertSqlError(self.con, "SELECT count(*) FROM t WHERE _mask = ?", (bytes(self.n - 4),), code="SQLITE_MISMATCH",
                            contains=("%d bytes" % (self.n - 4), "%d row positions" % self.n, "4 deleted"))
        # a _rows position past the live count but below the positions is fine
        self.assertEqual(self.con.execute("SELECT count(*) FROM t WHERE _rows = ?", (rows_blob([self.n - 1]),)).fetchone()[0], 1)

    def test_delete_everything_then_insert(self):
        self.assertEqual(self.both("DELETE FROM {}"), self.n)
        self.assertEqual(self.con.execute("SELECT count(*), min(rowid) FROM t").fetchone(), (0, None))
        self.con.execute("INSERT INTO t VALUES (1, 2.0, 'x')")
        self.assertEqual(self.con.execute("SELECT rowid, a FROM t").fetchall(), [(self.n, 1)],
                         "a new row takes the next position; deleted positions are never reused")

    def test_own_deletions_visible_before_commit_and_to_no_one_else(self):
        other = self.connect()
        other.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % self.p)
        before = self.path("d.cst")
        data = cstest.read_bytes(before)
        self.con.execute("BEGIN")
        self.both("DELETE FROM {} WHERE a < 500")
        self.same("SELECT count(*), sum(a) FROM {}")
        self.same("SELECT rowid FROM {} WHERE rowid BETWEEN 60000 AND 70000 AND a < 600")
        self.assertEqual(other.execute("SELECT count(*) FROM t").fetchone()[0], self.n, "an uncommitted DELETE leaked")
        self.assertTrue(cstest.read_bytes(before) == data, "the file changed before COMMIT")
        self.con.execute("COMMIT")
        self.assertEqual(other.execute("SELECT count(*) FROM t").fetchone()[0],
                         self.con.execute("SELECT count(*) FROM n").fetchone()[0])

    def test_rollback_savepoints_and_a_failed_statement(self):
        state = self.state(self.con, "t", self.p)
        self.con.execute("BEGIN")
        self.both("DELETE FROM {} WHERE a < 100")
        self.con.execute("ROLLBACK")
        self.assertStateUnchanged(state, self.con, "t", self.p, "ROLLBACK of a DELETE")
        self.con.execute("SAVEPOINT a")
        self.both("DELETE FROM {} WHERE rowid < 10")
        self.con.execute("SAVEPOINT b")
        self.both("DELETE FROM {} WHERE rowid < 20")
        self.same("SELECT count(*) FROM {}")
        self.con.execute("ROLLBACK TO b")
        self.con.execute("ROLLBACK TO b")  # twice: the mark stays
        self.assertEqual(self.con.execute("SELECT count(*) FROM t").fetchone()[0], self.n - 10)
        self.both("DELETE FROM {} WHERE rowid BETWEEN 30 AND 39")
        self.con.execute("RELEASE a")
        # a statement that fails halfway deletes nothing
        bad = "DELETE FROM {} WHERE rowid < 100 AND CASE WHEN rowid = 60 THEN abs(-9223372036854775808) ELSE 1 END"
        for t in ("n", "t"):
            self.assertSqlError(self.con, bad.format(t), prefix=None)
        self.same("SELECT rowid FROM {} WHERE rowid < 200")
        self.con.execute("BEGIN")
        for t in ("n", "t"):
            self.assertSqlError(self.con, bad.format(t), prefix=None)
        self.both("DELETE FROM {} WHERE rowid = 150")
        self.con.execute("COMMIT")
        self.same("SELECT rowid FROM {} WHERE rowid < 200")
        fresh = self.connect()
        fresh.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % self.p)
        self.assertEqual(fresh.execute("SELECT count(*) FROM t").fetchone()[0], self.n - 21)

    def test_a_store_replaced_before_commit_refuses_the_pending_positions(self):
        # Another store of the same schema renamed over the path between the
        # DELETE/UPDATE and COMMIT: its positions may be other rows, so the
        # COMMIT fails (SQLITE_BUSY) and the new file is left as it is.
        other = self.path("other.cst")
        self.con.execute("SELECT colstore_create(?, 'SELECT a, f, s FROM n WHERE rowid % 2 = 0 ORDER BY rowid')", (other,))
        for stmt in ("DELETE FROM t WHERE rowid < 10", "UPDATE t SET a = -1 WHERE rowid < 10"):
            fresh = self.path("fresh-%d.cst" % len(stmt))
            with open(other, "rb") as src, open(fresh, "wb") as dst:
                dst.write(src.read())
            self.con.execute("BEGIN")
            self.con.execute(stmt)
            os.replace(fresh, self.p)
            before = cstest.read_bytes(self.p)
            self.assertSqlError(self.con, "COMMIT", code="SQLITE_BUSY", contains=("replaced", "ROLLBACK"))
            if self.con.in_transaction:
                self.con.execute("ROLLBACK")
            self.assertTrue(cstest.read_bytes(self.p) == before, stmt + ": the replacing file was written")
            self.assertEqual(self.con.execute("SELECT count(*), min(a) FROM t").fetchone(),
                             self.con.execute("SELECT count(*), min(a) FROM n WHERE rowid % 2 = 0").fetchone())

    def test_dataset_delete_is_refused_clearly(self):
        d = os.path.join(self.dir, "ds")
        os.mkdir(d)
        for i in range(2):
            self.con.execute("SELECT colstore_create(?, 'SELECT a FROM n WHERE rowid < 100')", (os.path.join(d, "p%d.cst" % i),))
        self.con.execute("CREATE VIRTUAL TABLE ds USING colstore('%s')" % d)
        self.assertSqlError(self.con, "DELETE FROM ds WHERE rowid = 3", code="SQLITE_READONLY", contains=("dataset",))
        self.assertEqual(self.con.execute("SELECT count(*) FROM ds").fetchone()[0], 200)

    def test_dataset_of_files_with_deletions(self):
        d = os.path.join(self.dir, "ds")
        os.mkdir(d)
        files = [os.path.join(d, "p%d.cst" % i) for i in range(3)]
        for i, f in enumerate(files):
            self.con.execute("SELECT colstore_create(?, 'SELECT a, f FROM n WHERE rowid >= %d AND rowid < %d ORDER BY rowid')"
                             % (i * 1000, (i + 1) * 1000), (f,))
        self.con.execute("CREATE VIRTUAL TABLE p1 USING colstore('%s')" % files[1])
        self.con.execute("DELETE FROM p1 WHERE a % 3 = 0")
        self.con.execute("CREATE VIRTUAL TABLE ds USING colstore('%s')" % d)
        self.con.execute("CREATE TABLE nd AS SELECT rowid AS r, a, f FROM n WHERE rowid < 3000 AND NOT "
                         "(rowid BETWEEN 1000 AND 1999 AND a % 3 = 0)")
        want = self.con.execute("SELECT r, a, f FROM nd ORDER BY r").fetchall()
        self.assertEqual(self.con.execute("SELECT rowid, a, f FROM ds ORDER BY rowid").fetchall(), want)
        self.assertEqual(self.con.execute("SELECT count(*) FROM ds WHERE a > 500").fetchone(),
                         self.con.execute("SELECT count(*) FROM nd WHERE a > 500").fetchone())
        info = self.info(self.con, "ds")
        self.assertEqual((info["rows"], info["positions"], info["format_version"]), (len(want), 3000, 2))


class Aggregates(cstest.StoreTest):
    """colstore_agg over a table with deletions, committed and pending."""

    def test_aggregate_table_honours_committed_and_pending_deletions(self):
        con = self.connect()
        p = self.path("g.cst")
        con.execute("CREATE TABLE n (k INTEGER, v REAL)")
        con.execute("INSERT INTO n (rowid, k, v) SELECT value, value % 13, value * 0.25 FROM " + series(2 * R + 10))
        con.execute("SELECT colstore_create(?, 'SELECT k, v FROM n ORDER BY rowid')", (p,))
        con.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % p)
        con.execute("CREATE VIRTUAL TABLE g USING colstore_agg(t, k)")
        con.execute("CREATE VIRTUAL TABLE tot USING colstore_agg(t)")
        q_native = "SELECT k, count(*), sum(v), min(v), max(v) FROM n GROUP BY k ORDER BY k"
        q_agg = "SELECT k, count, sum_v, min_v, max_v FROM g ORDER BY k"
        for t in ("n", "t"):
            con.execute("DELETE FROM %s WHERE rowid BETWEEN 100 AND %d OR k = 5" % (t, R + 50))
        self.assertEqual(con.execute(q_agg).fetchall(), con.execute(q_native).fetchall())
        self.assertEqual(con.execute("SELECT count, sum_v FROM tot").fetchone(),
                         con.execute("SELECT count(*), sum(v) FROM n").fetchone())
        con.execute("BEGIN")
        for t in ("n", "t"):
            con.execute("DELETE FROM %s WHERE k = 7 OR rowid > %d" % (t, 2 * R))
        self.assertEqual(con.execute(q_agg).fetchall(), con.execute(q_native).fetchall(), "pending deletions")
        self.assertEqual(con.execute("SELECT count FROM tot WHERE v > 1000").fetchone(),
                         con.execute("SELECT count(*) FROM n WHERE v > 1000").fetchone())
        con.execute("ROLLBACK")
        self.assertEqual(con.execute(q_agg).fetchall(), con.execute(q_native).fetchall(), "after ROLLBACK")
        # a SOURCE path reads the committed deletions from the file
        con.execute("CREATE VIRTUAL TABLE gs USING colstore_agg('%s', k)" % p)
        self.assertEqual(con.execute("SELECT k, count, sum_v, min_v, max_v FROM gs ORDER BY k").fetchall(),
                         con.execute(q_native).fetchall())


class RandomMutations(cstest.StoreTest):
    """Random DELETE/INSERT/UPDATE/SAVEPOINT/ROLLBACK sequences against a
    native table, inserting inside transactions too: the connection reads
    its own inserted rows from its next statement on, and deletes and
    updates them, as with a native table."""

    def run_seed(self, seed, steps, record_rows):
        rng = random.Random(seed)
        con = self.connect()
        p = self.path("m%d.cst" % seed)
        m = cstest.MutationMirror(self, con, p, rng, seed)
        run = m.run
        next_row = [0]
        in_tx = [False]
        savepoints = []

        # committed rows to delete from, in a few records
        for _ in range(3):
            con.execute("BEGIN")
            k = rng.randint(1, record_rows)
            m.insert(k)
            con.execute("COMMIT")
            next_row[0] += k
        log = []
        for step in range(steps):
            op = rng.choice(["del_pred", "del_rows", "del_range", "del_pred", "insert", "insert", "update", "begin", "commit",
                             "rollback", "savepoint", "rollback_to", "release", "del_sel", "upd_sel"])
            log.append(op)
            where = "seed %d step %d (%s)" % (seed, step, " ".join(log[-8:]))
            if op == "del_pred":
                run("DELETE FROM {} WHERE a BETWEEN ? AND ?", (lambda x: (x, x + rng.randint(0, 80)))(rng.randint(0, 999)))
            elif op == "del_rows":
                ids = [rng.randrange(max(1, next_row[0])) for _ in range(rng.randint(1, 30))]
                run("DELETE FROM {} WHERE rowid IN (SELECT value FROM json_each(?))", (json.dumps(ids),))
            elif op == "del_range":
                lo = rng.randrange(max(1, next_row[0]))
                run("DELETE FROM {} WHERE rowid >= ? AND rowid < ? AND (s IS NULL OR s <> 's2')", (lo, lo + rng.randint(1, 200)))
            elif op == "del_sel":       # through _rows/_mask, beside ranges, IN lists, predicates
                m.run_selected("DELETE FROM {}")
            elif op == "upd_sel":
                m.run_selected("UPDATE {} SET f = ?", (rng.choice([None, 0.5, 99.0]),))
            elif op == "insert":
                k = rng.randint(1, 300)
                next_row[0] = m.insert(k) + k
            elif op == "update":
                lo = rng.randrange(max(1, next_row[0]))
                run("UPDATE {} SET a = (a * 7 + ?) % 1000, s = ? WHERE rowid >= ? AND rowid < ?",
                    (rng.randint(0, 99), rng.choice([None, "u%d" % rng.randint(0, 3)]), lo, lo + rng.randint(1, 400)))
            elif op == "begin" and not in_tx[0]:
                con.execute("BEGIN")
                in_tx[0] = True
            elif op in ("commit", "rollback") and in_tx[0]:
                con.execute(op.upper())
                in_tx[0] = False
                savepoints.clear()
            elif op == "savepoint":
                name = "sp%d" % step
                con.execute("SAVEPOINT " + name)
                savepoints.append(name)
                in_tx[0] = True
            elif op == "rollback_to" and savepoints:
                con.execute("ROLLBACK TO " + rng.choice(savepoints))
            elif op == "release" and savepoints:
                i = rng.randrange(len(savepoints))
                con.execute("RELEASE " + savepoints[i])
                del savepoints[i:]
                in_tx[0] = con.in_transaction
            cstest.assert_mirrored(self, con, where)
            m.check_selected_read(where)
        if con.in_transaction:
            con.execute("COMMIT")
        cstest.assert_reopened(self, con, p, "seed %d" % seed)

    def test_random_sequences(self):
        for seed in (101, 102, 103):
            self.run_seed(seed, cstest.scaled(60, 25), 400)

    def test_random_sequences_across_records(self):
        self.run_seed(104, cstest.scaled(25, 10), R + 100)


CHILD_DELETER = r"""
import sys, cstest
con = cstest.connect()
con.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % sys.argv[1])
print("ready", flush=True)
k = 0
while True:
    con.execute("BEGIN")
    con.execute("DELETE FROM t WHERE g = ?", (k,))
    con.execute("INSERT INTO t VALUES (?)", (1000 + k,))
    con.execute("COMMIT")
    print(k, flush=True)
    k += 1
"""


class Crash(cstest.StoreTest):

    def test_sigkill_during_delete_transactions_leaves_a_committed_state(self):
        con = self.connect()
        p = self.path("k.cst")
        con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', g INT32)" % p)
        con.execute("INSERT INTO t SELECT value % 200 FROM " + series(19999))
        rng = random.Random(77)
        for attempt in range(cstest.scaled(6, 3)):
            fresh = self.after_sigkill(CHILD_DELETER, p, rng.uniform(0.01, 0.3))
            # every transaction deleted group k and inserted 1000+k, whole:
            # the groups still present and the markers agree
            groups = {g for (g,) in fresh.execute("SELECT DISTINCT g FROM t WHERE g < 1000")}
            markers = [m for (m,) in fresh.execute("SELECT g FROM t WHERE g >= 1000 ORDER BY rowid")]
            for m in markers:
                self.assertNotIn(m - 1000, groups, "attempt %d: marker %d without its deletion" % (attempt, m))
            counts = fresh.execute("SELECT g, count(*) FROM t WHERE g < 1000 GROUP BY g").fetchall()
            self.assertTrue(all(c == 100 for _, c in counts), "attempt %d: a group half deleted" % attempt)
            # (past k = 199 a transaction deletes nothing and only adds its marker)
            self.assertEqual(len(groups) + len({m for m in markers if m < 1200}), 200, "attempt %d" % attempt)
            fresh.close()


if __name__ == "__main__":
    cstest.main()
