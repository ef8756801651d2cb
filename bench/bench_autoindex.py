#!/usr/bin/python3
"""bench_autoindex.py - inner loops on a colstore column: a correlated
subquery and a join that filter the colstore table once per outer row by
`cs.a = t.x`, with the automatic index (core/kernels/cs_index.c) against
the scan it replaces and native SQLite.

WHY.  SQLite calls xFilter once per outer row for such a loop; each filter
scanned the whole column, so the query was O(outer x rows).  Native SQLite
builds an automatic index for a join's inner loop (and, from 3.4x on, for
some subqueries); a virtual table gets none.  The colstore table now builds
its own after a few filters of one column within a snapshot.

DATA.  `cs` of --rows rows: a INTEGER uniform over rows/10 values (about ten
rows a value, in no order: the zone maps skip nothing), b REAL, c INTEGER;
`t` of --outer rows, x INTEGER drawn over the same values, y INTEGER.  Made
in SQL from a multiplicative hash of the row number: the same rows every
run.  The colstore store is made from the native table by colstore_create,
so `native` reads the same rows.

VARIANTS, each in a child process of its own (two builds of the extension
cannot share a process): `new` (this tree's build/colstore.so), `base`
(--base-module, the tree before the change) and `native` (the plain SQLite
table `src`, no index of its own: SQLite's automatic index is its anchor)
and `indexed` (a copy with CREATE INDEX on a, made before timing: what a
native table with an index does); `scan` and `index`, this tree's build
with COLSTORE_AUTOINDEX_RANGE_PPM=0 (every range scans: the tree before
ranges went through the index) and =1000000 (every range through it), for
the range-correlated `window` queries (`a BETWEEN t.x AND t.x + W`, and
two bounds in a join; --window W) and the crossover of the width rule.
Each child runs the query twice on a fresh connection: `first` (the index
built inside it) and `again` (the index reused: same snapshot).  Rounds
interleave the variants, rotating their order; every answer is checked equal
to native's.  A run past --limit seconds is interrupted and shown as such.
Medians with min/max.
"""
import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

QUERIES = {
    "correlated": "SELECT sum(s) FROM (SELECT t.x, (SELECT count(*) FROM {cs} WHERE {cs}.a = t.x) s FROM t)",
    "in-subquery": "SELECT count(*) FROM t WHERE t.y IN (SELECT c % 100 FROM {cs} WHERE {cs}.a = t.x)",
    "join (cs inner)": "SELECT count(*), sum({cs}.c) FROM t CROSS JOIN {cs} ON {cs}.a = t.x",
    "join (planner)": "SELECT count(*), sum({cs}.c) FROM t JOIN {cs} ON {cs}.a = t.x",
    # range-correlated: a window of --window + 1 values of a (about ten rows a value)
    "window": "SELECT sum(s) FROM (SELECT (SELECT count(*) FROM {cs} WHERE {cs}.a BETWEEN t.x AND t.x + {w}) s "
              "FROM t)",
    "window (2 bounds)": "SELECT count(*), sum({cs}.c) FROM t CROSS JOIN {cs} ON {cs}.a > t.x AND {cs}.a <= t.x + {w}",
}
# variants of this tree's build by environment: the range rule off (every
# range scans, as before ranges went through the index) and always on
ENV = {"scan": {"COLSTORE_AUTOINDEX_RANGE_PPM": "0"}, "index": {"COLSTORE_AUTOINDEX_RANGE_PPM": "1000000"}}


def child(args):
    con = sqlite3.connect(args.db, isolation_level=None)
    table = "srci" if args.indexed else "src"
    if args.module:
        con.enable_load_extension(True)
        con.load_extension(args.module)
        con.execute("CREATE VIRTUAL TABLE temp.cs USING colstore('%s')" % args.store)
        table = "cs"
    sql = QUERIES[args.query].format(cs=table, w=args.window)
    deadline = [0.0]
    con.set_progress_handler(lambda: 1 if time.monotonic() > deadline[0] else 0, 100000)
    out = []
    for _ in range(2):
        deadline[0] = time.monotonic() + args.limit
        t0 = time.perf_counter()
        try:
            ans = con.execute(sql).fetchall()
        except sqlite3.OperationalError:
            ans = None
        out.append({"s": time.perf_counter() - t0, "answer": repr(ans)})
    print(json.dumps(out))


