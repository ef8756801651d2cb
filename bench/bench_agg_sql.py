#!/usr/bin/python3
"""bench_agg_sql.py - colstore_agg aggregate tables against SQLite's own
GROUP BY (native and over the colstore table) and DuckDB (issue 10).

WHY.  SQLite steps every row of a virtual table through its aggregates, so
`SELECT b, sum(a) FROM t GROUP BY b` costs SQLite's per-row work however
fast colstore reads.  An aggregate table moves the aggregation into
colstore's kernels; the question is whether that is as fast as a column
engine.  DuckDB, in memory, on the same rows and the same thread count, is
the yardstick the issue names.

HOW.  Data: bench_busy.py's table (10M rows: a uniform, b 0..999, c normal,
d 10% ones) plus, for the TEXT key, a second store with
kind = one of five words by b % 5 (written once with colstore_create).
DuckDB runs in a child process (bench/duckdb_agg.mjs, @duckdb/node-api from
npm, installed into build/duckdb_client) that loads the same rows from a CSV
written with exact float text, and answers one query per line, so its runs
interleave with colstore's round by round.  Without node, npm or the
package, DuckDB is skipped with the reason printed.

Each query runs as: the aggregate table at 1 and 2 kernel threads
(colstore_config('threads')), DuckDB at 1 and 2 threads, SQLite's GROUP BY
over the colstore table, and over the native table (the slow ones only in
the first --native-rounds rounds).  Every variant's answer is checked
against native's first (counts exact, sums and averages to 1e-9 relative;
DuckDB, loaded from text, to 1e-6).  Medians with min/max; the order of the
variants rotates each round.  Targets (issue 10): totals <= 1 ms; filtered
sum and the two GROUP BYs faster than DuckDB at 1 and 2 threads; the TEXT
and 2-column keys within 2x of the integer key.  Exits 0 either way.

    /usr/bin/python3 bench/bench_agg_sql.py [--rounds 5] [--native-rounds 1] [--no-duckdb] [--json FILE]

--json writes every run's times (ms), the medians and the DuckDB version to
FILE for bench/plot.py.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_busy  # noqa: E402  (data generation and connection, shared)

ROOT = os.path.dirname(HERE)
KIND = ("CASE b % 5 WHEN 0 THEN 'muon' WHEN 1 THEN 'electron' WHEN 2 THEN 'photon' "
        "WHEN 3 THEN 'jet' ELSE 'tau' END")

# name, aggregate-table sql, the same as SQL over a table named {T} with a
# `kind` column ({K} when it must be computed), target kind
QUERIES = [
    ("totals", "SELECT count, sum_a, min_c, max_c FROM tot",
     "SELECT count(*), sum(a), min(c), max(c) FROM {T}", "ms1"),
    ("sum_b WHERE a > 0.9", "SELECT sum_b FROM tot WHERE a > 0.9",
     "SELECT sum(b) FROM {T} WHERE a > 0.9", "duck"),
    ("by b: sum_a", "SELECT b, sum_a FROM by_b",
     "SELECT b, sum(a) FROM {T} GROUP BY b", "duck"),
    ("by d WHERE a > 0.5: count, avg_c", "SELECT d, count, avg_c FROM by_d WHERE a > 0.5",
     "SELECT d, count(*), avg(c) FROM {T} WHERE a > 0.5 GROUP BY d", "duck"),
    ("by kind (TEXT): count, sum_a", "SELECT kind, count, sum_a FROM by_kind",
     "SELECT {K} AS kind, count(*), sum(a) FROM {T} GROUP BY 1", "2x"),
    ("by b, d: count, sum_a", "SELECT b, d, count, sum_a FROM by_bd",
     "SELECT b, d, count(*), sum(a) FROM {T} GROUP BY b, d", "2x"),
]
SLOW = ("native", "colstore GROUP BY")


def close(x, y, rtol):
    if isinstance(x, float) or isinstance(y, float):
        return x == y or abs(x - y) <= rtol * max(abs(x), abs(y), 1e-300)
    return x == y


def same(r1, r2, rtol):
    key = lambda r: tuple((v is None, v if not isinstance(v, str) else 0, v if isinstance(v, str) else "") for v in r)  # noqa: E731
    r1, r2 = sorted(map(tuple, r1), key=key), sorted(map(tuple, r2), key=key)
    return len(r1) == len(r2) and all(len(a) == len(b) and all(close(x, y, rtol) for x, y in zip(a, b))
                                      for a, b in zip(r1, r2))


class Duck:
    """The DuckDB child, or None with the reason it is not there."""

    def __init__(self, csv, client):
        self.proc = None
        self.why = None
        if not shutil.which("node") or not shutil.which("npm"):
            self.why = "node or npm is not installed"
            return
        os.makedirs(client, exist_ok=True)
        if not os.path.isdir(os.path.join(client, "node_modules", "@duckdb", "node-api")):
            if not os.path.exists(os.path.join(client, "package.json")):
                with open(os.path.join(client, "package.json"), "w") as f:
                    f.write('{"name": "colstore-duckdb-bench", "private": true, "type": "module"}\n')
            r = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", "@duckdb/node-api"],
                               cwd=client, capture_output=True, text=True, timeout=600)
            if r.returncode != 0:
                self.why = "npm install @duckdb/node-api failed: %s" % (r.stderr.strip().splitlines() or ["?"])[-1]
                return
        script = os.path.join(client, "duckdb_agg.mjs")
        shutil.copyfile(os.path.join(HERE, "duckdb_agg.mjs"), script)
        self.proc = subprocess.Popen(["node", script], cwd=client, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)
        self.proc.stdin.write(csv + "\n")
        ready = self.proc.stdout.readline().split()
        if not ready or ready[0] != "ready":
            self.why = "the DuckDB child did not start (%r)" % ready
            self.proc = None
            return
        self.rows = int(ready[1])
        try:
            with open(os.path.join(client, "node_modules", "@duckdb", "node-api", "package.json")) as f:
                api = json.load(f).get("version", "?")
        except (OSError, ValueError):
            api = "?"
        self.version = "DuckDB %s (@duckdb/node-api %s)" % (self.run("SELECT version()", 1)[1][0][0], api)

    def run(self, sql, threads):
        self.proc.stdin.write("%d\t%s\n" % (threads, sql.replace("\n", " ")))
        secs, rows = self.proc.stdout.readline().rstrip("\n").split("\t", 1)
        return float(secs), json.loads(rows)


def write_csv(native, csv):
    if os.path.exists(csv):
        return
    import sqlite3
    src = sqlite3.connect("file:%s?mode=ro" % native, uri=True)
    tmp = csv + ".tmp"
    with open(tmp, "w") as f:
        for a, b, c, d in src.execute("SELECT a, b, c, d FROM native ORDER BY rowid"):
            f.write("%r,%d,%r,%d\n" % (a, b, c, d))
    src.close()
    os.rename(tmp, csv)


def main():
    ap = argparse.ArgumentParser()
    bench_busy.data_arguments(ap, rounds=5)
    ap.add_argument("--native-rounds", type=int, default=1)
    ap.add_argument("--no-duckdb", action="store_true")
    ap.add_argument("--json", metavar="FILE", help="also write the runs and medians to FILE")
    a = ap.parse_args()
    doc = dict(meta=bench_busy.json_meta("bench_agg_sql", a), queries=[]) if a.json else None
    base, native, store = bench_busy.data_files(a)
    kstore, csv = base + "-kind.cst", base + ".csv"
    con = bench_busy.connect(a.module, native)
    if not os.path.exists(kstore):
        con.execute("SELECT colstore_create(?, 'SELECT a, b, c, d, %s AS kind FROM native ORDER BY rowid')"
                    % KIND.replace("'", "''"), (kstore + ".tmp",))
        os.rename(kstore + ".tmp", kstore)
    for p in (native, store, kstore):
        bench_busy.warm_file(p)
    con.execute("CREATE VIRTUAL TABLE temp.t USING colstore('%s')" % store.replace("'", "''"))
    con.execute("CREATE VIRTUAL TABLE temp.tk USING colstore('%s')" % kstore.replace("'", "''"))
    for name, args in (("tot", "t"), ("by_b", "t, b"), ("by_d", "t, d"), ("by_bd", "t, b, d"), ("by_kind", "tk, kind")):
        con.execute("CREATE VIRTUAL TABLE temp.%s USING colstore_agg(%s)" % (name, args))
    duck = None
    if a.no_duckdb:
        why = "--no-duckdb"
    else:
        write_csv(native, csv)
        duck = Duck(csv, os.path.join(ROOT, "build", "duckdb_client"))
        why = duck.why
        if duck.proc is None:
            duck = None
    print("bench_agg_sql: %d rows, %d rounds (native and SQLite GROUP BY: %d), sqlite %s, load average %s" %
          (a.rows, a.rounds, a.native_rounds, con.execute("SELECT sqlite_version()").fetchone()[0],
           open("/proc/loadavg").read().split()[:3]))
    print("DuckDB: %s" % ("in memory, %d rows loaded" % duck.rows if duck else "skipped (%s)" % why))

    def variants(q):
        name, agg_sql, sql, _ = q
        native_sql = sql.format(T="native", K=KIND)
        cs_sql = sql.format(T="tk" if "kind" in name else "t", K="kind" if "kind" in name else KIND)
        duck_sql = sql.format(T="t", K="kind")
        out = [("agg 1t", lambda: run_cs(agg_sql, 1)), ("agg 2t", lambda: run_cs(agg_sql, 2))]
        if duck:
            out += [("duckdb 1t", lambda: duck.run(duck_sql, 1)), ("duckdb 2t", lambda: duck.run(duck_sql, 2))]
        out += [("colstore GROUP BY", lambda: run_cs(cs_sql, 0)), ("native", lambda: run_cs(native_sql, 0))]
        return out

    def run_cs(sql, threads):
        if threads:
            con.execute("SELECT colstore_config('threads', %d)" % threads).fetchall()
        t0 = time.perf_counter()
        rows = con.execute(sql).fetchall()
        return time.perf_counter() - t0, rows

    times, plans = {}, {}
    for q in QUERIES:
        vs = variants(q)
        want = None
        for vname, fn in reversed(vs):  # native first: the reference
            _, rows = fn()
            if want is None:
                want = rows
            elif not same(rows, want, 1e-6 if vname.startswith("duckdb") else 1e-9):
                sys.exit("bench_agg_sql: %s: %s differs from native: %r vs %r" % (q[0], vname, rows[:3], want[:3]))
            if vname == "agg 1t":
                info = json.loads(con.execute("SELECT colstore_last_plan()").fetchone()[0])
                eqp = " / ".join(r[3] for r in con.execute("EXPLAIN QUERY PLAN " + q[1]))
                plans[q[0]] = (eqp, info.get("kernels"), info.get("kernel_us"), info.get("threads"))
        times[q[0]] = {v: [] for v, _ in vs}
    for r in range(a.rounds):
        for q in QUERIES:
            vs = variants(q)
            k = r % len(vs)
            for vname, fn in vs[k:] + vs[:k]:
                if vname in SLOW and r >= a.native_rounds:
                    continue
                t, _ = fn()
                times[q[0]][vname].append(t)
    con.execute("SELECT colstore_config('threads', 0)").fetchall()

    med = lambda xs: statistics.median(xs) if xs else float("nan")  # noqa: E731
    print("\nmedian [min, max] ms; ratio = other / aggregate table at the same threads (medians)")
    int_key = None
    for name, agg_sql, _, target in QUERIES:
        t = times[name]
        print("\n%s\n  %s" % (name, agg_sql))
        for vname, xs in t.items():
            if xs:
                print("  %-18s %10.3f [%10.3f, %10.3f]" % (vname, med(xs) * 1e3, min(xs) * 1e3, max(xs) * 1e3))
        a1, a2 = med(t["agg 1t"]), med(t["agg 2t"])
        notes = []
        if duck:
            notes.append("duckdb/agg %.2fx at 1t, %.2fx at 2t" % (med(t["duckdb 1t"]) / a1, med(t["duckdb 2t"]) / a2))
        notes.append("native/agg %.0fx, colstore GROUP BY/agg %.0fx" % (med(t["native"]) / a1, med(t["colstore GROUP BY"]) / a1))
        best = min(a1, a2)
        if target == "ms1":
            notes.append("%s (target <= 1 ms)" % ("PASS" if best <= 1e-3 else "FAIL"))
        elif target == "duck" and duck:
            ok = med(t["duckdb 1t"]) > a1 and med(t["duckdb 2t"]) > a2
            notes.append("%s (target: faster than DuckDB at 1 and 2 threads)" % ("PASS" if ok else "FAIL"))
        elif target == "2x" and int_key:
            notes.append("%.2fx the integer key (by b) %s (target <= 2x)" % (best / int_key, "PASS" if best <= 2 * int_key else "FAIL"))
        if name.startswith("by b:"):
            int_key = best
        eqp, kernels, kus, threads = plans[name]
        print("  " + "; ".join(notes))
        print("  plan: %s | kernel: %s | kernel %.2f ms at 1 thread" % (eqp, kernels, (kus or 0) / 1e3))
        if doc is not None:
            doc["queries"].append(dict(name=name, sql=agg_sql, target=target, notes=notes,
                                       variants={v: bench_busy.ms_list(xs) for v, xs in t.items() if xs}))
    if doc is not None:
        doc["meta"]["native_rounds"] = a.native_rounds
        doc["meta"]["duckdb"] = duck.version if duck else None
        doc["meta"]["duckdb_skipped"] = None if duck else why
        bench_busy.write_json(a.json, doc)


if __name__ == "__main__":
    main()
