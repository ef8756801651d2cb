#!/usr/bin/python3
"""bench_export.py - a table out to Parquet and CSV: colstore_export against
DuckDB's `COPY t TO ...` from its own database file (issue 24).

WHY.  Issue 24's targets: exporting the 10M-row bench table to Parquet is
faster with colstore_export than with DuckDB's COPY from a DuckDB database
file, for the same codec; and colstore's file is within 1.1x of DuckDB's in
size.  This bench measures both, and CSV export beside them.

HOW IT WORKS

Data: the bench table of bench_import.py (its make_csv: a INTEGER id, b REAL
uniform, c INTEGER 0..999, d REAL normal; 10M rows, seed 23), imported once
into a colstore store (a INT64, b FLOAT64, c INT64, d FLOAT64) and into a
DuckDB database file (BIGINT, DOUBLE, BIGINT, DOUBLE), kept in the data
directory.

Variants, each a fresh process per run, as a user runs them:
  colstore_t1/t2  sqlite3 -batch: SELECT colstore_export('x.cst', 'f.parquet', 'compression=C', 'threads=N')
  duckdb_t1/t2    node bench/duckdb_export.mjs (DuckDB from npm in build/duckdb_client):
                  SET threads = N; COPY t TO 'f.parquet' (FORMAT parquet, COMPRESSION C)
and the same to CSV (colstore's writer has one thread).  The wall time of
the whole process is measured for both, and DuckDB's COPY statement alone
timed inside node: the ratio against that one leaves DuckDB's start out and
colstore's in, and is the one to quote.

Before timing, every variant runs once and DuckDB reads every file back:
count, sum, min and max of each column must agree across the variants (sums
to 1e-12 relative).  Then the variants run interleaved (round r runs each
once, in an order rotated by r); each reports the median wall time with min
and max, the file sizes per codec and their ratio, and the host's load
average before and after.

    bench/bench_export.py [--rows N] [--rounds R] [--codecs snappy,zstd] [--csv] [--dir D] [--module build/colstore]
"""
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
from bench_import import make_csv  # noqa: E402
from bench_parquet import bench_args, interleave, need_tools, node, same  # noqa: E402


def duck(*args):
    return node("bench_export", "duckdb_export.mjs", *args)


def shell(module, sql):
    p = subprocess.run(["sqlite3", "-batch", "-bail", ":memory:"], input=".load %s\n%s\n" % (module, sql),
                       capture_output=True, text=True)
    if p.returncode != 0 or p.stderr:
        sys.exit("bench_export: sqlite3 failed:\n%s%s" % (p.stdout, p.stderr))
    return p.stdout


def run(variant, codec, module, store, db, workdir):
    """(output file, wall seconds, DuckDB's statement seconds or None)."""
    threads = variant[-1]
    out = os.path.join(workdir, "out_%s.%s" % (variant, "csv" if codec == "csv" else codec + ".parquet"))
    if os.path.exists(out):
        os.remove(out)
    t0 = time.perf_counter()
    if variant.startswith("duckdb"):
        secs = float(duck("export", db, out, codec, threads))
    else:
        opts = "" if codec == "csv" else ", 'compression=%s', 'threads=%s'" % (codec, threads)
        shell(module, "SELECT colstore_export('%s', '%s', 'progress=off'%s) ->> '$.rows';" % (store, out, opts))
        secs = None
    return out, time.perf_counter() - t0, secs


def main():
    ap = bench_args(__doc__)
    ap.add_argument("--csv", action="store_true", help="also CSV export")
    args = ap.parse_args()
    need_tools("bench_export", "duckdb_export.mjs")
    os.makedirs(args.dir, exist_ok=True)
    module = os.path.abspath(args.module)
    stem = os.path.join(args.dir, "bench_%d_%d" % (args.rows, args.seed))
    store, db = stem + "_export.cst", stem + "_export.duckdb"
    if not os.path.exists(store) or not os.path.exists(db):
        if not os.path.exists(stem + ".csv"):
            print("writing %s.csv ..." % stem, flush=True)
            make_csv(stem + ".csv", args.rows, args.seed)
        shell(module, "SELECT colstore_import('%s', '%s', 'columns=a INT64, b FLOAT64, c INT64, d FLOAT64', "
                      "'mode=replace', 'progress=off') ->> '$.rows';" % (store, stem + ".csv"))
        duck("load", stem + ".csv", db)
    codecs = args.codecs.split(",") + (["csv"] if args.csv else [])
    base = ["colstore_t1", "colstore_t2", "duckdb_t1", "duckdb_t2"]
    variants = [(c, v) for c in codecs for v in base if not (c == "csv" and v == "colstore_t2")]
    print("load average before: %s" % " ".join("%.2f" % v for v in os.getloadavg()))
    sizes = {}
    for codec in codecs:
        results = {}
        for c, v in variants:
            if c == codec:
                out, _, _ = run(v, codec, module, store, db, args.dir)
                results[v] = json.loads(duck("check", out))
                sizes[(codec, v)] = os.path.getsize(out)
        first = next(iter(results))
        for v, r in results.items():
            if not same(results[first], r):
                sys.exit("bench_export: %s and %s differ on %s:\n%r\n%r" % (first, v, codec, results[first], r))
        print("%s: all variants agree (DuckDB's count, sum, min, max of a, b, c, d of each file; %s rows)" %
              (codec, results[first][0]))
    walls, stmt = interleave(variants, args.rounds, lambda codec, v: run(v, codec, module, store, db, args.dir)[1:])
    print()
    print("%-8s %-12s %9s %9s %9s %12s %10s" % ("codec", "variant", "median s", "min s", "max s", "statement s",
                                              "MB"))
    for codec, v in variants:
        w = walls[(codec, v)]
        s = "%12.2f" % statistics.median(stmt[(codec, v)]) if stmt[(codec, v)] else "%12s" % "-"
        print("%-8s %-12s %9.2f %9.2f %9.2f %s %10.1f" % (codec, v, statistics.median(w), min(w), max(w), s,
                                                          sizes[(codec, v)] / 1e6))
    for codec in codecs:
        for t in ("1",) if codec == "csv" else ("1", "2"):
            c = statistics.median(walls[(codec, "colstore_t" + t)])
            for dt in ("1", "2") if codec == "csv" else (t,):
                d = statistics.median(walls[(codec, "duckdb_t" + dt)])
                ds = statistics.median(stmt[(codec, "duckdb_t" + dt)])
                print("%s colstore threads=%s vs DuckDB threads=%s: DuckDB / colstore = %.2fx (wall medians); "
                      "DuckDB's COPY alone / colstore's whole process = %.2fx" % (codec, t, dt, d / c, ds / c))
        if codec != "csv":
            print("%s size: colstore / DuckDB = %.3fx" % (codec, sizes[(codec, "colstore_t1")] /
                                                          sizes[(codec, "duckdb_t1")]))
    for name in os.listdir(args.dir):
        if name.startswith("out_"):
            os.remove(os.path.join(args.dir, name))


if __name__ == "__main__":
    main()
