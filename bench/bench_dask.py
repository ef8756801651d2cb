#!/usr/bin/env python3
"""colstore.dask.aggregate on 1 and 2 Dask workers, against colstore_agg in one process.

A dataset of SHARDS store files of ROWS rows each (a uniform float a, an
integer group key b with 100 values, a normal-ish float c, an integer d) is
aggregated grouped by b three ways, interleaved round by round:

  one_process  colstore_agg over the dataset table in this process, with one
               kernel thread, on a connection kept between rounds: the cost
               without Dask (the anchor);
  dask_w1      colstore.dask.aggregate on a LocalCluster of 1 worker process
               (1 thread): the same work through Dask, one file at a time;
  dask_w2      the same on a LocalCluster of 2 worker processes (1 thread
               each): two files at a time, a core each;
  procs_1,     the host's ceiling without Dask: the same per-file work
  procs_2      (colstore.dask's _aggregate_file, then _combine here) in 1 or
               2 plain processes kept between rounds, each always given the
               same files (round-robin), so its tables stay warm.

Both clusters are started before the first round and kept (their workers
keep their tables open between tasks, as colstore.dask does); each
variant's result is checked against one_process first (integers exact, floats within
1e-9 relative), and so is where the Dask variants ran: their per-file tasks
must have run on the cluster's worker processes, as many as the cluster
has (the bench once timed dask's local threaded scheduler in its own process
for both, because Client.as_current() does not make compute() use the
client; the clusters are now named with dask.config.set(scheduler=client)).
Reported: median [min-max] seconds, dask_w1 / dask_w2 (the scaling target:
at least 1.6x on 2 cores), procs_1 / procs_2 (what the host allows, in the
same run), and dask_w1 - one_process (Dask's overhead: scheduling,
worker-side module loading, the combining step; target under 0.5 s).

    bench/bench_dask.py [--rows N] [--shards K] [--rounds R] [--dir D] [--module build/colstore]
                        [--package DIR] [--variants a,b,...]
    bench/bench_dask.py --combine-sweep

--combine-sweep times only the combining step (colstore.dask's _combine, in
one process) over synthetic partial results of G groups from F files, each
row with the columns colstore_agg gives for 4 numeric source columns: what
the step costs as shards and groups grow (docs/scale.md).

The package is used from the source tree (python/, or --package DIR: another
tree's python/ to time its colstore.dask against this one's, in separate
runs, since a worker process imports one), the module named by
COLSTORE_LOADABLE_PATH, which the worker processes inherit.  Needs numpy,
pandas, dask and distributed (Debian's python3-dask, python3-distributed).
"""
import argparse
import math
import os
import sqlite3
import statistics
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def connect():
    import colstore
    con = sqlite3.connect(":memory:", isolation_level=None)
    con.enable_load_extension(True)
    colstore.load(con)
    return con


def make_dataset(path, shards, rows):
    os.makedirs(path, exist_ok=True)
    con = connect()
    for k in range(shards):
        f = os.path.join(path, "part-%02d.cst" % k)
        if os.path.exists(f):
            continue
        print("writing %s (%d rows) ..." % (f, rows), flush=True)
        con.execute("SELECT colstore_create(?, ?)", (f + ".partial", (
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < %d) "
            "SELECT (abs(random()) %% 1000000) / 1e6 AS a, abs(random()) %% 100 AS b, "
            "((abs(random()) %% 1000) + (abs(random()) %% 1000) + (abs(random()) %% 1000)) / 1000.0 AS c, "
            "i + %d AS d FROM n") % (rows - 1, k * rows)))
        os.rename(f + ".partial", f)
    con.close()


_anchor = {}


def one_process(ds):
    """colstore_agg over the dataset table, on a connection kept between
    rounds as the workers keep theirs (stores mapped, per-record statistics
    built after the first call)."""
    con = _anchor.get(ds)
    if con is None:
        con = _anchor[ds] = connect()
        con.execute("SELECT colstore_config('threads', 1)")
        con.execute("CREATE VIRTUAL TABLE temp.ds USING colstore('%s')" % ds.replace("'", "''"))
        con.execute("CREATE VIRTUAL TABLE temp.by_b USING colstore_agg(ds, b)")
    cur = con.execute("SELECT * FROM temp.by_b")
    names = [d[0] for d in cur.description]
    return names, {r[0]: r for r in cur.fetchall()}


