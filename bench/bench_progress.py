#!/usr/bin/python3
"""bench_progress.py - what progress reporting and the interrupt checks cost
colstore_create and colstore_compact (issue 23, item 3).

WHY.  Since issue 23 both functions call SQLite's progress handler through a
probe statement once per unit of work (65,536 rows written; one old record
compacted) and, with progress=on, print a line on stderr at most ten times a
second.  That must cost nothing visible: this bench times both functions with
progress=off and progress=on, and against a module built from the commit
before (--base-module), which has neither.

HOW IT WORKS

Data (default 10M rows): a store src.cst of four columns (a INT64 id, b FLOAT64,
c INT64 0..999, d FLOAT64), made once in the data directory and reused; and
del.cst, the same store with every tenth row deleted (the compaction's input,
copied afresh before each compaction so every run does the same work).

Variants, each run in a fresh sqlite3 shell process (`sqlite3 -batch`), which
loads the module, opens src.cst as a table and runs one statement; the wall
time is the shell's `.timer` real time for that statement alone:

  create_base   colstore_create('x.cst', 'SELECT * FROM src', 'replace')    (--base-module)
  create_off    ... 'replace', 'progress=off'
  create_on     ... 'replace', 'progress=on'   (stderr to a file: a line ten times a second)
  compact_base  colstore_compact('c.cst', 'renumber')                       (--base-module)
  compact_off   ... 'renumber', 'progress=off'
  compact_on    ... 'renumber', 'progress=on'

Before anything is timed every variant runs once and the stores it writes
must be identical byte for byte to the base variant's (the file holds no
clock or random field), and the progress=on runs must have printed a line.
Then the variants run interleaved (round r runs each once, in an order
rotated by r), so a burst of load on the host falls on all of them; each
reports the median wall time with min and max, and the ratio of medians to
its base (base, or off without --base-module); the same for the CPU time of
the statement (the shell's user + sys), which a busy host inflates less.  The load average is printed before and after: the host is shared.

    bench/bench_progress.py [--rows N] [--rounds R] [--dir D] [--module build/colstore]
                            [--base-module OLD/build/colstore] [--json out.json] [--only create|compact]
"""
import argparse
import filecmp
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def shell(module, stmt, workdir, stderr_path=None):
    """Runs stmt in a fresh sqlite3 shell; returns ((wall, cpu) seconds, stdout)."""
    script = (".load %s\nCREATE VIRTUAL TABLE src USING colstore('%s');\n.timer on\n%s\n"
              % (module, os.path.join(workdir, "src.cst"), stmt))
    err = open(stderr_path, "wb") if stderr_path else subprocess.DEVNULL
    try:
        r = subprocess.run(["sqlite3", "-batch", "-bail", ":memory:"], input=script.encode(), stdout=subprocess.PIPE,
                           stderr=err, check=True, cwd=workdir)
    finally:
        if stderr_path:
            err.close()
    out = r.stdout.decode()
    m = re.search(r"Run Time: real ([0-9.]+) user ([0-9.]+) sys ([0-9.]+)", out)
    if not m:
        sys.exit("no timing in the shell's output: %r" % out[-300:])
    return (float(m.group(1)), float(m.group(2)) + float(m.group(3))), out


