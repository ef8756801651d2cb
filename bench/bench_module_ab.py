#!/usr/bin/python3
"""bench_module_ab.py - the same queries on two colstore builds, interleaved
in one process: did a change make any query slower?

WHY.  Running a bench once per build puts minutes between the two, and on
this shared host the load drifts more than most changes move a query
(docs/performance.md: bench_analytic's floor query moved 29% between two
runs of unchanged code).  Two connections in one process, one per module,
over the same store file, timed round by round with the order alternating,
compare like with like.

HOW.  Each module is loaded into its own connection (SQLite keys a loaded
extension by connection) with a table over bench_busy.py's store (10M rows,
made when missing).  Every query is run on both first and the answers must
be identical (same rows, same order, same bits); then --rounds rounds, the
order of the two alternating; medians [min, max] ms and the ratio
before / after, with the load average at the start and the end.

    /usr/bin/python3 bench/bench_module_ab.py --before OLD/build/colstore [--after build/colstore]
        [--rounds 7] [SQL ...]

Without SQL arguments it runs the ORDER BY, top-k, GROUP BY and DISTINCT
families of bench_analytic.py plus a filtered top-k.
"""
import argparse
import os
import statistics
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_busy  # noqa: E402  (data and connection)

FAMILIES = [
    "SELECT b, sum(a) FROM t GROUP BY b",
    "SELECT d, count(*), avg(c) FROM t WHERE a > 0.5 GROUP BY d",
    "SELECT a, b, c, d FROM t ORDER BY a DESC LIMIT 10",
    "SELECT a, b, c, d FROM t ORDER BY a LIMIT 10 OFFSET 100000",
    "SELECT a, b FROM t WHERE d = 1 ORDER BY a DESC LIMIT 10",
    "SELECT DISTINCT b FROM t",
    "SELECT sum(a), sum(b) FROM t",
]


def main():
    ap = argparse.ArgumentParser()
    bench_busy.data_arguments(ap, rounds=7)
    ap.add_argument("--before", required=True, help="the module built before the change")
    ap.add_argument("--after", default=None, help="the module after (default: --module)")
    ap.add_argument("sql", nargs="*")
    a = ap.parse_args()
    store = bench_busy.data_files(a)[2]
    cons = []
    for m in (a.before, a.after or a.module):
        con = bench_busy.connect(m)
        con.execute("CREATE VIRTUAL TABLE temp.t USING colstore('%s')" % store.replace("'", "''"))
        cons.append(con)
    print("bench_module_ab: %d rows, %d rounds, load average %s" % (a.rows, a.rounds, bench_busy.loadavg()))
    for q in a.sql or FAMILIES:
        if cons[0].execute(q).fetchall() != cons[1].execute(q).fetchall():
            sys.exit("bench_module_ab: the two modules answer %s differently" % q)
        ts = [[], []]
        for r in range(a.rounds):
            for i in ((0, 1) if r % 2 == 0 else (1, 0)):
                t0 = time.perf_counter()
                cons[i].execute(q).fetchall()
                ts[i].append(time.perf_counter() - t0)
        med = [statistics.median(x) for x in ts]
        print("%-62s before %9.2f [%9.2f, %9.2f]  after %9.2f [%9.2f, %9.2f]  before/after %.2fx" %
              (q, med[0] * 1e3, min(ts[0]) * 1e3, max(ts[0]) * 1e3, med[1] * 1e3, min(ts[1]) * 1e3,
               max(ts[1]) * 1e3, med[0] / med[1]))
    print("load average at the end: %s" % bench_busy.loadavg())


if __name__ == "__main__":
    main()
