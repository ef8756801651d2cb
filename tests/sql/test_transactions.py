"""Transactions: buffering, savepoints, failed statements, visibility to
other connections and processes, concurrent writers, DROP and reconnect.

The contract: INSERTs are buffered per transaction and become visible and
durable at COMMIT (autocommit counts); ROLLBACK or a failed statement leaves
exactly the last committed rows, and a statement that fails midway leaves
none of its rows.  Readers elsewhere see new rows from their next statement;
two writers on one store serialize or get SQLITE_BUSY, never interleave.

Savepoint scripts run against a native table too: the committed result
must be the same.
"""
import json
import os
import select
import sqlite3
import subprocess
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402


class Buffering(cstest.StoreTest):

    def setUp(self):
        super().setUp()
        self.p = self.path("t.cst")
        self.con = self.connect()
        self.con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', a INT32, s TEXT)" % self.p)

    def count(self, con=None, table="t"):
        return (con or self.con).execute("SELECT count(*) FROM %s" % table).fetchone()[0]

    def test_autocommit_insert_is_visible_at_once(self):
        self.con.execute("INSERT INTO t VALUES (1, 'a')")
        self.assertEqual(self.con.execute("SELECT rowid, a, s FROM t").fetchall(), [(0, 1, "a")])
        other = self.connect()
        other.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % self.p)
        self.assertEqual(other.execute("SELECT rowid, a, s FROM t").fetchall(), [(0, 1, "a")])
        self.con.execute("INSERT INTO t VALUES (2, 'b')")
        self.assertEqual(other.execute("SELECT rowid, a FROM t").fetchall(), [(0, 1), (1, 2)])

    def test_rollback_leaves_nothing_and_the_file_unchanged(self):
        self.con.execute("INSERT INTO t VALUES (1, 'a')")
        before = self.state(self.con, "t", self.p)
        self.con.execute("BEGIN")
        self.con.execute("INSERT INTO t VALUES (2, 'b')")
        self.con.execute("INSERT INTO t SELECT a + 10, s FROM t")
        self.con.execute("ROLLBACK")
        self.assertStateUnchanged(before, self.con, "t", self.p, "ROLLBACK")
        # The next transaction starts clean: none of the rolled-back rows reappear.
        self.con.execute("INSERT INTO t VALUES (3, 'c')")
        self.assertEqual(self.con.execute("SELECT a FROM t").fetchall(), [(1,), (3,)])

    def test_commit_makes_a_transaction_durable_in_one_piece(self):
        self.con.execute("BEGIN")
        for i in range(5):
            self.con.execute("INSERT INTO t VALUES (?, ?)", (i, "r%d" % i))
        self.con.execute("INSERT INTO t SELECT value, 'v' FROM json_each('[10, 11, 12]')")
        self.con.execute("COMMIT")
        other = cstest.connect()
        other.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % self.p)
        self.assertEqual(other.execute("SELECT rowid, a FROM t").fetchall(),
                         [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (5, 10), (6, 11), (7, 12)])
        self.assertEqual(self.info(other, self.p)["records"], 1, "one transaction should write one record")
        other.close()

    def test_a_transaction_larger_than_a_record_commits_whole(self):
        n = cstest.RECORD_ROWS + 1000
        self.con.execute("BEGIN")
        self.con.execute("WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < ?) "
                         "INSERT INTO t SELECT i, NULL FROM c", (n - 1,))
        self.con.execute("COMMIT")
        self.assertEqual(self.con.execute("SELECT count(*), min(a), max(a), sum(a = rowid) FROM t").fetchone(),
                         (n, 0, n - 1, n))
        info = self.info(self.con, "t")
        self.assertEqual((info["rows"], info["records"]), (n, 2))
        self.assertEqual(self.con.execute("SELECT colstore_verify('t')").fetchone()[0], "ok")

    def test_rowids_are_stable_across_appends(self):
        self.con.execute("INSERT INTO t VALUES (1, 'a'), (2, 'b')")
        first = self.con.execute("SELECT rowid, a, s FROM t").fetchall()
        for i in range(3, 8):
            self.con.execute("INSERT INTO t VALUES (?, 'x')", (i,))
        self.assertEqual(self.con.execute("SELECT rowid, a, s FROM t WHERE rowid < 2").fetchall(), first)
        self.assertEqual([r[0] for r in self.con.execute("SELECT rowid FROM t")], list(range(7)))
        self.assertEqual(self.info(self.con, "t")["records"], 6)

    def failing_source(self):
        """A native table whose 500th row does not fit INT32."""
        self.con.execute("CREATE TABLE src (a, s)")
        self.con.executemany("INSERT INTO src VALUES (?, ?)", [(i, "s%d" % i) for i in range(1000)])
        self.con.execute("UPDATE src SET a = 'not a number' WHERE rowid = 500")

    def test_failed_insert_select_in_autocommit_leaves_none_of_its_rows(self):
        self.failing_source()
        self.con.execute("INSERT INTO t VALUES (-1, 'kept')")
        before = self.state(self.con, "t", self.p)
        self.assertSqlError(self.con, "INSERT INTO t SELECT a, s FROM src ORDER BY rowid", code="SQLITE_MISMATCH",
                            contains=("not a number",))
        self.assertStateUnchanged(before, self.con, "t", self.p, "a failed INSERT ... SELECT")
        self.assertFalse(self.con.in_transaction)

    def test_failed_insert_select_inside_begin_keeps_the_good_statements(self):
        self.failing_source()
        self.con.execute("BEGIN")
        self.con.execute("INSERT INTO t VALUES (1, 'before')")
        self.con.execute("INSERT INTO t SELECT a, s FROM src WHERE rowid <= 3")
        self.assertSqlError(self.con, "INSERT INTO t SELECT a, s FROM src ORDER BY rowid", code="SQLITE_MISMATCH")
        self.assertTrue(self.con.in_transaction, "a failed statement must not end the transaction")
        self.con.execute("INSERT INTO t VALUES (2, 'after')")
        self.assertSqlError(self.con, "INSERT INTO t VALUES (3, 'x'), (4, 'y'), ('z', 'bad')", code="SQLITE_MISMATCH")
        self.assertSqlError(self.con, "INSERT INTO t VALUES (5, x'00')", code="SQLITE_MISMATCH")
        self.con.execute("COMMIT")
        self.assertEqual(self.con.execute("SELECT a, s FROM t").fetchall(),
                         [(1, "before"), (0, "s0"), (1, "s1"), (2, "s2"), (2, "after")])
        self.assertEqual(self.con.execute("SELECT colstore_verify('t')").fetchone()[0], "ok")

    def test_failed_insert_inside_a_savepoint_keeps_the_savepoint_rows(self):
        self.con.execute("SAVEPOINT s")
        self.con.execute("INSERT INTO t VALUES (1, 'a')")
        self.assertSqlError(self.con, "INSERT INTO t VALUES (2, 'b'), (3000000000, 'c')", code="SQLITE_MISMATCH")
        self.con.execute("RELEASE s")
        self.assertEqual(self.con.execute("SELECT a FROM t").fetchall(), [(1,)])

    def test_a_second_table_on_the_same_store_sees_commits(self):
        self.con.execute("CREATE VIRTUAL TABLE t2 USING colstore('%s')" % self.p)
        self.assertEqual(self.count(table="t2"), 0)
        self.con.execute("INSERT INTO t VALUES (1, 'a')")
        self.assertEqual(self.count(table="t2"), 1)
        self.con.execute("INSERT INTO t2 VALUES (2, 'b')")
        self.assertEqual(self.con.execute("SELECT a FROM t").fetchall(), [(1,), (2,)])
        self.assertEqual(self.con.execute("SELECT colstore_verify('t')").fetchone()[0], "ok")

    def test_one_transaction_writing_two_tables_on_one_store_is_atomic(self):
        # Two writers on one store, even in one transaction: the second may wait
        # or fail with SQLITE_BUSY; either way the transaction is all or nothing.
        self.con.execute("CREATE VIRTUAL TABLE t2 USING colstore('%s')" % self.p)
        self.con.execute("INSERT INTO t VALUES (1, 'a')")
        before = self.state(self.con, "t", self.p)
        self.con.execute("BEGIN")
        self.con.execute("INSERT INTO t VALUES (3, 'c')")
        self.con.execute("INSERT INTO t2 VALUES (4, 'd')")
        try:
            self.con.execute("COMMIT")
        except sqlite3.OperationalError as e:
            self.assertEqual(e.sqlite_errorname, "SQLITE_BUSY", str(e))
            self.con.execute("ROLLBACK")
            self.assertStateUnchanged(before, self.con, "t", self.p, "a COMMIT that failed with SQLITE_BUSY")
        else:
            self.assertEqual(sorted(r[0] for r in self.con.execute("SELECT a FROM t")), [1, 3, 4])
        self.assertEqual(self.con.execute("SELECT colstore_verify('t')").fetchone()[0], "ok")


