"""Differential tests: every query on a colstore table must give exactly what
the same query gives on a native SQLite table holding the same rows.

Each case draws a random table from a fixed seed: every colstore type (INT8
to UINT32 through colstore names in the native table's declared types),
NULLs, and the extremes (-2^63, 2^63-1, +-1e308, infinities, subnormals,
FLOAT32 values that are exact in float, unicode and empty TEXT, empty
BLOBs).  The native table's rows are inserted at rowid 0, 1, ... so that
rowid means the same row position on both sides, and queries about rowid
compare unchanged, affinity included.

The same rows become colstore stores three ways:
  create  colstore_create(path, 'SELECT * FROM native')
  insert  CREATE VIRTUAL TABLE with column definitions + one INSERT ... SELECT
  appends CREATE VIRTUAL TABLE + several INSERT ... SELECT transactions, so
          the store has many records of uneven sizes
and every query runs on each.  The large case has more rows than a record
holds (65536), so scans, ranges and lookups cross record boundaries.

Rows are compared by storage class and bit pattern (cstest.canon), so 1 vs
1.0, 0.0 vs -0.0 and '1' vs 1 are differences.  A failure prints the seed,
the variant, the query and its parameters.
"""
import json
import os
import random
import shutil
import struct
import sys
import tempfile
import unittest

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402

# name, native declared type, colstore column definition
COLUMNS = [
    ("k", "INTEGER", "INT64 NOT NULL"),
    ("i64", "INTEGER", "INT64"),
    ("i32", "INT32", "INT32"),
    ("i16", "INT16", "INT16"),
    ("i8", "INT8", "INT8"),
    ("u8", "UINT8", "UINT8"),
    ("u16", "UINT16", "UINT16"),
    ("u32", "UINT32", "UINT32"),
    ("f64", "REAL", "FLOAT64"),
    ("f32", "FLOAT32", "FLOAT32"),
    ("b", "BOOL", "BOOL"),
    ("t", "TEXT", "TEXT"),
    ("bl", "BLOB", "BLOB"),
    ("x y", "INTEGER", "INT16"),  # a name that needs quoting
]
COLNAMES = ['"%s"' % c[0] for c in COLUMNS]

I64_EXTREMES = [-2**63, 2**63 - 1, -2**63 + 1, 2**63 - 2, 0, -1, 1, 2**53 + 1, -(2**53) - 1, 2**31, -2**31 - 1]
F64_EXTREMES = [1e308, -1e308, 1.7976931348623157e308, -1.7976931348623157e308, 5e-324, -5e-324,
                2.2250738585072014e-308, 2.225073858507201e-308, float("inf"), float("-inf"), 0.0, 0.1, -2.5,
                1 / 3, 9007199254740993.0, 1e15, 3.0, -1e-300]
F32_EXTREMES = [3.4028234663852886e38, -3.4028234663852886e38, 2.0**-149, -(2.0**-149), 2.0**-126,
                1.1754942106924411e-38, float("inf"), float("-inf"), 0.0, 16777216.0, 0.5, -0.25]
TEXTS = ["", "a", "A", "abc", "ab", "b", "hello world", "é", "E", "Ä", "日本語", "😀", "naïve café", "a\x00b",
         "12", " 12 ", "1e5", "-3", "%", "_x_", "NULL", "zz", "Zebra", "x" * 100]


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def draw_value(rng, name):
    """One random value for column `name`, NULLs and extremes included."""
    if name != "k" and rng.random() < 0.1:
        return None
    edge = rng.random() < 0.08
    if name in ("k", "i64"):
        if edge:
            return rng.choice(I64_EXTREMES)
        return rng.choice([rng.randint(-50, 50), rng.randint(-10**6, 10**6), rng.randint(-2**63, 2**63 - 1)])
    bits = {"i32": (-2**31, 2**31 - 1), "i16": (-2**15, 2**15 - 1), "i8": (-128, 127), "u8": (0, 255),
            "u16": (0, 65535), "u32": (0, 2**32 - 1), "x y": (-2**15, 2**15 - 1)}
    if name in bits:
        lo, hi = bits[name]
        if edge:
            return rng.choice([lo, hi, 0, lo + 1, hi - 1])
        return rng.choice([rng.randint(max(lo, -20), min(hi, 20)), rng.randint(lo, hi)])
    if name == "f64":
        if edge:
            return rng.choice(F64_EXTREMES)
        return rng.choice([rng.uniform(-1e6, 1e6), float(rng.randint(-100, 100)), rng.randint(-1000, 1000) / 8.0,
                           rng.uniform(-1, 1) * 10 ** rng.randint(-300, 300)])
    if name == "f32":
        if edge:
            return rng.choice(F32_EXTREMES)
        return f32(rng.choice([rng.uniform(-1e4, 1e4), rng.randint(-64, 64) / 4.0, rng.uniform(-1, 1) * 1e30]))
    if name == "b":
        return rng.randint(0, 1)
    if name == "t":
        if rng.random() < 0.7:
            return rng.choice(TEXTS)
        alphabet = "abcxyzABC é日😀_%"
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
    if name == "bl":
        if edge:
            return rng.choice([b"", b"\x00", b"\xff" * 9])
        return bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 8)))
    raise KeyError(name)


