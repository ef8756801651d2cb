#!/usr/bin/python3
"""colstore_export reads a store record by record with pread into one
reused buffer (core/store/cs_record_read.c), checks each chunk there and
hands the writer the buffer's bytes.  This test covers what that read path
meets in a store beyond test_export_verify.py's one clean file:

- records of very different sizes in one file, the later ones larger than
  the first (the buffer grows and is reused: a stale byte of an earlier,
  smaller record must not leak into a later one, nor a larger one's into a
  smaller one after it);
- UPDATEd chunks, which live in patch blocks outside their record, beside
  deleted rows, TEXT and BLOB with NULLs, and a REAL column with NULLs;
- a dataset (a directory of stores) whose members have their own
  deletions and updates;
- damage inside an UPDATE's patch block, and inside a record with deleted
  rows, fails the export with the read's checksum error and leaves no file.

The oracle is a native SQLite table given the same rows, updates and
deletes (by a key column, not by rowid): the CSV export is read with
Python's csv module and compared value by value (floats as Python reads
the text, BLOBs as SQLite's hex()), and every Arrow and Parquet export is
read back with colstore_import and compared with the native table in SQL.
Values are drawn from COLSTORE_SEED (printed on failure).
"""
import csv
import os
import random
import shutil
import struct
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402

SEED = int(os.environ.get("COLSTORE_SEED") or 20261206)
TARGETS = [("e.arrow", ()), ("e.arrow", ("compression=lz4",)), ("e.arrows", ()), ("e.parquet", ()), ("e.csv", ())]
# the commits of one store: (first key, rows, longest TEXT): a small record,
# then records several times its size, then a small one again
COMMITS = [(0, 10, 5), (10, 3000, 400), (3010, 7, 3), (3017, 2000, 900)]
PATCHED = "patched-value-%d"


def draw_rows(rng, first, n, longest):
    rows = []
    for k in range(first, first + n):
        a = None if rng.random() < 0.1 else rng.uniform(-1e6, 1e6)
        s = None if rng.random() < 0.15 else "t%d-" % k + "".join(
            rng.choice("abcxyz,\"\n") for _ in range(rng.randint(0, longest)))
        b = None if rng.random() < 0.2 else rng.randbytes(rng.randint(1, longest))
        rows.append((k, a, s, b))
    return rows


