#!/usr/bin/python3
"""bench_checksums.py - what checking every chunk on first read costs.

A colstore table checks each chunk it reads against its XXH3 checksum the
first time the process reads it (core/store/cs_verified.c); verify=header is the
opt-out.  This measures the trade on the bench table's shape (10M rows: a
FLOAT64 uniform, b INT64 0..999, c FLOAT64 normal-ish, d INT32 10% ones):

  first    the first query of a fresh process (pays the hashing of every
           chunk it reads, once);
  steady   the same query again in that process, median of 5 (pays only
           the per-column "all checked" test);

for verify=read (the default) and verify=header, each measurement in a
fresh process, the variants interleaved over the rounds (A B A B ...) and
the page cache warm (the file is read once before timing).  Every process
checks that both variants return the same answer before it is timed.
Reports medians with min/max and the ratios of medians read/header.

    /usr/bin/python3 bench/bench_checksums.py [--module build/colstore] [--rows 10000000] [--rounds 5]
"""
import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUERIES = [
    ("sum(a)", "SELECT sum(a) FROM t"),
    ("count a>.99", "SELECT count(*) FROM t WHERE a > 0.99"),
    ("sum(b) a>.9", "SELECT sum(b) FROM t WHERE a > 0.9"),
    ("rowid range 1%", "SELECT sum(c) FROM t WHERE rowid BETWEEN 5000000 AND 5099999"),
]


def connect(module):
    con = sqlite3.connect(":memory:", isolation_level=None)
    con.enable_load_extension(True)
    con.load_extension(module)
    return con


def make_store(module, path, rows):
    if os.path.exists(path):
        return
    con = connect(module)
    # one pass of SQLite's own generator: the bench table's shape, fixed seed not needed
    con.execute("CREATE TABLE g(a REAL, b INTEGER, c REAL, d INT32)")
    con.execute("""INSERT INTO g WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < ?)
                   SELECT (abs(random()) % 1000000000) / 1e9, abs(random()) % 1000,
                          ((abs(random()) % 1000) + (abs(random()) % 1000) + (abs(random()) % 1000) - 1500) / 500.0,
                          abs(random()) % 10 = 0 FROM r""", (rows - 1,))
    con.execute("SELECT colstore_create(?, 'SELECT * FROM g')", (path + ".tmp",))
    os.replace(path + ".tmp", path)


def child(module, path, verify, sql):
    con = connect(module)
    con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', verify=%s)" % (path, verify))
    t0 = time.perf_counter()
    first_answer = con.execute(sql).fetchall()
    first = time.perf_counter() - t0
    steady = []
    for _ in range(5):
        t0 = time.perf_counter()
        answer = con.execute(sql).fetchall()
        steady.append(time.perf_counter() - t0)
        assert answer == first_answer
    print(json.dumps({"first": first, "steady": statistics.median(steady), "answer": repr(first_answer)}))


def fmt(xs):
    return "%8.2f ms [%7.2f, %7.2f]" % (statistics.median(xs) * 1e3, min(xs) * 1e3, max(xs) * 1e3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", default=os.path.join(ROOT, "build", "colstore"))
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", default=os.path.join(ROOT, "build", "bench-data"))
    ap.add_argument("--child", nargs=3, metavar=("PATH", "VERIFY", "SQL"))
    a = ap.parse_args()
    if a.child:
        return child(a.module, *a.child)
    os.makedirs(a.dir, exist_ok=True)
    path = os.path.join(a.dir, "checksums-%d.cst" % a.rows)
    make_store(a.module, path, a.rows)
    with open(path, "rb") as f:  # page cache warm
        while f.read(1 << 24):
            pass
    print("store %s: %.0f MB; %d rounds, each measurement a fresh process" % (path, os.path.getsize(path) / 1e6, a.rounds))
    variants = ["read", "header"]
    for name, sql in QUERIES:
        res = {v: {"first": [], "steady": [], "answer": set()} for v in variants}
        for r in range(a.rounds):
            for v in (variants if r % 2 == 0 else variants[::-1]):
                out = subprocess.run([sys.executable, __file__, "--module", a.module, "--child", path, v, sql],
                                     check=True, capture_output=True, text=True).stdout
                d = json.loads(out)
                res[v]["first"].append(d["first"])
                res[v]["steady"].append(d["steady"])
                res[v]["answer"].add(d["answer"])
        answers = set.union(*(res[v]["answer"] for v in variants))
        if len(answers) != 1:
            sys.exit("variants disagree on %s: %s" % (name, answers))
        print("\n%s   (%s)" % (name, sql))
        for v in variants:
            print("  verify=%-6s first %s   steady %s" % (v, fmt(res[v]["first"]), fmt(res[v]["steady"])))
        for k in ("first", "steady"):
            ratio = statistics.median(res["read"][k]) / statistics.median(res["header"][k])
            print("  %-6s read/header = %.2fx" % (k, ratio))


if __name__ == "__main__":
    main()