def via_dask(client, ds):
    import dask
    import colstore.dask as csd
    with dask.config.set(scheduler=client):
        frame = csd.aggregate(ds, "b")
    return as_rows(frame)


def as_rows(frame):
    return list(frame.columns), {int(r[0]): tuple(r) for r in frame.itertuples(index=False)}


def placement(client, ds):
    """Which worker ran each file's task in one aggregate: {worker: [file
    task keys]} from the scheduler's task stream."""
    from distributed import get_task_stream
    with get_task_stream(client) as ts:
        got = via_dask(client, ds)
    where = {}
    for t in ts.data:
        if t["key"].startswith("_aggregate_file"):
            where.setdefault(t["worker"], []).append(t["key"])
    return got, where


def proc_loop(conn):
    """A plain process's loop (procs_N): aggregate the files it is sent, on
    tables it keeps, until it is sent None."""
    import colstore.dask as csd
    while True:
        msg = conn.recv()
        if msg is None:
            return
        files, schema = msg
        conn.send([csd._aggregate_file(f, ["b"], None, 1, schema) for f in files])


def start_procs(n):
    import multiprocessing
    ctx = multiprocessing.get_context("spawn")
    procs = []
    for _ in range(n):
        here, there = ctx.Pipe()
        p = ctx.Process(target=proc_loop, args=(there,), daemon=True)
        p.start()
        procs.append((p, here))
    return procs


def via_procs(procs, files, schema):
    import colstore.dask as csd
    for i, (_, conn) in enumerate(procs):
        conn.send((files[i::len(procs)], schema))
    parts = [part for _, conn in procs for part in conn.recv()]
    return as_rows(csd._combine(parts, ["b"], schema))


def same(a, b):
    names_a, rows_a = a
    names_b, rows_b = b
    if names_a != names_b or set(rows_a) != set(rows_b):
        return False
    for k in rows_a:
        for x, y in zip(rows_a[k], rows_b[k]):
            if isinstance(x, float) or isinstance(y, float):
                if not math.isclose(x, y, rel_tol=1e-9):
                    return False
            elif x != y:
                return False
    return True


