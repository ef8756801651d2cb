"""colstore datasets on a Dask cluster: one partition, or one task, per store file.

A colstore dataset is already the shape a distributed engine wants: a
directory (or glob) of independent store files, each a complete store with
its own schema copy, checksums and row count.  So nothing here splits or
moves data: each task opens one file itself, on whatever worker runs it
(reading from a shared or parallel filesystem), with the colstore module the
worker's own Python environment carries (`colstore.load`), and sends back
only its result.  A worker thread keeps its tables open for the next task
(_worker_table), so a file read again is already mapped.

- read(source, columns=None, where=None): a dask DataFrame with a partition
  per file.  The index is the dataset's rowid (the file's first row follows
  the previous file's last, as a dataset table numbers them), so the
  divisions are known from the files' row counts.  Columns come through
  colstore_array (no row loop); a WHERE is run by colstore in each file
  (pushdown, kernels), and only the selected rows' columns are gathered.
- aggregate(source, by, where=None): colstore_agg on every file, on the
  workers, then combining steps over the partial rows: counts and sums add
  (integer sums exactly, in Python integers, with SQLite's overflow error),
  minima and maxima take the extreme, averages are sum / count.  The
  partial results are a row per group per file, so combining costs groups x
  files, never rows.  A combined result has the partial results' own
  columns (the averages derived again from the sums and counts), so the
  steps form a tree: FAN_IN partial results a task, on the workers, until
  one is left.  One task over every file's groups would hold files x groups
  rows in one process; the tree holds FAN_IN x groups at a time, and its
  combining runs in parallel.

Placement: on a distributed Client (the default client, or one named with
dask.config.set(scheduler=client)), aggregate and read give every file a
home worker, the files dealt round-robin over the workers' threads
(_homes), and put each file's task there as a preference (_place:
allow_other_workers, so a worker that is gone or lagging hands its file to
another, through Dask's work stealing).  read's homes are the workers at the
time of the read() call, where its graph is built.  A file's first
aggregate in a process costs about three times a warm one (mapping it,
building its per-record statistics); with Dask's own placement the same
cluster moved files between workers from call to call until every worker
had opened every file (both of 2 workers had all 4 after five calls): each
first open paid again per worker, every file's statistics held by every
worker, and on N machines every machine's page cache asked for every file.
With homes each worker opens only its share (docs/performance.md, "Dask on
2 workers: where the time went"), and a read() after an aggregate() finds
each file open on its own worker.  Hashing files onto workers (rendezvous)
was rejected: 4 files land 2 and 2 on 2 workers only 6 times in 16.
Client.as_current() alone does not make dask's compute() use a client;
aggregate follows compute() there and runs on dask's local scheduler in the
calling process.

Threads: a task runs colstore with one kernel thread (colstore_config
threads, which is per process), because Dask already runs one task per
worker thread; two workers on a 2-core host then use a core each instead of
fighting over both.  Pass threads= to change it.

Errors: a file that fails (damaged, missing, another schema) raises its
`colstore:` error out of compute(); there is no partial answer.
"""
import json
import sqlite3
import sys
import threading

import numpy as np
import pandas as pd

import colstore
from colstore import arrays

# colstore type -> (pandas dtype without NULLs, pandas dtype with NULLs).
PANDAS_DTYPES = {
    "INT8": ("int8", "Int8"), "INT16": ("int16", "Int16"), "INT32": ("int32", "Int32"),
    "INT64": ("int64", "Int64"), "UINT8": ("uint8", "UInt8"), "UINT16": ("uint16", "UInt16"),
    "UINT32": ("uint32", "UInt32"), "FLOAT32": ("float32", "Float32"),
    "FLOAT64": ("float64", "Float64"), "BOOL": ("bool", "boolean"),
    "TEXT": ("object", "object"), "BLOB": ("object", "object"),
}
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
# Partial results combined by one task (aggregate's tree); see the sweep in
# bench/bench_dask.py --combine-sweep and docs/scale.md.
FAN_IN = 16


def _connect():
    con = sqlite3.connect(":memory:", isolation_level=None)
    con.enable_load_extension(True)
    colstore.load(con)
    con.enable_load_extension(False)
    return con


