#!/usr/bin/python3
"""colstore_export checks every chunk it writes, and fails whole.

colstore_export reads a store's records with pread into one reused buffer
and hashes each chunk there (core/store/cs_record_read.c) before the writer
gets the buffer's bytes, instead of reading them through the mapping,
whose first touch of every page is dear.  What must hold, and what this
test checks (test_export_read.py adds patches, datasets of updated members
and records of growing sizes):

- a changed byte in a column chunk fails the export with the store's
  checksum error (SQLITE_CORRUPT, `colstore: ... record R, column C:
  checksum mismatch ... restore`), for every format and codec (Arrow file
  and stream, uncompressed and compressed; Parquet; CSV), and leaves no
  file: neither the target nor a temporary beside it;
- damaged TEXT offsets fail it the same way, before any writer indexes by
  them (no crash, no read past the chunk);
- a damaged member of a dataset is named;
- a record with deleted rows (compacted, so checked before it is written)
  beside records without gives the rows, and damage after it still fails;
- the export of a store this process has checked already (verify=full)
  and of one it has never seen are the same bytes, and they hold the
  source's rows (read back with colstore_import, compared with the native
  SQLite table they came from);
- the export's check counts as the check: chunks it hashed are not hashed
  again by a later query while the file is open (shown the way
  test_checksums.py shows it: bytes changed in place afterwards are not
  seen).

Damage is one bit flipped at a value that occurs once in a copy of a good
store, as in test_checksums.py.
"""
import os
import shutil
import struct
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402

N = 3 * cstest.RECORD_ROWS + 1000   # four records
DAMAGED_ROW = cstest.RECORD_ROWS + 12345  # in record 1

# target name, options: every writer, compressed and not
TARGETS = [("e.arrow", ()), ("e.arrow", ("compression=zstd",)), ("e.arrows", ()),
           ("e.parquet", ("compression=none",)), ("e.parquet", ()), ("e.csv", ())]


def value_a(i):
    return i * 0.5


def value_s(i):
    return None if i % 7 == 3 else "s%d" % i


