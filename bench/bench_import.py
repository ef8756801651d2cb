#!/usr/bin/python3
"""bench_import.py - a CSV into a store: colstore_import against the route a
user had before it (issue 23).

WHY.  Before colstore_import, the way that worked from a CSV to a typed
store was SQLite's own: `.import` into a typed native table, then
colstore_create from it, the rows stepped through SQLite's row loop twice and
stored twice.  This bench times the new route against that one on the same
file, and says how much faster it is.

HOW IT WORKS

Data (default 10M rows, seeded Python RNG): the bench table's four numeric
columns written as CSV with a header: a INTEGER id, b REAL uniform in
[0, 1000) with six decimals, c INTEGER uniform in 0..999, d REAL normal
with eight significant digits.  The file is named by row count and seed in
the data directory and reused when present.

Variants, each run in a fresh sqlite3 shell process (`sqlite3 -batch`), so
every one pays its own start and module load, as a user does:

  import        SELECT colstore_import('x.cst', 'f.csv')   (types inferred: two passes)
  import_t2     ... 'threads=2' (plain files split in chunks parsed in parallel)
  import_typed  ... 'columns=a INT64, b FLOAT64, c INT64, d FLOAT64'    (one pass)
  native        CREATE TABLE raw(a INTEGER, b REAL, c INTEGER, d REAL);
                .import --csv --skip 1 f.csv raw
                SELECT colstore_create('x.cst', 'SELECT * FROM raw')
                (the native table in a temporary database file beside the store)

Before anything is timed, every variant runs once and the stores must agree:
the same schema and, per column, count, sum, min and max, and the same
values at 1,000 random positions; against the native route floats may be
one ulp apart, because SQLite 3.40 rounds some decimal texts one ulp off
(the count of such sampled values is printed).  Then the variants run interleaved
(round r runs each once, in an order rotated by r), so a burst of load on
the host falls on all of them; each reports the median wall time with min
and max, and the median CPU time of the child (user + system), which a busy
host does not inflate.  MB/s and rows/s are the file's bytes and rows over
the median wall time.

  duckdb_t1/t2  (--duckdb) DuckDB from npm (@duckdb/node-api in build/duckdb_client, as
                bench_agg_sql.py installs it; bench/duckdb_import.mjs):
                CREATE TABLE t AS SELECT * FROM read_csv('f.csv') into a database
                file, threads 1 and 2; its row count and detected types are checked
                against the import's, and the statement's own time is printed too

--text: the text-heavy file instead (default 2M rows): id, then five TEXT
columns: name and email unquoted, comment always quoted (a fifth with an
embedded comma, one in 20 with a doubled quote, one in 30 with a newline),
city with one value in ten empty (NULL), note empty (NULL) three times in
ten and otherwise quoted with a comma inside.  The stores are compared by
each column's count, min and max (sum for the numeric ones) and 1,000
sampled rows; the variants default to import, import_t2 and (--duckdb)
DuckDB at 1 and 2 threads, against which issue 23 sets "within 1.2x".

    bench/bench_import.py [--rows N] [--rounds R] [--dir D] [--module build/colstore] [--duckdb] [--text]
"""
import argparse
import json
import math
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_csv(path, rows, seed):
    rng = random.Random(seed)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("a,b,c,d\n")
        chunk = []
        for i in range(rows):
            chunk.append("%d,%.6f,%d,%.8g\n" % (i, rng.random() * 1000, rng.randrange(1000), rng.gauss(0, 1)))
            if len(chunk) == 100000:
                f.write("".join(chunk))
                chunk = []
        f.write("".join(chunk))
    os.rename(tmp, path)


WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()
CITIES = ["Oslo", "Lisboa", "Zürich", "Kraków", "São Paulo", "Reykjavík", "Tōkyō", "Cairo", "Lima", "Perth"]


def make_text_csv(path, rows, seed):
    rng = random.Random(seed)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write("id,name,email,comment,city,note\n")
        chunk = []
        for i in range(rows):
            first, last = rng.choice(WORDS), rng.choice(WORDS)
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9)))
            r = rng.random()
            if r < 0.2:
                words += ", " + rng.choice(WORDS)
            if rng.random() < 0.05:
                words += ' said ""' + rng.choice(WORDS) + '""'
            if rng.random() < 0.033:
                words += "\n" + rng.choice(WORDS)
            city = "" if rng.random() < 0.1 else rng.choice(CITIES)
            note = "" if rng.random() < 0.3 else '"%s, %s"' % (rng.choice(WORDS), rng.choice(WORDS))
            chunk.append('%d,%s %s,%s.%s%d@example.com,"%s",%s,%s\n' % (i, first.title(), last.title(), first, last, i % 97,
                                                                       words, city, note))
            if len(chunk) == 100000:
                f.write("".join(chunk))
                chunk = []
        f.write("".join(chunk))
    os.rename(tmp, path)


