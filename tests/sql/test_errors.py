"""Errors and conversions, as docs/sql.md ("Errors") gives them.

Every failure must be an SQLite error whose message starts `colstore:` and
says what was wrong; where the contract names an error code, the code is
checked through Python 3.11's sqlite_errorname.  After every failing write
the test proves that committed data did not change: the rows (with their
rowids) and, where there is a file, its bytes.

Conversions that succeed are checked against a native column of the same
affinity: the value read back must have the same storage class and bits.
"""
import os
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402

ALL_TYPES = "a INT8, b INT16, c INT32, d INT64, e UINT8, f UINT16, g UINT32, h FLOAT32, i FLOAT64, j BOOL, k TEXT, l BLOB"


class WriteErrors(cstest.StoreTest):
    """Bad values, NOT NULL, UPDATE and explicit rowids: an error, and nothing changes."""

    def setUp(self):
        super().setUp()
        self.con = self.connect()
        self.p = self.path("w.cst")
        self.con.execute("CREATE VIRTUAL TABLE w USING colstore('%s', %s, n INT32 NOT NULL)" % (self.p, ALL_TYPES))
        self.con.execute("INSERT INTO w VALUES (1, 2, 3, 4, 5, 6, 7, 0.5, 1.5, 1, 'x', x'00', 9), "
                         "(-1, -2, -3, -4, 0, 0, 0, -0.5, -1.5, 0, '', x'', 10)")
        self.before = self.state(self.con, "w", self.p)

    def bad_insert(self, col, value, code, *contains):
        """INSERT of `value` into column `col` (others valid) fails with code."""
        row = {"a": 1, "b": 1, "c": 1, "d": 1, "e": 1, "f": 1, "g": 1, "h": 1.0, "i": 1.0, "j": 1, "k": "t",
               "l": b"b", "n": 1}
        row[col] = value
        cols = list(row)
        sql = "INSERT INTO w (%s) VALUES (%s)" % (", ".join(cols), ", ".join("?" for _ in cols))
        msg = self.assertSqlError(self.con, sql, tuple(row[c] for c in cols), code=code, contains=contains)
        self.assertStateUnchanged(self.before, self.con, "w", self.p, "INSERT of %r into %s" % (value, col))
        # The literal form goes through the same door.
        sql = "INSERT INTO w (%s) VALUES (%s)" % (", ".join(cols), ", ".join(cstest.sql_literal(row[c]) for c in cols))
        self.assertSqlError(self.con, sql, code=code, contains=contains)
        self.assertStateUnchanged(self.before, self.con, "w", self.p, "literal INSERT of %r into %s" % (value, col))
        return msg

    def test_text_abc_into_int32_is_mismatch_naming_column_type_and_value(self):
        self.bad_insert("c", "abc", "SQLITE_MISMATCH", "c", "INT32", "abc")

    def test_300_into_int8_is_mismatch_naming_column_type_and_value(self):
        self.bad_insert("a", 300, "SQLITE_MISMATCH", "a", "INT8", "300")

    def test_2_5_into_int64_is_mismatch_naming_column_type_and_value(self):
        self.bad_insert("d", 2.5, "SQLITE_MISMATCH", "d", "INT64", "2.5")

    def test_out_of_range_integers_are_mismatch_for_every_width(self):
        cases = [("a", -129, "INT8"), ("a", 128, "INT8"), ("b", 32768, "INT16"), ("b", -32769, "INT16"),
                 ("c", 2**31, "INT32"), ("c", -2**31 - 1, "INT32"), ("e", -1, "UINT8"), ("e", 256, "UINT8"),
                 ("f", 65536, "UINT16"), ("f", -1, "UINT16"), ("g", 2**32, "UINT32"), ("g", -1, "UINT32"),
                 ("j", 2, "BOOL"), ("j", -1, "BOOL"), ("n", 2**31, "INT32")]
        for col, v, ty in cases:
            with self.subTest(col=col, value=v):
                self.bad_insert(col, v, "SQLITE_MISMATCH", "w.%s" % col, ty, str(v))

    def test_values_that_do_not_fit_are_mismatch(self):
        cases = [("d", 2.0**63, "INT64"), ("d", float("inf"), "INT64"), ("d", "9223372036854775808", "INT64"),
                 ("d", "1.5", "INT64"), ("d", b"\x01", "INT64"), ("d", "", "INT64"), ("c", "0x10", "INT32"),
                 ("a", 0.5, "INT8"), ("j", 0.5, "BOOL"), ("j", "yes", "BOOL"),
                 ("i", "abc", "FLOAT64"), ("i", b"\x00", "FLOAT64"), ("i", "", "FLOAT64"),
                 ("h", 1e39, "FLOAT32"), ("h", -1e39, "FLOAT32"), ("h", "x", "FLOAT32"),
                 ("k", b"\x00abc", "TEXT"), ("l", "text", "BLOB"), ("l", 5, "BLOB"), ("l", 1.5, "BLOB")]
        for col, v, ty in cases:
            with self.subTest(col=col, value=v):
                self.bad_insert(col, v, "SQLITE_MISMATCH", "w.%s" % col, ty)

    def test_null_into_not_null_is_constraint_notnull_naming_the_column(self):
        self.bad_insert("n", None, "SQLITE_CONSTRAINT_NOTNULL", "w.n")
        # Omitting the column gives it NULL too.
        self.assertSqlError(self.con, "INSERT INTO w (a) VALUES (1)", code="SQLITE_CONSTRAINT_NOTNULL", contains=("n",))
        self.assertStateUnchanged(self.before, self.con, "w", self.p, "INSERT without the NOT NULL column")

    def test_update_of_rowid_or_with_bad_values_is_refused(self):
        for sql, code in (("UPDATE w SET rowid = 5 WHERE rowid = 0", "SQLITE_ERROR"),
                          ("UPDATE w SET rowid = rowid + 1", "SQLITE_ERROR"),
                          ("UPDATE w SET a = 'abc' WHERE rowid = 1", "SQLITE_MISMATCH"),
                          ("UPDATE w SET n = NULL", "SQLITE_CONSTRAINT_NOTNULL")):
            with self.subTest(sql=sql):
                self.assertSqlError(self.con, sql, code=code)
                self.assertStateUnchanged(self.before, self.con, "w", self.p, sql)

    def test_explicit_rowid_is_refused(self):
        for sql in ("INSERT INTO w (rowid, a, n) VALUES (2, 1, 1)", "INSERT INTO w (rowid, a, n) VALUES (99, 1, 1)",
                    "INSERT INTO w (rowid, a, n) VALUES (0, 1, 1)", "REPLACE INTO w (rowid, a, n) VALUES (0, 1, 1)",
                    "INSERT INTO w (rowid, a, n) SELECT 5, 1, 1"):
            with self.subTest(sql=sql):
                self.assertSqlError(self.con, sql, contains=("rowid", "row position", "omit the rowid"))
                self.assertStateUnchanged(self.before, self.con, "w", self.p, sql)

    def test_inserting_hidden_selection_columns_is_refused(self):
        self.assertSqlError(self.con, "INSERT INTO w (a, n, _rows) VALUES (1, 1, x'0000000000000000')",
                            contains=("_rows",))
        self.assertSqlError(self.con, "INSERT INTO w (a, n, _mask) VALUES (1, 1, x'01')", contains=("_mask",))
        self.assertStateUnchanged(self.before, self.con, "w", self.p, "INSERT into a hidden column")

    def test_failed_multi_row_insert_keeps_none_of_its_rows(self):
        self.assertSqlError(self.con, "INSERT INTO w (a, n) VALUES (1, 1), (2, 2), (300, 3)", code="SQLITE_MISMATCH")
        self.assertStateUnchanged(self.before, self.con, "w", self.p, "a multi-row INSERT with a bad last row")
        # And the table still takes good rows afterwards.
        self.con.execute("INSERT INTO w (a, n) VALUES (1, 1)")
        self.assertEqual(self.con.execute("SELECT count(*) FROM w").fetchone()[0], 3)


