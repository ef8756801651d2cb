#!/usr/bin/python3
"""Cursor paths: every way the cursor can deliver a selection must return
exactly what a native table returns.

The cursor picks, per batch, between gathering the used columns by the mask
or through positions (colstore_config 'mask_gate'), sizes its batches from
'batch_bytes', threads the kernels ('threads'), selects the next batch on a
background worker while SQLite reads the current one (off with the
environment variable COLSTORE_PIPELINE=0, read once per process), and reads
TEXT/BLOB in place beside buffered fixed-width columns.  Each query here runs
under every combination of those settings, against a native table with the
same rows and the same rowids (0-based on both), and must give the same
rows, in order where the query orders, with the same types.  The whole set
runs again in a child process with the pipeline off.  Seeds are printed on
failure.
"""
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402

N_ROWS = cstest.scaled(40000, 12000)
SEED = 20261201


def typed(rows):
    return [tuple((type(v).__name__, v) for v in r) for r in rows]


def build(con, directory):
    rnd = random.Random(SEED)
    con.execute("CREATE TABLE n(i INT64, s INT8, u UINT16, f FLOAT64, g FLOAT32, b BOOL, txt TEXT, bl BLOB, k INT32 NOT NULL)")
    rows = []
    for r in range(N_ROWS):
        rows.append((r,
                     rnd.choice([None, rnd.randint(-10**6, 10**6)]),
                     rnd.choice([None, rnd.randint(-128, 127)]),
                     rnd.choice([None, rnd.randint(0, 65535)]),
                     rnd.choice([None] + [rnd.random()] * 6),
                     rnd.choice([None, float(rnd.randint(-400, 400)) / 4]),
                     rnd.choice([None, 0, 1]),
                     rnd.choice([None, "", "abc", "é" * 3, "x" * rnd.randint(0, 40)]),
                     rnd.choice([None, b"", b"\x00\x01", bytes([rnd.randint(0, 255)]) * 3]),
                     r % 97))
    con.executemany("INSERT INTO n(rowid, i, s, u, f, g, b, txt, bl, k) VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
    path = os.path.join(directory, "t.cst")
    # Small records, so batches and spans cross many record boundaries.
    con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', i INT64, s INT8, u UINT16, f FLOAT64, g FLOAT32,"
                " b BOOL, txt TEXT, bl BLOB, k INT32 NOT NULL)" % path)
    step = 3001
    for a in range(0, N_ROWS, step):
        con.execute("INSERT INTO t SELECT i, s, u, f, g, b, txt, bl, k FROM n WHERE rowid >= ? AND rowid < ? ORDER BY rowid",
                    (a, a + step))


def queries(rnd, n_rows):
    """(sql with {T}, params, ordered) for the native table n and colstore t."""
    qs = []
    for thr in (0.01, 0.5, 0.97):  # densities 0.99, 0.5, 0.03 of the non-NULL f
        qs.append(("SELECT rowid, i, s, u, f, g, b, txt, bl, k FROM {T} WHERE f > ?", (thr,), False))
        qs.append(("SELECT count(*), sum(i), sum(f), total(g), max(u), min(s) FROM {T} WHERE f > ?", (thr,), True))
        qs.append(("SELECT rowid, k, f FROM {T} WHERE f > ? ORDER BY rowid DESC LIMIT 50 OFFSET 7", (thr,), True))
        qs.append(("SELECT rowid, txt FROM {T} WHERE f > ? AND rowid BETWEEN 5000 AND 31000 ORDER BY rowid", (thr,), True))
    qs.append(("SELECT rowid, i, txt FROM {T} WHERE k = 5 AND s IS NOT NULL", (), False))
    qs.append(("SELECT count(*) FROM {T} WHERE u IS NULL", (), True))
    qs.append(("SELECT sum(k), count(b) FROM {T} WHERE g BETWEEN -20 AND 40", (), True))
    qs.append(("SELECT rowid FROM {T} WHERE i > 0 LIMIT 10 OFFSET 4000", (), True))
    ids = [rnd.randrange(n_rows) for _ in range(3000)]
    qs.append(("SELECT rowid, f, txt, k FROM {T} WHERE rowid IN (%s) ORDER BY rowid DESC" % ",".join(map(str, ids)), (), True))
    qs.append(("SELECT rowid, f, bl FROM {T} WHERE rowid IN (%s) AND f < 0.5" % ",".join(map(str, ids)), (), False))
    return qs


