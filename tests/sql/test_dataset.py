"""Datasets: a directory or a glob pattern as SOURCE, read as one table.

A dataset's rows are its files' rows concatenated in name order, so every
query on it must give exactly what the same query gives on a native table
holding that concatenation (rowid = position across the files).  The files
are cut from one random native table (fixed seed, printed on failure) at
uneven sizes, one of them empty and one longer than a record, so scans,
rowid ranges, lookups, _rows and _mask cross file and record boundaries.
The files are created out of name order, so name order is what is checked.

Then the rest of the contract for datasets: directory and glob SOURCE, a
file with another schema named in the error, INSERT refused before anything
is written (file bytes unchanged), colstore_info listing the files with
totals, colstore_verify naming the damaged file, and freshness: rows
appended to one file through its own table, and files added to or removed
from the directory, are seen by the next statement.
"""
import os
import random
import shutil
import struct
import sys
import unittest

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402

SEED = 20240611
COLS = [("k", "INTEGER"), ("i32", "INT32"), ("f", "REAL"), ("t", "TEXT"), ("bl", "BLOB"), ("b", "BOOL")]
COLLIST = ", ".join(c for c, _ in COLS)
# Rows per file, in name order; one empty file, one longer than a record.
SIZES = cstest.scaled([1, 2500, 0, cstest.RECORD_ROWS + 1234, 17, 4000], [1, 250, 0, 1500, 17, 400])
# The order the files are created in (not name order).
CREATE_ORDER = [3, 0, 5, 1, 4, 2]


def random_row(rng, k):
    def maybe(v):
        return None if rng.random() < 0.08 else v
    f = rng.choice([rng.uniform(-1e6, 1e6), rng.randint(-5, 5) * 0.5, 1e308, -0.0, float("inf")])
    return (maybe(k), maybe(rng.randint(-2**31, 2**31 - 1)), maybe(f),
            maybe(rng.choice(["", "abc", "ü€", "x" * rng.randint(0, 40), str(rng.randint(0, 99))])),
            maybe(bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 6)))), maybe(rng.randint(0, 1)))