def variant_sql(name, module, csv, store, native_db):
    load = ".load %s\n" % module
    if name == "import":
        return load + "SELECT colstore_import('%s', '%s', 'progress=off') ->> '$.rows';\n" % (store, csv)
    if name.startswith("import_t") and name[len("import_t"):].isdigit():
        return load + "SELECT colstore_import('%s', '%s', 'progress=off', 'threads=%s') ->> '$.rows';\n" % (
            store, csv, name[len("import_t"):])
    if name == "import_typed":
        return load + ("SELECT colstore_import('%s', '%s', 'columns=a INT64, b FLOAT64, c INT64, d FLOAT64', "
                       "'progress=off') ->> '$.rows';\n" % (store, csv))
    return (load + "ATTACH '%s' AS nat;\nCREATE TABLE nat.raw(a INTEGER, b REAL, c INTEGER, d REAL);\n"
            ".import --csv --skip 1 --schema nat %s raw\n"
            "SELECT colstore_create('%s', 'SELECT * FROM nat.raw');\n" % (native_db, csv, store))


DUCK_CLIENT = os.path.join(ROOT, "build", "duckdb_client")
DUCK_TYPES = {"BIGINT": "INT64", "DOUBLE": "FLOAT64", "VARCHAR": "TEXT"}


def duck_ready():
    """The reason the DuckDB variants cannot run, or None.  The client is
    the one bench_agg_sql.py installs into build/duckdb_client (npm
    @duckdb/node-api); this bench does not install it a second way."""
    if not shutil.which("node"):
        return "node is not installed"
    if not os.path.isdir(os.path.join(DUCK_CLIENT, "node_modules", "@duckdb", "node-api")):
        return ("@duckdb/node-api is not in %s: run bench/bench_agg_sql.py once (it installs it), "
                "or npm install @duckdb/node-api there" % DUCK_CLIENT)
    shutil.copyfile(os.path.join(ROOT, "bench", "duckdb_import.mjs"), os.path.join(DUCK_CLIENT, "duckdb_import.mjs"))
    return None


