"""UPDATE on colstore tables (docs/sql.md "Writing").

A row keeps its rowid and position; values convert exactly as INSERT
converts them and the same errors stop the statement; SET rowid is an
error; UPDATE is transactional like INSERT and DELETE (ROLLBACK, SAVEPOINT,
a failed statement, other connections, SIGKILL).  Every answer is checked
against a native table given the same statements, before and after
reopening, and every read path sees the new values (zone maps, ordering,
aggregate tables).

Inside a transaction the connection reads its own UPDATEs from its next
statement on, as with a native table (ReadOwnUpdates): every read path
(scans, predicates whose values crossed a record's zone-map bounds, rowid
ranges, IN, _rows, _mask, ORDER BY ... LIMIT, DISTINCT, GROUP BY,
colstore_agg) is compared with the native table inside the transaction,
after savepoint rollbacks and failed statements, and again after COMMIT and
a reopen; a second `SET b = b + 1` adds to the first.
"""
import json
import os
import random
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402
from test_delete import mask_blob, rows_blob, series  # noqa: E402

R = cstest.RECORD_ROWS


class Mirror(cstest.MirrorTest):
    """n (native) and t (colstore) with the same R + 2000 rows: two records."""

    def setUp(self):
        super().setUp()
        self.p = self.path("u.cst")
        self.con = self.connect()
        self.n = R + 2000
        self.con.execute("CREATE TABLE n (a INTEGER NOT NULL, f REAL, s TEXT, i8 INTEGER, b BLOB)")
        self.con.execute("INSERT INTO n (rowid, a, f, s, i8, b) SELECT value, value * 7 % 1000, value * 0.5, "
                         "CASE WHEN value % 5 = 0 THEN NULL ELSE 's' || (value % 17) END, value % 100, "
                         "CASE WHEN value % 3 = 0 THEN x'00ff' ELSE NULL END FROM " + series(self.n - 1))
        self.con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', a INT32 NOT NULL, f FLOAT64, s TEXT, i8 INT8, b BLOB)"
                         % self.p)
        self.con.execute("INSERT INTO t SELECT a, f, s, i8, b FROM n ORDER BY rowid")

    def check_all(self):
        self.same("SELECT rowid, a, f, s, i8, b FROM {}")
        self.same("SELECT count(*), sum(a), total(f), min(s), max(s), sum(i8) FROM {}")
        self.same("SELECT rowid FROM {} WHERE a > 990")
        self.same("SELECT rowid, a FROM {} WHERE a BETWEEN 2000 AND 3000")
        self.same("SELECT rowid, f FROM {} ORDER BY f DESC, rowid LIMIT 7", ordered=True)
        self.same("SELECT rowid, a FROM {} ORDER BY a, rowid LIMIT 9 OFFSET 3", ordered=True)
        self.same("SELECT s, count(*), sum(a) FROM {} GROUP BY s")
        self.same("SELECT DISTINCT i8 FROM {}")
        self.same("SELECT rowid, s, b FROM {} WHERE rowid IN (0, 1, 5, 65535, 65536, 66000)")

    def reopened_same(self):
        """A new connection reads the file as the native table (and verifies)."""
        fresh = self.connect()
        fresh.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % self.p)
        self.assertEqual(fresh.execute("SELECT colstore_verify('t')").fetchone()[0], "ok")
        want = self.con.execute("SELECT rowid, a, f, s, i8, b FROM n ORDER BY rowid").fetchall()
        self.assertEqual(fresh.execute("SELECT rowid, a, f, s, i8, b FROM t ORDER BY rowid").fetchall(), want)
        fresh.close()