class Conversions(cstest.StoreTest):
    """Values that fit are converted as a native column of that affinity would."""

    # colstore type, native declared type, values
    CASES = [
        ("INT8", "INTEGER", [3.0, "12", " 12 ", "-128", 127, -128, "1e2", -0.0, "+5", 1e2]),
        ("INT16", "INTEGER", [32767, -32768, "32767", 100.0]),
        ("INT32", "INTEGER", [2**31 - 1, -2**31, "2147483647", 1e9, "-7.0"]),
        ("INT64", "INTEGER", [2**63 - 1, -2**63, "9223372036854775807", "-9223372036854775808",
                              9.007199254740992e15, "3.0", 1.0]),
        ("UINT8", "INTEGER", [0, 255, "255", 7.0]),
        ("UINT16", "INTEGER", [65535, "65535"]),
        ("UINT32", "INTEGER", [2**32 - 1, "4294967295", 4294967295.0]),
        ("BOOL", "INTEGER", [0, 1, "1", 1.0, "0", 0.0]),
        ("FLOAT64", "REAL", [1, -1, 2**63 - 1, -2**63, 2**53 + 1, "1.5", " 2.5 ", "1e308", 5e-324, 1e308,
                             float("inf"), float("-inf"), "12", 0.1]),
        ("FLOAT32", "REAL", [1, -3, 0.5, 2.0**-149, 3.4028234663852886e38, "0.25", float("inf"), 16777216]),
        ("TEXT", "TEXT", ["", "abc", "日本語😀", 1, -5, 1.5, 0.1, 1e20, 2**63 - 1, 1e-5, "a\x00b", 100.0]),
        ("BLOB", "BLOB", [b"", b"\x00\xff", bytes(range(256))]),
    ]

    def test_accepted_values_read_back_as_a_native_column_gives_them(self):
        con = self.connect()
        for i, (ty, native, values) in enumerate(self.CASES):
            con.execute("CREATE TABLE n%d (v %s)" % (i, native))
            con.execute("CREATE VIRTUAL TABLE c%d USING colstore('%s', v %s)" % (i, self.path("c%d.cst" % i), ty))
            for v in values:
                for t in ("n%d" % i, "c%d" % i):
                    con.execute("INSERT INTO %s VALUES (?)" % t, (v,))
                    if not (isinstance(v, str) and "\x00" in v):  # SQL text cannot hold a NUL
                        con.execute("INSERT INTO %s VALUES (%s)" % (t, cstest.sql_literal(v)))
            want = con.execute("SELECT v, typeof(v) FROM n%d ORDER BY rowid" % i).fetchall()
            got = con.execute("SELECT v, typeof(v) FROM c%d ORDER BY rowid" % i).fetchall()
            if ty == "FLOAT32":  # stored narrowed; every value above is exact in float
                want = [(struct.unpack("<f", struct.pack("<f", v))[0], t) for v, t in want]
            self.assertEqual(cstest.canon_rows(got, True), cstest.canon_rows(want, True),
                             "type %s, values %r" % (ty, values))

    def test_integral_real_at_int64_limit_becomes_an_integer(self):
        # A native INTEGER column keeps -2^63 given as a REAL as a REAL (SQLite
        # ticket #3922 excludes the extremes); the contract says an integral
        # float that fits becomes an integer, and -2^63 fits.
        con = self.connect()
        con.execute("CREATE VIRTUAL TABLE c USING colstore('%s', v INT64)" % self.path("m.cst"))
        con.execute("INSERT INTO c VALUES (?), (-9.223372036854775808e18)", (-9.223372036854775808e18,))
        self.assertEqual(con.execute("SELECT v, typeof(v) FROM c").fetchall(), [(-2**63, "integer")] * 2)
        self.assertSqlError(con, "INSERT INTO c VALUES (9.223372036854775808e18)", code="SQLITE_MISMATCH")

    def test_bool_reads_back_as_integer_zero_or_one(self):
        con = self.connect()
        con.execute("CREATE VIRTUAL TABLE c USING colstore('%s', v BOOL)" % self.path("b.cst"))
        con.execute("INSERT INTO c VALUES (1), (0), (NULL), ('1'), (0.0)")
        self.assertEqual(con.execute("SELECT v, typeof(v) FROM c").fetchall(),
                         [(1, "integer"), (0, "integer"), (None, "null"), (1, "integer"), (0, "integer")])


