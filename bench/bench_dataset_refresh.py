"""bench_dataset_refresh - what a statement on a dataset costs after one file changed.

A dataset of N small store files (default 50 x 1,000 rows of four columns) is
one table.  Each round appends one row to one file (round-robin) through a
second connection, then times, on the first connection, the statement that
sees the change: `SELECT a FROM ds WHERE rowid = 5`, a one-row lookup, so the
time is the refresh plus a statement's fixed cost.  A second timing runs the
same statement again with nothing changed (the per-statement freshness check
and that fixed cost).  Prints medians, min and max in microseconds.

    /usr/bin/python3 bench/bench_dataset_refresh.py --module build/colstore [--files 50] [--rows 1000] [--rounds 201]

Run it against two builds to compare them (docs/performance.md, "Datasets").
"""
import argparse
import os
import shutil
import sqlite3
import statistics
import tempfile
import time


def connect(module):
    con = sqlite3.connect(":memory:", isolation_level=None)
    con.enable_load_extension(True)
    con.load_extension(module)
    con.enable_load_extension(False)
    return con


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", required=True, help="path of colstore.so without the suffix")
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=201)
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()
    top = tempfile.mkdtemp(prefix="colstore-dsbench-", dir=a.dir)
    try:
        ddir = os.path.join(top, "ds")
        os.mkdir(ddir)
        con = connect(a.module)
        con.execute("CREATE TABLE src(a INTEGER, b REAL, c INT32, d TEXT)")
        con.executemany("INSERT INTO src VALUES (?, ?, ?, ?)",
                        [(i, i * 0.5, i % 7, "s%d" % (i % 100)) for i in range(a.rows)])
        files = [os.path.join(ddir, "part-%04d.cst" % i) for i in range(a.files)]
        for f in files:
            con.execute("SELECT colstore_create(?, 'SELECT * FROM src')", (f,))
        con.execute("CREATE VIRTUAL TABLE ds USING colstore('%s')" % ddir)
        writer = connect(a.module)
        for i, f in enumerate(files):
            writer.execute("CREATE VIRTUAL TABLE w%d USING colstore('%s')" % (i, f))
        q = "SELECT a FROM ds WHERE rowid = 5"
        n = con.execute("SELECT count(*) FROM ds").fetchone()[0]
        want = con.execute(q).fetchone()
        changed, unchanged = [], []
        for r in range(a.rounds):
            writer.execute("INSERT INTO w%d VALUES (1, 2.0, 3, 'x')" % (r % a.files))
            t0 = time.perf_counter_ns()
            got = con.execute(q).fetchone()[0]
            t1 = time.perf_counter_ns()
            con.execute(q).fetchone()
            t2 = time.perf_counter_ns()
            assert got == want[0], (got, want)
            changed.append((t1 - t0) / 1e3)
            unchanged.append((t2 - t1) / 1e3)
        got = con.execute("SELECT count(*) FROM ds").fetchone()[0]
        assert got == n + a.rounds, (got, n + a.rounds)
        for name, v in (("after an append to one file", changed), ("nothing changed", unchanged)):
            print("%-30s median %9.1f us  min %9.1f  max %9.1f  (%d files x %d rows, %d rounds)"
                  % (name, statistics.median(v), min(v), max(v), a.files, a.rows, a.rounds))
    finally:
        shutil.rmtree(top)


if __name__ == "__main__":
    main()
