#!/usr/bin/python3
"""bench_busy.py - push-down speed as a user's session sees it on a host whose
other cores are sometimes busy and sometimes asleep.

WHY.  Issue 12: bench_sql times each query in a loop of runs that follow one
another closely, so the kernels' OpenMP helpers are usually awake when a
query starts.  A user's session is not like that.  A colstore query may
follow a long native query (the other core has been idle long enough for
the helper to stop spinning and sleep in the kernel, and the first parallel
region waits for it to be scheduled again: bench_wake.c measures that wait
alone), or run while another process holds a core (a helper that has no
core stalls its whole region).  This bench times the same push-down queries
in those situations, through Python's sqlite3 module the way a user calls
them, and says whether any of them is much slower than back to back.

HOW IT WORKS

Data (default 10M rows, seeded Python RNG): a REAL uniform in [0, 1), b
INTEGER uniform in 0..999, c REAL normal (gauss), d INT32 1 for 10% of the
rows else 0.  The rows go into a native table `native` in a database file;
the store is written from that file with colstore_create (the native file
attached, rows in rowid order, declared types kept: d becomes an INT32
column), so both hold the same rows: colstore position i is native rowid
i + 1.  Files are named by row count, seed and generator version in the
data directory and reused when present.  Both files are read once before
anything is timed (page cache warm).

The queries, each a colstore variant against a native one on the same rows:

  1  count(*) WHERE a > 0.99                  (predicate, 1% selected)
  2  sum(b) WHERE a > 0.9                     (predicate, 10% selected)
  3  a, b, c WHERE _rows = ?                  (10,000 random positions as a
     BLOB) against native `rowid IN (10,000 literals)`
  4  sum(a) WHERE rowid IN (10,000 literals)  (both sides)
  5  sum(a) WHERE rowid BETWEEN lo AND hi     (10% of the rows)

The lists are the same distinct positions in the same random order, 0-based
for colstore and 1-based for native.  Before anything is timed every query's
two variants must agree: counts, integer sums and the selected rows exactly
(for query 3 also each row's position, so the rows are the right ones, not
just the same multiset), floating sums within a relative 1e-9 (colstore may
add in another order than SQLite's row loop; whether they were also bit for
bit equal is printed).  Every timed run is checked against that answer too.
Any disagreement exits nonzero before or instead of reporting times.

The modes, each timing the colstore variant (wall clock, perf_counter
around execute + fetchall; the thread's CPU time beside it):

  A  back to back: the colstore query, then the same query again, timed;
  B  after native: the native variant (timed too), then the colstore one;
  C  after a long native scan: `SELECT sum(a) FROM native` (some hundreds
     of ms on one thread; not in the results, its median printed), then
     colstore;
  D  A and B again while a spinning process (a Python busy loop) keeps one
     core busy.  The spinner is started once for the phase and paused
     (SIGSTOP) and resumed (SIGCONT) between runs, so each spinning run has
     quiet twins in the same round: Q (back to back, spinner paused) and QB
     (after native, spinner paused).  D/A is the spinning run over its quiet
     twin measured minutes apart at most seconds, not over mode A of
     another phase, so the host's drift stays out of it.  The native query
     of DB over the one of QB is the host's own slowdown: SQLite alone, one
     thread, no colstore code.  Where that is above 1.5x too, the spinner
     slows every program here (on the development host the two vCPUs share
     one physical core's caches and memory pipeline), and the report
     prints D/A divided by it beside the raw one;
  S  (information, no target) after the process slept IDLE_S (0.5 s): the
     gap of C without the native scan, so a slow C can be told apart into
     "something went to sleep or cold while time passed" (S slow too) and
     "the native scan itself evicted something" (S fast).

A, B, C and S run interleaved: each round runs every query in every mode,
the order of the modes rotated from round to round and from query to query,
so drift on the shared host (other engineers' builds) hits all modes alike.
D is its own phase, since the spinner is either there or not; its A and B
alternate within it.

Reported per query: the median [min, max] of each mode, the thread's CPU
time, the threads each run used and the kernel time (colstore_last_plan()
after each timed run), the process's page faults during the run, the
slowdowns C/A and D/A against the target "no query more than 1.5x slower
right after a long native query, or with one core busy, than back to back",
and the ratios native/colstore of medians in B and in D against the speed-up
targets (40, 10, 10, 2.5, 1.5).  One colstore_last_plan() JSON per query is
printed once, from the check run.  The exit status is 0 whether or not a
target is met: this reports, it does not test.

The choices a reader might question:

- Every statement is prepared, run and finalized per run (the connection's
  statement cache is off).  The literal-list variants must be, because
  parsing the list is the cost a bound BLOB avoids, and Python's cache would
  otherwise keep the prepared 10,000-literal statement.  For the short
  statements this adds a prepare of some tens of microseconds to both sides.
- Python's row building is in the times: query 3 returns 10,000 rows of
  three columns to Python on both sides, which is what a user pays.  Its
  floor, the same rows fetched from a small temp table (SQLite's own row
  loop and Python's, no colstore), is timed as query 6 in every mode like
  the others, so the ratio can be read against bench_sql's, which has no
  such floor, and query 3's slowdowns against the floor's own: whatever
  slows the floor after a pause is SQLite's and Python's, not colstore's.
- No cache eviction between runs (bench_sql evicts): a user repeating a
  query finds its data in cache, and a long scan before it pushes it out.
  That is part of what a session sees, so C/A can include cache misses as
  well as waiting for a helper; the thread counts and kernel times beside
  the medians tell the two apart (a wait shows as wall time with threads 2
  and kernel time that grows, cache misses as thread-CPU time that grows).
  A virtual machine can add a cost of its own: on the development host (a
  Firecracker VM on PVM) a page of a file mapping not touched for about
  0.2 s cost 2-5 us on its next touch, as CPU time with no page fault the
  guest sees, where anonymous memory did not.  Mode S and the fault counts
  are there to make such a cost visible.
- Python's garbage collector is off while timing and run between rounds:
  its pauses would land in random runs and are not colstore's.
- --cache memory|both (issue 12): the colstore side is a table with
  cache=memory (the store copied into the process's memory at CREATE), or,
  with both, that table beside the default cache=map one: every query then
  runs on each in every mode, the two variants next to each other in every
  round (which one goes first alternates), so drift on the host hits both
  alike; the summary ends with map over memory per mode.  The copy's cost at
  CREATE (colstore_info's cache) is printed.  Mode S is where the mapping's
  aging shows and the copy should not.

    /usr/bin/python3 bench/bench_busy.py [--module build/colstore] [--rows 10000000]
        [--rounds 7] [--dir build/bench-data] [--no-spinner] [--queries 1,3,5] [--cache map|memory|both]
        [--json FILE]
    make bench-quick              # --rounds 5
"""
import argparse
import gc
import json
import multiprocessing
import os
import random
import resource
import shlex
import signal
import sqlite3
import statistics
import struct
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEN_VERSION = 1  # bump when the data generator changes
LIST_ROWS = 10_000
FLOAT_RTOL = 1e-9
SLOWDOWN_TARGET = 1.5
LONG_SCAN = "SELECT sum(a) FROM native"
IDLE_S = 0.5  # mode S: about the long scan's time on the development host


