"""cstest - what colstore's SQL tests share.

The SQL suites (tests/sql/test_*.py) load the real build/colstore.so into
/usr/bin/python3's sqlite3 module, the way a user does, and check it against
the SQL reference (docs/sql.md).  This module holds the plumbing they
all need, so that each test file reads as a list of behaviours:

* where the module is (COLSTORE_MODULE, without the .so suffix, as ctest sets
  it; else <root>/build/colstore), whether this is a sanitizer run
  (COLSTORE_ASAN: sizes shrink), and where ../shared is;
* connect(): a connection in autocommit mode (isolation_level=None, so the
  tests, not Python, say where transactions begin and end) with the module
  loaded;
* StoreTest: a TestCase with a fresh temporary directory per test;
* canon()/canon_rows(): values made comparable bit for bit *and* by storage
  class: 1 and 1.0, 0.0 and -0.0, '1' and 1 all differ, which a plain ==
  would hide;
* Differ: runs one query template on a native SQLite table and on colstore
  tables holding the same rows and fails with the seed, the query, its
  parameters and the first differing rows;
* error helpers: catch an sqlite3.Error and check its code name (Python 3.11
  exposes sqlite_errorname) and its `colstore:` prefix.

It is named without the test_ prefix so ctest does not run it by itself.
"""
import json
import os
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODULE = os.environ.get("COLSTORE_MODULE") or os.path.join(ROOT, "build", "colstore")
SHARED = os.environ.get("COLSTORE_SHARED") or os.path.join(ROOT, "..", "shared")
ASAN = bool(os.environ.get("COLSTORE_ASAN"))
PYTHON = "/usr/bin/python3"

# The record size of the current writer; tests that want several records
# write more rows than this.
RECORD_ROWS = 65536


def scaled(normal, asan):
    """A size for this run: smaller under the sanitizers."""
    return asan if ASAN else normal


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def write_bytes(path, data):
    with open(path, "wb") as f:
        f.write(data)


def damage_copy(tc, src, dst, needle, bit=0x10, byte=0):
    """Copies src to dst with one bit flipped in needle's byte `byte`;
    needle must occur exactly once in src (tc asserts it)."""
    data = bytearray(read_bytes(src))
    at = data.find(needle)
    tc.assertGreater(at, 0)
    tc.assertEqual(data.find(needle, at + 1), -1)
    data[at + byte] ^= bit
    write_bytes(dst, bytes(data))
    return dst


def load(con):
    con.enable_load_extension(True)
    con.load_extension(MODULE)
    con.enable_load_extension(False)
    return con


def connect(path=":memory:", **kw):
    """A connection with colstore loaded, in autocommit mode."""
    kw.setdefault("isolation_level", None)
    return load(sqlite3.connect(path, **kw))


