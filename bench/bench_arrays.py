#!/usr/bin/python3
"""bench_arrays.py - whole columns through colstore_append/colstore_array
against the same rows through executemany INSERT and SELECT fetchall
(issue 23, item 4).

WHY.  A binding that holds a column as an array (numpy, Arrow, a typed
array) should move it into and out of a colstore table at memory speed,
not at SQLite's per-row speed.  The targets: append >= 1 GB/s and array
read >= 2 GB/s of array bytes, each >= 20x the row route, for 10M FLOAT64
values, with an INT32 and a TEXT column beside them.

HOW.  Two shapes, each with --rows rows: `f64` (one FLOAT64 column) and
`mixed` (FLOAT64, INT32, TEXT of 1-7 characters, every 10th INT32 NULL).
Per shape and round, in this interleaved order:

  append  a fresh store; SELECT colstore_append('t', 'f', ?, ...) with the
          numpy arrays passed as memoryviews (no tobytes copy), autocommit,
          so the time includes the commit's writes and fsyncs;
  array   SELECT colstore_array('t', name) for every part (values, :valid,
          :offsets), each turned into a numpy array with np.frombuffer;
  insert  a fresh store; executemany('INSERT INTO t VALUES (?, ...)') over
          the rows as Python values, in one transaction;
  fetch   SELECT * FROM t, fetchall().

Before anything is timed, both stores must hold identical columns
(colstore_array of each, compared byte for byte) and the fetched rows must
equal the arrays.  Two baselines split the array routes' time into the
binding's share and colstore's: `bind` hands the same BLOBs to SQLite for
`SELECT length(?) + ...` (Python's sqlite3 copies every bound BLOB), and
`floor` writes the same bytes to a new file and fsyncs it (the disk's
share of any durable append), and `array_sql` makes the same colstore_array BLOBs but measures them inside
SQLite (`length(colstore_array(...))`), without the copy into Python bytes.
GB/s counts the array bytes (values, validity and
offsets as a binding hands them over), the same figure for both routes.
Medians with min and max over --rounds; ratios from the medians of this one
run.  The host's load average is printed with the figures.

Memory note: on a host where a fresh page costs a fault the hypervisor
must back (a microVM), every new 80 MB buffer costs far more than the copy
into it.  --keep-memory reruns this script with glibc told to keep freed
memory (MALLOC_MMAP_MAX_=0, MALLOC_TRIM_THRESHOLD_ large), so the Python
bytes objects and SQLite's copy of a bound BLOB reuse warm pages; both
figures are printed.

    /usr/bin/python3 bench/bench_arrays.py [--rows 10000000] [--rounds 3] [--keep-memory] [--json out.json]
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

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULE = os.environ.get("COLSTORE_MODULE") or os.path.join(ROOT, "build", "colstore")
sys.path.insert(0, os.path.join(ROOT, "python"))
from colstore import arrays as pkg_arrays  # noqa: E402


def connect():
    con = sqlite3.connect(":memory:", isolation_level=None)
    con.enable_load_extension(True)
    con.load_extension(MODULE)
    return con


def make_data(shape, n, seed=23):
    rng = np.random.default_rng(seed)
    cols = {"f": ("FLOAT64", rng.random(n), None, None)}
    if shape == "mixed":
        i = rng.integers(-2**31, 2**31 - 1, n, dtype="<i4")
        valid = (np.arange(n) % 10 != 0).astype("<u1")
        i[valid == 0] = 0
        words = np.array([("w%d" % k).encode() for k in range(100000)], dtype=object)
        pick = rng.integers(0, len(words), n)
        strs = words[pick]
        lens = np.fromiter((len(s) for s in strs), dtype="<i8", count=n)
        offs = np.zeros(n + 1, dtype="<i8")
        np.cumsum(lens, out=offs[1:])
        cols["i"] = ("INT32", i, valid, None)
        cols["s"] = ("TEXT", b"".join(strs), None, offs)
    return cols


def array_bytes(cols):
    total = 0
    for _, (_, vals, valid, offs) in cols.items():
        total += len(vals) if isinstance(vals, bytes) else vals.nbytes
        total += 0 if valid is None else valid.nbytes
        total += 0 if offs is None else offs.nbytes
    return total


def create(con, path, cols):
    if os.path.exists(path):
        os.remove(path)
    con.execute("DROP TABLE IF EXISTS t")
    con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', %s)" %
                (path, ", ".join("%s %s" % (c, t[0]) for c, t in cols.items())))


def append_args(cols):
    args = ["t"]
    for c, (_, vals, valid, offs) in cols.items():
        args += [c, vals if isinstance(vals, bytes) else memoryview(vals)]
        if valid is not None:
            args += [c + ":valid", memoryview(valid)]
        if offs is not None:
            args += [c + ":offsets", memoryview(offs)]
    return args


def do_append(con, path, cols):
    create(con, path, cols)
    args = append_args(cols)
    t0 = time.perf_counter()
    con.execute("SELECT colstore_append(%s)" % ", ".join("?" * len(args)), args).fetchone()
    return time.perf_counter() - t0


def do_append_pkg(con, path, cols):
    """The package's append (colstore.arrays.append): the same columns in
    pieces of about 4 MiB, one SAVEPOINT; numeric shapes only (the package
    takes TEXT as Python strings, which is another cost)."""
    create(con, path, cols)
    given = {c: vals if valid is None else np.ma.masked_array(vals, mask=valid == 0)
             for c, (_, vals, valid, _) in cols.items()}
    t0 = time.perf_counter()
    pkg_arrays.append(con, "t", given)
    return time.perf_counter() - t0


def do_floor(path, cols):
    """The disk's share: the same array bytes written to a new file and
    fsynced, as plain writes (what any durable append must at least do)."""
    if os.path.exists(path):
        os.remove(path)
    parts = []
    for _, (_, vals, valid, offs) in cols.items():
        parts += [vals if isinstance(vals, bytes) else memoryview(vals)]
        parts += [memoryview(x) for x in (valid, offs) if x is not None]
    t0 = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        for part in parts:
            os.write(fd, part)
        os.fsync(fd)
    finally:
        os.close(fd)
    return time.perf_counter() - t0


def do_bind(con, cols):
    """The binding's share of an append: the same arguments handed to SQLite
    (Python's sqlite3 copies each BLOB) for a query that only measures them."""
    args = append_args(cols)
    t0 = time.perf_counter()
    con.execute("SELECT %s" % " + ".join("length(?)" for _ in args), args).fetchone()
    return time.perf_counter() - t0


def array_names(cols):
    names = []
    for c, (_, _, valid, offs) in cols.items():
        names += [c] + ([c + ":valid"] if valid is not None else []) + ([c + ":offsets"] if offs is not None else [])
    return names


def do_array_sql(con, cols):
    """colstore_array's own share: the same BLOBs made and measured inside
    SQLite, without the copy into Python bytes objects."""
    names = array_names(cols)
    t0 = time.perf_counter()
    con.execute("SELECT %s" % " + ".join("length(colstore_array('t', ?))" for _ in names), names).fetchone()
    return time.perf_counter() - t0


def do_array(con, cols):
    out = {}
    t0 = time.perf_counter()
    for c, (ty, _, valid, offs) in cols.items():
        dt = {"FLOAT64": "<f8", "INT32": "<i4", "TEXT": "<u1"}[ty]
        out[c] = np.frombuffer(con.execute("SELECT colstore_array('t', ?)", (c,)).fetchone()[0], dtype=dt)
        if valid is not None:
            out[c + ":valid"] = np.frombuffer(con.execute("SELECT colstore_array('t', ?)", (c + ":valid",)).fetchone()[0],
                                              dtype="<u1")
        if offs is not None:
            out[c + ":offsets"] = np.frombuffer(
                con.execute("SELECT colstore_array('t', ?)", (c + ":offsets",)).fetchone()[0], dtype="<i8")
    return time.perf_counter() - t0, out


def row_values(cols, n):
    """The rows as Python values, made once (not timed)."""
    per = []
    for c, (ty, vals, valid, offs) in cols.items():
        if ty == "TEXT":
            per.append([vals[offs[k]:offs[k + 1]].decode() for k in range(n)])
        elif valid is not None:
            per.append([int(v) if ok else None for v, ok in zip(vals.tolist(), valid.tolist())])
        else:
            per.append(vals.tolist())
    return list(zip(*per))


def do_insert(con, path, cols, rows):
    create(con, path, cols)
    t0 = time.perf_counter()
    con.execute("BEGIN")
    con.executemany("INSERT INTO t VALUES (%s)" % ", ".join("?" * len(cols)), rows)
    con.execute("COMMIT")
    return time.perf_counter() - t0


def do_fetch(con, cols):
    t0 = time.perf_counter()
    rows = con.execute("SELECT %s FROM t" % ", ".join(cols)).fetchall()
    return time.perf_counter() - t0, rows


def stats(xs):
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}