def draw_rows(seed, n):
    rng = random.Random(seed)
    return [tuple(draw_value(rng, c[0]) for c in COLUMNS) for _ in range(n)]


def native_table(con, name, rows):
    cols = ", ".join('"%s" %s' % (c[0], c[1]) for c in COLUMNS)
    con.execute('CREATE TABLE %s (%s)' % (name, cols))
    ph = ", ".join("?" for _ in range(len(COLUMNS) + 1))
    con.execute("BEGIN")
    con.executemany("INSERT INTO %s (rowid, %s) VALUES (%s)" % (name, ", ".join(COLNAMES), ph),
                    ((i,) + r for i, r in enumerate(rows)))
    con.execute("COMMIT")


def colstore_defs():
    return ", ".join('"%s" %s' % (c[0], c[2]) for c in COLUMNS)


def build_variants(con, d, stem, native, n, rng):
    """The three colstore tables for native table `native`; returns their names."""
    p_create = os.path.join(d, stem + "_create.cst")
    got = con.execute("SELECT colstore_create(?, 'SELECT * FROM %s ORDER BY rowid')" % native, (p_create,)).fetchone()[0]
    assert got == n, (got, n)
    con.execute("CREATE VIRTUAL TABLE %s_create USING colstore('%s')" % (stem, p_create))

    p_insert = os.path.join(d, stem + "_insert.cst")
    con.execute("CREATE VIRTUAL TABLE %s_insert USING colstore('%s', %s)" % (stem, p_insert, colstore_defs()))
    con.execute("INSERT INTO %s_insert SELECT * FROM %s ORDER BY rowid" % (stem, native))

    p_app = os.path.join(d, stem + "_appends.cst")
    con.execute("CREATE VIRTUAL TABLE %s_appends USING colstore('%s', %s)" % (stem, p_app, colstore_defs()))
    cuts = sorted(set([0, n] + [rng.randint(0, n) for _ in range(6)] + ([1, 2] if n > 2 else [])))
    for lo, hi in zip(cuts, cuts[1:]):
        con.execute("BEGIN")
        con.execute("INSERT INTO %s_appends SELECT * FROM %s WHERE rowid >= ? AND rowid < ? ORDER BY rowid"
                    % (stem, native), (lo, hi))
        con.execute("COMMIT")
    return [stem + "_create", stem + "_insert", stem + "_appends"]


