#!/usr/bin/python3
"""bench_topk.py - the two top-k queries of issue 26 on colstore beside DuckDB,
at 1 and 2 threads, quiet and beside a busy core.

WHY.  Issue 26 measured colstore's top-k at about 5 ns a row whatever the
data, DuckDB's top-10 at a fifth of that: `SELECT a, b, c, d FROM t ORDER BY
a DESC LIMIT 10` (a uniform) 52 / 27 ms at 1 / 2 threads against DuckDB's
9.1 / 6.1, `SELECT a, b FROM t ORDER BY c LIMIT 100` (c normal) 52 / 27
against 49.7 / 26.4.  colstore's top-k over a table now visits records best
zone map first and skips the ones that cannot beat the k-th row
(core/analytics/cs_order.c, "pruned top-k over a range"); the target is
faster than DuckDB at 1 and at 2 threads.  A third query, `ORDER BY a LIMIT
10 OFFSET 100000` (k = 100,010, where no record can be skipped), shows the
cost where pruning cannot help, and `ORDER BY b, a LIMIT 10` a key of two
code segments (10 + 64 bits), which the first key prunes.  Three more
(issue 26 item 1's remainder): the first two under a WHERE (`WHERE c < 0.5
ORDER BY a DESC LIMIT 10`, `WHERE b < 500 ORDER BY c LIMIT 100`: the
predicate read only in the records the top-k reads, cs_order_select) and
`ORDER BY a LIMIT 10`, ASC on a FLOAT key (a record that may hold a NaN is
scanned for one the first time; the answer is kept on the snapshot, so the
check's run has paid it before the rounds).

HOW.  bench_busy.py's table (10M rows: a REAL uniform, b 0..999, c REAL
normal, d 10% ones), shared with the other benches.  DuckDB in memory
through bench_agg_sql.py's child process (bench/duckdb_agg.mjs, @duckdb/node-api
from npm in build/duckdb_client; skipped with the reason printed when it
cannot run).  Variants: colstore at colstore_config('threads') 1 and 2,
DuckDB at 1 and 2 threads, and with --base-module a second colstore module
(a build from before the change) at 1 and 2 threads in a second connection.
Every variant's answer is checked first: colstore (both modules) exactly
against native SQLite, DuckDB against native (values to 1e-12 relative: it
loads the rows from exact float text).  Then the rounds: every variant of
every query once a round, the order of the variants rotating; a second
phase repeats the rounds beside a spinning process keeping one core busy.
Medians [min, max], ratios DuckDB / colstore from the medians of one run,
PASS/FAIL against the target, the records the pruned top-k read, and the
load average at the start, between the phases and at the end (this host is
shared: say so with the figures).  Exit 0 whether or not a target is met.

    /usr/bin/python3 bench/bench_topk.py [--rounds 7] [--base-module OLD/build/colstore] [--no-spinner]
        [--no-duckdb] [--json FILE]
"""
import argparse
import json
import multiprocessing
import os
import signal
import sqlite3
import statistics
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_busy  # noqa: E402  (data generation, connection, spinner, load average)
import bench_agg_sql  # noqa: E402  (the DuckDB child)

# name, sql, target (True: faster than DuckDB at 1 and 2 threads); the base
# module (a full sort of 10M positions, seconds) is timed only in the check
# for the two-segment key
QUERIES = [
    ("a DESC LIMIT 10", "SELECT a, b, c, d FROM t ORDER BY a DESC LIMIT 10", True),
    ("c LIMIT 100", "SELECT a, b FROM t ORDER BY c LIMIT 100", True),
    ("a LIMIT 10 OFFSET 100000", "SELECT a, b FROM t ORDER BY a LIMIT 10 OFFSET 100000", False),
    ("b, a LIMIT 10", "SELECT a, b FROM t ORDER BY b, a LIMIT 10", False),
    ("WHERE c < 0.5 a DESC LIMIT 10", "SELECT a, b, c, d FROM t WHERE c < 0.5 ORDER BY a DESC LIMIT 10", True),
    ("WHERE b < 500 c LIMIT 100", "SELECT a, b FROM t WHERE b < 500 ORDER BY c LIMIT 100", True),
    ("a LIMIT 10", "SELECT a, b, c, d FROM t ORDER BY a LIMIT 10", True),
]


def close12(x, y):
    if isinstance(x, float) or isinstance(y, float):
        return x == y or abs(x - y) <= 1e-12 * max(abs(x), abs(y))
    return x == y


def same(r1, r2, eq):
    return len(r1) == len(r2) and all(len(a) == len(b) and all(eq(x, y) for x, y in zip(a, b))
                                      for a, b in zip(r1, r2))