class Basics(Mirror):

    def test_set_values_keeps_rowids_and_every_read_path_sees_them(self):
        self.assertEqual(self.both("UPDATE {} SET a = a + 5000 WHERE a > 990"), self.con.execute(
            "SELECT count(*) FROM n WHERE a > 5990").fetchone()[0])
        self.both("UPDATE {} SET f = -f, s = 'changed' WHERE rowid BETWEEN ? AND ?", (R - 100, R + 100))
        self.both("UPDATE {} SET s = NULL, b = x'' WHERE i8 = 42")
        self.both("UPDATE {} SET i8 = -128 WHERE rowid = 3")
        self.both("UPDATE {} SET f = f * 2 WHERE s = 's3'")
        self.check_all()
        # zone maps see the new values: a > 5000 selects exactly the updated rows
        self.same("SELECT count(*) FROM {} WHERE a > 5000")
        info = self.info(self.con, "t")
        self.assertEqual((info["format_version"], info["rows"], info["positions"]), (2, self.n, self.n))
        fresh = self.connect()
        fresh.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % self.p)
        self.assertEqual(fresh.execute("SELECT colstore_verify('t')").fetchone()[0], "ok")
        want = self.con.execute("SELECT rowid, a, f, s, i8, b FROM n ORDER BY rowid").fetchall()
        self.assertEqual(fresh.execute("SELECT rowid, a, f, s, i8, b FROM t ORDER BY rowid").fetchall(), want)

    def test_aggregate_tables_see_updates(self):
        self.con.execute("CREATE VIRTUAL TABLE g USING colstore_agg(t, i8)")
        self.both("UPDATE {} SET i8 = 7, f = 1.0 WHERE a < 300")
        self.assertEqual(self.con.execute("SELECT i8, count, sum_f, min_a, max_a FROM g ORDER BY i8").fetchall(),
                         self.con.execute("SELECT i8, count(*), sum(f), min(a), max(a) FROM n GROUP BY i8 ORDER BY i8").fetchall())

    def test_conversions_and_errors_as_insert(self):
        state = self.state(self.con, "t", self.p)
        self.assertSqlError(self.con, "UPDATE t SET a = 'abc' WHERE rowid < 10", code="SQLITE_MISMATCH", contains=("t.a",))
        self.assertSqlError(self.con, "UPDATE t SET a = NULL WHERE rowid = 4", code="SQLITE_CONSTRAINT_NOTNULL")
        self.assertSqlError(self.con, "UPDATE t SET i8 = 1000 WHERE rowid = 4", code="SQLITE_MISMATCH")
        # the 60th row fails: none of the statement's rows change
        self.assertSqlError(self.con, "UPDATE t SET i8 = CASE WHEN rowid = 60 THEN 1000 ELSE 1 END WHERE rowid < 100",
                            code="SQLITE_MISMATCH")
        self.assertSqlError(self.con, "UPDATE t SET rowid = 5 WHERE rowid = 4", contains=("rowid",))
        self.assertSqlError(self.con, "UPDATE t SET rowid = rowid + 1", contains=("rowid",))
        self.assertSqlError(self.con, "UPDATE t SET _rows = x'00' WHERE rowid = 1", contains=("_rows",))
        self.assertStateUnchanged(state, self.con, "t", self.p, "refused UPDATEs")
        # conversions: '12' into INT32, 3.0 into INT8, 7 into TEXT, an integer into REAL
        for t in ("n", "t"):
            self.con.execute("UPDATE %s SET a = '12', i8 = 3.0, s = 7, f = 2 WHERE rowid = 9" % t)
        self.same("SELECT a, typeof(a), i8, typeof(i8), s, typeof(s), f, typeof(f) FROM {} WHERE rowid = 9")

    def test_transactions_savepoints_and_reading_own_changes(self):
        state = self.state(self.con, "t", self.p)
        self.con.execute("BEGIN")
        self.both("UPDATE {} SET a = 1 WHERE rowid < 50")
        self.same("SELECT count(*), sum(a) FROM {}")                  # its own UPDATE, before COMMIT
        self.same("SELECT rowid, a FROM {} WHERE a = 1")
        self.con.execute("ROLLBACK")
        self.assertStateUnchanged(state, self.con, "t", self.p, "ROLLBACK of an UPDATE")
        self.con.execute("BEGIN")
        self.both("DELETE FROM {} WHERE rowid < 10")
        self.both("UPDATE {} SET s = 'x' WHERE rowid < 20")          # after a DELETE: reads its view
        self.con.execute("COMMIT")
        self.check_all()
        # a savepoint rolled back drops its UPDATE
        self.con.execute("SAVEPOINT a")
        self.both("UPDATE {} SET f = 0 WHERE rowid BETWEEN 100 AND 199")
        self.con.execute("ROLLBACK TO a")
        self.same("SELECT rowid, f FROM {} WHERE rowid BETWEEN 90 AND 210")
        self.both("UPDATE {} SET a = 0 WHERE rowid BETWEEN 100 AND 149")
        self.con.execute("RELEASE a")
        self.check_all()
        other = self.connect()
        other.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % self.p)
        self.con.execute("BEGIN")
        self.both("UPDATE {} SET a = 77 WHERE rowid = 500")
        self.assertNotEqual(other.execute("SELECT a FROM t WHERE rowid = 500").fetchone()[0], 77, "an uncommitted UPDATE leaked")
        self.con.execute("COMMIT")
        self.assertEqual(other.execute("SELECT a FROM t WHERE rowid = 500").fetchone()[0], 77)

    def test_dataset_is_read_only(self):
        d = os.path.join(self.dir, "ds")
        os.mkdir(d)
        self.con.execute("SELECT colstore_create(?, 'SELECT a FROM n WHERE rowid < 100')", (os.path.join(d, "p.cst"),))
        self.con.execute("CREATE VIRTUAL TABLE ds USING colstore('%s')" % d)
        self.assertSqlError(self.con, "UPDATE ds SET a = 1", code="SQLITE_READONLY", contains=("dataset",))