def rows_queries(rnd, n_rows):
    """_rows and _mask selections and what a native table gives for them."""
    out = []
    pos = [rnd.randrange(-n_rows, n_rows) for _ in range(5000)] + [0, n_rows - 1, -1, 7, 7, 7]
    out.append(("SELECT i, s, u, f, g, b, txt, bl, k FROM t WHERE _rows = ?", struct.pack("<%dq" % len(pos), *pos),
                "SELECT i, s, u, f, g, b, txt, bl, k FROM n WHERE rowid = ?", [p % n_rows for p in pos]))
    srt = sorted(set(p % n_rows for p in pos))
    out.append(("SELECT rowid, f, k FROM t WHERE _rows = ? LIMIT 100 OFFSET 3", struct.pack("<%dq" % len(srt), *srt),
                "SELECT rowid, f, k FROM n WHERE rowid = ?", srt[3:103]))
    return out


def check_all(tc, con, label):
    rnd = random.Random(SEED + 1)
    for sql, params, ordered in queries(rnd, N_ROWS):
        a = con.execute(sql.format(T="n"), params).fetchall()
        b = con.execute(sql.format(T="t"), params).fetchall()
        if not ordered:
            key = lambda r: repr(typed([r]))
            a, b = sorted(a, key=key), sorted(b, key=key)
        tc.assertEqual(typed(a), typed(b), "seed %d, %s, query %s %r" % (SEED, label, sql[:120], params))
    for sql, blob, native_sql, positions in rows_queries(rnd, N_ROWS):
        got = con.execute(sql, (blob,)).fetchall()
        want = [con.execute(native_sql, (p,)).fetchone() for p in positions]
        tc.assertEqual(typed(want), typed(got), "seed %d, %s, query %s" % (SEED, label, sql))
    mask = bytes(rnd.random() < 0.3 for _ in range(N_ROWS))
    got = con.execute("SELECT rowid, f, txt FROM t WHERE _mask = ? AND (f IS NULL OR f < 0.8) ORDER BY rowid DESC", (mask,)).fetchall()
    want = [r for r in con.execute("SELECT rowid, f, txt FROM n WHERE (f IS NULL OR f < 0.8) ORDER BY rowid DESC") if mask[r[0]]]
    tc.assertEqual(typed(want), typed(got), "seed %d, %s, _mask" % (SEED, label))


SETTINGS = [(gate, batch, threads) for gate in (0, 1, 0.3) for batch in (65536, None) for threads in (1, 2)]


def run_matrix(tc, con):
    default_batch = con.execute("SELECT colstore_config('batch_bytes')").fetchone()[0]
    try:
        for gate, batch, threads in SETTINGS:
            con.execute("SELECT colstore_config('mask_gate', ?), colstore_config('batch_bytes', ?), colstore_config('threads', ?)",
                        (gate, batch or default_batch, threads)).fetchall()
            check_all(tc, con, "mask_gate %s, batch_bytes %s, threads %d, pipeline %s" %
                      (gate, batch or default_batch, threads, os.environ.get("COLSTORE_PIPELINE", "on")))
    finally:
        con.execute("SELECT colstore_config('mask_gate', 'auto'), colstore_config('batch_bytes', ?), colstore_config('threads', 0)",
                    (default_batch,)).fetchall()


