"""colstore_export to Arrow IPC (.arrow, .feather, .arrows) through SQL,
read back by apache-arrow (npm), the real implementation.

A native table of every colstore type (INT8 ... UINT32, INT64, FLOAT32,
FLOAT64, BOOL, TEXT, BLOB) with NULLs at random, from COLSTORE_SEED, goes
into a store through colstore_create; rows are then deleted through the
colstore table.  Exported from the table name, the store path and a SELECT,
as IPC file and stream, apache-arrow's read must equal the table's rows
value by value, with each column in the Arrow type of the same width and
signedness (SQL-CONTRACT.md, "Import and export").  The zstd and lz4
exports are imported again by colstore and must equal the table (apache-arrow
reads them in test_arrow_codecs.py, whose client has the codecs).  Also: an existing
path is an error unless mode=replace, a compression Arrow does not take is
an error naming the ones it does, and a failed export leaves no file.

Without node, npm or apache-arrow (no network for npm), the test exits 77.
"""
import json
import os
import random
import sqlite3
import struct
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402
from test_arrow import OracleTest, canon  # noqa: E402

SEED = int(os.environ.get("COLSTORE_SEED") or 20261205)
ROWS = cstest.scaled(5000, 1500)

# name, colstore type, the Arrow type apache-arrow names, value drawer
COLUMNS = [
    ("i8", "INT8", "Int8", lambda r: r.randint(-128, 127)),
    ("i16", "INT16", "Int16", lambda r: r.randint(-32768, 32767)),
    ("i32", "INT32", "Int32", lambda r: r.randint(-2**31, 2**31 - 1)),
    ("i64", "INT64", "Int64", lambda r: r.choice([-2**63, 2**63 - 1, 0, r.randint(-2**63, 2**63 - 1)])),
    ("u8", "UINT8", "Uint8", lambda r: r.randint(0, 255)),
    ("u16", "UINT16", "Uint16", lambda r: r.randint(0, 65535)),
    ("u32", "UINT32", "Uint32", lambda r: r.randint(0, 2**32 - 1)),
    ("f32", "FLOAT32", "Float32", lambda r: struct.unpack("<f", struct.pack("<f", r.uniform(-1e6, 1e6)))[0]),
    ("f64", "FLOAT64", "Float64", lambda r: r.choice([0.0, -1.5, 1e300, r.uniform(-1e9, 1e9)])),
    ("flag", "BOOL", "Bool", lambda r: r.randint(0, 1)),
    ("s", "TEXT", "Utf8", lambda r: "".join(r.choice("abz é✓\U0001F600") for _ in range(r.randrange(0, 10)))),
    ("b", "BLOB", "Binary", lambda r: r.randbytes(r.randrange(0, 9))),
]
TYPES = {n: t for n, t, _, _ in COLUMNS}