class DifferentialCase:
    """Queries shared by every seed; subclasses set SEED, N_ROWS, N_U."""
    SEED = None
    N_ROWS = 0
    N_U = 0
    HEAVY = True  # correlated subqueries and row-by-row sweeps (small tables only)
    # What a sweep query selects: every matching row on small tables; on the
    # large one a summary that still pins the (contiguous) rowid set exactly.
    SWEEP = "rowid, i16"
    # Rows the row-heavy queries look at (all, or a window across a record edge).
    WIN = "rowid >= 0"
    # Deleted rows (issue 11): None; "committed" (each DELETE its own
    # transaction, read back from the file); "pending" (every DELETE in one
    # transaction left open while the queries run: this connection's view).
    DELETES = None

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="colstore-diff-")
        cls.con = cstest.connect()
        cls.rows = draw_rows(cls.SEED, cls.N_ROWS)
        cls.urows = draw_rows(cls.SEED + 1000, cls.N_U)
        rng = random.Random(cls.SEED + 7)
        native_table(cls.con, "nt", cls.rows)
        native_table(cls.con, "nu", cls.urows)
        t_names = build_variants(cls.con, cls.dir, "ct", "nt", cls.N_ROWS, rng)
        u_names = build_variants(cls.con, cls.dir, "cu", "nu", cls.N_U, rng)
        cls.native = {"T": "nt", "U": "nu"}
        # Each variant of T is paired with a colstore U (the same build way).
        cls.variants = [(t, {"T": t, "U": u}) for t, u in zip(t_names, u_names)]
        # And with the native U, for mixed joins.
        cls.mixed = [(t + "+native", {"T": t, "U": "nu"}) for t in t_names]
        if cls.DELETES:
            cls.delete_rows(random.Random(cls.SEED + 17))

    @classmethod
    def delete_rows(cls, rng):
        """The same DELETEs on the native tables and every colstore one: a
        random sixth of the rows by rowid, both ends, a run across the first
        record edge, rows picked by a predicate SQLite evaluates and by one
        colstore takes."""
        if cls.DELETES == "pending":
            cls.con.execute("BEGIN")
        for key, n in (("T", cls.N_ROWS), ("U", cls.N_U)):
            r = cstest.RECORD_ROWS
            ids = set(rng.sample(range(n), n // 6)) | {0, n - 1} | set(range(max(0, r - 40), min(n, r + 40)))
            stmts = [("DELETE FROM {} WHERE rowid IN (SELECT value FROM json_each(?))", (json.dumps(sorted(ids)),)),
                     ("DELETE FROM {} WHERE i16 % 7 = 3", ()),
                     ("DELETE FROM {} WHERE f64 > 1e300 OR i8 = -128", ()),
                     ("DELETE FROM {} WHERE i8 > 100", ()),
                     ("DELETE FROM {} WHERE rowid = ?", (n // 2,))]
            tables = [cls.native[key]] + [m[key] for _, m in cls.variants]
            for sql, params in stmts:
                counts = [cls.con.execute(sql.format(t), params).rowcount for t in tables]
                assert len(set(counts)) == 1, (sql, tables, counts)

    @classmethod
    def tearDownClass_deletes(cls):
        if cls.DELETES == "pending":
            cls.con.execute("ROLLBACK")

    @classmethod
    def tearDownClass(cls):
        cls.tearDownClass_deletes()
        cls.con.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def setUp(self):
        self.d = cstest.Differ(self, self.con, self.native, self.variants, self.SEED)

    def boundaries(self):
        """Row positions worth probing: ends, record edges, and a few inside."""
        n = self.N_ROWS
        r = cstest.RECORD_ROWS
        pos = {0, 1, 2, n // 2, n - 2, n - 1, n, n + 1, r - 1, r, r + 1}
        rng = random.Random(self.SEED + 3)
        pos.update(rng.randrange(max(n, 1)) for _ in range(5))
        return sorted(p for p in pos if p >= 0)

    # ------------------------------------------------------------ checks

    def test_build_ways_store_the_same_row_count(self):
        want = self.con.execute("SELECT count(*) FROM nt").fetchone()[0]
        if not self.DELETES:
            self.assertEqual(want, self.N_ROWS)
        for name, m in self.variants:
            got = self.con.execute("SELECT count(*) FROM %s" % m["T"]).fetchone()[0]
            self.assertEqual(got, want, "seed %s variant %s" % (self.SEED, name))
            info = json.loads(self.con.execute("SELECT colstore_info(?)", (m["T"],)).fetchone()[0])
            self.assertEqual(info["positions"], self.N_ROWS)
            self.assertEqual(info["rows"], self.N_ROWS if self.DELETES == "pending" else want)
        rec = [json.loads(self.con.execute("SELECT colstore_info(?)", (m["T"],)).fetchone()[0])["records"]
               for _, m in self.variants]
        want_min = -(-self.N_ROWS // cstest.RECORD_ROWS)
        self.assertTrue(all(x >= want_min for x in rec), rec)
        self.assertGreater(rec[2], rec[1] if self.N_ROWS > 2 else -1, "appends should make more records: %s" % rec)

    def test_full_scan_returns_every_value_with_its_storage_class(self):
        self.d.same("SELECT rowid, * FROM {T} ORDER BY rowid", ordered=True)
        types = " || ',' || ".join("typeof(%s)" % c for c in COLNAMES)
        self.d.same("SELECT %s AS ty, count(*), min(rowid), max(rowid) FROM {T} GROUP BY ty" % types)
        if self.HEAVY:
            self.d.same("SELECT * FROM {T}")
            self.d.same('SELECT rowid, "x y", t, k FROM {T}')

    def test_rowid_equality_lookups(self):
        for p in self.boundaries():
            self.d.same("SELECT rowid, * FROM {T} WHERE rowid = ?", (p,), ordered=True)
            self.d.same("SELECT rowid, * FROM {T} WHERE rowid = %d" % p, ordered=True)
            self.d.same("SELECT rowid, i8 FROM {T} WHERE ? = rowid", (p,), ordered=True)

    ODD_BOUNDS = [-5, -1, 0, 1, 2, 3, 2.5, -0.5, 0.5, "3", "3.0", "3.5", " 4", "abc", "", None, b"\x00", b"3",
                  9223372036854775807, -9223372036854775808, 2**62, 1e300, -1e300, float("inf"),
                  float("-inf"), 9.223372036854775807e18, -9.3e18]

    def bounds(self):
        n = self.N_ROWS
        extra = [n - 1, n, n + 1, float(n) - 0.5, str(n), cstest.RECORD_ROWS - 1, cstest.RECORD_ROWS,
                 cstest.RECORD_ROWS + 0.5]
        return self.ODD_BOUNDS + extra

    def test_rowid_comparisons_with_odd_bounds(self):
        for v in self.bounds():
            for op in ("=", "<", "<=", ">", ">="):
                self.d.same("SELECT %s FROM {T} WHERE rowid %s ?" % (self.SWEEP, op), (v,))
                self.d.same("SELECT %s FROM {T} WHERE rowid %s %s" % (self.SWEEP, op, cstest.sql_literal(v)))
                self.d.same("SELECT count(*) FROM {T} WHERE ? %s rowid" % op, (v,))

    def test_rowid_ranges_including_reversed_and_empty(self):
        n = self.N_ROWS
        r = cstest.RECORD_ROWS
        pairs = [(10, 5), (5, 10), (5, 5), (5, 6), (-3, 3), (n - 3, n + 3), (n, n + 5), (-10, -1), (2.5, 7.5),
                 ("3", "8"), ("abc", 3), (3, "abc"), (None, 5), (0, None), (r - 2, r + 2), (0, n), (-1e300, 1e300),
                 (-9223372036854775808, 9223372036854775807), (b"\x00", 4), (1, b"\x00")]
        rng = random.Random(self.SEED + 11)
        pairs += [(rng.randint(-5, n + 5), rng.randint(-5, n + 5)) for _ in range(12)]
        for lo, hi in pairs:
            for lop in (">", ">="):
                for hop in ("<", "<="):
                    self.d.same("SELECT %s FROM {T} WHERE rowid %s ? AND rowid %s ?" % (self.SWEEP, lop, hop),
                                (lo, hi))
            self.d.same("SELECT %s FROM {T} WHERE rowid BETWEEN ? AND ?" % self.SWEEP, (lo, hi))
            self.d.same("SELECT %s FROM {T} WHERE rowid BETWEEN %s AND %s"
                        % (self.SWEEP, cstest.sql_literal(lo), cstest.sql_literal(hi)))
            self.d.same("SELECT count(*), sum(i8) FROM {T} WHERE rowid NOT BETWEEN ? AND ?", (lo, hi))
        self.d.same("SELECT rowid FROM {T} WHERE rowid > 10 AND rowid < 5")
        self.d.same("SELECT rowid FROM {T} WHERE rowid >= 3 AND rowid <= 3 AND rowid = 3")
        self.d.same("SELECT rowid FROM {T} WHERE rowid > 1 AND rowid > 4 AND rowid < 20 AND rowid < 9")
        self.d.same("SELECT rowid FROM {T} WHERE rowid = 3 AND rowid = 4")
        self.d.same("SELECT rowid FROM {T} WHERE rowid IS NULL")
        self.d.same("SELECT rowid FROM {T} WHERE rowid IS 3")
        self.d.same("SELECT rowid FROM {T} WHERE rowid IS NOT NULL AND rowid < 7")

    def test_rowid_in_or_order_and_limit(self):
        n = self.N_ROWS
        self.d.same("SELECT rowid, t FROM {T} WHERE rowid IN (1, 3, 3, -1, %d, %d, '2', 2.0, 2.5)" % (n - 1, n))
        self.d.same("SELECT rowid FROM {T} WHERE rowid = 1 OR rowid = ? OR rowid > ?", (n - 1, n - 4))
        self.d.same("SELECT rowid FROM {T} WHERE rowid IN (SELECT rowid + 1 FROM {U} WHERE i8 > 0)")
        self.d.same("SELECT rowid, k FROM {T} ORDER BY rowid DESC", ordered=True)
        self.d.same("SELECT rowid, k FROM {T} WHERE rowid < 40 ORDER BY rowid DESC", ordered=True)
        self.d.same("SELECT rowid, k FROM {T} ORDER BY rowid LIMIT 7 OFFSET 3", ordered=True)
        self.d.same("SELECT rowid, k FROM {T} WHERE rowid >= ? ORDER BY rowid LIMIT 5", (n - 3,), ordered=True)
        self.d.same("SELECT max(rowid), min(rowid), count(rowid) FROM {T}")

    def test_filters_sqlite_evaluates(self):
        rng = random.Random(self.SEED + 5)
        for _ in range(4):
            v = draw_value(rng, "i64")
            self.d.same("SELECT rowid, i64 FROM {T} WHERE i64 > ?", (v,))
            self.d.same("SELECT rowid FROM {T} WHERE i64 <= ? AND i32 IS NOT NULL", (v,))
            self.d.same("SELECT rowid, i64 FROM {T} WHERE i64 IS NOT ?", (v,))
        # IS NOT takes NULL (and NaN) rows; a NULL operand is IS NOT NULL
        for col in ("i8", "i32", "u8", "f32", "f64", "b", "t"):
            for v in (0, 1, -1, 2.5, -0.0, "a", "", None):
                self.d.same("SELECT rowid FROM {T} WHERE %s IS NOT ?" % col, (v,))
            self.d.same("SELECT rowid FROM {T} WHERE %s IS NOT 0 AND rowid < 50" % col)
        self.d.same("SELECT rowid FROM {T} WHERE i64 = 9223372036854775807 OR i64 = -9223372036854775808")
        self.d.same("SELECT rowid FROM {T} WHERE i64 > 9.2e18")
        self.d.same("SELECT rowid, t FROM {T} WHERE t IS NULL")
        self.d.same("SELECT rowid FROM {T} WHERE bl IS NULL OR b IS NULL")
        self.d.same("SELECT rowid, t FROM {T} WHERE t LIKE 'a%'")
        self.d.same("SELECT rowid, t FROM {T} WHERE t LIKE '%É%'")
        self.d.same("SELECT rowid, t FROM {T} WHERE t GLOB '*日*'")
        self.d.same("SELECT rowid, t FROM {T} WHERE t = '' OR t > 'z'")
        self.d.same("SELECT rowid FROM {T} WHERE t = 12")        # TEXT affinity: '12'
        self.d.same("SELECT rowid FROM {T} WHERE i32 = '7' OR i8 > '100' OR u8 = ' 3'")  # INTEGER affinity
        self.d.same("SELECT rowid FROM {T} WHERE i32 < 'abc' AND i32 > 5")
        self.d.same("SELECT rowid FROM {T} WHERE f64 = 3 OR f64 = '3.0' OR f64 > 1e300 OR f64 < -1e300")
        self.d.same("SELECT rowid, f64 FROM {T} WHERE f64 BETWEEN -1.5 AND 2.5")
        self.d.same("SELECT rowid FROM {T} WHERE f64 != f64 OR f64 = 0")
        self.d.same("SELECT rowid, f32 FROM {T} WHERE f32 < 0.5 AND f32 >= -16")
        self.d.same("SELECT rowid FROM {T} WHERE f32 = 16777216 OR abs(f32) > 3e38")
        self.d.same("SELECT rowid FROM {T} WHERE b = 1 AND u16 % 2 = 0")
        self.d.same("SELECT rowid FROM {T} WHERE b = '1' OR b IS TRUE")
        self.d.same("SELECT rowid FROM {T} WHERE bl = x'' OR bl = x'00' OR bl > x'f0'")
        self.d.same("SELECT rowid FROM {T} WHERE u32 > 4000000000 OR u32 = 0")
        self.d.same('SELECT rowid FROM {T} WHERE "x y" BETWEEN -100 AND 100')
        self.d.same("SELECT rowid FROM {T} WHERE k IN (0, 1, -1, 9223372036854775807)")
        self.d.same("SELECT rowid FROM {T} WHERE i8 IN (SELECT i8 FROM {U} WHERE b = 0)")
        self.d.same("SELECT rowid FROM {T} WHERE t IN ('a', 'é', '', '日本語') AND rowid > 3")

    def test_expressions_keep_storage_classes(self):
        self.d.same("SELECT rowid, i64 + 0, f32 * 2, i8 / 2, u32 * u32, t || '.', length(bl), hex(bl), "
                    "-f64, abs(i32), quote(f64), quote(f32), CAST(f64 AS INTEGER), CAST(i16 AS REAL), "
                    "CAST(t AS INTEGER), printf('%%.17g', f64), b + 1, coalesce(t, bl, f64), "
                    "typeof(i64 + 1) FROM {T} WHERE %s ORDER BY rowid" % self.WIN, ordered=True)
        self.d.same("SELECT rowid, i64 * 2 FROM {T} WHERE i64 BETWEEN -1000 AND 1000 ORDER BY rowid", ordered=True)

    def test_aggregates(self):
        self.d.same("SELECT count(*), count(i64), count(t), count(bl), count(b) FROM {T}")
        self.d.same("SELECT sum(i32), sum(i16), sum(u32), total(i64), total(f64), total(f32), avg(i8), avg(u16), "
                    "avg(f32) FROM {T}")
        self.d.same("SELECT sum(i64) FROM {T}")  # overflows when extremes were drawn: same error
        self.d.same("SELECT sum(i64) FROM {T} WHERE i64 BETWEEN -1000000 AND 1000000")
        self.d.same("SELECT sum(f64) FROM {T} WHERE abs(f64) < 1e300")
        self.d.same("SELECT %s FROM {T}" % ", ".join("min(%s), max(%s)" % (c, c) for c in COLNAMES))
        self.d.same("SELECT group_concat(t), group_concat(i8, ';'), group_concat(DISTINCT b) FROM {T}")
        self.d.same("SELECT group_concat(f32, ','), group_concat(hex(bl)) FROM {T} WHERE rowid < 200")
        self.d.same("SELECT count(DISTINCT i8), count(DISTINCT t), count(DISTINCT bl), count(DISTINCT f32) FROM {T}")
        self.d.same("SELECT min(f64), max(f64), min(t), max(t), min(bl), max(bl) FROM {T} WHERE rowid BETWEEN 3 AND 90")

    def test_group_by_and_having(self):
        self.d.same("SELECT i8, count(*), sum(u16), min(t), max(f64), total(f32) FROM {T} GROUP BY i8")
        self.d.same("SELECT b, count(*), avg(i32), group_concat(u8) FROM {T} GROUP BY b")
        self.d.same("SELECT t, count(*), max(rowid) FROM {T} GROUP BY t HAVING count(*) > 1")
        self.d.same("SELECT bl, count(*) FROM {T} GROUP BY bl")
        self.d.same("SELECT f32, count(*) FROM {T} GROUP BY f32 ORDER BY f32", ordered=True)
        self.d.same("SELECT u8 % 7 AS g, count(*), sum(i64 % 1000) FROM {T} GROUP BY g ORDER BY g", ordered=True)
        self.d.same("SELECT lower(t) AS g, count(*) FROM {T} GROUP BY g COLLATE NOCASE")

    def test_order_by(self):
        lim = "" if self.HEAVY else " LIMIT 300 OFFSET 20000"
        self.d.same("SELECT rowid, f64 FROM {T} ORDER BY f64, rowid" + lim, ordered=True)
        self.d.same("SELECT rowid, t FROM {T} ORDER BY t COLLATE NOCASE DESC, rowid" + lim, ordered=True)
        self.d.same("SELECT rowid, bl, i8 FROM {T} ORDER BY bl DESC, i8, rowid DESC" + lim, ordered=True)
        self.d.same("SELECT rowid, i64 FROM {T} ORDER BY i64 NULLS LAST, rowid LIMIT 50", ordered=True)
        self.d.same("SELECT rowid, f32, u32 FROM {T} ORDER BY f32 DESC, u32, rowid LIMIT 20 OFFSET 5", ordered=True)
        self.d.same("SELECT * FROM {T} WHERE %s ORDER BY k, rowid" % self.WIN, ordered=True)

    def test_joins(self):
        for variants in (self.variants, self.mixed):
            self.d.same("SELECT a.rowid, b.rowid FROM {T} a JOIN {U} b ON a.i8 = b.i8 WHERE a.rowid < 300",
                        variants=variants)
            self.d.same("SELECT a.rowid, b.t FROM {T} a JOIN {U} b ON b.rowid = a.rowid", variants=variants)
            self.d.same("SELECT a.rowid, b.rowid FROM {T} a JOIN {U} b ON b.rowid = a.rowid + 5 "
                        "WHERE a.rowid BETWEEN 0 AND 50", variants=variants)
            self.d.same("SELECT a.rowid, b.rowid, b.f64 FROM {T} a LEFT JOIN {U} b ON a.t = b.t AND b.t <> '' "
                        "WHERE a.rowid < 200", variants=variants)
            self.d.same("SELECT b.u8, count(*), sum(a.i16) FROM {U} b JOIN {T} a ON a.u8 = b.u8 GROUP BY b.u8",
                        variants=variants)
            self.d.same("SELECT count(*) FROM {T} a, {U} b WHERE a.b = b.b AND a.rowid < 50 AND b.rowid < 50",
                        variants=variants)
        # a self-join of a colstore table
        self.d.same("SELECT a.rowid, b.rowid FROM {T} a JOIN {T} b ON b.rowid = a.rowid + 1 AND a.i8 = b.i8")

    def test_subqueries(self):
        self.d.same("SELECT rowid FROM {T} WHERE i8 IN (SELECT i8 FROM {U})")
        self.d.same("SELECT rowid FROM {T} WHERE EXISTS (SELECT 1 FROM {U} WHERE {U}.rowid = {T}.rowid AND {U}.b = 1)")
        self.d.same("SELECT (SELECT max(rowid) FROM {U}), (SELECT count(*) FROM {T} WHERE rowid < 10)")
        self.d.same("SELECT g, count(*) FROM (SELECT u8 % 5 AS g FROM {T} WHERE t IS NOT NULL) GROUP BY g")
        self.d.same("SELECT rowid, t FROM {T} WHERE rowid = (SELECT min(rowid) + 2 FROM {U})")
        self.d.same("SELECT rowid FROM {T} WHERE rowid > (SELECT count(*) FROM {U} WHERE i8 > 0) - 3 "
                    "AND rowid < (SELECT count(*) FROM {U})")
        self.d.same("SELECT * FROM (SELECT rowid AS r, i64 FROM {T} ORDER BY rowid DESC LIMIT 10) ORDER BY r",
                    ordered=True)
        self.d.same("WITH w AS (SELECT rowid AS r, f64 FROM {T} WHERE f64 > 0) SELECT count(*), total(f64) FROM w")
        self.d.same("SELECT t FROM {T} UNION SELECT t FROM {U}")
        self.d.same("SELECT i8 FROM {T} EXCEPT SELECT i8 FROM {U}")
        if self.HEAVY:
            self.d.same("SELECT rowid, (SELECT count(*) FROM {U} WHERE {U}.i8 = {T}.i8) FROM {T}")
            self.d.same("SELECT rowid FROM {T} x WHERE f32 > (SELECT avg(f32) FROM {U} WHERE {U}.b = x.b)")

    # Columns an inner loop compares with the outer row (the automatic index,
    # core/kernels/cs_index.c, serves the numeric ones); operands of other
    # types and classes than the column, so SQLite's affinity decides.
    LOOP_COLS = ["k", "i64", "i32", "i16", "i8", "u8", "u16", "u32", "f64", "f32", "b", '"x y"', "t", "bl"]
    LOOP_RHS = ["o.{c}", "o.{c}", "o.{c} + 0.5", "o.{c} * 1.0", "CAST(o.{c} AS TEXT)", "o.{c} || ''", "-o.{c}",
                "o.{c} % 7", "NULL", "3", "3.0", "'3'", "x'03'", "2.5", "-0.0"]

    def test_inner_loops_on_columns(self):
        """Correlated subqueries and joins whose inner colstore table is
        filtered once per outer row by a column (`inner.c = outer value`):
        after a few such filters the table answers them from an automatic
        index.  Random columns and operands (COLSTORE_SEED-style: the seed is
        the class's), ORDER BY, LIMIT and OFFSET on the inner table, IN lists
        with a correlated member, joins either way round. Range-correlated shapes
        (`i.c BETWEEN o.x AND o.y`, `i.c > o.x AND i.c < o.x + 3`) too."""
        rng = random.Random(self.SEED + 41)
        outer = "o.rowid < %d" % (60 if self.HEAVY else 40)
        templates = [
            "SELECT o.rowid, (SELECT count(*) FROM {T} i WHERE i.%(c)s = %(r)s) FROM {U} o WHERE %(w)s",
            "SELECT o.rowid, (SELECT i.rowid FROM {T} i WHERE i.%(c)s = %(r)s ORDER BY i.%(d)s DESC, i.rowid "
            "LIMIT 1 OFFSET 1) FROM {U} o WHERE %(w)s",
            "SELECT o.rowid, (SELECT total(i.rowid) FROM {T} i WHERE i.%(c)s = %(r)s AND i.%(d)s IS NOT NULL) "
            "FROM {U} o WHERE %(w)s",
            "SELECT o.rowid, (SELECT count(*) FROM {T} i WHERE i.%(c)s IN (%(r)s, %(r2)s)) FROM {U} o WHERE %(w)s",
            "SELECT o.rowid FROM {U} o WHERE %(w)s AND o.%(d)s IN (SELECT i.%(d)s FROM {T} i WHERE i.%(c)s = %(r)s)",
            "SELECT o.rowid FROM {U} o WHERE %(w)s AND EXISTS (SELECT 1 FROM {T} i WHERE i.%(c)s = %(r)s "
            "AND i.rowid > 5)",
            "SELECT o.rowid, i.rowid FROM {U} o JOIN {T} i ON i.%(c)s = %(r)s WHERE %(w)s",
            "SELECT o.rowid, i.rowid FROM {U} o LEFT JOIN {T} i ON i.%(c)s = %(r)s AND i.%(d)s < 100 WHERE %(w)s",
            "SELECT o.rowid, (SELECT sum(i.rowid) FROM {T} i WHERE i.%(c)s = %(r)s AND i.rowid < (o.rowid * 37) "
            "%% 500 AND i.rowid >= o.rowid) FROM {U} o WHERE %(w)s",
            # range-correlated: windows of one or two bounds (the index answers the narrow ones)
            "SELECT o.rowid, (SELECT count(*) FROM {T} i WHERE i.%(c)s BETWEEN %(r)s AND %(r2)s) FROM {U} o WHERE %(w)s",
            "SELECT o.rowid, (SELECT total(i.rowid) FROM {T} i WHERE i.%(c)s > %(r)s AND i.%(c)s < %(r)s + 3 "
            "AND i.%(d)s IS NOT NULL) FROM {U} o WHERE %(w)s",
            "SELECT o.rowid, (SELECT i.rowid FROM {T} i WHERE i.%(c)s >= %(r)s ORDER BY i.%(d)s, i.rowid "
            "LIMIT 1 OFFSET 2) FROM {U} o WHERE %(w)s",
            "SELECT o.rowid, i.rowid FROM {U} o JOIN {T} i ON i.%(c)s <= %(r)s AND i.%(c)s > %(r)s - 2 WHERE %(w)s",
        ]
        for q in range(40 if self.HEAVY else len(templates)):
            c, c2, d = rng.choice(self.LOOP_COLS), rng.choice(self.LOOP_COLS), rng.choice(self.LOOP_COLS)
            r = rng.choice(self.LOOP_RHS).format(c=c2)
            r2 = rng.choice(self.LOOP_RHS).format(c=rng.choice(self.LOOP_COLS))
            sql = templates[q % len(templates)] % {"c": c, "d": d, "r": r, "r2": r2, "w": outer}
            self.d.same(sql)
            self.d.same(sql, variants=self.mixed)


class SmallSeed11(DifferentialCase, unittest.TestCase):
    SEED, N_ROWS, N_U = 11, 1500, 300


class SmallSeed12(DifferentialCase, unittest.TestCase):
    SEED, N_ROWS, N_U = 12, 700, 250


class TinySeed13(DifferentialCase, unittest.TestCase):
    SEED, N_ROWS, N_U = 13, 3, 2


class LargeSeed14(DifferentialCase, unittest.TestCase):
    """More rows than one record holds (and than a second one, for the appends build)."""
    SEED, N_ROWS, N_U = 14, cstest.RECORD_ROWS + 4500, 400
    HEAVY = False
    SWEEP = "count(*), min(rowid), max(rowid), total(i16), sum(rowid % 9)"
    WIN = "rowid BETWEEN %d AND %d" % (cstest.RECORD_ROWS - 700, cstest.RECORD_ROWS + 700)

    def bounds(self):
        return DifferentialCase.ODD_BOUNDS[:18] + [self.N_ROWS - 1, self.N_ROWS, cstest.RECORD_ROWS - 1,
                                                   cstest.RECORD_ROWS, cstest.RECORD_ROWS + 0.5]


class SmallSeed11Deleted(SmallSeed11):
    """Every query over a store with committed deletions (format 2)."""
    DELETES = "committed"


class SmallSeed12Pending(SmallSeed12):
    """Every query inside a transaction whose DELETEs are not committed."""
    DELETES = "pending"


class LargeSeed14Deleted(LargeSeed14):
    DELETES = "committed"


class LargeSeed14Pending(LargeSeed14):
    DELETES = "pending"


class NegativeZero(cstest.StoreTest):
    """-0.0 must come back as a native column of the same affinity gives it."""

    def test_negative_zero_inserted_with_values_matches_native(self):
        con = self.connect()
        con.execute("CREATE TABLE n (f REAL, g FLOAT32, i INTEGER, t TEXT)")
        con.execute("CREATE VIRTUAL TABLE c USING colstore('%s', f FLOAT64, g FLOAT32, i INT64, t TEXT)"
                    % self.path("z.cst"))
        for tab in ("n", "c"):
            con.execute("INSERT INTO %s VALUES (-0.0, -0.0, -0.0, -0.0)" % tab)
            con.execute("INSERT INTO %s VALUES (?, ?, ?, ?)" % tab, (-0.0, -0.0, -0.0, -0.0))
        want = cstest.canon_rows(con.execute("SELECT * FROM n").fetchall(), True)
        got = cstest.canon_rows(con.execute("SELECT * FROM c").fetchall(), True)
        self.assertEqual(got, want, "-0.0 inserted into colstore differs from a native table")

    def test_negative_zero_through_colstore_create_matches_native(self):
        con = self.connect()
        con.execute("CREATE TABLE n (f REAL, x)")
        con.execute("INSERT INTO n VALUES (-0.0, -0.0)")
        con.execute("SELECT colstore_create(?, 'SELECT f, x FROM n')", (self.path("z.cst"),))
        con.execute("CREATE VIRTUAL TABLE c USING colstore('%s')" % self.path("z.cst"))
        # x has no declared type: inferred FLOAT64, and a REAL column stores -0.0 as 0.0 natively.
        con.execute("CREATE TABLE n2 (f REAL, x REAL)")
        con.execute("INSERT INTO n2 SELECT * FROM n")
        want = cstest.canon_rows(con.execute("SELECT * FROM n2").fetchall(), True)
        got = cstest.canon_rows(con.execute("SELECT * FROM c").fetchall(), True)
        self.assertEqual(got, want)


class HelperSelfTest(unittest.TestCase):
    """The comparison must see the differences a plain == hides."""

    def test_canon_distinguishes_storage_class_and_sign(self):
        self.assertNotEqual(cstest.canon(1), cstest.canon(1.0))
        self.assertNotEqual(cstest.canon(0.0), cstest.canon(-0.0))
        self.assertNotEqual(cstest.canon("1"), cstest.canon(1))
        self.assertNotEqual(cstest.canon(b"a"), cstest.canon("a"))
        self.assertNotEqual(cstest.canon(None), cstest.canon(0))

    def test_differ_fails_on_a_changed_row(self):
        con = cstest.connect()
        con.execute("CREATE TABLE a (x)")
        con.execute("CREATE TABLE b (x)")
        con.execute("INSERT INTO a VALUES (1), (2.0)")
        con.execute("INSERT INTO b VALUES (1), (2)")

        class Probe(unittest.TestCase):
            def runTest(self):
                pass
        d = cstest.Differ(Probe(), con, {"T": "a"}, [("b", {"T": "b"})], seed=0)
        with self.assertRaises(AssertionError) as cm:
            d.same("SELECT x FROM {T}")
        self.assertIn("seed 0", str(cm.exception))
        self.assertIn("SELECT x FROM b", str(cm.exception))
        con.close()


if __name__ == "__main__":
    cstest.main()