# Each worker thread keeps one connection with a table open over every file
# it has read (and an aggregate table per file and keys): the next task on
# the same file finds the store mapped and its per-record statistics built,
# which is most of a cold aggregate's time.  colstore checks every file at
# each statement's start, so a file changed, replaced or damaged since is
# seen.  Bounded: past MAX_OPEN tables the thread starts a fresh connection.
_local = threading.local()
MAX_OPEN = 256


def _worker_table(path, threads, by=None):
    """(connection, table name) of this thread's table over path, or of its
    aggregate table grouped by the keys by, made on first use."""
    st = getattr(_local, "state", None)
    if st is None or len(st["tables"]) >= MAX_OPEN:
        if st is not None:
            st["con"].close()
        st = _local.state = {"con": _connect(), "tables": {}}
    con, tables = st["con"], st["tables"]
    if threads is not None:
        con.execute("SELECT colstore_config('threads', ?)", (threads,))
    name = tables.get(path)
    if name is None:
        name = "f%d" % len(tables)
        con.execute("CREATE VIRTUAL TABLE temp.%s USING colstore(%s)" % (name, _quote_literal(path)))
        tables[path] = name
    if by is None:
        return con, name
    key = (path, tuple(by))
    agg = tables.get(key)
    if agg is None:
        agg = "a%d" % len(tables)
        con.execute("CREATE VIRTUAL TABLE temp.%s USING colstore_agg(%s%s)"
                    % (agg, name, "".join(", " + _quote(k) for k in by)))
        tables[key] = agg
    return con, agg


def _quote(name):
    return '"' + name.replace('"', '""') + '"'


def dataset_info(source):
    """colstore_info of source (a store, a directory or a pattern): its files,
    their row counts and the schema, as colstore itself expands the source."""
    con = _connect()
    try:
        return json.loads(con.execute("SELECT colstore_info(?)", (source,)).fetchone()[0])
    finally:
        con.close()


def _meta(schema, names):
    cols = {}
    for name in names:
        kind, nullable = schema[name]
        cols[name] = pd.Series([], dtype=PANDAS_DTYPES[kind][1 if nullable else 0])
    return pd.DataFrame(cols, index=pd.Index([], dtype="int64", name="rowid"))


def _to_pandas(values, kind, nullable):
    dtype = PANDAS_DTYPES[kind][1 if nullable else 0]
    if kind in arrays.VARLEN:  # an object array, None where NULL (np.ma.filled(None) would give '?')
        data = np.array(np.ma.getdata(values), dtype=object)
        data[np.ma.getmaskarray(values)] = None
        return pd.Series(data, dtype=object)
    if not nullable:
        return pd.Series(np.asarray(values), dtype=dtype)
    data = pd.array(np.ma.getdata(values), dtype=dtype)
    data[np.ma.getmaskarray(values)] = pd.NA
    return pd.Series(data)


def _read_file(path, offset, names, schema, where, threads):
    con, table = _worker_table(path, threads)
    rows = None
    if where:
        got = con.execute("SELECT rowid FROM temp.%s WHERE %s" % (table, where)).fetchall()
        rows = np.fromiter((r[0] for r in got), dtype=np.int64, count=len(got))
    cols = arrays.read(con, table, columns=names, rows=rows)
    if rows is not None:
        n = len(rows)
    elif names:
        n = len(cols[names[0]])
    else:
        n = con.execute("SELECT count(*) FROM temp.%s" % table).fetchone()[0]
    index = pd.Index((rows if rows is not None else np.arange(n, dtype=np.int64)) + offset, name="rowid")
    frame = pd.DataFrame({name: _to_pandas(cols[name], *schema[name]) for name in names})
    frame.index = index
    return frame


def _quote_literal(text):
    return "'" + text.replace("'", "''") + "'"