def run_duck(name, csv, workdir):
    db = os.path.join(workdir, name + ".duckdb")
    if os.path.exists(db):
        os.remove(db)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(["node", "duckdb_import.mjs", csv, db, name[len("duckdb_t"):]], cwd=DUCK_CLIENT,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        sys.exit("bench_import: variant %s failed:\n%s" % (name, p.stdout))
    secs, rows, types = p.stdout.strip().split("\t")
    os.remove(db)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return (int(rows), [(n, DUCK_TYPES.get(t, t)) for n, t in json.loads(types)], float(secs)), wall, cpu


def run_variant(name, module, csv, workdir):
    if name.startswith("duckdb_t"):
        return run_duck(name, csv, workdir)
    store = os.path.join(workdir, name + ".cst")
    native_db = os.path.join(workdir, name + ".db")
    for p in (store, native_db):
        if os.path.exists(p):
            os.remove(p)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(["sqlite3", "-batch", "-bail", ":memory:"], input=variant_sql(name, module, csv, store, native_db),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0 or "Error" in p.stdout:
        sys.exit("bench_import: variant %s failed:\n%s" % (name, p.stdout))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if os.path.exists(native_db):
        os.remove(native_db)
    return store, wall, cpu


def fingerprint(module, store, rows, seed):
    """The schema, per-column count/sum/min/max and sampled rows of a store
    (a TEXT column's sum is its count again, so every column has four)."""
    import sqlite3
    con = sqlite3.connect(":memory:")
    con.enable_load_extension(True)
    con.load_extension(module)
    con.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % store)
    info = [tuple(r) for r in con.execute("SELECT value ->> '$.name', value ->> '$.type' FROM json_each(colstore_info('%s'), '$.columns')"
                                          % store)]
    aggs = con.execute("SELECT " + ", ".join("count(%s), %s(%s), min(%s), max(%s)" % (n, "count" if t == "TEXT" else "sum", n, n, n)
                                             for n, t in info) + " FROM t").fetchone()
    rng = random.Random(seed)
    picks = sorted(rng.randrange(rows) for _ in range(min(rows, 1000)))
    sample = [con.execute("SELECT * FROM t WHERE rowid = ?", (p,)).fetchone() for p in picks]
    con.close()
    return info, aggs, sample


def same_value(a, b, loose):
    if isinstance(a, float) and isinstance(b, float) and loose:
        return abs(a - b) <= math.ulp(a), a != b
    return a == b, False


def same_stores(x, y, loose):
    """Fingerprints equal: exactly, or (loose) floats within an ulp and
    float sums within 1e-12 relative."""
    if x[0] != y[0]:
        return False, 0
    for i, (a, b) in enumerate(zip(x[1], y[1])):
        if i % 4 == 1 and isinstance(a, float) and loose:  # sum(...) of a float column
            if abs(a - b) > 1e-12 * max(abs(a), 1.0):
                return False, 0
        elif not same_value(a, b, loose)[0]:
            return False, 0
    ulps = 0
    for ra, rb in zip(x[2], y[2]):
        for a, b in zip(ra, rb):
            ok, off = same_value(a, b, loose)
            if not ok:
                return False, 0
            ulps += off
    return True, ulps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10000000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=23)
    ap.add_argument("--dir", default=os.path.join(ROOT, "build", "bench-import"))
    ap.add_argument("--module", default=os.path.join(ROOT, "build", "colstore"))
    ap.add_argument("--variants", default="import,import_t2,import_typed,native")
    ap.add_argument("--duckdb", action="store_true", help="add DuckDB's read_csv into a database file at 1 and 2 threads")
    ap.add_argument("--text", action="store_true", help="the text-heavy file (quoted fields, delimiters and newlines in them, NULLs)")
    args = ap.parse_args()
    if args.text and args.rows == ap.get_default("rows"):
        args.rows = 2000000
    if args.text and args.variants == ap.get_default("variants"):
        args.variants = "import,import_t2"
    if not shutil.which("sqlite3"):
        sys.exit("bench_import: needs the sqlite3 shell")
    os.makedirs(args.dir, exist_ok=True)
    module = os.path.abspath(args.module)
    csv = os.path.join(args.dir, "bench_%s%d_%d.csv" % ("text_" if args.text else "", args.rows, args.seed))
    if not os.path.exists(csv):
        print("writing %s ..." % csv, flush=True)
        (make_text_csv if args.text else make_csv)(csv, args.rows, args.seed)
    size = os.path.getsize(csv)
    variants = args.variants.split(",")
    print("file: %s, %d rows, %.1f MB; %d rounds, interleaved" % (csv, args.rows, size / 1e6, args.rounds), flush=True)

    if args.duckdb:
        why = duck_ready()
        if why:
            print("no DuckDB variants: %s" % why)
        else:
            variants += ["duckdb_t1", "duckdb_t2"]

    # Identical results first.
    prints, ducks = {}, {}
    for v in variants:
        out, _, _ = run_variant(v, module, csv, args.dir)
        if v.startswith("duckdb_t"):
            ducks[v] = out
        else:
            prints[v] = fingerprint(module, out, args.rows, args.seed)
    first = variants[0]
    for v, (rows, types, _) in ducks.items():
        # DuckDB's table is not read back value by value: its row count and
        # detected types must be colstore's.
        if rows != prints[first][1][0] or types != prints[first][0]:
            sys.exit("bench_import: %s made %d rows typed %r; %s %d typed %r" % (v, rows, types, first, prints[first][1][0],
                                                                               prints[first][0]))
    for v in [v for v in variants if v in prints][1:]:
        # The native route types columns from the declared affinities: the
        # same INT64/FLOAT64 schema as the import's inference.  Its REAL
        # values are SQLite 3.40's text-to-double conversion, which is one
        # ulp off the correctly rounded double for some texts (about 1 in
        # 4,000 of %.8g here; colstore_import is correctly rounded), so a
        # float from it may differ by one ulp and its sums in the last bits.
        loose = "native" in (v, first)
        same, ulps = same_stores(prints[first], prints[v], loose)
        if not same:
            sys.exit("bench_import: %s and %s stores differ:\n%r\n%r" % (first, v, prints[first][:2], prints[v][:2]))
        if ulps:
            print("%s vs %s: %d of the sampled floats one ulp apart (SQLite's rounding)" % (first, v, ulps))
    print("stores identical (schema %s; aggregates and 1,000 sampled rows)" % prints[first][0], flush=True)

    walls = {v: [] for v in variants}
    cpus = {v: [] for v in variants}
    duck_secs = {v: [] for v in ducks}
    for r in range(args.rounds):
        order = variants[r % len(variants):] + variants[:r % len(variants)]
        for v in order:
            out, wall, cpu = run_variant(v, module, csv, args.dir)
            if v in duck_secs:
                duck_secs[v].append(out[2])
            walls[v].append(wall)
            cpus[v].append(cpu)
        print("round %d: %s" % (r + 1, "  ".join("%s %.2fs" % (v, walls[v][-1]) for v in variants)), flush=True)
    print()
    print("%-13s %9s %9s %9s %9s %9s %11s" % ("variant", "median s", "min s", "max s", "cpu s", "MB/s", "rows/s"))
    for v in variants:
        med = statistics.median(walls[v])
        print("%-13s %9.2f %9.2f %9.2f %9.2f %9.1f %11.0f" % (v, med, min(walls[v]), max(walls[v]),
                                                            statistics.median(cpus[v]), size / 1e6 / med, args.rows / med))
    if "native" in walls and len(variants) > 1:
        base = statistics.median(walls["native"])
        for v in variants:
            if v != "native":
                print("%s: %.1fx the native route (wall), %.1fx (cpu)" % (
                    v, base / statistics.median(walls[v]), statistics.median(cpus["native"]) / statistics.median(cpus[v])))
    for v, secs in duck_secs.items():
        print("%s: its CREATE TABLE AS statement alone, median %.2f s (the wall time above adds node's start)" % (
            v, statistics.median(secs)))
    for v in variants:
        for ext in (".cst", ".db"):
            p = os.path.join(args.dir, v + ext)
            if os.path.exists(p):
                os.remove(p)


if __name__ == "__main__":
    main()