class ExportRead(cstest.StoreTest):
    def setUp(self):
        super().setUp()
        self.rng = random.Random(SEED)
        self.con = self.connect()
        self.con.execute("CREATE TABLE n(k INTEGER, a REAL, s TEXT, b BLOB)")

    def run(self, result=None):
        before = len(result.failures) + len(result.errors) if result else 0
        super().run(result)
        if result and len(result.failures) + len(result.errors) > before:
            print("COLSTORE_SEED=%d" % SEED, file=sys.stderr)

    def make_store(self, name, commits, key_base=0, updates=True):
        """A store made by several commits, updated (unless not updates)
        and deleted in by key, the native table n given the same; returns
        its path."""
        con, path = self.con, self.path(name)
        table = name.replace(".", "_").replace("/", "_")
        for i, (first, n, longest) in enumerate(commits):
            rows = draw_rows(self.rng, key_base + first, n, longest)
            con.executemany("INSERT INTO n VALUES (?,?,?,?)", rows)
            if i == 0:
                con.execute("CREATE TEMP TABLE first_rows(k INTEGER, a REAL, s TEXT, b BLOB)")
                con.executemany("INSERT INTO first_rows VALUES (?,?,?,?)", rows)
                con.execute("SELECT colstore_create(?, 'SELECT * FROM first_rows')", (path,))
                con.execute("DROP TABLE first_rows")
                con.execute("CREATE VIRTUAL TABLE %s USING colstore(%r)" % (table, path))
            else:  # one transaction, one record
                con.execute("BEGIN")
                con.executemany("INSERT INTO %s VALUES (?,?,?,?)" % table, rows)
                con.execute("COMMIT")
        lo, hi = key_base, key_base + commits[-1][0] + commits[-1][1]
        changes = ["DELETE FROM {} WHERE k % 13 = 0 AND k BETWEEN ? AND ?"]
        if updates:
            changes += ["UPDATE {} SET s = printf('%s', k) WHERE k %% 97 = 5 AND k BETWEEN ? AND ?" % PATCHED,
                        "UPDATE {} SET a = k * 0.25, b = NULL WHERE k % 89 = 1 AND k BETWEEN ? AND ?"]
        for sql in changes:
            for t in (table, "n"):
                con.execute(sql.format(t), (lo, hi))
        con.execute("DROP TABLE %s" % table)
        return path

    def export(self, source, target, opts):
        args = ", ".join(["?"] * (2 + len(opts)))
        self.con.execute("SELECT colstore_export(%s)" % args, (source, target) + tuple(opts)).fetchone()

    def assertCsvHolds(self, path):
        with open(path, newline="") as f:
            got = list(csv.reader(f))
        self.assertEqual(got[0], ["k", "a", "s", "b"])
        want = self.con.execute("SELECT k, a, s, hex(b) FROM n ORDER BY k").fetchall()
        got = sorted(got[1:], key=lambda r: int(r[0]))
        self.assertEqual(len(got), len(want))
        for g, (k, a, s, b) in zip(got, want):
            self.assertEqual(int(g[0]), k)
            self.assertEqual(float(g[1]) if g[1] else None, a, "row k=%d" % k)
            self.assertEqual(g[2] if g[2] else None, s, "row k=%d" % k)
            self.assertEqual(g[3], b or "", "row k=%d" % k)

    def assertImportHolds(self, path, k):
        con = self.con
        back = self.path("back%d.cst" % k)
        con.execute("SELECT colstore_import(?, ?)", (back, path))
        con.execute("CREATE VIRTUAL TABLE back USING colstore(%r)" % back)
        try:
            q = "SELECT count(*) FROM (SELECT k, a, s, b FROM %s EXCEPT SELECT k, a, s, b FROM %s)"
            self.assertEqual(con.execute("SELECT count(*) FROM back").fetchone(),
                             con.execute("SELECT count(*) FROM n").fetchone())
            self.assertEqual(con.execute(q % ("back", "n")).fetchone()[0], 0)
            self.assertEqual(con.execute(q % ("n", "back")).fetchone()[0], 0)
        finally:
            con.execute("DROP TABLE back")

    def assertExportsHold(self, source):
        for k, (name, opts) in enumerate(TARGETS):
            with self.subTest(target=name, opts=opts):
                target = self.path("%d-%s" % (k, name))
                self.export(source, target, opts)
                if name.endswith(".csv"):
                    self.assertCsvHolds(target)
                else:
                    self.assertImportHolds(target, k)

    def assertFailsWhole(self, source, contains):
        for k, (name, opts) in enumerate(TARGETS):
            with self.subTest(target=name, opts=opts):
                out = self.path("out%d" % k)
                os.mkdir(out)
                msg = self.assertSqlError(self.con, "SELECT colstore_export(%s)" % ", ".join(["?"] * (2 + len(opts))),
                                          (source, os.path.join(out, name)) + tuple(opts), code="SQLITE_CORRUPT",
                                          contains=contains)
                self.assertEqual(os.listdir(out), [], msg)

    def test_records_growing_and_shrinking_with_patches_and_deletions(self):
        path = self.make_store("grow.cst", COMMITS)
        self.assertEqual(self.con.execute("SELECT colstore_info(?) ->> '$.records'", (path,)).fetchone()[0],
                         len(COMMITS))
        self.assertExportsHold(path)

    def test_a_dataset_of_updated_members(self):
        d = self.path("ds")
        os.mkdir(d)
        self.make_store("ds/m1.cst", COMMITS[:2], key_base=0)
        self.make_store("ds/m2.cst", COMMITS[2:], key_base=100000)
        self.make_store("ds/m3.cst", COMMITS, key_base=200000)
        self.assertExportsHold(d)

    def damaged(self, good, name, needle):
        return cstest.damage_copy(self, good, self.path(name), needle)

    def test_damage_in_a_patch_block_fails_whole(self):
        good = self.make_store("good.cst", COMMITS)
        k = next(k for k in range(3100, 5000) if k % 97 == 5 and k % 13)
        bad = self.damaged(good, "bad.cst", (PATCHED % k).encode())
        self.assertFailsWhole(bad, ("bad.cst", "record 3", "column s", "checksum mismatch", "restore"))

    def test_damage_in_a_record_with_deletions_fails_whole(self):
        # no UPDATE: a patched chunk would hold the value a second time
        good = self.make_store("good.cst", COMMITS, updates=False)
        a = self.con.execute("SELECT a FROM n WHERE k > 3100 AND a IS NOT NULL ORDER BY k").fetchone()[0]
        bad = self.damaged(good, "bad.cst", struct.pack("<d", a))
        self.assertFailsWhole(bad, ("bad.cst", "record 3", "column a", "checksum mismatch"))

    def test_a_damaged_member_behind_good_ones(self):
        d = self.path("dsbad")
        os.mkdir(d)
        self.make_store("dsbad/a.cst", COMMITS[:2], key_base=0)
        good = self.make_store("g.cst", COMMITS, key_base=100000)
        k = next(k for k in range(103100, 105000) if k % 97 == 5 and k % 13)
        bad = self.damaged(good, "b.cst", (PATCHED % k).encode())
        shutil.move(bad, os.path.join(d, "b.cst"))
        self.assertFailsWhole(d, ("b.cst", "record 3", "column s", "checksum mismatch"))


if __name__ == "__main__":
    cstest.main()