def sql_literal(v):
    """v as an SQL literal that SQLite reads back as the same value."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if v != v:
            return "NULL"
        if v in (float("inf"), float("-inf")):
            return "9e999" if v > 0 else "-9e999"
        return repr(v)
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, (bytes, bytearray)):
        return "x'" + bytes(v).hex() + "'"
    raise TypeError(type(v))


# ----------------------------------------------------------- comparison

def canon(v):
    """A value as (storage class, exact payload); floats by their bits."""
    if v is None:
        return ("null",)
    if isinstance(v, int):
        return ("integer", v)
    if isinstance(v, float):
        return ("real", struct.pack("<d", v).hex())
    if isinstance(v, str):
        return ("text", v)
    if isinstance(v, (bytes, bytearray)):
        return ("blob", bytes(v))
    raise TypeError(type(v))


def canon_rows(rows, ordered):
    out = [tuple(canon(v) for v in r) for r in rows]
    return out if ordered else sorted(out)


def show(v):
    return repr(v) if not isinstance(v, float) else "%r(%s)" % (v, struct.pack("<d", v).hex())


def run_query(con, sql, params=()):
    """(rows, None) or (None, 'ErrorName: message')."""
    try:
        return con.execute(sql, params).fetchall(), None
    except sqlite3.Error as e:
        return None, "%s: %s" % (getattr(e, "sqlite_errorname", type(e).__name__), e)


class Differ:
    """Runs query templates against a native and a colstore mapping.

    A template names tables in braces ({T}, {U}, ...); `native` maps those
    names to native tables, each mapping in `variants` to colstore tables
    (or, for a mixed join, partly to native ones).  Rows are compared as
    canon() tuples, sorted unless the query's order is defined.
    """

    def __init__(self, tc, con, native, variants, seed):
        self.tc, self.con, self.native, self.variants, self.seed = tc, con, native, variants, seed
        self.n_queries = 0

    def same(self, template, params=(), ordered=False, variants=None, native=None):
        native = native or self.native
        want_sql = template.format(**native)
        want, want_err = run_query(self.con, want_sql, params)
        self.n_queries += 1
        n = 0
        for name, mapping in (variants or self.variants):
            sql = template.format(**mapping)
            got, got_err = run_query(self.con, sql, params)
            self.n_queries += 1
            if want_err or got_err:
                if want_err != got_err:
                    self.tc.fail(self._msg(name, sql, params, "native: %s\ncolstore: %s" % (want_err, got_err)))
                continue
            # repr() of a row tells 1 from 1.0, 0.0 from -0.0 and '1' from 1,
            # round-trips every double, and runs in C: a fast exact key.
            a, b = [repr(r) for r in want], [repr(r) for r in got]
            if not ordered:
                a.sort()
                b.sort()
            if a != b:
                a, b = canon_rows(want, ordered), canon_rows(got, ordered)
                self.tc.fail(self._msg(name, sql, params, self._diff(want, got, a, b, ordered)))
            n = len(want)
        return n

    def _msg(self, variant, sql, params, detail):
        return "seed %s, variant %s\nquery: %s\nparams: %s\n%s" % (
            self.seed, variant, sql, ", ".join(show(p) for p in params) if params else "()", detail)

    @staticmethod
    def _diff(want, got, a, b, ordered):
        lines = ["native %d rows, colstore %d rows (%s)" % (len(a), len(b), "ordered" if ordered else "sorted")]
        shown = 0
        for i in range(max(len(a), len(b))):
            x = a[i] if i < len(a) else None
            y = b[i] if i < len(b) else None
            if x != y:
                lines.append("  row %d: native %s\n          colstore %s" % (i, x, y))
                shown += 1
                if shown >= 5:
                    break
        return "\n".join(lines)


# --------------------------------------------------------------- tests

class StoreTest(unittest.TestCase):
    """A TestCase with a temporary directory and connections closed after."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="colstore-sql-")
        self._cons = []

    def tearDown(self):
        for c in self._cons:
            try:
                c.close()
            except sqlite3.Error:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def connect(self, name=":memory:", **kw):
        con = connect(name if name == ":memory:" else self.path(name), **kw)
        self._cons.append(con)
        return con

    # -- errors

    def assertSqlError(self, con, sql, params=(), code="SQLITE_ERROR", contains=(), prefix="colstore:"):
        """Runs sql, which must fail with error name `code`; returns the text."""
        try:
            con.execute(sql, params).fetchall()
        except sqlite3.Error as e:
            msg = str(e)
            name = getattr(e, "sqlite_errorname", None)
            if code is not None:
                self.assertEqual(name, code, "query %r failed with %s: %s, expected %s" % (sql, name, msg, code))
            if prefix is not None:
                self.assertTrue(msg.startswith(prefix), "message of %r does not start %r: %r" % (sql, prefix, msg))
            for c in contains:
                self.assertIn(c, msg, "message of %r does not name %r" % (sql, c))
            return msg
        self.fail("query %r succeeded; expected %s" % (sql, code))

    # -- state

    def state(self, con, table, path=None):
        """What a failed write must not change: rows (with rowid) and file bytes."""
        rows = canon_rows(con.execute('SELECT rowid, * FROM "%s" ORDER BY rowid' % table).fetchall(), True)
        data = read_bytes(path) if path else None
        return rows, data

    def assertStateUnchanged(self, before, con, table, path=None, what=""):
        rows, data = self.state(con, table, path)
        self.assertEqual(len(rows), len(before[0]), "row count changed after %s" % what)
        self.assertEqual(rows, before[0], "committed rows changed after %s" % what)
        if path:
            self.assertTrue(data == before[1], "store file bytes changed after %s" % what)

    def after_sigkill(self, script, path, seconds):
        """Runs `script` (python source; argv[1] = path) in a child that
        prints "ready" and then writes until it is killed with SIGKILL after
        `seconds`; returns a fresh connection with table t over path, whose
        colstore_verify must say ok."""
        import signal
        import subprocess
        import time
        child = subprocess.Popen([PYTHON, "-c", script, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=child_env())
        self.assertEqual(child.stdout.readline().strip(), "ready")
        time.sleep(seconds)
        child.send_signal(signal.SIGKILL)
        child.wait(60)
        child.stdout.close()
        child.stderr.close()
        fresh = self.connect()
        fresh.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % path)
        self.assertEqual(fresh.execute("SELECT colstore_verify('t')").fetchone()[0], "ok")
        return fresh

    def info(self, con, path_or_table):
        return json.loads(con.execute("SELECT colstore_info(?)", (path_or_table,)).fetchone()[0])