def make_data(module, workdir, rows):
    src = os.path.join(workdir, "src.cst")
    if not os.path.exists(src):
        gen = ("WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < %d) "
               "SELECT i AS a, (i * 7919 %% 1000003) / 1000.0 AS b, i * 31 %% 1000 AS c, "
               "(i %% 104729) * 0.125 - 5000 AS d FROM n" % (rows - 1))
        script = ".load %s\nSELECT colstore_create('%s', '%s', 'progress=off');\n" % (module, src, gen)
        subprocess.run(["sqlite3", "-batch", "-bail", ":memory:"], input=script.encode(), check=True,
                       stdout=subprocess.DEVNULL)
    dele = os.path.join(workdir, "del.cst")
    if not os.path.exists(dele):
        shutil.copyfile(src, dele)
        script = (".load %s\nCREATE VIRTUAL TABLE t USING colstore('%s');\nDELETE FROM t WHERE a %% 10 = 0;\n"
                  % (module, dele))
        subprocess.run(["sqlite3", "-batch", "-bail", ":memory:"], input=script.encode(), check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", default=os.path.join(ROOT, "build", "bench-progress"))
    ap.add_argument("--module", default=os.path.join(ROOT, "build", "colstore"))
    ap.add_argument("--base-module", default=None)
    ap.add_argument("--json", default=None)
    ap.add_argument("--only", choices=("create", "compact"), default=None, help="time one function only")
    a = ap.parse_args()
    workdir = os.path.join(os.path.abspath(a.dir), str(a.rows))
    os.makedirs(workdir, exist_ok=True)
    make_data(a.module, workdir, a.rows)

    def create(module, arg):
        def run(tag):
            stmt = "SELECT colstore_create('out_%s.cst', 'SELECT * FROM src', 'replace'%s);" % (tag, arg)
            return shell(module, stmt, workdir, os.path.join(workdir, "err_%s.txt" % tag)), "out_%s.cst" % tag
        return run

    def compact(module, arg):
        def run(tag):
            target = os.path.join(workdir, "c_%s.cst" % tag)
            shutil.copyfile(os.path.join(workdir, "del.cst"), target)
            stmt = "SELECT colstore_compact('%s', 'renumber'%s) ->> '$.after.rows';" % (target, arg)
            return shell(module, stmt, workdir, os.path.join(workdir, "err_%s.txt" % tag)), target
        return run

    variants = {}
    ops = [(op, fn) for op, fn in (("create", create), ("compact", compact)) if a.only in (None, op)]
    for op, fn in ops:
        if a.base_module:
            variants[op + "_base"] = fn(a.base_module, "")
        variants[op + "_off"] = fn(a.module, ", 'progress=off'")
        variants[op + "_on"] = fn(a.module, ", 'progress=on'")

    # identical output first
    outputs = {}
    for name, run in variants.items():
        (_, _), out = run(name)
        outputs[name] = os.path.join(workdir, out)
    for op, _ in ops:
        ref = outputs[op + ("_base" if a.base_module else "_off")]
        for name in variants:
            if name.startswith(op) and not filecmp.cmp(ref, outputs[name], shallow=False):
                sys.exit("%s wrote a different store from %s" % (name, os.path.basename(ref)))
        line = open(os.path.join(workdir, "err_%s_on.txt" % op), "rb").read()
        if b"rows" not in line or not line.endswith(b"\n"):
            sys.exit("%s_on printed no progress line: %r" % (op, line[-200:]))
        print("%s: every variant wrote the same bytes; progress=on printed %r" % (
            op, line.split(b"\r")[-1].decode().strip()))

    load_before = os.getloadavg()
    times = {n: [] for n in variants}
    cpus = {n: [] for n in variants}
    names = list(variants)
    for r in range(a.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            ((t, c), _), _ = variants[name](name)
            times[name].append(t)
            cpus[name].append(c)
    load_after = os.getloadavg()

    print("rows %d, rounds %d, load average before %.2f %.2f %.2f, after %.2f %.2f %.2f" % (
        (a.rows, a.rounds) + load_before + load_after))
    result = {"rows": a.rows, "rounds": a.rounds, "load_before": load_before, "load_after": load_after,
              "variants": {}}
    for name in names:
        ts, cs = times[name], cpus[name]
        med, cmed = statistics.median(ts), statistics.median(cs)
        ref = name.split("_")[0] + ("_base" if a.base_module else "_off")
        base, cbase = statistics.median(times[ref]), statistics.median(cpus[ref])
        print("%-13s wall median %7.3f s  min %7.3f  max %7.3f  ratio %.3f | cpu median %7.3f s  min %7.3f  "
              "max %7.3f  ratio %.3f" % (name, med, min(ts), max(ts), med / base, cmed, min(cs), max(cs), cmed / cbase))
        result["variants"][name] = {"median_s": med, "min_s": min(ts), "max_s": max(ts), "times_s": ts,
                                    "ratio": med / base, "cpu_median_s": cmed, "cpu_s": cs, "cpu_ratio": cmed / cbase}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