def main():
    ap = argparse.ArgumentParser()
    bench_busy.data_arguments(ap, rounds=7)
    ap.add_argument("--base-module", help="a colstore module from before the change, timed beside")
    ap.add_argument("--no-spinner", action="store_true", help="skip the phase beside a busy core")
    ap.add_argument("--no-duckdb", action="store_true")
    ap.add_argument("--json", metavar="FILE")
    a = ap.parse_args()
    base, native, store = bench_busy.data_files(a)
    doc = dict(meta=bench_busy.json_meta("bench_topk", a), queries=[]) if a.json else None
    duck = None
    if not a.no_duckdb:
        bench_agg_sql.write_csv(native, base + ".csv")
        duck = bench_agg_sql.Duck(base + ".csv", os.path.join(bench_agg_sql.ROOT, "build", "duckdb_client"))
        print("DuckDB: %s" % (duck.version if duck.proc else "skipped (%s)" % duck.why))
        if duck.proc is None:
            duck = None
    for p in (native, store):
        bench_busy.warm_file(p)
    cons = {}
    for tag, module in (("colstore", a.module), ("base", a.base_module)):
        if module:
            con = bench_busy.connect(module, native)
            con.execute("CREATE VIRTUAL TABLE temp.t USING colstore('%s')" % store.replace("'", "''"))
            cons[tag] = con
    print("bench_topk: %d rows, %d rounds, sqlite %s, load average %s" %
          (a.rows, a.rounds, sqlite3.sqlite_version, bench_busy.loadavg()))

    def run(variant, sql):
        tag, threads = variant.rsplit("-", 1)
        threads = int(threads[:-1])
        if tag == "duckdb":
            t0 = time.perf_counter()
            secs, rows = duck.run(sql, threads)
            return (secs if secs > 0 else time.perf_counter() - t0), [tuple(r) for r in rows]
        con = cons[tag]
        con.execute("SELECT colstore_config('threads', %d)" % threads).fetchall()
        t0 = time.perf_counter()
        rows = con.execute(sql).fetchall()
        return time.perf_counter() - t0, rows

    variants = ["%s-%dt" % (tag, th) for tag in list(cons) + (["duckdb"] if duck else []) for th in (1, 2)]
    plans, first = {}, {}
    for name, sql, _ in QUERIES:
        want = cons["colstore"].execute(sql.replace("FROM t", "FROM native")).fetchall()
        for v in variants:
            first[(name, v)], got = run(v, sql)
            ok = same(got, want, close12 if v.startswith("duckdb") else lambda x, y: x == y)
            if not ok:
                sys.exit("bench_topk: %s, %s: %r... native %r..." % (name, v, got[:3], want[:3]))
        run("colstore-1t", sql)
        info = json.loads(cons["colstore"].execute("SELECT colstore_last_plan()").fetchone()[0])
        plans[name] = info.get("kernels")
    print("answers checked: every variant equals native SQLite")

    times = {(ph, name, v): [] for ph in ("quiet", "busy") for name, _, _ in QUERIES for v in variants}

    def rounds(phase):
        for r in range(a.rounds):
            for name, sql, _ in QUERIES:
                order = variants[r % len(variants):] + variants[:r % len(variants)]
                for v in order:
                    if v.startswith("base") and name == "b, a LIMIT 10":
                        continue
                    times[(phase, name, v)].append(run(v, sql)[0])

    loads = {"start": bench_busy.loadavg()}
    rounds("quiet")
    loads["quiet_end"] = bench_busy.loadavg()
    phases = ["quiet"]
    if not a.no_spinner:
        ctx = multiprocessing.get_context("spawn")
        ready = ctx.Event()
        spinner = ctx.Process(target=bench_busy.spin, args=(ready,), daemon=True)
        spinner.start()
        try:
            if not ready.wait(30):
                sys.exit("bench_topk: the spinner did not start")
            time.sleep(0.2)
            rounds("busy")
            phases.append("busy")
        finally:
            os.kill(spinner.pid, signal.SIGCONT)
            spinner.terminate()
        loads["busy_end"] = bench_busy.loadavg()
    print("load average: %s" % ", ".join("%s %s" % kv for kv in loads.items()))
    print("\nmedian [min, max] ms over %d rounds; ratio = DuckDB / colstore at the same threads (medians)" % a.rounds)
    for name, sql, target in QUERIES:
        print("\n%s: %s\n    plan: %s" % (name, sql, plans[name]))
        print("  first run (the check, cold snapshot caches): %s" %
              ", ".join("%s %.2f" % (v, first[(name, v)] * 1e3) for v in variants))
        for ph in phases:
            timed = [v for v in variants if times[(ph, name, v)]]
            med = {v: statistics.median(times[(ph, name, v)]) for v in timed}
            for v in timed:
                xs = times[(ph, name, v)]
                print("  %-5s %-12s %9.2f [%9.2f, %9.2f]" % (ph, v, med[v] * 1e3, min(xs) * 1e3, max(xs) * 1e3))
            notes = []
            for th in (1, 2):
                cs = med["colstore-%dt" % th]
                if duck:
                    r = med["duckdb-%dt" % th] / cs
                    notes.append("DuckDB/colstore %dt %.2fx%s" % (th, r, (" " + ("PASS" if r > 1 else "FAIL"))
                                                                  if target else ""))
                if "base-%dt" % th in med:
                    notes.append("base/colstore %dt %.2fx" % (th, med["base-%dt" % th] / cs))
            print("  %-5s %s" % (ph, "; ".join(notes)))
            if doc is not None:
                doc["queries"].append(dict(name=name, sql=sql, phase=ph, target=target,
                                           ms={v: bench_busy.ms_list(times[(ph, name, v)]) for v in variants}))
    if doc is not None:
        doc["meta"]["loads"] = loads
        doc["meta"]["duckdb"] = duck.version if duck else None
        bench_busy.write_json(a.json, doc)


if __name__ == "__main__":
    main()
