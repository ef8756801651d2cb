#!/usr/bin/python3
"""bench_textpred.py - TEXT predicates through the dictionary codes (issue 26,
item 2) against the byte path they replace and native SQLite.

WHY.  A TEXT predicate compared a row's bytes with the constant, row by
row (about 12 ns a row).  cs_pred.c now tests a record's distinct values
once and maps its rows through their one-byte codes (kernels/cs_codes.c,
built on first use and cached on the snapshot).  The issue's targets are on
a 3M-row flights table: `origin = 'ORD'`, a week of TEXT dates, and a TEXT
IN list of 4 values, each at least 10x native SQLite.

DATA.  The issue's "real flights table" is not in this repository and this
host reaches no network, so the table is made here with the shape that
matters to the predicates: 3M rows in date order over 181 days of 2001
(`date` TEXT 'YYYY-MM-DD', about 16,600 rows a day, so a 65,536-row record
holds 4 or 5 dates), `origin` and `dest` TEXT drawn from 230 airport codes
with Zipf-like weights (the busiest about 5% of the rows, as ORD was;
every record meets some 200 of the 230), `dep_delay` INTEGER with 2% NULL,
`distance` INTEGER.  Seeded: the same rows every run.

HOW.  Each variant runs in a child process of its own (two builds of the
extension cannot share a process: SQLite loads extensions RTLD_GLOBAL):
`new` (this tree's build/colstore.so) at 1 and 2 kernel threads, `base`
(the module built from --base-module, the tree before this change) at 1
thread, and `native` (a plain SQLite table with the same rows).  The parent
sends one query at a time and interleaves the variants, rotating their
order each round; every answer is checked equal to native's before any
timing.  Medians with min/max over --rounds rounds; the last --busy-rounds
rounds run with one core kept busy by a spinning child.  First-query cost:
a fresh child per variant runs each query once (codes built inside it), then
again (codes cached).  --sweep adds the distinct-values sweep: 1M-row
stores whose records hold k distinct values, `count(*) WHERE s = 'v0'`
through the codes (new) and the bytes (base).

--cache opens the colstore tables with that cache option (default map, the
table's own default): through the mapping a column's pages cost this VM
microseconds each on their first touch after ~0.2 s idle, which the
interleaved rounds guarantee (docs/performance.md, "ORD in the
interleaved rounds").

    /usr/bin/python3 bench/bench_textpred.py [--rounds 7] [--busy-rounds 2] [--cache map] [--sweep]
"""
import argparse
import os
import random
import sqlite3
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
GEN_VERSION = 2

QUERIES = [
    ("origin = 'ORD'", "SELECT count(*), sum(dep_delay) FROM {T} WHERE origin = 'ORD'"),
    ("date week (TEXT range)",
     "SELECT count(*), sum(dep_delay) FROM {T} WHERE date >= '2001-03-01' AND date < '2001-03-08'"),
    ("origin IN (4 values)",
     "SELECT count(*), sum(dep_delay) FROM {T} WHERE origin IN ('ORD', 'ATL', 'DFW', 'LAX')"),
    ("origin != 'ORD'", "SELECT count(*), sum(dep_delay) FROM {T} WHERE origin != 'ORD'"),
    ("origin >= 'S' AND dest = 'ORD'",
     "SELECT count(*), sum(dep_delay) FROM {T} WHERE origin >= 'S' AND dest = 'ORD'"),
    ("origin GLOB 'O*' (prefix bounds)", "SELECT count(*), sum(dep_delay) FROM {T} WHERE origin GLOB 'O*'"),
    ("origin = 'ORD' AND distance > 1000",
     "SELECT count(*), sum(dep_delay) FROM {T} WHERE origin = 'ORD' AND distance > 1000"),
    ("GROUP BY origin (codes, unchanged path)",
     "SELECT origin, count(*) FROM {T} GROUP BY origin ORDER BY origin"),
]


def airports():
    rng = random.Random(7)
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    codes = ["ORD", "ATL", "DFW", "LAX"]
    while len(codes) < 230:
        c = "".join(rng.choice(letters) for _ in range(3))
        if c not in codes:
            codes.append(c)
    weights = [1.0 / (i + 1) ** 0.6 for i in range(len(codes))]
    return codes, weights


