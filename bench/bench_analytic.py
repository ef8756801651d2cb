#!/usr/bin/python3
"""bench_analytic.py - ORDER BY, top-k, GROUP BY and DISTINCT on a colstore
table against the same query on a native table holding the same rows.

WHY.  Issue 9: SQLite hands ORDER BY, GROUP BY and DISTINCT to a virtual
table that can deliver rows in order (aOrderBy, sqlite3_vtab_distinct);
colstore orders the selected positions in core (cs_order_rows) instead of
letting SQLite sort every row in a temporary B-tree.  This measures what
that buys on the bench table (10M rows: a REAL uniform, b INTEGER 0..999,
c REAL normal, d INT32 10% ones; the data of bench_busy.py, made by it and
shared with it), through Python's sqlite3 as a user calls it.

HOW.  Every query runs on both tables first and the answers must agree
(exactly, or within 1e-9 relative for floating sums that add in another
order) before anything is timed.  Then the rounds: each round runs every
query's colstore and native variants back to back, the order alternating
from round to round; medians [min, max] and the ratio of medians native /
colstore, with the plan colstore_last_plan() reports (its words and the
kernel time).  Anchors measured in the same run: `SELECT sum(a), sum(b)`
on colstore (SQLite stepping every row and two columns with no grouping:
GROUP BY's floor) and the skipped-everything predicate's kernel time.  The
queries that deliver every row wrap them in an aggregate over a subquery
with `LIMIT -1`, which keeps SQLite's sort (a LIMIT) without shipping 10M
rows to Python.  Exit 0 whether or not a target is met.

    /usr/bin/python3 bench/bench_analytic.py [--module build/colstore] [--rounds 3] [--cache memory]
        [--skip "full ORDER BY c"] [--json FILE]

--skip leaves out queries by name (comma-separated; the full sort's native
side takes ~100 s a run, so a run for the README's figures skips it);
--json writes every run's times, the medians and the ratios to FILE for
bench/plot.py.  --duckdb adds DuckDB in memory on the same rows as a third
variant (bench_agg_sql.py's child process, bench/duckdb_agg.mjs, at its
default of as many threads as CPUs; `SELECT *` becomes `SELECT a, b, c, d`
there, its table having bench_agg_sql's extra `kind` column), checked
against native to 1e-6 relative (it loads the rows from text) and rotated
into the rounds with the other two; skipped with the reason printed when
node, npm or the package is missing.
"""
import argparse
import json
import os
import statistics
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_busy  # noqa: E402  (data generation and connection, shared)


# name, colstore sql, native sql, target ratio (0 = information only)
QUERIES = [
    ("GROUP BY b sum(a)", "SELECT b, sum(a) FROM t GROUP BY b", 20),
    ("GROUP BY d WHERE a>0.5", "SELECT d, count(*), avg(c) FROM t WHERE a > 0.5 GROUP BY d", 10),
    ("ORDER BY a DESC LIMIT 10", "SELECT * FROM t ORDER BY a DESC LIMIT 10", 30),
    ("ORDER BY a LIMIT 10 OFFSET 100000", "SELECT * FROM t ORDER BY a LIMIT 10 OFFSET 100000", 10),
    ("DISTINCT b", "SELECT DISTINCT b FROM t", 50),
    ("full ORDER BY c", "SELECT count(*), sum(c) FROM (SELECT c FROM t ORDER BY c LIMIT -1)", 3),
    ("count(DISTINCT b)", "SELECT count(DISTINCT b) FROM t", 0),
    ("sum(a), sum(b) (floor)", "SELECT sum(a), sum(b) FROM t", 0),
]


def close(x, y):
    if isinstance(x, float) or isinstance(y, float):
        return x == y or abs(x - y) <= 1e-9 * max(abs(x), abs(y))
    return x == y


def same(r1, r2):
    return len(r1) == len(r2) and all(len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
                                      for a, b in zip(r1, r2))


def run(con, sql):
    t0 = time.perf_counter()
    rows = con.execute(sql).fetchall()
    return time.perf_counter() - t0, rows


