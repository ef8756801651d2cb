#!/usr/bin/python3
"""fuzz_sql - a randomized differential tester: colstore against native SQLite.

    /usr/bin/python3 tests/sql/fuzz_sql.py --seed N --minutes M [--queries K] [--module PATH]

WHAT IT DOES.  Each *round* draws two tables, T (usually up to 20,000 rows,
sometimes more than one or two records hold, rarely more than the 262,144
elements from which kernels take threads) and U (up to a few hundred), with
random schemas over every colstore type, builds each twice -- as a colstore
table and as a native mirror holding exactly the same rows at the same
rowids -- and then runs random queries on both, comparing the answers
exactly: values and storage classes (repr of a row tells 1 from 1.0, 0.0
from -0.0 and '1' from 1).  A query over T and U also runs with one of them
colstore and the other native, so joins put colstore on either side of a
native table as well as of another colstore table.  Unordered queries
compare as sorted multisets; a query compares in order when its order is
defined (a total ORDER BY, or a `_rows` selection read without one).

WHY EACH PART IS BUILT THE WAY IT IS.

* Tables are drawn for the planner and the kernels, not for realism: columns
  come in styles (random, a few distinct values, runs, constant, sorted,
  nearly sorted) because the sorted flag turns range predicates into binary
  searches and the zone maps decide whole records; NULL densities go from
  none to all, sometimes in runs, so whole chunks are NULL.  Values include
  each type's extremes, -0.0, infinities, subnormals, empty TEXT and BLOBs.
  The rows reach colstore in several commits (one INSERT transaction makes at
  least one record), through colstore_create, or as a dataset of several
  files (some empty), so scans cross record and file boundaries.  The
  process-wide settings batch_bytes and mask_gate are drawn per round, so a
  few thousand rows already take several batches and both gather routes, and
  scatter_bytes, so ordered delivery goes by scatter or by the gather;
  COLSTORE_LOAD_AWARE=0 lets kernels take threads on a busy machine.

* The mirror is independent of colstore.  What is INSERTed is often not what
  is stored ('12' into INT8, 3.0 into INT64, 0.1 into FLOAT32, 1e20 into
  TEXT).  docs/sql.md says a value is converted as a native column of the
  same affinity converts it, FLOAT32 then rounding to the nearest float; so
  the expected value is the inserted one read back through a native column
  of that affinity, rounded to float32 where the type says so.  Only values
  the docs say are stored are drawn (no range errors).  After every build the
  whole colstore table is compared with the mirror, and colstore_info's row,
  record, NULL, min/max and sorted figures with what the rows imply.

* Queries are trees, not strings, so that a failure can be shrunk: a WHERE
  is AND/OR/NOT over leaves; a leaf is SQL text with slots for nested
  SELECTs; a SELECT holds its FROM items, its WHERE, its grouping, its order
  and limit.  The shrinker removes terms, items, ORDER BY/LIMIT, DISTINCT,
  compound arms and selections, and removes rows (in halves, then smaller
  pieces), merges commits and drops unused columns, drops deletions (a
  whole plan, a transaction, a statement; halves of a statement's rows, a
  pending transaction made a committed one), keeping each step only while
  the failure persists, then prints a self-contained python snippet that
  builds, deletes (checking changes() as it goes) and queries.
  A failure may depend on the connection's past (one was right only in the
  first statement prepared for a query), so each try runs the query on
  tables no statement has read yet and after one has, each time also as a
  second prepared statement; the snippet does the same.

* Some rounds delete rows after the build, so that every read path meets
  gaps (a deleted row keeps its position: rowids never move).  Deletions are
  held like selections, by row identity: a scattering of rows, a run (an
  entire record, a run across a record edge: every identity between two),
  or a predicate drawn like a WHERE leaf over alias d (DELETE ... AS d WHERE
  leaf), so that the shrinker's row removal keeps them meaningful.  Each
  DELETE runs on the colstore table and on its mirror, and both must report
  the same changes(); the colstore side names its rows in several spellings
  (rowid IN a list or json_each, _rows, _mask, BETWEEN), the mirror always
  by rowid.  Three modes: committed (one or more transactions, each a few
  DELETEs; a third of the time the store is then compacted, rowids kept,
  so the queries read a rewritten file), pending (BEGIN, the DELETEs, then the round's queries run inside
  the open transaction, which reads its own deletions through a view, until
  a COMMIT or ROLLBACK drawn for some query number; the last queries are run
  again after it), and for a dataset, which is read-only: DELETE through a
  table over one member file before the dataset table is created.  Pending
  deletions are never drawn in a round that appends (its appends would
  run inside the open transaction, which the model of a round's appends
  does not describe; test_transactions covers reading them), and
  predicates never on a table that appends: a rebuilt case builds the
  appended rows before its deletions, and a predicate would then delete
  other rows than in the round.  After a deletion the mirror says which
  rows live; colstore_info's `rows` must count them and `positions` every
  position; its NULL counts, min/max and sorted describe every position,
  deleted or not (core/colstore.h), so they are still checked against all
  the rows drawn.

* `_rows` and `_mask` have no native spelling.  They are held as row
  identities (which drawn row, counted from the end or not; which rows have
  a nonzero byte), so that removing rows while shrinking keeps them
  meaningful, and rendered per side: on colstore `t._rows = :blob` (as the
  first or the last AND term, or the table-valued form `ct(:blob)`), on a
  native table a subquery over a temp table of (ord, pos) joined to the
  mirror, ordered by ord, which keeps the BLOB's order and duplicates.  A
  selection is only ever a top-level AND term: under OR or NOT it has a
  different contract (tests/sql/test_plan_shapes.py).  Deleted rows need
  nothing of their own here: a selection is drawn over every position (a
  deleted one too, which must select nothing), the join to the mirror finds
  no row at a deleted rowid, and a _mask has a byte per position, deleted
  or not (the table's orig covers every position: colstore_info's
  `positions`).

* Selections meet what SQLite does around them: a query shape (rows_in)
  puts a `_rows` selection beside one to three IN lists (literal, json_each,
  a subquery over T or U, a column IN the selected rows' values), at times
  after more than 32 other terms, compared in BLOB order; and some rounds
  are selection rounds (P_DML_ROUND, DmlRound): UPDATEs and DELETEs through
  `_rows`/`_mask` beside ranges, IN lists and WHERE leaves, in transactions
  and savepoints, compared with the mirror written through rowid IN.

* Only deterministic queries are drawn, else the comparison would lie: a
  LIMIT comes with an ORDER BY made total by rowid tie-breaks (or with a
  `_rows` order); no bare columns beside aggregates; float sums and averages
  are left out, since their rounding depends on the order rows arrive in,
  and a join may arrive in another order on each side: min, max, count and
  the sum/total/avg of small integer types (exact) are used instead, and
  sum() over INT64 only after `% 1000000`, since its overflow error depends
  on the order too.

* Crashes and hangs must be reported, not just suffered: by default the tool
  runs the fuzzing in a child process and watches it.  Everything a query
  needs is derived from (seed, round, query number), so when the child dies
  the parent rebuilds the case from those three numbers and shrinks it with
  each try in a fresh process.  --no-fork runs in this process (the ctest
  entry does: a crash fails the test anyway).

* Each query has a deadline (a progress handler interrupts it), so one
  pathological plan costs seconds, not the run; a query native answers
  quickly but colstore does not finish is reported as SLOW (a performance
  cliff, not a failure).  Answers past 200,000 rows are skipped as too big.

* It must not pass vacuously: it counts the comparisons with non-empty
  answers and fails a run where too few queries return rows; --self-test
  changes one value of the mirror and requires the run to notice, and
  --self-test-delete deletes one row from the mirror only, in a first round
  made to delete rows from T (U when T is empty).

Known shapes that are being fixed can be skipped by name (--skip NAME, or
--skip-known for all of KNOWN_SHAPES) so that they do not hide other bugs.
"""
import argparse
import bisect
import copy
import json
import math
import os
import pickle
import random
import re
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time

sys.dont_write_bytecode = True  # keep the source tree clean
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cstest  # noqa: E402

# Shapes that hit a known bug; --skip NAME leaves one out, --skip-known all
# of them, until their fixes land (then remove the name here).
#   rows-distinct  DISTINCT or count(DISTINCT rowid) over a _rows selection
#                  (SQLite takes rowid as unique; _rows repeats rows)
KNOWN_SHAPES = ["rows-distinct"]
ALL_SHAPES = KNOWN_SHAPES

# ------------------------------------------------------------------- types

INT_RANGE = {
    "INT8": (-2**7, 2**7 - 1), "INT16": (-2**15, 2**15 - 1), "INT32": (-2**31, 2**31 - 1),
    "INT64": (-2**63, 2**63 - 1), "UINT8": (0, 2**8 - 1), "UINT16": (0, 2**16 - 1),
    "UINT32": (0, 2**32 - 1), "BOOL": (0, 1),
}
TYPES = list(INT_RANGE) + ["FLOAT32", "FLOAT64", "TEXT", "BLOB"]
# The affinity a native column of each type has (docs/sql.md, "SQLite sees").
AFFINITY = dict({t: "INTEGER" for t in INT_RANGE}, FLOAT32="REAL", FLOAT64="REAL", TEXT="TEXT", BLOB="BLOB")
# Spellings a column definition may use for a type.
ALIASES = {"INT64": ["INTEGER", "INT", "BIGINT"], "FLOAT64": ["REAL", "DOUBLE", "FLOAT", "DOUBLE PRECISION"],
           "BOOL": ["BOOLEAN"], "TEXT": ["VARCHAR(10)", "CHAR(3)", "STRING"]}
F32_MAX = 3.4028234663852886e38
# Kernels stay on one thread below this many elements (docs/sql.md, threads).
KERNEL_SERIAL_MAX = 262144
# core/kernels/cs_pred.c: IN sets above this size are sorted and binary-searched;
# more predicates than PRED_STACK are compiled into an allocation.
PRED_IN_LINEAR = 16
PRED_STACK = 16
# ext/colstore_ext.h: a plan has CSX_MAX_SLOTS argv slots, 4 kept for LIMIT/OFFSET.
PLAN_SLOTS = 64 - 4
INF = float("inf")

F64_EDGES = [1.7976931348623157e308, -1.7976931348623157e308, 1e308, -1e300, 5e-324, -5e-324,
             2.2250738585072014e-308, 2.225073858507201e-308, INF, -INF, 0.0, -0.0, 0.1, -2.5, 1 / 3,
             9007199254740993.0, 9.223372036854775807e18, -9.223372036854775808e18, 1e15, 3.0]
F32_EDGES = [F32_MAX, -F32_MAX, 2.0**-149, -(2.0**-149), 2.0**-126, 1.1754942106924411e-38, INF, -INF, 0.0, -0.0,
             16777216.0, 16777217.0, 0.1, 0.5, -0.25, 1e30, 3.0]
TEXTS = ["", "a", "A", "abc", "ab", "abd", "b", "B", "hello world", "é", "É", "E", "日本語", "😀", "naïve café",
         "a\x00b", "12", " 12", "12 ", "1e3", "-3", "0", "3.0", "%", "_x_", "NULL", "zz", "Zebra", "it's", "x" * 40]
TEXT_ALPHABET = "abcxyzABC é日😀_%'0123"
# Values of no particular column that comparisons probe with.
PROBES = [0, 1, -1, 2, 127, 128, -129, 255, 256, 32767, 32768, 65535, 65536, 2**31 - 1, 2**31, 2**32 - 1, 2**32,
          2**53, 2**53 + 1, 2**63 - 1, -2**63, 0.5, -0.5, 2.5, -0.0, 0.1, 1e300, -1e300, INF, -INF, 16777217.0,
          3.4028235677973366e38, 2.0**-149, 1e-46, 9.223372036854775807e18, -9.3e18, "", "a", "abc", "12", " 12",
          "12 ", "1e3", "0x10", "+5", "-0", "1.0", "abc%", b"", b"\x00", b"12", b"abc", None]


def connect():
    """A connection with colstore loaded.  TEXT that is not UTF-8 (a BLOB
    concatenated with '') reads as a str with surrogate escapes, so it
    compares as a value; python's default decoding fails on it with an error
    naming whichever row it met first, which depends on the row order."""
    con = cstest.connect()
    con.text_factory = lambda b: b.decode("utf-8", "surrogateescape")
    return con


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def sql_literal(v):
    """v as SQL text that reads back as the same value (braces doubled for str.format)."""
    if isinstance(v, float) and v == 0.0 and math.copysign(1, v) < 0:
        return "-0.0"
    return cstest.sql_literal(v).replace("{", "{{").replace("}", "}}")


def show(v):
    return "x'%s'" % bytes(v).hex() if isinstance(v, (bytes, bytearray)) else cstest.show(v)


# ------------------------------------------------------------------ tables

class Column:
    def __init__(self, name, ctype, decl, notnull, style):
        self.name = name          # as SQL names it (quoted if it needs to be)
        self.ctype = ctype        # the colstore type
        self.decl = decl          # what the column definition says (an alias maybe)
        self.notnull = notnull
        self.style = style        # how its values were drawn (for the report)


class Table:
    """One drawn table: its columns and rows, and how colstore gets them.

    raws are what is inserted, exps what the mirror holds (what colstore
    must store); orig names each row's drawn position, so that a shrunk
    table still knows which selection entries refer to which row; tags are
    (file, commit) per row: rows with the same tag go in one transaction.
    dels are the DELETE transactions run after the build, in order, each
    (explicit BEGIN?, [Deletion]); a pending plan has one, which the round
    ends with pending[0] before query pending[1].
    """

    def __init__(self, key, cols, raws, build, n_files, source):
        self.key = key            # 'T' or 'U'
        self.cols = cols
        self.raws = raws
        self.exps = None          # filled by expect()
        self.orig = list(range(len(raws)))
        self.tags = [(0, 0)] * len(raws)
        self.build = build        # 'insert', 'create' or 'dataset'
        self.file_kinds = ["insert"] * n_files  # per dataset file: 'insert' or 'create'
        self.source = source      # dataset: 'dir' or 'glob'
        self.fault = None         # self-test: (orig row, column index, wrong value) in the mirror
        self.born = [0] * n_files  # per file: the first row index committed after it appeared
        self.late = None          # (first late row, query number): rows appended during the round
        self.dels = []            # [(explicit BEGIN?, [Deletion])]
        self.del_mode = None      # 'committed', 'pending', or 'member' (through a dataset file's own table)
        self.pending = None       # ('commit' or 'rollback', query number before which the transaction ends)
        self.closed = False       # this case's query comes after the pending transaction ended
        self.compact = False      # committed deletions: the store is compacted after them (rowids kept)
        self.fault_del = None     # self-test: an orig row deleted from the mirror only

    @property
    def n(self):
        return len(self.raws)

    @property
    def cs_name(self):
        return "c" + self.key.lower() + "t"

    @property
    def nat_name(self):
        return "n" + self.key.lower() + "t"

    def copy(self):
        t = copy.copy(self)
        t.__dict__.pop("_values", None)
        return t

    def subset(self, keep):
        t = self.copy()
        t.raws = [self.raws[i] for i in keep]
        t.exps = [self.exps[i] for i in keep]
        t.orig = [self.orig[i] for i in keep]
        t.tags = [self.tags[i] for i in keep]
        return t

    def before(self, start):
        """The table as it was before rows start.. were appended (and the
        files born with them added)."""
        t = self.subset(range(start))
        n_files = sum(1 for b in self.born if b < start or b == 0)
        t.file_kinds, t.born, t.late = self.file_kinds[:n_files], self.born[:n_files], None
        return t

    def drop_column(self, c):
        t = self.copy()
        t.cols = self.cols[:c] + self.cols[c + 1:]
        t.raws = [r[:c] + r[c + 1:] for r in self.raws]
        t.exps = [r[:c] + r[c + 1:] for r in self.exps]
        if t.fault is not None:
            if t.fault[1] == c:
                return None
            if t.fault[1] > c:
                t.fault = (t.fault[0], t.fault[1] - 1, t.fault[2])
        return t

    def values(self, c):
        """The distinct non-NULL stored values of column c (cached)."""
        cache = self.__dict__.setdefault("_values", {})
        if c not in cache:
            seen = {}
            for r in self.exps:
                if r[c] is not None:
                    seen.setdefault(repr(r[c]), r[c])
            cache[c] = list(seen.values())
        return cache[c]

    def describe(self):
        cols = ", ".join("%s %s%s [%s]" % (c.name, c.ctype, " NOT NULL" if c.notnull else "", c.style)
                         for c in self.cols)
        how = self.build
        if self.build == "dataset":
            how += " of %d files (%s, %s)" % (len(self.file_kinds), ",".join(self.file_kinds), self.source)
        commits = len(set(self.tags))
        late = " (rows %d.. appended before query %d%s)" % (
            self.late[0], self.late[1], " by another connection" if self.late[2] else "") if self.late else ""
        dels = ""
        if self.dels:
            dels = "; %s deletions in %d transaction(s): %s" % (
                self.del_mode, len(self.dels), " | ".join(", ".join(d.describe() for d in steps)
                                                          for _, steps in self.dels))
            if self.pending:
                dels += " (%s before query %d%s)" % (self.pending[0].upper(), self.pending[1],
                                                     ", done" if self.closed else ", still open")
            if self.compact:
                dels += ", then colstore_compact"
        return "%s: %d rows%s, %s, %d commit(s); %s%s" % (self.cs_name, self.n, late, how, commits, cols, dels)


def draw_value(rng, ctype):
    """A random value of a type's domain, extremes included."""
    if ctype in INT_RANGE:
        lo, hi = INT_RANGE[ctype]
        r = rng.random()
        if r < 0.45:
            return rng.randint(max(lo, -20), min(hi, 20))
        if r < 0.8:
            return rng.randint(lo, hi)
        edges = [lo, hi, lo + 1, hi - 1, 0, 1] + ([-1] if lo < 0 else [])
        if ctype == "INT64":
            edges += [2**53, 2**53 + 1, -2**53 - 1, 2**31, -2**31 - 1, 2**32, 2**62]
        return rng.choice(edges)
    if ctype == "FLOAT64":
        r = rng.random()
        if r < 0.25:
            return float(rng.randint(-20, 20))
        if r < 0.45:
            return rng.randint(-1000, 1000) / 8.0
        if r < 0.65:
            return rng.uniform(-1e6, 1e6)
        if r < 0.85:
            return rng.uniform(-1, 1) * 10.0 ** rng.randint(-300, 300)
        return rng.choice(F64_EDGES)
    if ctype == "FLOAT32":
        r = rng.random()
        if r < 0.25:
            return float(rng.randint(-20, 20))
        if r < 0.45:
            return rng.randint(-64, 64) / 4.0
        if r < 0.65:
            return rng.uniform(-1e4, 1e4)          # not a float32: rounded when stored
        if r < 0.85:
            return f32(rng.uniform(-1, 1) * 10.0 ** rng.randint(-37, 37))
        return rng.choice(F32_EDGES)
    if ctype == "TEXT":
        if rng.random() < 0.6:
            return rng.choice(TEXTS)
        return "".join(rng.choice(TEXT_ALPHABET) for _ in range(rng.randint(0, 10)))
    if ctype == "BLOB":
        if rng.random() < 0.3:
            return rng.choice([b"", b"\x00", b"\xff" * 9, b"12", b"abc"])
        return bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 8)))
    raise KeyError(ctype)