def run(args):
    d = tempfile.mkdtemp(prefix="bench-arrays-", dir=args.dir)
    con = connect()
    results = {"rows": args.rows, "rounds": args.rounds, "keep_memory": bool(os.environ.get("MALLOC_MMAP_MAX_")),
               "shapes": {}}
    for shape in args.shapes.split(","):
        cols = make_data(shape, args.rows)
        nbytes = array_bytes(cols)
        rows = row_values(cols, args.rows)
        pa, pr = os.path.join(d, "a.cst"), os.path.join(d, "r.cst")
        # identical results first
        do_append(con, pa, cols)
        _, arrs = do_array(con, cols)
        rows_back = con.execute("SELECT %s FROM t" % ", ".join(cols)).fetchall()
        assert rows_back == rows, "%s: the appended table does not read back as the rows" % shape
        do_insert(con, pr, cols, rows)
        _, arrs_r = do_array(con, cols)
        for k in arrs:
            assert arrs[k].tobytes() == arrs_r[k].tobytes(), "%s: %s differs between the routes" % (shape, k)
        _, fetched = do_fetch(con, cols)
        assert fetched == rows, "%s: fetchall differs from the rows" % shape
        pkg = all(offs is None for _, (_, _, _, offs) in cols.items())
        if pkg:
            do_append_pkg(con, pa, cols)
            _, arrs_p = do_array(con, cols)
            for k in arrs:
                assert arrs[k].tobytes() == arrs_p[k].tobytes(), "%s: %s differs, package append" % (shape, k)
            del arrs_p
        del rows_back, fetched, arrs, arrs_r
        t = {"append": [], "append_pkg": [], "floor": [], "bind": [], "array": [], "array_sql": [], "insert": [],
             "fetch": []}
        for r in range(args.rounds):
            t["append"].append(do_append(con, pa, cols))
            if pkg:
                t["append_pkg"].append(do_append_pkg(con, pa, cols))
            t["floor"].append(do_floor(os.path.join(d, "floor.bin"), cols))
            t["bind"].append(do_bind(con, cols))
            t["array"].append(do_array(con, cols)[0])
            t["array_sql"].append(do_array_sql(con, cols))
            t["insert"].append(do_insert(con, pr, cols, rows))
            dt, fetched = do_fetch(con, cols)
            t["fetch"].append(dt)
            del fetched
        s = {k: stats(v) for k, v in t.items() if v}
        gb = {k: nbytes / s[k]["median"] / 1e9 for k in s}
        results["shapes"][shape] = {"array_bytes": nbytes, "seconds": s, "gb_per_s": gb,
                                    "append_vs_insert": s["insert"]["median"] / s["append"]["median"],
                                    "append_pkg_vs_insert": (s["insert"]["median"] / s["append_pkg"]["median"]
                                                             if "append_pkg" in s else None),
                                    "array_vs_fetch": s["fetch"]["median"] / s["array"]["median"]}
        print("%s: %d rows, %.1f MB of arrays%s" % (shape, args.rows, nbytes / 1e6,
                                                    ", glibc keeps freed memory" if results["keep_memory"] else ""))
        for k in [k for k in t if k in s]:
            print("  %-9s median %8.1f ms (min %8.1f, max %8.1f)  %6.2f GB/s" %
                  (k, s[k]["median"] * 1e3, s[k]["min"] * 1e3, s[k]["max"] * 1e3, gb[k]))
        print("  append / executemany INSERT: %.0fx   array / fetchall: %.0fx" %
              (results["shapes"][shape]["append_vs_insert"], results["shapes"][shape]["array_vs_fetch"]))
        if "append_pkg" in s:
            print("  colstore.arrays.append (pieces) / executemany INSERT: %.0fx"
                  % results["shapes"][shape]["append_pkg_vs_insert"])
        del rows
    results["loadavg"] = os.getloadavg()
    print("load average %.2f %.2f %.2f on %d CPUs" % (results["loadavg"] + (os.cpu_count(),)))
    for f in os.listdir(d):
        os.remove(os.path.join(d, f))
    os.rmdir(d)
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--shapes", default="f64,mixed")
    ap.add_argument("--dir", default=None, help="where the stores go (default: the system's temp dir)")
    ap.add_argument("--keep-memory", action="store_true", help="also run with glibc keeping freed memory")
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    out = [run(args)]
    if args.keep_memory:
        env = dict(os.environ, MALLOC_MMAP_MAX_="0", MALLOC_TRIM_THRESHOLD_="68719476736")
        keep = os.path.join(tempfile.gettempdir(), "bench_arrays_keep_%d.json" % os.getpid())
        cmd = [sys.executable, os.path.abspath(__file__), "--rows", str(args.rows), "--rounds", str(args.rounds),
               "--shapes", args.shapes, "--json", keep] + (["--dir", args.dir] if args.dir else [])
        sys.stdout.flush()
        r = subprocess.run(cmd, env=env)
        if r.returncode == 0:
            with open(keep) as f:
                out.append(json.load(f)[0])
            os.remove(keep)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
