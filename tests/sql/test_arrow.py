"""colstore_import of Arrow IPC files and streams, and colstore's Arrow
writer, checked against apache-arrow (npm), the real implementation, as
SQL-CONTRACT.md ("Import and export") and docs/sql.md ("Arrow") give it.

apache-arrow (installed into $BUILD/arrow_client by cstest.NodeChild, as
test_parquet.py installs DuckDB) writes the files (tests/sql/arrow_oracle.mjs):
a table of every type colstore maps (Int 8..64 signed and unsigned,
Float32/64, Bool, Utf8, LargeUtf8, Binary, LargeBinary, Date32/64,
Time32/64 in each unit, Timestamp in each unit, and dictionary-encoded
Utf8 and Int32 columns whose dictionaries grow batch by batch, so the
stream carries delta dictionaries), values drawn from COLSTORE_SEED, with
NULLs at several densities, in several record batches, as IPC file and
stream.  colstore imports each, and the store must equal apache-arrow's own
read of the same file value by value (temporal types as their stored
integers).

The writer goes the other way: tests/unit/check_arrow --convert reads each
file with colstore's reader and writes it with its writer
(cs_arrow_write.c, the ops colstore_export uses), and apache-arrow's read
of that must equal its read of the original.  Compressed files (zstd, lz4)
written by colstore's writer must import to the same store as the
uncompressed file here; apache-arrow reads and writes compressed bodies
only through codecs the application registers, so test_arrow_codecs.py
checks them against apache-arrow with codecs from npm.

Without node, npm or apache-arrow (no network for npm), the test exits 77.
"""
import json
import os
import random
import sqlite3
import struct
import subprocess
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.dirname(os.path.abspath(cstest.MODULE))
CONVERT = os.path.join(BUILD, "check_arrow")
SEED = int(os.environ.get("COLSTORE_SEED") or 20261205)
ROWS = cstest.scaled(6000, 2000)


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def text(rng):
    return "".join(rng.choice("abcxyz é✓\U0001F600") for _ in range(rng.randrange(0, 12)))


def i64(rng, lo=-2**63, hi=2**63 - 1):
    return str(rng.choice([lo, hi, 0, rng.randint(lo, hi)]))


# name, apache-arrow type, dictionary index type or None, colstore type, value drawer
COLUMNS = [
    ("i8", "int8", None, "INT8", lambda r: r.randint(-128, 127)),
    ("i16", "int16", None, "INT16", lambda r: r.randint(-32768, 32767)),
    ("i32", "int32", None, "INT32", lambda r: r.randint(-2**31, 2**31 - 1)),
    ("i64", "int64", None, "INT64", i64),
    ("u8", "uint8", None, "UINT8", lambda r: r.randint(0, 255)),
    ("u16", "uint16", None, "UINT16", lambda r: r.randint(0, 65535)),
    ("u32", "uint32", None, "UINT32", lambda r: r.randint(0, 2**32 - 1)),
    ("u64", "uint64", None, "INT64", lambda r: i64(r, 0)),
    ("f32", "float32", None, "FLOAT32", lambda r: f32(r.uniform(-1e6, 1e6))),
    ("f64", "float64", None, "FLOAT64", lambda r: r.choice([0.0, -1.5, 1e300, r.uniform(-1e9, 1e9)])),
    ("flag", "bool", None, "BOOL", lambda r: r.randint(0, 1)),
    ("s", "utf8", None, "TEXT", text),
    ("ls", "large_utf8", None, "TEXT", text),
    ("bin", "binary", None, "BLOB", lambda r: r.randbytes(r.randrange(0, 9)).hex()),
    ("lbin", "large_binary", None, "BLOB", lambda r: r.randbytes(r.randrange(0, 9)).hex()),
    ("d32", "date32", None, "INT32", lambda r: r.randint(-40000, 40000)),
    ("d64", "date64", None, "INT64", lambda r: str(r.randint(-40000, 40000) * 86400000)),
    ("t32s", "time32s", None, "INT64", lambda r: r.randint(0, 86399)),
    ("t32ms", "time32ms", None, "INT64", lambda r: r.randint(0, 86399999)),
    ("t64us", "time64us", None, "INT64", lambda r: str(r.randint(0, 86399999999))),
    ("t64ns", "time64ns", None, "INT64", lambda r: str(r.randint(0, 86399999999999))),
    ("ts_s", "ts_s", None, "INT64", lambda r: str(r.randint(-2**40, 2**40))),
    ("ts_ms", "ts_ms", None, "INT64", lambda r: str(r.randint(-2**50, 2**50))),
    ("ts_us", "ts_us", None, "INT64", i64),
    ("ts_ns", "ts_ns", None, "INT64", i64),
    ("dict_s", "utf8", "int8", "TEXT", lambda r: "k%d✓" % r.randrange(40)),
    ("dict_i", "int32", "int16", "INT32", lambda r: r.randrange(-500, 500)),
    ("dict_u8", "utf8", "uint8", "TEXT", lambda r: r.choice(["", "a", "bb", "ccc"])),
]


