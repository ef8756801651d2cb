"""Whole columns between numpy and colstore, without SQLite's row loop.

colstore_append and colstore_array (docs/sql.md, "Arrays") move a column as
one BLOB in Arrow's layout: n little-endian values at the column type's
width, an optional `name:valid` byte per row (0 = NULL), and for TEXT and
BLOB the bytes plus `name:offsets`, n+1 little-endian int64.  numpy reads and
writes that layout directly (frombuffer, tobytes), so a column crosses in
a few memory copies whatever its length.

This file only translates: dtypes to the column types colstore_info
reports, masked arrays and None to validity bytes, str/bytes objects to
offsets.  Conversions are only those that keep every value (numpy's "safe"
casts, and integers into a narrower integer type when every value fits);
anything else is an error that says how to cast, because a silently
truncated value is the worst way to lose data.

All columns of one read come from one SELECT, so they come from one
snapshot of the table even while another connection writes.

An append goes in pieces of about CHUNK_BYTES (whole 65,536-row records),
one colstore_append call each, inside one SAVEPOINT, so it is still all or
nothing and part of the caller's transaction.  Why: Python's sqlite3 copies
every bound BLOB into memory SQLite allocates, and an 80 MB column made
that a fresh mapping each time, whose first touch costs more than the copy
(on a microVM, 1.1 s for 10M float64 in one call against 0.2-0.3 s in
4 MiB pieces, which glibc hands back and reuses; docs/performance.md).
"""
import json

import numpy as np

# colstore type -> the numpy dtype of its little-endian values.
DTYPES = {
    "INT8": np.dtype("<i1"), "INT16": np.dtype("<i2"), "INT32": np.dtype("<i4"),
    "INT64": np.dtype("<i8"), "UINT8": np.dtype("<u1"), "UINT16": np.dtype("<u2"),
    "UINT32": np.dtype("<u4"), "FLOAT32": np.dtype("<f4"), "FLOAT64": np.dtype("<f8"),
    "BOOL": np.dtype("?"),
}
VARLEN = ("TEXT", "BLOB")
CHUNK_BYTES = 4 << 20  # bytes of arrays per colstore_append call
RECORD_ROWS = 65536


def rows(positions):
    """The `_rows` BLOB: positions as little-endian int64, in the order given."""
    a = np.asarray(positions)
    if a.ndim != 1:
        raise ValueError("colstore: rows() takes a one-dimensional sequence of positions")
    if a.size and a.dtype.kind not in "iu":
        raise TypeError("colstore: rows() takes integer positions, not %s" % a.dtype)
    return a.astype("<i8", copy=False).tobytes()


def mask(bools):
    """The `_mask` BLOB: one byte per row, 1 where the row is selected."""
    a = np.asarray(bools)
    if a.ndim != 1:
        raise ValueError("colstore: mask() takes a one-dimensional sequence of booleans")
    return (a != 0).astype(np.uint8).tobytes()


def columns_of(con, table):
    """[(name, type, nullable)] of table, from colstore_info."""
    info = json.loads(con.execute("SELECT colstore_info(?)", (table,)).fetchone()[0])
    return [(c["name"], c["type"], c["nullable"]) for c in info["columns"]]


def check_names(where, names, schema):
    """A KeyError naming the first of names that is not a column of schema
    (where: the table or source, for the message)."""
    for name in names:
        if name not in schema:
            raise KeyError("colstore: %s has no column %r; its columns are %s" % (where, name, ", ".join(schema)))


def _selection(rows_arg, mask_arg):
    if rows_arg is not None and mask_arg is not None:
        raise ValueError("colstore: give rows= or mask=, not both")
    if rows_arg is not None:
        return ["_rows", rows_arg if isinstance(rows_arg, (bytes, bytearray, memoryview)) else rows(rows_arg)]
    if mask_arg is not None:
        return ["_mask", mask_arg if isinstance(mask_arg, (bytes, bytearray, memoryview)) else mask(mask_arg)]
    return []


def _decode_varlen(kind, data, offsets):
    out = np.empty(len(offsets) - 1, dtype=object)
    data = bytes(data)
    for i in range(len(out)):
        piece = data[offsets[i]:offsets[i + 1]]
        out[i] = piece.decode("utf-8") if kind == "TEXT" else piece
    return out


def read(con, table, columns=None, rows=None, mask=None):
    """A dict {name: numpy array} of table's columns (all, or those named, in
    that order) for every live row in rowid order, or for the rows that rows=
    (positions) or mask= (booleans) select.  TEXT and BLOB columns are object
    arrays of str and bytes; a column with NULLs is a numpy.ma masked array."""
    schema = {name: (kind, nullable) for name, kind, nullable in columns_of(con, table)}
    names = list(schema) if columns is None else list(columns)
    check_names("table " + table, names, schema)
    sel = _selection(rows, mask)
    calls, params, parts = [], [], []
    for name in names:
        kind, nullable = schema[name]
        for part in [name] + ([name + ":offsets"] if kind in VARLEN else []) + \
                ([name + ":valid"] if nullable else []):
            calls.append("colstore_array(?, ?%s)" % (", ?, ?" if sel else ""))
            params += [table, part] + sel
            parts.append(part)
    if not calls:
        return {}
    got = dict(zip(parts, con.execute("SELECT " + ", ".join(calls), params).fetchone()))
    out = {}
    for name in names:
        kind, nullable = schema[name]
        if kind in VARLEN:
            values = _decode_varlen(kind, got[name], np.frombuffer(got[name + ":offsets"], dtype="<i8"))
        else:
            values = np.frombuffer(got[name], dtype=DTYPES[kind])
        if nullable:
            nulls = np.frombuffer(got[name + ":valid"], dtype=np.uint8) == 0
            if nulls.any():
                if kind in VARLEN:
                    values[nulls] = None
                values = np.ma.masked_array(values, mask=nulls)
        out[name] = values
    return out


