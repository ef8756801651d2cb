#!/usr/bin/python3
"""bench_parquet.py - a Parquet file into a store: colstore_import against
DuckDB importing the same file into its own database file (issue 24).

WHY.  Issue 24's target: importing the 10M-row bench table from a
DuckDB-written Parquet file (snappy and zstd) is faster with colstore_import
than with DuckDB's `CREATE TABLE t AS SELECT * FROM read_parquet(...)` into a
DuckDB database file, at 1 and 2 threads.  This bench measures exactly that.

HOW IT WORKS

Data: the bench table of bench_import.py (its make_csv: a INTEGER id, b REAL
uniform, c INTEGER 0..999, d REAL normal; 10M rows, seed 23), which DuckDB
writes once as Parquet with each codec (typed BIGINT, DOUBLE, BIGINT, DOUBLE;
DuckDB's default row groups of 122,880 rows), kept in the data directory.

Variants, each a fresh process per run, as a user runs them:
  colstore_t1/t2  sqlite3 -batch: SELECT colstore_import('x.cst', 'f.parquet', 'threads=N')
  duckdb_t1/t2    node bench/duckdb_parquet.mjs (DuckDB from npm in
                  build/duckdb_client, as bench_agg_sql.py installs it):
                  SET threads = N; CREATE TABLE t AS SELECT * FROM read_parquet('f.parquet')
                  into a new database file
The wall time of the whole process is the measure for both (colstore's
includes the shell's start and the module load, DuckDB's node's start and
its library load, which is seconds on a loaded host), so the ratio is also
given against DuckDB's CREATE TABLE statement alone, timed inside node:
that one leaves DuckDB's start out and colstore's in, and is the one to
quote.

Before timing, every variant runs once and the results must agree: per
column count, min and max exactly, sums to 1e-12 relative (the order of a
float sum differs), from colstore's store through SQLite and from DuckDB's
table through DuckDB.  Then the variants run interleaved (round r runs each
once, in an order rotated by r); each reports the median wall time with min
and max, and the ratio DuckDB / colstore from the medians.  The host's load
average is printed before and after: other work on the machine slows every
variant, which interleaving spreads evenly but does not remove.

    bench/bench_parquet.py [--rows N] [--rounds R] [--codecs snappy,zstd] [--dir D] [--module build/colstore]
"""
import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
from bench_import import make_csv  # noqa: E402

CLIENT = os.path.join(ROOT, "build", "duckdb_client")