class CreateErrors(cstest.StoreTest):
    """CREATE VIRTUAL TABLE: missing stores, bad definitions, bad options."""

    def test_missing_path_without_definitions_is_an_error_and_creates_nothing(self):
        con = self.connect()
        p = self.path("missing.cst")
        self.assertSqlError(con, "CREATE VIRTUAL TABLE m USING colstore('%s')" % p, code=None, contains=(p,))
        self.assertFalse(os.path.exists(p))
        self.assertEqual(con.execute("SELECT count(*) FROM sqlite_master WHERE name = 'm'").fetchone()[0], 0)

    def test_no_source_is_an_error(self):
        con = self.connect()
        self.assertSqlError(con, "CREATE VIRTUAL TABLE m USING colstore")
        self.assertSqlError(con, "CREATE VIRTUAL TABLE m USING colstore()")

    def test_unknown_type_name_is_an_error_naming_it(self):
        con = self.connect()
        for d in ("a INT128", "a TEXTUAL", "a", "a FLOAT16 NOT NULL", "a INT64 NOT", "a NOT NULL", "a INT8 NULL"):
            with self.subTest(definition=d):
                p = self.path("t.cst")
                self.assertSqlError(con, "CREATE VIRTUAL TABLE t USING colstore('%s', %s)" % (p, d), contains=(d,))
                self.assertFalse(os.path.exists(p), "a failed CREATE left a store behind: %s" % d)

    def test_every_type_and_alias_is_accepted(self):
        con = self.connect()
        aliases = {"INTEGER": "INT64", "INT": "INT64", "BIGINT": "INT64", "REAL": "FLOAT64", "DOUBLE": "FLOAT64",
                   "FLOAT": "FLOAT64", "BOOLEAN": "BOOL", "VARCHAR(30)": "TEXT", "CHAR(3)": "TEXT", "STRING": "TEXT",
                   "varchar(10)": "TEXT", "integer": "INT64"}
        for t in ("INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "FLOAT32", "FLOAT64", "BOOL",
                  "TEXT", "BLOB"):
            aliases[t] = t
        defs = ", ".join("c%d %s%s" % (i, t, " NOT NULL" if i % 2 else "") for i, t in enumerate(aliases))
        con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', %s)" % (self.path("all.cst"), defs))
        cols = self.info(con, "t")["columns"]
        self.assertEqual([c["type"] for c in cols], list(aliases.values()))
        self.assertEqual([c["nullable"] for c in cols], [i % 2 == 0 for i in range(len(aliases))])
        affinity = {"INT8": "INTEGER", "INT16": "INTEGER", "INT32": "INTEGER", "INT64": "INTEGER", "UINT8": "INTEGER",
                    "UINT16": "INTEGER", "UINT32": "INTEGER", "BOOL": "INTEGER", "FLOAT32": "REAL",
                    "FLOAT64": "REAL", "TEXT": "TEXT", "BLOB": "BLOB"}
        declared = [(r[1], r[2]) for r in con.execute("PRAGMA table_info(t)")]
        self.assertEqual(declared, [("c%d" % i, affinity[t]) for i, t in enumerate(aliases.values())])

    def test_duplicate_and_reserved_column_names_are_errors(self):
        con = self.connect()
        p = self.path("d.cst")
        self.assertSqlError(con, "CREATE VIRTUAL TABLE t USING colstore('%s', a INT8, A INT16)" % p, contains=("A",))
        for name in ("_rows", "_mask", "rowid"):
            self.assertSqlError(con, "CREATE VIRTUAL TABLE t USING colstore('%s', %s INT8)" % (p, name),
                                contains=(name,))
        self.assertFalse(os.path.exists(p))

    def test_bad_verify_option_is_an_error_listing_the_valid_ones(self):
        con = self.connect()
        p = self.path("v.cst")
        con.execute("SELECT colstore_create(?, 'SELECT 1 AS a')", (p,))
        for opt in ("verify=bogus", "verify=", "verify=headers", "verifyy=full", "foo=bar"):
            with self.subTest(option=opt):
                self.assertSqlError(con, "CREATE VIRTUAL TABLE t USING colstore('%s', %s)" % (p, opt),
                                    contains=("verify=header", "verify=full"))
        for opt in ("verify=header", "verify=full"):
            con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', %s)" % (p, opt))
            self.assertEqual(con.execute("SELECT a FROM t").fetchall(), [(1,)])
            con.execute("DROP TABLE t")

    def test_schema_mismatch_names_the_difference(self):
        con = self.connect()
        p = self.path("s.cst")
        con.execute("CREATE VIRTUAL TABLE s USING colstore('%s', x INT64, y TEXT NOT NULL, z FLOAT32)" % p)
        con.execute("INSERT INTO s VALUES (1, 'a', 0.5)")
        con.execute("DROP TABLE s")
        data = cstest.read_bytes(p)
        cases = [
            ("x INT64, y TEXT NOT NULL, z FLOAT64", ("z", "FLOAT32", "FLOAT64")),
            ("x INT32, y TEXT NOT NULL, z FLOAT32", ("x", "INT64", "INT32")),
            ("x INT64, yy TEXT NOT NULL, z FLOAT32", ("y", "yy")),
            ("x INT64, y TEXT, z FLOAT32", ("y", "NOT NULL")),
            ("x INT64, y TEXT NOT NULL", ("3", "2")),
            ("x INT64, y TEXT NOT NULL, z FLOAT32, w INT8", ("3", "4")),
            ("z FLOAT32, x INT64, y TEXT NOT NULL", ("x", "z")),
        ]
        for defs, names in cases:
            with self.subTest(defs=defs):
                self.assertSqlError(con, "CREATE VIRTUAL TABLE s2 USING colstore('%s', %s)" % (p, defs),
                                    contains=names)
                self.assertEqual(cstest.read_bytes(p), data, "a refused CREATE changed the store")
        # The exact definitions, and aliases of them, match.
        con.execute("CREATE VIRTUAL TABLE s3 USING colstore('%s', x BIGINT, y STRING NOT NULL, z FLOAT32)" % p)
        self.assertEqual(con.execute("SELECT * FROM s3").fetchall(), [(1, "a", 0.5)])


