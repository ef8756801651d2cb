"""colstore_import of Parquet files, checked against DuckDB, the real
implementation, as SQL-CONTRACT.md ("Import and export") and docs/sql.md
("Parquet") give it.

DuckDB (npm @duckdb/node-api, installed into $BUILD/duckdb_client as the
benchmarks install it) writes the files: one table of every type colstore
maps (signed and unsigned integers of each width, FLOAT, DOUBLE, BOOLEAN,
VARCHAR of few and of many distinct values, BLOB, DATE, TIME, TIMESTAMP,
TIMESTAMP_NS, UUID), its values drawn from a fixed seed (COLSTORE_SEED, by
DuckDB's own hash of the row number, so the same seed writes the same
file), with NULLs at several densities, written with every codec, page
version 1 and 2, dictionaries on and off, in several row groups.  colstore
imports each file, and the store must equal DuckDB's own read of the same
file value by value: integers compared as exact decimal text, floats as
the same double, dates as days, times and timestamps as integers in the
file's unit, blobs as bytes.  The test also checks which encodings the
files used, so a DuckDB that stopped writing one would be noticed rather
than silently untested.

Projection is checked by damage: the bytes of a column not asked for are
overwritten, and an import of the other columns must still succeed (and
one of all columns must fail naming the damaged one), which it can only do
if the damaged chunk was never read.  The error tests check the message
(file, row group, column, value or type) and that nothing is left behind.

Without node, npm or DuckDB (no network for npm), the test exits 77: SKIP.
"""
import glob
import json
import os
import random
import sqlite3
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402
from duckchild import DuckTest  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = int(os.environ.get("COLSTORE_SEED") or 20261205)
ROWS = cstest.scaled(10000, 3000)


def h(k):
    return "hash(i, %d, %d)" % (SEED, k)


# name, DuckDB type, value expression (from h(k)), the expression DuckDB's
# read of the file is compared through, how to make that Python, colstore type
COLUMNS = [
    ("i8", "TINYINT", "((%s %% 256)::BIGINT - 128)", "CAST(i8 AS VARCHAR)", int, "INT8"),
    ("i16", "SMALLINT", "((%s %% 65536)::BIGINT - 32768)", "CAST(i16 AS VARCHAR)", int, "INT16"),
    ("i32", "INTEGER", "((%s %% 4294967296)::BIGINT - 2147483648)", "CAST(i32 AS VARCHAR)", int, "INT32"),
    ("i64", "BIGINT", "(%s::HUGEINT - 9223372036854775808)", "CAST(i64 AS VARCHAR)", int, "INT64"),
    ("u8", "UTINYINT", "(%s %% 256)", "CAST(u8 AS VARCHAR)", int, "UINT8"),
    ("u16", "USMALLINT", "(%s %% 65536)", "CAST(u16 AS VARCHAR)", int, "UINT16"),
    ("u32", "UINTEGER", "(%s %% 4294967296)", "CAST(u32 AS VARCHAR)", int, "UINT32"),
    ("u64", "UBIGINT", "(%s %% 9223372036854775808)", "CAST(u64 AS VARCHAR)", int, "INT64"),
    ("small", "INTEGER", "(%s %% 7)::BIGINT", "CAST(small AS VARCHAR)", int, "INT32"),
    ("f32", "FLOAT", "((%s %% 2000001)::DOUBLE / 1000 - 1000)", "f32", float, "FLOAT32"),
    ("f64", "DOUBLE", "((%s %% 1000000007)::DOUBLE / 7.0 - 5e7)", "f64", float, "FLOAT64"),
    ("f64_low", "DOUBLE", "((%s %% 10)::DOUBLE / 4)", "f64_low", float, "FLOAT64"),
    ("flag", "BOOLEAN", "(%s %% 2 = 0)", "flag", int, "BOOL"),
    ("s_low", "VARCHAR", "('k' || (%s %% 20)::VARCHAR || 'é')", "s_low", str, "TEXT"),
    ("s_high", "VARCHAR", "(CASE WHEN {h} % 9 = 0 THEN '' ELSE md5(({h} % 1000003)::VARCHAR) || '✓' END)",
     "s_high", str, "TEXT"),
    ("bin", "BLOB", "unhex(substr(md5(%s::VARCHAR), 1, 2 * ({h2} %% 16)::INTEGER))", "hex(bin)", bytes.fromhex,
     "BLOB"),
    ("dt", "DATE", "(DATE '1970-01-01' + ((%s %% 80000)::INTEGER - 40000))",
     "CAST(datediff('day', DATE '1970-01-01', dt) AS VARCHAR)", int, "INT32"),
    ("tm", "TIME", "(TIME '00:00:00' + to_microseconds((%s %% 86400000000)::BIGINT))",
     "CAST(datediff('microsecond', TIME '00:00:00', tm) AS VARCHAR)", int, "INT64"),
    ("ts", "TIMESTAMP", "make_timestamp((%s %% 4000000000000000)::BIGINT - 2000000000000000)",
     "CAST(epoch_us(ts) AS VARCHAR)", int, "INT64"),
    ("tsn", "TIMESTAMP_NS", "make_timestamp((%s %% 4000000000000000)::BIGINT - 2000000000000000)::TIMESTAMP_NS",
     "CAST(epoch_ns(tsn) AS VARCHAR)", int, "INT64"),
    ("uid", "UUID", "md5(%s::VARCHAR)::UUID", "replace(uid::VARCHAR, '-', '')", bytes.fromhex, "BLOB"),
]


