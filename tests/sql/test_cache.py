"""cache=memory: a colstore table that reads a private copy of its store.

The option changes where the bytes are read from, never what a query
returns, so every query here runs three ways: on a native table, on a
colstore table over the store (cache=map, the default) and on one over the
same store with cache=memory; all three must agree row for row.  The store
holds every declared type with NULLs, TEXT and BLOB included, in several
records, and the queries take the cursor's paths: scans, predicates, rowid
ranges and lists, _rows, _mask, ORDER BY, GROUP BY, LIMIT.  A dataset
(a directory of stores) is checked the same way.

Then the rest of the option's contract: the words colstore_info and
colstore_last_plan give (requested and effective cache, the copy's size and
speed), the errors (an unknown value lists the options; a store over the
cache limit is refused at CREATE, naming the limit and what to do), the
limit's setting in colstore_config, verify=read still finding a damaged
chunk in the copy, and a second connection appending rows that the
cache=memory table sees from its next statement (copying only the new
bytes), also when the limit has since shrunk below the store (the table
keeps working, through the mapping, and says so).
"""
import json
import os
import random
import struct
import sys
import unittest

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402

SEED = 20251201
COLS = [("k", "INTEGER"), ("i8", "INT8"), ("u16", "UINT16"), ("i32", "INT32"), ("f32", "FLOAT32"), ("f", "REAL"),
        ("t", "TEXT"), ("bl", "BLOB"), ("b", "BOOL")]
COLLIST = ", ".join(c for c, _ in COLS)
N_ROWS = cstest.scaled(cstest.RECORD_ROWS * 2 + 4321, 9000)


def random_row(rng, k):
    def maybe(v):
        return None if rng.random() < 0.1 else v
    f = rng.choice([rng.uniform(-1e6, 1e6), rng.randint(-5, 5) * 0.5, 1e308, -0.0, float("inf")])
    return (k, maybe(rng.randint(-128, 127)), maybe(rng.randint(0, 65535)), maybe(rng.randint(-2**31, 2**31 - 1)),
            maybe(rng.randint(-1000, 1000) * 0.25), maybe(f),
            maybe(rng.choice(["", "abc", "ü€", "x" * rng.randint(0, 40), str(rng.randint(0, 99))])),
            maybe(bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 6)))), maybe(rng.randint(0, 1)))


