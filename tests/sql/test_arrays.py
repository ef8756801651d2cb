"""colstore_append and colstore_array: whole columns in and out as BLOBs.

docs/sql.md "Arrays" and SQL-CONTRACT.md "Arrays from any binding" fix the
layout: little-endian values at the column's width, `name:valid` a byte a
row (0 = NULL), TEXT/BLOB bytes under `name` with n + 1 int64 offsets under
`name:offsets`.  The oracles here are numpy (the bytes a binding hands in
and expects back, compared bit for bit) and SQLite itself: the same rows
read through the table's own SELECT, `_rows` and `_mask`, and a native
SQLite table holding the same rows, compared by storage class and bits
(cstest.canon).  Random data takes its seed from COLSTORE_SEED (default
below), printed with every failure.
"""
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402

try:
    import numpy as np
except ImportError:  # pragma: no cover - python3-numpy is a build dependency
    np = None

SEED = int(os.environ.get("COLSTORE_SEED", "2323"))

# type -> numpy dtype of its values
DTYPES = {
    "INT8": "<i1", "INT16": "<i2", "INT32": "<i4", "INT64": "<i8",
    "UINT8": "<u1", "UINT16": "<u2", "UINT32": "<u4",
    "FLOAT32": "<f4", "FLOAT64": "<f8", "BOOL": "<u1",
}
FIXED = list(DTYPES)
ALL = FIXED + ["TEXT", "BLOB"]


def blob_arg(a):
    return memoryview(np.ascontiguousarray(a))


def var_parts(values):
    """bytes, int64 offsets of a list of bytes/str/None (None: no bytes)."""
    raw = [b"" if v is None else (v.encode() if isinstance(v, str) else v) for v in values]
    offs = np.zeros(len(raw) + 1, dtype="<i8")
    offs[1:] = np.cumsum([len(r) for r in raw]) if raw else []
    return b"".join(raw), offs


def py_value(t, x):
    """A numpy scalar as SQLite reads it back (NaN reads as NULL)."""
    if t in ("FLOAT32", "FLOAT64"):
        f = float(x)
        return None if f != f else f
    return int(x)


