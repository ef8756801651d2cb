#!/usr/bin/python3
"""bench_sweep.py - how colstore's advantage over native SQLite changes with
the table's size and with the kernel thread count, through Python's sqlite3
as a user calls it (the size and thread sweeps of docs/performance.md's
figures; issue 21, item 9).

WHY.  The other benches time one size (10M rows) at the default settings.
A reader deciding whether colstore pays for their table wants to see the
curve: at which size the gap opens, and what a second core buys.

HOW.  The data is bench_busy.py's (a REAL uniform, b INTEGER 0..999, c REAL
normal, d INT32 10% ones; made once per size in build/bench-data and shared
with bench_busy, bench_analytic and bench_agg_sql).  Queries, each a
colstore variant against the same SQL on the native table:

  count99   SELECT count(*) ... WHERE a > 0.99
  sumb90    SELECT sum(b) ... WHERE a > 0.9
  topk      SELECT * ... ORDER BY a DESC LIMIT 10
  distinct  SELECT DISTINCT b ...
  groupby   SELECT b, sum(a) ... GROUP BY b (colstore: the aggregate table
            colstore_agg(t, b), SELECT b, sum_a)

Size sweep: for each --sizes N, every query on both tables with the
default settings (threads 0 = auto).  Thread sweep: on the largest size,
the colstore side at each --threads cap (colstore_config('threads', N)),
beside auto.  Before timing, every variant's answer must agree with
native's (exactly; floating sums within 1e-9 relative; DISTINCT as sets).
Then the rounds: each round runs every variant of a query, the order
rotated from round to round, so the host's drift hits all alike; each
colstore variant is timed right after an untimed run of itself (bench_busy's
mode A, back to back).  Not after native: on the development VM a mapped
page left untouched for ~0.2 s costs microseconds on its next touch, so a
variant timed right after a native query of a second pays that and the
others do not (bench_busy's mode B measures that case; the families figure
quotes it).
Reported: median [min, max] ms per variant and native / colstore of the
medians.  The exit status is 0 whatever the numbers.

    /usr/bin/python3 bench/bench_sweep.py [--sizes 100000,1000000,10000000] [--threads 1,2,4]
        [--rounds 5] [--queries count99,topk] [--json FILE]
"""
import argparse
import statistics
import sys
import time
import os

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_busy  # noqa: E402  (data generation and connection, shared)

# key, label, colstore sql, native sql
QUERIES = [
    ("count99", "count(*) WHERE a > 0.99", "SELECT count(*) FROM t WHERE a > 0.99",
     "SELECT count(*) FROM native WHERE a > 0.99"),
    ("sumb90", "sum(b) WHERE a > 0.9", "SELECT sum(b) FROM t WHERE a > 0.9",
     "SELECT sum(b) FROM native WHERE a > 0.9"),
    ("topk", "ORDER BY a DESC LIMIT 10", "SELECT * FROM t ORDER BY a DESC LIMIT 10",
     "SELECT * FROM native ORDER BY a DESC LIMIT 10"),
    ("distinct", "DISTINCT b", "SELECT DISTINCT b FROM t", "SELECT DISTINCT b FROM native"),
    ("groupby", "GROUP BY b sum(a) (colstore_agg)", "SELECT b, sum_a FROM by_b",
     "SELECT b, sum(a) FROM native GROUP BY b"),
]


def close(x, y):
    if isinstance(x, float) or isinstance(y, float):
        return x == y or abs(x - y) <= 1e-9 * max(abs(x), abs(y))
    return x == y


def same(key, r1, r2):
    if key in ("distinct", "groupby"):
        r1, r2 = sorted(r1), sorted(r2)
    return len(r1) == len(r2) and all(len(a) == len(b) and all(close(x, y) for x, y in zip(a, b))
                                      for a, b in zip(r1, r2))


def run(con, sql, threads=None):
    if threads is not None:
        con.execute("SELECT colstore_config('threads', %d)" % threads).fetchall()
    t0 = time.perf_counter()
    rows = con.execute(sql).fetchall()
    return time.perf_counter() - t0, rows


