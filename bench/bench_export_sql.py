#!/usr/bin/python3
"""bench_export_sql.py - colstore_export to uncompressed Arrow IPC through SQL,
to tmpfs and to a file on disk, for one or more builds of the module, beside
the writer alone (bench_arrow's file_none and raw_write).

WHY.  Issue 24's target: colstore_export to uncompressed Arrow IPC at 1 GB/s
or more.  The writer alone reaches it (bench_arrow.c); the SQL statement adds
opening the store, checking every chunk against its checksum, and the
commit (fsync, link).  This bench measures the statement as a user runs it,
so that a change to the SQL path (the chunk check fused with the write) is
measured against the build before it, in the same run.

HOW.  The bench table of bench_import.py (make_csv: 10M rows of a INT64, b
FLOAT64, c INT64, d FLOAT64, seed 23; 320 MB of values), imported once with
colstore_import into a store.  Variants: each --build LABEL=MODULE times each
target directory (--targets, default /dev/shm and the data directory on
disk).  One run is a fresh sqlite3 process (a fresh process has checked no
chunk, as a user's first export), `.timer on`, and
    SELECT colstore_export(store, dir/e_LABEL.arrow, 'progress=off', 'mode=replace')
and the time reported is the statement's (sqlite3's "Run Time: real"),
not the process's start, with its CPU time (user + system), which the
other engineers' load disturbs less than the wall time.  Before timing, every variant runs once and every
file must be the same bytes (sha256).  The variants then run interleaved
(round r runs each once, in an order rotated by r); each reports the median
with min and max, in ms and GB/s of the 320 MB of values.  Then
build/bench_arrow --only file_none,raw_write runs with as many rounds, to
the data directory on disk, so the writer alone and a raw write(2) of the
same bytes are measured in the same run.  With --writer-each-round, each
round also runs build/bench_arrow --rounds 1 --only file_none into each
target directory, so the writer alone is timed interleaved with the SQL
statements, on the same filesystems, under the same load (its own table
in memory: what the statement adds to it is the store's read and the
commit).  --ext parquet or csv times those
exports instead (their default codecs), to see that the change to the read
path costs them nothing (bench_export.py compares them with DuckDB).  The load average is printed
before and after: other engineers share the host.

    bench/bench_export_sql.py --build before=/path/colstore.so --build after=build/colstore.so
        [--rows N] [--rounds R] [--targets /dev/shm,DIR] [--dir D] [--ext parquet|csv]
(a module's file must be named colstore.so: sqlite3 finds its entry point by
the name).
"""
import hashlib
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
from bench_export import shell  # noqa: E402
from bench_import import make_csv  # noqa: E402
from bench_parquet import bench_args  # noqa: E402


def export(module, store, target):
    """(the statement's wall seconds, its user + system CPU seconds)."""
    out = shell(module, ".timer on\nSELECT colstore_export('%s', '%s', 'progress=off', 'mode=replace') ->> '$.rows';" %
                (store, target))
    m = re.search(r"Run Time: real ([0-9.]+) user ([0-9.]+) sys ([0-9.]+)", out)
    if not m:
        sys.exit("bench_export_sql: no timer line in:\n%s" % out)
    return float(m.group(1)), float(m.group(2)) + float(m.group(3))