class Savepoints(cstest.StoreTest):
    """Each script runs on a colstore table and on a native one: same rows."""

    SCRIPTS = [
        "BEGIN; INSERT INTO {T} VALUES (1); ROLLBACK",
        "BEGIN; INSERT INTO {T} VALUES (1); COMMIT",
        "SAVEPOINT a; INSERT INTO {T} VALUES (1); RELEASE a",
        "SAVEPOINT a; INSERT INTO {T} VALUES (1); ROLLBACK TO a; RELEASE a",
        "SAVEPOINT a; INSERT INTO {T} VALUES (1); ROLLBACK TO a; INSERT INTO {T} VALUES (2); RELEASE a",
        "SAVEPOINT a; INSERT INTO {T} VALUES (1); ROLLBACK",
        "SAVEPOINT a; INSERT INTO {T} VALUES (6); SAVEPOINT b; INSERT INTO {T} VALUES (7); RELEASE b; "
        "ROLLBACK TO a; INSERT INTO {T} VALUES (8); RELEASE a",
        "SAVEPOINT a; INSERT INTO {T} VALUES (1); SAVEPOINT b; INSERT INTO {T} VALUES (2); ROLLBACK TO b; RELEASE a",
        "BEGIN; SAVEPOINT a; INSERT INTO {T} VALUES (1); ROLLBACK TO a; COMMIT",
        "BEGIN; INSERT INTO {T} VALUES (1); SAVEPOINT a; INSERT INTO {T} VALUES (2); ROLLBACK TO a; COMMIT",
        "BEGIN; INSERT INTO {T} VALUES (1); SAVEPOINT a; INSERT INTO {T} VALUES (2); RELEASE a; COMMIT",
        "BEGIN; INSERT INTO {T} VALUES (1); SAVEPOINT a; INSERT INTO {T} VALUES (2); SAVEPOINT b; "
        "INSERT INTO {T} VALUES (3); ROLLBACK TO a; INSERT INTO {T} VALUES (4); COMMIT",
        "BEGIN; SAVEPOINT a; INSERT INTO {T} VALUES (1); SAVEPOINT b; INSERT INTO {T} VALUES (2); ROLLBACK TO b; "
        "INSERT INTO {T} VALUES (3); ROLLBACK TO b; RELEASE b; RELEASE a; COMMIT",
        "BEGIN; SAVEPOINT a; SAVEPOINT b; SAVEPOINT c; INSERT INTO {T} VALUES (1); RELEASE c; ROLLBACK TO b; "
        "INSERT INTO {T} VALUES (2); ROLLBACK TO a; INSERT INTO {T} VALUES (3); COMMIT",
        "BEGIN; INSERT INTO {T} VALUES (1); SAVEPOINT a; INSERT INTO {T} VALUES (2); ROLLBACK",
        "SAVEPOINT a; SAVEPOINT b; INSERT INTO {T} VALUES (1); ROLLBACK TO a; INSERT INTO {T} VALUES (2); "
        "SAVEPOINT c; INSERT INTO {T} VALUES (3); RELEASE c; RELEASE a",
        "SAVEPOINT a; INSERT INTO {T} VALUES (1); ROLLBACK TO a; ROLLBACK TO a; INSERT INTO {T} VALUES (2); "
        "ROLLBACK TO a; INSERT INTO {T} VALUES (3); RELEASE a",
        "BEGIN; INSERT INTO {T} VALUES (1); SAVEPOINT a; INSERT INTO {T} SELECT x + 10 FROM {T} WHERE x = 100; "
        "ROLLBACK TO a; INSERT INTO {T} SELECT x + 20 FROM {T} WHERE x = 100; COMMIT",
        "BEGIN; INSERT INTO {T} VALUES (1); ROLLBACK; BEGIN; INSERT INTO {T} VALUES (2); COMMIT",
        "SAVEPOINT a; INSERT INTO {T} VALUES (1); RELEASE a; SAVEPOINT a; INSERT INTO {T} VALUES (2); "
        "ROLLBACK TO a; RELEASE a",
    ]

    def run_script(self, con, table, script):
        for stmt in script.format(T=table).split(";"):
            con.execute(stmt)
        self.assertFalse(con.in_transaction, "script left a transaction open: %s" % script)
        return con.execute("SELECT x FROM %s ORDER BY rowid" % table).fetchall()

    def test_savepoint_scripts_match_a_native_table(self):
        for i, script in enumerate(self.SCRIPTS):
            with self.subTest(script=script):
                con = self.connect()
                p = self.path("sp%d.cst" % i)
                con.execute("CREATE TABLE n (x INTEGER)")
                con.execute("CREATE VIRTUAL TABLE c USING colstore('%s', x INT64)" % p)
                con.execute("INSERT INTO n VALUES (100)")
                con.execute("INSERT INTO c VALUES (100)")
                want = self.run_script(con, "n", script)
                got = self.run_script(con, "c", script)
                self.assertEqual(got, want, script)
                fresh = cstest.connect()
                fresh.execute("CREATE VIRTUAL TABLE c USING colstore('%s')" % p)
                self.assertEqual(fresh.execute("SELECT x FROM c ORDER BY rowid").fetchall(), want, script)
                fresh.close()

    def test_mixed_native_and_colstore_transaction_in_a_file_db(self):
        con = self.connect("mix.db")
        p = self.path("mix.cst")
        con.execute("CREATE TABLE n (x INTEGER)")
        con.execute("CREATE VIRTUAL TABLE c USING colstore('%s', x INT64)" % p)
        con.execute("BEGIN")
        con.execute("INSERT INTO n VALUES (1)")
        con.execute("INSERT INTO c VALUES (1)")
        con.execute("ROLLBACK")
        self.assertEqual(con.execute("SELECT (SELECT count(*) FROM n), (SELECT count(*) FROM c)").fetchone(), (0, 0))
        con.execute("BEGIN")
        con.execute("INSERT INTO n VALUES (2)")
        con.execute("INSERT INTO c SELECT x FROM n")
        con.execute("COMMIT")
        self.assertEqual(con.execute("SELECT (SELECT x FROM n), (SELECT x FROM c)").fetchone(), (2, 2))
        # A failed colstore statement leaves the transaction's other writes alone.
        con.execute("BEGIN")
        con.execute("INSERT INTO n VALUES (3)")
        self.assertSqlError(con, "INSERT INTO c VALUES ('bad')", code="SQLITE_MISMATCH")
        con.execute("INSERT INTO c VALUES (3)")
        con.execute("COMMIT")
        self.assertEqual(con.execute("SELECT (SELECT group_concat(x) FROM n), (SELECT group_concat(x) FROM c)").fetchone(),
                         ("2,3", "2,3"))