# ------------------------------------------------------------------ data

def data_arguments(ap, rounds):
    """The options every bench over this table takes (module, size, seed, rounds, directory)."""
    ap.add_argument("--module", default=os.path.join(ROOT, "build", "colstore"))
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=rounds)
    ap.add_argument("--dir", default=os.path.join(ROOT, "build", "bench-data"))


def data_files(a):
    """(base, native, store) for parsed data_arguments, made when missing."""
    os.makedirs(a.dir, exist_ok=True)
    base = os.path.join(a.dir, "busy-%d-s%d-v%d" % (a.rows, a.seed, GEN_VERSION))
    native, store = base + "-native.db", base + ".cst"
    make_native(native, a.rows, a.seed)
    make_store(a.module, store, native)
    return base, native, store


def connect(module, native_path=None):
    """A connection as a user opens one, with the statement cache off."""
    if native_path:
        con = sqlite3.connect("file:%s?mode=ro" % native_path, uri=True, isolation_level=None,
                              cached_statements=0)
    else:
        con = sqlite3.connect(":memory:", isolation_level=None, cached_statements=0)
    con.enable_load_extension(True)
    con.load_extension(module)
    con.enable_load_extension(False)
    return con


def gen_rows(n, seed):
    rng = random.Random(seed)
    rand, randrange, gauss = rng.random, rng.randrange, rng.gauss
    for _ in range(n):
        yield (rand(), randrange(1000), gauss(0.0, 1.0), 1 if rand() < 0.1 else 0)