def _numeric_blob(name, kind, values):
    """The BLOB argument for a numeric column: the array itself where its
    dtype is the column's (Python's sqlite3 binds any buffer as a BLOB, so a
    contiguous array goes without a copy), else a lossless conversion."""
    want = DTYPES[kind]
    if values.dtype == want:
        return np.ascontiguousarray(values)
    if kind == "BOOL":
        if values.dtype.kind in "iub" and values.size and not np.isin(values, (0, 1)).all():
            raise ValueError("colstore: column %s is BOOL; its values must be 0 or 1" % name)
        if values.dtype.kind in "iub":
            return values.astype(want)
    elif np.can_cast(values.dtype, want, "safe"):
        return values.astype(want)
    elif values.dtype.kind in "iub" and want.kind in "iu":
        info = np.iinfo(want)
        if values.size and (values.min() < info.min or values.max() > info.max):
            raise ValueError("colstore: column %s is %s; values from %d to %d do not fit it"
                             % (name, kind, values.min(), values.max()))
        return values.astype(want)
    raise TypeError("colstore: column %s is %s; an array of %s does not convert to it without loss; "
                    "cast it first (array.astype(numpy.%s))" % (name, kind, values.dtype, want.name))


def _varlen_blobs(name, kind, values, nulls):
    encoded = []
    for i, v in enumerate(values.tolist()):
        if nulls is not None and nulls[i]:
            encoded.append(b"")
        elif kind == "TEXT" and isinstance(v, str):
            encoded.append(v.encode("utf-8"))
        elif kind == "BLOB" and isinstance(v, (bytes, bytearray, memoryview)):
            encoded.append(bytes(v))
        else:
            raise TypeError("colstore: column %s is %s; row %d holds %s"
                            % (name, kind, i, type(v).__name__))
    offsets = np.zeros(len(encoded) + 1, dtype="<i8")
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    return b"".join(encoded), offsets


def append(con, table, columns):
    """Appends the arrays of columns ({name: array}, every array of the same
    length) to table as new rows; columns not named are NULL.  NULLs come from
    a masked array's mask, or None in an object array.  Returns the number of
    rows appended.  Like INSERT it is part of the connection's transaction,
    and like one INSERT it appends every row or none."""
    schema = {name: kind for name, kind, _ in columns_of(con, table)}
    check_names("table " + table, columns, schema)
    parts = []  # (name, values, offsets or None, validity or None), whole columns
    for name, arr in columns.items():
        kind = schema[name]
        nulls = None
        # A NULL's slot is stored as 0 whatever it holds, but a numeric one
        # is set to 0 here too, so the conversion checks see no junk.
        if isinstance(arr, np.ma.MaskedArray):
            nulls = np.ma.getmaskarray(arr)
            values = arr.data if kind in VARLEN else arr.filled(0)
        else:
            values = np.asarray(arr)  # a list with None in it becomes an object array
            if values.dtype == object:
                nulls = np.array([v is None for v in values.tolist()], dtype=bool)
                if kind not in VARLEN:
                    values = np.asarray([0 if v is None else v for v in values.tolist()])
        if values.ndim != 1:
            raise ValueError("colstore: column %s: give a one-dimensional array" % name)
        valid = (~nulls).astype(np.uint8) if nulls is not None and nulls.any() else None
        if kind in VARLEN:
            data, offsets = _varlen_blobs(name, kind, values.astype(object, copy=False), nulls)
            parts.append((name, data, offsets, valid))
        else:
            parts.append((name, _numeric_blob(name, kind, values), None, valid))
    if not parts:
        return 0
    n = max(len(p[2]) - 1 if p[2] is not None else len(p[1]) for p in parts)
    if any((len(p[2]) - 1 if p[2] is not None else len(p[1])) != n for p in parts):
        return _append_call(con, table, parts, 0, None)  # colstore names the lengths that differ
    row_bytes = sum(_row_bytes(p, n) for p in parts)
    step = max(RECORD_ROWS, CHUNK_BYTES // max(row_bytes, 1) // RECORD_ROWS * RECORD_ROWS)
    if n <= step:
        return _append_call(con, table, parts, 0, None)
    con.execute("SAVEPOINT colstore_append")
    try:
        done = 0
        for start in range(0, n, step):
            done += _append_call(con, table, parts, start, min(start + step, n))
    except BaseException:
        con.execute("ROLLBACK TO colstore_append")
        con.execute("RELEASE colstore_append")
        raise
    con.execute("RELEASE colstore_append")
    return done


def _row_bytes(part, n):
    _, values, offsets, valid = part
    size = values.nbytes if offsets is None else len(values) + offsets.nbytes
    return (size + (0 if valid is None else valid.nbytes)) // max(n, 1)


def _append_call(con, table, parts, start, stop):
    """One colstore_append of rows [start, stop) of parts (all when stop is
    None); the arrays go as memoryviews of slices, without a copy."""
    args = [table]
    for name, values, offsets, valid in parts:
        if offsets is None:
            args += [name, memoryview(values if stop is None else values[start:stop])]
        elif stop is None:
            args += [name, values, name + ":offsets", memoryview(offsets)]
        else:
            lo, hi = int(offsets[start]), int(offsets[stop])
            args += [name, memoryview(values)[lo:hi], name + ":offsets", memoryview(offsets[start:stop + 1] - lo)]
        if valid is not None:
            args += [name + ":valid", memoryview(valid if stop is None else valid[start:stop])]
    sql = "SELECT colstore_append(%s)" % ", ".join("?" * len(args))
    return con.execute(sql, args).fetchone()[0]