def sweep(con, queries, variants, rounds):
    """variants: [(name, threads or None for native)]; returns
    {key: {name: [seconds]}} after checking every answer against native's."""
    times = {}
    for key, _, cs_sql, nat_sql in queries:
        _, want = run(con, nat_sql)
        for name, th in variants:
            if th is None:
                continue
            _, got = run(con, cs_sql, th)
            if not same(key, got, want):
                sys.exit("bench_sweep: %s at %s: colstore %r... native %r..." % (key, name, got[:3], want[:3]))
        times[key] = {name: [] for name, _ in variants}
    for r in range(rounds):
        for key, _, cs_sql, nat_sql in queries:
            k = r % len(variants)
            for name, th in variants[k:] + variants[:k]:
                if th is not None:
                    run(con, cs_sql, th)  # untimed: back to back, as every colstore variant is timed
                t, _ = run(con, nat_sql if th is None else cs_sql, th)
                times[key][name].append(t)
    con.execute("SELECT colstore_config('threads', 0)").fetchall()
    return times


def fmt(xs):
    return "%9.2f [%9.2f, %9.2f]" % (statistics.median(xs) * 1e3, min(xs) * 1e3, max(xs) * 1e3)


def main():
    ap = argparse.ArgumentParser(description="colstore vs native over table sizes and kernel thread counts")
    bench_busy.data_arguments(ap, rounds=5)
    ap.add_argument("--sizes", default="100000,1000000,10000000", help="row counts (the last also gets the thread sweep)")
    ap.add_argument("--threads", default="1,2,4", help="thread caps for the thread sweep (beside auto)")
    ap.add_argument("--queries", default="", help="a subset of " + ",".join(q[0] for q in QUERIES))
    ap.add_argument("--json", metavar="FILE", help="also write the runs, medians and ratios to FILE")
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split(",") if x.strip()]
    caps = [int(x) for x in a.threads.split(",") if x.strip()]
    queries = QUERIES
    if a.queries:
        want = [w.strip() for w in a.queries.split(",")]
        queries = [q for q in QUERIES if q[0] in want]
        if len(queries) != len(want):
            sys.exit("bench_sweep: --queries: give some of %s" % ",".join(q[0] for q in QUERIES))
    a.rows = max(sizes)
    doc = dict(meta=bench_busy.json_meta("bench_sweep", a), sizes=[], threads=None)
    doc["meta"]["cpus_online"] = os.cpu_count()
    print("bench_sweep: sizes %s, thread caps %s (and auto), %d rounds, %d cpus, sqlite %s, load average %s"
          % (sizes, caps, a.rounds, os.cpu_count(), bench_busy.sqlite3.sqlite_version, bench_busy.loadavg()))
    for n in sizes:
        a.rows = n
        _, native, store = bench_busy.data_files(a)
        for p in (native, store):
            bench_busy.warm_file(p)
        con = bench_busy.connect(a.module, native)
        con.execute("CREATE VIRTUAL TABLE temp.t USING colstore('%s')" % store.replace("'", "''"))
        con.execute("CREATE VIRTUAL TABLE temp.by_b USING colstore_agg(t, b)")
        variants = [("native", None), ("colstore", 0)]
        if n == max(sizes):
            variants += [("colstore %dt" % c, c) for c in caps]
        load0 = bench_busy.loadavg()
        times = sweep(con, queries, variants, a.rounds)
        con.close()
        print("\n%d rows (load average %s at the start): median [min, max] ms; ratio native / colstore (auto)"
              % (n, load0))
        entry = dict(rows=n, load_start=load0, queries=[])
        for key, label, _, _ in queries:
            t = times[key]
            ratio = statistics.median(t["native"]) / statistics.median(t["colstore"])
            print("  %-34s native %s  colstore %s  %7.1fx" % (label, fmt(t["native"]), fmt(t["colstore"]), ratio))
            for name, th in variants[2:]:
                print("  %-34s %-8s %s" % ("", name, fmt(t[name])))
            entry["queries"].append(dict(key=key, label=label, ratio_native_over_colstore=ratio,
                                         variants={v: bench_busy.ms_list(xs) for v, xs in t.items()}))
        doc["sizes"].append(entry)
    doc["threads"] = dict(rows=max(sizes), caps=caps)
    if a.json:
        bench_busy.write_json(a.json, doc)
    print("\nload average at end: %s" % bench_busy.loadavg())


if __name__ == "__main__":
    main()
