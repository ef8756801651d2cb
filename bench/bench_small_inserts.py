#!/usr/bin/python3
"""bench_small_inserts.py - a store fed by single-row autocommit INSERTs
against the same rows inserted in one transaction (issue 20, item 7).

WHY.  Every commit appends at least one record, and a record costs a header,
64-byte-aligned chunks and a footer entry: 2,000 one-row commits into two
8-byte columns made a 1.19 MB file of 2,000 records (593 bytes a row) where
one transaction makes 35 KB.  colstore now compacts a store automatically
after a commit that leaves many small records, when the rewrite costs at
most colstore_config('auto_compact') times the bytes it wins back
(docs/performance.md, "Small transactions").  This measures the three
targets of the issue for each setting given, so the default can be chosen
against the alternatives (0: off, today's behaviour) from one run:

  - file size of N single-row autocommit INSERTs <= 2x the one-transaction
    store of the same rows;
  - a full scan of it within 1.5x of the one-transaction store;
  - a single-row autocommit INSERT under 2 ms (median).

HOW.  Table (a INT64, b FLOAT64): 16 bytes of data a row, a = i, b = i / 2.
For each setting, the one-transaction store and the autocommit store are
written afresh in build/bench-data/small-inserts; every INSERT is timed
(median, min, max, p99; the max is where an automatic compaction falls),
each paired with a floor INSERT timed right after it: the compaction off,
into a store of at most 300 records (its footer still small), so that both
see the host as it is at that moment and the difference is the compaction's.
Both stores must hold the same rows (rowid, a, b) before anything is timed;
then `SELECT sum(a), sum(b) FROM t` runs on each, interleaved, --rounds
times, and the medians (with min/max) give the ratio.  --big R adds the
honest case: a store of R rows made in one transaction, then --big-inserts
single-row INSERTs (size, scan against the same file with those rows in one
transaction, INSERT latency median and max).  Exits 0 either way.

    /usr/bin/python3 bench/bench_small_inserts.py [--rows 10000] [--settings 4,16,2] [--big 10000000]

Setting 0 (the old behaviour) takes minutes at 10,000 rows: every commit
rewrites and fsyncs a footer that grows with the records.
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench_busy import connect  # noqa: E402  (a connection as a user opens one)


def series(lo, hi):
    return ("(WITH RECURSIVE s(value) AS (SELECT %d UNION ALL SELECT value + 1 FROM s WHERE value < %d) "
            "SELECT value FROM s)" % (lo, hi))


def one_transaction(con, path, lo, n, create=True):
    if create:
        con.execute("CREATE VIRTUAL TABLE one USING colstore('%s', a INT64, b FLOAT64)" % path)
    else:
        con.execute("CREATE VIRTUAL TABLE one USING colstore('%s')" % path)
    con.execute("INSERT INTO one SELECT value, value / 2.0 FROM " + series(lo, lo + n - 1))
    con.execute("DROP TABLE one")


def autocommit(con, path, lo, n, create=True, floor_dir=None, setting=None):
    """n single-row autocommit INSERTs; returns each one's seconds.  With
    floor_dir, each is paired with an INSERT into a floor store there: the
    compaction off, a fresh store every 300 rows (its footer small), timed
    right after, so both see the host as it is at that moment; returns
    (times, floor times)."""
    if create:
        con.execute("CREATE VIRTUAL TABLE ac USING colstore('%s', a INT64, b FLOAT64)" % path)
    else:
        con.execute("CREATE VIRTUAL TABLE ac USING colstore('%s')" % path)
    times, floor = [], []
    for i in range(lo, lo + n):
        if floor_dir is not None:
            con.execute("SELECT colstore_config('auto_compact', ?)", (setting,))
        t0 = time.perf_counter()
        con.execute("INSERT INTO ac VALUES (?, ?)", (i, i / 2.0))
        times.append(time.perf_counter() - t0)
        if floor_dir is None:
            continue
        con.execute("SELECT colstore_config('auto_compact', 0)")
        if (i - lo) % 300 == 0:
            fp = os.path.join(floor_dir, "floor.cst")
            con.execute("DROP TABLE IF EXISTS fl")
            if os.path.exists(fp):
                os.unlink(fp)
            con.execute("CREATE VIRTUAL TABLE fl USING colstore('%s', a INT64, b FLOAT64)" % fp)
        t0 = time.perf_counter()
        con.execute("INSERT INTO fl VALUES (?, ?)", (i, i / 2.0))
        floor.append(time.perf_counter() - t0)
    con.execute("DROP TABLE ac")
    if floor_dir is None:
        return times
    con.execute("DROP TABLE fl")
    con.execute("SELECT colstore_config('auto_compact', ?)", (setting,))
    return times, floor


def info(con, path):
    return json.loads(con.execute("SELECT colstore_info(?)", (path,)).fetchone()[0])


def scan_compare(con, paths, rounds):
    """Checks the stores hold the same rows, then times the full scan on
    each, interleaved; returns [(median, min, max)] in ms."""
    for k, p in enumerate(paths):
        con.execute("CREATE VIRTUAL TABLE s%d USING colstore('%s')" % (k, p))
    sums = [con.execute("SELECT count(*), sum(a), sum(b), sum(rowid) FROM s%d" % k).fetchone() for k in range(len(paths))]
    if len(set(sums)) != 1:
        raise SystemExit("stores differ: %r" % sums)
    if len(paths) == 2 and sums[0][0] <= 1_000_000:
        a = con.execute("SELECT rowid, a, b FROM s0 ORDER BY rowid").fetchall()
        b = con.execute("SELECT rowid, a, b FROM s1 ORDER BY rowid").fetchall()
        if a != b:
            raise SystemExit("stores differ row by row")
    times = [[] for _ in paths]
    for r in range(rounds + 1):
        for k in (range(len(paths)) if r % 2 == 0 else reversed(range(len(paths)))):
            t0 = time.perf_counter()
            con.execute("SELECT sum(a), sum(b) FROM s%d" % k).fetchone()
            if r:  # the first round warms the page cache
                times[k].append((time.perf_counter() - t0) * 1e3)
    for k in range(len(paths)):
        con.execute("DROP TABLE s%d" % k)
    return [(statistics.median(t), min(t), max(t)) for t in times]


def lat(times):
    ms = sorted(t * 1e3 for t in times)
    return "median %.3f ms, min %.3f, p99 %.3f, max %.3f" % (statistics.median(ms), ms[0], ms[int(0.99 * (len(ms) - 1))], ms[-1])


def report(con, setting, one, ac, times, rounds, size_target, scan_target, insert_target):
    """One line: the autocommit store ac against the one-transaction store one."""
    i1, i2 = info(con, one), info(con, ac)
    (m1, lo1, hi1), (m2, lo2, hi2) = scan_compare(con, [one, ac], rounds)
    print("auto_compact %-3s: size %d B in %d records vs %d B in %d (%.3fx%s); scan %.3f ms [%.3f-%.3f] vs %.3f "
          "[%.3f-%.3f] (%.2fx%s); INSERT %s%s"
          % (setting, i2["bytes"], i2["records"], i1["bytes"], i1["records"], i2["bytes"] / i1["bytes"], size_target,
             m2, lo2, hi2, m1, lo1, hi1, m2 / m1, scan_target, lat(times), insert_target))
    sys.stdout.flush()


def small(a, con, work):
    print("== %d single-row autocommit INSERTs, 2 columns (16 bytes a row), scans over %d rounds" % (a.rows, a.rounds))
    for setting in a.settings:
        d = os.path.join(work, "s%s" % setting)
        os.makedirs(d)
        con.execute("SELECT colstore_config('auto_compact', ?)", (setting,))
        one, ac = os.path.join(d, "one.cst"), os.path.join(d, "ac.cst")
        one_transaction(con, one, 0, a.rows)
        times, floor = autocommit(con, ac, 0, a.rows, floor_dir=d, setting=setting)
        report(con, setting, one, ac, times, a.rounds, " (target <= 2)", " (target <= 1.5)", " (target median < 2)")
        # The difference from the floor is what the compactions add.
        print("  floor, paired (auto_compact 0, a store of at most 300 records): INSERT %s" % lat(floor))


def big(a, con, work):
    print("== a store of %d rows (one transaction) + %d single-row INSERTs" % (a.big, a.big_inserts))
    base = os.path.join(work, "big-base.cst")
    one_transaction(con, base, 0, a.big)
    for setting in a.settings:
        con.execute("SELECT colstore_config('auto_compact', ?)", (setting,))
        one, ac = os.path.join(work, "big-one-%s.cst" % setting), os.path.join(work, "big-ac-%s.cst" % setting)
        shutil.copyfile(base, one)
        shutil.copyfile(base, ac)
        one_transaction(con, one, a.big, a.big_inserts, create=False)
        times = autocommit(con, ac, a.big, a.big_inserts, create=False)
        report(con, setting, one, ac, times, a.rounds, "", "", "")
        os.unlink(one)
        os.unlink(ac)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--module", default=os.path.join(ROOT, "build", "colstore"))
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--settings", default="4", help="auto_compact values, comma-separated (0 = off)")
    ap.add_argument("--big", type=int, default=0, help="rows of the large store (0: skip)")
    ap.add_argument("--big-inserts", type=int, default=2000)
    ap.add_argument("--dir", default=os.path.join(ROOT, "build", "bench-data"))
    a = ap.parse_args()
    a.settings = [int(x) for x in a.settings.split(",")]
    work = os.path.join(a.dir, "small-inserts")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    con = connect(a.module)
    try:
        small(a, con, work)
        if a.big:
            big(a, con, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
