#!/usr/bin/python3
"""bench_cache_sessions.py - cache=map, cache=memory and cache=auto over whole sessions.

WHY.  Issue 26 asks for the default `cache` setting to be chosen by
measurement.  bench_busy.py times single queries in set situations (back to
back, after a pause, beside a spinner) and there cache=memory wins after a
pause on this VM (docs/performance.md, "What else slows a query after a
pause").  But the copy is paid at open (and the new bytes again at each
refresh after another connection's commit), and it holds the store in the
process's memory.  Whether that pays depends on the session, so this bench
times sessions, each a fresh process, the way users run them:

  interactive  open the table, then 6 queries, each after a think pause of
               --pause seconds (an analyst at the shell);
  oneshot      open the table and run one query (a script or cron job that
               starts, asks, exits), 3 different queries, a process each;
  refresh      open, then 6 times: another connection appends 1,000 rows,
               a short pause (0.2 s), the query (the table refreshes its
               snapshot first: with cache=memory it copies the new bytes).

A session's time is the open (CREATE VIRTUAL TABLE) plus its queries, the
pauses left out.  Every session runs once per cache setting per round, the
settings in an order rotated from round to round, so the host's drift hits
each.  The answers of all settings must be equal (refresh: each step's
count and sum), else the bench exits nonzero before reporting.

cache=auto (the third variant) starts on the mapping and, once the table
has proved long-lived, copies the store on a background thread and swaps
the copy in at a later statement's start (core/store/cs_cache.c); the
question this bench answers is whether it gets the better of the other two
in every session, which is the condition for making it the default
(docs/performance.md, "The default cache setting, measured with the copy in
the background").  --busy keeps one core busy with a spinning process for the whole
run (bench_busy.py's spinner), the state of a host where something else
runs beside the session.

Data: bench_busy.py's table (10M rows: a REAL uniform, b INTEGER 0..999, c
REAL normal, d INT32), made when missing; the refresh session works on a
copy of the store, made fresh for each run.

    /usr/bin/python3 bench/bench_cache_sessions.py --rounds 5 [--busy]
"""
import argparse
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_busy  # noqa: E402  (data files, connect, the load average)

QUERIES = [
    ("count(*) WHERE a > 0.99", "SELECT count(*) FROM t WHERE a > 0.99"),
    ("sum(b) WHERE a > 0.9", "SELECT sum(b) FROM t WHERE a > 0.9"),
    ("sum(a) WHERE rowid BETWEEN (10%)", "SELECT sum(a) FROM t WHERE rowid BETWEEN 1000000 AND 1999999"),
    ("d, count, sum(b) GROUP BY d", "SELECT d, count(*), sum(b) FROM t GROUP BY d ORDER BY d"),
    ("avg(c) WHERE b < 100", "SELECT avg(c) FROM t WHERE b < 100"),
    ("a, b ORDER BY a DESC LIMIT 10", "SELECT a, b FROM t ORDER BY a DESC LIMIT 10"),
]
ONESHOT = [0, 1, 3]
SESSIONS = ("interactive", "oneshot", "refresh")
CACHES = ("map", "memory", "auto")


def timed(con, sql):
    t = time.perf_counter()
    rows = con.execute(sql).fetchall()
    return (time.perf_counter() - t) * 1e3, rows


def open_table(con, store, cache):
    t = time.perf_counter()
    con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', cache=%s)" % (store, cache))
    return (time.perf_counter() - t) * 1e3


def child(a):
    """One session in this process; prints its timings and answers as JSON."""
    con = bench_busy.connect(a.module)
    out = {"open_ms": open_table(con, a.store, a.cache), "queries": [], "answers": []}
    if a.session == "interactive":
        for _, sql in QUERIES:
            time.sleep(a.pause)
            ms, rows = timed(con, sql)
            out["queries"].append(ms)
            out["answers"].append(rows)
    elif a.session == "oneshot":
        ms, rows = timed(con, QUERIES[a.query][1])
        out["queries"].append(ms)
        out["answers"].append(rows)
    else:
        writer = bench_busy.connect(a.module)
        writer.execute("CREATE VIRTUAL TABLE w USING colstore('%s')" % a.store)
        for step in range(6):
            writer.execute("INSERT INTO w SELECT a, b, c, d FROM w WHERE rowid < 1000")
            time.sleep(0.2)
            ms, rows = timed(con, "SELECT count(*), sum(b) FROM t WHERE a > 0.9")
            out["queries"].append(ms)
            out["answers"].append(rows)
        writer.close()
    out["effective"] = json.loads(con.execute("SELECT colstore_info('t')").fetchone()[0])["cache"]["effective"]
    con.close()
    print(json.dumps(out))