def schema(cols=COLUMNS, nullable=True):
    return [{"name": n, "type": t, "nullable": nullable, "dict": d} for n, t, d, _, _ in cols]


def draw(rng, cols, batch_rows, nulls_pct):
    return [[[None if rng.randrange(100) < nulls_pct else g(rng) for _ in range(n)] for _, _, _, _, g in cols]
            for n in batch_rows]


def canon(col_type, v):
    """A value of apache-arrow's read or colstore's as one comparable thing."""
    if v is None:
        return None
    if col_type == "BLOB":
        return v.hex() if isinstance(v, bytes) else v
    if col_type in ("FLOAT32", "FLOAT64"):
        return float(v)
    if col_type == "TEXT":
        return v
    return int(v)


class Oracle(cstest.NodeChild):
    def __init__(self):
        super().__init__("arrow_client", "apache-arrow", os.path.join(HERE, "arrow_oracle.mjs"))


class OracleTest(cstest.StoreTest):
    """A StoreTest with one apache-arrow child for the class: self.arrow
    (test_export_arrow.py uses it too; test_arrow_codecs.py sets ORACLE to
    a child that has the compression codecs)."""
    ORACLE = Oracle

    @classmethod
    def setUpClass(cls):
        cls.arrow = cls.ORACLE()

    @classmethod
    def tearDownClass(cls):
        cls.arrow.close()