def value_sql(k, expr):
    if "{h}" in expr:
        return expr.replace("{h}", h(k))
    return (expr.replace("{h2}", h(k + 50)) % h(k)).replace("%%", "%")


def table_sql(nulls_pct, rows=ROWS, extra=""):
    cols = []
    for k, (name, dtype, expr, _, _, _) in enumerate(COLUMNS):
        v = "CAST(%s AS %s)" % (value_sql(k, expr), dtype)
        cols.append("CASE WHEN %s %% 100 < %d THEN NULL ELSE %s END AS %s" % (h(k + 100), nulls_pct, v, name))
    return "SELECT %s%s FROM range(%d) r(i)" % (", ".join(cols), extra, rows)


class ParquetTest(DuckTest):
    def write(self, name, select, options="", **kw):
        path = self.path(name)
        self.duck.rows("COPY (%s) TO '%s' (FORMAT parquet%s)" % (select, path, options))
        return path

    def expected(self, files, names=None):
        names = names or [c[0] for c in COLUMNS]
        by = {c[0]: c for c in COLUMNS}
        src = "read_parquet([%s])" % ", ".join("'%s'" % f for f in files)
        rows = self.duck.rows("SELECT %s FROM %s" % (", ".join(by[n][3] for n in names), src))
        conv = [by[n][4] for n in names]
        return [tuple(None if v is None else c(v) for c, v in zip(conv, r)) for r in rows]

    def imported(self, store, source, *options):
        con = self.connect()
        args = "".join(", '%s'" % o for o in options + ("progress=off",))
        res = json.loads(con.execute("SELECT colstore_import('%s', '%s'%s)" % (store, source, args)).fetchone()[0])
        con.execute("CREATE VIRTUAL TABLE temp.t USING colstore('%s')" % store)
        rows = [tuple(r) for r in con.execute("SELECT * FROM temp.t ORDER BY rowid")]
        con.execute("DROP TABLE temp.t")
        return res, rows

    def assertSameRows(self, want, got, what):
        self.assertEqual(len(got), len(want), "%s: %d rows, DuckDB read %d (COLSTORE_SEED=%d)" %
                         (what, len(got), len(want), SEED))
        for i, (a, b) in enumerate(zip(want, got)):
            if a != b:
                for j, (x, y) in enumerate(zip(a, b)):
                    if x != y or type(x) is not type(y) and not (isinstance(x, (int, float)) and x == y):
                        self.fail("%s: row %d column %d: colstore %r, DuckDB %r (COLSTORE_SEED=%d)" %
                                  (what, i, j, y, x, SEED))

    def encodings(self, path):
        return {e.strip() for (e,) in self.duck.rows("SELECT encodings FROM parquet_metadata('%s')" % path)
                for e in e.split(",")}

    def test_every_type_codec_page_version_and_density(self):
        seen = set()
        densities = [0, 10, 50, 95, 100]
        n = 0
        for codec in ("uncompressed", "snappy", "gzip", "zstd", "lz4_raw"):
            for version in ("V1", "V2"):
                for dictionary in (True, False):
                    nulls = densities[n % len(densities)]
                    n += 1
                    opts = ", COMPRESSION %s, ROW_GROUP_SIZE 2048, PARQUET_VERSION %s" % (codec, version)
                    if not dictionary:
                        opts += ", DICTIONARY_SIZE_LIMIT 1"
                    what = "%s %s dictionary=%s nulls=%d%%" % (codec, version, dictionary, nulls)
                    f = self.write("t%d.parquet" % n, table_sql(nulls), opts)
                    seen |= self.encodings(f)
                    res, got = self.imported(self.path("t%d.cst" % n), f)
                    self.assertEqual([(c["name"], c["type"]) for c in res["columns"]],
                                     [(c[0], c[5]) for c in COLUMNS], what)
                    self.assertNotIn("delim", res)
                    self.assertSameRows(self.expected([f]), got, what)
                    groups = self.duck.rows("SELECT count(DISTINCT row_group_id) FROM parquet_metadata('%s')" % f)
                    self.assertGreater(int(groups[0][0]), 1, what)
        for enc in ("PLAIN", "RLE_DICTIONARY", "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY",
                    "BYTE_STREAM_SPLIT"):
            self.assertIn(enc, seen, "DuckDB %s wrote no %s page: the test no longer covers it" %
                          (self.duck.version, enc))

    def test_threads_give_the_same_store(self):
        f = self.write("t.parquet", table_sql(20), ", COMPRESSION zstd, ROW_GROUP_SIZE 2048")
        _, one = self.imported(self.path("one.cst"), f)
        _, two = self.imported(self.path("two.cst"), f, "threads=2")
        _, four = self.imported(self.path("four.cst"), f, "threads=4")
        self.assertSameRows(one, two, "threads=2")
        self.assertSameRows(one, four, "threads=4")

    def test_projection_reads_only_the_named_columns(self):
        f = self.write("p.parquet", table_sql(10), ", COMPRESSION snappy, ROW_GROUP_SIZE 2048")
        want = self.expected([f], ["s_high", "i32"])
        # Damage every chunk of column u16 in place.
        chunks = self.duck.rows("SELECT data_page_offset, dictionary_page_offset, total_compressed_size FROM "
                                "parquet_metadata('%s') WHERE path_in_schema = 'u16'" % f)
        data = bytearray(cstest.read_bytes(f))
        for data_off, dict_off, size in chunks:
            start = int(dict_off) if dict_off is not None and 0 < int(dict_off) < int(data_off) else int(data_off)
            data[start:start + int(size)] = b"\xee" * int(size)
        cstest.write_bytes(f, bytes(data))
        res, got = self.imported(self.path("p.cst"), f, "columns=s_high, i32")
        self.assertEqual([c["name"] for c in res["columns"]], ["s_high", "i32"])
        self.assertSameRows(want, got, "columns=s_high,i32")
        con = self.connect()
        self.assertSqlError(con, "SELECT colstore_import('%s', '%s', 'progress=off')" % (self.path("all.cst"), f),
                            code=None, contains=("p.parquet", "row group 0", "column u16"))
        self.assertFalse(os.path.exists(self.path("all.cst")))

    def test_glob_directory_and_modes(self):
        d = self.path("parts")
        os.mkdir(d)
        files = []
        for k in range(3):
            files.append(os.path.join(d, "part%d.parquet" % k))
            self.duck.rows("COPY (%s) TO '%s' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 2048)" %
                           (table_sql(10 * k, rows=3000 + k, extra=", %d AS part" % k), files[-1]))
        names = [c[0] for c in COLUMNS]
        want = self.expected(files, names)
        for source in (d, os.path.join(d, "*.parquet")):
            store = self.path("g.cst")
            res, got = self.imported(store, source, "mode=replace", "columns=" + ",".join(names))
            self.assertEqual(res["files"], files)
            self.assertEqual(res["rows"], 9003)
            self.assertSameRows(want, got, source)
        # append: the store's rows, then the file's
        res, got = self.imported(self.path("g.cst"), files[0], "mode=append", "columns=" + ",".join(names))
        self.assertSameRows(want + self.expected(files[:1], names), got, "append")
        con = self.connect()
        # A store of other columns refuses the append, and is left as it was.
        before = cstest.read_bytes(self.path("g.cst"))
        self.assertSqlError(con, "SELECT colstore_import('%s', '%s', 'mode=append', 'columns=i8,i16', "
                            "'progress=off')" % (self.path("g.cst"), files[0]), code=None,
                            contains=("g.cst", "columns"))
        self.assertEqual(before, cstest.read_bytes(self.path("g.cst")))
        self.assertSqlError(con, "SELECT colstore_import('%s', '%s', 'progress=off')" % (self.path("g.cst"), files[0]),
                            code=None, contains=("already exists", "mode=replace"))
        # Files of different columns: the error names the file and column.
        other = os.path.join(d, "zz.parquet")
        self.duck.rows("COPY (SELECT 1::INTEGER AS i8) TO '%s' (FORMAT parquet)" % other)
        msg = self.assertSqlError(con, "SELECT colstore_import('%s', '%s', 'progress=off')" % (self.path("x.cst"), d),
                                  code=None, contains=("zz.parquet",))
        self.assertRegex(msg, "column (i8|i16)")
        self.assertFalse(os.path.exists(self.path("x.cst")))
        self.assertEqual([], glob.glob(self.path("x.cst*")))

    def test_errors_name_file_row_group_column_and_value(self):
        con = self.connect()

        def fails(select, contains, options=""):
            f = self.write("e.parquet", select, options)
            store = self.path("e.cst")
            msg = self.assertSqlError(con, "SELECT colstore_import('%s', '%s', 'progress=off')" % (store, f),
                                      code=None, contains=("e.parquet",) + contains)
            self.assertEqual([], glob.glob(store + "*"), "a failed import left files")
            return msg

        fails("SELECT i::UBIGINT + 18446744073709551000 AS big FROM range(10) r(i)",
              ("column big", "18446744073709551000", "INT64"))
        fails("SELECT 1.5::DECIMAL(10, 2) AS price", ("column price", "DECIMAL(10, 2)"))
        fails("SELECT [1, 2] AS tags", ("column tags", "nested"))
        fails("SELECT {'a': 1} AS s", ("column s", "nested"))
        # A projection leaves an unsupported column out.
        f = self.write("ok.parquet", "SELECT 1.5::DECIMAL(10, 2) AS price, 7 AS n")
        res, got = self.imported(self.path("ok.cst"), f, "columns=n")
        self.assertEqual(got, [(7,)])
        self.assertSqlError(con, "SELECT colstore_import('%s', '%s', 'columns=nope', 'progress=off')" %
                            (self.path("n.cst"), f), code=None, contains=("no column nope",))
        for opt in ("header=true", "delim=;", "nulls=NA", "on_error=skip"):
            self.assertSqlError(con, "SELECT colstore_import('%s', '%s', '%s', 'progress=off')" %
                                (self.path("n.cst"), f, opt), code=None,
                                contains=(opt.split("=")[0] + "=", "delimited text only"))
        # A file cut short, and bytes that are not Parquet.
        good = self.write("cut.parquet", table_sql(10), ", COMPRESSION snappy")
        data = cstest.read_bytes(good)
        rng = random.Random(SEED)
        for cut in [len(data) // 2, len(data) - 1, 100] + [rng.randrange(len(data)) for _ in range(5)]:
            cstest.write_bytes(good, data[:cut])
            self.assertSqlError(con, "SELECT colstore_import('%s', '%s', 'progress=off')" % (self.path("c.cst"), good),
                                code=None, contains=("cut.parquet",))
            self.assertEqual([], glob.glob(self.path("c.cst*")))
        # Damaged bytes inside the data: an error or (rarely) other values, never a crash.
        for k in range(20):
            bad = bytearray(data)
            for _ in range(8):
                bad[rng.randrange(4, len(bad) - 8)] = rng.randrange(256)
            cstest.write_bytes(good, bytes(bad))
            try:
                con.execute("SELECT colstore_import('%s', '%s', 'mode=replace', 'progress=off')" %
                            (self.path("c.cst"), good)).fetchone()
            except sqlite3.Error as e:
                self.assertTrue(str(e).startswith("colstore:"), str(e))

    def test_format_option(self):
        f = self.write("data.bin", "SELECT i::INTEGER AS n FROM range(5000) r(i)")
        res, got = self.imported(self.path("f.cst"), f, "format=parquet")
        self.assertEqual(got, [(i,) for i in range(5000)])


if __name__ == "__main__":
    unittest.main(verbosity=2)