def run_child(a, session, cache, store, query=0):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--session", session, "--cache", cache,
           "--store", store, "--module", a.module, "--pause", str(a.pause), "--query", str(query)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("bench_cache_sessions: %s %s failed: %s" % (session, cache, r.stderr.strip()))
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    bench_busy.data_arguments(ap, 3)
    ap.add_argument("--pause", type=float, default=1.0, help="think time before each interactive query (s)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--session", choices=SESSIONS, help=argparse.SUPPRESS)
    ap.add_argument("--cache", choices=CACHES, help=argparse.SUPPRESS)
    ap.add_argument("--busy", action="store_true", help="a spinning process keeps one core busy throughout")
    ap.add_argument("--sessions", default=",".join(SESSIONS), help="which sessions to run (comma-separated)")
    ap.add_argument("--store", help=argparse.SUPPRESS)
    ap.add_argument("--query", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a)
    _, _, store = bench_busy.data_files(a)
    bench_busy.warm_file(store)
    spinner = None
    if a.busy:
        ctx = multiprocessing.get_context("fork")
        ready = ctx.Event()
        spinner = ctx.Process(target=bench_busy.spin, args=(ready,), daemon=True)
        spinner.start()
        ready.wait()
    try:
        totals, opens, detail, load, ends = measure(a, store)
    finally:
        if spinner:
            spinner.terminate()
            spinner.join()
    report(a, store, totals, opens, detail, load, ends)


def measure(a, store):
    """Every session under every setting, a.rounds times, order rotated."""
    scratch = store + ".refresh.cst"
    totals = {}  # (session, cache) -> [session ms]
    opens = {}
    detail = {}  # (session, cache) -> [[query ms]]
    load = [bench_busy.loadavg().split()[0]]
    ends = {}  # (session, cache) -> {effective cache at the session's end: count}
    for rnd in range(a.rounds):
        for session in a.sessions.split(","):
            k = (rnd + SESSIONS.index(session)) % len(CACHES)
            order = CACHES[k:] + CACHES[:k]
            answers = {}
            for cache in order:
                if session == "oneshot":
                    runs = [run_child(a, session, cache, store, q) for q in ONESHOT]
                elif session == "refresh":
                    shutil.copyfile(store, scratch)
                    runs = [run_child(a, session, cache, scratch)]
                else:
                    runs = [run_child(a, session, cache, store)]
                answers[cache] = [r["answers"] for r in runs]
                total = sum(r["open_ms"] + sum(r["queries"]) for r in runs)
                totals.setdefault((session, cache), []).append(total)
                opens.setdefault((session, cache), []).extend(r["open_ms"] for r in runs)
                detail.setdefault((session, cache), []).append([q for r in runs for q in r["queries"]])
                for r in runs:
                    e = ends.setdefault((session, cache), {})
                    e[r["effective"]] = e.get(r["effective"], 0) + 1
            for cache in CACHES[1:]:
                if answers[cache] != answers["map"]:
                    sys.exit("bench_cache_sessions: %s: cache=map and cache=%s answer differently:\n%r\n%r"
                             % (session, cache, answers["map"], answers[cache]))
        load.append(bench_busy.loadavg().split()[0])
    if os.path.exists(scratch):
        os.remove(scratch)
    return totals, opens, detail, load, ends


def report(a, store, totals, opens, detail, load, ends):
    med = statistics.median
    size = os.path.getsize(store)
    print("store %s, %.0f MB; %d rounds; pause %.1f s; %s; load average %s" % (
        store, size / 1e6, a.rounds, a.pause, "one core busy (spinner)" if a.busy else "no spinner",
        " ".join(load)))
    print("answers equal between cache=map, memory and auto in every session")
    print()
    print("%-12s %-7s %12s %16s %24s  %s" % ("session", "cache", "open ms", "session ms", "min-max", "read at the end"))
    sessions = a.sessions.split(",")
    for session in sessions:
        for cache in CACHES:
            t = totals[(session, cache)]
            end = ", ".join("%s %d" % kv for kv in sorted(ends[(session, cache)].items()))
            print("%-12s %-7s %12.1f %16.1f %24s  %s" % (session, cache, med(opens[(session, cache)]), med(t),
                                                       "%.1f-%.1f" % (min(t), max(t)), end))
        m, n, u = (med(totals[(session, c)]) for c in CACHES)
        print("%-12s map / memory = %.2fx, map / auto = %.2fx, memory / auto = %.2fx" % ("", m / n, m / u, n / u))
    if "interactive" not in sessions:
        return
    print()
    print("per query, medians (ms), interactive:")
    for i, (label, _) in enumerate(QUERIES):
        m, n, u = (med(d[i] for d in detail[("interactive", c)]) for c in CACHES)
        print("  %-36s map %8.1f  memory %8.1f  auto %8.1f" % (label, m, n, u))


if __name__ == "__main__":
    main()
