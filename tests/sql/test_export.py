"""colstore_export to Parquet and CSV, checked against DuckDB (npm
@duckdb/node-api, tests/sql/duckchild.py), Python's csv module, and
colstore_import reading the file back, as SQL-CONTRACT.md ("Import and
export") and docs/sql.md ("Getting data out") give it.

The source rows are drawn from a fixed seed (COLSTORE_SEED, printed on a
failure) into a native SQLite table `src` of every colstore type (signed and
unsigned integers of each width at their extremes, FLOAT32 values that a
float holds exactly, FLOAT64, BOOL, TEXT of few and of many distinct values
with quotes, commas and newlines, BLOB, a NOT NULL column), with NULLs at
several densities, and copied into a colstore table.  Each export is read
back by DuckDB and must equal `src` value by value: integers as exact
decimal text, floats as the same double, blobs as hex, with the column types
DuckDB sees (TINYINT ... UINTEGER, FLOAT, BOOLEAN, VARCHAR, BLOB) and the
row groups' statistics (min, max, null count as DuckDB reads them) equal to
what the rows of each group say.

Atomicity: an existing path is an error naming mode=replace and is left
as it was; an interrupt from the progress handler leaves no file and no
temporary beside it.

Without node, npm or DuckDB (no network for npm), the test exits 77: SKIP.
"""
import csv
import json
import os
import random
import struct
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402
from duckchild import DuckTest  # noqa: E402

SEED = int(os.environ.get("COLSTORE_SEED") or 20261206)
ROWS = cstest.scaled(6000, 2000)

# name, colstore type, DuckDB type, how DuckDB's value is read back for the
# comparison (a SQL expression over the column)
COLUMNS = [
    ("id", "INT64 NOT NULL", "BIGINT", "CAST(id AS VARCHAR)"),
    ("i8", "INT8", "TINYINT", "CAST(i8 AS VARCHAR)"),
    ("i16", "INT16", "SMALLINT", "CAST(i16 AS VARCHAR)"),
    ("i32", "INT32", "INTEGER", "CAST(i32 AS VARCHAR)"),
    ("i64", "INT64", "BIGINT", "CAST(i64 AS VARCHAR)"),
    ("u8", "UINT8", "UTINYINT", "CAST(u8 AS VARCHAR)"),
    ("u16", "UINT16", "USMALLINT", "CAST(u16 AS VARCHAR)"),
    ("u32", "UINT32", "UINTEGER", "CAST(u32 AS VARCHAR)"),
    ("f32", "FLOAT32", "FLOAT", "f32"),
    ("f64", "FLOAT64", "DOUBLE", "f64"),
    ("flag", "BOOL", "BOOLEAN", "CAST(flag AS INTEGER)"),
    ("s_low", "TEXT", "VARCHAR", "s_low"),
    ("s_high", "TEXT", "VARCHAR", "s_high"),
    ("bin", "BLOB", "BLOB", "hex(bin)"),
]
RANGES = {"INT8": (-128, 127), "INT16": (-32768, 32767), "INT32": (-2 ** 31, 2 ** 31 - 1),
          "INT64": (-2 ** 63, 2 ** 63 - 1), "UINT8": (0, 255), "UINT16": (0, 65535), "UINT32": (0, 2 ** 32 - 1)}


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def draw_value(rng, ctype, row):
    base = ctype.split()[0]
    if base in RANGES:
        lo, hi = RANGES[base]
        pick = rng.random()
        if pick < 0.05:
            return lo
        if pick < 0.1:
            return hi
        if pick < 0.5:
            return rng.randint(max(lo, -100), min(hi, 100))
        return rng.randint(lo, hi)
    if base == "FLOAT32":
        return f32(rng.uniform(-1e6, 1e6)) if rng.random() < 0.9 else f32(rng.choice([1e-30, 3.4e38, -2.5, 0.1]))
    if base == "FLOAT64":
        pick = rng.random()
        if pick < 0.45:  # few decimals: CSV's plain-decimal path
            return round(rng.uniform(-2000, 2000), rng.randrange(10)) * rng.choice([1, 1e-5, 1e9])
        return rng.uniform(-1e12, 1e12) if pick < 0.9 else rng.choice([5e-324, 1.7976931348623157e308, 0.1, 2e-6])
    if base == "BOOL":
        return rng.randint(0, 1)
    if base == "BLOB":
        return bytes(rng.randrange(256) for _ in range(rng.randrange(12)))
    return None