def make_native(path, rows, seed):
    if os.path.exists(path):
        return False
    tmp = path + ".tmp"
    if os.path.exists(tmp):
        os.remove(tmp)
    con = sqlite3.connect(tmp, isolation_level=None)
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    con.execute("CREATE TABLE native(a REAL, b INTEGER, c REAL, d INT32)")
    it = gen_rows(rows, seed)
    chunk = 200_000
    for start in range(0, rows, chunk):
        con.execute("BEGIN")
        con.executemany("INSERT INTO native VALUES (?, ?, ?, ?)",
                        (next(it) for _ in range(min(chunk, rows - start))))
        con.execute("COMMIT")
    con.close()
    os.replace(tmp, path)
    return True


def make_store(module, store_path, native_path):
    if os.path.exists(store_path):
        return False
    tmp = store_path + ".tmp"
    if os.path.exists(tmp):
        os.remove(tmp)
    con = connect(module)
    con.execute("ATTACH ? AS src", ("file:%s?mode=ro" % native_path,))
    con.execute("SELECT colstore_create(?, 'SELECT a, b, c, d FROM src.native ORDER BY rowid')", (tmp,))
    con.close()
    os.replace(tmp, store_path)
    return True


def check_same_rows(con, rows):
    """Counts and column sums of the whole table, both sides: a cheap check
    that the store holds the native table's rows (the queries check more)."""
    sql = "SELECT count(*), sum(b), sum(d), sum(a), sum(c) FROM %s"
    cs = con.execute(sql % "t").fetchone()
    nat = con.execute(sql % "native").fetchone()
    if cs[0] != rows or nat[0] != rows or cs[:3] != nat[:3] or \
            not all(close(x, y) for x, y in zip(cs[3:], nat[3:])):
        sys.exit("bench_busy: store and native table differ: colstore %r, native %r (want %d rows)"
                 % (cs, nat, rows))
    n_max = con.execute("SELECT max(rowid) FROM native").fetchone()[0]
    if n_max != rows:
        sys.exit("bench_busy: native rowids are not 1..%d (max %r)" % (rows, n_max))


def warm_file(path):
    with open(path, "rb") as f:
        while f.read(1 << 24):
            pass


# --------------------------------------------------------------- queries

def close(x, y):
    if x is None or y is None:
        return x is y
    return abs(x - y) <= FLOAT_RTOL * max(abs(x), abs(y))


def literal_list(rows, add):
    return "(" + ",".join(str(r + add) for r in rows) + ")"