def gen_rows(n, seed):
    rng = random.Random(seed)
    codes, weights = airports()
    cum, acc = [], 0.0
    for w in weights:
        acc += w
        cum.append(acc)
    import bisect
    per_day = n / 181.0
    import datetime
    d0 = datetime.date(2001, 1, 1)
    for i in range(n):
        day = d0 + datetime.timedelta(days=int(i / per_day))
        o = codes[bisect.bisect_left(cum, rng.random() * acc)]
        d = codes[bisect.bisect_left(cum, rng.random() * acc)]
        delay = None if rng.random() < 0.02 else int(rng.gauss(8, 30))
        yield (day.isoformat(), o, d, delay, rng.randrange(100, 3000))


def make_native(path, columns, rows):
    """A native table `flights(columns)` of rows (an iterable) at path, once."""
    if os.path.exists(path):
        return
    con = sqlite3.connect(path + ".tmp", isolation_level=None)
    con.execute("DROP TABLE IF EXISTS flights")
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("CREATE TABLE flights(%s)" % columns)
    con.execute("BEGIN")
    con.executemany("INSERT INTO flights VALUES (%s)" % ", ".join("?" * len(columns.split(","))), rows)
    con.execute("COMMIT")
    con.close()
    os.replace(path + ".tmp", path)


def sweep_rows(rows, k):
    """'v0' on every 1000th row, else one of k - 1 other values: the rows
    selected stay few whatever k, so the time is the predicate's."""
    rng = random.Random(k)
    return (("v0" if i % 1000 == 0 else "v%d" % (1 + rng.randrange(k - 1)), i) for i in range(rows))


def make_store(module, store, native, cols):
    if os.path.exists(store):
        return
    con = sqlite3.connect(":memory:", isolation_level=None)
    con.enable_load_extension(True)
    con.load_extension(module)
    con.execute("ATTACH ? AS src", ("file:%s?mode=ro" % native,))
    con.execute("SELECT colstore_create(?, 'SELECT %s FROM src.flights ORDER BY rowid')" % cols, (store + ".tmp",))
    con.close()
    os.replace(store + ".tmp", store)


# ---------------------------------------------------------------- child

CHILD = r'''
import sqlite3, sys, time, json
module, path, threads, cache = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
if module == "-":
    con = sqlite3.connect("file:%s?mode=ro" % path, uri=True, isolation_level=None, cached_statements=0)
    T = "flights"
else:
    con = sqlite3.connect(":memory:", isolation_level=None, cached_statements=0)
    con.enable_load_extension(True)
    con.load_extension(module)
    con.execute("SELECT colstore_config('threads', ?)", (threads,))
    con.execute("CREATE VIRTUAL TABLE temp.t USING colstore('%s', cache=%s)" % (path.replace("'", "''"), cache))
    T = "t"
for line in sys.stdin:
    sql = line.strip().replace("{T}", T)
    t0 = time.perf_counter()
    rows = con.execute(sql).fetchall()
    ms = (time.perf_counter() - t0) * 1e3
    sys.stdout.write(json.dumps([ms, rows]) + "\n")
    sys.stdout.flush()
'''