class DatasetTest(cstest.StoreTest):

    def setUp(self):
        super().setUp()
        self.con = self.connect()
        self.rng = random.Random(SEED)
        self.seed = SEED
        self.con.execute("CREATE TABLE nat(%s)" % ", ".join("%s %s" % c for c in COLS))
        rows, self.bounds = [], [0]
        for n in SIZES:
            for _ in range(n):
                rows.append(random_row(self.rng, len(rows) * 3 - 7))
            self.bounds.append(len(rows))
        self.con.execute("BEGIN")
        self.con.executemany("INSERT INTO nat(rowid, %s) VALUES (?, ?, ?, ?, ?, ?, ?)" % COLLIST,
                             [(i,) + r for i, r in enumerate(rows)])
        self.con.execute("COMMIT")
        self.total = len(rows)
        self.ddir = self.path("ds")
        os.mkdir(self.ddir)
        self.files = [os.path.join(self.ddir, "p%02d.cst" % i) for i in range(len(SIZES))]
        for i in CREATE_ORDER:
            self.make_file(self.files[i], self.bounds[i], self.bounds[i + 1])

    def make_file(self, path, lo, hi):
        self.con.execute("SELECT colstore_create(?, ?)",
                         (path, "SELECT %s FROM nat WHERE rowid >= %d AND rowid < %d ORDER BY rowid" % (COLLIST, lo, hi)))

    def msg(self, what):
        return "seed %d: %s" % (self.seed, what)

    def native_all(self):
        return self.con.execute("SELECT rowid, * FROM nat ORDER BY rowid").fetchall()

    def assertSameRows(self, got, want, what, ordered=True):
        a, b = cstest.canon_rows(want, ordered), cstest.canon_rows(got, ordered)
        if a != b:
            self.fail(self.msg("%s\n%s" % (what, cstest.Differ._diff(want, got, a, b, ordered))))

    # ----------------------------------------------------------- reading

    def test_differential(self):
        con = self.con
        con.execute("CREATE VIRTUAL TABLE dsd USING colstore('%s')" % self.ddir)
        con.execute("CREATE VIRTUAL TABLE dsg USING colstore('%s')" % os.path.join(self.ddir, "p*.cst"))
        con.execute("CREATE VIRTUAL TABLE dsq USING colstore('%s')" % os.path.join(self.ddir, "p0?.cst"))
        d = cstest.Differ(self, con, {"T": "nat"}, [("dir", {"T": "dsd"}), ("glob", {"T": "dsg"}), ("glob?", {"T": "dsq"})],
                          self.seed)
        n = self.total
        edges = sorted(set(b for b in self.bounds if 0 < b < n))
        d.same("SELECT rowid, * FROM {T}", ordered=False)
        d.same("SELECT rowid, * FROM {T} ORDER BY rowid", ordered=True)
        d.same("SELECT rowid, k, t FROM {T} ORDER BY rowid DESC", ordered=True)
        for e in edges:
            d.same("SELECT rowid, * FROM {T} WHERE rowid BETWEEN ? AND ?", (e - 3, e + 2))
            d.same("SELECT rowid, k, bl FROM {T} WHERE rowid >= ? AND rowid < ? ORDER BY rowid DESC", (e - 1, e + 1), ordered=True)
        d.same("SELECT rowid, k FROM {T} WHERE rowid > ? AND rowid <= ?", (edges[0] - 1, edges[-1] + 1))
        pivot = self.rng.randint(-2**31, 2**31 - 1)
        d.same("SELECT rowid, * FROM {T} WHERE i32 > ?", (pivot,))
        d.same("SELECT rowid, k FROM {T} WHERE f BETWEEN ? AND ?", (-1000.0, 5e5))
        d.same("SELECT rowid, k, t FROM {T} WHERE t = ?", ("abc",))
        d.same("SELECT rowid, k FROM {T} WHERE b = 1 AND i32 < ? AND rowid > ?", (pivot, edges[0]))
        d.same("SELECT rowid, * FROM {T} WHERE k IS NULL OR bl IS NULL")
        picks = [self.rng.randrange(n) for _ in range(40)] + [max(e - 1, 0) for e in edges] + edges
        d.same("SELECT rowid, * FROM {T} WHERE rowid IN (%s)" % ",".join(map(str, picks)))
        for off in [0, 1] + [max(e - 2, 0) for e in edges]:
            d.same("SELECT rowid, k, f FROM {T} ORDER BY rowid LIMIT 5 OFFSET ?", (off,), ordered=True)
            d.same("SELECT rowid, k FROM {T} LIMIT 7 OFFSET ?", (off,), ordered=True)
        d.same("SELECT count(*), sum(k), min(f), max(f), min(t), max(t), avg(i32), total(b) FROM {T}")
        d.same("SELECT b, count(*), sum(i32), max(bl) FROM {T} GROUP BY b")
        d.same("SELECT count(*) FROM {T} WHERE rowid >= ?", (edges[1],))
        # _rows: positions in several files, negative ones, duplicates.
        every = self.native_all()
        pos = [self.rng.randrange(n) for _ in range(30)] + edges + [-1, -n, 0, edges[0], edges[0]]
        blob = struct.pack("<%dq" % len(pos), *pos)
        want = [every[p] for p in pos]
        for t in ("dsd", "dsg"):
            got = con.execute("SELECT rowid, * FROM %s WHERE _rows = ?" % t, (blob,)).fetchall()
            self.assertSameRows(got, want, "%s _rows" % t)
            got = con.execute("SELECT rowid, * FROM %s(?)" % t, (blob,)).fetchall()
            self.assertSameRows(got, want, "%s(_rows)" % t)
            self.assertSqlError(con, "SELECT * FROM %s WHERE _rows = ?" % t, (struct.pack("<q", n),), code=None, contains=(str(n),))
        # _mask: a random selection across every file.
        mask = bytes(1 if self.rng.random() < 0.3 else 0 for _ in range(n))
        want = [r for r, m in zip(every, mask) if m]
        for t in ("dsd", "dsg"):
            got = con.execute("SELECT rowid, * FROM %s WHERE _mask = ?" % t, (mask,)).fetchall()
            self.assertSameRows(got, want, "%s _mask" % t)
            got = con.execute("SELECT rowid, k FROM %s WHERE _mask = ? AND i32 > ?" % t, (mask, pivot)).fetchall()
            self.assertSameRows(got, [(r[0], r[1]) for r in want if r[2] is not None and r[2] > pivot], "%s _mask+pred" % t)
        self.assertGreater(d.n_queries, 40)

    def test_name_order_and_info(self):
        con = self.con
        # The files were created out of name order; rows follow name order.
        con.execute("CREATE VIRTUAL TABLE ds USING colstore('%s')" % self.ddir)
        got = con.execute("SELECT rowid, * FROM ds WHERE rowid IN (%s) ORDER BY rowid" %
                          ",".join(str(b) for b in self.bounds[:-1] if b < self.total)).fetchall()
        want = con.execute("SELECT rowid, * FROM nat WHERE rowid IN (%s) ORDER BY rowid" %
                           ",".join(str(b) for b in self.bounds[:-1] if b < self.total)).fetchall()
        self.assertSameRows(got, want, "first row of every file")
        for src in ("ds", self.ddir, os.path.join(self.ddir, "*.cst")):
            info = self.info(con, src)
            self.assertEqual(info["files"], self.files, src)
            self.assertEqual(info["rows"], self.total, src)
            self.assertEqual(info["file_rows"], SIZES, src)
            self.assertTrue(info["dataset"], src)
            self.assertEqual(info["bytes"], sum(os.path.getsize(f) for f in self.files), src)
            recs = sum(self.info(con, f)["records"] for f in self.files)
            self.assertEqual(info["records"], recs, src)
            self.assertEqual(info["columns"][0]["name"], "k")
        # A single file still lists itself.
        self.assertEqual(self.info(con, self.files[1])["files"], [self.files[1]])
        self.assertFalse(self.info(con, self.files[1])["dataset"])
        # Column definitions, when given, must match.
        con.execute("CREATE VIRTUAL TABLE ok USING colstore('%s', k INT64, i32 INT32, f FLOAT64, t TEXT, bl BLOB, b BOOL)"
                    % self.ddir)
        self.assertSqlError(con, "CREATE VIRTUAL TABLE bad USING colstore('%s', k INT64, i32 INT64, f FLOAT64, t TEXT, bl BLOB, b BOOL)"
                            % self.ddir, contains=("column 2",))
        # EXPLAIN QUERY PLAN and colstore_last_plan work as for one file.
        plan = " ".join(str(r) for r in con.execute("EXPLAIN QUERY PLAN SELECT k FROM ds WHERE rowid < 5").fetchall())
        self.assertIn("range(rowid)", plan)

    def test_zero_files(self):
        con = self.con
        empty = self.path("empty")
        os.mkdir(empty)
        msg = self.assertSqlError(con, "CREATE VIRTUAL TABLE z USING colstore('%s')" % empty, code="SQLITE_CANTOPEN",
                                  contains=("no store files match",))
        self.assertIn(empty, msg)
        pat = os.path.join(self.ddir, "*.nothing")
        msg = self.assertSqlError(con, "CREATE VIRTUAL TABLE z USING colstore('%s')" % pat, code="SQLITE_CANTOPEN",
                                  contains=("no store files match", pat))
        # With column definitions a pattern is still not created.
        self.assertSqlError(con, "CREATE VIRTUAL TABLE z USING colstore('%s', a INT64)" % pat, code="SQLITE_CANTOPEN")
        self.assertFalse(os.path.exists(pat))
        self.assertSqlError(con, "SELECT colstore_info(?)", (pat,), code="SQLITE_CANTOPEN", contains=("no store files match",))

    def test_schema_mismatch(self):
        con = self.con
        con.execute("CREATE VIRTUAL TABLE ds USING colstore('%s')" % self.ddir)
        self.assertEqual(con.execute("SELECT count(*) FROM ds").fetchone()[0], self.total)
        # Sorts between p01 and p02; p99 differs too but comes later.
        odd = os.path.join(self.ddir, "p01x.cst")
        con.execute("SELECT colstore_create(?, 'SELECT CAST(1 AS INTEGER) AS k, 2.5 AS i32')", (odd,))
        con.execute("SELECT colstore_create(?, 'SELECT 1.5 AS k')", (os.path.join(self.ddir, "p99.cst"),))
        want = ("colstore: %s: schema differs from %s: column 2 is i32 FLOAT64 here but i32 INT32 there" % (odd, self.files[0]))
        msg = self.assertSqlError(con, "CREATE VIRTUAL TABLE ds2 USING colstore('%s')" % self.ddir, code=None)
        self.assertEqual(msg, want)
        # The open table sees the new file at its next statement: the same error.
        msg = self.assertSqlError(con, "SELECT count(*) FROM ds", code=None)
        self.assertEqual(msg, want)
        msg = self.assertSqlError(con, "SELECT count(*) FROM ds WHERE rowid = 3", code=None)
        self.assertIn(odd, msg)

    # ----------------------------------------------------------- writing

    def test_insert_is_refused(self):
        con = self.con
        con.execute("CREATE VIRTUAL TABLE ds USING colstore('%s')" % self.ddir)
        before = [cstest.read_bytes(f) for f in self.files]
        rows = con.execute("SELECT rowid, * FROM ds").fetchall()
        want = ("colstore: table ds is a dataset of %d files and datasets are read-only; "
                "INSERT into one of its files as its own table" % len(self.files))
        msg = self.assertSqlError(con, "INSERT INTO ds VALUES (1, 2, 3.0, 'x', x'00', 1)", code=None)
        self.assertEqual(msg, want)
        msg = self.assertSqlError(con, "INSERT INTO ds SELECT * FROM nat", code=None)
        self.assertEqual(msg, want)
        con.execute("BEGIN")
        self.assertSqlError(con, "INSERT INTO ds(k) VALUES (5)", code=None)
        con.execute("COMMIT")
        self.assertSqlError(con, "DELETE FROM ds", code="SQLITE_READONLY", contains=("dataset", "read-only"))
        self.assertEqual([cstest.read_bytes(f) for f in self.files], before, "a refused INSERT changed a file")
        self.assertEqual(sorted(os.listdir(self.ddir)), sorted(os.path.basename(f) for f in self.files))
        self.assertEqual(con.execute("SELECT rowid, * FROM ds").fetchall(), rows)

    def test_verify(self):
        con = self.con
        con.execute("CREATE VIRTUAL TABLE ds USING colstore('%s')" % self.ddir)
        self.assertEqual(con.execute("SELECT colstore_verify('ds')").fetchone()[0], "ok")
        self.assertEqual(con.execute("SELECT colstore_verify(?)", (os.path.join(self.ddir, "*.cst"),)).fetchone()[0], "ok")
        # Damage a data byte in the middle of file 3 (far from header and footer).
        victim = self.files[3]
        data = bytearray(cstest.read_bytes(victim))
        at = len(data) // 3
        data[at] ^= 0x40
        cstest.write_bytes(victim, bytes(data))
        msg = self.assertSqlError(con, "SELECT colstore_verify('ds')", code="SQLITE_CORRUPT")
        self.assertIn(victim, msg)
        self.assertIn("record", msg)
        self.assertNotIn(self.files[0], msg)

    # --------------------------------------------------------- freshness

    def test_append_through_own_table_is_seen(self):
        con = self.con
        con.execute("CREATE VIRTUAL TABLE ds USING colstore('%s')" % self.ddir)
        self.assertEqual(con.execute("SELECT count(*) FROM ds").fetchone()[0], self.total)
        # Append to the second file (in the middle of the dataset).
        con.execute("CREATE VIRTUAL TABLE one USING colstore('%s')" % self.files[1])
        new = [random_row(self.rng, -i) for i in range(25)]
        con.executemany("INSERT INTO one VALUES (?, ?, ?, ?, ?, ?)", new)
        # The reference: the new rows (as a native table stores them) come
        # right after file 1's rows.
        con.execute("CREATE TABLE nat2(%s)" % ", ".join("%s %s" % c for c in COLS))
        con.executemany("INSERT INTO nat2 VALUES (?, ?, ?, ?, ?, ?)", new)
        every = [r[1:] for r in self.native_all()]
        cut = self.bounds[2]
        want_rows = every[:cut] + con.execute("SELECT * FROM nat2 ORDER BY rowid").fetchall() + every[cut:]
        got = con.execute("SELECT * FROM ds ORDER BY rowid").fetchall()
        self.assertSameRows(got, want_rows, "after an append to file 1")
        got = con.execute("SELECT rowid, k FROM ds WHERE rowid BETWEEN ? AND ?", (cut - 1, cut + 26)).fetchall()
        self.assertSameRows(got, [(i, want_rows[i][0]) for i in range(cut - 1, cut + 27)], "rowid range over the new rows")
        # Another connection's dataset table sees it too.
        other = self.connect()
        other.execute("CREATE VIRTUAL TABLE ds USING colstore('%s')" % self.ddir)
        self.assertEqual(other.execute("SELECT count(*) FROM ds").fetchone()[0], self.total + 25)

    def test_added_and_removed_files_are_seen(self):
        con = self.con
        con.execute("CREATE VIRTUAL TABLE ds USING colstore('%s')" % self.ddir)
        con.execute("CREATE VIRTUAL TABLE dg USING colstore('%s')" % os.path.join(self.ddir, "p*.cst"))
        self.assertEqual(con.execute("SELECT count(*) FROM ds").fetchone()[0], self.total)
        # A new file sorting first.
        first = os.path.join(self.ddir, "a00.cst")
        self.make_file(first, 0, 10)
        self.assertEqual(con.execute("SELECT count(*) FROM ds").fetchone()[0], self.total + 10)
        self.assertEqual(con.execute("SELECT k FROM ds WHERE rowid = 10").fetchone()[0],
                         con.execute("SELECT k FROM nat WHERE rowid = 0").fetchone()[0])
        self.assertEqual(con.execute("SELECT count(*) FROM dg").fetchone()[0], self.total)  # not p*
        self.assertEqual(len(self.info(con, "ds")["files"]), len(self.files) + 1)
        # A new file at the end, matched by both.
        last = os.path.join(self.ddir, "p99.cst")
        self.make_file(last, 5, 9)
        self.assertEqual(con.execute("SELECT count(*) FROM ds").fetchone()[0], self.total + 14)
        self.assertEqual(con.execute("SELECT count(*) FROM dg").fetchone()[0], self.total + 4)
        self.assertEqual(con.execute("SELECT rowid, k FROM dg ORDER BY rowid DESC LIMIT 1").fetchone(),
                         (self.total + 3, con.execute("SELECT k FROM nat WHERE rowid = 8").fetchone()[0]))
        # Non-store names and subdirectories are not part of a directory SOURCE.
        cstest.write_bytes(os.path.join(self.ddir, "notes.txt"), b"hello")
        os.mkdir(os.path.join(self.ddir, "sub.cst"))
        self.assertEqual(con.execute("SELECT count(*) FROM ds").fetchone()[0], self.total + 14)
        # Removing files.
        os.remove(first)
        os.remove(self.files[3])
        n = self.total + 4 - SIZES[3]
        self.assertEqual(con.execute("SELECT count(*) FROM ds").fetchone()[0], n)
        self.assertEqual(con.execute("SELECT count(*) FROM dg").fetchone()[0], n)

    def test_writer_temp_files_are_ignored(self):
        # A writer creating <path> writes <path>.tmp.XXXXXX first (mkstemp)
        # and renames it at commit.  Such a file must never be a member, in
        # directory or pattern mode, whatever it holds: here a complete copy
        # of a store (it would open and add rows) and garbage bytes (it would
        # fail the statement as not a store).
        con = self.con
        shutil.copyfile(self.files[1], self.files[1] + ".tmp.Ab3xZ9")
        cstest.write_bytes(self.files[4] + ".tmp.q1W2e3", b"half-written store" * 10)
        cstest.write_bytes(os.path.join(self.ddir, "zz.cst.tmp.000000"), b"")
        everything = os.path.join(self.ddir, "*")
        con.execute("CREATE VIRTUAL TABLE dsd USING colstore('%s')" % self.ddir)
        con.execute("CREATE VIRTUAL TABLE dsa USING colstore('%s')" % everything)
        con.execute("CREATE VIRTUAL TABLE dsc USING colstore('%s')" % os.path.join(self.ddir, "*.cst*"))
        want = self.native_all()
        for t in ("dsd", "dsa", "dsc"):
            self.assertSameRows(con.execute("SELECT rowid, * FROM %s" % t).fetchall(), want, t)
            self.assertEqual(self.info(con, t)["files"], self.files, t)
        self.assertEqual(self.info(con, everything)["files"], self.files)
        self.assertEqual(con.execute("SELECT colstore_verify(?)", (everything,)).fetchone()[0], "ok")
        # A real writer mid-create, seen by the open tables' next statement:
        # still not a member; once committed (renamed), it is one.
        late = os.path.join(self.ddir, "p50.cst")
        con.execute("BEGIN")
        con.execute("CREATE VIRTUAL TABLE late USING colstore('%s', k INTEGER, i32 INT32, f FLOAT64, t TEXT, bl BLOB, b BOOL)"
                    % late)
        con.execute("COMMIT")
        self.assertEqual(con.execute("SELECT count(*) FROM dsa").fetchone()[0], self.total)
        con.execute("INSERT INTO late VALUES (1, 2, 3.0, 'x', x'00', 1)")
        for t in ("dsd", "dsa", "dsc"):
            self.assertEqual(con.execute("SELECT count(*) FROM %s" % t).fetchone()[0], self.total + 1, t)

    def test_refresh_reopens_only_changed_files(self):
        # Appending to one file re-opens that file only: every other file
        # keeps its one mapping (same address) across the refresh, and the
        # old snapshot's mapping of the changed file is released.
        if not os.path.exists("/proc/self/maps"):
            self.skipTest("needs /proc/self/maps")
        con = self.con
        con.execute("CREATE VIRTUAL TABLE ds USING colstore('%s')" % self.ddir)
        self.assertEqual(con.execute("SELECT count(*) FROM ds").fetchone()[0], self.total)
        before = file_mappings(self.files)
        for f in self.files:
            self.assertEqual(len(before[f]), 1, "%s mapped %d times" % (f, len(before[f])))
        # Append through another connection, so that nothing else in this
        # process maps the file.
        other = self.connect()
        other.execute("CREATE VIRTUAL TABLE one USING colstore('%s')" % self.files[1])
        other.executemany("INSERT INTO one VALUES (?, ?, ?, ?, ?, ?)", [random_row(self.rng, -i) for i in range(25)])
        other.close()
        self.assertEqual(con.execute("SELECT count(*) FROM ds").fetchone()[0], self.total + 25)
        after = file_mappings(self.files)
        for f in self.files:
            self.assertEqual(len(after[f]), 1, "%s mapped %d times" % (f, len(after[f])))
            if f == self.files[1]:
                self.assertNotEqual(after[f], before[f], "the changed file kept its old mapping")
            else:
                self.assertEqual(after[f], before[f], "%s was re-opened though it did not change" % f)
        # A statement left open holds its snapshot while the table moves on.
        cur = con.execute("SELECT rowid, k FROM ds ORDER BY rowid")
        first = cur.fetchmany(3)
        con2 = self.connect()
        con2.execute("CREATE VIRTUAL TABLE one USING colstore('%s')" % self.files[4])
        con2.execute("INSERT INTO one(k) VALUES (12345)")
        con2.close()
        rest = cur.fetchall()
        self.assertEqual(len(first) + len(rest), self.total + 25)
        self.assertEqual(con.execute("SELECT count(*) FROM ds").fetchone()[0], self.total + 26)
        self.assertEqual(con.execute("SELECT count(*) FROM ds WHERE k = 12345").fetchone()[0],
                         1 + con.execute("SELECT count(*) FROM nat WHERE k = 12345").fetchone()[0])


def file_mappings(paths):
    """{path: sorted list of the address ranges this process maps it at}."""
    maps = {p: [] for p in paths}
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].strip() in maps:
                maps[parts[5].strip()].append(parts[0])
    return {p: sorted(v) for p, v in maps.items()}


if __name__ == "__main__":
    cstest.main()
