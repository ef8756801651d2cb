#!/usr/bin/python3
"""Top-k (ORDER BY ... LIMIT) on a colstore table against native SQLite, over
data whose zone maps overlap, interleave and tie.

colstore's top-k over a table (cs_order_range) visits records best zone map
first and skips every record whose zone map cannot beat the current k-th
row.  What could go wrong is exactly what the zone maps hide: a skipped
record holding a row that ties the k-th (SQLite keeps tied rows in rowid
order, so the tie with the smaller rowid wins, even in a record visited
later), a NULL that sorts first ascending in a record whose min says
otherwise, a record of only NULLs, a constant record equal to the
threshold, a second key deciding among rows equal on the first, an OFFSET
that moves the k-th deeper, rows deleted or changed since the zone maps
were written (committed, and pending in an open transaction, where the
cursor reads a view whose chunks are laid again).

So each round draws a table of many small records (one INSERT transaction
is at least one record) in styles chosen for that: few distinct values,
ascending and descending runs, constant records, all-NULL records, records
of one value plus NULLs, random values; one key column of each numeric
kind.  A native mirror holds the same rows at the same rowids.  Queries
draw every ORDER BY shape: one or two keys, ASC and DESC, LIMIT with and
without OFFSET, with and without a WHERE predicate, and compare in order,
exactly (storage class and bits), against native's answer to the same SQL:
native SQLite gives tied rows in rowid order under a LIMIT, which the test
checks too (its answer equals the one with `, rowid` appended).

The seed comes from COLSTORE_SEED (default fixed) and is printed with any
failure.
"""
import os
import random
import struct
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402

SEED = int(os.environ.get("COLSTORE_SEED", "26001"))
ROUNDS = cstest.scaled(6, 2)
QUERIES = cstest.scaled(120, 40)

# name, colstore type, native declared type, value drawer kind
KEYS = [("i64", "INT64", "INTEGER", "int"), ("i32", "INT32", "INT32", "int"), ("i16", "INT16", "INT16", "int"),
        ("u8", "UINT8", "UINT8", "byte"), ("f64", "FLOAT64", "REAL", "float"), ("f32", "FLOAT32", "FLOAT32", "f32")]
STYLES = ("few", "asc", "desc", "const", "null", "const_null", "random", "random")


def draw(rng, kind, lo, hi):
    if kind == "byte":
        return min(abs(rng.randint(lo, hi)), 255)
    if kind == "float":
        return rng.choice([float(rng.randint(lo, hi)), rng.uniform(lo, hi), -0.0, 0.0])
    if kind == "f32":
        return float(rng.randint(lo, hi)) / 4  # exact in FLOAT32
    return rng.randint(lo, hi)


def record(rng, n):
    """One record's values of every key column, in a style per column."""
    cols = []
    for _name, _t, _nt, kind in KEYS:
        style = rng.choice(STYLES)
        lo = rng.randint(-50, 50)
        hi = lo + rng.choice([0, 3, 40, 1000])
        nulls = rng.choice([0.0, 0.0, 0.1, 0.5])
        if style == "few":
            pal = [draw(rng, kind, lo, hi) for _ in range(rng.randint(1, 3))]
            vals = [rng.choice(pal) for _ in range(n)]
        elif style in ("asc", "desc"):
            vals = sorted(draw(rng, kind, lo, hi) for _ in range(n))
            if style == "desc":
                vals.reverse()
            nulls = 0.0
        elif style in ("const", "const_null"):
            v = draw(rng, kind, lo, hi)
            vals = [v] * n
            nulls = 0.3 if style == "const_null" else 0.0
        elif style == "null":
            vals = [None] * n
        else:
            vals = [draw(rng, kind, lo, hi) for _ in range(n)]
        cols.append([None if rng.random() < nulls else v for v in vals])
    return list(zip(*cols))