def make_data(path, store, module, n, m, indexed):
    con = sqlite3.connect(path, isolation_level=None)
    v = max(n // 10, 1)
    con.execute("CREATE TABLE src(a INTEGER, b REAL, c INTEGER)")
    con.execute("WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < ?) "
                "INSERT INTO src SELECT (i * 2654435761) %% %d, i * 0.25, i FROM r" % v, (n - 1,))
    con.execute("CREATE TABLE t(x INTEGER, y INTEGER)")
    con.execute("WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < ?) "
                "INSERT INTO t SELECT (i * 40503 + 7) %% %d, i %% 100 FROM r" % v, (m - 1,))
    if indexed:
        con.execute("CREATE TABLE srci AS SELECT * FROM src")
        con.execute("CREATE INDEX srci_a ON srci(a)")
    con.enable_load_extension(True)
    con.load_extension(module)
    con.execute("SELECT colstore_create(?, 'SELECT a, b, c FROM src')", (store,))
    con.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--db")
    ap.add_argument("--store")
    ap.add_argument("--module")
    ap.add_argument("--query")
    ap.add_argument("--indexed", action="store_true")
    ap.add_argument("--rows", type=int, default=1000000)
    ap.add_argument("--outer", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--limit", type=float, default=30.0)
    ap.add_argument("--window", type=int, default=9)
    ap.add_argument("--base-module", default="/work/base-autoindex/build/colstore")
    ap.add_argument("--queries", default=",".join(QUERIES))
    ap.add_argument("--variants", default="new,base,native,indexed")
    args = ap.parse_args()
    if args.child:
        return child(args)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    new = os.path.join(here, "build", "colstore")
    mods = {"new": new, "base": args.base_module, "native": None, "indexed": None, "scan": new, "index": new}
    variants = args.variants.split(",")
    with tempfile.TemporaryDirectory(prefix="bench-autoindex-") as d:
        db, store = os.path.join(d, "n.db"), os.path.join(d, "c.cst")
        t0 = time.time()
        make_data(db, store, mods["new"], args.rows, args.outer, "indexed" in variants)
        print("# window %d; %d inner rows, %d outer rows, data made in %.1f s; load %s; SQLite %s" % (
            args.window, args.rows, args.outer, time.time() - t0, os.getloadavg(), sqlite3.sqlite_version), flush=True)
        for q in args.queries.split(","):
            res = {v: {"first": [], "again": []} for v in variants}
            answers = {}
            for rnd in range(args.rounds):
                order = variants[rnd % len(variants):] + variants[:rnd % len(variants)]
                for v in order:
                    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--db", db, "--store", store,
                           "--query", q, "--limit", str(args.limit), "--window", str(args.window)]
                    if mods[v]:
                        cmd += ["--module", mods[v]]
                    if v == "indexed":
                        cmd += ["--indexed"]
                    env = dict(os.environ, **ENV.get(v, {}))
                    out = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True,
                                                    env=env).stdout)
                    for k, r in zip(("first", "again"), out):
                        res[v][k].append(r["s"] if r["answer"] != "None" else float("inf"))
                        if r["answer"] != "None":
                            answers.setdefault(r["answer"], set()).add(v)
            if len(answers) > 1:
                sys.exit("answers differ for %s: %s" % (q, answers))
            print("%-16s" % q, flush=True)
            for v in variants:
                for k in ("first", "again"):
                    xs = res[v][k]
                    fin = [x for x in xs if x != float("inf")]
                    if len(fin) < len(xs):
                        print("    %-7s %-6s over the %.0f s limit in %d of %d rounds" % (
                            v, k, args.limit, len(xs) - len(fin), len(xs)))
                        continue
                    print("    %-7s %-6s median %9.4f s  min %9.4f  max %9.4f" % (
                        v, k, statistics.median(xs), min(xs), max(xs)))
            print("    load %s" % (os.getloadavg(),), flush=True)


if __name__ == "__main__":
    main()