class ThroughSelections(Mirror):
    """UPDATE (and DELETE) through `_rows` and `_mask` (issue 20, item 1):
    the selection addresses positions for writes as for reads, so the
    statement changes exactly the rows a SELECT with the same WHERE returns,
    each once.  The native reference names the same positions with rowid IN
    (duplicates gone, negatives counted from the end, deleted positions
    naming no row).  SQLite hands xUpdate every column, and a selection
    column reads back the BLOB the cursor was filtered by: that must not
    pass for a SET of it."""

    def native(self, positions):
        """The rowid IN spelling of a _rows list for n (json_each of its
        positions, negatives resolved)."""
        return "rowid IN (SELECT value FROM json_each('%s'))" % json.dumps([p % self.n for p in positions])

    def through(self, sql, positions=None, mask_on=None, params=()):
        """sql ({} the table, {sel} the selection) on t through _rows or
        _mask and on n through rowid IN; the changes() must agree."""
        if positions is not None:
            cs, blob, nat = "_rows = ?", rows_blob(positions), self.native(positions)
        else:
            cs, blob, nat = "_mask = ?", mask_blob(self.n, mask_on), self.native(sorted(mask_on))
        a = self.con.execute(sql.format("n", sel=nat), params).rowcount
        b = self.con.execute(sql.format("t", sel=cs), (blob,) + tuple(params)).rowcount
        self.assertEqual(b, a, "%s through %s" % (sql, cs))
        return b

    def test_the_issues_statements(self):
        pos = [3502, 17, 39038, -1, 65535, 65536, 39038]
        self.assertEqual(self.through("UPDATE {} SET s = NULL WHERE {sel}", pos), 6)
        self.assertEqual(self.through("UPDATE {} SET f = NULL WHERE {sel}", mask_on=[0, 5, R - 1, R, self.n - 1]), 5)
        self.assertEqual(self.through("UPDATE {} SET s = 'r' WHERE rowid BETWEEN 3502 AND 39038 AND {sel}", pos), 2)
        self.check_all()
        self.reopened_same()

    def test_duplicates_negatives_and_other_terms_change_each_row_once(self):
        pos = [10, 10, 10, -1, self.n - 1, 7, R, -(self.n - R), 5, 5, 0]
        # a = a + 1 read once per row: a repeated position must not add twice
        self.assertEqual(self.through("UPDATE {} SET a = a + 1000, s = 'dup' WHERE {sel}", pos), 6)
        self.same("SELECT rowid, a, s FROM {} WHERE s = 'dup'")
        # beside rowid ranges, rowid IN (one or two lists), IN (SELECT ...), column comparisons
        for extra in ("rowid > 6", "rowid IN (10, 0, 7, 65536)", "rowid IN (SELECT value FROM json_each('[5, 7, 0]')) "
                      "AND rowid IN (0, 5, 10)", "a > 500", "s IS NOT NULL AND f < 30000", "rowid = 10", "rowid = 11"):
            self.through("UPDATE {} SET i8 = -i8, f = f + 0.5 WHERE " + extra + " AND {sel}", pos)
            self.through("UPDATE {} SET b = x'01' WHERE {sel} AND " + extra, mask_on=[0, 5, 7, 10, 11, R, self.n - 1])
            self.same("SELECT rowid, a, f, s, i8, b FROM {} WHERE rowid IN (0, 5, 7, 10, 11, 65536, %d)" % (self.n - 1))
        # an empty selection, and an all-zero mask, change nothing
        self.assertEqual(self.through("UPDATE {} SET a = 0 WHERE {sel}", []), 0)
        self.assertEqual(self.through("UPDATE {} SET a = 0 WHERE {sel}", mask_on=[]), 0)
        self.check_all()
        self.reopened_same()

    def test_deleted_positions_and_bad_selections(self):
        self.both("DELETE FROM {} WHERE rowid IN (5, 6, 65536)")
        pos = [5, 6, 7, 65536, 65537, -1]
        self.assertEqual(self.through("UPDATE {} SET s = 'live' WHERE {sel}", pos), 3)
        self.assertEqual(self.through("UPDATE {} SET s = 'm' WHERE {sel}", mask_on=[5, 6, 7, 8]), 2)
        self.assertEqual(self.through("DELETE FROM {} WHERE {sel}", [6, 7, 7, -2]), 2)
        self.check_all()
        state = self.state(self.con, "t", self.p)
        # errors exactly as for SELECT: a position out of range, a mask of the wrong length
        self.assertSqlError(self.con, "UPDATE t SET a = 1 WHERE _rows = ?", (rows_blob([1, self.n]),), code="SQLITE_RANGE",
                            contains=("_rows position %d" % self.n,))
        self.assertSqlError(self.con, "UPDATE t SET a = 1 WHERE _rows = ?", (rows_blob([-self.n - 1]),), code="SQLITE_RANGE")
        self.assertSqlError(self.con, "UPDATE t SET a = 1 WHERE _rows = ?", (b"\x01\x00",), code="SQLITE_MISMATCH")
        self.assertSqlError(self.con, "UPDATE t SET a = 1 WHERE _mask = ?", (b"\x01" * (self.n - 1),), code="SQLITE_MISMATCH",
                            contains=("%d row positions" % self.n,))
        self.assertSqlError(self.con, "DELETE FROM t WHERE _rows = ?", (rows_blob([self.n + 5]),), code="SQLITE_RANGE")
        self.assertStateUnchanged(state, self.con, "t", self.p, "refused UPDATEs through selections")

    def test_setting_a_selection_column_is_refused_however_written(self):
        state = self.state(self.con, "t", self.p)
        blob, mask = rows_blob([1, 2]), mask_blob(self.n, [1, 2])
        for sql, params in (("UPDATE t SET _rows = _rows WHERE _rows = ?", (blob,)),
                            ("UPDATE t SET _rows = ?1 WHERE _rows = ?1", (blob,)),
                            ("UPDATE t SET _rows = NULL WHERE _rows = ?", (blob,)),
                            ("UPDATE t SET a = 5, _rows = NULL WHERE rowid = 1", ()),
                            ("UPDATE t SET _mask = _mask WHERE _mask = ?", (mask,)),
                            ("UPDATE t SET _mask = ?1, s = 'x' WHERE _mask = ?1", (mask,)),
                            ("UPDATE t SET _mask = NULL WHERE a = 3", ())):
            col = "_mask" if "_mask =" in sql.split("WHERE")[0] else "_rows"
            self.assertSqlError(self.con, sql, params, contains=(col, "cannot be SET", "WHERE %s = ?" % col))
        self.assertStateUnchanged(state, self.con, "t", self.p, "UPDATEs that SET a selection column")

    def test_update_from_fails_loudly(self):
        """SQLite 3.40 reads every column of an UPDATE ... FROM as a value,
        _rows and _mask too, which have none unless the statement selects
        by them (docs/sql.md): it fails with a colstore: message and changes
        nothing, never updates other rows."""
        state = self.state(self.con, "t", self.p)
        self.con.execute("CREATE TABLE u (x INTEGER)")
        self.con.execute("INSERT INTO u VALUES (3), (700)")
        self.assertSqlError(self.con, "UPDATE t SET s = 'from' FROM u WHERE t.rowid = u.x", code=None)
        self.assertSqlError(self.con, "UPDATE t SET s = 'from' FROM u WHERE t._rows = ? AND t.a > u.x",
                            (rows_blob([1, 2, 700]),), code=None)
        self.assertSqlError(self.con, "UPDATE t SET s = 'from' FROM u WHERE t._rows = ? AND t._mask = ? AND t.a > u.x",
                            (rows_blob([1, 2, 700]), mask_blob(self.n, [700])), code=None, contains=("cannot be SET",))
        self.assertStateUnchanged(state, self.con, "t", self.p, "UPDATE ... FROM")

    def test_inside_transactions_and_savepoints(self):
        state = self.state(self.con, "t", self.p)
        self.con.execute("BEGIN")
        self.through("UPDATE {} SET a = a + 1 WHERE {sel}", [1, 1, 2, -1])
        self.through("UPDATE {} SET a = a + 1 WHERE {sel}", [1, 3])           # reads its own pending update
        self.same("SELECT rowid, a FROM {} WHERE rowid IN (1, 2, 3, %d)" % (self.n - 1))
        self.con.execute("ROLLBACK")
        self.assertStateUnchanged(state, self.con, "t", self.p, "ROLLBACK of UPDATEs through _rows")
        self.con.execute("BEGIN")
        self.through("UPDATE {} SET s = 'one' WHERE {sel}", mask_on=[4, 8, R])
        self.con.execute("SAVEPOINT a")
        self.through("UPDATE {} SET s = 'two' WHERE {sel}", [8, 9, 8])
        self.through("DELETE FROM {} WHERE {sel}", [4, 4])
        self.same("SELECT rowid, s FROM {} WHERE rowid < 12 OR rowid = 65536")
        self.con.execute("ROLLBACK TO a")
        self.through("UPDATE {} SET f = -1 WHERE {sel} AND rowid BETWEEN 5 AND 65536", [8, R, 4, 8])
        # inserted rows of the transaction are positions too
        for t in ("n", "t"):
            self.con.execute("INSERT INTO %s (%sa, f, s, i8, b) VALUES (%s1, 2.5, 'new', 3, NULL)"
                             % (t, "rowid, " if t == "n" else "", "%d, " % self.n if t == "n" else ""))
        self.n += 1
        self.through("UPDATE {} SET s = 'new2' WHERE {sel}", [-1, self.n - 1, 0])
        self.con.execute("COMMIT")
        self.check_all()
        self.reopened_same()