def make_queries(n, seed):
    rng = random.Random(seed ^ 0x5E1EC710)
    k = min(LIST_ROWS, n // 2)
    sel = rng.sample(range(n), k)  # distinct, random order, 0-based
    blob = struct.pack("<%dq" % k, *sel)
    lo, hi = n // 10, 2 * (n // 10) - 1  # colstore rowids, 0-based: 10% of the rows
    q = [
        dict(key="count99", label="count(*) WHERE a > 0.99", kind="exact", target=40,
             cs=("SELECT count(*) FROM t WHERE a > 0.99", ()),
             nat=("SELECT count(*) FROM native WHERE a > 0.99", ())),
        dict(key="sumb90", label="sum(b) WHERE a > 0.9", kind="exact", target=10,
             cs=("SELECT sum(b) FROM t WHERE a > 0.9", ()),
             nat=("SELECT sum(b) FROM native WHERE a > 0.9", ())),
        dict(key="rows", label="a,b,c WHERE _rows = ? (%d)" % k, kind="rows", target=10,
             cs=("SELECT a, b, c FROM t WHERE _rows = ?", (blob,)),
             nat=("SELECT a, b, c FROM native WHERE rowid IN " + literal_list(sel, 1), ()),
             cs_check=("SELECT rowid, a, b, c FROM t WHERE _rows = ?", (blob,)),
             nat_check=("SELECT rowid - 1, a, b, c FROM native WHERE rowid IN " + literal_list(sel, 1), ()),
             sel=sel),
        dict(key="insum", label="sum(a) WHERE rowid IN (%d)" % k, kind="float", target=2.5,
             cs=("SELECT sum(a) FROM t WHERE rowid IN " + literal_list(sel, 0), ()),
             nat=("SELECT sum(a) FROM native WHERE rowid IN " + literal_list(sel, 1), ())),
        dict(key="range", label="sum(a) WHERE rowid BETWEEN (10%)", kind="float", target=1.5,
             cs=("SELECT sum(a) FROM t WHERE rowid BETWEEN %d AND %d" % (lo, hi), ()),
             nat=("SELECT sum(a) FROM native WHERE rowid BETWEEN %d AND %d" % (lo + 1, hi + 1), ())),
    ]
    for i, x in enumerate(q):
        x["n"] = i + 1
    return q


def cache_variants(queries, cache):
    """The queries once per cache variant, the variants of a query side by
    side; a cache=memory variant reads table tm instead of t."""
    kinds = {"map": ["map"], "memory": ["memory"], "both": ["map", "memory"]}[cache]
    out = []
    for q in queries:
        for kind in kinds:
            v = dict(q)
            v["cache"] = kind
            v["base_label"] = q["label"]
            if kind == "memory":
                v["key"] = q["key"] + "@memory"
                v["label"] = q["label"] + " [memory]"
                for side in ("cs", "cs_check"):
                    if side in v:
                        v[side] = (v[side][0].replace(" FROM t ", " FROM tm "), v[side][1])
            elif cache == "both":
                v["label"] = q["label"] + " [map]"
            out.append(v)
    return out


def pick_queries(all_q, spec):
    if not spec:
        return all_q
    out = []
    for w in spec.split(","):
        w = w.strip()
        hit = [x for x in all_q if w == str(x["n"]) or w == x["key"]]
        if not hit:
            sys.exit("bench_busy: unknown query %r (give 1-5 or %s)" % (w, ", ".join(x["key"] for x in all_q)))
        out += [h for h in hit if h not in out]
    return out


def check_query(con, q):
    """Both variants must agree before anything is timed; returns the answers
    each timed run must give (colstore's in its own order, native's as a
    sorted list for row sets) and a line describing the check."""
    cs = con.execute(*q["cs"]).fetchall()
    nat = con.execute(*q["nat"]).fetchall()
    if q["kind"] == "exact":
        ok, how = cs == nat, "exact"
    elif q["kind"] == "float":
        ok = len(cs) == len(nat) == 1 and close(cs[0][0], nat[0][0])
        how = "rel. tol %g (%s)" % (FLOAT_RTOL, "bit for bit equal" if cs == nat else
                                    "differ by %.3g relative" % (abs(cs[0][0] - nat[0][0]) / abs(nat[0][0])))
    else:
        # The rows with their positions: colstore in BLOB order, native in
        # rowid order; the same (position, row) pairs, and colstore's order
        # the BLOB's.
        cs_pos = con.execute(*q["cs_check"]).fetchall()
        nat_pos = con.execute(*q["nat_check"]).fetchall()
        ok = (sorted(cs_pos) == sorted(nat_pos) and [r[0] for r in cs_pos] == q["sel"]
              and [r[1:] for r in cs_pos] == cs and sorted(cs) == sorted(nat) and len(cs) == len(q["sel"]))
        how = "%d rows with their positions, exact; colstore in BLOB order" % len(cs)
    if not ok:
        sys.exit("bench_busy: query %d (%s): colstore and native disagree:\n  colstore %s\n  native   %s"
                 % (q["n"], q["label"], repr(cs)[:300], repr(nat)[:300]))
    q["want_cs"] = cs
    q["want_nat"] = sorted(nat) if q["kind"] == "rows" else nat
    shown = "%d rows" % len(cs) if q["kind"] == "rows" else repr(cs[0][0])
    return "%-36s %-22s agree: %s" % (q["label"], shown, how)


def faults():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_minflt + r.ru_majflt


def timed(con, sql, params):
    c0 = time.thread_time()
    t0 = time.perf_counter()
    rows = con.execute(sql, params).fetchall()
    t1 = time.perf_counter()
    return t1 - t0, time.thread_time() - c0, rows


def last_plan(con):
    return con.execute("SELECT colstore_last_plan()").fetchone()[0]


def plan_facts(text):
    try:
        p = json.loads(text)
    except (TypeError, ValueError):
        return {}
    th = (p.get("settings") or {}).get("threads") or {}
    return {"threads": p.get("threads"), "kernel_ms": (p.get("kernel_us") or 0) / 1e3,
            "access": p.get("access"), "effective": th.get("effective"), "idle_cpus": th.get("idle_cpus"),
            "batches": p.get("batches"), "overlapped": p.get("batches_overlapped"),
            "taken_back": p.get("batches_taken_back")}


# ----------------------------------------------------------------- modes

class Cell:
    """The runs of one query in one mode."""

    def __init__(self):
        self.wall, self.cpu, self.threads, self.kernel, self.faults, self.native = [], [], [], [], [], []


def run_cs(con, q, cell):
    f0 = faults()
    wall, cpu, rows = timed(con, *q["cs"])
    cell.faults.append(faults() - f0)
    same = close(rows[0][0], q["want_cs"][0][0]) if q["kind"] == "float" else rows == q["want_cs"]
    if not same:
        sys.exit("bench_busy: query %d: a timed colstore run gave another answer: %s"
                 % (q["n"], repr(rows)[:300]))
    f = plan_facts(last_plan(con)) if q["key"] != "floor" else {}  # the floor runs no colstore scan
    cell.wall.append(wall)
    cell.cpu.append(cpu)
    cell.threads.append(f.get("threads"))
    cell.kernel.append(f.get("kernel_ms", 0))


def run_nat(con, q, cell):
    wall, _, rows = timed(con, *q["nat"])
    got = sorted(rows) if q["kind"] == "rows" else rows
    if got != q["want_nat"]:
        sys.exit("bench_busy: query %d: a timed native run gave another answer: %s" % (q["n"], repr(got)[:300]))
    cell.native.append(wall)


def mode_a(con, q, cell, long_scans):
    con.execute(*q["cs"]).fetchall()  # the run before, untimed
    run_cs(con, q, cell)


def mode_b(con, q, cell, long_scans):
    run_nat(con, q, cell)
    run_cs(con, q, cell)


def mode_c(con, q, cell, long_scans):
    wall, _, _ = timed(con, LONG_SCAN, ())
    long_scans.append(wall)
    run_cs(con, q, cell)


def mode_s(con, q, cell, long_scans):
    time.sleep(IDLE_S)
    run_cs(con, q, cell)


def spinner_set(pid, running):
    """Resumes or pauses the spinner; a resumed one gets 20 ms to be running
    again before anything is timed."""
    os.kill(pid, signal.SIGCONT if running else signal.SIGSTOP)
    if running:
        time.sleep(0.02)


def spinning(pid, running, fn):
    """Mode fn with the spinner resumed (running) or paused first."""
    def mode(con, q, cell, long_scans):
        spinner_set(pid, running)
        fn(con, q, cell, long_scans)
    return mode


def spin(ready):
    """The spinner: one core busy until terminated."""
    ready.set()
    x = 0
    while True:
        x += 1


def run_rounds(con, queries, modes, rounds, cells, long_scans):
    for r in range(rounds):
        gc.collect()
        # Variants of one query (cache=map, cache=memory) are adjacent in
        # queries; which runs first alternates by round.
        groups = {}
        for q in queries:
            groups.setdefault(q["n"], []).append(q)
        for n in sorted(groups, key=lambda n: [q["n"] for q in queries].index(n)):
            k = (r + n) % len(modes)
            for name, fn in modes[k:] + modes[:k]:
                vs = groups[n] if r % 2 == 0 else groups[n][::-1]
                for q in vs:
                    fn(con, q, cells[q["key"]][name], long_scans)


# ----------------------------------------------------------------- report

def ms(xs):
    return statistics.median(xs) * 1e3


def fmt(xs):
    if not xs:
        return "-"
    return "%.2f [%.2f, %.2f]" % (ms(xs), min(xs) * 1e3, max(xs) * 1e3)


def fmt_threads(ts):
    counts = {}
    for t in ts:
        counts[t] = counts.get(t, 0) + 1
    return " ".join("%s:%d" % (t, c) for t, c in sorted(counts.items(), key=lambda kv: str(kv[0])))


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return f.read().strip()
    except OSError:
        return "(unreadable)"


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def verdict(ok):
    return "PASS" if ok else "FAIL"


# ------------------------------------------------------------------- JSON

def json_meta(bench, a):
    """What every bench's --json file starts with: which bench, the command
    that reproduces it, when, on what, and the load average at the start
    (the finish adds the load at the end)."""
    try:
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None
    return dict(bench=bench, command="/usr/bin/python3 " + shlex.join(sys.argv),
                started_utc=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), commit=commit,
                host=dict(cpus=os.cpu_count(), cpu=cpu_model()), sqlite=sqlite3.sqlite_version,
                python=sys.version.split()[0], rows=a.rows, rounds=a.rounds, seed=a.seed,
                load_start=loadavg())