class CacheTest(cstest.StoreTest):

    def setUp(self):
        super().setUp()
        self.con = self.connect()
        self.rng = random.Random(SEED)
        self.con.execute("SELECT colstore_config('cache_limit', 'auto')")
        self.con.execute("CREATE TABLE nat(%s)" % ", ".join("%s %s" % c for c in COLS))
        rows = [random_row(self.rng, i * 3 - 7) for i in range(N_ROWS)]
        self.con.execute("BEGIN")
        self.con.executemany("INSERT INTO nat(rowid, %s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)" % COLLIST,
                             [(i,) + r for i, r in enumerate(rows)])
        self.con.execute("COMMIT")
        self.store = self.path("s.cst")
        self.con.execute("SELECT colstore_create(?, ?)", (self.store, "SELECT %s FROM nat ORDER BY rowid" % COLLIST))

    def tearDown(self):
        self.con.execute("SELECT colstore_config('cache_limit', 'auto')")
        super().tearDown()

    def plan(self, con=None):
        return json.loads((con or self.con).execute("SELECT colstore_last_plan()").fetchone()[0])

    def queries(self, d, n):
        rng = self.rng
        d.same("SELECT rowid, * FROM {T}")
        d.same("SELECT rowid, * FROM {T} ORDER BY rowid DESC LIMIT 50", ordered=True)
        for lo in (0, cstest.RECORD_ROWS - 3, n - 10):
            d.same("SELECT rowid, * FROM {T} WHERE rowid BETWEEN ? AND ?", (lo, lo + 6))
        pivot = rng.randint(-2**31, 2**31 - 1)
        d.same("SELECT rowid, k, i32 FROM {T} WHERE i32 > ?", (pivot,))
        d.same("SELECT rowid, k FROM {T} WHERE f BETWEEN ? AND ? AND i8 < ?", (-1000.0, 5e5, 10))
        d.same("SELECT rowid, t, bl FROM {T} WHERE t = ? OR t IS NULL", ("abc",))
        d.same("SELECT rowid, * FROM {T} WHERE bl IS NULL AND u16 >= ?", (30000,))
        d.same("SELECT rowid, f32 FROM {T} WHERE f32 IN (0.25, -1.5, 10.0)")
        picks = [rng.randrange(n) for _ in range(60)] + [0, n - 1]
        d.same("SELECT rowid, * FROM {T} WHERE rowid IN (%s)" % ",".join(map(str, picks)))
        d.same("SELECT count(*), sum(k), min(f), max(f), min(t), max(t), avg(i32), total(b), max(bl), sum(f32) FROM {T}")
        d.same("SELECT b, count(*), sum(i32), max(bl), min(t) FROM {T} GROUP BY b")
        d.same("SELECT i8, count(*) FROM {T} WHERE i8 < -100 GROUP BY i8 ORDER BY i8", ordered=True)
        d.same("SELECT t, k FROM {T} WHERE k < 3000 ORDER BY t DESC, k LIMIT 20 OFFSET 3", ordered=True)
        d.same("SELECT DISTINCT b FROM {T}")

    def test_memory_gives_what_map_and_native_give(self):
        con = self.con
        con.execute("CREATE VIRTUAL TABLE tm USING colstore(%r)" % self.store)
        con.execute("CREATE VIRTUAL TABLE tc USING colstore(%r, cache=memory)" % self.store)
        con.execute("CREATE VIRTUAL TABLE tx USING colstore(%r, cache=map, verify=full)" % self.store)
        d = cstest.Differ(self, con, {"T": "nat"}, [("map", {"T": "tm"}), ("memory", {"T": "tc"}), ("map full", {"T": "tx"})],
                          SEED)
        self.queries(d, N_ROWS)
        # _rows and _mask
        every = con.execute("SELECT rowid, * FROM nat ORDER BY rowid").fetchall()
        pos = [self.rng.randrange(N_ROWS) for _ in range(50)] + [-1, 0, 0]
        blob = struct.pack("<%dq" % len(pos), *pos)
        mask = bytes(1 if self.rng.random() < 0.2 else 0 for _ in range(N_ROWS))
        for t in ("tm", "tc"):
            got = con.execute("SELECT rowid, * FROM %s WHERE _rows = ?" % t, (blob,)).fetchall()
            self.assertEqual(cstest.canon_rows(got, True), cstest.canon_rows([every[p] for p in pos], True), t)
            got = con.execute("SELECT rowid, * FROM %s WHERE _mask = ?" % t, (mask,)).fetchall()
            self.assertEqual(cstest.canon_rows(got, True), cstest.canon_rows([r for r, m in zip(every, mask) if m], True), t)
        self.assertGreater(d.n_queries, 40)

    def test_info_and_last_plan_say_which_cache(self):
        con = self.con
        con.execute("CREATE VIRTUAL TABLE tm USING colstore(%r)" % self.store)
        con.execute("CREATE VIRTUAL TABLE tc USING colstore(%r, cache=memory)" % self.store)
        c = self.info(con, "tc")["cache"]
        self.assertEqual(c["requested"], "memory")
        self.assertEqual(c["effective"], "memory")
        self.assertGreater(c["bytes"], 0)
        self.assertLessEqual(c["bytes"], os.path.getsize(self.store))
        self.assertEqual(c["read_bytes"], c["bytes"])
        self.assertGreater(c["copy_gb_per_s"], 0)
        c = self.info(con, "tm")["cache"]
        self.assertEqual((c["requested"], c["effective"], c["bytes"]), ("map", "map", 0))
        self.assertEqual(self.info(con, self.store)["cache"]["effective"], "map")  # a path opened by the function
        con.execute("SELECT count(*) FROM tc WHERE i32 > 0").fetchall()
        self.assertEqual(self.plan()["cache"], "memory")
        con.execute("SELECT count(*) FROM tm WHERE i32 > 0").fetchall()
        self.assertEqual(self.plan()["cache"], "map")
        self.assertIn("cache_limit", self.plan()["settings"])

    def test_dataset_in_memory(self):
        con = self.con
        ddir = self.path("ds")
        os.mkdir(ddir)
        bounds = [0, 10, 4000, N_ROWS]
        for i in range(3):
            con.execute("SELECT colstore_create(?, ?)", (os.path.join(ddir, "p%d.cst" % i),
                        "SELECT %s FROM nat WHERE rowid >= %d AND rowid < %d ORDER BY rowid" % (COLLIST, bounds[i], bounds[i + 1])))
        con.execute("CREATE VIRTUAL TABLE dm USING colstore(%r)" % ddir)
        con.execute("CREATE VIRTUAL TABLE dc USING colstore(%r, cache=memory)" % ddir)
        d = cstest.Differ(self, con, {"T": "nat"}, [("map", {"T": "dm"}), ("memory", {"T": "dc"})], SEED)
        self.queries(d, N_ROWS)
        c = self.info(con, "dc")["cache"]
        self.assertEqual((c["requested"], c["effective"]), ("memory", "memory"))
        total = sum(os.path.getsize(os.path.join(ddir, "p%d.cst" % i)) for i in range(3))
        self.assertGreater(c["bytes"], total // 2)
        # A file added to the directory is copied at the next statement.
        con.execute("SELECT colstore_create(?, 'SELECT %s FROM nat WHERE rowid < 5')" % COLLIST, (os.path.join(ddir, "p9.cst"),))
        self.assertEqual(con.execute("SELECT count(*) FROM dc").fetchone()[0], N_ROWS + 5)
        self.assertEqual(self.info(con, "dc")["cache"]["effective"], "memory")

    def test_errors(self):
        con = self.con
        self.assertSqlError(con, "CREATE VIRTUAL TABLE e USING colstore(%r, cache=disk)" % self.store,
                            contains=("unknown option cache=disk", "cache=map (the default)", "cache=memory", "verify=full"))
        self.assertSqlError(con, "SELECT colstore_config('cache_limit', -5)", contains=("cache_limit", "'auto'"))
        self.assertSqlError(con, "SELECT colstore_config('cache_limit', 'lots')", contains=("cache_limit",))
        self.assertSqlError(con, "SELECT colstore_config('nope')", contains=("cache_limit",))
        auto = con.execute("SELECT colstore_config('cache_limit')").fetchone()[0]
        self.assertGreater(auto, 1 << 20)
        self.assertEqual(con.execute("SELECT colstore_config('cache_limit', 4096)").fetchone()[0], 4096)
        msg = self.assertSqlError(con, "CREATE VIRTUAL TABLE e USING colstore(%r, cache=memory)" % self.store,
                                  contains=(self.store, "cache=memory cannot hold it", "cache limit of 4096 bytes",
                                            "use cache=map", "colstore_config('cache_limit', bytes)"))
        self.assertIn("committed bytes exceed", msg)
        # A dataset over the limit is refused the same way.
        ddir = self.path("ds")
        os.mkdir(ddir)
        con.execute("SELECT colstore_create(?, 'SELECT %s FROM nat WHERE rowid < 100')" % COLLIST, (os.path.join(ddir, "a.cst"),))
        self.assertSqlError(con, "CREATE VIRTUAL TABLE e USING colstore(%r, cache=memory)" % ddir,
                            contains=("cache=memory cannot hold it", "the dataset's"))
        # map tables are not limited
        con.execute("CREATE VIRTUAL TABLE e USING colstore(%r, cache=map)" % self.store)
        self.assertEqual(con.execute("SELECT count(*) FROM e").fetchone()[0], N_ROWS)
        self.assertEqual(con.execute("SELECT colstore_config('cache_limit', 'auto')").fetchone()[0], auto)
        con.execute("CREATE VIRTUAL TABLE e2 USING colstore(%r, cache=memory)" % self.store)
        self.assertEqual(con.execute("SELECT count(*) FROM e2").fetchone()[0], N_ROWS)

    def test_damaged_chunk_is_reported_from_the_copy(self):
        con = self.con
        # Damage the last data byte before the footer: inside the last record.
        info = self.info(con, self.store)
        data = bytearray(cstest.read_bytes(self.store))
        good = con.execute("SELECT count(*) FROM nat").fetchone()[0]
        bad = self.path("bad.cst")
        # Find a byte of column f's values by searching the file for a value of it.
        val = con.execute("SELECT f FROM nat WHERE f IS NOT NULL AND abs(f) BETWEEN 1 AND 1e6 LIMIT 1 OFFSET 100").fetchone()[0]
        at = bytes(data).find(struct.pack("<d", val))
        self.assertGreater(at, 0)
        data[at] ^= 0x40
        cstest.write_bytes(bad, bytes(data))
        con.execute("CREATE VIRTUAL TABLE b USING colstore(%r, cache=memory)" % bad)
        self.assertEqual(self.info(con, "b")["cache"]["effective"], "memory")
        self.assertEqual(con.execute("SELECT count(*) FROM b").fetchone()[0], good)  # no column read
        self.assertSqlError(con, "SELECT sum(f) FROM b", code="SQLITE_CORRUPT", contains=("checksum mismatch", "column f", bad))
        self.assertSqlError(con, "CREATE VIRTUAL TABLE b2 USING colstore(%r, cache=memory, verify=full)" % bad,
                            code="SQLITE_CORRUPT", contains=("column f",))
        self.assertEqual(info["rows"], good)

    def test_second_connection_appends(self):
        con = self.con
        con.execute("CREATE VIRTUAL TABLE tc USING colstore(%r, cache=memory)" % self.store)
        self.assertEqual(con.execute("SELECT count(*) FROM tc").fetchone()[0], N_ROWS)
        before = self.info(con, "tc")["cache"]
        other = self.connect()
        other.execute("CREATE VIRTUAL TABLE w USING colstore(%r)" % self.store)
        new = [random_row(self.rng, 10**9 + i) for i in range(300)]
        other.execute("BEGIN")
        other.executemany("INSERT INTO w VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", new)
        other.execute("COMMIT")
        con.execute("BEGIN")
        con.executemany("INSERT INTO nat(rowid, %s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)" % COLLIST,
                        [(N_ROWS + i,) + r for i, r in enumerate(new)])
        con.execute("COMMIT")
        d = cstest.Differ(self, con, {"T": "nat"}, [("memory", {"T": "tc"})], SEED)
        d.same("SELECT rowid, * FROM {T} WHERE rowid >= ?", (N_ROWS - 5,))
        d.same("SELECT count(*), sum(k), max(t), max(bl), sum(f32) FROM {T}")
        d.same("SELECT rowid, k FROM {T} WHERE k >= ?", (10**9 + 290,))
        after = self.info(con, "tc")["cache"]
        self.assertEqual(after["effective"], "memory")
        self.assertGreater(after["bytes"], before["bytes"])
        # Only the new records were read from the file; the rest came from the old copy.
        self.assertEqual(after["read_bytes"], after["bytes"] - before["bytes"])
        # The limit shrinks below the store, then another append: the table
        # keeps working through the mapping and says why.
        con.execute("SELECT colstore_config('cache_limit', 4096)")
        other.execute("INSERT INTO w VALUES (7, 1, 2, 3, 4.0, 5.0, 'x', x'01', 1)")
        con.execute("INSERT INTO nat(rowid, %s) VALUES (%d, 7, 1, 2, 3, 4.0, 5.0, 'x', x'01', 1)" % (COLLIST, N_ROWS + 300))
        d.same("SELECT rowid, * FROM {T} WHERE rowid >= ?", (N_ROWS + 295,))
        c = self.info(con, "tc")["cache"]
        self.assertEqual(c["requested"], "memory")
        self.assertTrue(c["effective"].startswith("map (cache=memory: the store's"), c["effective"])
        self.assertIn("4096", c["effective"])
        con.execute("SELECT count(*) FROM tc WHERE i32 > 0").fetchall()
        self.assertTrue(self.plan()["cache"].startswith("map (cache=memory:"))


if __name__ == "__main__":
    cstest.main()
