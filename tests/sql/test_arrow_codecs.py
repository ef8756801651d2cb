"""Arrow IPC with compressed bodies (ZSTD, LZ4_FRAME), both ways, against
apache-arrow (npm) with codecs from npm: the oracle for the compression
framing that test_arrow.py can only check with colstore's own reader.

apache-arrow for JavaScript reads and writes compressed bodies only through
codecs the application registers, and node 20 has neither codec built in.
This test's client directory ($BUILD/arrow_codec_client, installed by
cstest.NodeChild) holds apache-arrow with lz4js (LZ4 frames, both ways),
fzstd (a zstd decoder written in JavaScript) and @oneidentity/zstd-js (the
reference zstd compiled to WebAssembly, which encodes); arrow_oracle.mjs
registers them.  None of them shares code with liblz4 or libzstd, which
colstore uses, and apache-arrow's own framing (the 8-byte uncompressed
length before each buffer, -1 for a buffer left uncompressed because
compressing did not pay) is the one colstore must read and write.

- In: apache-arrow writes every type test_arrow.py draws (dictionaries with
  deltas included), in several record batches (one of a single row, whose
  buffers it leaves uncompressed, and an empty one), with NULLs at several
  densities, as file and stream, with each codec; the file must be smaller
  than the same batches uncompressed, and colstore's import must equal
  apache-arrow's read value by value.
- Out: colstore's writer (check_arrow --convert, the ops colstore_export
  uses) compresses each of those files with each codec, and through SQL
  colstore_export of a table with deleted rows; apache-arrow's read must
  equal the source.
- apache-arrow up to 21.2 writes the compressed length where the format puts
  the uncompressed one (apache/arrow-js#470, fixed but not released); the
  oracle corrects its files after writing (arrow_oracle.mjs, fixPrefixes),
  and its files as written must give a `colstore:` error that says so.

Values come from COLSTORE_SEED (printed on a failure).  Without node, npm or
the packages (no network for npm), the test exits 77.
"""
import os
import random
import sqlite3
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402
from test_arrow import COLUMNS, SEED, ArrowCase, canon, draw, schema  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROWS = cstest.scaled(4000, 1500)
CODECS = ("lz4", "zstd")


class CodecOracle(cstest.NodeChild):
    def __init__(self):
        super().__init__("arrow_codec_client", ["apache-arrow", "lz4js", "fzstd", "@oneidentity/zstd-js"],
                         os.path.join(HERE, "arrow_oracle.mjs"))


class ArrowCodecTest(ArrowCase):
    ORACLE = CodecOracle

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        # Installed but not loaded would make every test below pass vacuously
        # through apache-arrow's errors; it is a failure, not a skip.
        assert sorted(cls.arrow.ready.get("codecs", [])) == sorted(CODECS), cls.arrow.ready

    def test_compressed_by_apache_arrow_imports(self):
        rng = random.Random(SEED + 10)
        n = 0
        for nulls in (0, 30):
            batches = draw(rng, COLUMNS, [ROWS // 2, 1, 0, ROWS // 3], nulls)
            for stream in (False, True):
                ext = "arrows" if stream else "arrow"
                plain = self.write("p%d.%s" % (n, ext), batches, stream)
                for codec in CODECS:
                    n += 1
                    what = "apache-arrow %s %s, nulls=%d%% (COLSTORE_SEED=%d)" % (codec, ext, nulls, SEED)
                    src = self.write("z%d.%s" % (n, ext), batches, stream, compression=codec)
                    self.assertLess(os.path.getsize(src), os.path.getsize(plain), what + ": not compressed")
                    want, answer = self.read(src)
                    self.assertEqual(want, self.read(plain)[0], what + ": apache-arrow's two reads differ")
                    res, got = self.imported(self.path("z%d.cst" % n), src)
                    self.assertEqual([(c["name"], c["type"]) for c in res["columns"]],
                                     [(c[0], c[3]) for c in COLUMNS], what)
                    self.assertSameRows(want, got, what)

    def test_compressed_by_colstore_read_by_apache_arrow(self):
        rng = random.Random(SEED + 11)
        n = 0
        for nulls in (0, 30, 100):
            src = self.write("s%d.arrow" % nulls, draw(rng, COLUMNS, [ROWS // 2, 1, ROWS // 4], nulls))
            want, _ = self.read(src)
            for codec in CODECS:
                for stream in (False, True):
                    n += 1
                    what = "colstore %s %s, nulls=%d%% (COLSTORE_SEED=%d)" % (
                        codec, "stream" if stream else "file", nulls, SEED)
                    out = self.convert(src, self.path("c%d.%s" % (n, "arrows" if stream else "arrow")), codec, stream)
                    self.assertLess(os.path.getsize(out), os.path.getsize(src), what + ": not compressed")
                    back, _ = self.read(out)
                    self.assertSameRows(want, back, what)

    def test_colstore_export_compressed_through_sql(self):
        rng = random.Random(SEED + 12)
        src = self.write("e.arrow", draw(rng, COLUMNS, [ROWS, ROWS // 3], 20))
        store = self.path("e.cst")
        self.imported(store, src)
        con = self.connect()
        con.execute("CREATE VIRTUAL TABLE temp.t USING colstore('%s')" % store)
        con.execute("DELETE FROM temp.t WHERE rowid % 7 = 3")
        names = [c[0] for c in COLUMNS]
        types = {c[0]: c[3] for c in COLUMNS}
        want = [tuple(canon(types[k], v) for k, v in zip(names, r))
                for r in con.execute("SELECT * FROM temp.t ORDER BY rowid")]
        for codec in CODECS:
            for ext in ("arrow", "arrows"):
                what = "colstore_export %s .%s (COLSTORE_SEED=%d)" % (codec, ext, SEED)
                out = self.path("x_%s.%s" % (codec, ext))
                con.execute("SELECT colstore_export('t', ?, 'compression=%s')" % codec, (out,)).fetchone()
                back, _ = self.read(out)
                self.assertSameRows(want, back, what)

    def test_wrong_length_prefix_is_a_clear_error(self):
        # apache-arrow's compressed files as it writes them today, with the
        # compressed length in each prefix: an error that says so, no store.
        cols = [c for c in COLUMNS if c[0] in ("s", "dict_s", "f64")]
        batches = draw(random.Random(SEED + 13), cols, [ROWS // 4, ROWS // 4], 10)
        for codec in CODECS:
            src = self.path("bad_%s.arrow" % codec)
            self.arrow.ask({"write": src, "stream": False, "schema": schema(cols), "batches": batches,
                            "compression": codec, "as_written": True})
            store = self.path("bad_%s.cst" % codec)
            with self.assertRaises(sqlite3.Error) as cm:
                self.imported(store, src, cols=cols)
            msg = str(cm.exception)
            self.assertTrue(msg.startswith("colstore:") and "length prefix" in msg, msg)
            self.assertFalse(os.path.exists(store))


if __name__ == "__main__":
    unittest.main(verbosity=2)
