"""The SQL functions: colstore_version, colstore_create, colstore_info,
colstore_verify, and the DIRECTONLY rule for them and for the table.

colstore_info is checked through json_extract as a user would, and its
statistics against the same aggregates computed by SQLite on the rows.
"""
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402


def col_types(con, path_or_table):
    return [(r[0], r[1]) for r in con.execute(
        "SELECT json_extract(value, '$.name'), json_extract(value, '$.type') "
        "FROM json_each(colstore_info(?), '$.columns')", (path_or_table,))]


class Version(cstest.StoreTest):

    def test_version_is_text_in_the_contract_format(self):
        con = self.connect()
        v, t = con.execute("SELECT colstore_version(), typeof(colstore_version())").fetchone()
        self.assertEqual(t, "text")
        self.assertRegex(v, r"^colstore \d+\.\d+\.\d+ \(format 1-2: reads both; writes 1, and 2 once rows are deleted or updated\)$")

    def test_version_is_usable_from_a_view(self):
        # The positive control for the DIRECTONLY tests below: a harmless
        # function works where the filesystem ones are refused.
        con = self.connect("v.db")
        con.execute("CREATE VIEW v AS SELECT colstore_version() AS v")
        self.assertTrue(con.execute("SELECT v FROM v").fetchone()[0].startswith("colstore "))