def main():
    ap = argparse.ArgumentParser()
    bench_busy.data_arguments(ap, rounds=3)
    ap.add_argument("--cache", choices=("map", "memory"), default="map",
                    help="the colstore table's cache option (memory: immune to this VM's aging of mapped pages "
                         "while the native queries run; docs/tuning.md)")
    ap.add_argument("--skip", default="", help="leave out these queries (names, comma-separated)")
    ap.add_argument("--json", metavar="FILE", help="also write the runs, medians and ratios to FILE")
    ap.add_argument("--duckdb", action="store_true", help="DuckDB in memory as a third variant")
    a = ap.parse_args()
    skip = [w.strip() for w in a.skip.split(",") if w.strip()]
    names = [q[0] for q in QUERIES]
    for w in skip:
        if w not in names:
            sys.exit("bench_analytic: --skip %r: no such query (%s)" % (w, "; ".join(names)))
    queries = [q for q in QUERIES if q[0] not in skip]
    doc = dict(meta=bench_busy.json_meta("bench_analytic", a), queries=[]) if a.json else None
    if doc:
        doc["meta"]["cache"] = a.cache
    base, native, store = bench_busy.data_files(a)
    duck = None
    if a.duckdb:
        import bench_agg_sql
        bench_agg_sql.write_csv(native, base + ".csv")
        duck = bench_agg_sql.Duck(base + ".csv", os.path.join(bench_agg_sql.ROOT, "build", "duckdb_client"))
        print("DuckDB: %s" % ("in memory, %d rows loaded" % duck.rows if duck.proc else "skipped (%s)" % duck.why))
        if doc is not None:
            doc["meta"]["duckdb"] = duck.version if duck.proc else None
            doc["meta"]["duckdb_skipped"] = None if duck.proc else duck.why
        if duck.proc is None:
            duck = None
    for p in (native, store):
        bench_busy.warm_file(p)
    con = bench_busy.connect(a.module, native)
    con.execute("CREATE VIRTUAL TABLE temp.t USING colstore('%s', cache=%s)" % (store.replace("'", "''"), a.cache))
    print("bench_analytic: %d rows, %d rounds, cache=%s, sqlite %s, load average %s" %
          (a.rows, a.rounds, a.cache, con.execute("SELECT sqlite_version()").fetchone()[0],
           open("/proc/loadavg").read().split()[:3]))
    # the skipped-everything predicate: kernel time only
    con.execute("SELECT count(*) FROM t WHERE a > 2").fetchall()
    skip_us = []
    for _ in range(7):
        con.execute("SELECT count(*) FROM t WHERE a > 2").fetchall()
        skip_us.append(json.loads(con.execute("SELECT colstore_last_plan()").fetchone()[0])["kernel_us"])
    print("count(*) WHERE a > 2 (every record skipped by the zone maps): kernel %.3f ms median [%.3f, %.3f]; "
          "target < 0.2 ms" % (statistics.median(skip_us) / 1e3, min(skip_us) / 1e3, max(skip_us) / 1e3))
    def duck_sql(sql):
        return sql.replace("SELECT * FROM t", "SELECT a, b, c, d FROM t")

    def run_duck(sql):
        t0 = time.perf_counter()
        secs, rows = duck.run(duck_sql(sql), os.cpu_count())
        return secs if secs > 0 else time.perf_counter() - t0, [tuple(r) for r in rows]

    def close6(x, y):
        if isinstance(x, float) or isinstance(y, float):
            return x == y or abs(x - y) <= 1e-6 * max(abs(x), abs(y))
        return x == y

    plans, answers = {}, {}
    for name, sql, _ in queries:
        _, r_cs = run(con, sql)
        info = json.loads(con.execute("SELECT colstore_last_plan()").fetchone()[0])
        eqp = " / ".join(r[3] for r in con.execute("EXPLAIN QUERY PLAN " + sql))
        _, r_nat = run(con, sql.replace("FROM t", "FROM native"))
        ok = same(r_cs, r_nat) if "DISTINCT b FROM" not in sql else sorted(r_cs) == sorted(r_nat)
        if not ok:
            sys.exit("bench_analytic: %s: colstore %r... native %r..." % (name, r_cs[:3], r_nat[:3]))
        if duck:
            _, r_d = run_duck(sql)
            unordered = "ORDER BY" not in sql.split("FROM (")[0] or "GROUP BY" in sql
            x, y = (sorted(r_d), sorted(r_nat)) if unordered else (r_d, r_nat)
            if not (len(x) == len(y) and all(len(p) == len(q) and all(close6(u, v) for u, v in zip(p, q))
                                             for p, q in zip(x, y))):
                sys.exit("bench_analytic: %s: DuckDB %r... native %r..." % (name, r_d[:3], r_nat[:3]))
        plans[name] = (eqp, info.get("kernels"), info.get("kernel_us"))
        answers[name] = r_cs
    times = {name: {"cs": [], "nat": [], "kernel": [], "duck": []} for name, _, _ in queries}
    for r in range(a.rounds):
        for name, sql, _ in queries:
            if duck:
                vs = ("cs", "nat", "duck")
                order = vs[r % 3:] + vs[:r % 3]
            else:
                order = ("cs", "nat") if r % 2 == 0 else ("nat", "cs")
            for v in order:
                if v == "duck":
                    times[name][v].append(run_duck(sql)[0])
                    continue
                t, rows = run(con, sql if v == "cs" else sql.replace("FROM t", "FROM native"))
                times[name][v].append(t)
                if v == "cs":
                    times[name]["kernel"].append(
                        json.loads(con.execute("SELECT colstore_last_plan()").fetchone()[0]).get("kernel_us") or 0)
    fl = times.get("sum(a), sum(b) (floor)")
    floor = statistics.median(fl["cs"]) if fl else None
    print("\nmedian [min, max] ms over %d rounds; ratio = native / colstore (medians)" % a.rounds)
    for name, sql, target in queries:
        cs, nat = times[name]["cs"], times[name]["nat"]
        ratio = statistics.median(nat) / statistics.median(cs)
        verdict = "" if target == 0 else ("PASS" if ratio >= target else "FAIL") + " (target >= %gx)" % target
        print("%-34s colstore %9.2f [%9.2f, %9.2f]  native %10.2f [%10.2f, %10.2f]  %7.2fx %s" %
              (name, statistics.median(cs) * 1e3, min(cs) * 1e3, max(cs) * 1e3, statistics.median(nat) * 1e3,
               min(nat) * 1e3, max(nat) * 1e3, ratio, verdict))
        eqp, kernels, kus = plans[name]
        dk = times[name]["duck"]
        if dk:
            print("    DuckDB (in memory, %d threads) %.2f [%.2f, %.2f] ms: DuckDB / colstore %.2fx" %
                  (os.cpu_count(), statistics.median(dk) * 1e3, min(dk) * 1e3, max(dk) * 1e3,
                   statistics.median(dk) / statistics.median(cs)))
        print("    plan: %s | kernels: %s | kernel %.1f ms first run, %.1f ms median of the rounds" %
              (eqp, kernels, (kus or 0) / 1e3, statistics.median(times[name]["kernel"]) / 1e3))
        if doc is not None:
            doc["queries"].append(dict(name=name, sql=sql, target=target, colstore_ms=bench_busy.ms_list(cs),
                                       native_ms=bench_busy.ms_list(nat), duckdb_ms=bench_busy.ms_list(dk),
                                       ratio_native_over_colstore=ratio, plan=eqp, kernels=kernels))
    if "GROUP BY b sum(a)" in times and floor is not None:
        g = statistics.median(times["GROUP BY b sum(a)"]["cs"])
        print("\nGROUP BY b sum(a) over SELECT sum(a), sum(b) on colstore: %.2fx (target <= 1.3x) %s" %
              (g / floor, "PASS" if g / floor <= 1.3 else "FAIL"))
    if doc is not None:
        doc["meta"]["skip_kernel_ms"] = [round(x / 1e3, 4) for x in skip_us]
        bench_busy.write_json(a.json, doc)


if __name__ == "__main__":
    main()