class MirrorTest(StoreTest):
    """A StoreTest whose self.con holds a native table `n` and a colstore
    table `t` that are given the same statements: a template names the
    table as {}."""

    def both(self, sql, params=()):
        """Runs a write on both; they must report the same changes()."""
        a = self.con.execute(sql.format("n"), params).rowcount
        b = self.con.execute(sql.format("t"), params).rowcount
        self.assertEqual(a, b, sql)
        return b

    def same(self, sql, params=(), ordered=False):
        """Runs a query on both; the rows must be equal (as multisets unless ordered)."""
        want = self.con.execute(sql.format("n"), params).fetchall()
        got = self.con.execute(sql.format("t"), params).fetchall()
        if not ordered:
            want, got = sorted(want, key=repr), sorted(got, key=repr)
        self.assertEqual(got, want, sql)


# The battery the random mutation tests (DELETE, UPDATE, compaction) run
# after every step, on a native table n and a colstore table t of columns
# a INTEGER (0..999), f REAL and s TEXT (both with NULLs), mirrored.
MUTATION_QUERIES = [
    ("SELECT rowid, a, f, s FROM {}", False),
    ("SELECT count(*), sum(a), total(f), min(s), max(s) FROM {}", False),
    ("SELECT rowid FROM {} WHERE a > 700", False),
    ("SELECT rowid, a FROM {} WHERE f BETWEEN 10 AND 300 AND s <> 's1'", False),
    ("SELECT rowid FROM {} WHERE rowid IN (0, 1, 2, 50, 99, 100, 101, 149, 150, 151, 999)", False),
    ("SELECT rowid, a FROM {} ORDER BY rowid DESC LIMIT 17 OFFSET 5", True),
    ("SELECT rowid FROM {} LIMIT 9 OFFSET 40", True),
    ("SELECT rowid, f FROM {} ORDER BY f DESC, rowid LIMIT 12", True),
    ("SELECT a % 10, count(*), sum(f) FROM {} GROUP BY a % 10", False),
    ("SELECT s, count(*) FROM {} GROUP BY s", False),
    ("SELECT DISTINCT a % 7 FROM {}", False),
    ("SELECT rowid FROM {} WHERE rowid BETWEEN 40 AND 160 AND a < 500", False),
]


# -- selections drawn for the random tests (MutationMirror, fuzz_sql's
# selection rounds): _rows and _mask address positions for reads and writes
# alike, so a statement through one must do what `rowid IN` of the same
# positions does on a native table.