class Create(cstest.StoreTest):

    def test_create_returns_the_rows_written(self):
        con = self.connect()
        n = cstest.RECORD_ROWS + 10
        cases = [("SELECT 1 AS a WHERE 0", 0), ("SELECT 1 AS a", 1),
                 ("WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 999) SELECT i FROM c", 1000),
                 ("WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < %d) "
                  "SELECT CAST(i AS INTEGER) AS i FROM c" % (n - 1), n)]
        for i, (sql, rows) in enumerate(cases):
            with self.subTest(sql=sql):
                p = self.path("c%d.cst" % i)
                got = con.execute("SELECT colstore_create(?, ?)", (p, sql)).fetchone()
                self.assertEqual(got, (rows,))
                self.assertIsInstance(got[0], int)
                info = self.info(con, p)
                self.assertEqual(info["rows"], rows)
                self.assertEqual(info["records"], -(-rows // cstest.RECORD_ROWS))
        con.execute("CREATE VIRTUAL TABLE big USING colstore('%s')" % self.path("c3.cst"))
        self.assertEqual(con.execute("SELECT count(*), sum(i = rowid) FROM big").fetchone(), (n, n))

    def test_create_maps_declared_types(self):
        con = self.connect()
        decl = [("a", "INTEGER", "INT64"), ("b", "REAL", "FLOAT64"), ("c", "TEXT", "TEXT"), ("d", "BLOB", "BLOB"),
                ("e", "BOOL", "BOOL"), ("f", "INT32", "INT32"), ("g", "INT8", "INT8"), ("h", "UINT16", "UINT16"),
                ("i", "FLOAT32", "FLOAT32"), ("j", "UINT32", "UINT32"), ("k", "INT16", "INT16"),
                ("l", "UINT8", "UINT8"), ("m", "INT64", "INT64"), ("n", "FLOAT64", "FLOAT64"),
                ("o", "BIGINT", "INT64"), ("p", "DOUBLE", "FLOAT64"), ("q", "VARCHAR(10)", "TEXT"),
                ("r", "BOOLEAN", "BOOL"), ("s", "int", "INT64"), ("t", "text", "TEXT")]
        con.execute("CREATE TABLE n (%s)" % ", ".join("%s %s" % (c, t) for c, t, _ in decl))
        vals = [1, 1.5, "x", b"\x01", 1, 7, -3, 9, 0.25, 10, 11, 12, 13, 2.5, 14, 3.5, "y", 0, 15, "z"]
        con.execute("INSERT INTO n VALUES (%s)" % ", ".join("?" * len(vals)), vals)
        con.execute("INSERT INTO n VALUES (%s)" % ", ".join(["NULL"] * len(vals)))
        p = self.path("d.cst")
        self.assertEqual(con.execute("SELECT colstore_create(?, 'SELECT * FROM n')", (p,)).fetchone()[0], 2)
        self.assertEqual(col_types(con, p), [(c, want) for c, _, want in decl])
        con.execute("CREATE VIRTUAL TABLE d USING colstore('%s')" % p)
        self.assertEqual(cstest.canon_rows(con.execute("SELECT * FROM d").fetchall(), True),
                         cstest.canon_rows(con.execute("SELECT * FROM n").fetchall(), True))

    def test_create_infers_types_from_values(self):
        con = self.connect()
        p = self.path("i.cst")
        sql = ("SELECT 1 AS ints, 1 AS mixed_real, 1 AS mixed_text, NULL AS nulls, x'01' AS blobs, 1.0 AS reals "
               "UNION ALL SELECT 2, 2.5, 'x', NULL, x'', 2 "
               "UNION ALL SELECT NULL, 3, 4.5, NULL, NULL, NULL "
               "UNION ALL SELECT -9223372036854775808, NULL, NULL, NULL, x'ff', 1e308")
        self.assertEqual(con.execute("SELECT colstore_create(?, ?)", (p, sql)).fetchone()[0], 4)
        types = dict(col_types(con, p))
        self.assertEqual(types["ints"], "INT64")
        self.assertEqual(types["mixed_real"], "FLOAT64")
        self.assertEqual(types["mixed_text"], "TEXT")
        self.assertEqual(types["blobs"], "BLOB")
        self.assertEqual(types["reals"], "FLOAT64")
        self.assertIn(types["nulls"], ("INT64", "FLOAT64", "TEXT", "BLOB", "INT8", "BOOL"))
        con.execute("CREATE VIRTUAL TABLE i USING colstore('%s')" % p)
        got = con.execute("SELECT * FROM i").fetchall()
        # Widened values: as CAST gives them.
        want = con.execute("SELECT ints, CAST(mixed_real AS REAL), CAST(mixed_text AS TEXT), nulls, blobs, "
                           "CAST(reals AS REAL) FROM (%s)" % sql).fetchall()
        self.assertEqual(cstest.canon_rows(got, True), cstest.canon_rows(want, True))

    def test_create_widens_an_inferred_column_after_many_rows(self):
        con = self.connect()
        n = cstest.RECORD_ROWS + 5
        body = "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < %d) " % (n - 2)
        cases = [("real_last", "SELECT i AS v FROM c UNION ALL SELECT 0.5", "FLOAT64", "CAST(v AS REAL)"),
                 ("text_last", "SELECT i AS v FROM c UNION ALL SELECT 'end'", "TEXT", "CAST(v AS TEXT)"),
                 ("real_then_text", "SELECT i * 0.5 AS v FROM c UNION ALL SELECT 'end'", "TEXT", "CAST(v AS TEXT)")]
        for name, sql, ty, cast in cases:
            with self.subTest(case=name):
                p = self.path(name + ".cst")
                self.assertEqual(con.execute("SELECT colstore_create(?, ?)", (p, body + sql)).fetchone()[0], n)
                self.assertEqual(col_types(con, p), [("v", ty)])
                con.execute("CREATE VIRTUAL TABLE %s USING colstore('%s')" % (name, p))
                got = con.execute("SELECT v FROM %s" % name).fetchall()
                want = con.execute("SELECT %s FROM (%s)" % (cast, body + sql)).fetchall()
                self.assertEqual(len(got), n)
                self.assertTrue(repr(got) == repr(want), "first difference at %s" % next(
                    (i for i, (a, b) in enumerate(zip(got, want)) if repr(a) != repr(b)), None))

    def test_create_from_a_colstore_table_copies_it(self):
        con = self.connect()
        p1, p2 = self.path("a.cst"), self.path("b.cst")
        con.execute("CREATE VIRTUAL TABLE a USING colstore('%s', x INT8 NOT NULL, y FLOAT32, z TEXT, w BLOB)" % p1)
        con.execute("INSERT INTO a VALUES (1, 0.5, 'é', x'00'), (-2, NULL, NULL, NULL), (3, -1e30, '', x'')")
        self.assertEqual(con.execute("SELECT colstore_create(?, 'SELECT * FROM a')", (p2,)).fetchone()[0], 3)
        self.assertEqual(col_types(con, p2), [("x", "INT64"), ("y", "FLOAT64"), ("z", "TEXT"), ("w", "BLOB")])
        con.execute("CREATE VIRTUAL TABLE b USING colstore('%s')" % p2)
        self.assertEqual(cstest.canon_rows(con.execute("SELECT * FROM b").fetchall(), True),
                         cstest.canon_rows(con.execute("SELECT * FROM a").fetchall(), True))

    def test_create_with_replace_under_an_open_table(self):
        con = self.connect()
        p = self.path("r.cst")
        con.execute("CREATE VIRTUAL TABLE r USING colstore('%s', x INT64, y TEXT)" % p)
        con.execute("INSERT INTO r VALUES (1, 'a'), (2, 'b')")
        # Same schema: the table reads the new store from its next statement.
        self.assertEqual(con.execute("SELECT colstore_create(?, 'SELECT x * 10 AS x, y FROM r', 'replace')",
                                     (p,)).fetchone()[0], 2)
        self.assertEqual(con.execute("SELECT x, y FROM r").fetchall(), [(10, "a"), (20, "b")])
        con.execute("INSERT INTO r VALUES (3, 'c')")
        self.assertEqual(con.execute("SELECT count(*), colstore_verify('r') FROM r").fetchone(), (3, "ok"))
        # Another schema: a clear error, and the new store is left alone.
        con.execute("SELECT colstore_create(?, 'SELECT 1.5 AS z', 'replace')", (p,))
        data = cstest.read_bytes(p)
        self.assertSqlError(con, "SELECT * FROM r", code=None, contains=(p, "schema"))
        self.assertSqlError(con, "INSERT INTO r VALUES (4, 'd')", code=None, contains=(p, "schema"))
        self.assertEqual(cstest.read_bytes(p), data)
        self.assertEqual(sorted(os.listdir(self.dir)), ["r.cst"], "temporary files left behind")


class Info(cstest.StoreTest):

    ROWS = [(1, 10, None, 0.5, "a", 1), (2, 5, 7, -1.5, None, 0), (2, 20, -3, 2.0, "c", 1), (3, -4, 8, None, "", 1)]

    def make(self, con):
        p = self.path("info.cst")
        con.execute("CREATE VIRTUAL TABLE inf USING colstore('%s', up INT32 NOT NULL, down INT64, gaps INT16, "
                    "f FLOAT64, s TEXT, b BOOL NOT NULL)" % p)
        con.execute("INSERT INTO inf VALUES (?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?)", self.ROWS[0] + self.ROWS[1])
        con.execute("INSERT INTO inf VALUES (?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?)", self.ROWS[2] + self.ROWS[3])
        return p

    def test_info_counts_live_rows_and_positions_of_a_store_with_deletions(self):
        # A format-2 golden file with deleted rows (tests/data/valid/EXPECTED:
        # 40 positions); the SQL table refuses it for now (test_errors), but
        # colstore_info describes it.
        golden = os.path.join(cstest.ROOT, "tests", "data", "valid", "deleted_rows.cst")
        info = self.info(self.connect(), golden)
        self.assertEqual(info["format_version"], 2)
        self.assertEqual(info["positions"], 40)
        self.assertLess(info["rows"], 40)
        self.assertGreater(info["rows"], 0)

    def test_info_reports_the_store_as_json(self):
        con = self.connect()
        p = self.make(con)
        info = self.info(con, p)
        self.assertEqual(info["format_version"], 1)
        self.assertEqual(info["rows"], 4)
        self.assertEqual(info["positions"], 4)
        self.assertEqual(info["records"], 2)
        self.assertEqual(info["files"], [p])
        self.assertEqual(info["bytes"], os.path.getsize(p))
        cols = info["columns"]
        self.assertEqual([(c["name"], c["type"], c["nullable"]) for c in cols],
                         [("up", "INT32", False), ("down", "INT64", True), ("gaps", "INT16", True),
                          ("f", "FLOAT64", True), ("s", "TEXT", True), ("b", "BOOL", False)])
        for c in cols:
            for key in ("name", "type", "nullable", "null_count", "min", "max", "sorted"):
                self.assertIn(key, c, "column %s lacks %s" % (c.get("name"), key))
        by = {c["name"]: c for c in cols}
        for name in ("up", "down", "gaps", "f", "b"):
            want = con.execute('SELECT count(*) - count("%s"), min("%s"), max("%s") FROM inf' % (name, name, name)).fetchone()
            got = (by[name]["null_count"], by[name]["min"], by[name]["max"])
            self.assertEqual(cstest.canon_rows([got], True), cstest.canon_rows([want], True), name)
        self.assertEqual(by["s"]["null_count"], 1)
        self.assertEqual({n: by[n]["sorted"] for n in by if n != "s"},
                         {"up": True, "down": False, "gaps": False, "f": False, "b": False})

    def test_info_by_table_name_matches_info_by_path(self):
        con = self.connect()
        p = self.make(con)
        by_path = con.execute("SELECT colstore_info(?)", (p,)).fetchone()[0]
        for name in ("inf", "INF"):
            self.assertEqual(con.execute("SELECT colstore_info(?)", (name,)).fetchone()[0], by_path)
        self.assertEqual(con.execute("SELECT json_extract(colstore_info('inf'), '$.rows'), "
                                     "json_extract(colstore_info('inf'), '$.columns[0].name'), "
                                     "json_valid(colstore_info('inf'))").fetchone(), (4, "up", 1))
        # A renamed table is found by its new name.
        con.execute("ALTER TABLE inf RENAME TO inf2")
        self.assertEqual(con.execute("SELECT json_extract(colstore_info('inf2'), '$.rows')").fetchone()[0], 4)

    def test_info_follows_commits(self):
        con = self.connect()
        p = self.make(con)
        before = self.info(con, "inf")
        con.execute("INSERT INTO inf VALUES (4, 1, 1, 1.0, 'z', 0)")
        after = self.info(con, "inf")
        self.assertEqual((after["rows"], after["records"]), (before["rows"] + 1, before["records"] + 1))
        self.assertEqual(after["bytes"], os.path.getsize(p))
        self.assertGreater(after["bytes"], before["bytes"])

    def test_info_escapes_names_as_json(self):
        con = self.connect()
        p = self.path('we"ird\\name.cst')
        con.execute("SELECT colstore_create(?, 'SELECT 1 AS \"a\"\"b\\c\"')", (p,))
        info = self.info(con, p)
        self.assertEqual(info["files"], [p])
        self.assertEqual(info["columns"][0]["name"], 'a"b\\c')


class Verify(cstest.StoreTest):

    def test_verify_says_ok_by_path_and_by_table(self):
        con = self.connect()
        p = self.path("v.cst")
        con.execute("CREATE VIRTUAL TABLE v USING colstore('%s', a INT64, s TEXT, b BLOB)" % p)
        self.assertEqual(con.execute("SELECT colstore_verify(?)", (p,)).fetchone()[0], "ok")
        con.execute("INSERT INTO v VALUES (1, 'x', x'01'), (NULL, NULL, NULL)")
        con.execute("INSERT INTO v VALUES (2, '', x'')")
        self.assertEqual(con.execute("SELECT colstore_verify(?), colstore_verify('v')", (p,)).fetchone(), ("ok", "ok"))


class DirectOnly(cstest.StoreTest):
    """Functions that touch files, and the table, cannot run from a schema."""

    def setUp(self):
        super().setUp()
        self.db = "d.db"
        self.con = self.connect(self.db)
        self.p = self.path("s.cst")
        self.con.execute("SELECT colstore_create(?, 'SELECT 1 AS a')", (self.p,))

    def refused(self, con, sql, what):
        msg = self.assertSqlError(con, sql, code="SQLITE_ERROR", prefix=None)
        self.assertIn("unsafe use of %s" % what, msg)

    def test_functions_are_refused_in_views(self):
        for fn, args in (("colstore_info", "'%s'" % self.p), ("colstore_verify", "'%s'" % self.p),
                         ("colstore_create", "'%s', 'SELECT 1 AS a'" % self.path("x.cst"))):
            with self.subTest(fn=fn):
                self.con.execute("CREATE VIEW v_%s AS SELECT %s(%s) AS r" % (fn, fn, args))
                self.refused(self.con, "SELECT * FROM v_%s" % fn, fn + "()")
        self.assertFalse(os.path.exists(self.path("x.cst")))

    def test_functions_are_refused_in_triggers(self):
        self.con.execute("CREATE TABLE log (x)")
        for fn, args in (("colstore_info", "'%s'" % self.p), ("colstore_verify", "'%s'" % self.p),
                         ("colstore_create", "'%s', 'SELECT 1 AS a'" % self.path("y.cst"))):
            with self.subTest(fn=fn):
                self.con.execute("DROP TRIGGER IF EXISTS tr")
                self.con.execute("CREATE TRIGGER tr AFTER INSERT ON log BEGIN SELECT %s(%s); END" % (fn, args))
                self.refused(self.con, "INSERT INTO log VALUES (1)", fn + "()")
                self.assertEqual(self.con.execute("SELECT count(*) FROM log").fetchone()[0], 0)
        self.assertFalse(os.path.exists(self.path("y.cst")))

    def test_the_table_is_refused_in_a_view_and_a_trigger_of_a_file_db(self):
        self.con.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % self.p)
        self.con.execute("CREATE VIEW tv AS SELECT a FROM t")
        self.con.execute("CREATE TABLE log (x)")
        self.con.execute("CREATE TRIGGER tr AFTER INSERT ON log BEGIN INSERT INTO t VALUES (NEW.x); END")
        self.con.execute("INSERT INTO t VALUES (2)")
        self.con.close()
        con = self.connect(self.db)
        self.assertEqual(con.execute("SELECT a FROM t").fetchall(), [(1,), (2,)])  # direct use is fine
        self.refused(con, "SELECT * FROM tv", 'virtual table "t"')
        data = cstest.read_bytes(self.p)
        self.refused(con, "INSERT INTO log VALUES (3)", 'virtual table "t"')
        self.assertEqual(cstest.read_bytes(self.p), data)
        self.assertEqual(con.execute("SELECT count(*) FROM t").fetchone()[0], 2)
        self.assertEqual(con.execute("SELECT count(*) FROM log").fetchone()[0], 0)


if __name__ == "__main__":
    cstest.main()