class ExportArrowTest(OracleTest):
    def setUp(self):
        super().setUp()
        rng = random.Random(SEED)
        self.con = self.connect()
        self.con.execute("CREATE TABLE n(%s)" % ", ".join("%s %s" % (n, t) for n, t, _, _ in COLUMNS))
        density = [0, 5, 50, 100]
        rows = []
        for i in range(ROWS):
            pct = density[(i // 700) % len(density)]  # runs of all-present, some, half and all-NULL
            rows.append(tuple(None if rng.randrange(100) < pct else g(rng) for _, _, _, g in COLUMNS))
        self.con.executemany("INSERT INTO n VALUES (%s)" % ", ".join("?" * len(COLUMNS)), rows)
        self.store = self.path("src.cst")
        self.con.execute("SELECT colstore_create(?, 'SELECT * FROM n')", (self.store,))
        self.con.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % self.store)
        self.con.execute("DELETE FROM t WHERE rowid %% 7 = 3 OR rowid BETWEEN %d AND %d" % (ROWS // 3, ROWS // 3 + 99))

    def table_rows(self, sql="SELECT * FROM t ORDER BY rowid"):
        cur = self.con.execute(sql)
        names = [d[0] for d in cur.description]
        return [tuple(canon(TYPES[n], v) for n, v in zip(names, r)) for r in cur]

    def export(self, source, path, *options):
        args = "".join(", '%s'" % o for o in options + ("progress=off",))
        return json.loads(self.con.execute("SELECT colstore_export(?, ?%s)" % args, (source, path)).fetchone()[0])

    def arrow_rows(self, path, arrow_types=None):
        """apache-arrow's read of path, each column checked to be of its
        Arrow type (arrow_types: name -> type, else COLUMNS')."""
        answer = self.arrow.ask({"read": path})
        cols = answer["columns"]
        for c in cols:
            want = (arrow_types or {n: a for n, _, a, _ in COLUMNS})[c["name"]]
            self.assertTrue(c["type"].startswith(want), "%s: column %s is Arrow %s, want %s" %
                            (path, c["name"], c["type"], want))
        values = [[canon(TYPES[c["name"]], v) for v in c["values"]] for c in cols]
        return [tuple(r) for r in zip(*values)]

    def assertSameRows(self, want, got, what):
        self.assertEqual(len(got), len(want), "%s: %d rows, want %d (COLSTORE_SEED=%d)" %
                         (what, len(got), len(want), SEED))
        for i, (a, b) in enumerate(zip(want, got)):
            self.assertEqual(a, b, "%s: row %d differs (COLSTORE_SEED=%d)" % (what, i, SEED))

    def test_table_store_and_select_read_by_apache_arrow(self):
        want = self.table_rows()
        for source in ("t", self.store):
            for ext in (".arrow", ".feather", ".arrows"):
                path = self.path("out" + ext)
                res = self.export(source, path, "mode=replace")
                self.assertEqual(res["rows"], len(want))
                self.assertEqual(res["bytes"], os.path.getsize(path))
                self.assertSameRows(want, self.arrow_rows(path), "%s to %s" % (source, ext))
        # A SELECT's columns are typed as colstore_create types them: by
        # their declared affinity, so integers are INT64 and floats FLOAT64.
        # (An OR may run as two scans: the result's order is its ORDER BY's.)
        sql = "SELECT i8, u32, f32, s, b FROM t WHERE i16 > 0 OR s IS NULL ORDER BY rowid"
        path = self.path("select.arrow")
        res = self.export(sql, path)
        want = self.table_rows(sql)
        self.assertEqual(res["rows"], len(want))
        types = dict(i8="Int64", u32="Int64", f32="Float64", s="Utf8", b="Binary")
        self.assertSameRows(want, self.arrow_rows(path, types), "a SELECT to .arrow")

    def test_compressed_bodies_import_back(self):
        want = self.table_rows()
        for codec in ("zstd", "lz4"):
            for ext in (".arrow", ".arrows"):
                path = self.path("c_%s%s" % (codec, ext))
                self.export("t", path, "compression=" + codec)
                back = self.path("back_%s_%s.cst" % (codec, ext[1:]))
                self.con.execute("SELECT colstore_import(?, ?, 'progress=off')", (back, path))
                self.con.execute("CREATE VIRTUAL TABLE temp.back USING colstore('%s')" % back)
                info = json.loads(self.con.execute("SELECT colstore_info('back')").fetchone()[0])
                self.assertEqual([(c["name"], c["type"]) for c in info["columns"]], [(n, t) for n, t, _, _ in COLUMNS])
                self.assertSameRows(want, self.table_rows("SELECT * FROM temp.back ORDER BY rowid"),
                                    "%s %s imported back" % (codec, ext))
                self.con.execute("DROP TABLE temp.back")

    def test_errors_leave_no_file(self):
        path = self.path("e.arrow")
        self.export("t", path)
        size = os.path.getsize(path)
        with self.assertRaises(sqlite3.Error) as cm:
            self.export("t", path)
        self.assertTrue(str(cm.exception).startswith("colstore:"), str(cm.exception))
        self.assertIn("mode=replace", str(cm.exception))
        self.assertEqual(os.path.getsize(path), size)
        bad = self.path("bad.arrow")
        with self.assertRaises(sqlite3.Error) as cm:
            self.export("t", bad, "compression=snappy")
        self.assertTrue(str(cm.exception).startswith("colstore:"), str(cm.exception))
        self.assertIn("zstd", str(cm.exception))
        self.assertFalse(os.path.exists(bad))
        self.assertEqual([f for f in os.listdir(os.path.dirname(bad)) if ".tmp" in f], [])


if __name__ == "__main__":
    unittest.main()