class ReadOwnUpdates(Mirror):
    """A transaction reads its own pending UPDATEs (docs/sql.md "Writing")."""

    def read_all(self, what):
        """Every read path on both tables, inside or outside a transaction."""
        self.check_all()
        for sql, params in (("SELECT rowid, a FROM {} WHERE a > 5000", ()),
                            ("SELECT count(*), min(a), max(a) FROM {} WHERE a BETWEEN ? AND ?", (900, 7000)),
                            ("SELECT rowid, a, s FROM {} WHERE a IN (5991, 5995, 7, -3, 995)", ()),
                            ("SELECT rowid, f, s FROM {} WHERE rowid BETWEEN ? AND ?", (R - 40, R + 40)),
                            ("SELECT rowid, a FROM {} WHERE rowid > ? AND a < 10", (R,)),
                            ("SELECT rowid, s FROM {} WHERE s = 'changed' OR s IS NULL", ()),
                            ("SELECT rowid, b FROM {} WHERE b = x'' OR b > x'00'", ()),
                            ("SELECT DISTINCT s FROM {}", ()),
                            ("SELECT DISTINCT a FROM {} WHERE a > 900", ()),
                            ("SELECT i8, count(*), sum(a), min(s), max(f) FROM {} GROUP BY i8", ())):
            self.same(sql, params)
        for sql in ("SELECT rowid, a FROM {} ORDER BY a DESC, rowid LIMIT 12",
                    "SELECT rowid, s FROM {} WHERE s IS NOT NULL ORDER BY s DESC, rowid LIMIT 5",
                    "SELECT rowid, f FROM {} ORDER BY f, rowid LIMIT 6"):
            self.same(sql, ordered=True)
        # _rows and _mask address positions: compare with rowid lists
        pos = [3, 1, 1, 700, R - 1, R, R + 5, self.n - 1]
        self.assertEqual(self.con.execute("SELECT rowid, a, s FROM t WHERE _rows = ?", (rows_blob(pos),)).fetchall(),
                         [self.con.execute("SELECT rowid, a, s FROM n WHERE rowid = ?", (r,)).fetchone() for r in pos
                          if self.con.execute("SELECT 1 FROM n WHERE rowid = ?", (r,)).fetchone()], what + ": _rows")
        on = list(range(0, self.n, 97)) + [R - 1, R]
        self.assertEqual(sorted(self.con.execute("SELECT rowid, a, f FROM t WHERE _mask = ? AND a > 500",
                                                 (mask_blob(self.n, on),)).fetchall()),
                         sorted(self.con.execute("SELECT rowid, a, f FROM n WHERE rowid IN (%s) AND a > 500"
                                                 % ",".join(map(str, on))).fetchall()), what + ": _mask")
        # aggregate tables over t: grouped, and totals from per-record statistics
        self.assertEqual(self.con.execute("SELECT i8, count, sum_a, min_a, max_a, sum_f, min_s, max_s FROM g ORDER BY i8").fetchall(),
                         self.con.execute("SELECT i8, count(*), sum(a), min(a), max(a), sum(f), min(s), max(s) FROM n "
                                          "GROUP BY i8 ORDER BY i8").fetchall(), what + ": colstore_agg")
        self.assertEqual(self.con.execute("SELECT count, sum_a, min_a, max_a, count_s FROM tot").fetchone(),
                         self.con.execute("SELECT count(*), sum(a), min(a), max(a), count(s) FROM n").fetchone(), what + ": totals")

    def setUp(self):
        super().setUp()
        self.con.execute("CREATE VIRTUAL TABLE g USING colstore_agg(t, i8)")
        self.con.execute("CREATE VIRTUAL TABLE tot USING colstore_agg(t)")

    def test_reads_see_updates_from_the_next_statement(self):
        self.read_all("before")
        state = self.state(self.con, "t", self.p)
        for end in ("ROLLBACK", "COMMIT"):
            self.con.execute("BEGIN")
            # moves the largest values of both records past their zone maps' max
            self.both("UPDATE {} SET a = a + 5000 WHERE a > 990")
            self.read_all("after one UPDATE")
            self.both("UPDATE {} SET a = a + 1 WHERE a > 5000")      # the same rows again: adds to the first
            self.both("UPDATE {} SET a = -3, f = f * 2 WHERE rowid = 7")   # one-pass, by rowid
            self.both("UPDATE {} SET a = a - 1 WHERE rowid = 7")
            self.both("UPDATE {} SET f = -f, s = 'changed' WHERE rowid BETWEEN ? AND ?", (R - 100, R + 100))
            self.both("UPDATE {} SET i8 = NULL WHERE rowid % 1000 = 3")
            self.read_all("after several UPDATEs")
            self.con.execute(end)
            if end == "ROLLBACK":
                self.assertStateUnchanged(state, self.con, "t", self.p, "ROLLBACK of UPDATEs that were read")
        self.read_all("after COMMIT")
        self.reopened_same()

    def test_update_after_delete_and_delete_after_update(self):
        self.con.execute("BEGIN")
        self.both("DELETE FROM {} WHERE a < 100")
        self.both("UPDATE {} SET f = -1, a = a + 5000 WHERE a < 200")  # the deleted rows are not there to update
        self.read_all("UPDATE after DELETE")
        self.both("DELETE FROM {} WHERE f = -1 AND rowid % 2 = 0")     # rows this transaction updated
        self.read_all("DELETE after UPDATE")
        self.both("UPDATE {} SET s = 'z' || rowid WHERE rowid < 500 OR rowid > ?", (self.n - 300,))
        self.both("DELETE FROM {} WHERE s = 'z7' OR s = 'z' || ?", (self.n - 1,))
        self.read_all("again")
        self.con.execute("COMMIT")
        self.read_all("after COMMIT")
        self.reopened_same()

    def test_text_blob_and_null_values(self):
        long_text = "x" * 3000
        self.con.execute("BEGIN")
        self.both("UPDATE {} SET s = NULL, b = x'' WHERE rowid % 7 = 0")
        self.both("UPDATE {} SET s = ? || rowid, b = CAST(? || rowid AS BLOB) WHERE rowid % 11 = 1", (long_text, long_text))
        self.both("UPDATE {} SET s = '', b = NULL, f = NULL, i8 = NULL WHERE rowid BETWEEN ? AND ?", (R - 3, R + 3))
        self.both("UPDATE {} SET s = 'héllo 😀', b = x'00ff00' WHERE rowid IN (0, 1, ?)", (self.n - 1,))
        self.read_all("TEXT, BLOB, NULL")
        for sql in ("SELECT rowid, length(s), length(b) FROM {} WHERE s > 'x'",
                    "SELECT rowid FROM {} WHERE s = ''", "SELECT rowid FROM {} WHERE b IS NULL AND f IS NULL",
                    "SELECT min(s), max(s), min(b), max(b), count(s), count(b), count(f), count(i8) FROM {}"):
            self.same(sql)
        self.same("SELECT rowid, substr(s, 1, 5) FROM {} ORDER BY s DESC, rowid LIMIT 4", ordered=True)
        self.con.execute("COMMIT")
        self.read_all("after COMMIT")
        self.reopened_same()

    def test_savepoints_and_failed_statements_drop_what_they_read(self):
        self.con.execute("BEGIN")
        self.both("UPDATE {} SET a = 1 WHERE rowid < 100")
        self.con.execute("SAVEPOINT a")
        self.both("UPDATE {} SET a = 2, s = 'in a' WHERE rowid < 50")
        self.read_all("inside savepoint a")
        self.con.execute("ROLLBACK TO a")
        self.read_all("after ROLLBACK TO a")
        # as many updated rows as before the rollback, other values: not the old view
        self.both("UPDATE {} SET a = 3, s = 'again' WHERE rowid < 50")
        self.read_all("the same count again")
        self.con.execute("SAVEPOINT b")
        self.both("DELETE FROM {} WHERE rowid BETWEEN 10 AND 20")
        self.read_all("inside savepoint b")
        self.con.execute("ROLLBACK TO b")
        self.read_all("after ROLLBACK TO b")
        self.con.execute("RELEASE a")
        # a statement that fails at its 60th row leaves none of its rows, and the earlier ones
        self.assertSqlError(self.con, "UPDATE t SET i8 = CASE WHEN rowid = 60 THEN 1000 ELSE 9 END WHERE rowid < 100",
                            code="SQLITE_MISMATCH")
        self.read_all("after a failed UPDATE")
        self.con.execute("COMMIT")
        self.read_all("after COMMIT")
        self.reopened_same()

    def test_columns_not_set_keep_their_pending_values(self):
        self.con.execute("BEGIN")
        self.both("UPDATE {} SET a = 4000 + rowid WHERE rowid < 30")
        self.both("UPDATE {} SET f = 0.25 WHERE rowid < 20")          # a untouched: keeps 4000 + rowid
        self.both("UPDATE {} SET s = s || '!' WHERE rowid < 10")       # reads s as this transaction left it
        self.both("UPDATE {} SET s = s || '?' WHERE rowid < 10")
        self.both("UPDATE {} SET a = a WHERE rowid < 5")
        self.read_all("columns not set")
        self.same("SELECT rowid, a, f, s FROM {} WHERE rowid < 35")
        self.con.execute("COMMIT")
        self.read_all("after COMMIT")
        self.reopened_same()

    def test_other_connections_see_nothing_until_commit(self):
        other = self.connect()
        other.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % self.p)
        before = other.execute("SELECT count(*), sum(a) FROM t WHERE a > 5000").fetchone()
        self.con.execute("BEGIN")
        self.both("UPDATE {} SET a = a + 5000 WHERE a > 500")
        self.same("SELECT count(*), sum(a) FROM {} WHERE a > 5000")
        self.assertEqual(other.execute("SELECT count(*), sum(a) FROM t WHERE a > 5000").fetchone(), before)
        self.con.execute("COMMIT")
        self.assertEqual(other.execute("SELECT count(*), sum(a) FROM t WHERE a > 5000").fetchone(),
                         self.con.execute("SELECT count(*), sum(a) FROM n WHERE a > 5000").fetchone())


