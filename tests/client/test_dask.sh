#!/usr/bin/env bash
# colstore.dask on a real cluster: the wheel (packaging/build.sh) installed
# into a fresh venv that sees the system's dask, distributed, pandas and
# numpy (Debian's python3-dask, python3-distributed), a
# distributed.LocalCluster of 2 worker processes (each imports colstore from
# the venv and loads the module itself) over a dataset of 5 store files with
# NULLs, every kind of column and sums past 2^53:
#   - aggregate(): equal to colstore_agg over the whole dataset in one
#     process (integers exact, floats within 1e-9 relative), grouped by one
#     and two keys and not at all, with and without a WHERE;
#   - aggregate() on dask's local scheduler (no client) gives the same;
#   - each file's aggregate task runs on its home worker (the files dealt
#     round-robin over the workers sorted by address), call after call: each
#     worker has opened only its own files (Dask's work stealing, which may
#     move a task off a lagging worker, is off in this cluster);
#   - read(...).compute(): equal to the dataset table's full scan, rowids as
#     the index, with columns= and where=, each file's partition read on its
#     home worker too (the workers' tables dropped first, so each worker
#     has opened only its own files again);
#   - the client is a subclass of distributed.Client of another name:
#     colstore.dask knows a client by isinstance, and one it did not know
#     would leave the placement to Dask, which the checks of each worker's
#     files catch; the calling process opens no file while it runs;
#   - importing colstore.dask, and aggregate() and read() on dask's local
#     scheduler, do not import distributed;
#   - a damaged file fails compute() with its colstore: error.
# Without dask/distributed/pandas the test prints SKIP and exits 77.
set -euo pipefail

. "$(dirname "$0")/wheel_env.sh"
"$PY" -c "import numpy, pandas, dask.dataframe, distributed" 2>/dev/null ||
  skip "python3-dask, python3-distributed or python3-pandas is not installed"
new_venv "$tmp/venv" --system-site-packages
cd "$tmp"
seed=${COLSTORE_SEED:-$RANDOM}
# The checks run from a file: the workers are spawned processes, which
# import the main module again (hence the __main__ guard).
cat >check_dask.py <<'PYEOF'
import math, os, random, sqlite3, subprocess, sys
import dask
import pandas as pd
from distributed import Client, LocalCluster
import colstore
import colstore.dask as csd


class Placed(Client):
    """A client of another type name: colstore.dask must take it as one."""