class ExportVerify(cstest.StoreTest):
    def setUp(self):
        super().setUp()
        con = self.con = self.connect()
        con.execute("CREATE TABLE n(a REAL, b INTEGER, s TEXT)")
        con.executemany("INSERT INTO n VALUES (?,?,?)", ((value_a(i), i % 1000, value_s(i)) for i in range(N)))
        self.good = self.path("good.cst")
        con.execute("SELECT colstore_create(?, 'SELECT * FROM n')", (self.good,))

    def damaged(self, name, needle, bit=0x10, byte=0):
        return cstest.damage_copy(self, self.good, self.path(name), needle, bit, byte)

    def export(self, source, target, opts=()):
        args = ", ".join(["?"] * (2 + len(opts)))
        return self.con.execute("SELECT colstore_export(%s)" % args, (source, target) + tuple(opts)).fetchone()

    def assertFailsWhole(self, source, contains):
        for k, (name, opts) in enumerate(TARGETS):
            with self.subTest(target=name, opts=opts):
                out = self.path("out%d" % k)
                os.mkdir(out)
                target = os.path.join(out, name)
                msg = self.assertSqlError(self.con, "SELECT colstore_export(%s)" % ", ".join(["?"] * (2 + len(opts))),
                                          (source, target) + tuple(opts), code="SQLITE_CORRUPT", contains=contains)
                self.assertEqual(os.listdir(out), [], msg)

    def test_a_damaged_value_fails_every_format_and_leaves_no_file(self):
        bad = self.damaged("bad.cst", struct.pack("<d", value_a(DAMAGED_ROW)))
        self.assertFailsWhole(bad, ("bad.cst", "record 1", "column a", "checksum mismatch", "restore"))

    def test_a_damaged_text_chunk(self):
        bad = self.damaged("badtext.cst", value_s(DAMAGED_ROW + 1).encode())
        self.assertFailsWhole(bad, ("record 1", "column s", "checksum mismatch"))

    def test_damaged_text_offsets_fail_before_they_are_used(self):
        # the offset of row DAMAGED_ROW + 2 in record 1 (int64, from the
        # record's first row): a high bit flipped puts it far past the data
        first = cstest.RECORD_ROWS
        off = sum(len(value_s(i) or "") for i in range(first, DAMAGED_ROW + 2))
        bad = self.damaged("badoff.cst", struct.pack("<q", off) + struct.pack("<q", off + len(value_s(DAMAGED_ROW + 2))),
                           bit=0x40, byte=3)
        self.assertFailsWhole(bad, ("record 1", "column s", "checksum mismatch"))

    def test_a_dataset_names_its_damaged_member(self):
        d = self.path("ds")
        os.mkdir(d)
        shutil.copy(self.good, os.path.join(d, "a.cst"))
        shutil.copy(self.damaged("bad.cst", struct.pack("<d", value_a(DAMAGED_ROW))), os.path.join(d, "b.cst"))
        self.assertFailsWhole(d, ("b.cst", "record 1", "column a", "checksum mismatch"))

    def test_checked_and_fresh_give_the_same_bytes_and_the_rows(self):
        con = self.con
        checked = self.path("checked.cst")
        shutil.copy(self.good, checked)
        # verify=full checks every chunk; the table keeps the file open, so
        # this process remembers the checks and the export hashes nothing
        con.execute("CREATE VIRTUAL TABLE v USING colstore(%r, verify=full)" % checked)
        for name, opts in TARGETS:
            with self.subTest(target=name, opts=opts):
                fresh = self.path("fresh.cst")
                shutil.copy(self.good, fresh)  # a new file: nothing checked
                d = self.path("x")
                os.mkdir(d)
                a, b = os.path.join(d, "fresh-" + name), os.path.join(d, "checked-" + name)
                self.export(fresh, a, opts)
                self.export(checked, b, opts)
                self.assertEqual(cstest.read_bytes(a), cstest.read_bytes(b))
                back = os.path.join(d, "back.cst")
                con.execute("SELECT colstore_import(?, ?)", (back, a))
                con.execute("CREATE VIRTUAL TABLE back USING colstore(%r)" % back)
                got = con.execute("SELECT count(*), sum(a), sum(b), sum(length(s)), count(s) FROM back").fetchone()
                want = con.execute("SELECT count(*), sum(a), sum(b), sum(length(s)), count(s) FROM n").fetchone()
                self.assertEqual(got, want)
                self.assertEqual(con.execute("SELECT a, b, s FROM back WHERE rowid = ?", (DAMAGED_ROW,)).fetchone(),
                                 (value_a(DAMAGED_ROW), DAMAGED_ROW % 1000, value_s(DAMAGED_ROW)))
                con.execute("DROP TABLE back")
                os.remove(fresh)
                shutil.rmtree(d)

    def test_records_with_deletions_beside_fresh_ones(self):
        # record 0 has deleted rows (compacted, checked before it is
        # written), the others none (checked as they are written); a damaged
        # record after it still fails the export
        con = self.con
        work = self.path("work.cst")
        shutil.copy(self.good, work)
        con.execute("CREATE VIRTUAL TABLE w USING colstore(%r)" % work)
        con.execute("DELETE FROM w WHERE rowid < ? AND b % 100 = 5", (cstest.RECORD_ROWS,))
        con.execute("DELETE FROM n WHERE rowid <= ? AND b % 100 = 5", (cstest.RECORD_ROWS,))
        con.execute("DROP TABLE w")
        want = con.execute("SELECT count(*), sum(a), sum(b), sum(length(s)), count(s) FROM n").fetchone()
        for k, (name, opts) in enumerate(TARGETS):
            with self.subTest(target=name, opts=opts):
                target = self.path("%d-%s" % (k, name))
                self.export(work, target, opts)
                back = self.path("back%d.cst" % k)
                con.execute("SELECT colstore_import(?, ?)", (back, target))
                con.execute("CREATE VIRTUAL TABLE back USING colstore(%r)" % back)
                got = con.execute("SELECT count(*), sum(a), sum(b), sum(length(s)), count(s) FROM back").fetchone()
                con.execute("DROP TABLE back")
                self.assertEqual(got, want)
        data = bytearray(cstest.read_bytes(work))
        at = data.find(struct.pack("<d", value_a(DAMAGED_ROW)))
        self.assertGreater(at, 0)
        data[at] ^= 0x10
        bad = self.path("baddel.cst")
        cstest.write_bytes(bad, bytes(data))
        self.assertFailsWhole(bad, ("record 1", "column a", "checksum mismatch"))

    def test_the_export_check_counts_as_the_check(self):
        con = self.con
        work = self.path("work.cst")
        shutil.copy(self.good, work)
        con.execute("CREATE VIRTUAL TABLE w USING colstore(%r)" % work)  # holds the file open
        self.export(work, self.path("e.arrow"))
        with open(work, "r+b") as f:
            data = f.read()
            at = data.find(struct.pack("<d", value_a(DAMAGED_ROW)))
            f.seek(at)
            f.write(bytes([data[at] ^ 0x10]))
        got = con.execute("SELECT a FROM w WHERE rowid = ?", (DAMAGED_ROW,)).fetchone()[0]
        self.assertNotEqual(got, value_a(DAMAGED_ROW))  # checked by the export: not hashed again
        self.assertSqlError(con, "SELECT colstore_verify('w')", code="SQLITE_CORRUPT", contains=("record 1, column a",))


if __name__ == "__main__":
    cstest.main()