def random_column(rng, t, n, null_rate=0.2):
    """(values as given to colstore_append, valid bytes) of type t."""
    valid = (rng.random(n) >= null_rate).astype("<u1")
    if t == "BOOL":
        vals = rng.integers(0, 2, n).astype("<u1")
    elif t in ("FLOAT32", "FLOAT64"):
        # raw bit patterns: NaN payloads, infinities, -0.0, subnormals all occur
        w = 4 if t == "FLOAT32" else 8
        vals = np.frombuffer(rng.bytes(n * w), dtype=DTYPES[t]).copy()
        special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324 if w == 8 else 1e-45, -1.5], dtype=DTYPES[t])
        idx = rng.integers(0, n, n // 10)
        vals[idx] = special[rng.integers(0, len(special), len(idx))]
    elif t in ("TEXT", "BLOB"):
        pool = ["", "a", "é", "日本語", "x" * 300, "emoji \U0001F600", "tab\tnew\nline", "'quote'"]
        vals = []
        for i in range(n):
            if t == "TEXT":
                vals.append(pool[rng.integers(0, len(pool))] + str(rng.integers(0, 1000)) * int(rng.integers(0, 2)))
            else:
                vals.append(rng.bytes(int(rng.integers(0, 40))))
    else:
        info = np.iinfo(DTYPES[t])
        vals = rng.integers(info.min, info.max, n, dtype=DTYPES[t], endpoint=True)
    return vals, valid


@cstest.unittest.skipIf(np is None, "numpy is not installed")
class ArraysTest(cstest.StoreTest):

    def make(self, con, name, cols, path=None):
        path = path or self.path(name + ".cst")
        defs = ", ".join("%s %s" % (c, t) for c, t in cols)
        con.execute("CREATE VIRTUAL TABLE %s USING colstore('%s', %s)" % (name, path, defs))
        return path

    def append(self, con, table, arrays):
        """colstore_append(table, k1, v1, ...) with arrays a dict."""
        args = [table]
        for k, v in arrays.items():
            args += [k, v]
        sql = "SELECT colstore_append(%s)" % ", ".join("?" * len(args))
        return con.execute(sql, args).fetchone()[0]

    def array(self, con, table, name, kind=None, sel=None):
        if kind is None:
            return con.execute("SELECT colstore_array(?, ?)", (table, name)).fetchone()[0]
        return con.execute("SELECT colstore_array(?, ?, ?, ?)", (table, name, kind, sel)).fetchone()[0]

    def decoded(self, con, table, col, t, kind=None, sel=None):
        """The column as Python values (None for NULL) from colstore_array."""
        valid = np.frombuffer(self.array(con, table, col + ":valid", kind, sel), dtype="<u1")
        data = self.array(con, table, col, kind, sel)
        if t in ("TEXT", "BLOB"):
            offs = np.frombuffer(self.array(con, table, col + ":offsets", kind, sel), dtype="<i8")
            self.assertEqual(len(offs), len(valid) + 1)
            self.assertEqual(int(offs[0]), 0)
            self.assertEqual(int(offs[-1]), len(data))
            out = []
            for i in range(len(valid)):
                b = data[offs[i]:offs[i + 1]]
                if not valid[i]:
                    self.assertEqual(b, b"", "a NULL value came with bytes")
                    out.append(None)
                else:
                    out.append(b.decode() if t == "TEXT" else bytes(b))
            return out
        vals = np.frombuffer(data, dtype=DTYPES[t])
        self.assertEqual(len(vals), len(valid))
        return [py_value(t, v) if ok else None for v, ok in zip(vals, valid)]

    # ------------------------------------------------------------ round trip

    def test_round_trip_every_type(self):
        """Random columns of every type with NULLs (NaN, -0.0, infinities in
        the floats) come back bit for bit, NULL slots as zeros, over several
        records and two calls; the table reads as a native table with the
        same rows does."""
        rng = np.random.default_rng(SEED)
        con = self.connect()
        cols = [("c_%s" % t.lower(), t) for t in ALL]
        self.make(con, "t", cols)
        con.execute("CREATE TABLE native(%s)" % ", ".join("%s %s" % (c, cstest_affinity(t)) for c, t in cols))
        n_total, given = 0, {c: ([], []) for c, _ in cols}
        for n in (cstest.scaled(70000, 9000), 1234):
            arrays = {}
            for c, t in cols:
                vals, valid = random_column(rng, t, n)
                if t in ("TEXT", "BLOB"):
                    data, offs = var_parts(vals)
                    arrays[c], arrays[c + ":offsets"] = data, blob_arg(offs)
                else:
                    arrays[c] = blob_arg(vals)
                arrays[c + ":valid"] = blob_arg(valid)
                given[c][0].append(vals)
                given[c][1].append(valid)
            self.assertEqual(self.append(con, "t", arrays), n, "seed %d" % SEED)
            n_total += n
        for c, t in cols:
            valid = np.concatenate(given[c][1])
            got_valid = self.array(con, "t", c + ":valid")
            self.assertEqual(got_valid, valid.tobytes(), "seed %d: %s:valid" % (SEED, c))
            if t in ("TEXT", "BLOB"):
                vals = [v for part in given[c][0] for v in part]
                want = [v if ok else None for v, ok in zip(vals, valid)]
                data, offs = var_parts([None if w is None else w for w in want])
                self.assertEqual(self.array(con, "t", c), data, "seed %d: %s" % (SEED, c))
                self.assertEqual(self.array(con, "t", c + ":offsets"), offs.tobytes(), "seed %d: %s" % (SEED, c))
            else:
                vals = np.concatenate(given[c][0])
                want = vals.copy()
                want[valid == 0] = 0
                got = self.array(con, "t", c)
                self.assertEqual(len(got), n_total * want.itemsize)
                self.assertEqual(got, want.tobytes(), "seed %d: %s differs bit for bit" % (SEED, c))
        # the native oracle: the same rows through executemany
        flat = {c: ([v for part in given[c][0] for v in part], np.concatenate(given[c][1])) for c, _ in cols}
        native_rows = []
        for i in range(n_total):
            r = []
            for c, t in cols:
                v, ok = flat[c][0][i], flat[c][1][i]
                r.append(None if not ok else (v if t in ("TEXT", "BLOB") else py_value(t, v)))
            native_rows.append(r)
        con.executemany("INSERT INTO native VALUES (%s)" % ", ".join("?" * len(cols)), native_rows)
        names = ", ".join(c for c, _ in cols)
        got = cstest.canon_rows(con.execute("SELECT rowid, %s FROM t ORDER BY rowid" % names).fetchall(), True)
        want = cstest.canon_rows(con.execute("SELECT rowid - 1, %s FROM native ORDER BY rowid" % names).fetchall(),
                                 True)
        self.assertEqual(len(got), n_total)
        for g, w in zip(got, want):
            self.assertEqual(g, w, "seed %d: a row differs from the native table" % SEED)
        # and colstore_array's values are the ones the table's SELECT gives
        for c, t in cols:
            col_vals = [r[0] for r in con.execute("SELECT %s FROM t ORDER BY rowid" % c)]
            self.assertEqual(self.decoded(con, "t", c, t), col_vals, "seed %d: %s" % (SEED, c))

    def test_float_bit_patterns(self):
        """Every NaN payload, -0.0, infinities and subnormals keep their bits."""
        con = self.connect()
        self.make(con, "f", [("d", "FLOAT64"), ("s", "FLOAT32")])
        d = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 5e-324, -5e-324, 1.7976931348623157e308],
                     dtype="<f8")
        bits = d.view("<u8").copy()
        bits[5] = 0x7FF0000000000001  # signalling NaN with a payload
        bits = np.append(bits, np.uint64(0xFFF8DEADBEEF0001))
        s = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 3.4028235e38, 1.0, -2.5], dtype="<f4")
        s.view("<u4")[4] = 0x7FC12345
        self.append(con, "f", {"d": bits.tobytes(), "s": s.tobytes()})
        self.assertEqual(self.array(con, "f", "d"), bits.tobytes())
        self.assertEqual(self.array(con, "f", "s"), s.tobytes())
        self.assertEqual(self.array(con, "f", "d:valid"), b"\x01" * 10)
        # SQLite itself: -0.0 stays negative, NaN reads as NULL
        got = [r[0] for r in con.execute("SELECT d FROM f ORDER BY rowid")]
        self.assertEqual(cstest.canon(got[1]), cstest.canon(-0.0))
        self.assertIsNone(got[4])

    def test_text_blob_offsets(self):
        """TEXT and BLOB: empty strings, non-ASCII, NULLs, offsets that do
        not start at 0 (an Arrow slice) and a NULL given bytes (dropped)."""
        con = self.connect()
        self.make(con, "s", [("t", "TEXT"), ("b", "BLOB")])
        con.execute("CREATE TABLE native(t TEXT, b BLOB)")
        texts = ["", "é", "日本語テキスト", "", None, "plain", "\U0001F600" * 3, "a'b\"c", None, ""]
        data, offs = var_parts(texts)
        valid = np.array([v is not None for v in texts], dtype="<u1")
        # a slice: 5 junk bytes before, offsets shifted; a NULL row spanning junk bytes
        sliced = b"JUNK!" + data
        soffs = offs + 5
        soffs[5:] += 3  # row 4 (NULL) spans 3 junk bytes
        sliced = sliced[:soffs[4]] + b"zzz" + sliced[soffs[4]:]
        blobs = [b"", b"\x00\x01\x02", None, b"\xff" * 100, b"", b"x", b"\x00", None, b"yy", b""]
        bdata, boffs = var_parts(blobs)
        bvalid = np.array([v is not None for v in blobs], dtype="<u1")
        n = self.append(con, "s", {"t": sliced, "t:offsets": soffs.tobytes(), "t:valid": valid.tobytes(),
                                   "b": bdata, "b:offsets": boffs.tobytes(), "b:valid": bvalid.tobytes()})
        self.assertEqual(n, len(texts))
        con.executemany("INSERT INTO native VALUES (?, ?)", list(zip(texts, blobs)))
        self.assertEqual(cstest.canon_rows(con.execute("SELECT t, b FROM s ORDER BY rowid").fetchall(), True),
                         cstest.canon_rows(con.execute("SELECT t, b FROM native ORDER BY rowid").fetchall(), True))
        self.assertEqual(self.array(con, "s", "t"), data)
        self.assertEqual(self.array(con, "s", "t:offsets"), offs.tobytes())
        self.assertEqual(self.array(con, "s", "b"), bdata)
        self.assertEqual(self.array(con, "s", "b:valid"), bvalid.tobytes())
        self.assertEqual(self.decoded(con, "s", "t", "TEXT"), texts)

    def test_columns_not_named_are_null(self):
        con = self.connect()
        self.make(con, "t", [("a", "INT32"), ("b", "TEXT"), ("c", "FLOAT64")])
        self.append(con, "t", {"a": np.arange(5, dtype="<i4").tobytes()})
        self.assertEqual(con.execute("SELECT count(*), count(a), count(b), count(c) FROM t").fetchone(), (5, 5, 0, 0))
        self.assertEqual(self.array(con, "t", "c"), b"\x00" * 40)
        self.assertEqual(self.array(con, "t", "b:offsets"), b"\x00" * 48)
        # no rows: 0, and an empty table gives empty BLOBs
        self.assertEqual(self.append(con, "t", {"a": b""}), 0)
        self.make(con, "e", [("a", "INT32")])
        self.assertEqual(self.array(con, "e", "a"), b"")

    # ------------------------------------------------------------ selections

    def test_rows_and_mask_match_the_table(self):
        """colstore_array with _rows/_mask gives the rows the table's own
        `_rows = ?` / `_mask = ?` give, in the same order, after DELETE and
        UPDATE too."""
        rng = np.random.default_rng(SEED + 1)
        con = self.connect()
        cols = [("i", "INT16"), ("f", "FLOAT64"), ("s", "TEXT")]
        self.make(con, "t", cols)
        n = cstest.scaled(150000, 20000)
        arrays = {}
        for c, t in cols:
            vals, valid = random_column(rng, t, n)
            if t == "TEXT":
                data, offs = var_parts(vals)
                arrays[c], arrays["s:offsets"] = data, offs.tobytes()
            else:
                arrays[c] = vals.tobytes()
            arrays[c + ":valid"] = valid.tobytes()
        self.append(con, "t", arrays)

        def check(what, n):
            sel_rows = rng.integers(-n, n, 3000).astype("<i8")
            sel_rows[:5] = [0, -1, 7, 7, n - 1]
            mask = (rng.random(n) < 0.3).astype("<u1")
            for c, t in cols:
                for kind, sel in (("_rows", sel_rows.tobytes()), ("_mask", mask.tobytes())):
                    want = [r[0] for r in con.execute("SELECT %s FROM t WHERE %s = ?" % (c, kind), (sel,))]
                    got = self.decoded(con, "t", c, t, kind, sel)
                    self.assertEqual(got, want, "seed %d, %s, %s, column %s" % (SEED, what, kind, c))
            # every live row, rowid order
            for c, t in cols:
                want = [r[0] for r in con.execute("SELECT %s FROM t ORDER BY rowid" % c)]
                self.assertEqual(self.decoded(con, "t", c, t), want, "seed %d, %s, column %s" % (SEED, what, c))

        check("as appended", n)
        con.execute("DELETE FROM t WHERE rowid % 7 = 3 OR rowid BETWEEN 66000 AND 70000")
        con.execute("UPDATE t SET f = -f, s = 'upd' || rowid WHERE rowid % 11 = 0")
        check("after DELETE and UPDATE", n)
        # and inside a transaction, the pending changes are seen
        con.execute("BEGIN")
        con.execute("DELETE FROM t WHERE rowid % 5 = 1")
        con.execute("UPDATE t SET i = 42 WHERE rowid % 13 = 0")
        self.append(con, "t", {"i": np.arange(100, dtype="<i2").tobytes()})
        check("pending in a transaction", n + 100)
        con.execute("ROLLBACK")

    def test_selection_errors_match_the_table(self):
        con = self.connect()
        self.make(con, "t", [("a", "INT32")])
        self.append(con, "t", {"a": np.arange(10, dtype="<i4").tobytes()})
        bad = np.array([3, 10], dtype="<i8").tobytes()
        self.assertSqlError(con, "SELECT colstore_array('t', 'a', '_rows', ?)", (bad,), code="SQLITE_RANGE",
                            contains=("position 10",))
        self.assertSqlError(con, "SELECT colstore_array('t', 'a', '_rows', ?)", (b"1234567",), code="SQLITE_MISMATCH",
                            contains=("multiple of 8",))
        self.assertSqlError(con, "SELECT colstore_array('t', 'a', '_mask', ?)", (b"\x01" * 9,),
                            code="SQLITE_MISMATCH", contains=("9 bytes", "10 rows"))
        self.assertSqlError(con, "SELECT colstore_array('t', 'a', 'rows', ?)", (b"",), contains=("'_rows' or '_mask'",))
        self.assertSqlError(con, "SELECT colstore_array('t', 'nope')", contains=("no column 'nope'",))
        self.assertSqlError(con, "SELECT colstore_array('t', 'a:offsets')", contains=("no offsets",))
        self.assertSqlError(con, "SELECT colstore_array('missing', 'a')", contains=("no colstore table",))
        # a deleted position yields no row, as in the table
        con.execute("DELETE FROM t WHERE rowid = 3")
        got = np.frombuffer(self.array(con, "t", "a", "_rows", np.array([3, 4, 3, -1], dtype="<i8").tobytes()),
                            dtype="<i4")
        self.assertEqual(got.tolist(), [4, 9])
        mask = np.ones(10, dtype="<u1").tobytes()
        self.assertEqual(np.frombuffer(self.array(con, "t", "a", "_mask", mask), dtype="<i4").tolist(),
                         [0, 1, 2, 4, 5, 6, 7, 8, 9])

    # ---------------------------------------------------------- transactions

    def test_transactions(self):
        p = self.path("tx.cst")
        con = self.connect()
        self.make(con, "t", [("a", "INT64"), ("s", "TEXT")], path=p)
        other = self.connect()
        other.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % p)
        a = np.arange(1000, dtype="<i8")
        data, offs = var_parts([str(i) for i in range(1000)])
        args = {"a": a.tobytes(), "s": data, "s:offsets": offs.tobytes()}
        before = cstest.read_bytes(p)
        con.execute("BEGIN")
        self.append(con, "t", args)
        con.execute("INSERT INTO t VALUES (-1, 'row')")
        self.append(con, "t", args)
        self.assertEqual(con.execute("SELECT count(*), sum(a) FROM t").fetchone(), (2001, 2 * 499500 - 1))
        self.assertEqual(len(self.array(con, "t", "a")), 2001 * 8)
        self.assertEqual(other.execute("SELECT count(*) FROM t").fetchone()[0], 0, "pending rows seen by another")
        con.execute("ROLLBACK")
        self.assertEqual(con.execute("SELECT count(*) FROM t").fetchone()[0], 0)
        self.assertEqual(cstest.read_bytes(p), before, "ROLLBACK left bytes in the store")
        # SAVEPOINT: rolled back to, the append inside it goes
        con.execute("BEGIN")
        self.append(con, "t", args)
        con.execute("SAVEPOINT sp")
        self.append(con, "t", args)
        con.execute("ROLLBACK TO sp")
        con.execute("COMMIT")
        self.assertEqual(other.execute("SELECT count(*), sum(a) FROM t").fetchone(), (1000, 499500))
        # autocommit: durable and visible at once
        self.append(con, "t", args)
        self.assertEqual(other.execute("SELECT count(*) FROM t").fetchone()[0], 2000)
        self.assertEqual(np.frombuffer(self.array(other, "t", "a"), dtype="<i8").tolist(), list(range(1000)) * 2)
        self.assertEqual(con.execute("SELECT colstore_verify('t')").fetchone()[0], "ok")

    # ---------------------------------------------------------------- errors

    def test_errors_change_nothing(self):
        """Every bad call fails with a colstore: message saying what is
        wrong, and neither the committed rows nor the file change; inside a
        transaction the rows appended before it stay pending."""
        p = self.path("e.cst")
        con = self.connect()
        self.make(con, "t", [("a", "INT32"), ("k", "INT8 NOT NULL"), ("s", "TEXT"), ("b", "BOOL")], path=p)
        n = 6
        a = np.arange(n, dtype="<i4").tobytes()
        k = np.arange(n, dtype="<i1").tobytes()
        data, offs = var_parts(["x", "", "yy", "é", "", "zzz"])
        self.append(con, "t", {"a": a, "k": k, "s": data, "s:offsets": offs.tobytes()})
        before = self.state(con, "t", p)
        o = offs.copy()
        o[3] = o[2] - 1
        o_out = offs.copy()
        o_out[-1] = len(data) + 1
        cases = [
            ((a, "k", k[:5]), "SQLITE_MISMATCH", ("a 6 rows (24 bytes)", "k 5 rows (5 bytes)")),
            ((a, "k", k, "a:valid", b"\x01" * 5), "SQLITE_MISMATCH", ("a:valid 5 rows", "a 6 rows")),
            ((a[:-1], "k", k), "SQLITE_MISMATCH", ("23 bytes", "whole number")),
            ((a, "k", k, "nope", a), "SQLITE_ERROR", ("no column 'nope'",)),
            ((a,), "SQLITE_MISMATCH", ("column k is NOT NULL",)),
            ((a, "k", k, "k:valid", bytes([1, 1, 0, 1, 1, 1])), "SQLITE_MISMATCH", ("k is NOT NULL", "row 2")),
            ((a, "k", k, "s", data, "s:offsets", o.tobytes()), "SQLITE_MISMATCH", ("s:offsets[3]", "must not decrease")),
            ((a, "k", k, "s", data, "s:offsets", o_out.tobytes()), "SQLITE_MISMATCH", ("s:offsets[6]", "within")),
            ((a, "k", k, "s", data, "s:offsets", offs[:-1].tobytes()), "SQLITE_MISMATCH", ("s:offsets 5 rows",)),
            ((a, "k", k, "s", data, "s:offsets", b"123"), "SQLITE_MISMATCH", ("int64 offsets",)),
            ((a, "k", k, "s", data), "SQLITE_ERROR", ("without s:offsets",)),
            ((a, "k", k, "s:valid", b"\x01" * 6), "SQLITE_ERROR", ("s:valid is given without s",)),
            ((a, "k", k, "b", bytes([0, 1, 2, 0, 1, 0])), "SQLITE_MISMATCH", ("BOOL", "row 2")),
            ((a, "k", k, "a", a), "SQLITE_ERROR", ("given twice",)),
            ((a, "k", "not a blob"), "SQLITE_MISMATCH", ("takes a BLOB, not TEXT",)),
            ((a, "k", 7), "SQLITE_MISMATCH", ("takes a BLOB, not INTEGER",)),
            ((a, "k", None), "SQLITE_MISMATCH", ("takes a BLOB, not NULL",)),
            ((a, "k"), "SQLITE_MISUSE", ("usage",)),
            ((a, 5, k), "SQLITE_MISMATCH", ("column name must be TEXT",)),
        ]
        for in_tx in (False, True):
            if in_tx:
                con.execute("BEGIN")
                self.append(con, "t", {"a": a, "k": k})
            for args, code, contains in cases:
                full = ["t", "a"] + list(args)
                sql = "SELECT colstore_append(%s)" % ", ".join("?" * len(full))
                self.assertSqlError(con, sql, full, code=code, contains=contains)
                if not in_tx:
                    self.assertStateUnchanged(before, con, "t", p, "colstore_append%r" % (tuple(full[1:2]),))
                else:
                    self.assertEqual(con.execute("SELECT count(*) FROM t").fetchone()[0], 2 * n,
                                     "a failed call changed the transaction's rows: %r" % (code,))
            if in_tx:
                con.execute("ROLLBACK")
                self.assertStateUnchanged(before, con, "t", p, "ROLLBACK")
        self.assertSqlError(con, "SELECT colstore_append('t')", code="SQLITE_MISUSE", contains=("usage",))
        self.assertSqlError(con, "SELECT colstore_append('nosuch', 'a', x'00')", contains=("no colstore table",))

    def test_dataset_is_read_only(self):
        con = self.connect()
        os.mkdir(self.path("ds"))
        self.make(con, "one", [("a", "INT32")], path=self.path("ds/1.cst"))
        self.append(con, "one", {"a": np.arange(3, dtype="<i4").tobytes()})
        con.execute("CREATE VIRTUAL TABLE ds USING colstore('%s')" % self.path("ds"))
        self.assertSqlError(con, "SELECT colstore_append('ds', 'a', ?)", (np.arange(3, dtype="<i4").tobytes(),),
                            code="SQLITE_READONLY", contains=("read-only",))
        self.assertEqual(np.frombuffer(self.array(con, "ds", "a"), dtype="<i4").tolist(), [0, 1, 2])


def cstest_affinity(t):
    """The native oracle's column type: floats without one, since a REAL
    column stores an integral float (-0.0 too) as an integer and loses the
    sign of -0.0, which colstore keeps."""
    return {"FLOAT32": "", "FLOAT64": "", "TEXT": "TEXT", "BLOB": "BLOB"}.get(t, "INTEGER")


if __name__ == "__main__":
    print("COLSTORE_SEED=%d" % SEED)
    cstest.main()