CHILD_READER = r"""
import sys, cstest
con = cstest.connect()
con.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % sys.argv[1])
print("ready", flush=True)
for line in sys.stdin:
    if line.strip() == "count":
        print(con.execute("SELECT count(*), coalesce(max(a), -1) FROM t").fetchone(), flush=True)
"""

CHILD_WRITER = r"""
import sys, sqlite3, cstest
path, wid, n_batches, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
con = cstest.connect()
# One record per transaction is what the test reads interleaving from; the
# automatic compaction (test_auto_compact.py) would merge them.
con.execute("SELECT colstore_config('auto_compact', 0)")
con.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % path)
con.execute("SELECT count(*) FROM t").fetchone()
print("ready", flush=True)
sys.stdin.readline()  # start together, so the writers really overlap
busy = 0
for b in range(n_batches):
    while True:
        try:
            con.execute("BEGIN")
            con.execute("WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < ?) "
                        "INSERT INTO t SELECT ?, ?, i FROM c", (batch - 1, wid, b))
            con.execute("COMMIT")
            break
        except sqlite3.OperationalError as e:
            if getattr(e, "sqlite_errorname", "") != "SQLITE_BUSY":
                raise
            busy += 1
            if con.in_transaction:
                con.execute("ROLLBACK")
print("busy", busy)
"""