class RandomUpdates(cstest.StoreTest):
    """Random UPDATE/DELETE/INSERT/ROLLBACK sequences against a native table,
    read after every step, inside transactions too (the connection's own
    pending UPDATEs and DELETEs, savepoints rolled back).  Writes and reads
    go through _rows and _mask as well (repeats, negatives, deleted
    positions, beside rowid ranges, IN lists and predicates), the native
    side naming the same positions with rowid IN."""

    QUERIES = ("SELECT rowid, a, f, s FROM {}", "SELECT count(*), sum(a), min(s) FROM {} WHERE a > 500",
               "SELECT rowid, a FROM {} ORDER BY a DESC, rowid LIMIT 5", "SELECT s, count(*) FROM {} GROUP BY s",
               "SELECT DISTINCT s FROM {} WHERE f IS NOT NULL", "SELECT rowid, f FROM {} WHERE a IN (-7, 0, 50, 500, 999, 1049)")

    def run_seed(self, seed, steps):
        rng = random.Random(seed)
        con = self.connect()
        p = self.path("r%d.cst" % seed)
        m = cstest.MutationMirror(self, con, p, rng, seed)
        run = m.run
        rows = [0]

        def insert(k):
            con.execute("BEGIN")
            rows[0] = m.insert(k) + k
            con.execute("COMMIT")

        def compare(where):
            for q in self.QUERIES:
                want = sorted(con.execute(q.format("n")).fetchall(), key=repr)
                got = sorted(con.execute(q.format("t")).fetchall(), key=repr)
                self.assertEqual(got, want, "seed %d %s: %s" % (seed, where, q))
            m.check_selected_read(where)

        def write(op):
            lo = rng.randint(0, 999)
            if op == "upd":
                run("UPDATE {} SET a = a + ?, s = ? WHERE a BETWEEN ? AND ?", (rng.randint(-50, 50), rng.choice([None, "u"]), lo, lo + 60))
            elif op == "upd_rows":
                ids = [rng.randrange(rows[0]) for _ in range(rng.randint(1, 20))]
                run("UPDATE {} SET f = ? WHERE rowid IN (SELECT value FROM json_each(?))", (rng.choice([None, 1.5, -0.0]), json.dumps(ids)))
            elif op == "upd_neg":
                run("UPDATE {} SET a = -a WHERE a BETWEEN ? AND ?", (lo + 100, lo + 150))
            elif op == "upd_text":
                run("UPDATE {} SET s = s || ?, f = f + 1 WHERE rowid % 7 = ?", (rng.choice(["", "x", "long" * 20]), rng.randrange(7)))
            elif op == "upd_sel":       # through _rows/_mask, beside ranges, IN lists, predicates
                m.run_selected("UPDATE {} SET a = (a + ?) % 1000, s = ?", (rng.randint(1, 50), rng.choice([None, "sel"])))
            elif op == "del_sel":
                m.run_selected("DELETE FROM {}")
            else:
                run("DELETE FROM {} WHERE a BETWEEN ? AND ?", (lo, lo + rng.choice([10, 20])))

        for _ in range(3):
            insert(rng.randint(1, 500))
        for step in range(steps):
            op = rng.choice(["upd", "upd", "upd_rows", "upd_sel", "del", "del_sel", "insert", "tx"])
            if op == "insert":
                insert(rng.randint(1, 100))
            elif op != "tx":
                write(op)
            else:
                # a transaction of writes, each read back before the next
                con.execute("BEGIN")
                marks = 0
                for k in range(rng.randint(2, 6)):
                    choice = rng.choice(["upd", "upd_rows", "upd_neg", "upd_text", "upd_sel", "del", "del_sel", "savepoint",
                                         "rollback_to"])
                    if choice == "savepoint":
                        con.execute("SAVEPOINT s%d" % marks)
                        marks += 1
                    elif choice == "rollback_to" and marks:
                        con.execute("ROLLBACK TO s%d" % rng.randrange(marks))
                    elif choice != "rollback_to":
                        write(choice)
                    compare("step %d, in a transaction after %s" % (step, choice))
                con.execute(rng.choice(["COMMIT", "ROLLBACK"]))
            compare("step %d (%s)" % (step, op))
        fresh = self.connect()
        fresh.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % p)
        self.assertEqual(fresh.execute("SELECT colstore_verify('t')").fetchone()[0], "ok")
        self.assertEqual(fresh.execute("SELECT rowid, * FROM t ORDER BY rowid").fetchall(),
                         con.execute("SELECT rowid, a, f, s FROM n ORDER BY rowid").fetchall(), "seed %d: reopened" % seed)

    def test_random_sequences(self):
        for seed in (201, 202, 203):
            self.run_seed(seed, cstest.scaled(40, 15))