class FileErrors(cstest.StoreTest):
    """Files that are not stores, truncated stores, flipped bytes."""

    def make_store(self, name="good.cst"):
        con = self.connect()
        p = self.path(name)
        # Recognisable values: INT64 0x0102030405060700 + i, TEXT of 5 bytes each.
        con.execute("CREATE VIRTUAL TABLE g USING colstore('%s', i INT64, s TEXT)" % p)
        con.execute("INSERT INTO g VALUES (72623859790382848, 'aaaaa'), (72623859790382849, 'bbbbb'), "
                    "(72623859790382850, 'ccccc'), (72623859790382851, 'ddddd')")
        con.execute("DROP TABLE g")
        return p, cstest.read_bytes(p)

    def open_fails(self, con, p, code, verify="", contains=()):
        opt = ", verify=%s" % verify if verify else ""
        self.assertSqlError(con, "CREATE VIRTUAL TABLE bad USING colstore('%s'%s)" % (p, opt), code=code,
                            contains=contains)
        self.assertEqual(con.execute("SELECT count(*) FROM sqlite_master WHERE name = 'bad'").fetchone()[0], 0)

    def test_a_file_that_is_not_a_store_is_notadb(self):
        con = self.connect()
        samples = {"text.cst": b"hello, world\n" * 200, "empty.cst": b"", "zeros.cst": bytes(4096),
                   "short.cst": b"\x89CS"}
        sq = self.path("real.db")
        n = sqlite3.connect(sq)
        n.execute("CREATE TABLE t(a)")
        n.commit()
        n.close()
        for name, data in samples.items():
            cstest.write_bytes(self.path(name), data)
        for name in list(samples) + ["real.db"]:
            with self.subTest(file=name):
                p = self.path(name)
                before = cstest.read_bytes(p)
                self.open_fails(con, p, "SQLITE_NOTADB", contains=(p,))
                self.assertSqlError(con, "SELECT colstore_info(?)", (p,), code="SQLITE_NOTADB")
                self.assertSqlError(con, "SELECT colstore_verify(?)", (p,), code="SQLITE_NOTADB")
                self.assertEqual(cstest.read_bytes(p), before, "opening a non-store changed it")

    def test_a_truncated_store_is_corrupt_at_open(self):
        p, data = self.make_store()
        con = self.connect()
        data_offset = struct.unpack_from("<Q", data, 32)[0]
        cuts = [64, 100, 600, 1540, data_offset, data_offset + 1, data_offset + 64, (data_offset + len(data)) // 2,
                data_offset + 300]
        for cut in cuts:
            with self.subTest(bytes_kept=cut):
                t = self.path("trunc%d.cst" % cut)
                cstest.write_bytes(t, data[:cut])
                self.open_fails(con, t, "SQLITE_CORRUPT", contains=(t,))
                self.assertSqlError(con, "SELECT colstore_info(?)", (t,), code="SQLITE_CORRUPT")
                self.assertSqlError(con, "SELECT colstore_verify(?)", (t,), code="SQLITE_CORRUPT")

    def test_a_store_truncated_inside_its_preamble_is_corrupt_not_notadb(self):
        # The magic is intact, so the file is a damaged store, not a foreign file.
        p, data = self.make_store()
        con = self.connect()
        for cut in (16, 32, 63):
            with self.subTest(bytes_kept=cut):
                t = self.path("pre%d.cst" % cut)
                cstest.write_bytes(t, data[:cut])
                self.open_fails(con, t, "SQLITE_CORRUPT", contains=(t,))

    def test_a_flipped_header_byte_is_corrupt_at_open(self):
        p, data = self.make_store()
        con = self.connect()
        # preamble fields after the magic, and the schema block
        for off in (9, 20, 40, 56, 1540, 1545):
            with self.subTest(offset=off):
                b = bytearray(data)
                b[off] ^= 0x10
                t = self.path("flip%d.cst" % off)
                cstest.write_bytes(t, b)
                self.open_fails(con, t, "SQLITE_CORRUPT")
                self.open_fails(con, t, "SQLITE_CORRUPT", verify="full")
                self.assertSqlError(con, "SELECT colstore_verify(?)", (t,), code="SQLITE_CORRUPT")

    def test_a_flipped_data_byte_is_found_by_verify_full_and_colstore_verify(self):
        p, data = self.make_store()
        con = self.connect()
        values = struct.pack("<4q", 72623859790382848, 72623859790382849, 72623859790382850, 72623859790382851)
        off = data.find(values)
        self.assertGreater(off, 0, "test setup: INT64 values not found in the store")
        b = bytearray(data)
        b[off + 9] ^= 0x04  # second value's second byte
        t = self.path("flipdata.cst")
        cstest.write_bytes(t, b)
        self.open_fails(con, t, "SQLITE_CORRUPT", verify="full", contains=("record 0", "column i"))
        msg = self.assertSqlError(con, "SELECT colstore_verify(?)", (t,), code="SQLITE_CORRUPT",
                                  contains=(t, "record 0", "column i"))
        self.assertNotIn("column s", msg)
        # verify=header is O(1): it opens, and colstore_verify on the table finds the damage.
        con.execute("CREATE VIRTUAL TABLE h USING colstore('%s', verify=header)" % t)
        self.assertSqlError(con, "SELECT colstore_verify('h')", code="SQLITE_CORRUPT", contains=("column i",))
        # An undamaged copy verifies.
        self.assertEqual(con.execute("SELECT colstore_verify(?)", (p,)).fetchone()[0], "ok")

    def test_damaged_text_offsets_are_corrupt_at_the_read_never_a_crash(self):
        p, data = self.make_store()
        con = self.connect()
        good = struct.pack("<5q", 0, 5, 10, 15, 20)
        off = data.find(good)
        self.assertGreater(off, 0, "test setup: TEXT offsets not found in the store")
        bad_offsets = {"huge": (0, 5, 1 << 40, 15, 20), "decreasing": (0, 5, 3, 15, 20), "negative": (0, -5, 10, 15, 20),
                       "past_end": (0, 5, 10, 15, 1 << 20), "bad_start": (7, 5, 10, 15, 20),
                       "min_int": (0, -2**63, 10, 15, 20)}
        for label, offs in bad_offsets.items():
            with self.subTest(damage=label):
                b = bytearray(data)
                b[off:off + 40] = struct.pack("<5q", *offs)
                t = self.path("off_%s.cst" % label)
                cstest.write_bytes(t, b)
                con.execute("CREATE VIRTUAL TABLE o USING colstore('%s')" % t)
                self.assertSqlError(con, "SELECT s FROM o", code="SQLITE_CORRUPT")
                self.assertSqlError(con, "SELECT count(DISTINCT s) FROM o", code="SQLITE_CORRUPT")
                # the undamaged column still reads
                self.assertEqual(con.execute("SELECT count(i) FROM o").fetchone()[0], 4)
                self.assertSqlError(con, "SELECT colstore_verify('o')", code="SQLITE_CORRUPT", contains=("column s",))
                con.execute("DROP TABLE o")
                self.open_fails(con, t, "SQLITE_CORRUPT", verify="full")

    def test_store_deleted_under_a_table_gives_an_error_not_a_crash(self):
        con = self.connect()
        p = self.path("gone.cst")
        con.execute("CREATE VIRTUAL TABLE g USING colstore('%s', a INT8)" % p)
        con.execute("INSERT INTO g VALUES (1)")
        os.remove(p)
        # The open snapshot may still serve the committed row; a write must fail cleanly.
        try:
            con.execute("SELECT * FROM g").fetchall()
        except sqlite3.Error as e:
            self.assertTrue(str(e).startswith("colstore:"), str(e))
        self.assertSqlError(con, "INSERT INTO g VALUES (2)", code=None, contains=(p,))
        self.assertFalse(os.path.exists(p), "a failed INSERT re-created the deleted store")

    def test_an_empty_file_given_definitions_becomes_the_store(self):
        """As SQLite makes a database of an empty file, CREATE VIRTUAL TABLE
        with column definitions makes a store of a 0-byte file; without
        definitions it stays SQLITE_NOTADB (test above)."""
        con = self.connect()
        p = self.path("touched.cst")
        cstest.write_bytes(p, b"")
        os.chmod(p, 0o640)
        con.execute("CREATE VIRTUAL TABLE e USING colstore('%s', a INT64, b TEXT)" % p)
        self.assertEqual(os.stat(p).st_mode & 0o777, 0o640, "the store takes the empty file's mode")
        con.execute("INSERT INTO e VALUES (1, 'x'), (2, NULL)")
        self.assertEqual(con.execute("SELECT rowid, a, b FROM e").fetchall(), [(0, 1, "x"), (1, 2, None)])
        self.assertEqual(con.execute("SELECT colstore_verify('e')").fetchone()[0], "ok")
        self.assertGreater(os.path.getsize(p), 0)
        # A file with bytes in it is never taken over, definitions or not.
        q = self.path("notes.cst")
        cstest.write_bytes(q, b"my notes\n")
        self.assertSqlError(con, "CREATE VIRTUAL TABLE n USING colstore('%s', a INT64)" % q, code=None, contains=(q,))
        self.assertEqual(cstest.read_bytes(q), b"my notes\n")

    def test_a_relative_store_reopened_from_elsewhere_says_where_it_looked(self):
        """A table saved in a database file with a relative store path, the
        database opened from another directory: the error gives the path as
        written, where it was looked for, and suggests an absolute path."""
        here = os.getcwd()
        try:
            os.chdir(self.dir)
            con = cstest.connect(self.path("saved.db"))
            con.execute("CREATE VIRTUAL TABLE r USING colstore('rel.cst', a INT64)")
            con.execute("INSERT INTO r VALUES (7)")
            con.commit()
            con.close()
            os.mkdir(self.path("elsewhere"))
            os.chdir(self.path("elsewhere"))
            con = self.connect("saved.db")
            msg = self.assertSqlError(con, "SELECT * FROM r", code=None,
                                      contains=("'rel.cst'", "relative path", os.path.join(self.path("elsewhere"), "rel.cst"),
                                                "absolute path", "DROP TABLE r"))
            self.assertIn("table r", msg)
        finally:
            os.chdir(here)

    def test_a_write_to_a_store_without_write_permission_says_so(self):
        """DELETE (and INSERT, UPDATE) on a store the user may read but not
        write: SQLITE_IOERR naming the file and the permission needed, not
        'cannot open for appending'.  Root writes anything, so as root a
        child process drops to nobody after loading the module."""
        d = tempfile.mkdtemp(prefix="colstore-ro-")
        try:
            os.chmod(d, 0o755)
            p = os.path.join(d, "ro.cst")
            con = cstest.connect()
            con.execute("SELECT colstore_create(?, 'SELECT 1 AS a UNION ALL SELECT 2')", (p,)).fetchall()
            con.close()
            os.chmod(p, 0o444)
            before = cstest.read_bytes(p)
            script = """
import os, sqlite3, sys
con = sqlite3.connect(":memory:", isolation_level=None)
con.enable_load_extension(True)
con.load_extension(sys.argv[1])
if os.getuid() == 0:
    os.setgid(65534)
    os.setuid(65534)
con.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % sys.argv[2])
for sql in ("DELETE FROM t WHERE a = 1", "INSERT INTO t VALUES (3)", "UPDATE t SET a = 5"):
    try:
        con.execute(sql)
        print("no error:", sql)
    except sqlite3.Error as e:
        print(getattr(e, "sqlite_errorname", "?"), str(e))
print(con.execute("SELECT group_concat(a) FROM t").fetchone()[0])
"""
            out = subprocess.run([cstest.PYTHON, "-c", script, cstest.MODULE, p], stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, timeout=120, env=cstest.child_env()).stdout
            lines = out.strip().splitlines()
            self.assertEqual(len(lines), 4, out)
            for line in lines[:3]:
                self.assertTrue(line.startswith("SQLITE_IOERR colstore: cannot write to %s" % p), out)
                self.assertIn("need write permission on the store file", line)
            self.assertEqual(lines[3], "1,2", out)
            self.assertEqual(cstest.read_bytes(p), before)
        finally:
            shutil.rmtree(d, ignore_errors=True)