def rawify(rng, ctype, v):
    """Another spelling of v that the documented conversions store as v
    (numeric text is read by SQLite's own parser, which is not always the
    nearest double: the mirror reads it the same way)."""
    if v is None or rng.random() < 0.85:
        return v
    if ctype in INT_RANGE:
        opts = [str(v), " %d " % v]
        if abs(v) < 2**53:
            opts += [float(v), "%d.0" % v]
        return rng.choice(opts)
    if ctype in ("FLOAT32", "FLOAT64"):
        if math.isinf(v):
            return v
        opts = [repr(v), " %r " % v]
        if v == int(v) and abs(v) < 2**63:
            opts.append(int(v))
        return rng.choice(opts)
    if ctype == "TEXT":
        return rng.choice([rng.randint(-10**6, 10**6), rng.randint(-2**63, 2**63 - 1), rng.uniform(-1e6, 1e6),
                           rng.uniform(-1, 1) * 10.0 ** rng.randint(-30, 30), 0.5, 1e20, v])
    return v


def draw_column_values(rng, ctype, n, notnull):
    """(style, values) for one column of n rows."""
    style = rng.choice(["random", "random", "few", "few", "runs", "const", "sorted", "sorted", "nearly-sorted"])
    pool = [draw_value(rng, ctype) for _ in range(rng.randint(1, 8))]
    if style == "random":
        vals = [draw_value(rng, ctype) for _ in range(n)]
    elif style == "few":
        vals = [rng.choice(pool) for _ in range(n)]
    elif style == "const":
        vals = [pool[0]] * n
    elif style == "runs":
        vals = []
        while len(vals) < n:
            vals += [rng.choice(pool)] * rng.randint(1, 300)
        vals = vals[:n]
    else:
        src = pool if rng.random() < 0.5 else None
        vals = [rng.choice(src) if src else draw_value(rng, ctype) for _ in range(n)]
        key = (lambda v: f32(v) if v == v else v) if ctype == "FLOAT32" else None
        vals.sort(key=key)
        if style == "nearly-sorted" and n > 2:
            i = rng.randrange(n - 1)
            vals[i], vals[i + 1] = vals[i + 1], vals[i]
            if rng.random() < 0.5:
                vals[rng.randrange(n)] = vals[-1]
    sortedish = style in ("sorted", "nearly-sorted")
    if not notnull and not (style == "sorted"):
        density = rng.choice([0, 0, 0.01, 0.1, 0.3, 0.7, 0.97, 1.0])
        if style == "nearly-sorted":
            density = 1.0 / max(n, 1)
        if density and rng.random() < 0.3 and not sortedish:
            i = 0
            while i < n:                 # NULLs in runs: whole chunks may be NULL
                k = rng.randint(1, 2000)
                if rng.random() < density:
                    vals[i:i + k] = [None] * len(vals[i:i + k])
                i += k
        elif density:
            vals = [None if rng.random() < density else v for v in vals]
    if not sortedish:
        vals = [rawify(rng, ctype, v) for v in vals]
    return style, vals