def read(source, columns=None, where=None, threads=1):
    """A dask DataFrame of source's rows (a store, a dataset directory or a
    pattern), one partition per file, indexed by rowid.  columns: the names
    to read (default all); where: an SQL condition run by colstore in each
    file (e.g. "energy > 10 AND run IN (1, 2)")."""
    import dask.dataframe as dd

    info = dataset_info(source)
    schema = {c["name"]: (c["type"], c["nullable"]) for c in info["columns"]}
    names = list(schema) if columns is None else list(columns)
    arrays.check_names(source, names, schema)
    files, counts = info["files"], info["file_rows"]
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    firsts = [int(o) for o in offsets[:-1]]
    divisions = None
    if all(c > 0 for c in counts):
        divisions = firsts + [int(offsets[-1]) - 1]
    client = _current_client()
    homes = _homes(client, len(files)) if client is not None else [None] * len(files)
    if not any(homes):
        return dd.from_map(_read_file, files, firsts, args=(names, schema, where, threads),
                           meta=_meta(schema, names), divisions=divisions, label="colstore-read",
                           enforce_metadata=False)
    # On a distributed client each file's partition prefers the file's home
    # worker, as aggregate's tasks do: a delayed read per file annotated
    # with its place, the partitions made from them.  One from_map layer
    # with a callable annotation would place them too, but dask fuses it
    # with the operations after it (frame.x.sum()) and the fusion fails on
    # the callable (TypeError in dask 2022.12's _fuse_annotations).
    import dask

    parts = []
    for path, first, home in zip(files, firsts, homes):
        with dask.annotate(**_place(home)):
            parts.append(dask.delayed(_read_file, pure=False)(path, first, names, schema, where, threads))
    return dd.from_delayed(parts, meta=_meta(schema, names), divisions=divisions, prefix="colstore-read",
                           verify_meta=False)


def _aggregate_file(path, by, where, threads, schema):
    con, agg = _worker_table(path, threads, by)
    cur = con.execute("SELECT * FROM temp.%s%s" % (agg, " WHERE " + where if where else ""))
    names = [d[0] for d in cur.description]
    return _partial_frame(names, cur.fetchall(), by, schema)


def _partial_dtype(name, by, schema):
    """The pandas dtype of a colstore_agg output column, from the source
    column it describes: integers (and BOOL) stay exact in Int64."""
    if name in by:
        kind = schema[name]
    elif name == "count" or name.startswith("count_"):
        return "int64"
    else:
        kind = schema[name.split("_", 1)[1]]
        if name.startswith("avg_"):
            return "float64"
    if kind in arrays.VARLEN:
        return object
    return "float64" if kind.startswith("FLOAT") else "Int64"


def _partial_column(values, dtype):
    """A column of partial results (a tuple of Python values, None for NULL)
    as a pandas array, without pandas' per-element inference."""
    if dtype == "Int64":
        if None in values:
            mask = np.fromiter((v is None for v in values), dtype=bool, count=len(values))
            data = np.array([0 if v is None else v for v in values], dtype=np.int64)
        else:
            mask = np.zeros(len(values), dtype=bool)
            data = np.array(values, dtype=np.int64)
        return pd.arrays.IntegerArray(data, mask)
    if dtype == "float64":
        return np.array(values, dtype=np.float64)  # None becomes NaN: SQLite has no NaN
    return np.array(values, dtype=dtype)


def _partial_frame(names, rows, by, schema):
    """The partial rows of one file (colstore_agg's output) as a DataFrame."""
    if not rows:
        return pd.DataFrame({n: pd.Series([], dtype=_partial_dtype(n, by, schema)) for n in names})
    return pd.DataFrame({n: _partial_column(v, _partial_dtype(n, by, schema)) for n, v in zip(names, zip(*rows))})


def _combine(frames, by, schema):
    """One result row per group from the files' partial results (one
    DataFrame per file): one pandas groupby over all of them."""
    names = list(frames[0].columns)
    frame = pd.concat(frames, ignore_index=True)
    if len(frame) == 0:
        if by:
            return frame
        frame = _partial_frame(names, [tuple(0 if n == "count" or n.startswith("count_") else None for n in names)],
                               by, schema)
    values = [n for n in names if n not in by and not n.startswith("avg_")]
    sums = [n for n in values if n == "count" or n.startswith(("count_", "sum_"))]
    # Integer sums add in int64, which wraps: the result is exact whenever
    # the true sum fits, which a float sum beside it tells.
    exact = [n for n in sums if n.startswith("sum_") and frame[n].dtype == "Int64"]
    for name in exact:
        frame["\0" + name] = frame[name].astype("float64")
    keys = list(by) if by else [np.zeros(len(frame), dtype=np.int8)]
    groups = frame.groupby(keys, dropna=False, sort=False)
    extremes = [n for n in values if n.startswith(("min_", "max_"))]
    numeric = [n for n in extremes if frame[n].dtype != object]
    pieces = [groups[sums + ["\0" + n for n in exact]].sum(min_count=1),
              groups[[n for n in numeric if n.startswith("min_")]].min(),
              groups[[n for n in numeric if n.startswith("max_")]].max()]
    for name in extremes:
        if name not in numeric:  # TEXT, BLOB: Python's order of str and bytes is BINARY's; NULLs skipped
            pick = min if name.startswith("min_") else max
            pieces.append(groups[name].agg(lambda s: pick((v for v in s if v is not None), default=None)))
    out = pd.concat(pieces, axis=1)
    for name in exact:
        near = out["\0" + name].abs() >= 2.0 ** 62
        for key in out.index[near.fillna(False).to_numpy()]:
            _exact_sum(name, groups.get_group(key)[name], out, key)
    for name in names:
        if name.startswith("avg_"):
            col = name[4:]
            total = out["sum_" + col].astype("float64")
            n = out["count_" + col]
            out[name] = (total / n.where(n > 0)).astype("float64")
    out = out.reset_index(drop=not by)
    return out[names].reset_index(drop=True)