class FunctionErrors(cstest.StoreTest):
    """colstore_create / colstore_info / colstore_verify refuse bad input."""

    def test_create_onto_an_existing_path_needs_replace(self):
        con = self.connect()
        p = self.path("e.cst")
        self.assertEqual(con.execute("SELECT colstore_create(?, 'SELECT 1 AS a UNION ALL SELECT 2')", (p,)).fetchone()[0], 2)
        data = cstest.read_bytes(p)
        for sql in ("SELECT 5 AS b", "SELECT CAST(5 AS INTEGER) AS b"):  # inferred and declared types
            with self.subTest(sql=sql):
                self.assertSqlError(con, "SELECT colstore_create(?, ?)", (p, sql), code=None, contains=(p, "replace"))
                self.assertEqual(cstest.read_bytes(p), data)
        con.execute("CREATE TABLE src (b INTEGER)")
        con.execute("INSERT INTO src VALUES (7)")
        self.assertSqlError(con, "SELECT colstore_create(?, 'SELECT b FROM src')", (p,), code=None, contains=("replace",))
        self.assertEqual(cstest.read_bytes(p), data)
        self.assertEqual(con.execute("SELECT colstore_create(?, 'SELECT b FROM src', 'replace')", (p,)).fetchone()[0], 1)
        con.execute("CREATE VIRTUAL TABLE e USING colstore('%s')" % p)
        self.assertEqual(con.execute("SELECT b FROM e").fetchall(), [(7,)])
        self.assertEqual(con.execute("SELECT colstore_create(?, 'SELECT 1.5 AS c', 'REPLACE')", (p,)).fetchone()[0], 1)

    def test_create_third_argument_must_be_replace(self):
        con = self.connect()
        p = self.path("r.cst")
        for arg in ("overwrite", "", None, 1):
            with self.subTest(arg=arg):
                self.assertSqlError(con, "SELECT colstore_create(?, 'SELECT 1 AS a', ?)", (p, arg), code=None,
                                    contains=("replace",))
                self.assertFalse(os.path.exists(p))

    def test_create_with_a_bad_query_is_an_error_and_writes_nothing(self):
        con = self.connect()
        p = self.path("q.cst")
        for sql in ("SELEC 1", "SELECT * FROM nosuch", "SELECT 1 AS a; SELECT 2 AS a", "CREATE TABLE x(a)", "",
                    "SELECT 1 AS a, 2 AS a", "SELECT x'00' AS a UNION ALL SELECT 1"):
            with self.subTest(sql=sql):
                self.assertSqlError(con, "SELECT colstore_create(?, ?)", (p, sql), code=None)
                self.assertFalse(os.path.exists(p), "a failed colstore_create left a file: %r" % sql)
                self.assertEqual([f for f in os.listdir(self.dir)], [], "temporary files left behind")
        self.assertEqual(con.execute("SELECT count(*) FROM sqlite_master WHERE name = 'x'").fetchone()[0], 0)

    def test_create_whose_500th_row_is_bad_leaves_no_file_and_replace_keeps_the_old_one(self):
        con = self.connect()
        con.execute("CREATE TABLE src (v INT8)")
        con.executemany("INSERT INTO src VALUES (?)", [(i % 100,) for i in range(1000)])
        con.execute("UPDATE src SET v = 300 WHERE rowid = 500")
        p = self.path("bad500.cst")
        self.assertSqlError(con, "SELECT colstore_create(?, 'SELECT v FROM src')", (p,), code="SQLITE_MISMATCH",
                            contains=("300", "INT8"))
        self.assertFalse(os.path.exists(p))
        con.execute("SELECT colstore_create(?, 'SELECT 1 AS v')", (p,))
        data = cstest.read_bytes(p)
        self.assertSqlError(con, "SELECT colstore_create(?, 'SELECT v FROM src', 'replace')", (p,),
                            code="SQLITE_MISMATCH")
        self.assertEqual(cstest.read_bytes(p), data, "a failed replace changed the old store")
        self.assertEqual(sorted(os.listdir(self.dir)), ["bad500.cst"], "temporary files left behind")

    def test_info_and_verify_on_missing_paths_are_errors(self):
        con = self.connect()
        p = self.path("none.cst")
        for fn in ("colstore_info", "colstore_verify"):
            with self.subTest(fn=fn):
                self.assertSqlError(con, "SELECT %s(?)" % fn, (p,), code=None, contains=(p,))
                self.assertSqlError(con, "SELECT %s(NULL)" % fn, code=None)
        self.assertSqlError(con, "SELECT colstore_create(NULL, 'SELECT 1')", code=None)
        self.assertSqlError(con, "SELECT colstore_create('', 'SELECT 1')", code=None)
        self.assertSqlError(con, "SELECT colstore_create(?, NULL)", (p,), code=None)
        self.assertFalse(os.path.exists(p))