def draw_rows(seed, n, null_pct):
    rng = random.Random(seed)
    words = ["", "a", "k,1", 'say "hi"', "line\nbreak", "é✓", " pad ", "x" * 40]
    rows = []
    for i in range(n):
        row = []
        for name, ctype, _, _ in COLUMNS:
            if name == "id":
                row.append(i)
                continue
            if rng.randrange(100) < null_pct:
                row.append(None)
            elif name == "s_low":
                row.append(rng.choice(words))
            elif name == "s_high":
                row.append("%x-%d" % (rng.getrandbits(40), i) + ("," if i % 7 == 0 else ""))
            else:
                row.append(draw_value(rng, ctype, i))
        rows.append(tuple(row))
    return rows


def expect(row):
    """A source row as the comparison reads DuckDB's."""
    out = []
    for (name, ctype, _, _), v in zip(COLUMNS, row):
        base = ctype.split()[0]
        if v is None:
            out.append(None)
        elif base in RANGES or base == "BOOL":
            out.append(str(v) if base != "BOOL" else v)
        elif base == "BLOB":
            out.append(v.hex().upper())
        else:
            out.append(v)
    return tuple(out)


class ExportTest(DuckTest):
    def make(self, con, rows, table="t", store="t.cst"):
        """src (native) and table (colstore over store) holding rows."""
        cols = ", ".join("%s %s" % (c[0], c[1]) for c in COLUMNS)
        con.execute("DROP TABLE IF EXISTS src")
        con.execute("CREATE TABLE src(%s)" % cols)
        marks = ", ".join("?" * len(COLUMNS))
        con.executemany("INSERT INTO src VALUES (%s)" % marks, rows)
        con.execute("CREATE VIRTUAL TABLE %s USING colstore('%s', %s)" % (table, self.path(store), cols))
        con.execute("INSERT INTO %s SELECT * FROM src ORDER BY id" % table)

    def export(self, con, source, name, *options):
        f = self.path(name)
        args = "".join(", '%s'" % o for o in options + ("progress=off",))
        res = json.loads(con.execute("SELECT colstore_export(?, ?%s)" % args, (source, f)).fetchone()[0])
        self.assertEqual(res["bytes"], os.path.getsize(f))
        return f, res

    def duck_rows(self, f):
        return [tuple(r) for r in self.duck.rows("SELECT %s FROM read_parquet('%s')" %
                                                 (", ".join(c[3] for c in COLUMNS), f))]

    def assertSameRows(self, want, got, what):
        self.assertEqual(len(got), len(want), "%s: %d rows, expected %d (COLSTORE_SEED=%d)" %
                         (what, len(got), len(want), SEED))
        for i, (a, b) in enumerate(zip(want, got)):
            for j, (x, y) in enumerate(zip(a, b)):
                if x != y or type(x) is not type(y) and not (isinstance(x, (int, float)) and x == y):
                    self.fail("%s: row %d column %s: expected %r, read %r (COLSTORE_SEED=%d)" %
                              (what, i, COLUMNS[j][0], x, y, SEED))

    def check_types(self, f, what):
        got = [(r[0], r[1]) for r in self.duck.rows("SELECT column_name, column_type FROM (DESCRIBE "
                                                    "SELECT * FROM read_parquet('%s'))" % f)]
        self.assertEqual(got, [(c[0], c[2]) for c in COLUMNS], what)

    def check_stats(self, f, rows, group_rows, what):
        meta = self.duck.rows("SELECT row_group_id, path_in_schema, stats_min_value, stats_max_value, "
                              "stats_null_count FROM parquet_metadata('%s')" % f)
        self.assertEqual(len(meta), len(COLUMNS) * ((len(rows) + group_rows - 1) // group_rows), what)
        index = {c[0]: j for j, c in enumerate(COLUMNS)}
        for rg, col, lo, hi, nulls in meta:
            j = index[col]
            base = COLUMNS[j][1].split()[0]
            vals = [r[j] for r in rows[int(rg) * group_rows:(int(rg) + 1) * group_rows]]
            live = [v for v in vals if v is not None]
            self.assertEqual(int(nulls), len(vals) - len(live), "%s: %s group %s null count" % (what, col, rg))
            if not live:
                self.assertIsNone(lo, "%s: %s group %s: min of no value" % (what, col, rg))
                continue
            if base in RANGES:
                self.assertEqual((int(lo), int(hi)), (min(live), max(live)), "%s: %s group %s" % (what, col, rg))
            elif base in ("FLOAT32", "FLOAT64"):  # DuckDB prints a FLOAT's shortest text
                conv = f32 if base == "FLOAT32" else float
                self.assertEqual((conv(float(lo)), conv(float(hi))), (min(live), max(live)), "%s: %s group %s" % (what, col, rg))
            elif col == "s_high":
                enc = sorted(v.encode() for v in live)
                self.assertEqual((lo.encode(), hi.encode()), (enc[0], enc[-1]), "%s: %s group %s" % (what, col, rg))

    def test_every_type_codec_and_density(self):
        densities = [0, 10, 50, 95, 100]
        for n, codec in enumerate(("snappy", "zstd", "gzip", "lz4", "none")):
            nulls = densities[n]
            what = "compression=%s nulls=%d%%" % (codec, nulls)
            con = self.connect()
            rows = draw_rows(SEED + n, ROWS, nulls)
            self.make(con, rows, store="t%d.cst" % n)
            f, res = self.export(con, "t", "t%d.parquet" % n, "compression=" + codec, "row_group_rows=1500")
            self.assertEqual(res["rows"], ROWS, what)
            self.assertEqual(res["row_groups"], (ROWS + 1499) // 1500, what)
            self.check_types(f, what)
            self.assertSameRows([expect(r) for r in rows], self.duck_rows(f), what)
            self.check_stats(f, rows, 1500, what)
            want_codec = {"none": "UNCOMPRESSED", "lz4": "LZ4_RAW"}.get(codec, codec.upper())
            codecs = {r[0] for r in self.duck.rows("SELECT DISTINCT compression FROM parquet_metadata('%s')" % f)}
            self.assertEqual(codecs, {want_codec}, what)
            if nulls < 95:  # few distinct values: a dictionary; unique ones: plain
                enc = dict(self.duck.rows("SELECT path_in_schema, any_value(encodings) FROM parquet_metadata('%s') "
                                          "GROUP BY ALL" % f))
                self.assertIn("RLE_DICTIONARY", enc["s_low"], what)
                self.assertNotIn("RLE_DICTIONARY", enc["s_high"], what)
            # colstore_import reads it back into the same types and values
            back = json.loads(con.execute("SELECT colstore_import(?, ?, 'progress=off')",
                                          (self.path("back%d.cst" % n), f)).fetchone()[0])
            self.assertEqual([c["type"] for c in back["columns"]], [c[1].split()[0] for c in COLUMNS], what)
            con.execute("CREATE VIRTUAL TABLE back%d USING colstore('%s')" % (n, self.path("back%d.cst" % n)))
            self.assertEqual(cstest.canon_rows(con.execute("SELECT * FROM back%d" % n).fetchall(), True),
                             cstest.canon_rows(con.execute("SELECT * FROM src ORDER BY id").fetchall(), True), what)

    def test_deleted_rows_are_left_out(self):
        con = self.connect()
        rows = draw_rows(SEED, 3 * cstest.RECORD_ROWS // 2 if not cstest.ASAN else 3000, 20)
        self.make(con, rows)
        con.execute("DELETE FROM t WHERE id % 3 = 0 OR id BETWEEN 100 AND 1200")
        live = [r for r in rows if not (r[0] % 3 == 0 or 100 <= r[0] <= 1200)]
        f, res = self.export(con, "t", "d.parquet", "row_group_rows=20000")
        self.assertEqual(res["rows"], len(live))
        self.assertSameRows([expect(r) for r in live], self.duck_rows(f), "deleted rows")
        self.check_stats(f, live, 20000, "deleted rows")
        # the store's path works as the table name does, threads give the same bytes
        g, _ = self.export(con, self.path("t.cst"), "d4.parquet", "row_group_rows=20000", "threads=4")
        self.assertEqual(cstest.read_bytes(f), cstest.read_bytes(g))

    def test_select_source(self):
        con = self.connect()
        rows = draw_rows(SEED + 7, ROWS, 30)
        self.make(con, rows)
        f, res = self.export(con, "SELECT * FROM src WHERE id % 2 = 1 ORDER BY id", "q.parquet")
        odd = [r for r in rows if r[0] % 2 == 1]
        self.assertEqual(res["rows"], len(odd))
        want = [expect(r) for r in odd]
        # declared types keep the column's colstore type, except that SQLite
        # declares no NOT NULL in a result: id is optional here
        self.assertSameRows(want, self.duck_rows(f), "SELECT from src")
        g, _ = self.export(con, "SELECT * FROM t WHERE id % 2 = 1", "qt.parquet")
        self.assertSameRows(want, self.duck_rows(g), "SELECT from the colstore table")
        # expressions: typed from their values as colstore_create types them
        h, _ = self.export(con, "SELECT id * 2 AS x, id / 4.0 AS y, 'v' || id AS z, NULL AS n FROM src", "e.parquet")
        types = [tuple(r[:2]) for r in self.duck.rows("SELECT column_name, column_type FROM (DESCRIBE SELECT * "
                                                       "FROM read_parquet('%s'))" % h)]
        self.assertEqual(types, [("x", "BIGINT"), ("y", "DOUBLE"), ("z", "VARCHAR"), ("n", "BIGINT")])
        got = self.duck.rows("SELECT CAST(x AS VARCHAR), y, z, n FROM read_parquet('%s')" % h)
        self.assertEqual([tuple(r) for r in got], [(str(2 * r[0]), r[0] / 4.0, "v%d" % r[0], None) for r in rows])
        self.assertSqlError(con, "SELECT colstore_export('SELECT 1; SELECT 2', '%s')" % self.path("x.parquet"),
                            contains=("exactly one SELECT",))
        self.assertFalse(os.path.exists(self.path("x.parquet")))

    def test_csv(self):
        con = self.connect()
        rows = draw_rows(SEED + 3, ROWS, 25)
        self.make(con, rows)
        f, res = self.export(con, "t", "t.csv")
        self.assertNotIn("row_groups", res)
        with open(f, newline="", encoding="utf-8") as fh:
            lines = list(csv.reader(fh))
        self.assertEqual(lines[0], [c[0] for c in COLUMNS])
        self.assertEqual(len(lines), len(rows) + 1)
        for i, (line, row) in enumerate(zip(lines[1:], rows)):
            for (name, ctype, _, _), text, v in zip(COLUMNS, line, row):
                base = ctype.split()[0]
                if v is None or v == "" or v == b"":
                    self.assertEqual(text, "", "row %d %s (COLSTORE_SEED=%d)" % (i, name, SEED))
                    continue
                got = (int(text) if base in RANGES or base == "BOOL" else f32(float(text)) if base == "FLOAT32" else float(text) if base == "FLOAT64"
                       else bytes.fromhex(text) if base == "BLOB" else text)
                self.assertEqual(got, v, "row %d %s (COLSTORE_SEED=%d)" % (i, name, SEED))
        # DuckDB tells NULL (an empty field) from the empty text ("")
        types = ", ".join("'%s': '%s'" % (c[0], "VARCHAR" if c[2] == "BLOB" else c[2]) for c in COLUMNS)
        exprs = ", ".join("upper(bin)" if c[0] == "bin" else c[3] for c in COLUMNS)
        got = self.duck.rows("SELECT %s FROM read_csv('%s', header=true, allow_quoted_nulls=false, columns={%s})" %
                             (exprs, f, types))
        self.assertSameRows([expect(r) for r in rows], [tuple(r) for r in got], "CSV read by DuckDB")
        # and colstore_import reads it back (the BLOB column as its hex text)
        spec = ", ".join("%s %s" % (c[0], "TEXT" if c[0] == "bin" else c[1]) for c in COLUMNS)
        con.execute("SELECT colstore_import(?, ?, 'header=true', ?, 'progress=off')",
                    (self.path("back.cst"), f, "columns=" + spec))
        con.execute("CREATE VIRTUAL TABLE back USING colstore('%s')" % self.path("back.cst"))
        want = [tuple(v.hex().upper() if isinstance(v, bytes) else v for v in r) for r in rows]
        self.assertEqual(cstest.canon_rows(con.execute("SELECT * FROM back").fetchall(), True),
                         cstest.canon_rows(want, True), "CSV read by colstore_import")

    def test_long_text_pages_and_bounds(self):
        # TEXT past 1 MiB a row group: several plain pages; a bound longer
        # than 256 bytes: no min/max (a truncated max would be wrong), the
        # null count still there
        rng = random.Random(SEED + 11)
        con = self.connect()
        con.execute("CREATE VIRTUAL TABLE w USING colstore('%s', k INT64 NOT NULL, s TEXT)" % self.path("w.cst"))
        rows = [(i, None if rng.random() < 0.1 else "".join(rng.choice("abcxyz,\"é") for _ in range(rng.randrange(
            200, 1500)))) for i in range(3000)]
        con.executemany("INSERT INTO w VALUES (?, ?)", rows)
        f, res = self.export(con, "w", "w.parquet", "row_group_rows=2000")
        self.assertEqual(res["row_groups"], 2)
        got = [tuple(r) for r in self.duck.rows("SELECT CAST(k AS VARCHAR), s FROM read_parquet('%s')" % f)]
        self.assertEqual(got, [(str(k), v) for k, v in rows], "COLSTORE_SEED=%d" % SEED)
        meta = self.duck.rows("SELECT row_group_id, stats_min_value, stats_max_value, stats_null_count FROM "
                              "parquet_metadata('%s') WHERE path_in_schema = 's' ORDER BY 1" % f)
        for rg, lo, hi, nulls in meta:
            part = rows[int(rg) * 2000:(int(rg) + 1) * 2000]
            self.assertEqual(int(nulls), sum(v is None for _, v in part))
            self.assertEqual((lo, hi), (None, None))

    def test_atomic_and_errors(self):
        con = self.connect()
        rows = draw_rows(SEED + 5, ROWS, 10)
        self.make(con, rows)
        f, _ = self.export(con, "t", "a.parquet")
        before = cstest.read_bytes(f)
        self.assertSqlError(con, "SELECT colstore_export('t', '%s')" % f, contains=("already exists", "mode=replace"))
        self.assertEqual(cstest.read_bytes(f), before)
        self.export(con, "SELECT id FROM src", "a.parquet", "mode=replace")
        self.assertEqual(self.duck.rows("SELECT count(*), count(DISTINCT id) FROM read_parquet('%s')" % f)[0],
                         [str(ROWS), str(ROWS)])
        # an interrupt leaves no file and no temporary
        for source in ("t", "SELECT * FROM src"):
            con.set_progress_handler(lambda: 1, 1000)
            self.assertSqlError(con, "SELECT colstore_export('%s', '%s', 'row_group_rows=100')" %
                                (source, self.path("i.parquet")), code="SQLITE_INTERRUPT", contains=("interrupted",))
            con.set_progress_handler(None, 0)
            self.assertEqual(sorted(n for n in os.listdir(self.dir) if n.startswith("i.")), [], source)
        self.assertSqlError(con, "SELECT colstore_export('t', '%s')" % self.path("x.json"),
                            contains=(".parquet", ".csv"))
        self.assertSqlError(con, "SELECT colstore_export('t', '%s', 'compression=zstd')" % self.path("x.csv"),
                            contains=("compression=zstd", "none"))
        self.assertSqlError(con, "SELECT colstore_export('t', '%s', 'compression=brotli')" % self.path("x.parquet"),
                            contains=("snappy", "zstd", "gzip", "lz4", "none"))
        self.assertSqlError(con, "SELECT colstore_export('t', '%s', 'row_group_rows=0')" % self.path("x.parquet"),
                            contains=("row_group_rows",))
        self.assertSqlError(con, "SELECT colstore_export('nosuch', '%s')" % self.path("x.parquet"), code=None,
                            contains=("nosuch",))
        self.assertEqual([n for n in os.listdir(self.dir) if n.startswith("x.")], [])


if __name__ == "__main__":
    cstest.main()