CHILD_UPDATER = r"""
import sys, cstest
con = cstest.connect()
con.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % sys.argv[1])
print("ready", flush=True)
k = 1
while True:
    con.execute("UPDATE t SET v = ? WHERE g < 100", (k,))
    print(k, flush=True)
    k += 1
"""


class Crash(cstest.StoreTest):

    def test_sigkill_during_updates_leaves_a_committed_state(self):
        con = self.connect()
        p = self.path("k.cst")
        con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', g INT32, v INT64)" % p)
        con.execute("INSERT INTO t SELECT value % 200, 0 FROM " + series(R + 5000))
        rng = random.Random(78)
        updates_seen = []
        untouched = con.execute("SELECT count(*), max(v) FROM t WHERE g >= 100").fetchone()
        for attempt in range(cstest.scaled(5, 2)):
            # (an UPDATE of these 35,000 rows takes 0.35-0.55 s under the sanitizers)
            fresh = self.after_sigkill(CHILD_UPDATER, p, rng.uniform(0.05, cstest.scaled(0.4, 2.5)))
            # every UPDATE set all g < 100 rows at once: one value among them
            vals = fresh.execute("SELECT count(DISTINCT v), max(v) FROM t WHERE g < 100").fetchone()
            self.assertEqual(vals[0], 1, "attempt %d: an UPDATE is half applied" % attempt)
            updates_seen.append(vals[1])
            self.assertEqual(fresh.execute("SELECT count(*), max(v) FROM t WHERE g >= 100").fetchone(), untouched)
            fresh.close()
        self.assertGreater(max(updates_seen), 0, "no UPDATE was committed before a kill: the test tested nothing")


if __name__ == "__main__":
    cstest.main()