def draw_table(rng, key, big):
    """Table T (key 'T') or U; big allows more rows than one record holds."""
    if key == "T":
        r = rng.random()
        if big and r < 0.015:    # past KERNEL_SERIAL_MAX: threaded kernels
            n = rng.randint(KERNEL_SERIAL_MAX, KERNEL_SERIAL_MAX + 3 * cstest.RECORD_ROWS)
        elif big and r < 0.06:
            n = rng.randint(cstest.RECORD_ROWS, 2 * cstest.RECORD_ROWS + 5000)
        elif r < 0.04:
            n = 0
        elif r < 0.1:
            n = 1
        elif r < 0.25:
            n = rng.randint(2, 30)
        elif r < 0.55:
            n = rng.randint(30, 600)
        elif r < 0.9:
            n = rng.randint(600, 5000)
        else:
            n = rng.randint(5000, 20000)
    else:
        n = rng.choice([0, 1, rng.randint(2, 20), rng.randint(20, 300), rng.randint(20, 300)])
    n_cols = 1 if n > KERNEL_SERIAL_MAX else rng.randint(1, 3) if n > 20000 else rng.randint(1, 7)
    cols, colvals = [], []
    for i in range(n_cols):
        ctype = rng.choice(TYPES)
        decl = ctype
        if ctype in ALIASES and rng.random() < 0.3:
            decl = rng.choice(ALIASES[ctype])
        notnull = rng.random() < 0.25
        style, vals = draw_column_values(rng, ctype, n, notnull)
        name = "c%d" % i if rng.random() > 0.05 else '"c %d"' % i
        cols.append(Column(name, ctype, decl, notnull, style))
        colvals.append(vals)
    raws = list(zip(*colvals)) if n else []
    if not cols:
        raise AssertionError("no columns")
    build = rng.choice(["insert", "insert", "create", "dataset"])
    n_files = rng.randint(1, 4) if build == "dataset" else 1
    t = Table(key, cols, raws, build, n_files, rng.choice(["dir", "glob"]))
    if build == "dataset" and not any(c.notnull for c in cols):
        t.file_kinds = [rng.choice(["insert", "create"]) for _ in range(n_files)]
    # Rows to files (cut anywhere: a file may be empty), then to commits.
    fcuts = sorted(rng.randint(0, n) for _ in range(n_files - 1))
    bounds = [0] + fcuts + [n]
    tags = []
    for f in range(n_files):
        lo, hi = bounds[f], bounds[f + 1]
        k = hi - lo
        if t.build == "create" or t.file_kinds[f] == "create":
            cuts = []
        else:
            n_commits = rng.choice([1, 1, 2, 3, rng.randint(2, 12)])
            cuts = sorted(set(rng.randint(1, max(k - 1, 1)) for _ in range(n_commits - 1))) if k > 1 else []
            if k > 3 and rng.random() < 0.2:
                cuts = sorted(set(cuts + [1, k - 1]))   # one-row records at the edges
        seg = 0
        cset = set(cuts)
        for j in range(k):
            if j in cset:
                seg += 1
            tags.append((f, seg))
    t.tags = tags
    # Rows appended in the middle of the round (the last k): new commits to
    # the last file, or a new file of a dataset; reversed sometimes, so that
    # a sorted column may stop being sorted.
    if n >= 2 and rng.random() < 0.25:
        k = rng.randint(1, max(1, n // 4))
        start = n - k
        if build == "dataset" and rng.random() < 0.6:
            f = len(t.file_kinds)
            t.file_kinds.append("insert")
            t.born.append(start)
            seg = 0
        else:
            f = len(t.file_kinds) - 1
            seg = 1 + max([s for ff, s in tags[:start] if ff == f], default=-1)
        cut = start + rng.randint(0, k) if rng.random() < 0.3 else n   # in one or two commits
        t.tags = tags[:start] + [(f, seg if i < cut else seg + 1) for i in range(start, n)]
        if rng.random() < 0.4:
            t.raws[start:] = t.raws[start:][::-1]
        t.late = (start, None, rng.random() < 0.4)   # (first row, query number, by another connection)
    return t


class Roundtrip:
    """The expected stored values: each inserted value read back through a
    native column of the type's affinity, rounded to float32 for FLOAT32."""

    def __init__(self):
        self.con = sqlite3.connect(":memory:", isolation_level=None)
        self.con.execute("CREATE TABLE rt (i INTEGER, r REAL, t TEXT, b BLOB)")
        self.col = {"INTEGER": "i", "REAL": "r", "TEXT": "t", "BLOB": "b"}

    def column(self, ctype, raws):
        c = self.col[AFFINITY[ctype]]
        self.con.execute("DELETE FROM rt")
        self.con.execute("BEGIN")
        self.con.executemany("INSERT INTO rt (rowid, %s) VALUES (?, ?)" % c, enumerate(raws))
        self.con.execute("COMMIT")
        got = [r[0] for r in self.con.execute("SELECT %s FROM rt ORDER BY rowid" % c)]
        out = []
        for raw, v in zip(raws, got):
            if v is not None and ctype == "FLOAT32":
                v = f32(v)
            if v is not None:
                self.check(ctype, raw, v)
            out.append(v)
        return out

    @staticmethod
    def check(ctype, raw, v):
        """The generator only draws values the docs say are stored."""
        ok = True
        if ctype in INT_RANGE:
            lo, hi = INT_RANGE[ctype]
            ok = isinstance(v, int) and lo <= v <= hi
        elif ctype in ("FLOAT32", "FLOAT64"):
            ok = isinstance(v, float)
        elif ctype == "TEXT":
            ok = isinstance(v, str)
        elif ctype == "BLOB":
            ok = isinstance(v, bytes)
        if not ok:
            raise AssertionError("generator drew %r for %s, stored as %r" % (raw, ctype, v))

    def expect(self, table):
        cols = [self.column(c.ctype, [r[i] for r in table.raws]) for i, c in enumerate(table.cols)]
        table.exps = list(zip(*cols)) if table.n else []


# ------------------------------------------------------------------ builds
#
# A build is a list of actions, run here and printed as a reproduction:
#   ("sql", text, params)    con.execute; %DIR% is the case's directory
#   ("many", text, rows)     con.executemany
#   ("mkdir", path)          os.mkdir (path under %DIR%)
#   ("delete", key, colstore text, params, native text, params)
#                            the same DELETE on both; their changes() must agree

def defs(table):
    return ", ".join("%s %s%s" % (c.name, c.decl, " NOT NULL" if c.notnull else "") for c in table.cols)


def groups(table, f):
    """The commits of file f: lists of row indices in order."""
    out, last = [], None
    for i, tag in enumerate(table.tags):
        if tag[0] != f:
            continue
        if tag != last:
            out.append([])
            last = tag
        out[-1].append(i)
    return out


def store_path(table, f):
    if table.build != "dataset":
        return "%%DIR%%/%s.cst" % table.cs_name
    return "%%DIR%%/%s/part-%03d.cst" % (table.cs_name, f)


def file_actions(table, f, gs, new_file, attach=False):
    """Actions writing commits gs (row index lists) to store file f, which
    is created first when new_file says so; attach declares the table over
    an existing file first (on a connection that has not)."""
    acts = []
    ph = ", ".join("?" * len(table.cols))
    path = store_path(table, f)
    dataset = table.build == "dataset"
    vt = member_name(table, f if dataset else None)
    create = table.file_kinds[f] == "create" if dataset else table.build == "create"
    if new_file and create:
        # colstore_create writes the first commit; later ones go through a table.
        src = "src_%s" % vt
        first, gs = (gs[0], gs[1:]) if gs else ([], [])
        acts.append(("sql", "CREATE TABLE %s (%s)" % (
            src, ", ".join("%s %s" % (c.name, c.ctype) for c in table.cols)), ()))
        acts.append(("many", "INSERT INTO %s VALUES (%s)" % (src, ph), [table.raws[i] for i in first]))
        acts.append(("sql", "SELECT colstore_create('%s', 'SELECT * FROM %s ORDER BY rowid')" % (path, src), ()))
        if not dataset or gs:
            acts.append(("sql", "CREATE VIRTUAL TABLE %s USING colstore('%s')" % (vt, path), ()))
    elif new_file:
        acts.append(("sql", "CREATE VIRTUAL TABLE %s USING colstore('%s', %s)" % (vt, path, defs(table)), ()))
    elif (attach or (create and dataset)) and gs:
        acts.append(("sql", "CREATE VIRTUAL TABLE IF NOT EXISTS %s USING colstore('%s')" % (vt, path), ()))
    for g in gs:
        acts.append(("sql", "BEGIN", ()))
        acts.append(("many", "INSERT INTO %s VALUES (%s)" % (vt, ph), [table.raws[i] for i in g]))
        acts.append(("sql", "COMMIT", ()))
    return acts


def mirror_actions(table, start):
    ph = ", ".join("?" * len(table.cols))
    return [("many", "INSERT INTO %s (rowid, %s) VALUES (?, %s)" % (
        table.nat_name, ", ".join(c.name for c in table.cols), ph),
        [(i,) + table.exps[i] for i in range(start, table.n)])]


def build_actions(table):
    """The whole table at once: its native mirror and its store file(s);
    a dataset's member deletions run before the dataset table exists."""
    # The native mirror first (member deletions delete from it too): the
    # expected values at rowid = position.
    acts = [("sql", "CREATE TABLE %s (%s)" % (table.nat_name, ", ".join(
        "%s %s" % (c.name, AFFINITY[c.ctype]) for c in table.cols)), ())]
    acts += mirror_actions(table, 0)
    if table.fault is not None and table.fault[0] in table.orig:
        pos = table.orig.index(table.fault[0])
        acts.append(("sql", "UPDATE %s SET %s = ? WHERE rowid = ?  -- self-test: a wrong mirror value" % (
            table.nat_name, table.cols[table.fault[1]].name), (table.fault[2], pos)))
    if table.fault_del is not None and table.fault_del in table.orig:
        acts.append(("sql", "DELETE FROM %s WHERE rowid = ?  -- self-test: a row deleted from the mirror only" % (
            table.nat_name), (table.orig.index(table.fault_del),)))
    name = table.cs_name
    if table.build == "dataset":
        acts.append(("mkdir", "%%DIR%%/%s" % name))
    for f in range(len(table.file_kinds)):
        acts += file_actions(table, f, groups(table, f), True)
    if table.del_mode == "member":
        acts += member_actions(table)
    if table.build == "dataset":
        src = "%%DIR%%/%s/" % name if table.source == "dir" else "%%DIR%%/%s/part-*.cst" % name
        acts.append(("sql", "CREATE VIRTUAL TABLE %s USING colstore('%s')" % (name, src), ()))
    return acts


def append_actions(table, start, attach=False):
    """(store actions, mirror actions) committing rows start.. of table to a
    table built from rows ..start: new commits to existing files, or new
    files of a dataset.  attach: the store actions run on a connection that
    has not declared the tables."""
    acts = []
    for f in range(len(table.file_kinds)):
        gs = [g for g in groups(table, f) if g[0] >= start]
        if gs:
            acts += file_actions(table, f, gs, table.born[f] == start, attach)
    return acts, mirror_actions(table, start)


def config_actions(config):
    return [("sql", "SELECT colstore_config('%s', %s)" % (k, sql_literal(v)), ()) for k, v in config]


def case_actions(config, tables, keys=("T", "U")):
    """Everything a case runs before its query: settings, the tables keys
    with their mirrors, then their committed and pending deletions."""
    acts = config_actions(config)
    for k in keys:
        acts += build_actions(tables[k])
    return acts + delete_actions(tables, keys)


class DeleteMismatch(Exception):
    """A DELETE whose changes() or error on colstore is not the mirror's."""

    def __init__(self, act, got, want):
        super().__init__("DELETE changed %s on colstore, %s on native" % (got, want))
        self.act, self.got, self.want = act, got, want

    def outcome(self):
        _, _, cs_sql, cs_params, n_sql, n_params = self.act
        detail = "DELETE: colstore %s\n  native   %s" % (
            "changed %d rows" % self.got[0] if self.got[1] is None else "failed: " + self.got[1],
            "changed %d rows" % self.want[0] if self.want[1] is None else "failed: " + self.want[1])
        params = {}
        for side, ps in (("colstore", cs_params), ("native", n_params)):
            params.update(("%s %s" % (side, k), v) for k, v in (ps.items() if isinstance(ps, dict) else
                                                                 enumerate(ps, 1)))
        return Outcome("changes", detail, 0, "colstore", cs_sql, n_sql, params)


def run_delete(con, act):
    """The same DELETE on colstore, then on the mirror; raises DeleteMismatch
    unless both changed as many rows, or failed with the same error."""
    out = []
    for sql, params in (act[2:4], act[4:6]):
        try:
            con.execute(sql, params)
            out.append((con.execute("SELECT changes()").fetchone()[0], None))
        except sqlite3.Error as e:
            out.append((None, "%s: %s" % (getattr(e, "sqlite_errorname", type(e).__name__), e)))
    if out[0] != out[1]:
        raise DeleteMismatch(act, out[0], out[1])


def run_actions(con, acts, d):
    for a in acts:
        if a[0] == "mkdir":
            os.mkdir(a[1].replace("%DIR%", d))
        elif a[0] == "sql":
            con.execute(a[1].replace("%DIR%", d).split("  -- ")[0], a[2])
        elif a[0] == "delete":
            run_delete(con, a)
        else:
            con.executemany(a[1].replace("%DIR%", d), a[2])


def script_lines(acts):
    out = []
    for a in acts:
        if a[0] == "mkdir":
            out.append("os.mkdir(%r.replace('%%DIR%%', D))" % a[1])
        elif a[0] == "sql":
            text, _, comment = a[1].partition("  -- ")
            line = "x(%r%s)" % (text, ", %r" % (tuple(a[2]),) if a[2] else "")
            out.append(line + ("  # " + comment if comment else ""))
        elif a[0] == "delete":
            out.append("delete_both(%r, %r,\n            %r, %r)" % a[2:])
        else:
            out.append("con.executemany(%r, [" % a[1])
            out += ["    %r," % (tuple(r),) for r in a[2]]
            out.append("])")
    return out


# ------------------------------------------------------------------ deletions
#
# A plan of DELETEs per table (module docstring).  Rows are named by
# identity and positions are computed for the table as built at the time,
# so a table whose rows the shrinker removed, or a rebuilt case that also
# holds the rows appended later, renders the same deletions consistently
# on both sides.

# How often a round deletes from T and from U.
P_DELETE = {"T": 0.3, "U": 0.25}


class Deletion:
    """One DELETE statement on one table.

    kind 'rows': rows lists orig rows; 'run': rows is (lo, hi), every orig
    row between them, a run of positions on any subset of the table (a
    subset keeps the order); 'pred': where is a WHERE tree over alias d, its
    values in params.  form is how the colstore side names positions: 'in'
    (rowid IN a literal list), 'json' (rowid IN json_each), 'rows' (_rows,
    counted from the end when neg), 'mask' (_mask) or 'between' (a run).
    file: member mode, the dataset file whose own table deletes.
    """

    def __init__(self, kind, rows=None, where=None, params=None, form="in", neg=False, file=None):
        self.kind, self.rows, self.where, self.params = kind, rows, where, params or {}
        self.form, self.neg, self.file = form, neg, file

    def with_(self, **kw):
        d = copy.copy(self)
        d.__dict__.update(kw)
        return d

    def describe(self):
        where = " in file %d" % self.file if self.file is not None else ""
        if self.kind == "pred":
            return "WHERE %s%s" % (Render({}, {}).tree(self.where), where)
        if self.kind == "run":
            return "run of rows %d..%d (%s)%s" % (self.rows[0], self.rows[1], self.form, where)
        return "%d row(s) (%s%s)%s" % (len(self.rows), self.form, " from the end" if self.neg else "", where)


def member_name(t, f):
    """The table over dataset file f (None: the table itself)."""
    return t.cs_name if f is None else "%s_f%d" % (t.cs_name, f)


def file_span(t, f):
    """[lo, hi): the positions of t that file f holds (files hold runs, in order)."""
    return bisect.bisect_left(t.tags, (f,)), bisect.bisect_left(t.tags, (f + 1,))


def deletion_positions(t, dl):
    """The positions of t that a 'rows' or 'run' deletion names (orig is
    increasing: a subset keeps the order)."""
    if dl.kind == "run":
        return list(range(bisect.bisect_left(t.orig, dl.rows[0]), bisect.bisect_right(t.orig, dl.rows[1])))
    out = []
    for o in dl.rows:
        i = bisect.bisect_left(t.orig, o)
        if i < t.n and t.orig[i] == o:
            out.append(i)
    return out


def deletion_sql(t, dl, native):
    """(sql, params) of deletion dl on the mirror or on colstore (a member's
    table in member mode), for t as built when it runs."""
    span = file_span(t, dl.file) if dl.file is not None else (0, t.n)
    if dl.kind == "pred":
        text = Render({}, {}).tree(dl.where)
        if native and dl.file is not None:   # the mirror has no files: the member's positions
            text = "d.rowid >= %d AND d.rowid < %d AND (%s)" % (span[0], span[1], text)
        return "DELETE FROM %s AS d WHERE %s" % (t.nat_name if native else member_name(t, dl.file), text), \
            dict(dl.params)
    ps = deletion_positions(t, dl)
    if native:
        return "DELETE FROM %s WHERE rowid IN (SELECT value FROM json_each(?))" % t.nat_name, (json.dumps(ps),)
    name = member_name(t, dl.file)
    n = span[1] - span[0]
    ps = [p - span[0] for p in ps]
    if dl.form == "json":
        return "DELETE FROM %s WHERE rowid IN (SELECT value FROM json_each(?))" % name, (json.dumps(ps),)
    if dl.form == "rows":
        return "DELETE FROM %s WHERE _rows = ?" % name, (
            struct.pack("<%dq" % len(ps), *[p - n if dl.neg else p for p in ps]),)
    if dl.form == "mask":
        mask = bytearray(n)
        for p in ps:
            mask[p] = 1 + p % 255     # any nonzero byte selects
        return "DELETE FROM %s WHERE _mask = ?" % name, (bytes(mask),)
    if dl.form == "between" and ps:
        return "DELETE FROM %s WHERE rowid BETWEEN %d AND %d" % (name, ps[0], ps[-1]), ()
    return "DELETE FROM %s WHERE rowid IN (%s)" % (name, ", ".join(map(str, ps))), ()


def txn_actions(t, txn):
    """One DELETE transaction of t (BEGIN ... COMMIT, or a statement in
    autocommit)."""
    begin, steps = txn
    acts = [("delete", t.key) + deletion_sql(t, dl, False) + deletion_sql(t, dl, True) for dl in steps]
    return [("sql", "BEGIN", ())] + acts + [("sql", "COMMIT", ())] if begin else acts


def member_actions(t):
    """Member mode: the deletions through tables over single files of a
    dataset (which is read-only), so that the dataset opens files with
    deletions."""
    acts = [("sql", "CREATE VIRTUAL TABLE IF NOT EXISTS %s USING colstore('%s')" % (
        member_name(t, f), store_path(t, f)), ()) for f in sorted({dl.file for _, steps in t.dels for dl in steps})]
    for txn in t.dels:
        acts += txn_actions(t, txn)
    return acts


def pending_end(tables, keys=("T", "U")):
    """'COMMIT' or 'ROLLBACK', the statement that ends the pending
    deletions of the tables keys when they are still open, else None."""
    for k in keys:
        t = tables[k]
        if t.del_mode == "pending" and t.dels and not t.closed:
            return t.pending[0].upper()
    return None


def delete_actions(tables, keys):
    """The committed deletions of the tables keys, then the pending ones in
    one transaction (one connection has one), ended when the case's query
    comes after its end."""
    acts = []
    for k in keys:
        if tables[k].del_mode == "committed":
            for txn in tables[k].dels:
                acts += txn_actions(tables[k], txn)
            if tables[k].compact:
                acts.append(("sql", "SELECT colstore_compact('%s')" % store_path(tables[k], 0), ()))
    pend = [tables[k] for k in keys if tables[k].del_mode == "pending" and tables[k].dels]
    if pend:
        acts.append(("sql", "BEGIN  -- pending deletions: what follows runs inside this transaction", ()))
        for t in pend:
            acts += [a for _, steps in t.dels for a in txn_actions(t, (False, steps))]
        if pend[0].closed:
            acts.append(("sql", "%s  -- the pending deletions end" % pend[0].pending[0].upper(), ()))
    return acts


def record_spans(t, upto):
    """[lo, hi) of every record holding rows ..upto of t: a commit writes a
    record per RECORD_ROWS rows."""
    out = []
    for f in range(len(t.file_kinds)):
        for g in groups(t, f):
            g = [i for i in g if i < upto]
            for k in range(0, len(g), cstest.RECORD_ROWS):
                out.append((g[k], g[min(len(g), k + cstest.RECORD_ROWS) - 1] + 1))
    return out


def draw_deletion(rng, t, lo, hi, spans, pred, file=None):
    """One DELETE among positions [lo, hi) of t: a scattering of rows, a run
    (a record, across a record edge), or a predicate (when pred)."""
    r = rng.random()
    if pred and r < 0.25:
        # A member's rowid is its position in the file, not in the mirror:
        # no rowid terms there.
        gen = Gen(rng, {"T": t, "U": t}, [])
        sc = base_scope("d", t)
        sc.rowid = sc.rowid if file is None else None
        where = gen.where([sc], [], 2, 2) if rng.random() < 0.3 else gen.atom([sc], [], 2)
        return Deletion("pred", where=where, params=gen.params, file=file)
    m = hi - lo
    inside = [sp for sp in spans if lo <= sp[0] and sp[1] <= hi]
    if r < 0.6:
        style = rng.choice(["scatter", "scatter", "stride", "edges"])
        if style == "scatter":
            idx = rng.sample(range(lo, hi), min(m, rng.choice([1, 1, 2, 5, 20, 100, max(1, m // 10), max(1, m // 2)])))
        elif style == "stride":       # every k-th row: masks and vectors half full
            step = rng.choice([2, 3, 7, 64, 1000])
            idx = list(range(lo + rng.randrange(step), hi, step))
        else:                         # the first and last rows of records
            edges = sorted({p for a, b in inside for p in (a, b - 1)}) or [lo, hi - 1]
            idx = rng.sample(edges, rng.randint(1, len(edges)))
        form = rng.choice(["in", "json", "rows", "mask"])
        return Deletion("rows", rows=list(dict.fromkeys(t.orig[i] for i in idx)), form=form,
                        neg=form == "rows" and rng.random() < 0.3, file=file)
    style = rng.choice(["record", "record", "edge", "edge", "edge", "random", "random", "all"])
    starts = [a for a, _ in inside if a > lo]
    if style == "record" and inside:
        a, b = rng.choice(inside)
        b -= 1
    elif style == "edge" and starts:
        e = rng.choice(starts)
        a = max(lo, e - rng.choice([1, 2, 300, 5000]))
        b = min(hi - 1, e + rng.choice([0, 1, 300, 5000]))
    elif style == "all":
        a, b = lo, hi - 1
    else:
        a = rng.randrange(lo, hi)
        b = min(hi - 1, a + rng.choice([0, 1, 10, 1000, 70000]))
    return Deletion("run", rows=(t.orig[a], t.orig[b]), file=file,
                    form=rng.choice(["between", "between", "in", "json", "rows", "mask"]))


def draw_deletions(seed, round_no, tables, n_queries, force=None):
    """The deletion plans of a round's tables, from their own random stream
    (so that the tables and queries a seed draws are what they were before
    deletions existed); force: a table that must delete (the self-test)."""
    rng = random.Random("fuzz_sql deletes %d/%d" % (seed, round_no))
    appends = any(t.late for t in tables.values())
    end = (rng.choice(["commit", "rollback"]), rng.randint(1, n_queries - 1))
    for key in ("T", "U"):
        t = tables[key]
        upto = t.late[0] if t.late else t.n     # the rows there are when the deletions run
        if not upto or (rng.random() >= P_DELETE[key] and key != force):
            continue
        if t.build == "dataset":
            mode = "member"
        else:
            mode = "pending" if not appends and rng.random() < 0.4 else "committed"
        spans = record_spans(t, upto)
        files = [f for f in range(len(t.file_kinds)) if file_span(t, f)[0] < min(upto, file_span(t, f)[1])]
        dels = []
        for _ in range(1 if mode == "pending" else rng.choice([1, 1, 2, 3])):
            steps = []
            for _ in range(rng.choice([1, 1, 2, 3])):
                if mode == "member":
                    f = rng.choice(files)
                    lo, hi = file_span(t, f)
                    steps.append(draw_deletion(rng, t, lo, min(hi, upto), spans, not t.late, f))
                else:
                    steps.append(draw_deletion(rng, t, 0, upto, spans, not t.late))
            dels.append((len(steps) > 1 or rng.random() < 0.3, steps))
        t.dels, t.del_mode, t.pending = dels, mode, end if mode == "pending" else None
        t.compact = mode == "committed" and rng.random() < 0.35
        if key == force:
            # A row no rows/run deletion names (a predicate might: then the
            # DELETE's changes() differ, which is noticed as well).
            named = {p for _, steps in dels for dl in steps if dl.kind != "pred" for p in deletion_positions(t, dl)}
            free = [i for i in range(upto) if i not in named] or list(range(upto))
            t.fault_del = t.orig[rng.choice(free)]


# ------------------------------------------------------------------ queries
#
# A WHERE is a tree: ("and", [..]), ("or", [..]), ("not", e) or a Leaf.  A
# Leaf is SQL text with {0}, {1} ... slots for nested Selects.

class Leaf:
    def __init__(self, text, subs=()):
        self.text = text
        self.subs = list(subs)


class Selection:
    """A _rows and/or _mask selection on one FROM item, by row identity."""

    def __init__(self, rows, mask, form):
        self.rows = rows          # [(orig row, counted from the end?)] or None
        self.mask = mask          # {orig row: nonzero byte} or None
        self.form = form          # 'first', 'last' (AND terms) or 'tvf' (ct(:rows))


class Ref:
    """A FROM item: a base table ('T'/'U'), a nested Select, or a CTE name."""

    def __init__(self, kind, alias, key=None, sub=None, join="", on=None, sel=None):
        self.kind, self.alias, self.key, self.sub = kind, alias, key, sub
        self.join = join          # '' (first), ',', 'JOIN', 'CROSS JOIN', 'LEFT JOIN'
        self.on = on              # a WHERE tree or None
        self.sel = sel            # a Selection or None (base tables only)


class Select:
    def __init__(self):
        self.distinct = False
        self.items = []           # Leaves
        self.frm = []             # Refs
        self.where = None
        self.group = []           # SQL texts
        self.having = None
        self.agg = False          # aggregate query (no defined row order)
        self.order = []           # SQL texts, total when set
        self.limit = None         # SQL text
        self.offset = None
        self.compound = []        # [(op, Select)]: this Select is the first arm
        self.ctes = []            # [(name, Select)]


def walk_selects(s):
    """Every Select reachable from s (s first)."""
    yield s
    for _, c in s.ctes:
        yield from walk_selects(c)
    for _, c in s.compound:
        yield from walk_selects(c)
    for r in s.frm:
        if r.sub is not None:
            yield from walk_selects(r.sub)
        yield from walk_tree_selects(r.on)
    for it in s.items:
        for c in it.subs:
            yield from walk_selects(c)
    yield from walk_tree_selects(s.where)
    yield from walk_tree_selects(s.having)


def walk_tree_selects(e):
    if e is None:
        return
    if isinstance(e, Leaf):
        for c in e.subs:
            yield from walk_selects(c)
    elif e[0] == "not":
        yield from walk_tree_selects(e[1])
    else:
        for c in e[1]:
            yield from walk_tree_selects(c)


def query_ordered(q):
    """Is the answer's row order defined?"""
    if q.order:
        return True
    if q.compound or q.agg or q.distinct or q.group or len(q.frm) != 1:
        return False
    r = q.frm[0]
    return r.kind == "table" and r.sel is not None and r.sel.rows is not None


class Render:
    """Turns a query into SQL for one mapping of T and U to tables."""

    def __init__(self, tables, mapping):
        self.tables = tables      # {'T': Table, 'U': Table}
        self.mapping = mapping    # {'T': 'colstore' or 'native', ...}
        self.params = {}
        self.setup = []           # native selections: (sql, rows) to run first

    def query(self, q, base_params):
        self.params = dict(base_params)
        return self.select(q)

    def select(self, s):
        sql = ""
        if s.ctes:
            sql += "WITH " + ", ".join("%s AS (%s)" % (n, self.select(c)) for n, c in s.ctes) + " "
        sel_terms = []
        parts = ["SELECT", "DISTINCT" if s.distinct else None, ", ".join(self.leaf(i) for i in s.items)]
        if s.frm:
            parts.append("FROM " + self.frm(s.frm, sel_terms))
        where = self.tree(s.where) if s.where is not None else None
        first = [t for t, f in sel_terms if f == "first"]
        last = [t for t, f in sel_terms if f != "first"]
        terms = first + (["(%s)" % where] if where else []) + last
        if terms:
            parts.append("WHERE " + " AND ".join(terms))
        if s.group:
            parts.append("GROUP BY " + ", ".join(s.group))
        if s.having is not None:
            parts.append("HAVING " + self.tree(s.having))
        body = " ".join(p for p in parts if p)
        for op, c in s.compound:
            body += " %s %s" % (op, self.select(c))
        if s.order:
            body += " ORDER BY " + ", ".join(s.order)
        if s.limit is not None:
            body += " LIMIT " + s.limit
            if s.offset is not None:
                body += " OFFSET " + s.offset
        return sql + body

    def frm(self, refs, sel_terms):
        out = []
        for r in refs:
            text = self.ref(r, sel_terms)
            if not r.join:
                out.append(text)
            elif r.join == ",":
                out.append(", " + text)
            else:
                out.append(" %s %s%s" % (r.join, text, " ON " + self.tree(r.on) if r.on is not None else ""))
        return "".join(out)

    def ref(self, r, sel_terms):
        if r.kind == "cte":
            return "%s AS %s" % (r.key, r.alias)
        if r.kind == "sub":
            return "(%s) AS %s" % (self.select(r.sub), r.alias)
        t = self.tables[r.key]
        cs = self.mapping[r.key] == "colstore"
        name = t.cs_name if cs else t.nat_name
        if r.sel is None:
            return "%s AS %s" % (name, r.alias)
        pos = {o: i for i, o in enumerate(t.orig)}
        rows = None
        if r.sel.rows is not None:
            rows = [(pos[o] - t.n if neg else pos[o]) for o, neg in r.sel.rows if o in pos]
        mask = None
        if r.sel.mask is not None:
            mask = bytes(r.sel.mask.get(o, 0) for o in t.orig)
        if cs:
            src = name
            if rows is not None:
                p = "%s_rows" % r.alias
                self.params[p] = struct.pack("<%dq" % len(rows), *rows)
                if r.sel.form == "tvf":
                    src = "%s(:%s)" % (name, p)
                else:
                    sel_terms.append(("%s._rows = :%s" % (r.alias, p), r.sel.form))
            if mask is not None:
                p = "%s_mask" % r.alias
                self.params[p] = mask
                sel_terms.append(("%s._mask = :%s" % (r.alias, p), r.sel.form))
            return "%s AS %s" % (src, r.alias)
        # Native: the mirror joined to the positions, in BLOB order.
        cols = ", ".join("m.%s" % c.name for c in t.cols)
        if rows is not None:
            tab = "sel_%s" % r.alias
            self.setup.append(("CREATE TEMP TABLE IF NOT EXISTS %s (ord INTEGER PRIMARY KEY, pos INTEGER)" % tab, None))
            self.setup.append(("DELETE FROM %s" % tab, None))
            self.setup.append(("INSERT INTO %s VALUES (?, ?)" % tab, [(i, p % t.n) for i, p in enumerate(rows)]))
            src = "SELECT m.rowid AS rowid, %s FROM %s s CROSS JOIN %s m ON m.rowid = s.pos" % (cols, tab, name)
            if mask is not None:
                src += " WHERE s.pos IN (SELECT pos FROM msk_%s)" % r.alias
            src += " ORDER BY s.ord"
        else:
            src = "SELECT m.rowid AS rowid, %s FROM %s m WHERE m.rowid IN (SELECT pos FROM msk_%s)" % (
                cols, name, r.alias)
        if mask is not None:
            tab = "msk_%s" % r.alias
            self.setup.append(("CREATE TEMP TABLE IF NOT EXISTS %s (pos INTEGER PRIMARY KEY)" % tab, None))
            self.setup.append(("DELETE FROM %s" % tab, None))
            self.setup.append(("INSERT INTO %s VALUES (?)" % tab, [(i,) for i, b in enumerate(mask) if b]))
        return "(%s) AS %s" % (src, r.alias)

    def leaf(self, leaf):
        if not leaf.subs:
            return leaf.text.replace("{{", "{").replace("}}", "}")
        return leaf.text.format(*["(%s)" % self.select(s) for s in leaf.subs])

    def tree(self, e):
        if isinstance(e, Leaf):
            return self.leaf(e)
        if e[0] == "not":
            return "NOT (%s)" % self.tree(e[1])
        return (" %s " % e[0].upper()).join("(%s)" % self.tree(c) for c in e[1])


# The scope of a query: what each alias names.  A base table's columns are
# its Columns; a derived table's are the columns it projects.

class Scope:
    def __init__(self, alias, table, cols, rowid):
        self.alias = alias
        self.table = table        # the Table the values come from
        self.cols = cols          # [(sql name, ctype, source column index or None)]
        self.rowid = rowid        # what names the row position, or None
        self.sel = None           # the FROM item's Selection, if any

    def ref(self, c):
        return "%s.%s" % (self.alias, self.cols[c][0])


def base_scope(alias, table):
    return Scope(alias, table, [(c.name, c.ctype, i) for i, c in enumerate(table.cols)], "rowid")


# The most outer x inner rows a correlated subquery may cost (native SQLite
# runs it row by row).
CORRELATED_MAX = 400000

SMALL_INT = {"INT8", "INT16", "INT32", "UINT8", "UINT16", "UINT32", "BOOL"}


class Gen:
    """Draws one query over tables T and U."""

    def __init__(self, rng, tables, skip):
        self.rng = rng
        self.tables = tables
        self.skip = skip
        self.params = {}
        self.n_alias = 0

    # -- names and values

    def alias(self, prefix):
        self.n_alias += 1
        return "%s%d" % (prefix, self.n_alias)

    def value(self, v, literal_ok=True):
        # (python's sqlite3 refuses SQL text holding a NUL: such text is a parameter)
        if literal_ok and self.rng.random() < 0.5 and not (isinstance(v, str) and "\x00" in v):
            return sql_literal(v)
        name = "p%d" % len(self.params)
        self.params[name] = v
        return ":" + name

    def probe(self, sc, c):
        rng = self.rng
        name, ctype, src = sc.cols[c]
        vals = sc.table.values(src) if src is not None else []
        r = rng.random()
        if vals and r < 0.6:
            v = rng.choice(vals)
            if rng.random() < 0.3:
                v = self.neighbour(v)
            elif rng.random() < 0.15:
                v = self.other_class(v)
            return v
        if r < 0.8:
            return draw_value(rng, ctype)
        return rng.choice(PROBES)

    def neighbour(self, v):
        rng = self.rng
        if isinstance(v, bool) or v is None:
            return v
        if isinstance(v, int):
            w = v + rng.choice([-1, 1])
            return w if -2**63 <= w < 2**63 else float(w)   # an int64 parameter cannot hold it
        if isinstance(v, float):
            if math.isinf(v):
                return rng.choice([F32_MAX, -F32_MAX, 1.7976931348623157e308])
            return rng.choice([math.nextafter(v, INF), math.nextafter(v, -INF), v + 0.5, v - 0.5,
                               v + abs(v) * 2.0**-30 if v else 1e-300])
        if isinstance(v, str):
            return rng.choice([v + "a", v[:-1], v.upper(), v + "\x00", v + " "])
        return rng.choice([v + b"\x00", v[:-1], v + b"a"])

    def other_class(self, v):
        rng = self.rng
        if isinstance(v, (int, float)):
            s = repr(v) if isinstance(v, float) else str(v)
            return rng.choice([s, " " + s, s + " ", s.encode(), float(v) if isinstance(v, int) and abs(v) < 2**53
                               else s])
        if isinstance(v, str):
            try:
                return rng.choice([int(v), float(v), v.encode()])
            except ValueError:
                return rng.choice([v.encode(), 0, 1.5])
        if isinstance(v, bytes):
            return rng.choice([v.decode("latin-1"), 0])
        return v

    def rowid_probe(self, sc):
        n = sc.table.n
        rng = self.rng
        r = rng.random()
        if r < 0.7 and n:
            return rng.choice([rng.randrange(n), 0, n - 1, n, cstest.RECORD_ROWS - 1, cstest.RECORD_ROWS])
        return rng.choice([-1, 2.5, "3", " 3", "abc", None, b"\x00", 1e300, -2**63, 2**63 - 1, n + 0.5, str(n)])

    # -- WHERE

    def where(self, scopes, outer, size, depth):
        rng = self.rng
        if size <= 1:
            a = self.atom(scopes, outer, depth)
            if rng.random() < 0.1:
                return ("not", a)
            return a
        kind = rng.choice(["and", "and", "or", "not"])
        if kind == "not":
            return ("not", self.where(scopes, outer, size, depth))
        k = rng.randint(2, min(size, 4))
        parts = [max(1, size // k)] * k
        return (kind, [self.where(scopes, outer, p, depth) for p in parts])

    def atom(self, scopes, outer, depth):
        rng = self.rng
        sc = rng.choice(scopes)
        kinds = ["cmp"] * 8 + ["between"] * 2 + ["in"] * 3 + ["null"] * 2 + ["like", "colcol", "expr", "expr"]
        if sc.rowid:
            kinds += ["rowid"] * 3
        if depth < 2:
            kinds += ["insub", "exists", "scalar"]
        kind = rng.choice(kinds)
        c = rng.randrange(len(sc.cols))
        col = sc.ref(c)
        ops = ["=", "==", "!=", "<>", "<", "<=", ">", ">=", "IS", "IS NOT"]
        if kind == "cmp":
            v = self.value(self.probe(sc, c))
            op = rng.choice(ops)
            if rng.random() < 0.25 and op not in ("IS", "IS NOT"):
                return Leaf("%s %s %s" % (v, op, col))
            return Leaf("%s %s %s" % (col, op, v))
        if kind == "rowid":
            rid = "%s.%s" % (sc.alias, sc.rowid)
            r = rng.random()
            if r < 0.5:
                return Leaf("%s %s %s" % (rid, rng.choice(ops[:8]), self.value(self.rowid_probe(sc))))
            if r < 0.75:
                return Leaf("%s %sBETWEEN %s AND %s" % (rid, "NOT " if rng.random() < 0.2 else "",
                                                        self.value(self.rowid_probe(sc)),
                                                        self.value(self.rowid_probe(sc))))
            items = ", ".join(self.value(self.rowid_probe(sc)) for _ in range(rng.choice([1, 3, 6, 40])))
            return Leaf("%s %sIN (%s)" % (rid, "NOT " if rng.random() < 0.2 else "", items))
        if kind == "between":
            a, b = sorted([self.probe(sc, c), self.probe(sc, c)], key=lambda v: (type(v).__name__, repr(v)))
            return Leaf("%s %sBETWEEN %s AND %s" % (col, "NOT " if rng.random() < 0.2 else "", self.value(a),
                                                    self.value(b)))
        if kind == "in":
            # (over PRED_IN_LINEAR members a set is sorted and binary-searched)
            k = rng.choice([0, 1, 2, 3, 5, 8, 8, PRED_IN_LINEAR + 1, 40])
            if rng.random() < 0.3:
                items = [self.value(self.probe(sc, c), literal_ok=False) for _ in range(k)]
            else:
                items = [self.value(self.probe(sc, c)) for _ in range(k)]
            return Leaf("%s %sIN (%s)" % (col, "NOT " if rng.random() < 0.25 else "", ", ".join(items)))
        if kind == "null":
            return Leaf("%s %s" % (col, rng.choice(["IS NULL", "IS NOT NULL", "ISNULL", "NOTNULL", "NOT NULL"])))
        if kind == "like":
            v = self.probe(sc, c)
            s = v if isinstance(v, str) else str(v) if isinstance(v, (int, float)) else "a"
            s = s.replace("\x00", "")
            if rng.random() < 0.5:
                pat = rng.choice([s[:2] + "%", "%" + s[1:3] + "%", s.upper(), "_" + s[1:], s])
                return Leaf("%s %sLIKE %s" % (col, "NOT " if rng.random() < 0.2 else "", self.value(pat)))
            pat = rng.choice([s[:2] + "*", "*" + s[1:3] + "*", "[a-c]*", "?" + s[1:], s])
            return Leaf("%s GLOB %s" % (col, self.value(pat)))
        if kind == "colcol":
            sc2 = rng.choice(scopes + outer)
            c2 = rng.randrange(len(sc2.cols))
            return Leaf("%s %s %s" % (col, rng.choice(ops), sc2.ref(c2)))
        if kind == "expr":
            v = self.value(self.probe(sc, c))
            # (abs(-2**63) raises, and which rows a plan evaluates differs: not on INT64)
            form = rng.choice(["+{c} {op} {v}", "{c} + 0 {op} {v}",
                               "abs({c}) {op} {v}" if sc.cols[c][1] != "INT64" else "{c} * 2 {op} {v}", "{c} % 3 = 1",
                               "length({c}) {op} 2", "typeof({c}) = 'text'", "coalesce({c}, {v}) {op} {v}",
                               "CAST({c} AS TEXT) {op} {v}", "({c} {op} {v}) = 0",
                               "CASE WHEN {c} {op} {v} THEN 1 ELSE 0 END = 1", "{c}", "NOT {c}",
                               "{c} COLLATE NOCASE {op} {v}", "-{c} {op} {v}"])
            return Leaf(form.format(c=col, op=rng.choice(ops[:8]), v=v))
        # Subqueries: over U (small) when correlated, over either when not;
        # correlated only while outer rows x inner rows stay small.
        key = "U" if rng.random() < 0.7 else "T"
        correlated = rng.random() < 0.6 and sc.table.n * self.tables[key].n <= CORRELATED_MAX
        sub_alias = self.alias("s")
        sub_sc = base_scope(sub_alias, self.tables[key])
        sub = Select()
        sub.frm = [Ref("table", sub_alias, key=key, sel=self.maybe_selection(key, 0.1))]
        where_parts = []
        if correlated:
            sc_c2 = rng.randrange(len(sub_sc.cols))
            where_parts.append(Leaf("%s %s %s" % (sub_sc.ref(sc_c2), rng.choice(["=", "=", "<", ">="]), col)))
        if rng.random() < 0.7:
            where_parts.append(self.where([sub_sc], scopes + outer, rng.randint(1, 2), depth + 1))
        sub.where = where_parts[0] if len(where_parts) == 1 else ("and", where_parts) if where_parts else None
        c2 = rng.randrange(len(sub_sc.cols))
        if kind == "insub":
            if sc.rowid and rng.random() < 0.3:   # rowid IN (SELECT ...)
                col = "%s.%s" % (sc.alias, sc.rowid)
                sub.items = [Leaf(rng.choice(["%s.rowid", "%s.rowid + 1", "%s.rowid * 7"]) % sub_alias)]
            else:
                sub.items = [Leaf(sub_sc.ref(c2))]
            return Leaf("%s %sIN {0}" % (col, "NOT " if rng.random() < 0.3 else ""), [sub])
        if kind == "exists":
            sub.items = [Leaf("1")]
            return Leaf("%sEXISTS {0}" % ("NOT " if rng.random() < 0.3 else ""), [sub])
        agg = rng.choice(["min", "max", "count"])
        sub.items = [Leaf("%s(%s)" % (agg, sub_sc.ref(c2)))]
        sub.agg = True
        return Leaf("%s %s {0}" % (col, rng.choice(ops[:8])), [sub])

    # -- selections

    def maybe_selection(self, key, p):
        if self.rng.random() >= p:
            return None
        t = self.tables[key]
        rng = self.rng
        rows = mask = None
        r = rng.random()
        want_rows = r < 0.6 or r >= 0.85
        want_mask = r >= 0.6
        if want_rows:
            k = rng.choice([0, 1, 2, 5, 20, 100, 1000]) if t.n else 0
            style = rng.choice(["random", "sorted", "runs", "edges"])
            if style == "random":
                idx = [rng.randrange(t.n) for _ in range(k)]
            elif style == "sorted":
                idx = sorted(rng.randrange(t.n) for _ in range(k))
            elif style == "runs":
                idx = []
                while len(idx) < k:
                    a = rng.randrange(t.n)
                    idx += list(range(a, min(t.n, a + rng.randint(1, 50))))
                idx = idx[:k]
            else:
                edges = [0, t.n - 1, t.n // 2, min(cstest.RECORD_ROWS, t.n - 1), min(cstest.RECORD_ROWS - 1, t.n - 1)]
                idx = [rng.choice(edges) for _ in range(k)]
            neg = rng.choice([0, 0, 0.3, 1.0])
            rows = [(t.orig[i], rng.random() < neg) for i in idx]
        if want_mask:
            density = rng.choice([0, 0.001, 0.05, 0.5, 0.95, 1.0])
            mask = {}
            for o in t.orig:
                if rng.random() < density:
                    mask[o] = rng.choice([1, 1, 255, 7])
        return Selection(rows, mask, rng.choice(["first", "last", "tvf"]))

    # -- select lists

    def item(self, scopes, outer):
        rng = self.rng
        sc = rng.choice(scopes)
        c = rng.randrange(len(sc.cols))
        col = sc.ref(c)
        r = rng.random()
        if r < 0.55:
            return Leaf(col)
        if r < 0.65 and sc.rowid:
            return Leaf("%s.%s" % (sc.alias, sc.rowid))
        if r < 0.85:
            return Leaf(rng.choice(["typeof({c})", "{c} + 1", "quote({c})", "hex({c})", "length({c})", "{c} * 2",
                                    "{c} IS NULL", "CAST({c} AS REAL)", "{c} || ''",
                                    "abs({c})" if sc.cols[c][1] != "INT64" else "{c} % 7",
                                    "CASE WHEN {c} > 0 THEN 'pos' ELSE {c} END"]).format(c=col))
        if r < 0.93 and sc.table.n * self.tables["U"].n <= CORRELATED_MAX:
            s_alias = self.alias("s")
            sub_sc = base_scope(s_alias, self.tables["U"])
            sub = Select()
            sub.frm = [Ref("table", s_alias, key="U")]
            c2 = rng.randrange(len(sub_sc.cols))
            sub.where = Leaf("%s %s %s" % (sub_sc.ref(c2), rng.choice(["=", "<", ">"]), col))
            if rng.random() < 0.5:
                sub.items = [Leaf("count(*)")]
                sub.agg = True
            else:
                sub.items = [Leaf(sub_sc.ref(rng.randrange(len(sub_sc.cols))))]
                sub.order = [sub_sc.ref(c2), "%s.rowid" % s_alias]
                sub.limit = "1"
            return Leaf("{0}", [sub])
        return Leaf(sql_literal(rng.choice([1, "x", 2.5, None, b"\x01"])))

    def aggregate(self, sc):
        rng = self.rng
        c = rng.randrange(len(sc.cols))
        col = sc.ref(c)
        ctype = sc.cols[c][1]
        fns = ["count(*)", "count({c})", "min({c})", "max({c})", "count(DISTINCT {c})"]
        if ctype in SMALL_INT:
            fns += ["sum({c})", "total({c})", "avg({c})", "sum(DISTINCT {c})"]
        elif ctype == "INT64":
            fns += ["sum({c} % 1000000)", "total({c} % 1000)"]
        elif ctype in ("TEXT", "BLOB"):
            fns += ["max(length({c}))", "min(hex({c}))"]
        if sc.rowid and not (sc.sel is not None and sc.sel.rows is not None and "rows-distinct" in self.skip):
            fns.append("count(DISTINCT %s.%s)" % (sc.alias, sc.rowid))
        return rng.choice(fns).format(c=col)

    def order_total(self, s, scopes, keys=None):
        rng = self.rng
        if keys is not None:   # a grouped query: the keys are unique, and only they are not bare
            return ["%s%s" % (k, rng.choice(["", " DESC"])) for k in keys]
        terms = []
        for _ in range(rng.randint(0, 2)):
            sc = rng.choice(scopes)
            terms.append("%s%s%s" % (sc.ref(rng.randrange(len(sc.cols))), rng.choice(["", " DESC", " ASC"]),
                                     rng.choice(["", "", " NULLS FIRST", " NULLS LAST"])))
        for sc in scopes:
            terms.append("%s.%s%s" % (sc.alias, sc.rowid, rng.choice(["", " DESC"])))
        return terms

    def limit(self, s):
        rng = self.rng
        s.limit = rng.choice(["0", "1", "3", "10", "100", "-1", self.value(rng.randint(0, 50), literal_ok=False)])
        if rng.random() < 0.4:
            s.offset = rng.choice(["0", "1", "5", "50", self.value(rng.randint(0, 20), literal_ok=False)])

    # -- whole queries

    def from_table(self, key, p_sel, join="", on=None):
        a = self.alias(key.lower())
        ref = Ref("table", a, key=key, join=join, on=on, sel=self.maybe_selection(key, p_sel))
        sc = base_scope(a, self.tables[key])
        sc.sel = ref.sel
        return ref, sc

    def query(self):
        rng = self.rng
        if self.tables["T"].n > KERNEL_SERIAL_MAX:
            # Threaded kernels are the point of a huge table: aggregates over
            # filters, and selections; answers stay small.
            shape = rng.choice(["agg", "agg", "agg", "rows"])
        else:
            shape = rng.choice(["simple"] * 4 + ["rows"] * 3 + ["agg", "group", "group", "join", "join", "join",
                                                                  "derived", "cte", "compound", "many"]
                               + ["rows_in"] * 3)
        s = getattr(self, "q_" + shape)()
        return s, self.params

    def q_simple(self, p_sel=0.25):
        rng = self.rng
        s = Select()
        key = "T" if rng.random() < 0.8 else "U"
        ref, sc = self.from_table(key, p_sel)
        s.frm = [ref]
        s.items = [self.item([sc], []) for _ in range(rng.randint(1, 4))]
        if rng.random() < 0.9:
            s.where = self.where([sc], [], rng.randint(1, 6), 0)
        if rng.random() < 0.15 and not (ref.sel is not None and ref.sel.rows is not None and
                                        "rows-distinct" in self.skip):
            s.distinct = True
        if rng.random() < 0.35:
            if s.distinct:
                s.order = [str(i + 1) for i in range(len(s.items))]
            else:
                s.order = self.order_total(s, [sc])
            if rng.random() < 0.7:
                self.limit(s)
        elif query_ordered(s) and rng.random() < 0.3:
            self.limit(s)
        return s

    def wide_atom(self, sc):
        """A comparison most rows pass (so that many ANDed still leave rows)."""
        rng = self.rng
        c = rng.randrange(len(sc.cols))
        col = sc.ref(c)
        vals = sorted(sc.table.values(sc.cols[c][2]), key=lambda v: (isinstance(v, (str, bytes)), v))
        if not vals:
            return Leaf("%s IS NULL" % col)
        lo, hi = vals[len(vals) // 20], vals[-1 - len(vals) // 20]
        form = rng.choice(["ge", "le", "between", "ne", "in"])
        if form == "ge":
            return Leaf("%s >= %s" % (col, self.value(lo)))
        if form == "le":
            return Leaf("%s <= %s" % (col, self.value(hi)))
        if form == "between":
            return Leaf("%s BETWEEN %s AND %s" % (col, self.value(lo), self.value(hi)))
        if form == "ne":
            return Leaf("%s != %s" % (col, self.value(self.neighbour(rng.choice(vals)))))
        return Leaf("%s IN (%s)" % (col, ", ".join(self.value(v) for v in rng.sample(vals, min(len(vals), 40)))))

    def q_many(self):
        """More ANDed comparisons than colstore compiles on its stack, or
        than it has argv slots for (it leaves the rest to SQLite)."""
        s = self.q_simple()
        sc = base_scope(s.frm[0].alias, self.tables[s.frm[0].key])
        n = self.rng.choice([self.rng.randint(PRED_STACK + 1, PRED_STACK + 8), self.rng.randint(PLAN_SLOTS - 6,
                                                                                              PLAN_SLOTS + 6)])
        parts = [self.wide_atom(sc) for _ in range(n)]
        keep = s.where is not None and self.rng.random() < 0.3
        s.where = ("and", parts + ([s.where] if keep else []))
        return s

    def q_rows(self):
        s = self.q_simple(p_sel=1.0)
        # A selection beside an OR (SQLite may answer an OR branch by branch).
        if s.frm[0].sel is not None and self.rng.random() < 0.4:
            sc = base_scope(s.frm[0].alias, self.tables[s.frm[0].key])
            orr = ("or", [self.atom([sc], [], 1), self.atom([sc], [], 1)])
            s.where = orr if s.where is None else ("and", [s.where, orr])
        return s

    def q_rows_in(self):
        """A _rows selection beside one to three IN lists (issue 20): SQLite
        walks a list it is not handed whole value by value, one xFilter
        per value, and the rows would come in the list's order, not the
        BLOB's.  The lists mostly name rows of the selection, so that rows
        survive: rowid IN a literal list, IN (SELECT value FROM
        json_each(...)), IN (SELECT rowid FROM U or T), a column IN the
        selected rows' values; a third of the time after more than 32
        other terms, where sqlite3_vtab_in cannot tell a list from `=`.
        Read without ORDER BY, the answer compares in BLOB order."""
        rng = self.rng
        s = self.q_simple(p_sel=1.0)
        ref = s.frm[0]
        t = self.tables[ref.key]
        if not t.n:
            return s
        if ref.sel is None or ref.sel.rows is None:
            idx = [rng.randrange(t.n) for _ in range(rng.choice([5, 20, 100]))]
            ref.sel = Selection([(t.orig[i], rng.random() < 0.2) for i in idx],
                                ref.sel.mask if ref.sel is not None else None, rng.choice(["first", "last", "tvf"]))
            if s.distinct and "rows-distinct" in self.skip:   # q_simple drew DISTINCT before the rows came
                s.order, s.limit, s.offset, s.distinct = [], None, None, False
        pos = {o: i for i, o in enumerate(t.orig)}
        hits = [pos[o] for o, _ in ref.sel.rows] or [0]
        sc = base_scope(ref.alias, t)
        rid = "%s.rowid" % ref.alias

        def lst():
            k = rng.choice([2, 5, 20, 60])
            return ", ".join(str(rng.choice(hits) if rng.random() < 0.85 else rng.randrange(t.n + 1)) for _ in range(k))

        terms = []
        for _ in range(rng.choice([1, 2, 2, 3])):
            form = rng.choice(["lit", "lit", "json", "sub", "col"])
            if form == "lit":
                terms.append(Leaf("%s IN (%s)" % (rid, lst())))
            elif form == "json":
                terms.append(Leaf("%s IN (SELECT value FROM json_each('[%s]'))" % (rid, lst())))
            elif form == "sub":
                key = rng.choice(["U", "T"])
                sa = self.alias("s")
                sub = Select()
                sub.frm = [Ref("table", sa, key=key)]
                sub.items = [Leaf(rng.choice(["%s.rowid", "%s.rowid + 1", "%s.rowid / 2"]) % sa)]
                if rng.random() < 0.5:
                    sub.where = self.where([base_scope(sa, self.tables[key])], [], 1, 2)
                terms.append(Leaf("%s IN {0}" % rid, [sub]))
            else:
                c = rng.randrange(len(t.cols))
                vals = [t.exps[rng.choice(hits)][c] for _ in range(rng.choice([1, 3, 8]))]
                terms.append(Leaf("%s IN (%s)" % (sc.ref(c), ", ".join(self.value(v) for v in vals))))
        pad = [self.wide_atom(sc) for _ in range(rng.randint(33, 40))] if rng.random() < 0.33 else []
        keep = [s.where] if s.where is not None and rng.random() < 0.3 else []
        s.where = ("and", pad + terms + keep)
        if rng.random() < 0.8:   # compared in BLOB order
            s.order, s.limit, s.offset, s.distinct = [], None, None, False
        return s

    def q_agg(self):
        rng = self.rng
        s = self.q_simple()
        sc = base_scope(s.frm[0].alias, self.tables[s.frm[0].key])
        sc.sel = s.frm[0].sel
        s.items = [Leaf(self.aggregate(sc)) for _ in range(rng.randint(1, 4))]
        s.agg, s.distinct, s.order, s.limit, s.offset = True, False, [], None, None
        return s

    def q_group(self):
        rng = self.rng
        s = self.q_agg()
        sc = base_scope(s.frm[0].alias, self.tables[s.frm[0].key])
        keys = []
        for _ in range(rng.randint(1, 2)):
            col = sc.ref(rng.randrange(len(sc.cols)))
            keys.append(rng.choice([col, col, "typeof(%s)" % col, "%s IS NULL" % col, "%s %% 5" % col,
                                    "length(%s)" % col]))
        s.group = keys
        s.items = [Leaf(k) for k in keys] + s.items
        if rng.random() < 0.3:
            s.having = Leaf(rng.choice(["count(*) > 1", "count(*) < 3", "%s IS NOT NULL" % keys[0],
                                        "max(%s) > %s" % (sc.ref(0), self.value(self.probe(sc, 0)))]))
        if rng.random() < 0.4:
            s.order = self.order_total(s, [sc], keys=keys)
            if rng.random() < 0.7:
                self.limit(s)
        return s

    def q_join(self):
        rng = self.rng
        s = Select()
        keys = rng.choice([("T", "U"), ("U", "T"), ("T", "T"), ("U", "U"), ("T", "U")])
        join = rng.choice(["JOIN", "JOIN", "CROSS JOIN", "LEFT JOIN", ","])
        r1, sc1 = self.from_table(keys[0], 0.2)
        r2, sc2 = self.from_table(keys[1], 0.2 if join != "LEFT JOIN" else 0, join=join)
        c1, c2 = rng.randrange(len(sc1.cols)), rng.randrange(len(sc2.cols))
        cond = rng.choice(["%s = %s" % (sc1.ref(c1), sc2.ref(c2)), "%s.rowid = %s.rowid" % (sc1.alias, sc2.alias),
                           "%s.rowid = %s.rowid + 1" % (sc2.alias, sc1.alias),
                           "%s = %s" % (sc1.ref(c1), sc2.ref(c2))])
        if join == ",":
            r2.on = None
            extra = Leaf(cond)
        else:
            r2.on = Leaf(cond)
            if rng.random() < 0.3:
                r2.on = ("and", [r2.on, self.atom([sc2], [sc1], 1)])
            extra = None
        s.frm = [r1, r2]
        scopes = [sc1, sc2]
        big = self.tables[keys[0]].n * self.tables[keys[1]].n > 3e6
        parts = [p for p in [extra] if p is not None]
        if rng.random() < 0.8:
            parts.append(self.where(scopes, [], rng.randint(1, 4), 0))
        if big:   # keep the answer small: a window on the first table
            parts.append(Leaf("%s.rowid < %d" % (sc1.alias, rng.choice([50, 300]))))
        s.where = parts[0] if len(parts) == 1 else ("and", parts) if parts else None
        if rng.random() < 0.4:
            s.items = [Leaf(self.aggregate(rng.choice(scopes))) for _ in range(rng.randint(1, 3))]
            s.agg = True
        else:
            s.items = [self.item(scopes, []) for _ in range(rng.randint(1, 4))]
            if rng.random() < 0.3:
                s.order = self.order_total(s, scopes)
                self.limit(s)
        return s

    def derived_select(self, key):
        """A Select over one table projecting r (its rowid) and some columns."""
        rng = self.rng
        ref, sc = self.from_table(key, 0.15)
        sub = Select()
        sub.frm = [ref]
        picks = sorted(set(rng.randrange(len(sc.cols)) for _ in range(rng.randint(1, 3))))
        sub.items = [Leaf("%s.rowid AS r" % sc.alias)] + [Leaf("%s AS d%d" % (sc.ref(c), c)) for c in picks]
        if rng.random() < 0.7:
            sub.where = self.where([sc], [], rng.randint(1, 3), 1)
        if rng.random() < 0.6:
            sub.order = self.order_total(sub, [sc])
            self.limit(sub)
        dcols = [("d%d" % c, sc.cols[c][1], c) for c in picks]
        return sub, dcols

    def q_derived(self):
        rng = self.rng
        key = "T" if rng.random() < 0.7 else "U"
        sub, dcols = self.derived_select(key)
        a = self.alias("d")
        dsc = Scope(a, self.tables[key], dcols, "r")
        s = Select()
        s.frm = [Ref("sub", a, sub=sub)]
        s.items = [self.item([dsc], []) for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.7:
            s.where = self.where([dsc], [], rng.randint(1, 3), 1)
        if rng.random() < 0.4:
            s.order = self.order_total(s, [dsc])
            self.limit(s)
        return s

    def q_cte(self):
        rng = self.rng
        key = "T" if rng.random() < 0.7 else "U"
        sub, dcols = self.derived_select(key)
        s = Select()
        s.ctes = [("w", sub)]
        a = self.alias("w")
        dsc = Scope(a, self.tables[key], dcols, "r")
        s.frm = [Ref("cte", a, key="w")]
        scopes = [dsc]
        if rng.random() < 0.4:   # the CTE joined with a base table
            r2, sc2 = self.from_table(rng.choice(["T", "U"]), 0, join="JOIN")
            r2.on = Leaf("%s.rowid = %s.r" % (r2.alias, a))
            s.frm.append(r2)
            scopes.append(sc2)
        if rng.random() < 0.5:
            s.items = [Leaf(self.aggregate(rng.choice(scopes))) for _ in range(rng.randint(1, 3))]
            s.agg = True
        else:
            s.items = [self.item(scopes, []) for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.6:
            s.where = self.where(scopes, [], rng.randint(1, 3), 1)
        return s

    def q_compound(self):
        """Arms of one or two items; ordered, each item is followed by its
        typeof(), so that 1 and 1.0 (equal to ORDER BY) never tie."""
        rng = self.rng
        n_items = rng.randint(1, 2)
        ordered = rng.random() < 0.3
        arms = []
        for _ in range(rng.randint(2, 3)):
            key = rng.choice(["T", "U"])
            ref, sc = self.from_table(key, 0.15)
            a = Select()
            a.frm = [ref]
            a.items = [self.item([sc], []) for _ in range(n_items)]
            if ordered:
                a.items = [x for it in a.items for x in (it, Leaf("typeof(%s)" % it.text, it.subs))]
            if rng.random() < 0.8:
                a.where = self.where([sc], [], rng.randint(1, 3), 1)
            arms.append(a)
        s = arms[0]
        s.compound = [(rng.choice(["UNION", "UNION ALL", "EXCEPT", "INTERSECT"]), a) for a in arms[1:]]
        if ordered:
            s.order = [str(i + 1) for i in range(len(s.items))]
            self.limit(s)
        return s


# ------------------------------------------------------------------ running

class Case:
    """What one query needs: the round's settings and tables, the query."""

    def __init__(self, seed, round_no, query_no, config, tables, query, params):
        self.seed, self.round_no, self.query_no = seed, round_no, query_no
        self.config = config      # [(setting, value)]
        self.tables = tables      # {'T': Table, 'U': Table}
        self.query = query
        self.params = params

    def keys(self):
        used = set()
        for s in walk_selects(self.query):
            for r in s.frm:
                if r.kind == "table":
                    used.add(r.key)
        return sorted(used)

    def mappings(self):
        """(name, mapping) of the colstore sides to compare with the native one."""
        only = getattr(self, "only", None)
        if only:
            return [m for m in MAPPINGS if m[0] == only]
        keys = self.keys()
        out = [("colstore", {"T": "colstore", "U": "colstore"})]
        if len(keys) == 2:
            out.append(("mixed T", {"T": "colstore", "U": "native"}))
            out.append(("mixed U", {"T": "native", "U": "colstore"}))
        return out


MAPPINGS = [("colstore", {"T": "colstore", "U": "colstore"}), ("mixed T", {"T": "colstore", "U": "native"}),
            ("mixed U", {"T": "native", "U": "colstore"})]


class Timeout(Exception):
    pass


def execute(con, sql, params, deadline_s, max_rows):
    """(rows, None), (None, error text); raises Timeout past the deadline."""
    end = time.monotonic() + deadline_s
    con.set_progress_handler(lambda: 1 if time.monotonic() > end else 0, 5000)
    try:
        cur = con.execute(sql, params)
        rows = cur.fetchmany(max_rows + 1)
        if len(rows) > max_rows:
            raise Timeout("more than %d rows" % max_rows)
        return rows, None
    except sqlite3.OperationalError as e:
        if "interrupted" in str(e):
            raise Timeout("interrupted")
        return None, "%s: %s" % (getattr(e, "sqlite_errorname", type(e).__name__), e)
    except sqlite3.Error as e:
        return None, "%s: %s" % (getattr(e, "sqlite_errorname", type(e).__name__), e)
    finally:
        con.set_progress_handler(None, 0)


def render(case, mapping):
    r = Render(case.tables, mapping)
    sql = r.query(case.query, case.params)
    return sql, r.params, r.setup


def run_setup(con, setup):
    for sql, rows in setup:
        if rows is None:
            con.execute(sql)
        else:
            con.executemany(sql, rows)


def same_rows(want, got, ordered):
    a, b = [repr(r) for r in want], [repr(r) for r in got]
    if not ordered:
        a.sort()
        b.sort()
    return a == b


class Outcome:
    def __init__(self, kind, detail="", n_rows=0, variant=None, sql=None, native_sql=None, params=None):
        self.kind = kind          # 'ok', 'skip', 'mismatch', 'error'
        self.detail, self.n_rows, self.variant = detail, n_rows, variant
        self.sql, self.native_sql, self.params = sql, native_sql, params


def check_query(con, case, deadline_s=4.0, max_rows=200000, reprepare=False):
    """Runs the case's query natively and on each colstore mapping;
    reprepare runs each colstore query a second time as a new statement
    (its text with a space added), since a bug may show only there."""
    ordered = query_ordered(case.query)
    nsql, nparams, nsetup = render(case, {"T": "native", "U": "native"})
    try:
        run_setup(con, nsetup)
        t0 = time.monotonic()
        want, want_err = execute(con, nsql, nparams, deadline_s, max_rows)
        native_s = time.monotonic() - t0
    except Timeout as e:
        return Outcome("skip", str(e))
    n_rows = len(want) if want is not None else 0
    for name, mapping in case.mappings():
        sql, params, setup = render(case, mapping)
        for text in ([sql, sql + " "] if reprepare else [sql]):
            try:
                run_setup(con, setup)
                got, got_err = execute(con, text, params, deadline_s * 3, max_rows)
            except Timeout as e:
                # colstore ran past three times the native deadline: a
                # performance cliff when native was quick
                kind = "slow" if native_s < deadline_s / 10 and "interrupted" in str(e) else "skip"
                return Outcome(kind, "native took %.3f s, colstore was stopped after %.0f s" % (
                    native_s, deadline_s * 3), n_rows, name, sql, nsql, params)
            if want_err or got_err:
                if want_err != got_err:
                    return Outcome("error", "native: %s\n  colstore: %s" % (want_err, got_err), n_rows, name, sql,
                                   nsql, params)
                continue
            if not same_rows(want, got, ordered):
                return Outcome("mismatch", diff_text(want, got, ordered), n_rows, name, sql, nsql, params)
    return Outcome("ok", n_rows=n_rows)


def diff_text(want, got, ordered):
    a, b = cstest.canon_rows(want, ordered), cstest.canon_rows(got, ordered)
    lines = ["native %d rows, colstore %d rows (compared %s)" % (len(a), len(b), "in order" if ordered else "sorted")]
    shown = 0
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        if x != y:
            lines.append("  row %d: native   %s\n          colstore %s" % (i, show_row(x), show_row(y)))
            shown += 1
            if shown >= 5:
                break
    return "\n".join(lines)


def show_row(canon_row):
    if canon_row is None:
        return "(none)"
    out = []
    for c in canon_row:
        if c[0] == "real":
            out.append("%r" % struct.unpack("<d", bytes.fromhex(c[1]))[0])
        elif c[0] == "null":
            out.append("NULL")
        elif c[0] == "blob":
            out.append("x'%s'" % c[1].hex())
        else:
            out.append(repr(c[1]))
    return "(" + ", ".join(out) + ")"


# -- rounds

def round_rng(seed, round_no):
    return random.Random("fuzz_sql round %d/%d" % (seed, round_no))


def query_rng(seed, round_no, query_no):
    return random.Random("fuzz_sql query %d/%d/%d" % (seed, round_no, query_no))


def draw_round(seed, round_no, opts, rt):
    """The round's settings and tables (deterministic in seed and round)."""
    rng = round_rng(seed, round_no)
    config = []
    if rng.random() < 0.5:
        config.append(("batch_bytes", rng.choice([65536, 65536 * 3, 33554432])))
    if rng.random() < 0.5:
        config.append(("mask_gate", rng.choice(["0", "1", "0.3", "auto"])))
    if rng.random() < 0.2:
        config.append(("threads", rng.choice([1, 2])))
    # ordered delivery by scatter or by the gather (its own stream, so the
    # rounds of every earlier seed stay as they were)
    srng = random.Random("fuzz_sql scatter %d/%d" % (seed, round_no))
    if srng.random() < 0.5:
        config.append(("scatter_bytes", srng.choice([0, 1000, 268435456])))
    tables = {"T": draw_table(rng, "T", not opts.small), "U": draw_table(rng, "U", False)}
    draw_small_commits(seed, round_no, config, tables)
    n_queries = queries_in_round(seed, round_no)
    for t in tables.values():
        rt.expect(t)
        if t.late:
            t.late = (t.late[0], rng.randint(1, n_queries - 1), t.late[2])
    # The planted round of --self-test deletes nothing (a deleted row could
    # take the wrong value with it); --self-test-delete's deletes from T
    # (U when T is empty) and deletes one more row from the mirror only.
    planted = opts.self_test and round_no == opts.start_round
    force = None
    if planted and opts.self_test == "delete":
        force = "T" if tables["T"].n else "U" if tables["U"].n else None
    if not (planted and opts.self_test == "value"):
        draw_deletions(seed, round_no, tables, n_queries, force)
    if planted and opts.self_test == "value":
        t = tables["T"]
        if t.n == 0:
            t = tables["U"]
        if t.n:
            i = rng.randrange(t.n)
            c = rng.randrange(len(t.cols))
            v = t.exps[i][c]
            wrong = {int: lambda x: x + 1 if x < 2**62 else x - 1, float: lambda x: 1.5 if x != 1.5 else 2.5,
                     str: lambda x: x + "!", bytes: lambda x: x + b"!"}
            t.fault = (t.orig[i], c, 7 if v is None else wrong[type(v)](v))
    return config, tables


AUTO_EAGER = 1000000   # auto_compact: compact whenever 8 small records are there


def draw_small_commits(seed, round_no, config, tables):
    """Issue 20 item 7: the automatic compaction after small commits.  The
    round's auto_compact (its own stream, so the other draws of every
    earlier seed stay as they were): 0 (off: check_info then predicts the
    records exactly, a record per commit), the default 4, or eager; with it
    on, a file's rows often end in a stream of single-row commits (each
    its own transaction, as autocommit INSERTs are), which the compaction
    merges while deletions, pending transactions, appends during the round
    and dataset members go on around it."""
    arng = random.Random("fuzz_sql auto_compact %d/%d" % (seed, round_no))
    auto = arng.choice([0, 0, 4, AUTO_EAGER])
    config.append(("auto_compact", auto))
    if not auto:
        return
    for t in tables.values():
        if t.n < 2 or arng.random() < 0.3:
            continue
        f = arng.randrange(len(t.file_kinds))
        rows = [i for i, tag in enumerate(t.tags) if tag[0] == f]
        if len(rows) < 2:
            continue
        m = arng.randint(1, min(len(rows) - 1, 60))
        # The last m rows of file f as single-row commits (rows appended
        # during the round among them, or after them, stay after them).
        first = rows[-m]
        base = t.tags[first - 1][1] + 1 if first > rows[0] else 0
        t.tags = [(f, base + i - first) if rows[0] <= i and i >= first and tag[0] == f else tag for i, tag in enumerate(t.tags)]
        assert all(a <= b for a, b in zip(t.tags, t.tags[1:])), t.tags


def count_auto_compacted(con, config, tables, stats):
    """Tables of a round with auto_compact on, and those it merged."""
    if not dict(config).get("auto_compact"):
        return
    for t in tables.values():
        stats.auto[0] += 1
        info = json.loads(con.execute("SELECT colstore_info(?)", (t.cs_name,)).fetchone()[0])
        if info["records"] < len(set(t.tags)):
            stats.auto[1] += 1


def visible(tables, q):
    """The tables as query q of the round sees them (appends before it
    done, a pending transaction that ends before it ended)."""
    out = {}
    for k, t in tables.items():
        if t.late and q < t.late[1]:
            t = t.before(t.late[0])
        if t.pending and q >= t.pending[1] and not t.closed:
            t = t.copy()
            t.closed = True
        out[k] = t
    return out


def queries_in_round(seed, round_no):
    return round_rng(seed, round_no).randint(40, 120)


def draw_query(seed, round_no, query_no, tables, opts):
    g = Gen(query_rng(seed, round_no, query_no), tables, opts.skip)
    q, params = g.query()
    return q, params


def reset_config(con):
    for k, v in (("batch_bytes", 33554432), ("mask_gate", "auto"), ("threads", 0), ("scatter_bytes", 268435456),
                 ("auto_compact", 4)):
        con.execute("SELECT colstore_config(?, ?)", (k, v))


def build_case(con, d, config, tables):
    """Builds the tables and runs their deletions (DeleteMismatch when a
    DELETE's changes() differ)."""
    reset_config(con)
    acts = case_actions(config, tables)
    run_actions(con, acts, d)
    return acts


def check_contents(con, tables):
    """The independent check: colstore holds what the conversions promise,
    at the positions the mirror still holds after the deletions."""
    problems = []
    for t in tables.values():
        cols = ", ".join(c.name for c in t.cols)
        got = con.execute("SELECT rowid, %s FROM %s ORDER BY rowid" % (cols, t.cs_name)).fetchall()
        live = [r[0] for r in con.execute("SELECT rowid FROM %s ORDER BY rowid" % t.nat_name)]
        want = [(i,) + t.exps[i] for i in live]
        if not same_rows(want, got, True):
            for w, g in zip(want, got):
                if repr(w) != repr(g):
                    problems.append("%s row %d: inserted %r, expected %r, colstore has %s" % (
                        t.cs_name, w[0], t.raws[w[0]], w[1:], repr(g[1:]) if g[0] == w[0] else "row %r" % (g,)))
                    break
            else:
                problems.append("%s: %d rows, expected %d" % (t.cs_name, len(got), len(want)))
        problems += check_info(con, t, len(live))
    return problems


def check_info(con, t, live):
    """colstore_info against the rows drawn: live of t.n positions live."""
    info = json.loads(con.execute("SELECT colstore_info(?)", (t.cs_name,)).fetchone()[0])
    out = []
    # colstore_info reads the committed snapshot, not this connection's
    # pending deletions: its live count is checked outside a transaction.
    if info["rows"] != live and not con.in_transaction:
        out.append("%s: colstore_info rows %d, expected %d" % (t.cs_name, info["rows"], live))
    if info["positions"] != t.n:
        out.append("%s: colstore_info positions %d, expected %d" % (t.cs_name, info["positions"], t.n))
    n_files = len(t.file_kinds)
    # A compaction (after the deletions, before rows appended in the round)
    # put the rows there were into full records; later commits add their own.
    upto = (t.late[0] if t.late else t.n) if t.compact else 0
    want_records = -(-upto // cstest.RECORD_ROWS)
    for f in range(n_files):
        for g in groups(t, f):
            if g and g[0] >= upto:
                want_records += -(-len(g) // cstest.RECORD_ROWS)
    # The automatic compaction (draw_small_commits) only ever merges them.
    auto = con.execute("SELECT colstore_config('auto_compact')").fetchone()[0]
    if info["records"] != want_records and not (auto and info["records"] <= want_records):
        out.append("%s: colstore_info records %d, expected %s%d (%d commits, auto_compact %d)" % (
            t.cs_name, info["records"], "at most " if auto else "", want_records, len(set(t.tags)), auto))
    # A deletion writes deletion vectors, no records; and the column stats
    # describe every position, deleted or not (core/colstore.h): all of
    # them hold for every row drawn, as without deletions.
    for c, (col, ci) in enumerate(zip(t.cols, info["columns"])):
        vals = [r[c] for r in t.exps]
        nonnull = [v for v in vals if v is not None]
        nulls = len(vals) - len(nonnull)
        if ci["null_count"] != nulls:
            out.append("%s.%s: null_count %s, expected %d" % (t.cs_name, col.name, ci["null_count"], nulls))
        if col.ctype not in ("TEXT", "BLOB") and nonnull:
            for k, fn in (("min", min), ("max", max)):
                want = fn(nonnull)
                got = ci[k]
                if isinstance(want, float) and math.isinf(want):
                    continue      # JSON has no infinity
                if got is None or float(got) != float(want) or (isinstance(want, int) and got != want):
                    out.append("%s.%s: %s %r, expected %r" % (t.cs_name, col.name, k, got, want))
        srt = (col.ctype not in ("TEXT", "BLOB") and nulls == 0 and
               all(a <= b for a, b in zip(nonnull, nonnull[1:])))
        if bool(ci["sorted"]) != srt and t.n:
            out.append("%s.%s: sorted %s, expected %s (%s)" % (t.cs_name, col.name, ci["sorted"], srt, col.style))
    return out


# ------------------------------------------------------------------ shrinking

def tree_variants(e):
    """Smaller versions of a WHERE tree (None = no condition at all)."""
    if e is None:
        return
    yield None
    if isinstance(e, Leaf):
        for i, s in enumerate(e.subs):
            for v in select_variants(s):
                subs = list(e.subs)
                subs[i] = v
                yield Leaf(e.text, subs)
        return
    if e[0] == "not":
        yield e[1]
        for v in tree_variants(e[1]):
            if v is not None:
                yield ("not", v)
        return
    kids = e[1]
    for k in kids:
        yield k
    for i in range(len(kids)):
        rest = kids[:i] + kids[i + 1:]
        yield rest[0] if len(rest) == 1 else (e[0], rest)
    for i, k in enumerate(kids):
        for v in tree_variants(k):
            if v is not None:
                yield (e[0], kids[:i] + [v] + kids[i + 1:])


def select_variants(s):
    """Smaller versions of a Select that keep its answer deterministic."""
    def with_(**kw):
        c = copy.copy(s)
        for k, v in kw.items():
            setattr(c, k, v)
        return c
    if s.compound:
        yield with_(compound=[], order=[], limit=None, offset=None)
        for i in range(len(s.compound)):
            yield with_(compound=s.compound[:i] + s.compound[i + 1:])
    if s.limit is not None:
        if s.offset is not None:
            yield with_(offset=None)
        yield with_(limit=None, offset=None)
    if s.order and s.limit is None:
        yield with_(order=[])
    if s.distinct:
        yield with_(distinct=False)
    if s.having is not None:
        yield with_(having=None)
    for v in tree_variants(s.where):
        yield with_(where=v)
    if len(s.items) > 1 and not s.compound:
        for i in range(len(s.items)):
            yield with_(items=s.items[:i] + s.items[i + 1:])
    for i, it in enumerate(s.items):
        for j, sub in enumerate(it.subs):
            for v in select_variants(sub):
                subs = list(it.subs)
                subs[j] = v
                yield with_(items=s.items[:i] + [Leaf(it.text, subs)] + s.items[i + 1:])
    for i, r in enumerate(s.frm):
        if r.sel is not None:
            for sel in ([None] + ([Selection(r.sel.rows, None, r.sel.form)] if r.sel.mask is not None and
                                  r.sel.rows is not None else []) +
                        ([Selection(None, r.sel.mask, "first")] if r.sel.rows is not None and r.sel.mask is not None
                         else []) + ([Selection(r.sel.rows, r.sel.mask, "last")] if r.sel.form != "last" else [])):
                r2 = copy.copy(r)
                r2.sel = sel
                yield with_(frm=s.frm[:i] + [r2] + s.frm[i + 1:])
            if r.sel.rows and len(r.sel.rows) > 1:
                for part in halves(r.sel.rows):
                    r2 = copy.copy(r)
                    r2.sel = Selection(part, r.sel.mask, r.sel.form)
                    yield with_(frm=s.frm[:i] + [r2] + s.frm[i + 1:])
        if r.on is not None:
            for v in tree_variants(r.on):
                if v is not None:
                    r2 = copy.copy(r)
                    r2.on = v
                    yield with_(frm=s.frm[:i] + [r2] + s.frm[i + 1:])
        if r.sub is not None:
            for v in select_variants(r.sub):
                r2 = copy.copy(r)
                r2.sub = v
                yield with_(frm=s.frm[:i] + [r2] + s.frm[i + 1:])
    for i, (op, arm) in enumerate(s.compound):
        for v in tree_variants(arm.where):
            a2 = copy.copy(arm)
            a2.where = v
            yield with_(compound=s.compound[:i] + [(op, a2)] + s.compound[i + 1:])
    for i, (name, c) in enumerate(s.ctes):
        for v in select_variants(c):
            yield with_(ctes=s.ctes[:i] + [(name, v)] + s.ctes[i + 1:])


def deletion_variants(t):
    """Smaller deletion plans of table t (new Tables), the biggest cuts first."""
    if not t.dels:
        return

    def with_(dels, **kw):
        t2 = t.copy()
        t2.dels = dels
        t2.__dict__.update(kw)
        return t2
    yield with_([], del_mode=None, pending=None, closed=False)
    if t.del_mode == "pending":
        yield with_(t.dels, del_mode="committed", pending=None, closed=False)
    if len(t.dels) > 1:
        yield with_([(True, [dl for _, steps in t.dels for dl in steps])])
        for i in range(len(t.dels)):
            yield with_(t.dels[:i] + t.dels[i + 1:])
    for i, (begin, steps) in enumerate(t.dels):
        def put(txn):
            return with_(t.dels[:i] + [txn] + t.dels[i + 1:])
        if begin and len(steps) == 1 and t.del_mode != "pending":
            yield put((False, steps))
        if len(steps) > 1:
            for j in range(len(steps)):
                yield put((begin, steps[:j] + steps[j + 1:]))
        for j, dl in enumerate(steps):
            for v in step_variants(dl):
                yield put((begin, steps[:j] + [v] + steps[j + 1:]))


def step_variants(dl):
    """Smaller versions of one DELETE: fewer rows, a simpler spelling."""
    if dl.kind == "pred":
        for v in tree_variants(dl.where):
            if v is not None:
                yield dl.with_(where=v)
        return
    simplest = "between" if dl.kind == "run" else "in"
    if dl.form != simplest or dl.neg:
        yield dl.with_(form=simplest, neg=False)
    if dl.kind == "rows" and len(dl.rows) > 1:
        for part in halves(dl.rows):
            yield dl.with_(rows=part)
    if dl.kind == "run" and dl.rows[0] < dl.rows[1]:
        lo, hi = dl.rows
        yield dl.with_(rows=(lo, (lo + hi) // 2))
        yield dl.with_(rows=((lo + hi) // 2 + 1, hi))


def halves(xs):
    k = len(xs) // 2
    return [xs[:k], xs[k:]]


def row_cuts(n):
    """Pieces of rows to try removing, largest first."""
    size = n // 2
    while size >= 1:
        for lo in range(0, n, size):
            yield lo, min(n, lo + size)
        size //= 2


PROGRESS = {"path": None, "what": ""}


def beat(what=None):
    """Tells a supervising parent that this process still makes progress."""
    if what is not None:
        PROGRESS["what"] = what
    if PROGRESS["path"]:
        with open(PROGRESS["path"], "w") as f:
            f.write("%s %f\n" % (PROGRESS["what"], time.monotonic()))


class Shrinker:
    """Makes a failing case smaller while check(case) keeps failing."""

    def __init__(self, check, kind, budget_s, log):
        self.check = check        # case -> outcome kind
        self.kind = kind          # the failure kind to keep
        self.end = time.monotonic() + budget_s
        self.log = log
        self.tries = 0

    def fails(self, case):
        if time.monotonic() > self.end:
            return False
        self.tries += 1
        beat()
        try:
            return self.check(case) == self.kind
        except Exception as e:  # a candidate the tool cannot run is no reproduction
            self.log("  shrink: candidate failed to run: %s" % e)
            return False

    def with_table(self, case, key, table):
        c = copy.copy(case)
        c.tables = dict(case.tables)
        c.tables[key] = table
        return c

    def greedy(self, case, candidates):
        """Takes the first of candidates(case) that still fails, and again
        from there, until none does."""
        changed = True
        while changed and time.monotonic() < self.end:
            changed = False
            for cand in candidates(case):
                if self.fails(cand):
                    case, changed = cand, True
                    break
        return case

    def rows(self, case):
        for key in ("T", "U"):
            case = self.greedy(case, lambda c: (
                self.with_table(c, key, c.tables[key].subset([i for i in range(c.tables[key].n) if not lo <= i < hi]))
                for lo, hi in row_cuts(c.tables[key].n)))
        return case

    def query(self, case):
        def variants(c):
            for v in select_variants(c.query):
                c2 = copy.copy(c)
                c2.query = v
                yield c2
        return self.greedy(case, variants)

    def deletions(self, case):
        for key in ("T", "U"):
            case = self.greedy(case, lambda c: (self.with_table(c, key, t2)
                                                for t2 in deletion_variants(c.tables[key])))
        return case

    def layout(self, case):
        for key in ("T", "U"):
            t = case.tables[key]
            # every commit of a file in one, and one file for a dataset
            for attempt in ("merge", "one-file", "insert"):
                t = case.tables[key]
                t2 = copy.copy(t)
                if attempt == "merge":
                    if len(set(t.tags)) == len(set(f for f, _ in t.tags)):
                        continue
                    t2.tags = [(f, 0) for f, _ in t.tags]
                elif attempt == "one-file":
                    if t.build != "dataset":
                        continue
                    t2.build, t2.file_kinds, t2.tags = "insert", ["insert"], [(0, s) for _, s in t.tags]
                    if t.del_mode == "member":   # the same deletions on the one table
                        t2.del_mode = "committed"
                        t2.dels = [(b, [dl.with_(file=None) for dl in steps]) for b, steps in t.dels]
                elif attempt == "insert":
                    if t.build != "create":
                        continue
                    t2.build = "insert"
                cand = self.with_table(case, key, t2)
                if self.fails(cand):
                    case = cand
            # columns no alias of this table names, nor its DELETE predicates (alias d)
            preds = [Render({}, {}).tree(dl.where) for _, steps in case.tables[key].dels for dl in steps
                     if dl.kind == "pred"]
            sql = " ".join([render(case, {"T": "colstore", "U": "colstore"})[0]] + preds)
            aliases = sorted({r.alias for sel in walk_selects(case.query) for r in sel.frm
                              if r.kind == "table" and r.key == key} | ({"d"} if preds else set()))
            c = len(case.tables[key].cols) - 1
            while c >= 0:
                t = case.tables[key]
                named = r"\b(?:%s)\.%s(?![\w\"])" % ("|".join(aliases) or "-", re.escape(t.cols[c].name))
                if len(t.cols) > 1 and not re.search(named, sql):
                    t2 = t.drop_column(c)
                    if t2 is not None:
                        cand = self.with_table(case, key, t2)
                        if self.fails(cand):
                            case = cand
                c -= 1
        if case.config:
            c = copy.copy(case)
            c.config = []
            if self.fails(c):
                case = c
        return case

    def run(self, case):
        case = self.rows(case)
        case = self.query(case)
        case = self.deletions(case)
        case = self.layout(case)
        case = self.rows(case)
        case = self.query(case)
        case = self.deletions(case)
        return case


# ------------------------------------------------------------------ reports

def repro_script(case, module):
    """A self-contained python snippet that shows the failure."""
    # (a table with deletions too: its DELETE may be what fails)
    keys = sorted(set(case.keys()) | {k for k, t in case.tables.items() if t.dels}) or ["T"]
    acts = case_actions(case.config, case.tables, keys)
    mapping = case.mappings()[0]
    cs_sql, cs_params, cs_setup = render(case, mapping[1])
    n_sql, n_params, n_setup = render(case, {"T": "native", "U": "native"})
    ordered = query_ordered(case.query)
    lines = [
        "# fuzz_sql reproduction: seed %d, round %d, query %d" % (case.seed, case.round_no, case.query_no),
        "import os, sqlite3, tempfile",
        "inf = float('inf')",
        "MODULE = os.environ.get('COLSTORE_MODULE', %r)" % module,
        "D = tempfile.mkdtemp()",
        "con = sqlite3.connect(':memory:', isolation_level=None)",
        "con.enable_load_extension(True)",
        "con.load_extension(MODULE)",
        "con.text_factory = lambda b: b.decode('utf-8', 'surrogateescape')",
        "def x(sql, *a):",
        "    return con.execute(sql.replace('%DIR%', D), *a)",
    ]
    if any(a[0] == "delete" for a in acts):
        lines += [
            "def delete_both(colstore_sql, colstore_params, native_sql, native_params):",
            "    # the same DELETE on colstore and on its native mirror: the same rows must go",
            "    x(colstore_sql, colstore_params)",
            "    got = x('SELECT changes()').fetchone()[0]",
            "    x(native_sql, native_params)",
            "    want = x('SELECT changes()').fetchone()[0]",
            "    assert got == want, 'DELETE changed %d rows on colstore, %d on native' % (got, want)",
        ]
    lines += script_lines(acts)
    for sql, rows in n_setup + cs_setup:
        if rows is None:
            lines.append("x(%r)" % sql)
        else:
            lines.append("con.executemany(%r, %r)" % (sql, rows))
    params = dict(n_params)
    params.update(cs_params)
    lines += [
        "params = {%s}" % ", ".join("%r: %s" % (k, ("bytes.fromhex(%r)" % v.hex()) if isinstance(v, bytes)
                                               else repr(v)) for k, v in sorted(params.items())),
        "colstore_sql = %r  # %s" % (cs_sql, mapping[0]),
        "native_sql = %r" % n_sql,
        "want = con.execute(native_sql, params).fetchall()",
        "print('native:  ', want)",
        "# on tables no statement has read yet, then after one has; each time",
        "# also as a second prepared statement (the same text and a space)",
        "for attempt in ('cold', 'warm'):",
        "  for text in (colstore_sql, colstore_sql + ' '):",
        "    got = con.execute(text, params).fetchall()",
        "    print('colstore (%s%s):' % (attempt, ', re-prepared' if text[-1] == ' ' else ''), got)",
        ("    assert got == want, 'colstore differs from native'" if ordered else
         "    assert sorted(map(repr, got)) == sorted(map(repr, want)), 'colstore differs from native'"),
    ] + ["  x('SELECT count(*) FROM %s').fetchall()" % case.tables[k].cs_name for k in case.keys()]
    return "\n".join(lines) + "\n"


def build_script_if_small(case, limit=60):
    if all(t.n <= limit for t in case.tables.values()):
        return "\n".join(script_lines(case_actions(case.config, case.tables)))
    return "(%s; the shrunk reproduction below builds a small one)" % "; ".join(
        "%s %d rows" % (t.cs_name, t.n) for t in case.tables.values())


def clip(text, most=2000):
    """text, cut to its first most characters (a DELETE's list of positions
    or a _mask may run to megabytes; the reproduction holds them whole)."""
    return text if text is None or len(text) <= most else "%s... (%d characters)" % (text[:most], len(text))


def describe_failure(case, out, opts):
    lines = ["=" * 78,
             "FAILURE (%s): seed %d, round %d, query %d   [rerun: fuzz_sql.py --seed %d --replay-round %d "
             "--replay-query %d%s]" % (out.kind, case.seed, case.round_no, case.query_no, case.seed, case.round_no,
                                      case.query_no, "".join(" --skip " + s for s in opts.skip)),
             "settings: %s" % (", ".join("%s=%s" % kv for kv in case.config) or "defaults")]
    lines += ["table " + t.describe() for t in case.tables.values()]
    lines += ["build:", build_script_if_small(case)]
    lines += ["variant: %s" % out.variant,
              "colstore query: %s" % clip(out.sql),
              "native query:   %s" % clip(out.native_sql),
              "params: %s" % (", ".join("%s=%s" % (k, clip(show(v), 300))
                                        for k, v in sorted((out.params or {}).items()))
                              or "()"),
              out.detail]
    return "\n".join(lines)


# ------------------------------------------------------------------ the loop

class Stats:
    def __init__(self):
        self.queries = self.nonempty = self.rows = self.skipped = self.tables = self.rounds = self.slow = 0
        self.failures = []        # (round, query, kind, first line)
        self.by_shape = {}
        self.deleting = {}        # deletion mode: tables built with it
        self.deletes = 0          # DELETE statements compared
        self.on_deleted = 0       # queries naming a table with deletions
        self.dml_rounds = self.dml_writes = self.dml_reads = 0   # selection rounds, their writes and reads
        self.auto = [0, 0]        # tables built with auto_compact on; of them, merged (fewer records than commits)

    def line(self):
        dels = ""
        if self.deleting:
            dels = "; deletions on %d tables (%s), %d DELETEs, %d queries over them" % (
                sum(v for k, v in self.deleting.items() if k != "compacted"), ", ".join("%s %d" % kv for kv in sorted(self.deleting.items())),
                self.deletes, self.on_deleted)
        if self.dml_rounds:
            dels += "; %d selection rounds: %d UPDATE/DELETE through _rows/_mask, %d _rows/_mask reads" % (
                self.dml_rounds, self.dml_writes, self.dml_reads)
        return ("%d queries (%d with rows, %d rows compared, %d skipped, %d slow), %d rounds, %d tables, "
                "%d failure(s)%s; auto_compact on %d tables, %d merged by it" % (
                    self.queries, self.nonempty, self.rows, self.skipped, self.slow, self.rounds, self.tables,
                    len(self.failures), dels, self.auto[0], self.auto[1]))


def warm_up(con, case):
    """A statement on each colstore table: some failures need one first."""
    for k in case.keys():
        con.execute("SELECT count(*) FROM %s" % case.tables[k].cs_name).fetchall()


def replay(case, prefix):
    """The Outcome of a case built in a fresh directory and connection:
    its query runs twice, on tables no statement has read yet and again
    after one has (the fuzzing loop reads every table before its queries);
    a DELETE of the build that differs is the outcome 'changes'."""
    d = tempfile.mkdtemp(prefix=prefix)
    con = connect()
    try:
        try:
            build_case(con, d, case.config, case.tables)
        except DeleteMismatch as e:
            return e.outcome()
        out = check_query(con, case, reprepare=True)
        if out.kind in ("ok", "skip"):
            warm_up(con, case)
            out = check_query(con, case, reprepare=True)
        return out
    finally:
        con.close()
        shutil.rmtree(d, ignore_errors=True)


def in_process_check(opts):
    """A check(case) -> kind that replays the case in this process."""
    return lambda case: replay(case, "colstore-fuzz-shrink-").kind


# --replay-file's exit status per outcome (2: the tool failed).
REPLAY_CODES = {"ok": 0, "tool": 2, "mismatch": 3, "error": 4, "skip": 5, "changes": 6}


def subprocess_check(opts):
    """A check(case) -> kind that runs the case in a child (for crashes)."""
    def check(case):
        d = tempfile.mkdtemp(prefix="colstore-fuzz-replay-")
        path = os.path.join(d, "case.pkl")
        with open(path, "wb") as f:
            pickle.dump(case, f)
        try:
            p = subprocess.run([cstest.PYTHON, os.path.abspath(__file__), "--replay-file", path, "--module",
                                opts.module], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120,
                               env=child_env(opts))
            if p.returncode < 0:
                return "crash"
            return {c: k for k, c in REPLAY_CODES.items()}.get(p.returncode, "abort")
        except subprocess.TimeoutExpired:
            return "hang"
        finally:
            shutil.rmtree(d, ignore_errors=True)
    return check


def child_env(opts):
    env = dict(os.environ)
    env["COLSTORE_MODULE"] = opts.module
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def shrink_and_report(case, kind, check, opts, log):
    t0 = time.monotonic()
    again = check(case)
    if again != kind:
        log("NOT REPRODUCED on a fresh build (%s): the failure depends on what this connection did before "
            "(see above); not shrunk" % again)
        return case
    sh = Shrinker(check, kind, opts.shrink_seconds, log)
    small = sh.run(case)
    script = repro_script(small, opts.module)
    log("shrunk in %.1f s (%d tries) to: %s" % (time.monotonic() - t0, sh.tries, "; ".join(
        "%s %d rows" % (t.cs_name, t.n) for t in small.tables.values())))
    log("minimal reproduction (python):\n" + "-" * 78 + "\n" + script + "-" * 78)
    if opts.out:
        os.makedirs(opts.out, exist_ok=True)
        path = os.path.join(opts.out, "fuzz-%d-%d-%d-%s.py" % (case.seed, case.round_no, case.query_no, kind))
        with open(path, "w") as f:
            f.write(script)
        log("written to %s" % path)
    return small


def apply_appends(con, d, full, q):
    """Commits the rows of every table whose append comes before query q
    (from this connection, or from another one that must be seen)."""
    for t in full.values():
        if t.late and t.late[1] == q:
            store, mirror = append_actions(t, t.late[0], attach=t.late[2])
            if t.late[2]:
                other = connect()
                try:
                    run_actions(other, store, d)
                finally:
                    other.close()
            else:
                run_actions(con, store, d)
            run_actions(con, mirror, d)


def count_query(key):
    """SELECT count(*) over table key: the query of a failed DELETE."""
    s = Select()
    s.items, s.frm, s.agg = [Leaf("count(*)")], [Ref("table", key.lower() + "1", key=key)], True
    return s


# ------------------------------------------------------- selection rounds
#
# Some rounds write through _rows and _mask instead of querying (issue 20:
# an UPDATE through a selection was refused, and nothing here wrote through
# one but DELETE).  Such a round builds the round's tables as any other,
# takes one that can be written (not a dataset), and runs a random sequence
# of UPDATEs and DELETEs whose WHERE is a selection (repeated, negative,
# deleted and record-edge positions, or a mask) ANDed with rowid ranges,
# one or two rowid IN lists (literal, IN (SELECT ...)), a WHERE leaf drawn
# as for queries, and sometimes more than 32 other terms; inside
# transactions and savepoints too.  The mirror names the same positions
# with rowid IN, so the two must report the same changes() and then hold
# the same rows; reads of a _rows selection beside IN lists are compared
# in BLOB order between the writes.  A position out of range or a mask of
# the wrong length must fail with the error a SELECT gives and change
# nothing.  The table model (exps) is not updated, so these rounds run no
# tree queries: the mirror is the reference.  Everything is drawn from
# (seed, round), so `--seed S --start-round R` runs the failing round
# first; a failure prints every statement of the round so far.

P_DML_ROUND = 0.15
DML_FULL_COMPARE = 30000   # rows: above, a write compares the rows it named and the count


def dml_round_drawn(seed, round_no, opts):
    """Whether round round_no is a selection round (its own stream)."""
    return not opts.self_test and random.Random("fuzz_sql dml %d/%d" % (seed, round_no)).random() < P_DML_ROUND


class DmlRound:
    """One selection round's statements on colstore table t and its mirror."""

    def __init__(self, con, t, rng, seed, round_no):
        self.con, self.t, self.rng, self.seed, self.round_no = con, t, rng, seed, round_no
        self.n = json.loads(con.execute("SELECT colstore_info(?)", (t.cs_name,)).fetchone()[0])["positions"]
        self.cols = ", ".join(c.name for c in t.cols)
        self.log = []             # the statements run, for the report
        self.writes = self.reads = 0
        self.savepoints = []

    def run(self, sql, params):
        self.log.append("%s  %r" % (sql, params))
        return self.con.execute(sql, params)

    def fail(self, step, detail):
        raise AssertionError("SELECTION DML FAILURE: seed %d round %d step %d (table %s): %s\n"
                             "rerun: fuzz_sql.py --seed %d --start-round %d --no-fork\nstatements:\n  %s" % (
                                 self.seed, self.round_no, step, self.t.describe(), detail, self.seed, self.round_no,
                                 clip("\n  ".join(self.log[-60:]), 12000)))

    def where(self, params, nat_params):
        """(colstore WHERE, native WHERE, positions, expected error code):
        the selection, what is ANDed beside it, in a random order."""
        rng, t = self.rng, self.t
        term, blob, ps = cstest.draw_selection(rng, self.n)
        expect = None
        if rng.random() < 0.05:     # a bad selection: the SELECT's error, nothing changed
            if term.startswith("_mask"):
                blob, expect = blob[:-1] if blob else b"\x01", "SQLITE_MISMATCH"
            else:
                blob += struct.pack("<q", rng.choice([self.n, -self.n - 1, 2**62]))
                expect = "SQLITE_RANGE"
        params["sel"], nat_params["ps"] = blob, json.dumps(ps)
        gen = Gen(rng, {"T": t, "U": t}, [])
        gen.params = params        # named p0, p1 ...: beside the round's own names
        sc = base_scope("d", t)
        others = []
        beside = cstest.draw_beside(rng, ps, mirror_cols=False)
        if beside:
            others.append(beside)
        # (a WHERE leaf may be false without reading the table, `c IN ()`:
        # SQLite then never hands the selection over, so not beside a bad one)
        if rng.random() < 0.4 and not expect:
            others.append(Render({}, {}).tree(gen.atom([sc], [], 2)))
        if rng.random() < 0.15 and not expect:     # the selection past constraint 31
            others = [Render({}, {}).tree(gen.wide_atom(sc)) for _ in range(rng.randint(33, 38))] + others
        at = rng.randint(0, len(others))
        cs = others[:at] + [term.replace("?", ":sel")] + others[at:]
        nat = ["d.rowid IN (SELECT value FROM json_each(:ps))"] + others
        for k, v in params.items():
            if k != "sel":
                nat_params[k] = v
        return " AND ".join("(%s)" % x for x in cs), " AND ".join("(%s)" % x for x in nat), ps, expect

    def sets(self, params):
        """A SET list of one to three columns: NULL, a value the column
        holds (stored exactly alike on both sides), itself, or a CASE."""
        rng, t = self.rng, self.t
        out = []
        for c in rng.sample(range(len(t.cols)), rng.randint(1, min(3, len(t.cols)))):
            col = t.cols[c]
            vals = t.values(c)
            name = "sv%d" % len(out)
            forms = ["{c}"] + (["NULL"] if not col.notnull else [])
            if vals:
                params[name] = rng.choice(vals)
                forms += [":%s" % name] * 3 + ["CASE WHEN d.rowid %% 2 = 0 THEN :%s ELSE {c} END" % name]
            out.append("%s = %s" % (col.name, rng.choice(forms).format(c=col.name)))
        return ", ".join(out)

    def write(self, step):
        rng, t = self.rng, self.t
        params, nat_params = {}, {}
        update = rng.random() < 0.7
        sets = self.sets(params) if update else None
        w_cs, w_nat, ps, expect = self.where(params, nat_params)
        head = "UPDATE %s AS d SET %s" if update else "DELETE FROM %s AS d"
        cs_sql = (head % ((t.cs_name, sets) if update else (t.cs_name,))) + " WHERE " + w_cs
        nat_sql = (head % ((t.nat_name, sets) if update else (t.nat_name,))) + " WHERE " + w_nat
        got = want = None
        try:
            got = self.run(cs_sql, params).rowcount
        except sqlite3.Error as e:
            got = e
        if expect:
            if not isinstance(got, sqlite3.Error) or getattr(got, "sqlite_errorname", "") != expect or \
                    not str(got).startswith("colstore:"):
                self.fail(step, "%s\nwith a bad selection gave %r, expected a colstore: %s error" % (cs_sql, got, expect))
            return ps
        try:
            want = self.run(nat_sql, nat_params).rowcount
        except sqlite3.Error as e:
            want = e
        if isinstance(got, sqlite3.Error) != isinstance(want, sqlite3.Error) or \
                (not isinstance(got, sqlite3.Error) and got != want):
            self.fail(step, "%s\n  colstore: %r\n  native:   %r (%s)" % (cs_sql, got, want, nat_sql))
        self.writes += 1
        return ps

    def compare(self, step, ps, what):
        cs, nat = self.t.cs_name, self.t.nat_name
        if self.t.n <= DML_FULL_COMPARE:
            q, params = "SELECT rowid, %s FROM %%s ORDER BY rowid" % self.cols, ()
        else:
            q = "SELECT rowid, %s FROM %%s WHERE rowid IN (SELECT value FROM json_each(?)) ORDER BY rowid" % self.cols
            params = (json.dumps(ps),)
            a, b = (self.con.execute("SELECT count(*) FROM %s" % x).fetchone() for x in (cs, nat))
            if a != b:
                self.fail(step, "after %s: %s rows on colstore, %s on native" % (what, a, b))
        got, want = self.con.execute(q % cs, params).fetchall(), self.con.execute(q % nat, params).fetchall()
        if not same_rows(want, got, True):
            self.fail(step, "after %s the tables differ:\n%s" % (what, diff_text(want, got, True)))

    def read(self, step):
        """A _rows selection beside IN lists (or a mask), read in BLOB order."""
        rng, t = self.rng, self.t
        term, blob, ps = cstest.draw_selection(rng, self.n)
        beside = cstest.draw_beside(rng, ps, mirror_cols=False) or "1"
        got = self.con.execute("SELECT rowid, %s FROM %s WHERE %s AND (%s)" % (self.cols, t.cs_name, term, beside),
                               (blob,)).fetchall()
        if term.startswith("_rows"):
            want = self.con.execute(
                "SELECT m.rowid, %s FROM json_each(?) AS j CROSS JOIN %s AS m ON m.rowid = j.value WHERE %s "
                "ORDER BY j.key" % (", ".join("m." + c.name for c in t.cols), t.nat_name, beside.replace("rowid", "m.rowid")),
                (json.dumps(ps),)).fetchall()
        else:
            want = self.con.execute("SELECT rowid, %s FROM %s WHERE rowid IN (SELECT value FROM json_each(?)) AND (%s)"
                                    % (self.cols, t.nat_name, beside), (json.dumps(ps),)).fetchall()
        ordered = term.startswith("_rows")
        if not same_rows(want, got, ordered):
            self.fail(step, "SELECT ... WHERE %s AND (%s), positions %r:\n%s" % (term, beside, ps[:50],
                                                                                 diff_text(want, got, ordered)))
        self.reads += 1

    def step(self, step):
        rng, con = self.rng, self.con
        r = rng.random()
        if r < 0.5:
            ps = self.write(step)
            self.compare(step, ps, "the write")
        elif r < 0.8:
            self.read(step)
        else:
            op = rng.choice(["begin", "savepoint", "rollback_to", "release", "commit", "rollback"])
            if op == "begin" and not con.in_transaction:
                self.run("BEGIN", ())
            elif op == "savepoint":
                self.savepoints.append("sp%d" % step)
                self.run("SAVEPOINT " + self.savepoints[-1], ())
            elif op == "rollback_to" and self.savepoints:
                self.run("ROLLBACK TO " + rng.choice(self.savepoints), ())
            elif op == "release" and self.savepoints:
                i = rng.randrange(len(self.savepoints))
                self.run("RELEASE " + self.savepoints[i], ())
                del self.savepoints[i:]
            elif op in ("commit", "rollback") and con.in_transaction:
                self.run(op.upper(), ())
                self.savepoints.clear()
            else:
                return
            self.compare(step, [], op)


class Fuzzer:
    """The loop's state: options, counters, how many failures were shrunk."""

    def __init__(self, opts, log):
        self.opts, self.log = opts, log
        self.stats = Stats()
        self.n_shrunk = 0

    def judge(self, con, case, note=""):
        """Runs one case and books its outcome; True: stop the run."""
        opts, stats, log = self.opts, self.stats, self.log
        try:
            out = check_query(con, case)
        except Exception:   # the tool's own bug: say so, keep fuzzing
            import traceback
            log("TOOL ERROR: seed %d round %d query %d%s\n%s" % (opts.seed, case.round_no, case.query_no, note,
                                                                 traceback.format_exc()))
            stats.failures.append((case.round_no, case.query_no, "tool", "tool error"))
            return False
        stats.queries += 1
        stats.on_deleted += any(case.tables[k].dels for k in case.keys())
        if out.kind in ("skip", "slow"):
            stats.skipped += 1
            if out.kind == "slow":
                stats.slow += 1
                log("SLOW: seed %d round %d query %d%s (%s): %s\n  colstore query: %s" % (
                    opts.seed, case.round_no, case.query_no, note, out.variant, out.detail, out.sql[:2000]))
            return False
        stats.nonempty += out.n_rows > 0
        stats.rows += out.n_rows
        if out.kind not in ("mismatch", "error"):
            return False
        return self.report(case, out, note)

    def report(self, case, out, note):
        """A failure: described, booked and shrunk; True: stop the run."""
        opts, log = self.opts, self.log
        case.only = out.variant
        log(describe_failure(case, out, opts) + note)
        self.stats.failures.append((case.round_no, case.query_no, out.kind, out.detail.split("\n")[0]))
        if self.n_shrunk < opts.max_shrinks:
            self.n_shrunk += 1
            shrink_and_report(case, out.kind, in_process_check(opts), opts, log)
        return opts.stop_on_failure

    def after_change(self, con, round_no, q, config, tables, recent, what):
        """After the tables changed before query q (the build, an append,
        the end of pending deletions): their contents, then the last
        queries again, whose statements python reuses, prepared (and
        planned) before the change; True: stop."""
        opts, stats, log = self.opts, self.stats, self.log
        for p in ([] if opts.self_test else check_contents(con, tables)):
            log("CONTENT: seed %d round %d after %s, before query %d: %s" % (opts.seed, round_no, what, q, p))
            stats.failures.append((round_no, q, "content", p))
        for k, query, params in recent:
            note = "\n(query %d of the round run again after %s: its statement was prepared before)" % (k, what)
            if self.judge(con, Case(opts.seed, round_no, q, config, tables, query, params), note):
                return True
        return False

    def end_pending(self, con, round_no, q, config, full, tables, recent):
        """Ends the round's pending deletions before query q, then compares
        again; (the tables after it, stop the run?), tables None when the
        end failed (the round cannot go on)."""
        ending = pending_end(tables)
        try:
            con.execute(ending)
        except sqlite3.Error as e:
            self.log("%s FAILURE: seed %d round %d before query %d: %s: %s" % (
                ending, self.opts.seed, round_no, q, getattr(e, "sqlite_errorname", ""), e))
            self.stats.failures.append((round_no, q, "build", str(e)))
            return None, False
        tables = visible(full, q)
        return tables, self.after_change(con, round_no, q, config, tables, recent,
                                         "the pending deletions ended with " + ending)

    def dml_round(self, round_no, end):
        """A selection round (DmlRound); None when the round's tables
        cannot be written (datasets, empty): it is then a query round."""
        opts, stats, log = self.opts, self.stats, self.log
        rt = self.__dict__.setdefault("rt", Roundtrip())
        config, full = draw_round(opts.seed, round_no, opts, rt)
        tables = visible(full, 0)
        keys = [k for k in ("T", "U") if tables[k].build != "dataset" and tables[k].n]
        if not keys:
            return None
        rng = random.Random("fuzz_sql dml steps %d/%d" % (opts.seed, round_no))
        d = tempfile.mkdtemp(prefix="colstore-fuzz-")
        con = connect()
        try:
            beat("%d -2" % round_no)
            try:
                build_case(con, d, config, tables)
                if con.in_transaction:
                    con.execute("COMMIT")   # pending deletions: both sides had them
            except (sqlite3.Error, DeleteMismatch) as e:
                log("BUILD FAILURE: seed %d round %d (a selection round): %s" % (opts.seed, round_no, e))
                stats.failures.append((round_no, -2, "build", str(e)))
                return False
            dr = DmlRound(con, tables[rng.choice(keys)], rng, opts.seed, round_no)
            try:
                for k in range(rng.randint(15, 45)):
                    if end and time.monotonic() > end:
                        break
                    beat("%d -2 %d" % (round_no, k))
                    dr.step(k)
                if con.in_transaction:
                    dr.run("COMMIT", ())
                dr.compare(-1, [], "the last COMMIT")
                fresh = connect()   # the file as a new connection reads it
                fresh.execute("CREATE VIRTUAL TABLE %s USING colstore('%s')" % (
                    dr.t.cs_name, store_path(dr.t, 0).replace("%DIR%", d)))
                got = fresh.execute("SELECT rowid, %s FROM %s ORDER BY rowid" % (dr.cols, dr.t.cs_name)).fetchall()
                fresh.close()
                want = con.execute("SELECT rowid, %s FROM %s ORDER BY rowid" % (dr.cols, dr.t.nat_name)).fetchall()
                if not same_rows(want, got, True):
                    dr.fail(-1, "reopened, the store differs:\n%s" % diff_text(want, got, True))
            except AssertionError as e:
                log(str(e))
                stats.failures.append((round_no, -2, "dml", str(e).split("\n")[0]))
                return opts.stop_on_failure
            except sqlite3.Error as e:   # a statement the round did not expect to fail
                log("SELECTION DML ERROR: seed %d round %d: %s: %s\nstatements:\n  %s" % (
                    opts.seed, round_no, getattr(e, "sqlite_errorname", ""), e, clip("\n  ".join(dr.log[-60:]), 12000)))
                stats.failures.append((round_no, -2, "dml", str(e)))
                return opts.stop_on_failure
            finally:
                stats.dml_rounds += 1
                stats.dml_writes += dr.writes
                stats.dml_reads += dr.reads
        finally:
            con.close()
            shutil.rmtree(d, ignore_errors=True)
        return False

    def round(self, round_no, end):
        """One round: build (and delete), check the contents, run its
        queries; True: stop."""
        opts, stats, log = self.opts, self.stats, self.log
        if dml_round_drawn(opts.seed, round_no, opts):
            stop = self.dml_round(round_no, end)
            if stop is not None:
                return stop
        rt = self.__dict__.setdefault("rt", Roundtrip())
        config, full = draw_round(opts.seed, round_no, opts, rt)
        tables = visible(full, 0)
        d = tempfile.mkdtemp(prefix="colstore-fuzz-")
        con = connect()
        recent = []               # the last queries, run again after the tables changed
        try:
            beat("%d -1" % round_no)
            try:
                build_case(con, d, config, tables)
            except DeleteMismatch as e:
                # Reported and shrunk like a query's failure, with a query
                # of the table that deleted (--replay-round R --replay-query
                # -1 fails the same way, whatever query it draws).
                return self.report(Case(opts.seed, round_no, -1, config, tables, count_query(e.act[1]), {}),
                                   e.outcome(), "")
            except sqlite3.Error as e:
                log("BUILD FAILURE: seed %d round %d: %s: %s\n%s" % (
                    opts.seed, round_no, getattr(e, "sqlite_errorname", ""), e,
                    "\n".join("table " + t.describe() for t in tables.values())))
                stats.failures.append((round_no, -1, "build", str(e)))
                return False
            stats.rounds += 1
            stats.tables += 2
            count_auto_compacted(con, config, tables, stats)
            for t in tables.values():
                if t.dels:
                    stats.deleting[t.del_mode] = stats.deleting.get(t.del_mode, 0) + 1
                    if t.compact:
                        stats.deleting["compacted"] = stats.deleting.get("compacted", 0) + 1
                    stats.deletes += sum(len(steps) for _, steps in t.dels)
            if self.after_change(con, round_no, 0, config, tables, [], "the build"):
                return True
            for q in range(queries_in_round(opts.seed, round_no)):
                if (opts.queries and stats.queries >= opts.queries) or (end and time.monotonic() > end):
                    break
                beat("%d %d" % (round_no, q))
                if any(t.late and t.late[1] == q for t in full.values()):
                    tables = visible(full, q)
                    try:
                        apply_appends(con, d, full, q)
                    except sqlite3.Error as e:
                        log("APPEND FAILURE: seed %d round %d before query %d: %s: %s" % (
                            opts.seed, round_no, q, getattr(e, "sqlite_errorname", ""), e))
                        stats.failures.append((round_no, q, "build", str(e)))
                        return False
                    if self.after_change(con, round_no, q, config, tables, recent, "rows were appended"):
                        return True
                if pending_end(tables) and any(t.pending and t.pending[1] == q for t in full.values()):
                    tables, stop = self.end_pending(con, round_no, q, config, full, tables, recent)
                    if stop or tables is None:
                        return stop
                try:
                    query, params = draw_query(opts.seed, round_no, q, tables, opts)
                except Exception:   # the tool's own bug: say so, keep fuzzing
                    import traceback
                    log("TOOL ERROR: seed %d round %d query %d\n%s" % (opts.seed, round_no, q, traceback.format_exc()))
                    stats.failures.append((round_no, q, "tool", "tool error"))
                    continue
                if self.judge(con, Case(opts.seed, round_no, q, config, tables, query, params)):
                    return True
                recent = (recent + [(q, query, params)])[-5:]
            if pending_end(tables):
                # The budget ran out inside the pending transaction: end it
                # anyway, so that every such round compares after its end.
                q_end = max(t.pending[1] for t in full.values() if t.pending)
                tables, stop = self.end_pending(con, round_no, q_end, config, full, tables, recent)
                if stop or tables is None:
                    return stop
        finally:
            con.close()
            shutil.rmtree(d, ignore_errors=True)
        if opts.verbose:
            log("round %d: %s | %s" % (round_no, tables["T"].describe(), stats.line()))
        return False


def fuzz(opts, log=print):
    """Runs rounds until the time or query budget is spent; returns Stats."""
    # Kernels take their threads even while other processes (this one's
    # parent, a second fuzzer) keep the processors busy: read once, at the
    # first kernel, so set before any query.
    os.environ.setdefault("COLSTORE_LOAD_AWARE", "0")
    PROGRESS["path"] = opts.progress
    start = time.monotonic()
    end = start + opts.minutes * 60 if opts.minutes else None
    fz = Fuzzer(opts, log)
    round_no = opts.start_round
    while not ((end and time.monotonic() > end) or (opts.queries and fz.stats.queries >= opts.queries)):
        if fz.round(round_no, end):
            break
        round_no += 1
    fz.stats.seconds = time.monotonic() - start
    beat("done")   # a supervising parent: this exit is no crash, whatever its status
    return fz.stats


def replay_file(opts):
    """--replay-file: build a pickled case, run its query; the exit code says how it went."""
    with open(opts.replay_file, "rb") as f:
        case = pickle.load(f)
    out = replay(case, "colstore-fuzz-replay-")
    print(out.kind, out.detail)
    return REPLAY_CODES[out.kind]


def rebuild_case(opts, round_no, query_no):
    config, full = draw_round(opts.seed, round_no, opts, Roundtrip())
    tables = visible(full, query_no)
    query, params = draw_query(opts.seed, round_no, query_no, tables, opts)
    return Case(opts.seed, round_no, query_no, config, tables, query, params)


def supervise(opts):
    """Runs fuzz() in a child; a crash or a hang is rebuilt, shrunk and reported."""
    t_end = time.monotonic() + opts.minutes * 60 if opts.minutes else None
    work = tempfile.mkdtemp(prefix="colstore-fuzz-sup-")
    progress = os.path.join(work, "progress")
    start_round = opts.start_round
    crashes = 0
    rc = 0
    try:
        while True:
            left = (t_end - time.monotonic()) / 60 if t_end else 0
            if t_end and left <= 0.05:
                break
            argv = [cstest.PYTHON, os.path.abspath(__file__), "--no-fork", "--seed", str(opts.seed),
                    "--module", opts.module, "--start-round", str(start_round), "--progress", progress,
                    "--max-shrinks", str(opts.max_shrinks), "--shrink-seconds", str(opts.shrink_seconds)]
            argv += ["--minutes", "%.3f" % left] if t_end else []
            argv += ["--queries", str(opts.queries)] if opts.queries else []
            argv += [a for s in opts.skip for a in ("--skip", s)]
            argv += (["--out", opts.out] if opts.out else []) + (["--verbose"] if opts.verbose else [])
            argv += (["--small"] if opts.small else []) + (
                ["--self-test" + ("-delete" if opts.self_test == "delete" else "")] if opts.self_test else [])
            argv += ["--stop-on-failure"] if opts.stop_on_failure else []
            if os.path.exists(progress):
                os.unlink(progress)
            child = subprocess.Popen(argv, env=child_env(opts))
            last, last_change, hung = None, time.monotonic(), False
            while child.poll() is None:
                time.sleep(1)
                try:
                    with open(progress) as f:
                        now = f.read()
                except OSError:
                    now = None
                if now != last:
                    last, last_change = now, time.monotonic()
                elif time.monotonic() - last_change > opts.hang_seconds:
                    child.kill()   # our own child, by its process id
                    child.wait()
                    hung = True
                    break
            try:
                with open(progress) as f:
                    last = f.read()
            except OSError:
                pass
            code = child.returncode
            if not hung and last and last.startswith("done"):
                rc = max(rc, code)
                break
            if code in (-signal.SIGTERM, -signal.SIGINT):   # someone stopped it: no crash
                print("fuzz_sql: stopped (signal %d)" % -code)
                return 1
            # A crash (a signal), a hang (we killed it), or an abort (a
            # sanitizer's report exits with status 1).
            kind = "hang" if hung else "crash" if code < 0 else "abort"
            if not last or last.startswith("done"):
                print("fuzz_sql: the child failed before its first query (exit %s)" % code)
                return 2
            round_no, query_no = map(int, last.split()[:2])
            print("=" * 78)
            print("%s: seed %d, round %d, query %d (exit %s)" % (kind.upper(), opts.seed, round_no, query_no, code))
            if query_no == -2:   # a selection round: no query to shrink
                print("in a selection round (step %s); rerun: fuzz_sql.py --seed %d --start-round %d --no-fork" % (
                    (last.split() + ["?"])[2], opts.seed, round_no))
                rc, crashes, start_round = 1, crashes + 1, round_no + 1
                if crashes >= 10:
                    break
                continue
            case = rebuild_case(opts, round_no, query_no)
            check = subprocess_check(opts)
            again = check(case)
            if again not in ("crash", "hang", "abort"):
                print("not reproduced in a fresh process (%s); the case:" % again)
                print("\n".join("table " + t.describe() for t in case.tables.values()))
                print("query: %s" % render(case, {"T": "colstore", "U": "colstore"})[0])
            else:
                print("query: %s" % render(case, {"T": "colstore", "U": "colstore"})[0])
                shrink_and_report(case, again, check, opts, print)
            rc = 1
            crashes += 1
            if crashes >= 10:
                break
            start_round = round_no + 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return rc


def parse_args(argv):
    p = argparse.ArgumentParser(description="randomized differential tester: colstore against native SQLite")
    p.add_argument("--seed", type=int, default=None, help="default: a random seed, printed")
    p.add_argument("--minutes", type=float, default=None, help="time budget (default 5 unless --queries)")
    p.add_argument("--queries", type=int, default=0, help="stop after this many queries")
    p.add_argument("--module", default=cstest.MODULE, help="the colstore module, without .so")
    p.add_argument("--skip", action="append", default=[], choices=ALL_SHAPES, help="skip a known bug's shape")
    p.add_argument("--skip-known", action="store_true", help="skip every shape in KNOWN_SHAPES")
    p.add_argument("--self-test", action="store_const", const="value", dest="self_test",
                   help="plant a wrong mirror value; the run must fail")
    p.add_argument("--self-test-delete", action="store_const", const="delete", dest="self_test",
                   help="delete one row from the mirror only; the run must fail")
    p.add_argument("--out", default=None, help="write each shrunk reproduction to this directory")
    p.add_argument("--max-shrinks", type=int, default=5, help="shrink at most this many failures")
    p.add_argument("--shrink-seconds", type=float, default=240)
    p.add_argument("--hang-seconds", type=float, default=120)
    p.add_argument("--stop-on-failure", action="store_true")
    p.add_argument("--small", action="store_true", help="no tables larger than a record")
    p.add_argument("--no-fork", action="store_true", help="fuzz in this process (no crash reports)")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--start-round", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--progress", default=None, help=argparse.SUPPRESS)
    p.add_argument("--replay-file", default=None, help=argparse.SUPPRESS)
    p.add_argument("--replay-round", type=int, default=None, help="rerun one failure: with --replay-query")
    p.add_argument("--replay-query", type=int, default=None)
    opts = p.parse_args(argv)
    if opts.skip_known:
        opts.skip = sorted(set(opts.skip + KNOWN_SHAPES))
    if opts.self_test:
        opts.stop_on_failure = True   # the planted value is the only failure wanted
    if opts.minutes is None and not opts.queries:
        opts.minutes = 5
    if opts.seed is None:
        opts.seed = random.SystemRandom().randrange(10**9)
    opts.module = os.path.abspath(opts.module)
    cstest.MODULE = opts.module
    return opts


def main(argv=None):
    try:
        return main_(argv)
    except Exception:
        import traceback
        traceback.print_exc()
        beat("done (the tool failed)")
        return 2


def main_(argv=None):
    opts = parse_args(sys.argv[1:] if argv is None else argv)
    if opts.replay_file:
        return replay_file(opts)
    if opts.replay_round is not None:
        case = rebuild_case(opts, opts.replay_round, opts.replay_query or 0)
        out = replay(case, "colstore-fuzz-")
        if out.kind in ("mismatch", "error", "changes"):
            case.only = out.variant
            print(describe_failure(case, out, opts))
            shrink_and_report(case, out.kind, in_process_check(opts), opts, print)
            return 1
        print("round %d query %d: %s" % (opts.replay_round, opts.replay_query or 0, out.kind))
        return 0
    if not opts.progress:
        print("fuzz_sql: seed %d, %s, module %s%s" % (
            opts.seed, ("%g minutes" % opts.minutes) if opts.minutes else "%d queries" % opts.queries, opts.module,
            (", skipping " + ",".join(opts.skip)) if opts.skip else ""), flush=True)
    if not opts.no_fork:
        return supervise(opts)
    stats = fuzz(opts, log=lambda s: print(s, flush=True))
    print("fuzz_sql: seed %d: %s in %.0f s" % (opts.seed, stats.line(), getattr(stats, "seconds", 0)), flush=True)
    if opts.self_test:
        what = "the wrong mirror value" if opts.self_test == "value" else "the row deleted from the mirror only"
        if stats.failures:
            print("fuzz_sql: self-test passed: %s was found" % what)
            return 0
        print("fuzz_sql: self-test FAILED: %s went unnoticed" % what)
        return 1
    if stats.queries >= 200 and stats.nonempty < 0.3 * (stats.queries - stats.skipped):
        print("fuzz_sql: too few queries returned rows (%d of %d): the comparison is too weak"
              % (stats.nonempty, stats.queries))
        return 1
    return 1 if stats.failures else 0


if __name__ == "__main__":
    sys.exit(main())