def draw_selection(rng, n, exact=True):
    """A _rows list (repeats, record edges, runs, and, when exact, negative
    positions) or, when exact, a _mask over n positions: (colstore term
    with one `?`, its BLOB, the positions it selects in BLOB order,
    negatives resolved).  Deleted positions are drawn like any other: they
    must select nothing."""
    if exact and rng.random() < 0.3:
        density = rng.choice([0.0, 0.01, 0.2, 0.9])
        on = [i for i in range(n) if rng.random() < density]
        mask = bytearray(n)
        for i in on:
            mask[i] = rng.choice([1, 7, 255])
        return "_mask = ?", bytes(mask), on
    k = rng.choice([0, 1, 3, 20, 100]) if n else 0
    style = rng.choice(["random", "sorted", "runs", "edges"])
    ps = [rng.randrange(n) for _ in range(k)]
    if style == "sorted":
        ps.sort()
    elif style == "runs" and k:
        a = rng.randrange(n)
        ps = list(range(a, min(n, a + k)))
    elif style == "edges" and k:
        ps = [rng.choice([0, n - 1, n // 2, min(n - 1, RECORD_ROWS - 1), min(n - 1, RECORD_ROWS)]) for _ in range(k)]
    ps += [rng.choice(ps) for _ in range(rng.choice([0, 0, 1, 5]))] if ps else []   # repeats
    neg = exact and rng.random() < 0.3
    blob_ps = [p - n if neg and rng.random() < 0.5 else p for p in ps]
    return "_rows = ?", b"".join(int(p).to_bytes(8, "little", signed=True) for p in blob_ps), ps


def draw_beside(rng, ps, mirror_cols=True):
    """A condition to AND beside a selection of positions ps (None: none):
    a rowid range, one or two rowid IN lists (literal, IN (SELECT ...)),
    a comparison of the MutationMirror columns (when mirror_cols), mostly
    naming rows of ps."""
    hit = lambda: ps[rng.randrange(len(ps))] if ps and rng.random() < 0.8 else rng.randrange(max(ps or [0]) + 2)
    lst = lambda: ", ".join(str(hit()) for _ in range(rng.choice([1, 3, 8, 30, 2 * len(ps) + 1])))
    r = rng.random()
    if r < 0.2:
        return None
    if r < 0.35:
        a, b = sorted([hit(), hit()])
        return "rowid BETWEEN %d AND %d" % (a, b)
    if r < 0.5:
        return "rowid IN (%s)" % lst()
    if r < 0.8:
        return "rowid IN (SELECT value FROM json_each('[%s]')) AND rowid IN (%s)" % (lst(), lst())
    if not mirror_cols:
        return "rowid IN (%s) AND rowid IN (SELECT value FROM json_each('[%s]'))" % (lst(), lst())
    return rng.choice(["a > %d" % rng.randint(0, 999), "s IS NOT NULL", "f < %r" % rng.uniform(0, 500),
                       "a %% 3 = 1 AND rowid IN (%s)" % lst()])


class MutationMirror:
    """The tables MUTATION_QUERIES read, made on con: a native n and a
    colstore t over path with columns a INTEGER, f REAL, s TEXT; insert()
    and run() give both the same random writes (drawn from rng), and the
    failures name seed."""

    def __init__(self, tc, con, path, rng, seed):
        self.tc, self.con, self.rng, self.seed = tc, con, rng, seed
        self.tx_inserts = False   # rows inserted by the open transaction (positions() is then unsure)
        con.execute("CREATE TABLE n (a INTEGER, f REAL, s TEXT)")
        con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', a INT32, f FLOAT64, s TEXT)" % path)

    def insert(self, k):
        """k random rows into t, then into n with the rowids colstore gave
        them (last_insert_rowid); returns the first one."""
        rng = self.rng
        vals = [(rng.randint(0, 999), rng.choice([None, rng.uniform(0, 500)]), rng.choice([None, "s%d" % rng.randint(0, 5)]))
                for _ in range(k)]
        self.tx_inserts = self.tx_inserts or self.con.in_transaction
        self.con.executemany("INSERT INTO t (a, f, s) VALUES (?, ?, ?)", vals)
        base = self.con.execute("SELECT last_insert_rowid()").fetchone()[0] - k + 1
        self.con.executemany("INSERT INTO n (rowid, a, f, s) VALUES (?, ?, ?, ?)", [(base + i,) + v for i, v in enumerate(vals)])
        return base

    def run(self, sql, params=()):
        """A write on both ({} the table); they must report the same changes()."""
        a = self.con.execute(sql.format("n"), params).rowcount
        b = self.con.execute(sql.format("t"), params).rowcount
        self.tc.assertEqual(a, b, "seed %d: %s %r" % (self.seed, sql, params))

    # -- selections: _rows and _mask address positions for reads and writes
    # alike (docs/sql.md "Writing"), so a write through one must change
    # what `rowid IN` of the same positions changes on the native table.

    def positions(self):
        """t's position count when it is certain, else None: inside a
        transaction that inserted rows, colstore_info counts only the
        committed ones."""
        if not self.con.in_transaction:
            self.tx_inserts = False
        if self.tx_inserts:
            return None
        return json.loads(self.con.execute("SELECT colstore_info('t')").fetchone()[0])["positions"]

    def draw_selection(self):
        """draw_selection over t's positions: all of them when their count
        is certain, else the committed ones, without negatives or masks."""
        n = self.positions()
        low = n if n is not None else json.loads(self.con.execute("SELECT colstore_info('t')").fetchone()[0])["positions"]
        return draw_selection(self.rng, low, exact=n is not None)

    def draw_beside(self, ps):
        return draw_beside(self.rng, ps)

    def run_selected(self, verb, params=()):
        """verb ('UPDATE {} SET ...' or 'DELETE FROM {}') WHERE a drawn
        selection (and a condition beside it) on t, WHERE rowid IN the same
        positions on n; the changes() must agree."""
        term, blob, ps = self.draw_selection()
        beside = self.draw_beside(ps)
        extra = " AND (%s)" % beside if beside else ""
        # the selection as the first or the last AND term
        where = term + extra if not beside or self.rng.random() < 0.5 else "(%s) AND %s" % (beside, term)
        cs = "%s WHERE %s" % (verb.format("t"), where)
        nat = "%s WHERE rowid IN (SELECT value FROM json_each(?))%s" % (verb.format("n"), extra)
        a = self.con.execute(nat, tuple(params) + (json.dumps(ps),)).rowcount
        b = self.con.execute(cs, tuple(params) + (blob,)).rowcount
        self.tc.assertEqual(b, a, "seed %d: %s %r, positions %r" % (self.seed, cs, params, ps))

    def check_selected_read(self, where):
        """A drawn _rows selection (with a condition beside it: IN lists
        above all) read on t in BLOB order equals n's rows at those
        positions in that order, repeats kept; a _mask, as a set."""
        term, blob, ps = self.draw_selection()
        beside = self.draw_beside(ps)
        extra = " AND (%s)" % beside if beside else ""
        got = self.con.execute("SELECT rowid, a, f, s FROM t WHERE %s%s" % (term, extra), (blob,)).fetchall()
        if term.startswith("_rows"):
            want = self.con.execute("SELECT n.rowid, a, f, s FROM json_each(?) AS j CROSS JOIN n ON n.rowid = j.value "
                                    "WHERE 1%s ORDER BY j.key" % extra.replace("rowid", "n.rowid"), (json.dumps(ps),)).fetchall()
        else:
            got = sorted(got, key=repr)
            want = sorted(self.con.execute("SELECT rowid, a, f, s FROM n WHERE rowid IN (SELECT value FROM json_each(?))%s"
                                           % extra, (json.dumps(ps),)).fetchall(), key=repr)
        self.tc.assertEqual(got, want, "seed %d %s: SELECT ... WHERE %s%s, positions %r" % (self.seed, where, term, extra, ps))


def assert_mirrored(tc, con, where, queries=MUTATION_QUERIES, other=None):
    """Every query gives the same rows on con's n and on t (of `other`, a
    second connection, when given), as multisets unless ordered."""
    for q, ordered in queries:
        want = con.execute(q.format("n")).fetchall()
        got = (other or con).execute(q.format("t")).fetchall()
        if not ordered:
            want, got = sorted(want, key=repr), sorted(got, key=repr)
        tc.assertEqual(got, want, "%s: %s" % (where, q))


def assert_reopened(tc, con, path, where):
    """A fresh connection's table over path holds n's rows with their rowids, and verifies."""
    fresh = connect()
    fresh.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % path)
    want = con.execute("SELECT rowid, a, f, s FROM n ORDER BY rowid").fetchall()
    tc.assertEqual(fresh.execute("SELECT rowid, * FROM t ORDER BY rowid").fetchall(), want, "%s: reopened" % where)
    tc.assertEqual(fresh.execute("SELECT colstore_verify('t')").fetchone()[0], "ok")
    fresh.close()


class NodeChild:
    """A node script as a test's oracle, one JSON request a line on stdin and
    one JSON answer a line on stdout, with its npm package installed into
    $BUILD/<client> once (test_parquet.py's DuckDB, test_arrow.py's
    apache-arrow).  Without node, npm or the package (no network), the test
    exits 77: SKIP."""

    def __init__(self, client, package, script):
        """package: one npm package name, or a list of them (the first is the
        one the ready line names)."""
        def skip(why):
            print("SKIP: %s" % why)
            sys.exit(77)

        packages = [package] if isinstance(package, str) else list(package)
        package = packages[0]
        if not shutil.which("node") or not shutil.which("npm"):
            skip("node or npm is not installed")
        cdir = os.path.join(os.path.dirname(os.path.abspath(MODULE)), client)
        os.makedirs(cdir, exist_ok=True)
        missing = [p for p in packages if not os.path.isdir(os.path.join(cdir, "node_modules", *p.split("/")))]
        if missing:
            if not os.path.exists(os.path.join(cdir, "package.json")):
                with open(os.path.join(cdir, "package.json"), "w") as f:
                    f.write('{"name": "colstore-%s", "private": true, "type": "module"}\n' % client.replace("_", "-"))
            try:
                r = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"] + missing,
                                   cwd=cdir, capture_output=True, text=True, timeout=300)
            except subprocess.TimeoutExpired:
                skip("npm install %s took over 300 s" % " ".join(missing))
            if r.returncode != 0:
                skip("npm install %s failed: %s" % (" ".join(missing), (r.stderr.strip().splitlines() or ["?"])[-1]))
        target = os.path.join(cdir, os.path.basename(script))
        shutil.copyfile(script, target)
        self.proc = subprocess.Popen(["node", target], cwd=cdir, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)
        line = self.proc.stdout.readline()
        if not line:
            skip("the %s child did not start" % package)
        self.ready = json.loads(line)
        self.version = self.ready["ready"]

    def ask(self, request):
        self.proc.stdin.write(json.dumps(request) + "\n")
        answer = json.loads(self.proc.stdout.readline())
        if "error" in answer:
            raise AssertionError("%s: %s\n%s" % (self.proc.args[-1], answer["error"], json.dumps(request)[:500]))
        return answer

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def child_env():
    """The environment for a /usr/bin/python3 child that imports cstest."""
    env = dict(os.environ)
    env["PYTHONPATH"] = HERE + os.pathsep + env.get("PYTHONPATH", "")
    env["COLSTORE_MODULE"] = MODULE
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


SKIP_EXIT = 77  # ctest's SKIP_RETURN_CODE for these tests (CMakeLists.txt)


class CommitReporter:
    """A child python process running script with args that prints "ready",
    then one integer a line, each once its COMMIT returned; a thread collects
    them into `values` as they come.  `ready` is its first line."""

    def __init__(self, script, *args):
        self.proc = subprocess.Popen([PYTHON, "-c", script] + [str(a) for a in args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=child_env())
        self.ready = self.proc.stdout.readline().strip()
        self.values = []
        self.thread = threading.Thread(target=lambda: self.values.extend(int(x) for x in self.proc.stdout), daemon=True)
        self.thread.start()

    def stop(self):
        """Kills the child (SIGKILL), collects what it printed; returns its stderr."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=60)
        self.thread.join(timeout=60)
        err = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return err


def main():
    """Runs the module's tests.  A file whose every test was skipped exits
    SKIP_EXIT, so that ctest reports it as skipped instead of passed."""
    prog = unittest.main(verbosity=2, exit=False)
    result = prog.result
    if not result.wasSuccessful():
        sys.exit(1)
    if result.testsRun and len(result.skipped) == result.testsRun:
        print("SKIPPED: every test of this file was skipped: %s" % "; ".join(sorted({r for _, r in result.skipped})))
        sys.exit(SKIP_EXIT)
    sys.exit(0)