def write_json(path, doc):
    """Writes doc to path (atomically: a reader never sees half a file), with
    the load average at the end added to its meta."""
    doc["meta"]["load_end"] = loadavg()
    doc["meta"]["finished_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)
    print("wrote %s" % path)


def ms_list(xs):
    return [round(x * 1e3, 4) for x in xs]


def main():
    ap = argparse.ArgumentParser(description="colstore push-down speed after native queries and with a busy core")
    ap.add_argument("--module", default=os.path.join(ROOT, "build", "colstore"),
                    help="colstore.so to load, without the suffix (default: <repo>/build/colstore)")
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dir", default=os.path.join(ROOT, "build", "bench-data"),
                    help="data directory (default: <repo>/build/bench-data)")
    ap.add_argument("--no-spinner", action="store_true", help="skip mode D")
    ap.add_argument("--queries", default="", help="a subset, e.g. 1,3 or count99,rows (default: all five)")
    ap.add_argument("--cache", default="map", choices=("map", "memory", "both"),
                    help="the colstore table's cache option; both: each query on a cache=map and a cache=memory table")
    ap.add_argument("--json", metavar="FILE",
                    help="also write every run's times (ms), the medians and ratios to FILE (bench/plot.py reads it)")
    a = ap.parse_args()
    if a.rows < 20 or a.rounds < 1:
        sys.exit("bench_busy: --rows must be >= 20 and --rounds >= 1")
    started = time.perf_counter()
    doc = dict(meta=json_meta("bench_busy", a), queries=[]) if a.json else None
    if doc:
        doc["meta"]["cache"] = a.cache
    print("bench_busy: host %d cpus (%d in this process's affinity), %s; load average at start: %s"
          % (os.cpu_count(), len(os.sched_getaffinity(0)), cpu_model(), loadavg()))

    # ---- data
    os.makedirs(a.dir, exist_ok=True)
    base = "busy-%d-s%d-v%d" % (a.rows, a.seed, GEN_VERSION)
    native_path = os.path.join(a.dir, base + "-native.db")
    store_path = os.path.join(a.dir, base + ".cst")
    t0 = time.perf_counter()
    made = make_native(native_path, a.rows, a.seed)
    made = make_store(a.module, store_path, native_path) or made
    if made:
        print("data: generated in %.1f s" % (time.perf_counter() - t0))
    for p in (native_path, store_path):
        warm_file(p)
    con = connect(a.module, native_path)
    con.execute("CREATE VIRTUAL TABLE temp.t USING colstore('%s')" % store_path.replace("'", "''"))
    if a.cache != "map":
        t0 = time.perf_counter()
        con.execute("CREATE VIRTUAL TABLE temp.tm USING colstore('%s', cache=memory)" % store_path.replace("'", "''"))
        t_create = time.perf_counter() - t0
        c = json.loads(con.execute("SELECT colstore_info('tm')").fetchone()[0])["cache"]
        if c["effective"] != "memory":
            sys.exit("bench_busy: the cache=memory table reads %s" % c["effective"])
        print("cache=memory: CREATE %.0f ms; the copy %.1f MB in %.0f ms (%.2f GB/s), read from the file %.1f MB"
              % (t_create * 1e3, c["bytes"] / 1e6, c["copy_ms"], c["copy_gb_per_s"], c["read_bytes"] / 1e6))
    version = con.execute("SELECT colstore_version()").fetchone()[0]
    check_same_rows(con, a.rows)
    print("data: %s (%.0f MB), %s (%.0f MB), %d rows, seed %d; page cache warm"
          % (native_path, os.path.getsize(native_path) / 1e6, store_path, os.path.getsize(store_path) / 1e6,
             a.rows, a.seed))
    print("python %s, sqlite %s, %s (%s); OMP_WAIT_POLICY=%s COLSTORE_LOAD_AWARE=%s"
          % (sys.version.split()[0], sqlite3.sqlite_version, version, a.module,
             os.environ.get("OMP_WAIT_POLICY", "(unset)"), os.environ.get("COLSTORE_LOAD_AWARE", "(unset)")))

    queries = cache_variants(pick_queries(make_queries(a.rows, a.seed), a.queries), a.cache)

    # ---- checks, then one plan per query
    print("\nchecks (colstore vs native, before any timing):")
    plans = {}
    for q in queries:
        print("  %d %s" % (q["n"], check_query(con, q)))
        con.execute(*q["cs"]).fetchall()
        plans[q["key"]] = last_plan(con)
    print("\ncolstore_last_plan() of each query (one run after the checks):")
    for q in queries:
        f = plan_facts(plans[q["key"]])
        print("  %d %s\n    %s\n    -> access %s, threads %s (effective %s, idle cpus %s), kernel %.2f ms, "
              "batches %s (overlapped %s, taken back %s)"
              % (q["n"], q["label"], plans[q["key"]], f.get("access"), f.get("threads"), f.get("effective"),
                 f.get("idle_cpus"), f.get("kernel_ms", 0), f.get("batches"), f.get("overlapped"),
                 f.get("taken_back")))

    # ---- the floor of query 3 (query 6): Python building the same rows from
    # a small native table, timed in every mode like the others
    rows_q = [q for q in queries if q["kind"] == "rows"]
    if rows_q:
        con.execute("CREATE TEMP TABLE floor_rows(a REAL, b INTEGER, c REAL)")
        con.executemany("INSERT INTO floor_rows VALUES (?, ?, ?)", rows_q[0]["want_cs"])
        want = con.execute("SELECT a, b, c FROM floor_rows").fetchall()
        if want != rows_q[0]["want_cs"]:
            sys.exit("bench_busy: the floor table of query 3 does not give query 3's rows in its order")
        queries.append(dict(key="floor", n=6, label="floor of 3: its rows from a temp table", kind="rows",
                            target=None, cache="-", base_label="floor of 3", cs=("SELECT a, b, c FROM floor_rows", ()),
                            nat=rows_q[0]["nat"], want_cs=want, want_nat=rows_q[0]["want_nat"]))

    # ---- A, B, C interleaved; then D
    gc.disable()
    modes_abc = [("A", mode_a), ("B", mode_b), ("C", mode_c), ("S", mode_s)]
    cells = {q["key"]: {m: Cell() for m in ("A", "B", "C", "S", "Q", "QB", "DA", "DB")} for q in queries}
    long_scans = []
    t_abc = time.perf_counter()
    run_rounds(con, queries, modes_abc, a.rounds, cells, long_scans)
    t_abc = time.perf_counter() - t_abc
    load_d = None
    t_d = 0
    if not a.no_spinner:
        ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: no fork of OpenMP threads
        ready = ctx.Event()
        spinner = ctx.Process(target=spin, args=(ready,), daemon=True)
        spinner.start()
        try:
            if not ready.wait(30):
                sys.exit("bench_busy: the spinner did not start")
            time.sleep(0.2)
            load_d = loadavg()
            pid = spinner.pid
            modes_d = [("Q", spinning(pid, False, mode_a)), ("DA", spinning(pid, True, mode_a)),
                       ("QB", spinning(pid, False, mode_b)), ("DB", spinning(pid, True, mode_b))]
            t_d = time.perf_counter()
            run_rounds(con, queries, modes_d, a.rounds, cells, long_scans)
            t_d = time.perf_counter() - t_d
        finally:
            os.kill(spinner.pid, signal.SIGCONT)
            spinner.terminate()
            spinner.join()
    gc.enable()

    # ---- report
    print("\nresults: %d rounds; A, B, C, S interleaved (%.0f s), D its own phase (%.0f s)%s"
          % (a.rounds, t_abc, t_d, "" if a.no_spinner else "; load average with the spinner: %s" % load_d))
    print("colstore wall ms median [min, max]; thread-CPU ms median; threads used per run (threads:runs, "
          "from colstore_last_plan); kernel ms median; page faults of the process per run, median")
    print("long native scan before C (%s): %s ms" % (LONG_SCAN, fmt(long_scans)))
    names = {"A": "A  back to back", "B": "B  after native", "C": "C  after long scan",
             "S": "S  after %.1f s idle (info)" % IDLE_S,
             "Q": "Q  spinner paused, b.t.b.", "QB": "QB spinner paused, after n.",
             "DA": "D  spinner, back to back", "DB": "D  spinner, after native"}
    summary = []
    for q in queries:
        c = cells[q["key"]]
        print("\n%d %s\n   colstore: %s\n   native:   %s" % (q["n"], q["label"], q["cs"][0][:80], q["nat"][0][:80]))
        for m in ("A", "B", "C", "S", "Q", "DA", "QB", "DB"):
            x = c[m]
            if not x.wall:
                continue
            line = "   %-26s %-28s cpu %7.2f  threads %-8s kernel %7.2f  faults %5d" % (
                names[m], fmt(x.wall), ms(x.cpu), fmt_threads(x.threads), statistics.median(x.kernel),
                statistics.median(x.faults))
            if x.native:
                line += "   native %s" % fmt(x.native)
            print(line)
        a_med = ms(c["A"].wall)
        s_c = ms(c["C"].wall) / a_med
        s_d = ms(c["DA"].wall) / ms(c["Q"].wall) if c["DA"].wall else None
        s_db = ms(c["DB"].wall) / ms(c["QB"].wall) if c["DB"].wall else None
        host = ms(c["DB"].native) / ms(c["QB"].native) if c["DB"].wall else None
        r_b = ms(c["B"].native) / ms(c["B"].wall)
        r_d = ms(c["DB"].native) / ms(c["DB"].wall) if c["DB"].wall else None
        line = "   slowdown C/A %.2fx %s" % (s_c, verdict(s_c <= SLOWDOWN_TARGET))
        if s_d is not None:
            line += (", D/A %.2fx %s (after native: %.2fx); the host's own slowdown (native D/quiet) %.2fx, "
                     "D/A over it %.2fx %s" % (s_d, verdict(s_d <= SLOWDOWN_TARGET), s_db, host, s_d / host,
                                               verdict(s_d / host <= SLOWDOWN_TARGET)))
        print(line + "   (target <= %.1fx)" % SLOWDOWN_TARGET)
        if q["target"] is None:
            line = "   native/floor B %.2fx: the most any table can reach from Python" % r_b
        else:
            line = "   native/colstore B %.2fx %s" % (r_b, verdict(r_b >= q["target"]))
            if r_d is not None:
                line += ", D %.2fx %s" % (r_d, verdict(r_d >= q["target"]))
            line += "   (target >= %gx; native in B over colstore in A: %.2fx)" % (q["target"], ms(c["B"].native) / a_med)
        print(line)
        if doc is not None:
            doc["queries"].append(dict(
                key=q["key"], n=q["n"], label=q["label"], cache=q["cache"], target=q["target"],
                colstore=q["cs"][0][:200], native=q["nat"][0][:200],
                modes={m: dict(colstore_ms=ms_list(c[m].wall), native_ms=ms_list(c[m].native), threads=c[m].threads,
                               kernel_ms=[round(k, 4) for k in c[m].kernel])
                       for m in ("A", "B", "C", "S", "Q", "DA", "QB", "DB") if c[m].wall},
                ratio_native_over_colstore_B=r_b, ratio_native_over_colstore_D=r_d,
                slowdown_C_over_A=s_c, slowdown_D_over_A=s_d, host_slowdown_D=host))
        summary.append((q, [ms(c[m].wall) if c[m].wall else None for m in ("A", "B", "C", "S", "Q", "DA")],
                        s_c, s_d, r_b, r_d, host))

    print("\nsummary (colstore wall ms medians; D = back to back with the spinner, Q = its quiet twin; "
          "D/A = D/Q; host = native's own D/quiet):")
    print("  %-36s %8s %8s %8s %8s %8s %8s   %-12s %-12s %-6s %-12s   %-13s %-13s" % (
        "query", "A", "B", "C", "S", "Q", "D", "C/A<=1.5", "D/A<=1.5", "host", "D/A/host", "nat/cs B", "nat/cs D"))
    for q, meds, s_c, s_d, r_b, r_d, host in summary:
        cols = ["%8.2f" % v if v is not None else "%8s" % "-" for v in meds]
        print("  %-36s %s   %-12s %-12s %-6s %-12s   %-13s %-13s" % (
            "%d %s" % (q["n"], q["label"]), " ".join(cols),
            "%.2fx %s" % (s_c, verdict(s_c <= SLOWDOWN_TARGET)),
            "%.2fx %s" % (s_d, verdict(s_d <= SLOWDOWN_TARGET)) if s_d is not None else "-",
            "%.2fx" % host if host is not None else "-",
            "%.2fx %s" % (s_d / host, verdict(s_d / host <= SLOWDOWN_TARGET)) if s_d is not None else "-",
            "%.1fx %s" % (r_b, verdict(r_b >= q["target"])) if q["target"] else "(%.1fx)" % r_b,
            "%.1fx %s" % (r_d, verdict(r_d >= q["target"])) if r_d is not None and q["target"] else "-"))
    if a.cache == "both":
        print("\ncache=map over cache=memory, ratio of colstore wall medians per mode (> 1: memory faster):")
        print("  %-40s %8s %8s %8s %8s %8s" % ("query", "A", "B", "C", "S", "D"))
        for q in queries:
            if q["cache"] != "map":
                continue
            cm, cc = cells[q["key"]], cells[q["key"] + "@memory"]
            cols = []
            for m in ("A", "B", "C", "S", "DA"):
                cols.append("%7.2fx" % (ms(cm[m].wall) / ms(cc[m].wall)) if cm[m].wall and cc[m].wall else "%8s" % "-")
            print("  %-40s %s" % ("%d %s" % (q["n"], q["base_label"]), " ".join(cols)))
    if doc is not None:
        doc["meta"]["load_with_spinner"] = load_d
        doc["meta"]["seconds"] = round(time.perf_counter() - started, 1)
        write_json(a.json, doc)
    print("\nload average at end: %s; total %.0f s (exit 0 whether or not a target is met)"
          % (loadavg(), time.perf_counter() - started))


if __name__ == "__main__":
    main()