def node(bench, script, *args):
    """Runs a DuckDB script of bench/ (copied into CLIENT by need_tools)."""
    p = subprocess.run(["node", script] + list(args), cwd=CLIENT, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("%s: DuckDB %s failed:\n%s%s" % (bench, args[0], p.stdout, p.stderr))
    return p.stdout


def duck(*args):
    return node("bench_parquet", "duckdb_parquet.mjs", *args)


def interleave(variants, rounds, run_one):
    """Runs every (codec, variant) once a round, in an order rotated by the
    round; run_one(codec, variant) gives (wall s, DuckDB's statement s or
    None).  Prints each round and the load average after; returns the wall
    and statement times per variant."""
    walls = {cv: [] for cv in variants}
    stmt = {cv: [] for cv in variants}
    for r in range(rounds):
        order = variants[r % len(variants):] + variants[:r % len(variants)]
        for codec, v in order:
            wall, secs = run_one(codec, v)
            walls[(codec, v)].append(wall)
            if secs is not None:
                stmt[(codec, v)].append(secs)
        print("round %d: %s" % (r + 1, "  ".join("%s/%s %.2fs" % (c, v, walls[(c, v)][-1]) for c, v in variants)),
              flush=True)
    print("load average after: %s" % " ".join("%.2f" % v for v in os.getloadavg()))
    return walls, stmt


def bench_args(doc):
    """The options bench_parquet.py and bench_export.py share."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10000000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--codecs", default="snappy,zstd")
    ap.add_argument("--dir", default=os.path.join(ROOT, "build", "bench-import"))
    ap.add_argument("--module", default=os.path.join(ROOT, "build", "colstore"))
    return ap


def need_tools(bench, script):
    """Exits unless the sqlite3 shell, node and DuckDB are here; puts script beside DuckDB."""
    if not shutil.which("sqlite3") or not shutil.which("node"):
        sys.exit("%s: needs the sqlite3 shell and node" % bench)
    if not os.path.isdir(os.path.join(CLIENT, "node_modules", "@duckdb", "node-api")):
        sys.exit("%s: @duckdb/node-api is not in %s: run bench/bench_agg_sql.py once (it installs it), "
                 "or npm install @duckdb/node-api there" % (bench, CLIENT))
    shutil.copyfile(os.path.join(HERE, script), os.path.join(CLIENT, script))


def run(variant, module, parquet, workdir):
    """(aggregates, wall seconds, DuckDB's statement seconds or None)."""
    threads = variant[-1]
    if variant.startswith("duckdb"):
        db = os.path.join(workdir, variant + ".duckdb")
        if os.path.exists(db):
            os.remove(db)
        t0 = time.perf_counter()
        out = duck("import", parquet, db, threads)
        wall = time.perf_counter() - t0
        os.remove(db)
        secs, aggs = out.strip().split("\t")
        return [float(v) if isinstance(v, float) else int(v) for v in json.loads(aggs)], wall, float(secs)
    store = os.path.join(workdir, variant + ".cst")
    sql = (".load %s\nSELECT colstore_import('%s', '%s', 'mode=replace', 'progress=off', 'threads=%s') ->> '$.rows';\n"
           % (module, store, parquet, threads))
    t0 = time.perf_counter()
    p = subprocess.run(["sqlite3", "-batch", "-bail", ":memory:"], input=sql, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0 or p.stderr:
        sys.exit("bench_parquet: %s failed:\n%s%s" % (variant, p.stdout, p.stderr))
    con = sqlite3.connect(":memory:")
    con.enable_load_extension(True)
    con.load_extension(module)
    con.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % store)
    aggs = list(con.execute("SELECT count(a), sum(a), min(a), max(a), count(b), sum(b), min(b), max(b), "
                            "count(c), sum(c), min(c), max(c), count(d), sum(d), min(d), max(d) FROM t").fetchone())
    con.close()
    return aggs, wall, None


def same(x, y):
    for i, (a, b) in enumerate(zip(x, y)):
        if i % 4 == 1 and (isinstance(a, float) or isinstance(b, float)):
            if abs(a - b) > 1e-12 * max(abs(a), 1.0):
                return False
        elif a != b:
            return False
    return len(x) == len(y)


def main():
    ap = bench_args(__doc__)
    args = ap.parse_args()
    need_tools("bench_parquet", "duckdb_parquet.mjs")
    os.makedirs(args.dir, exist_ok=True)
    module = os.path.abspath(args.module)
    files = {}
    for codec in args.codecs.split(","):
        stem = os.path.join(args.dir, "bench_%d_%d" % (args.rows, args.seed))
        files[codec] = "%s_%s.parquet" % (stem, codec)
        if os.path.exists(files[codec]):
            continue  # the CSV is only needed to write a missing Parquet file
        if not os.path.exists(stem + ".csv"):
            print("writing %s.csv ..." % stem, flush=True)
            make_csv(stem + ".csv", args.rows, args.seed)
        duck("write", stem + ".csv", files[codec], codec)
    print("load average before: %s" % " ".join("%.2f" % v for v in os.getloadavg()))
    base = ["colstore_t1", "colstore_t2", "duckdb_t1", "duckdb_t2"]
    variants = [(c, v) for c in files for v in base]
    for codec, path in files.items():
        print("%s: %s, %.1f MB" % (codec, path, os.path.getsize(path) / 1e6))
        results = {v: run(v, module, path, args.dir)[0] for v in base}
        for v in base[1:]:
            if not same(results[base[0]], results[v]):
                sys.exit("bench_parquet: %s and %s differ on %s:\n%r\n%r" % (base[0], v, codec, results[base[0]],
                                                                            results[v]))
        print("%s: all variants agree (count, sum, min, max of a, b, c, d; %d rows)" % (codec, results[base[0]][0]))
    walls, stmt = interleave(variants, args.rounds, lambda codec, v: run(v, module, files[codec], args.dir)[1:])
    print()
    print("%-8s %-12s %9s %9s %9s %12s" % ("codec", "variant", "median s", "min s", "max s", "statement s"))
    for codec, v in variants:
        w = walls[(codec, v)]
        s = "%12.2f" % statistics.median(stmt[(codec, v)]) if stmt[(codec, v)] else "%12s" % "-"
        print("%-8s %-12s %9.2f %9.2f %9.2f %s" % (codec, v, statistics.median(w), min(w), max(w), s))
    for codec in files:
        for t in "12":
            c = statistics.median(walls[(codec, "colstore_t" + t)])
            d = statistics.median(walls[(codec, "duckdb_t" + t)])
            ds = statistics.median(stmt[(codec, "duckdb_t" + t)])
            print("%s threads=%s: DuckDB / colstore = %.2fx (wall medians); DuckDB's statement alone / colstore's "
                  "whole process = %.2fx" % (codec, t, d / c, ds / c))
    for v in base:
        p = os.path.join(args.dir, v + ".cst")
        if os.path.exists(p):
            os.remove(p)


if __name__ == "__main__":
    main()