def rows_blob(rows):
    return b"".join(r.to_bytes(8, "little") for r in rows)


class OwnInserts(cstest.StoreTest):
    """A connection reads the rows it inserted in its open transaction from
    its next statement on, on every read path, and deletes and updates them,
    exactly as a native table given the same statements (docs/sql.md
    "Writing")."""

    def setUp(self):
        super().setUp()
        self.p = self.path("own.cst")
        self.con = self.connect()
        self.con.execute("CREATE TABLE n (a INTEGER, f REAL, s TEXT)")
        self.con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', a INT32, f FLOAT64, s TEXT)" % self.p)
        self.con.execute("CREATE VIRTUAL TABLE g USING colstore_agg(t, s)")
        self.seq = 0

    def insert(self, k):
        """k rows into t, then into n at the rowids t gave them."""
        vals = []
        for _ in range(k):
            self.seq += 1
            i = self.seq
            vals.append(((i * 37) % 1000, None if i % 7 == 0 else i * 0.5, None if i % 5 == 0 else "s%d" % (i % 4)))
        self.con.executemany("INSERT INTO t (a, f, s) VALUES (?, ?, ?)", vals)
        last = self.con.execute("SELECT last_insert_rowid()").fetchone()[0]
        base = last - k + 1
        self.con.executemany("INSERT INTO n (rowid, a, f, s) VALUES (?, ?, ?, ?)", [(base + i,) + v for i, v in enumerate(vals)])
        return base

    def both(self, sql, params=()):
        a = self.con.execute(sql.format("n"), params).rowcount
        b = self.con.execute(sql.format("t"), params).rowcount
        self.assertEqual(a, b, sql)

    def mirrored(self, where):
        cstest.assert_mirrored(self, self.con, where)
        self.assertEqual(self.con.execute("SELECT s, count, sum_a FROM g ORDER BY s").fetchall(),
                         self.con.execute("SELECT s, count(*), sum(a) FROM n GROUP BY s ORDER BY s").fetchall(),
                         where + ": colstore_agg")

    def test_inserted_rows_read_on_every_path_before_commit(self):
        self.con.execute("BEGIN")
        self.insert(120)
        self.con.execute("COMMIT")
        self.con.execute("BEGIN")
        base = self.insert(90)
        self.assertEqual(base, 120, "rowids are positions after the committed ones")
        self.mirrored("inserted in the open transaction")
        positions = 210
        got = self.con.execute("SELECT rowid FROM t WHERE _rows = ?", (rows_blob([200, 3, 209, 200]),)).fetchall()
        self.assertEqual(got, [(200,), (3,), (209,), (200,)])
        mask = bytearray(positions)
        for r in (0, 119, 120, 209):
            mask[r] = 1
        self.assertEqual(self.con.execute("SELECT rowid FROM t WHERE _mask = ?", (bytes(mask),)).fetchall(),
                         [(0,), (119,), (120,), (209,)])
        self.assertSqlError(self.con, "SELECT count(*) FROM t WHERE _mask = ?", (bytes(120),), code="SQLITE_MISMATCH",
                            contains=("%d rows" % positions,))
        self.assertEqual(self.con.execute("SELECT max(rowid) FROM t").fetchone()[0],
                         self.con.execute("SELECT last_insert_rowid()").fetchone()[0])
        self.con.execute("COMMIT")
        self.mirrored("after COMMIT")
        cstest.assert_reopened(self, self.con, self.p, "reopened")

    def test_delete_and_update_of_rows_inserted_in_the_transaction(self):
        self.insert(100)
        self.con.execute("BEGIN")
        self.insert(150)
        self.both("UPDATE {} SET a = a + 1, s = 'u' WHERE rowid BETWEEN 90 AND 180")
        self.mirrored("updated own rows")
        self.both("DELETE FROM {} WHERE rowid % 3 = 0 AND rowid > 95")
        self.mirrored("deleted own rows")
        self.both("UPDATE {} SET f = f * 2 WHERE a > 500")
        self.insert(10)
        self.both("DELETE FROM {} WHERE rowid = 255")
        self.mirrored("more")
        self.con.execute("COMMIT")
        self.mirrored("after COMMIT")
        cstest.assert_reopened(self, self.con, self.p, "reopened")

    def test_savepoints_and_a_failing_statement_restore_inserted_rows_exactly(self):
        self.insert(50)
        self.con.execute("BEGIN")
        self.insert(30)
        self.con.execute("SAVEPOINT a")
        self.insert(40)
        self.both("UPDATE {} SET s = 'in_a' WHERE rowid >= 60")
        self.both("DELETE FROM {} WHERE rowid BETWEEN 70 AND 100")
        self.mirrored("inside a")
        self.con.execute("SAVEPOINT b")
        self.insert(5)
        self.both("UPDATE {} SET a = 0 WHERE rowid >= 100")
        self.mirrored("inside b")
        self.con.execute("ROLLBACK TO b")
        self.mirrored("rolled back to b")
        self.con.execute("ROLLBACK TO a")
        self.mirrored("rolled back to a")
        # a statement failing midway leaves none of its rows, deletions or updates
        for sql in ("INSERT INTO {} (a, f, s) VALUES (1, 1.0, 'x'), (2, 2.0, 'y'), ('bad', 3.0, 'z')",
                    "UPDATE {} SET a = CASE WHEN rowid = 65 THEN 'bad' ELSE 7 END WHERE rowid >= 60"):
            with self.assertRaises(Exception):
                self.con.execute(sql.format("t"))
        self.mirrored("after failing statements")
        self.insert(3)
        self.mirrored("inserted again")
        self.con.execute("RELEASE a")
        self.con.execute("COMMIT")
        self.mirrored("after COMMIT")
        cstest.assert_reopened(self, self.con, self.p, "reopened")

    def test_another_connection_appending_meanwhile(self):
        self.insert(10)
        other = self.connect()
        other.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % self.p)
        self.con.execute("BEGIN")
        self.con.execute("INSERT INTO t (a, f, s) VALUES (1, 1.0, 'mine'), (2, 2.0, 'mine'), (3, 3.0, 'mine')")
        self.assertEqual(self.con.execute("SELECT rowid, a FROM t WHERE s = 'mine'").fetchall(), [(10, 1), (11, 2), (12, 3)])
        other.execute("INSERT INTO t (a, f, s) VALUES (100, 0.0, 'theirs'), (200, 0.0, 'theirs')")
        # the transaction keeps reading the snapshot its rows were numbered on
        self.assertEqual(self.con.execute("SELECT rowid, a FROM t WHERE rowid >= 10").fetchall(), [(10, 1), (11, 2), (12, 3)])
        self.con.execute("UPDATE t SET a = 20 WHERE rowid = 11")
        self.con.execute("DELETE FROM t WHERE rowid = 10")
        self.con.execute("COMMIT")
        want = [(10, 100, "theirs"), (11, 200, "theirs"), (13, 20, "mine"), (14, 3, "mine")]
        self.assertEqual(self.con.execute("SELECT rowid, a, s FROM t WHERE rowid >= 10").fetchall(), want)
        self.assertEqual(other.execute("SELECT rowid, a, s FROM t WHERE rowid >= 10").fetchall(), want)
        self.assertEqual(self.con.execute("SELECT colstore_verify('t')").fetchone()[0], "ok")