def _exact_sum(name, partial_sums, out, key):
    """The sum of one group again in Python integers, where the float sum
    says it is near int64's limit; one that does not fit fails, as SQLite's
    sum() does."""
    exact = sum(int(v) for v in partial_sums.dropna())
    if not INT64_MIN <= exact <= INT64_MAX:
        raise OverflowError("colstore: integer overflow in %s (as SQLite's sum)" % name)
    out.loc[key, name] = exact


def aggregate(source, by, where=None, threads=1, fan_in=FAN_IN):
    """colstore_agg over source (a store, a dataset directory or a pattern),
    computed per file on the Dask workers and combined: a pandas DataFrame
    with colstore_agg's columns (by's keys, count, then count_X, sum_X,
    avg_X, min_X, max_X per column), a row per group.  by: a column name or
    a list of them (empty or None: one row over everything); where: an SQL
    condition on the source rows, as colstore_agg takes it; fan_in: the
    partial results one combining task takes (at least 2)."""
    import dask

    if by is None:
        by = []
    elif isinstance(by, str):
        by = [by]
    info = dataset_info(source)
    schema = {c["name"]: c["type"] for c in info["columns"]}
    arrays.check_names(source, by, schema)
    if fan_in < 2:
        raise ValueError("colstore: fan_in must be at least 2 (it is %r)" % (fan_in,))
    client = _current_client()
    files = info["files"]
    homes = _homes(client, len(files)) if client is not None else [None] * len(files)

    def task(fn, *args, home=None):
        if client is None:  # dask's local schedulers: a graph of delayed calls
            return dask.delayed(fn, pure=False)(*args)
        return client.submit(fn, *args, pure=False, **_place(home))

    parts = [task(_aggregate_file, f, list(by), where, threads, schema, home=home) for f, home in zip(files, homes)]
    while len(parts) > fan_in:
        parts = [task(_combine, parts[i:i + fan_in], list(by), schema) for i in range(0, len(parts), fan_in)]
    last = task(_combine, parts, list(by), schema)
    return last.result() if client is not None else last.compute()


def _current_client():
    """The distributed Client that dask's compute() would run on now (the
    default client, or one set with dask.config.set(scheduler=client)), or
    None where it would use a local scheduler."""
    import dask.base

    get = dask.base.get_scheduler()
    owner = getattr(get, "__self__", None)
    # A Client exists only where distributed has been imported, so it is
    # looked up in sys.modules, never imported here: colstore.dask on a
    # machine (or in a process) without distributed stays without it.
    distributed = sys.modules.get("distributed")
    client_type = getattr(distributed, "Client", None)
    return owner if client_type is not None and isinstance(owner, client_type) else None


def _homes(client, n_files):
    """The worker each of n_files files' tasks prefers: the files in dataset
    order dealt round-robin over the workers' threads (workers sorted by
    address), so the same cluster sends a file to the same worker at every
    call and that worker's tables over it stay warm.  A file appended to the
    dataset moves no other file.  None for every file where the scheduler
    knows no workers (the tasks then go wherever Dask puts them)."""
    workers = client.scheduler_info().get("workers", {})
    slots = [w for w, d in sorted(workers.items()) for _ in range(max(1, int(d.get("nthreads") or 1)))]
    return [slots[i % len(slots)] for i in range(n_files)] if slots else [None] * n_files


def _place(home):
    """The placement of a file's task on a distributed client: its home
    worker (_homes) as a preference, or anywhere where it has none."""
    return {"workers": [home], "allow_other_workers": True} if home else {}
