"""colstore.arrays.append (the Python package) in pieces: every row or none.

The package sends a long append as several colstore_append calls of about
CHUNK_BYTES each inside one SAVEPOINT (python/colstore/arrays.py says why).
Here CHUNK_BYTES is set small so that a few thousand rows make many pieces,
and the oracle is a native SQLite table given the same rows through
executemany: every type, NULLs, TEXT and BLOB offsets rebased per piece.
Then the all-or-nothing rules: a piece that colstore rejects (a NULL in a
NOT NULL column, in the last piece) leaves the table as it was, in
autocommit and inside the caller's own transaction, which stays open and
usable; a caller's ROLLBACK undoes a whole chunked append.  Random data
from COLSTORE_SEED (printed with every failure).
"""
import os
import sqlite3
import sys
import unittest

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "python"))
import cstest  # noqa: E402

try:
    import numpy as np
    from colstore import arrays
except ImportError:  # pragma: no cover - python3-numpy is a build dependency
    print("SKIP: numpy is not installed")
    sys.exit(77)

SEED = int(os.environ.get("COLSTORE_SEED", "2326"))
ROWS = cstest.scaled(300_000, 140_000)

COLUMNS = [("i8", "INT8", "<i1"), ("u16", "UINT16", "<u2"), ("i32", "INT32", "<i4"), ("i64", "INT64", "<i8"),
           ("f32", "FLOAT32", "<f4"), ("f64", "FLOAT64", "<f8"), ("flag", "BOOL", "?"),
           ("s", "TEXT", None), ("b", "BLOB", None)]


def draw(rng, n):
    out = {}
    for name, kind, dt in COLUMNS:
        nulls = rng.random(n) < 0.1
        if kind == "TEXT":
            vals = np.array([None if z else "t%d✓" % rng.integers(0, 10 ** rng.integers(0, 6)) for z in nulls],
                            dtype=object)
        elif kind == "BLOB":
            vals = np.array([None if z else rng.bytes(int(rng.integers(0, 5))) for z in nulls], dtype=object)
        elif kind == "BOOL":
            vals = np.ma.masked_array(rng.integers(0, 2, n).astype(bool), mask=nulls)
        elif kind.startswith("FLOAT"):
            vals = np.ma.masked_array(rng.standard_normal(n).astype(dt), mask=nulls)
        else:
            info = np.iinfo(dt)
            vals = np.ma.masked_array(rng.integers(info.min, info.max, n, dtype=dt, endpoint=True), mask=nulls)
        out[name] = vals
    return out


def as_rows(cols, n):
    per = []
    for name, kind, _ in COLUMNS:
        v = cols[name]
        if isinstance(v, np.ma.MaskedArray):
            mask = np.ma.getmaskarray(v)
            per.append([None if m else (float(x) if kind.startswith("FLOAT") else int(x))
                        for x, m in zip(v.data.tolist(), mask.tolist())])
        else:
            per.append(list(v))
    return list(zip(*per))


class ChunkedAppendTest(cstest.StoreTest):
    def setUp(self):
        super().setUp()
        self.saved = arrays.CHUNK_BYTES
        arrays.CHUNK_BYTES = 1  # one 65,536-row record a piece
        self.con = self.connect()
        self.store = self.path("a.cst")
        self.con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', %s)" %
                         (self.store, ", ".join("%s %s" % (n, k) for n, k, _ in COLUMNS)))
        self.con.execute("CREATE TABLE n(%s)" % ", ".join(
            "%s %s" % (n, {"TEXT": "TEXT", "BLOB": "BLOB"}.get(k, "REAL" if k.startswith("FLOAT") else "INTEGER"))
            for n, k, _ in COLUMNS))

    def tearDown(self):
        arrays.CHUNK_BYTES = self.saved
        super().tearDown()

    def same_as_native(self, what):
        cols = ", ".join(n for n, _, _ in COLUMNS)
        got = self.con.execute("SELECT %s FROM t ORDER BY rowid" % cols).fetchall()
        want = self.con.execute("SELECT %s FROM n ORDER BY rowid" % cols).fetchall()
        self.assertEqual(len(got), len(want), "%s (COLSTORE_SEED=%d)" % (what, SEED))
        for i, (a, b) in enumerate(zip(got, want)):
            if a != b:
                self.fail("%s: row %d: colstore %r, native %r (COLSTORE_SEED=%d)" % (what, i, a, b, SEED))

    def native_add(self, cols, n):
        f32 = [k == "FLOAT32" for _, k, _ in COLUMNS]
        rows = [tuple(None if x is None else (float(np.float32(x)) if f else x) for x, f in zip(r, f32))
                for r in as_rows(cols, n)]
        self.con.executemany("INSERT INTO n VALUES (%s)" % ", ".join("?" * len(COLUMNS)), rows)

    def test_pieces_equal_native_rows(self):
        rng = np.random.default_rng(SEED)
        for n in (ROWS, 65536, 65537, 1):
            cols = draw(rng, n)
            self.assertEqual(arrays.append(self.con, "t", cols), n)
            self.native_add(cols, n)
            self.same_as_native("append of %d rows in pieces" % n)
        # whole records: the pieces are 65,536 rows, so the store has no
        # more records than one append of the same rows would make
        info = self.con.execute("SELECT colstore_info('t')").fetchone()[0]
        self.assertIn('"rows":%d' % (ROWS + 65536 + 65537 + 1), info.replace(" ", ""))

    def test_a_failing_piece_appends_nothing(self):
        self.con.execute("CREATE VIRTUAL TABLE nn USING colstore('%s', a INT64 NOT NULL, s TEXT)" %
                         self.path("nn.cst"))
        n = ROWS
        a = np.ma.masked_array(np.arange(n, dtype="<i8"), mask=np.arange(n) == n - 1)  # NULL in the last piece
        s = np.array(["x%d" % i for i in range(n)], dtype=object)
        before = cstest.read_bytes(self.path("nn.cst"))
        with self.assertRaises(sqlite3.Error) as cm:
            arrays.append(self.con, "nn", {"a": a, "s": s})
        self.assertTrue(str(cm.exception).startswith("colstore:"), str(cm.exception))
        self.assertEqual(self.con.execute("SELECT count(*) FROM nn").fetchone()[0], 0)
        self.assertFalse(self.con.in_transaction)
        self.assertEqual(cstest.read_bytes(self.path("nn.cst")), before)
        # inside the caller's transaction: its earlier rows stay, the failed
        # append leaves none, and the transaction goes on
        self.con.execute("BEGIN")
        arrays.append(self.con, "nn", {"a": np.arange(3, dtype="<i8")})
        with self.assertRaises(sqlite3.Error):
            arrays.append(self.con, "nn", {"a": a, "s": s})
        self.assertTrue(self.con.in_transaction)
        arrays.append(self.con, "nn", {"a": np.arange(n, dtype="<i8"), "s": s})
        self.con.execute("COMMIT")
        self.assertEqual(self.con.execute("SELECT count(*), sum(a) FROM nn").fetchone(),
                         (3 + n, 3 + n * (n - 1) // 2))
        # the caller's ROLLBACK undoes a whole chunked append
        self.con.execute("BEGIN")
        arrays.append(self.con, "nn", {"a": np.arange(n, dtype="<i8")})
        self.con.execute("ROLLBACK")
        self.assertEqual(self.con.execute("SELECT count(*) FROM nn").fetchone()[0], 3 + n)


if __name__ == "__main__":
    unittest.main(verbosity=2)