class Visibility(cstest.StoreTest):

    def setUp(self):
        super().setUp()
        self.p = self.path("v.cst")
        self.con = self.connect()
        self.con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', a INT64)" % self.p)
        self.con.execute("INSERT INTO t VALUES (1)")

    def test_second_connection_sees_rows_from_its_next_statement_after_commit(self):
        other = self.connect()
        other.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % self.p)
        self.assertEqual(other.execute("SELECT count(*) FROM t").fetchone()[0], 1)
        self.con.execute("BEGIN")
        self.con.execute("INSERT INTO t VALUES (2), (3)")
        self.assertEqual(other.execute("SELECT count(*) FROM t").fetchone()[0], 1, "uncommitted rows leaked")
        self.con.execute("COMMIT")
        self.assertEqual(other.execute("SELECT count(*), max(a) FROM t").fetchone(), (3, 3))

    def test_a_statement_in_progress_keeps_its_snapshot(self):
        self.con.execute("INSERT INTO t VALUES (2), (3)")
        other = self.connect()
        other.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % self.p)
        cur = other.execute("SELECT a FROM t")
        first = cur.fetchone()
        self.con.execute("INSERT INTO t VALUES (4), (5)")
        rest = cur.fetchall()
        self.assertEqual([first] + rest, [(1,), (2,), (3,)])
        self.assertEqual(other.execute("SELECT count(*) FROM t").fetchone()[0], 5)

    def test_separate_process_sees_rows_from_its_next_statement_after_commit(self):
        child = subprocess.Popen([cstest.PYTHON, "-c", CHILD_READER, self.p], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cstest.child_env())
        try:
            self.assertEqual(self.readline(child), "ready")

            def ask():
                child.stdin.write("count\n")
                child.stdin.flush()
                return self.readline(child)
            self.assertEqual(ask(), "(1, 1)")
            self.con.execute("BEGIN")
            self.con.execute("INSERT INTO t VALUES (7), (8)")
            self.assertEqual(ask(), "(1, 1)", "the child saw uncommitted rows")
            self.con.execute("COMMIT")
            self.assertEqual(ask(), "(3, 8)", "the child did not see committed rows on its next statement")
            self.con.execute("BEGIN")
            self.con.execute("INSERT INTO t VALUES (9)")
            self.con.execute("ROLLBACK")
            self.assertEqual(ask(), "(3, 8)")
        finally:
            child.stdin.close()
            child.wait(60)
            err = child.stderr.read()
            child.stdout.close()
            child.stderr.close()
        self.assertEqual(child.returncode, 0, err)

    def readline(self, child, timeout=60):
        r, _, _ = select.select([child.stdout], [], [], timeout)
        if not r:
            self.fail("child did not answer within %ds" % timeout)
        line = child.stdout.readline()
        if not line:
            self.fail("child exited: %s" % child.stderr.read())
        return line.strip()