class Child:
    def __init__(self, module, path, threads, cache="map"):
        self.p = subprocess.Popen([sys.executable, "-c", CHILD, module, path, str(threads), cache],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def run(self, sql):
        import json
        self.p.stdin.write(sql + "\n")
        self.p.stdin.flush()
        ms, rows = json.loads(self.p.stdout.readline())
        return ms, [tuple(r) for r in rows]

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def spinner():
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def fmt(xs):
    return "%7.2f [%6.2f, %7.2f]" % (statistics.median(xs), min(xs), max(xs))


def bench(variants, queries, rounds, busy_rounds):
    """variants: name -> Child; returns name -> query -> [ms]."""
    times = {v: {q: [] for q, _ in queries} for v in variants}
    for q, sql in queries:  # check every answer against native's first
        want = variants["native"].run(sql)[1]
        for v, c in variants.items():
            got = c.run(sql)[1]
            if got != want:
                sys.exit("bench_textpred: %s gives %r for %s, native %r" % (v, got[:3], q, want[:3]))
    names = list(variants)
    for rd in range(rounds):
        spin = spinner() if rd >= rounds - busy_rounds else None
        try:
            for q, sql in queries:
                # rotated, and reversed every other round: a fixed cyclic
                # order would run one variant right after the same other
                # one in most rounds, on the column's pages that one just
                # pulled into the shared last-level cache
                cyc = names if rd % 2 == 0 else names[::-1]
                order = cyc[rd % len(cyc):] + cyc[:rd % len(cyc)]
                for v in order:
                    times[v][q].append(variants[v].run(sql)[0])
        finally:
            if spin:
                spin.kill()
                spin.wait()
    return times


def first_vs_repeat(module, store, queries):
    """[(query, first ms, repeat ms)] on a fresh process per query."""
    out = []
    for q, sql in queries:
        c = Child(module, store, 1)
        first = c.run(sql)[0]
        again = statistics.median([c.run(sql)[0] for _ in range(3)])
        c.close()
        out.append((q, first, again))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", default=os.path.join(ROOT, "build", "colstore"))
    ap.add_argument("--base-module", default=os.path.join(ROOT, "build", "base-build", "colstore"))
    ap.add_argument("--rows", type=int, default=3_000_000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--busy-rounds", type=int, default=2)
    ap.add_argument("--cache", default="map", choices=["map", "memory", "auto"],
                    help="the colstore tables' cache option (new and base alike)")
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--sweep-only", action="store_true")
    ap.add_argument("--dir", default=os.path.join(ROOT, "build", "bench-data"))
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    base = os.path.join(a.dir, "flights-%d-v%d" % (a.rows, GEN_VERSION))
    make_native(base + "-native.db", "date TEXT, origin TEXT, dest TEXT, dep_delay INTEGER, distance INTEGER",
                gen_rows(a.rows, 1))
    make_store(a.module, base + ".cst", base + "-native.db", "date, origin, dest, dep_delay, distance")
    has_base = os.path.exists(a.base_module + ".so")
    print("load average before: %.2f %.2f %.2f" % os.getloadavg())
    if not a.sweep_only:
        flights(a, base, has_base)
    if a.sweep or a.sweep_only:
        sweep(a, has_base)
    print("load average after: %.2f %.2f %.2f" % os.getloadavg())


def flights(a, base, has_base):
    variants = {"native": Child("-", base + "-native.db", 1),
                "new 1t": Child(a.module, base + ".cst", 1, a.cache),
                "new 2t": Child(a.module, base + ".cst", 2, a.cache)}
    if has_base:
        variants["base 1t"] = Child(a.base_module, base + ".cst", 1, a.cache)
    else:
        print("no base module at %s.so: the byte path is not timed" % a.base_module)
    t = bench(variants, QUERIES, a.rounds, a.busy_rounds)
    for c in variants.values():
        c.close()
    print("%d rows, %d rounds (last %d with a core busy), colstore cache=%s; ms median [min, max]" %
          (a.rows, a.rounds, a.busy_rounds, a.cache))
    for q, _ in QUERIES:
        nat = statistics.median(t["native"][q])
        print("%-40s" % q)
        for v in variants:
            med = statistics.median(t[v][q])
            print("   %-8s %s   native/this %5.1fx" % (v, fmt(t[v][q]), nat / med))
    print("first query (codes built) vs repeated (cached), new 1t, fresh process:")
    for q, first, again in first_vs_repeat(a.module, base + ".cst", QUERIES[:3]):
        print("   %-40s first %7.2f ms   repeated %7.2f ms" % (q, first, again))
    if has_base:
        print("first query, base 1t (no codes):")
        for q, first, again in first_vs_repeat(a.base_module, base + ".cst", QUERIES[:3]):
            print("   %-40s first %7.2f ms   repeated %7.2f ms" % (q, first, again))


def sweep(a, has_base):
    print("sweep: 1M rows, k distinct values a record, 'v0' on 0.1% of the rows, "
          "count(*), sum(x) WHERE s = 'v0'")
    q = [("s = 'v0'", "SELECT count(*), sum(x) FROM {T} WHERE s = 'v0'")]
    for k in (2, 16, 64, 128, 256, 300, 4096):
        sb = os.path.join(a.dir, "sweep2-%d" % k)
        make_native(sb + "-native.db", "s TEXT, x INTEGER", sweep_rows(1_000_000, k))
        make_store(a.module, sb + ".cst", sb + "-native.db", "s, x")
        vs = {"native": Child("-", sb + "-native.db", 1), "new 1t": Child(a.module, sb + ".cst", 1)}
        if has_base:
            vs["base 1t"] = Child(a.base_module, sb + ".cst", 1)
        tt = bench(vs, q, 5, 0)
        for c in vs.values():
            c.close()
        fr = first_vs_repeat(a.module, sb + ".cst", q)[0]
        print("   k=%5d  new %s  base %s  native %s  new first %.2f ms" %
              (k, fmt(tt["new 1t"][q[0][0]]), fmt(tt["base 1t"][q[0][0]]) if has_base else "-",
               fmt(tt["native"][q[0][0]]), fr[1]))


if __name__ == "__main__":
    main()