def writer_alone(bench_arrow, rows, target):
    """bench_arrow's file_none, one round into target: the median's seconds."""
    d = os.path.join(target, "bench_export_sql_writer")
    p = subprocess.run([bench_arrow, "--rows", str(rows), "--rounds", "1", "--dir", d, "--only", "file_none"],
                       capture_output=True, text=True)
    m = re.search(r"file_none\s+median\s+([0-9.]+) ms", p.stdout)
    if not m:
        sys.exit("bench_export_sql: no file_none line from bench_arrow:\n%s%s" % (p.stdout, p.stderr))
    for name in os.listdir(d):
        os.remove(os.path.join(d, name))
    return float(m.group(1)) / 1e3


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def main():
    ap = bench_args(__doc__)
    ap.add_argument("--targets", default=None, help="comma-separated directories (default /dev/shm and --dir)")
    ap.add_argument("--build", action="append", default=[], help="LABEL=MODULE, repeatable (default: --module)")
    ap.add_argument("--ext", default="arrow", help="the target's format: arrow (default), parquet, csv")
    ap.add_argument("--bench-arrow", default=os.path.join(ROOT, "build", "bench_arrow"))
    ap.add_argument("--writer-each-round", action="store_true",
                    help="time bench_arrow's file_none to each target in every round, interleaved")
    args = ap.parse_args()
    modules = [m.split("=", 1) for m in args.build] or [["build", args.module]]
    os.makedirs(args.dir, exist_ok=True)
    targets = (args.targets or "/dev/shm,%s" % args.dir).split(",")
    stem = os.path.join(args.dir, "bench_%d_%d" % (args.rows, args.seed))
    store = stem + "_arrow_sql.cst"
    if not os.path.exists(store):
        if not os.path.exists(stem + ".csv"):
            print("writing %s.csv ..." % stem, flush=True)
            make_csv(stem + ".csv", args.rows, args.seed)
        shell(os.path.abspath(modules[0][1]),
              "SELECT colstore_import('%s', '%s', 'columns=a INT64, b FLOAT64, c INT64, d FLOAT64', "
              "'mode=replace', 'progress=off') ->> '$.rows';" % (store, stem + ".csv"))
    variants = [(label, os.path.abspath(path), t) for label, path in modules for t in targets]

    def target_of(label, t):
        return os.path.join(t, "bench_export_sql_%s.%s" % (label, args.ext))

    print("load average before: %s" % " ".join("%.2f" % v for v in os.getloadavg()), flush=True)
    digests = {}
    for label, path, t in variants:
        export(path, store, target_of(label, t))
        digests[(label, t)] = sha256(target_of(label, t))
    if len(set(digests.values())) != 1:
        sys.exit("bench_export_sql: the files differ: %r" % digests)
    size = os.path.getsize(target_of(variants[0][0], variants[0][2]))
    print("all %d variants write the same %d bytes" % (len(variants), size))
    times = {(label, t): [] for label, _, t in variants}
    cpu = {(label, t): [] for label, _, t in variants}
    for r in range(args.rounds):
        order = variants[r % len(variants):] + variants[:r % len(variants)]
        for label, path, t in order:
            wall, secs = export(path, store, target_of(label, t))
            times[(label, t)].append(wall)
            cpu[(label, t)].append(secs)
        if args.writer_each_round:
            for t in targets:
                times.setdefault(("writer", t), []).append(writer_alone(args.bench_arrow, args.rows, t))
        print("round %d: %s" % (r + 1, "  ".join("%s@%s %.0fms" % (label, t, w[-1] * 1e3)
                                                 for (label, t), w in times.items())), flush=True)
    print("load average after the SQL rounds: %s" % " ".join("%.2f" % v for v in os.getloadavg()))
    gb = args.rows * 32 / 1e9
    print()
    print("%-10s %-24s %9s %9s %9s %7s %12s" % ("build", "target", "median ms", "min ms", "max ms", "GB/s",
                                                  "CPU ms (med)"))
    for label, _, t in variants:
        w = times[(label, t)]
        m = statistics.median(w)
        print("%-10s %-24s %9.0f %9.0f %9.0f %7.2f %12.0f" % (label, t[-24:], m * 1e3, min(w) * 1e3, max(w) * 1e3,
                                                              gb / m, statistics.median(cpu[(label, t)]) * 1e3))
    if args.writer_each_round:
        for t in targets:
            w = times[("writer", t)]
            m = statistics.median(w)
            print("%-10s %-24s %9.0f %9.0f %9.0f %7.2f %12s" % ("writer", t[-24:], m * 1e3, min(w) * 1e3,
                                                                max(w) * 1e3, gb / m, "-"))
    for t in targets:
        base = statistics.median(times[(modules[0][0], t)])
        for label, _ in modules[1:]:
            print("%s: %s / %s = %.2fx (medians)" % (t, modules[0][0], label, base / statistics.median(times[(label, t)])))
        if args.writer_each_round:
            for label, _ in modules:
                print("%s: writer alone / %s = %.2f (medians)" % (
                    t, label, statistics.median(times[("writer", t)]) / statistics.median(times[(label, t)])))
    for label, _, t in variants:
        os.remove(target_of(label, t))
    print()
    if os.path.exists(args.bench_arrow) and args.ext == "arrow":
        p = subprocess.run([args.bench_arrow, "--rows", str(args.rows), "--rounds", str(args.rounds),
                            "--dir", os.path.join(args.dir, "arrow"), "--only", "file_none,raw_write"],
                           capture_output=True, text=True)
        sys.stdout.write(p.stdout + p.stderr)
    print("load average after: %s" % " ".join("%.2f" % v for v in os.getloadavg()))


if __name__ == "__main__":
    main()