def main(seed):
    print("COLSTORE_SEED=%d" % seed)
    rng = random.Random(seed)
    con = sqlite3.connect(":memory:", isolation_level=None)
    con.enable_load_extension(True)
    colstore.load(con)
    os.mkdir("ds")
    for f in range(5):
        con.execute("DROP TABLE IF EXISTS src")
        con.execute("CREATE TABLE src(k INT32, g TEXT, v INT64 NOT NULL, x FLOAT64, b BOOL, s TEXT)")
        n = rng.choice([1, 50, 400, 1500])
        rows = [(rng.choice([None, 1, 2, 3, -7]), rng.choice(["p", "q", None]),
                 rng.choice([rng.randint(-10, 10), rng.randint(1 << 48, 1 << 49)]),
                 None if rng.random() < 0.2 else rng.uniform(-1e3, 1e3),
                 rng.choice([None, 0, 1]), None if rng.random() < 0.3 else "s%d" % rng.randint(0, 99))
                for _ in range(n)]
        con.executemany("INSERT INTO src VALUES (?, ?, ?, ?, ?, ?)", rows)
        con.execute("SELECT colstore_create('ds/part-%02d.cst', 'SELECT * FROM src')" % f)
    con.execute("CREATE VIRTUAL TABLE ds USING colstore('ds')")
    # A process that never imported distributed reads and aggregates on
    # dask's local scheduler without importing it.
    code = ("import sys; import colstore.dask as csd; csd.aggregate('ds', ['k']); csd.read('ds').compute(); "
            "sys.exit('colstore.dask imported distributed' if 'distributed' in sys.modules else 0)")
    subprocess.run([sys.executable, "-c", code], check=True)
    print("colstore.dask without distributed: not imported")


    def same(a, b, what):
        if isinstance(a, float) or isinstance(b, float):
            ok = a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)
        else:
            ok = a == b and type(a) == type(b)
        if not ok:
            raise SystemExit("%s: %r != %r" % (what, a, b))


    def expect_agg(by, where):
        con.execute("DROP TABLE IF EXISTS temp.whole")
        con.execute("CREATE VIRTUAL TABLE temp.whole USING colstore_agg(ds%s)" % "".join(", " + k for k in by))
        cur = con.execute("SELECT * FROM temp.whole" + (" WHERE " + where if where else ""))
        names = [d[0] for d in cur.description]
        return names, {tuple(r[:len(by)]): r for r in cur.fetchall()}


    def native(v):
        return None if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA else \
            (v.item() if hasattr(v, "item") else v)


    def check_agg(got, by, where, what):
        names, want = expect_agg(by, where)
        if list(got.columns) != names:
            raise SystemExit("columns %r != %r" % (list(got.columns), names))
        if len(got) != len(want):
            raise SystemExit("by=%r where=%r %s: %d groups, want %d" % (by, where, what, len(got), len(want)))
        checks = 0
        for row in got.itertuples(index=False):
            row = [native(v) for v in row]
            exp = want[tuple(row[:len(by)])]
            for name, a, b in zip(names, row, exp):
                same(a, b, "by=%r where=%r %s %s" % (by, where, what, name))
                checks += 1
        return checks


    def opened_files():  # run on a worker's one thread: the files its tasks opened
        state = getattr(csd._local, "state", None)
        return sorted(os.path.basename(k) for k in (state["tables"] if state else {}) if isinstance(k, str))


    def forget_files():  # run on a worker's one thread: its tables dropped
        state = getattr(csd._local, "state", None)
        if state:
            state["con"].close()
        csd._local.state = None


    def check_homes(client, what):
        workers = sorted(client.scheduler_info()["workers"])
        files = sorted(os.listdir("ds"))
        for i, w in enumerate(workers):
            got = client.submit(opened_files, workers=[w], pure=False).result()
            if got != files[i::len(workers)]:
                raise SystemExit("%s: worker %s opened %r, its files are %r" % (what, w, got, files[i::len(workers)]))
        print("%s: each worker opened only its own files" % what)


    with dask.config.set({"distributed.scheduler.work-stealing": False}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Placed(cluster) as client:
        if len(client.scheduler_info()["workers"]) != 2:
            raise SystemExit("the cluster has not 2 workers: %r" % client.scheduler_info()["workers"])
        checks = 0
        for by, where, fan_in in [(by, where, csd.FAN_IN) for by in ([], ["k"], ["g", "k"])
                                  for where in (None, "x > 0", "v > 5 AND s IS NOT NULL")] + \
                [([], None, 2), (["k"], "x > 0", 2), (["g", "k"], None, 3)]:
            got = csd.aggregate("ds", by, where=where, fan_in=fan_in)
            checks += check_agg(got, by, where, "fan_in=%d" % fan_in)
        print("aggregate: %d values equal" % checks)
        if getattr(csd._local, "state", None) is not None:
            raise SystemExit("aggregate opened files in the calling process, not on the client's workers")
        with dask.config.set(scheduler="sync"):
            got = csd.aggregate("ds", ["k"], where="x > 0")
        print("aggregate on the local scheduler: %d values equal" % check_agg(got, ["k"], "x > 0", "sync"))
        check_homes(client, "aggregate")
        for w in client.scheduler_info()["workers"]:
            client.submit(forget_files, workers=[w], pure=False).result()
        for columns, where in ((None, None), (["x", "s"], "k = 2 OR b"), (["v"], "x > 100")):
            frame = csd.read("ds", columns=columns, where=where).compute()
            cols = columns or ["k", "g", "v", "x", "b", "s"]
            want = con.execute("SELECT rowid, %s FROM ds%s ORDER BY rowid"
                               % (", ".join(cols), " WHERE " + where if where else "")).fetchall()
            got = [tuple([int(i)] + [native(v) for v in r]) for i, r in zip(frame.index, frame.itertuples(index=False))]
            want = [tuple(int(v) if isinstance(v, int) else v for v in r) for r in want]
            if got != want:
                diff = next(i for i, (a, b) in enumerate(zip(got + [None] * len(want), want + [None] * len(got))) if a != b)
                raise SystemExit("read(columns=%r, where=%r): row %d is %r, want %r"
                                 % (columns, where, diff, got[diff:diff + 1], want[diff:diff + 1]))
        print("read: equal to the full scan")
        check_homes(client, "read")
        forget_files()  # this process's tables, from the aggregate on the local scheduler
        if csd.read("ds", columns=["v"]).v.sum().compute() != con.execute("SELECT sum(v) FROM ds").fetchone()[0] \
                or getattr(csd._local, "state", None) is not None:
            raise SystemExit("read(...).v.sum() is wrong or ran in the calling process")
        # A damaged file: cut in the middle.
        path = "ds/part-03.cst"
        size = os.path.getsize(path)
        with open(path, "r+b") as f:
            f.truncate(size // 2)
        for call in (lambda: csd.aggregate("ds", "k"), lambda: csd.read("ds").compute()):
            try:
                call()
                raise SystemExit("a damaged file gave an answer")
            except sqlite3.Error as e:
                if not str(e).startswith("colstore:"):
                    raise SystemExit("the error does not start colstore: %s" % e)
        print("a damaged file fails with its colstore: error")


if __name__ == "__main__":
    main(int(sys.argv[1]))
PYEOF
"$tmp/venv/bin/python" check_dask.py "$seed" || fail "colstore.dask checks failed (COLSTORE_SEED=$seed)"
echo "ok: colstore.dask on a 2-worker LocalCluster"