def combine_sweep():
    import random
    from colstore.dask import FAN_IN, _combine, _partial_frame
    cols = ["a", "b", "c", "d"]
    names = ["g", "count"] + [p + x for x in cols for p in ("count_", "sum_", "avg_", "min_", "max_")]
    rng = random.Random(5)
    print("%8s %8s %12s %14s %14s %14s" % ("groups", "files", "combine s", "ns/partial row", "worker ns/row",
                                            "tree s (1 core)"))
    for groups in (100, 10000, 100000):
        for files in (4, 16, 64, 256):
            if groups * files > 4000000:
                continue
            parts = []
            for _ in range(files):
                rows = []
                for g in range(groups):
                    row = [g, 10]
                    for x in cols:
                        if x in ("a", "c"):  # FLOAT64
                            row += [10, rng.random() * 10, 0.5, rng.random(), rng.random() + 1]
                        else:  # INT64
                            row += [10, rng.randint(0, 1000), 50.0, rng.randint(0, 10), rng.randint(90, 100)]
                    rows.append(tuple(row))
                parts.append(rows)
            schema = dict(g="INT64", a="FLOAT64", b="INT64", c="FLOAT64", d="INT64")
            t = time.perf_counter()
            frames = [_partial_frame(names, rows, ["g"], schema) for rows in parts]
            t_frames = time.perf_counter() - t
            t = time.perf_counter()
            _combine(frames, ["g"], schema)
            dt = time.perf_counter() - t
            # aggregate()'s tree of FAN_IN-way combines, run here one after
            # another: its total work (on a cluster the tasks of a level run
            # in parallel).
            t = time.perf_counter()
            level = frames
            while len(level) > FAN_IN:
                level = [_combine(level[i:i + FAN_IN], ["g"], schema) for i in range(0, len(level), FAN_IN)]
            _combine(level, ["g"], schema)
            dt_tree = time.perf_counter() - t
            print("%8d %8d %12.3f %14.0f %14.0f %14.3f" % (groups, files, dt, dt / (groups * files) * 1e9,
                                                           t_frames / (groups * files) * 1e9, dt_tree), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=10000000)
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", default=os.path.join(ROOT, "build", "bench-dask"))
    ap.add_argument("--module", default=os.path.join(ROOT, "build", "colstore"))
    ap.add_argument("--package", default=os.path.join(ROOT, "python"), help="the python/ tree to import colstore from")
    ap.add_argument("--variants", default="one_process,dask_w1,dask_w2,procs_1,procs_2")
    ap.add_argument("--combine-sweep", action="store_true", help="time only the combining step, synthetic partials")
    args = ap.parse_args()
    sys.path.insert(0, os.path.abspath(args.package))
    if args.combine_sweep:
        return combine_sweep()
    os.environ["COLSTORE_LOADABLE_PATH"] = os.path.abspath(args.module)
    from distributed import Client, LocalCluster

    ds = os.path.join(os.path.abspath(args.dir), "ds_%d_%d" % (args.shards, args.rows))
    make_dataset(ds, args.shards, args.rows)
    print("dataset %s: %d files x %d rows; load average %.1f %.1f %.1f" % ((ds, args.shards, args.rows) + os.getloadavg()),
          flush=True)
    import colstore.dask as csd
    print("colstore.dask from %s" % os.path.dirname(csd.__file__), flush=True)
    info = csd.dataset_info(ds)
    files, schema = info["files"], {c["name"]: c["type"] for c in info["columns"]}
    names = args.variants.split(",")
    clusters, procs = {}, {}
    for name, workers in (("dask_w1", 1), ("dask_w2", 2)):
        if name in names:
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
            clusters[name] = (cluster, Client(cluster, set_as_default=False))
    for name, n in (("procs_1", 1), ("procs_2", 2)):
        if name in names:
            procs[name] = start_procs(n)
    runs = {"one_process": lambda: one_process(ds),
            "dask_w1": lambda: via_dask(clusters["dask_w1"][1], ds),
            "dask_w2": lambda: via_dask(clusters["dask_w2"][1], ds),
            "procs_1": lambda: via_procs(procs["procs_1"], files, schema),
            "procs_2": lambda: via_procs(procs["procs_2"], files, schema)}
    try:
        want = one_process(ds)
        for name in names:
            if name in clusters:
                client = clusters[name][1]
                got, where = placement(client, ds)
                print("%s: file tasks per worker %s" % (name, {w[-5:]: len(k) for w, k in sorted(where.items())}))
                workers = set(client.scheduler_info()["workers"])
                if not set(where) <= workers or len(where) != min(len(workers), len(files)):
                    sys.exit("bench_dask: %s's tasks did not run on its %d workers: %r" % (name, len(workers), where))
            else:
                got = runs[name]()
            if not same(want, got):
                sys.exit("bench_dask: %s differs from one_process" % name)
        print("results identical (%d groups, %d columns)" % (len(want[1]), len(want[0])), flush=True)
        secs = {n: [] for n in names}
        for r in range(args.rounds):
            k = r % len(names)
            for n in names[k:] + names[:k]:
                t = time.perf_counter()
                runs[n]()
                secs[n].append(time.perf_counter() - t)
            print("round %d: %s" % (r + 1, "  ".join("%s %.3fs" % (n, secs[n][-1]) for n in names)), flush=True)
    finally:
        for cluster, client in clusters.values():
            client.close()
            cluster.close()
        for group in procs.values():
            for p, conn in group:
                conn.send(None)
                p.join()
    med = {n: statistics.median(v) for n, v in secs.items()}
    print()
    for n in names:
        print("%-12s median %.3f s [%.3f-%.3f]" % (n, med[n], min(secs[n]), max(secs[n])))
    for a, b, what in (("dask_w1", "dask_w2", "2 workers against 1"), ("procs_1", "procs_2", "the host's ceiling: 2 plain processes against 1")):
        if a in med and b in med:
            print("%s / %s: %.2fx (%s)" % (a, b, med[a] / med[b], what))
    if "dask_w1" in med and "one_process" in med:
        print("dask_w1 - one_process: %.3f s (Dask's overhead on one worker)" % (med["dask_w1"] - med["one_process"]))
    print("load average after: %.1f %.1f %.1f" % os.getloadavg())


if __name__ == "__main__":
    main()