class HiddenColumns(cstest.StoreTest):
    """_rows and _mask exist, are hidden, select rows, read back only as
    the selection they were given (a NULL would make any re-check of the
    term silently drop rows), and refuse bad selections with errors that
    name the problem (tests/sql/test_pushdown.py covers selections in
    depth, tests/sql/test_plan_shapes.py the plans around them)."""

    def test_hidden_rows_and_mask_select_and_refuse_bad_blobs(self):
        con = self.connect()
        con.execute("CREATE VIRTUAL TABLE h USING colstore('%s', a INT32)" % self.path("h.cst"))
        con.execute("INSERT INTO h VALUES (10), (11), (12)")
        # They exist (hidden: not in SELECT *); they are inputs, not values.
        self.assertEqual(con.execute("SELECT * FROM h").fetchall(), [(10,), (11,), (12,)])
        for col in ("_rows", "_mask"):
            self.assertSqlError(con, "SELECT %s FROM h WHERE rowid = 0" % col, code="SQLITE_ERROR",
                                contains=(col, "input", "%s = ?" % col))
        self.assertEqual(con.execute("SELECT a, _mask FROM h WHERE _mask = ?", (b"\x00\x01\x00",)).fetchall(),
                         [(11, b"\x00\x01\x00")])
        hidden = [r[1] for r in con.execute("PRAGMA table_xinfo(h)") if r[6]]
        self.assertEqual(hidden, ["_rows", "_mask"])
        sel = struct.pack("<2q", 2, 0)
        for sql, params, want in (("SELECT a FROM h WHERE _rows = ?", (sel,), [(12,), (10,)]),
                                  ("SELECT a FROM h(?)", (sel,), [(12,), (10,)]),
                                  ("SELECT a FROM h WHERE _mask = ?", (b"\x01\x00\x01",), [(10,), (12,)]),
                                  ("SELECT a FROM h WHERE _rows = ? AND a > 10", (sel,), [(12,)])):
            with self.subTest(sql=sql):
                self.assertEqual(con.execute(sql, params).fetchall(), want)
        for sql, params, code, words in (
                ("SELECT a FROM h WHERE _rows = ?", (struct.pack("<q", 3),), "SQLITE_RANGE", ("position 3", "out of range")),
                ("SELECT a FROM h WHERE _rows = ?", (struct.pack("<q", -4),), "SQLITE_RANGE", ("position -4",)),
                ("SELECT a FROM h WHERE _rows = ?", (b"1234567",), "SQLITE_MISMATCH", ("multiple of 8",)),
                ("SELECT a FROM h WHERE _mask = ?", (b"\x01\x00",), "SQLITE_MISMATCH", ("2 bytes", "3 rows"))):
            with self.subTest(sql=sql, params=params):
                self.assertSqlError(con, sql, params, code=code, contains=words)
        for sql in ("INSERT INTO h(a, _rows) VALUES (1, x'00')", "INSERT INTO h(a, _mask) VALUES (1, x'01')"):
            with self.subTest(sql=sql):
                self.assertSqlError(con, sql, (), code="SQLITE_ERROR", contains=("selection column",))
        self.assertEqual(con.execute("SELECT count(*) FROM h").fetchone()[0], 3)

    def test_a_store_with_deleted_rows_reads_without_them(self):
        # The golden format-2 file (tests/data/make_golden.c) deletes some
        # rows; every reader opens it and none of them shows a deleted row.
        golden = os.path.join(cstest.ROOT, "tests", "data", "valid", "deleted_rows.cst")
        con = self.connect()
        con.execute("CREATE VIRTUAL TABLE d USING colstore('%s')" % golden)
        con.execute("CREATE VIRTUAL TABLE temp.da USING colstore_agg('%s')" % golden)
        info = self.info(con, "d")
        self.assertEqual(info["format_version"], 2)
        self.assertLess(info["rows"], info["positions"])
        self.assertEqual(con.execute("SELECT count(*) FROM d").fetchone()[0], info["rows"])
        self.assertEqual(con.execute("SELECT count FROM da").fetchone()[0], info["rows"])
        self.assertEqual(con.execute("SELECT count(*) FROM d WHERE _mask = ?", (b"\x01" * info["positions"],)).fetchone()[0],
                         info["rows"])

if __name__ == "__main__":
    cstest.main()