class TopK(cstest.StoreTest):
    def build(self, rng, name):
        con = self.con
        defs = ", ".join("%s %s" % (k[0], k[1]) for k in KEYS)
        con.execute("CREATE TABLE n_%s(pos INTEGER PRIMARY KEY, %s, g INTEGER)" %
                    (name, ", ".join("%s %s" % (k[0], k[2]) for k in KEYS)))
        con.execute("CREATE VIRTUAL TABLE %s USING colstore(%r, %s, g INT32 NOT NULL)" %
                    (name, self.path(name + ".cst"), defs))
        pos = 0
        for _ in range(rng.randint(8, 30)):
            n = rng.choice([1, 7, 200, 700, 1500])
            rows = record(rng, n)
            data = [(pos + i,) + r + (rng.randrange(5),) for i, r in enumerate(rows)]
            pos += n
            con.execute("BEGIN")
            con.executemany("INSERT INTO n_%s VALUES (%s)" % (name, ",".join("?" * (len(KEYS) + 2))), data)
            con.execute("INSERT INTO %s SELECT %s, g FROM n_%s WHERE pos >= ? ORDER BY pos" %
                        (name, ", ".join(k[0] for k in KEYS), name), (data[0][0],))
            con.execute("COMMIT")
        return pos

    def query(self, rng, n):
        keys = rng.sample([k[0] for k in KEYS] + ["g"], rng.choice([1, 1, 2]))
        order = ", ".join(k + rng.choice(["", " DESC", " ASC"]) for k in keys)
        k = rng.choice([1, 2, 5, 10, 30, max(1, n // 40)])
        tail = " LIMIT %d" % k
        if rng.random() < 0.3:
            tail += " OFFSET %d" % rng.choice([1, 5, 40, n // 100])
        where = ""
        if rng.random() < 0.3:
            c = rng.choice(KEYS)[0]
            where = rng.choice([" WHERE %s > %d" % (c, rng.randint(-30, 30)), " WHERE g = %d" % rng.randrange(5),
                                " WHERE %s IS NOT NULL" % c])
        return "SELECT rowid, i64, f64, %s, g FROM {T}%s ORDER BY %s%s" % (", ".join(keys), where, order, tail)

    def compare(self, sql, name, what, native=None):
        native = native or "n_" + name
        want = self.con.execute(sql.format(T=native).replace("rowid", "pos")).fetchall()
        got = self.con.execute(sql.format(T=name)).fetchall()
        if cstest.canon_rows(got, True) != cstest.canon_rows(want, True):
            cg, cw = cstest.canon_rows(got, True), cstest.canon_rows(want, True)
            at = next((i for i, (x, y) in enumerate(zip(cg, cw)) if x != y), min(len(cg), len(cw)))
            self.fail("COLSTORE_SEED=%d %s: %s\n %d rows against %d, from row %d:\n colstore %r\n native   %r" %
                      (SEED, what, sql, len(got), len(want), at, got[at:at + 6], want[at:at + 6]))
        # native's ties are in rowid order: the same as with the rowid as a last key
        by_rowid = sql.replace(" LIMIT", ", rowid LIMIT")
        tie = self.con.execute(by_rowid.format(T=native).replace("rowid", "pos")).fetchall()
        self.assertEqual(tie, want, "native ties not in rowid order: %s" % sql)

    def battery(self, rng, n, name, count, what):
        for q in range(count):
            self.compare(self.query(rng, n), name, "%s, query %d" % (what, q))

    def test_random_top_k_matches_native(self):
        rng = random.Random(SEED)
        self.con = self.connect()
        for rnd in range(ROUNDS):
            name = "t%d" % rnd
            n = self.build(rng, name)
            self.battery(rng, n, name, QUERIES, "round %d" % rnd)
            # deletions and updates, committed: the records' zone maps are laid again
            lo = rng.randrange(n)
            hi = lo + rng.randint(0, 500)
            self.con.execute("DELETE FROM %s WHERE rowid BETWEEN ? AND ?" % name, (lo, hi))
            self.con.execute("DELETE FROM n_%s WHERE pos BETWEEN ? AND ?" % name, (lo, hi))
            for tab, key in ((name, "rowid"), ("n_" + name, "pos")):
                self.con.execute("UPDATE %s SET i64 = -1000000, f64 = 1e9 WHERE %s %% 97 = 3" % (tab, key))
                self.con.execute("UPDATE %s SET i32 = NULL, f32 = NULL WHERE %s %% 89 = 5" % (tab, key))
            self.battery(rng, n, name, QUERIES // 3, "round %d after changes" % rnd)
            # pending: inside a transaction the cursor reads a view of the changes
            self.con.execute("BEGIN")
            for tab, key in ((name, "rowid"), ("n_" + name, "pos")):
                self.con.execute("UPDATE %s SET i64 = 2000000, u8 = 255, f64 = -1e9 WHERE %s %% 61 = 7" % (tab, key))
                self.con.execute("DELETE FROM %s WHERE %s %% 53 = 1" % (tab, key))
            self.battery(rng, n, name, QUERIES // 3, "round %d pending" % rnd)
            self.con.execute("ROLLBACK")
            self.battery(rng, n, name, QUERIES // 6, "round %d rolled back" % rnd)

    def where_build(self, rng, rnd):
        """Table w and native mirror nw: FLOAT keys with NaN (colstore_append
        takes the bits; the mirror holds NULL, as SQLite reads NaN), -0.0 and
        infinities, an INT16 key, a TEXT column s, a small g; records by
        colstore_append or by INSERT."""
        con = self.con
        con.execute("CREATE TABLE nw(pos INTEGER PRIMARY KEY, i64 INTEGER, f64 REAL, f32 REAL, i16 INTEGER, "
                    "s TEXT, g INTEGER)")
        con.execute("CREATE VIRTUAL TABLE w USING colstore(%r, i64 INT64, f64 FLOAT64, f32 FLOAT32, i16 INT16, "
                    "s TEXT, g INT32 NOT NULL)" % self.path("w%d.cst" % rnd))
        nan = float("nan")
        words = ["", "a", "ab", "b", "m", "mz", "z", "zz"]
        pos = 0
        for _ in range(rng.randint(10, 30)):
            n = rng.choice([1, 7, 200, 700, 1500])
            base = record(rng, n)  # i64 i32 i16 u8 f64 f32 in their styles
            specials = rng.choice([[], [nan], [nan, float("inf")], [float("-inf"), -0.0], [nan, float("-inf")]])
            rows = []
            for r in base:
                f64, f32 = r[4], r[5]
                if specials and rng.random() < 0.05:
                    f64 = rng.choice(specials)
                if specials and rng.random() < 0.05:
                    f32 = rng.choice(specials)
                s = None if rng.random() < 0.1 else rng.choice(words)
                rows.append((r[0], f64, f32, r[2], s, rng.randrange(4)))
            if rng.random() < 0.5:
                def f(col, fmt):
                    vals = [x[col] for x in rows]
                    return (struct.pack("<%d%s" % (n, fmt), *[0 if v is None else v for v in vals]),
                            bytes(0 if v is None else 1 for v in vals))
                enc = [(x[4] or "").encode() for x in rows]
                offs = [0]
                for e in enc:
                    offs.append(offs[-1] + len(e))
                args = ["w"]
                for name, col, fmt in (("i64", 0, "q"), ("f64", 1, "d"), ("f32", 2, "f"), ("i16", 3, "h"),
                                       ("g", 5, "i")):
                    data, valid = f(col, fmt)
                    args += [name, data]
                    if name != "g":
                        args += [name + ":valid", valid]
                args += ["s", b"".join(enc), "s:offsets", struct.pack("<%dq" % (n + 1), *offs),
                         "s:valid", bytes(0 if x[4] is None else 1 for x in rows)]
                con.execute("SELECT colstore_append(%s)" % ",".join("?" * len(args)), args)
            else:  # INSERT: SQLite makes NaN NULL on the way in
                con.execute("BEGIN")
                con.executemany("INSERT INTO w VALUES (?,?,?,?,?,?)", rows)
                con.execute("COMMIT")
            con.executemany("INSERT INTO nw VALUES (?,?,?,?,?,?,?)",
                            [(pos + i,) + tuple(None if isinstance(v, float) and v != v else v for v in x)
                             for i, x in enumerate(rows)])
            pos += n
        return pos

    def where_query(self, rng, n):
        keys = rng.sample(["i64", "f64", "f32", "i16", "g", "s"], rng.choice([1, 1, 1, 2, 2, 3]))
        order = ", ".join(k + rng.choice(["", " DESC", " ASC"]) for k in keys)
        tail = " LIMIT %d" % rng.choice([1, 2, 5, 10, 30, max(1, n // 40)])
        if rng.random() < 0.3:
            tail += " OFFSET %d" % rng.choice([1, 5, 40, n // 100])

        def pred():
            c = rng.choice(["i64", "f64", "f32", "i16"])
            v = rng.randint(-40, 60)
            a, b = sorted((rng.randint(-40, 60), rng.randint(-40, 60)))
            lo = rng.randrange(n)
            words = ", ".join("'%s'" % w for w in rng.sample(["", "a", "ab", "b", "m", "zz", "q"], rng.randint(1, 3)))
            return rng.choice([
                "%s < %d" % (c, v), "%s >= %d" % (c, v), "%s BETWEEN %d AND %d" % (c, a, b), "%s != %d" % (c, v),
                "%s IN (%d, %d, %d)" % (c, a, b, v), "g IN (%d, %d)" % (rng.randrange(4), rng.randrange(4)),
                "g = %d" % rng.randrange(4), "s = '%s'" % rng.choice(["a", "m", "", "q"]), "s > 'b'",
                "s IN (%s)" % words, "s IS NULL", "%s IS NOT NULL" % c, "%s IS NULL" % c,
                "rowid BETWEEN %d AND %d" % (lo, lo + rng.randint(0, n // 3)), "rowid >= %d" % lo,
                "rowid < %d" % lo, "f64 > 1e300", "f64 < -1e300", "f32 = 0"])
        where = " AND ".join(pred() for _ in range(rng.choice([1, 1, 2, 3])))
        # + 0.0: colstore keeps the bits of an appended -0.0, SQLite's REAL reads back 0.0
        return "SELECT rowid, i64, f64 + 0.0, f32 + 0.0, i16, s, g FROM {T} WHERE %s ORDER BY %s%s" % (where, order, tail)

    def test_where_and_float_specials_match_native(self):
        # the pruned top-k under a WHERE (every predicate kind, every ORDER BY
        # shape) and FLOAT keys holding NaN, -0.0 and infinities, ASC and DESC
        rng = random.Random(SEED + 1)
        self.con = self.connect()
        for rnd in range(ROUNDS):
            for t in ("w", "nw"):
                self.con.execute("DROP TABLE IF EXISTS %s" % t)
            n = self.where_build(rng, rnd)

            def battery(count, what):
                for q in range(count):
                    self.compare(self.where_query(rng, n), "w", "where round %d %s, query %d" % (rnd, what, q),
                                 native="nw")
            battery(QUERIES, "")
            lo = rng.randrange(n)
            hi = lo + rng.randint(0, 2000)
            for tab, key in (("w", "rowid"), ("nw", "pos")):
                self.con.execute("DELETE FROM %s WHERE %s BETWEEN ? AND ?" % (tab, key), (lo, hi))
                self.con.execute("DELETE FROM %s WHERE %s %% 41 = 3" % (tab, key))
            battery(QUERIES // 3, "after deletes")
            # pending: inserted, updated and deleted rows inside a transaction
            self.con.execute("BEGIN")
            extra = [(rng.randint(-100, 100), rng.choice([None, -0.0, 1e301, -1e301, 7.5]), 2.25, rng.randint(-50, 50),
                      rng.choice(["a", "m", None]), rng.randrange(4)) for _ in range(300)]
            self.con.executemany("INSERT INTO w VALUES (?,?,?,?,?,?)", extra)
            self.con.executemany("INSERT INTO nw VALUES (?,?,?,?,?,?,?)",
                                 [(n + i,) + x for i, x in enumerate(extra)])
            for tab, key in (("w", "rowid"), ("nw", "pos")):
                self.con.execute("UPDATE %s SET f64 = 1e300, i16 = -30000 WHERE %s %% 67 = 9" % (tab, key))
                self.con.execute("DELETE FROM %s WHERE %s %% 59 = 2" % (tab, key))
            battery(QUERIES // 3, "pending")
            self.con.execute("ROLLBACK")

    def test_sorted_key_matches_native(self):
        # a sorted key (ties of three rows) and a second key of seven values: the
        # first (ASC) or last (DESC) record holds the answer (check_order counts the reads)
        con = self.con = self.connect()
        con.execute("CREATE TABLE n(pos INTEGER PRIMARY KEY, k INTEGER, v REAL)")
        con.execute("CREATE VIRTUAL TABLE t USING colstore(%r, k INT64 NOT NULL, v FLOAT64)" % self.path("s.cst"))
        for r in range(12):
            rows = [(r * 1000 + i, (r * 1000 + i) // 3, float(i % 7)) for i in range(1000)]
            con.execute("BEGIN")
            con.executemany("INSERT INTO n VALUES (?,?,?)", rows)
            con.executemany("INSERT INTO t VALUES (?,?)", [x[1:] for x in rows])
            con.execute("COMMIT")
        for sql in ("SELECT rowid, k, v FROM {T} ORDER BY k LIMIT 10", "SELECT rowid, k, v FROM {T} ORDER BY k DESC LIMIT 10",
                    "SELECT rowid, k FROM {T} ORDER BY k DESC, v LIMIT 7 OFFSET 2",
                    "SELECT rowid, k FROM {T} ORDER BY v DESC, k LIMIT 5"):
            self.compare(sql, "t", "sorted", native="n")


if __name__ == "__main__":
    unittest.main()