class CursorPaths(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="cs_cursor_")
        cls.con = cstest.connect()
        build(cls.con, cls.dir)

    @classmethod
    def tearDownClass(cls):
        cls.con.close()
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_every_setting_matches_native(self):
        run_matrix(self, self.con)

    def test_plans_report_the_route_and_the_pipeline_runs(self):
        con = self.con
        default_batch = con.execute("SELECT colstore_config('batch_bytes')").fetchone()[0]
        try:
            con.execute("SELECT colstore_config('batch_bytes', 65536), colstore_config('mask_gate', 0)").fetchall()
            con.execute("SELECT sum(i) FROM t WHERE f > 0.5").fetchall()
            lp = json.loads(con.execute("SELECT colstore_last_plan()").fetchone()[0])
            self.assertIn("mask-native gather into buffers", lp["kernels"])
            self.assertEqual(lp["rows_scanned"], N_ROWS)
            # every record counted once, however the batches split them
            n_records = json.loads(con.execute("SELECT colstore_info('t')").fetchone()[0])["records"]
            self.assertEqual(lp["records_scanned"] + lp["records_skipped"], n_records)
            con.execute("SELECT colstore_config('mask_gate', 1)").fetchall()
            con.execute("SELECT sum(i) FROM t WHERE f > 0.5").fetchall()
            lp = json.loads(con.execute("SELECT colstore_last_plan()").fetchone()[0])
            self.assertIn("sorted gather into buffers", lp["kernels"])
            con.execute("SELECT count(*) FROM t WHERE f > 0.5").fetchall()
            lp = json.loads(con.execute("SELECT colstore_last_plan()").fetchone()[0])
            self.assertEqual(lp["kernels"], "zone maps, predicate masks")
            con.execute("SELECT f FROM t WHERE _rows = ?", (struct.pack("<3q", 5, 1, 3),)).fetchall()
            lp = json.loads(con.execute("SELECT colstore_last_plan()").fetchone()[0])
            self.assertIn("binned gather into buffers", lp["kernels"])
        finally:
            con.execute("SELECT colstore_config('batch_bytes', ?), colstore_config('mask_gate', 'auto')", (default_batch,)).fetchall()

    def test_a_filter_abandoned_mid_pipeline_is_safe(self):
        # LIMIT stops while the worker selects the next batch; re-filtering
        # (the inner loop of a join) and closing must wait for it.
        con = self.con
        default_batch = con.execute("SELECT colstore_config('batch_bytes')").fetchone()[0]
        try:
            con.execute("SELECT colstore_config('batch_bytes', 65536)").fetchall()
            for _ in range(20):
                self.assertEqual(len(con.execute("SELECT rowid FROM t WHERE f > 0.2 LIMIT 3").fetchall()), 3)
            a = con.execute("SELECT x.k, count(*) FROM (SELECT 1 AS k UNION ALL SELECT 2 UNION ALL SELECT 3) x "
                            "JOIN t ON t.k = x.k AND t.f > 0.1 GROUP BY x.k").fetchall()
            b = con.execute("SELECT x.k, count(*) FROM (SELECT 1 AS k UNION ALL SELECT 2 UNION ALL SELECT 3) x "
                            "JOIN n ON n.k = x.k AND n.f > 0.1 GROUP BY x.k").fetchall()
            self.assertEqual(a, b)
            cur = con.execute("SELECT rowid, f FROM t WHERE f > 0.3")
            cur.fetchmany(10)
            cur.close()
        finally:
            con.execute("SELECT colstore_config('batch_bytes', ?)", (default_batch,)).fetchall()

    def test_without_the_pipeline_too(self):
        if os.environ.get("COLSTORE_PIPELINE") == "0":
            self.skipTest("already the child run")
        env = dict(os.environ, COLSTORE_PIPELINE="0")
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "CursorPaths.test_every_setting_matches_native"],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout[-4000:])


if __name__ == "__main__":
    unittest.main()