class ArrowCase(OracleTest):
    """What the Arrow tests share: apache-arrow writes and reads, colstore
    imports and converts (test_arrow_codecs.py's tests use it too)."""

    def write(self, name, batches, stream=False, cols=COLUMNS, nullable=True, compression=None):
        path = self.path(name)
        request = {"write": path, "stream": stream, "schema": schema(cols, nullable), "batches": batches}
        if compression:
            request["compression"] = compression
        self.arrow.ask(request)
        return path

    def read(self, path, cols=COLUMNS):
        """apache-arrow's read: rows of canonical values."""
        answer = self.arrow.ask({"read": path})
        types = {n: c for n, _, _, c, _ in cols}
        columns = [[canon(types[c["name"]], v) for v in c["values"]] for c in answer["columns"]]
        return [tuple(r) for r in zip(*columns)], answer

    def imported(self, store, source, *options, cols=COLUMNS):
        con = self.connect()
        args = "".join(", '%s'" % o for o in options + ("progress=off",))
        res = json.loads(con.execute("SELECT colstore_import('%s', '%s'%s)" % (store, source, args)).fetchone()[0])
        con.execute("CREATE VIRTUAL TABLE temp.t USING colstore('%s')" % store)
        types = {n: c for n, _, _, c, _ in cols}
        names = [c["name"] for c in res["columns"]]
        rows = [tuple(canon(types[n], v) for n, v in zip(names, r))
                for r in con.execute("SELECT * FROM temp.t ORDER BY rowid")]
        con.execute("DROP TABLE temp.t")
        return res, rows

    def assertSameRows(self, want, got, what):
        self.assertEqual(len(got), len(want), "%s: %d rows, apache-arrow read %d (COLSTORE_SEED=%d)" %
                         (what, len(got), len(want), SEED))
        for i, (a, b) in enumerate(zip(want, got)):
            for j, (x, y) in enumerate(zip(a, b)):
                if x != y:
                    self.fail("%s: row %d column %d: colstore %r, apache-arrow %r (COLSTORE_SEED=%d)" %
                              (what, i, j, y, x, SEED))

    def convert(self, src, dst, codec="none", stream=False):
        r = subprocess.run([CONVERT, "--convert", src, dst, codec] + (["stream"] if stream else []),
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return dst


class ArrowTest(ArrowCase):

    def test_every_type_density_and_format_both_ways(self):
        rng = random.Random(SEED)
        n = 0
        for nulls in (0, 10, 60, 100):
            for stream in (False, True):
                n += 1
                sizes = [ROWS // 3, 1, ROWS // 2, 0, ROWS // 5]
                what = "%s nulls=%d%%" % ("stream" if stream else "file", nulls)
                src = self.write("t%d.%s" % (n, "arrows" if stream else "arrow"), draw(rng, COLUMNS, sizes, nulls),
                                 stream)
                want, answer = self.read(src)
                self.assertEqual(answer["batches"], len(sizes), what)
                res, got = self.imported(self.path("t%d.cst" % n), src)
                self.assertEqual([(c["name"], c["type"]) for c in res["columns"]],
                                 [(c[0], c[3]) for c in COLUMNS], what)
                self.assertNotIn("delim", res)
                self.assertSameRows(want, got, what)
                # colstore's writer, read by apache-arrow: the same values.
                for out_stream in (False, True):
                    out = self.convert(src, self.path("w%d.%s" % (n, "arrows" if out_stream else "arrow")),
                                       "none", out_stream)
                    back, answer = self.read(out)
                    self.assertSameRows(want, back, what + ", written by colstore")
                    types = [c["type"] for c in answer["columns"]]
                    self.assertEqual(types[:11], ["Int8", "Int16", "Int32", "Int64", "Uint8", "Uint16", "Uint32",
                                                  "Int64", "Float32", "Float64", "Bool"], what)
                # Compressed by colstore's writer: the same store.
                for codec in ("zstd", "lz4"):
                    out = self.convert(src, self.path("c%d_%s.arrow" % (n, codec)), codec, stream)
                    _, again = self.imported(self.path("c%d_%s.cst" % (n, codec)), out, "format=arrow")
                    self.assertSameRows(want, again, "%s, %s by colstore" % (what, codec))

    def test_threads_projection_and_glob(self):
        rng = random.Random(SEED + 1)
        os.makedirs(self.path("dir"))
        paths = [self.write("dir/p%d.arrow" % i, draw(rng, COLUMNS, [ROWS // 4, ROWS // 4], 20)) for i in range(2)]
        want = []
        for p in paths:
            want += self.read(p)[0]
        res, got = self.imported(self.path("g.cst"), self.path("dir"), "threads=4")
        self.assertEqual(res["files"], paths)
        self.assertSameRows(want, got, "a directory, threads=4")
        names = [c[0] for c in COLUMNS]
        pick = ["dict_s", "i8", "ts_ns"]
        res, got = self.imported(self.path("p.cst"), self.path("dir/*.arrow"), "columns=%s" % ",".join(pick))
        self.assertEqual([c["name"] for c in res["columns"]], pick)
        self.assertSameRows([tuple(r[names.index(c)] for c in pick) for r in want], got, "columns=")
        # append of the same files doubles the rows
        res, got = self.imported(self.path("g.cst"), self.path("dir"), "mode=append")
        self.assertSameRows(want + want, got, "mode=append")

    def test_unsupported_types_and_values(self):
        cols = [("a", "int32", None, "INT32", lambda r: 1), ("lst", "list_int32", None, None, lambda r: [1, 2]),
                ("h", "float16", None, None, lambda r: 15360), ("b", "utf8", None, "TEXT", lambda r: "x")]
        src = self.write("u.arrow", draw(random.Random(SEED), cols, [10], 0), cols=cols)
        for name, kind in (("lst", "List"), ("h", "FloatingPoint(HALF)")):
            with self.assertRaises(sqlite3.Error) as cm:
                self.imported(self.path("u.cst"), src, "columns=a,%s" % name, cols=cols)
            msg = str(cm.exception)
            self.assertTrue(msg.startswith("colstore:") and name in msg and kind in msg, msg)
            self.assertFalse(os.path.exists(self.path("u.cst")))
        res, got = self.imported(self.path("u.cst"), src, "columns=b,a", cols=cols)
        self.assertEqual(got, [("x", 1)] * 10)
        big = [("u", "uint64", None, "INT64", lambda r: str(2**64 - 1))]
        src = self.write("big.arrows", [[[str(5), str(2**64 - 1)]]], True, cols=big)
        with self.assertRaises(sqlite3.Error) as cm:
            self.imported(self.path("big.cst"), src, cols=big)
        msg = str(cm.exception)
        self.assertTrue(str(2**64 - 1) in msg and "column u" in msg, msg)
        self.assertFalse(os.path.exists(self.path("big.cst")))

    def test_damaged_files_give_errors(self):
        rng = random.Random(SEED + 2)
        src = self.write("d.arrow", draw(rng, COLUMNS[:12], [200, 200], 10), cols=COLUMNS[:12])
        data = cstest.read_bytes(src)
        for k, cut in enumerate([len(data) - 1, len(data) // 2, 9, 3]):
            bad = self.path("cut%d.arrow" % k)
            cstest.write_bytes(bad, data[:cut])
            with self.assertRaises(sqlite3.Error) as cm:
                self.imported(self.path("cut%d.cst" % k), bad, cols=COLUMNS[:12])
            self.assertTrue(str(cm.exception).startswith("colstore:"), str(cm.exception))
            self.assertFalse(os.path.exists(self.path("cut%d.cst" % k)))

    def test_format_option(self):
        cols = [("n", "int32", None, "INT32", None)]
        src = self.write("data.bin", [[list(range(5000))]], cols=cols, nullable=False)
        res, got = self.imported(self.path("f.cst"), src, "format=arrow", cols=cols)
        self.assertEqual(got, [(i,) for i in range(5000)])
        self.assertEqual(res["columns"], [{"name": "n", "type": "INT32", "nullable": False}])


if __name__ == "__main__":
    unittest.main(verbosity=2)