class ConcurrentWriters(cstest.StoreTest):

    def test_two_processes_appending_never_interleave_records(self):
        n_batches, batch = 50, 100
        p = self.path("c.cst")
        con = self.connect()
        con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', w INT32, b INT32, i INT32)" % p)
        procs = [subprocess.Popen([cstest.PYTHON, "-c", CHILD_WRITER, p, str(w), str(n_batches), str(batch)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=cstest.child_env())
                 for w in (1, 2)]
        for pr in procs:
            r, _, _ = select.select([pr.stdout], [], [], 120)
            self.assertTrue(r and pr.stdout.readline().strip() == "ready", "a writer did not start")
        for pr in procs:
            pr.stdin.write("go\n")
            pr.stdin.flush()
        outs = [pr.communicate(timeout=300) for pr in procs]
        for pr, (out, err) in zip(procs, outs):
            self.assertEqual(pr.returncode, 0, "writer failed:\n%s\n%s" % (out, err))
        self.assertEqual(con.execute("SELECT count(*) FROM t").fetchone()[0], 2 * n_batches * batch)
        self.assertEqual(con.execute("SELECT colstore_verify('t')").fetchone()[0], "ok")
        # Each batch is one contiguous run of rowids, in order.
        bad = con.execute("SELECT w, b, count(*), min(rowid), max(rowid), sum(i = rowid - mr) FROM "
                          "(SELECT w, b, i, rowid, min(rowid) OVER (PARTITION BY w, b) AS mr FROM t) "
                          "GROUP BY w, b HAVING count(*) != ? OR max(rowid) - min(rowid) != ? - 1 "
                          "OR sum(i = rowid - mr) != ?", (batch, batch, batch)).fetchall()
        self.assertEqual(bad, [], "batches interleaved or torn")
        self.assertEqual(con.execute("SELECT count(DISTINCT w * 1000 + b) FROM t").fetchone()[0], 2 * n_batches)
        info = self.info(con, p)
        self.assertEqual(info["records"], 2 * n_batches, "one record per transaction")


class DropAndReconnect(cstest.StoreTest):

    def test_drop_table_leaves_the_store_byte_identical(self):
        con = self.connect()
        p = self.path("d.cst")
        con.execute("CREATE VIRTUAL TABLE d USING colstore('%s', a INT8, s TEXT)" % p)
        con.execute("INSERT INTO d VALUES (1, 'x'), (2, 'y')")
        data, mtime = cstest.read_bytes(p), os.stat(p).st_mtime_ns
        con.execute("DROP TABLE d")
        self.assertEqual(cstest.read_bytes(p), data)
        self.assertEqual(os.stat(p).st_mtime_ns, mtime)
        self.assertEqual(sorted(os.listdir(self.dir)), ["d.cst"])
        con.execute("CREATE VIRTUAL TABLE d USING colstore('%s')" % p)
        self.assertEqual(con.execute("SELECT a, s FROM d").fetchall(), [(1, "x"), (2, "y")])

    def test_drop_table_with_uncommitted_rows_writes_nothing(self):
        con = self.connect("drop.db")
        p = self.path("d2.cst")
        con.execute("CREATE VIRTUAL TABLE d USING colstore('%s', a INT8)" % p)
        data = cstest.read_bytes(p)
        con.execute("BEGIN")
        con.execute("INSERT INTO d VALUES (1)")
        con.execute("DROP TABLE d")
        con.execute("ROLLBACK")
        self.assertEqual(cstest.read_bytes(p), data)

    def test_reopening_a_database_file_reconnects_the_table(self):
        db = self.path("re.db")
        p = self.path("re.cst")
        con = cstest.connect(db)
        con.execute("CREATE VIRTUAL TABLE r USING colstore('%s', a INT16, s TEXT NOT NULL, verify=full)" % p)
        con.execute("INSERT INTO r VALUES (1, 'one'), (2, 'two')")
        con.close()
        con = cstest.connect(db)
        self.assertEqual(con.execute("SELECT rowid, a, s FROM r").fetchall(), [(0, 1, "one"), (1, 2, "two")])
        con.execute("INSERT INTO r VALUES (3, 'three')")
        self.assertSqlError(con, "INSERT INTO r VALUES (4, NULL)", code="SQLITE_CONSTRAINT_NOTNULL")
        self.assertEqual(self.info(con, "r")["rows"], 3)
        con.close()
        # A reconnect also sees a store that changed while the database was closed.
        w = cstest.connect()
        w.execute("CREATE VIRTUAL TABLE r USING colstore('%s')" % p)
        w.execute("INSERT INTO r VALUES (4, 'four')")
        w.close()
        con = cstest.connect(db)
        self.assertEqual(con.execute("SELECT count(*), max(a) FROM r").fetchone(), (4, 4))
        con.close()

    def test_reconnect_to_a_deleted_store_is_an_error(self):
        db = self.path("gone.db")
        p = self.path("gone.cst")
        con = cstest.connect(db)
        con.execute("CREATE VIRTUAL TABLE g USING colstore('%s', a INT8)" % p)
        con.close()
        os.remove(p)
        con = cstest.connect(db)
        self.assertSqlError(con, "SELECT * FROM g", code=None, contains=(p,))
        con.close()



class Paths(cstest.StoreTest):

    def test_a_relative_path_keeps_naming_the_same_store_after_chdir(self):
        # SQLite resolves a relative database path once, at open; a table's
        # relative store path should likewise keep naming the file it was
        # created on when the process later changes directory.
        a, b = self.path("A"), self.path("B")
        os.mkdir(a)
        os.mkdir(b)
        cwd = os.getcwd()
        con = self.connect()
        try:
            os.chdir(a)
            con.execute("CREATE VIRTUAL TABLE r USING colstore('rel.cst', x INT8)")
            con.execute("INSERT INTO r VALUES (1)")
            os.chdir(b)
            self.assertEqual(con.execute("SELECT x FROM r").fetchall(), [(1,)])
            con.execute("INSERT INTO r VALUES (2)")
            self.assertEqual(con.execute("SELECT x FROM r").fetchall(), [(1,), (2,)])
            self.assertEqual(json.loads(con.execute("SELECT colstore_info('r')").fetchone()[0])["rows"], 2)
        finally:
            os.chdir(cwd)
        self.assertEqual(os.listdir(b), [], "a store was written relative to the new directory")


if __name__ == "__main__":
    cstest.main()
