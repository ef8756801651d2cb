"""colstore_import of delimited text, as docs/sql.md ("Getting data in") and
SQL-CONTRACT.md ("Import and export") give it.

The randomized test is the heart: it draws columns of every kind the
typing rules tell apart (integers with signs and leading zeros, numbers in
every notation, huge integers, hex and NaN/inf that are text, Unicode text
with delimiters, quotes, CR/LF inside, empty strings and NULLs), writes
them as CSV with random quoting, delimiter, line ends, BOM, header, file
split and compression, and checks two things: Python's csv module reads
the files back as the strings drawn (so the files say what the test
thinks), and the store, read through a colstore table, holds exactly the
values the documented rules give for those strings, value by value and
storage class by storage class.  A failure prints the seed; COLSTORE_SEED
replays it.

The error tests check each `colstore:` message whole (file, line, value,
type) and that nothing was left behind: no store, no temporary file, or an
appended store byte-identical to before.
"""
import csv
import gzip
import io
import json
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
import unittest

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cstest  # noqa: E402

NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\Z")


def classify(s):
    """The documented grammar: ('int', v), ('float', v) or ('text', s)."""
    if not NUMBER.match(s):
        return ("text", s)
    if "." not in s and "e" not in s and "E" not in s:
        v = int(s)
        if -2 ** 63 <= v < 2 ** 63:
            return ("int", v)
    f = float(s)  # Python's float() is correctly rounded
    return ("float", 0.0 if f == 0 else f)


def expected_type(values):
    kinds = {classify(v)[0] for v in values if v is not None}
    if not kinds:
        return "TEXT"
    if kinds == {"int"}:
        return "INT64"
    if "text" not in kinds:
        return "FLOAT64"
    return "TEXT"


def typed(value, ctype):
    if value is None:
        return None
    kind, v = classify(value)
    if ctype == "INT64":
        return v
    if ctype == "FLOAT64":
        f = float(v)
        return 0.0 if f == 0 else f
    return value


UNICODE_BITS = ["é", "ß", "日本", "😀", "\u200b", "Ω", "a,b", 'say "hi"', "line\nbreak", "cr\r\nlf", "tab\there",
                "semi;colon", "pi|pe", " padded ", "", "x"]


def draw_column(rng, kind, n):
    null_rate = rng.choice([0, 0.1, 0.5])
    out = []
    for _ in range(n):
        if rng.random() < null_rate:
            out.append(None)
            continue
        if kind == "int":
            v = rng.choice([rng.randint(-10, 10), rng.randint(-2 ** 63, 2 ** 63 - 1), rng.randint(-1000, 1000)])
            s = str(v)
            r = rng.random()
            if r < 0.1 and v >= 0:
                s = "+" + s
            elif r < 0.2 and v >= 0:
                s = "00" + s
            elif r < 0.25:
                s = "-0"
            out.append(s)
        elif kind == "float":
            out.append(rng.choice([
                repr(rng.uniform(-1e6, 1e6)), "%.3f" % rng.uniform(-100, 100), str(rng.randint(-50, 50)),
                "%de%d" % (rng.randint(1, 9), rng.randint(-30, 30)), "-0.0", ".5", "1.", "+2.5E+3",
                repr(rng.random() * 10 ** rng.randint(-300, 300)), "%.17g" % rng.uniform(-1, 1),
                "123456789012345678901234567890"]))
        elif kind == "huge":
            out.append(rng.choice([str(rng.randint(0, 100)), str(2 ** 63 + rng.randint(0, 1000)), str(-2 ** 63 - 1)]))
        elif kind == "notnumber":
            out.append(rng.choice(["0x10", "NaN", "inf", "-inf", "Infinity", "1e", " 1", "1 ", "12", "3.5", "--1", "1,5"]))
        else:  # text
            k = rng.randint(0, 3)
            out.append("".join(rng.choice(UNICODE_BITS) for _ in range(k)))
    return out


def write_csv(rng, rows, header, delim, line_end, bom):
    """rows of strings or None; returns the text.  None is the empty
    unquoted field; '' is always quoted; other fields are quoted when they
    must be, or at random."""
    out = io.StringIO()
    if bom:
        out.write("\ufeff")
    specials = set(",\t;|\"\r\n")

    def field(v):
        if v is None:
            return ""
        if v == "" or any(ch in specials for ch in v) or rng.random() < 0.2:
            return '"' + v.replace('"', '""') + '"'
        return v

    if header is not None:
        out.write(delim.join(header) + line_end)
    for row in rows:
        out.write(delim.join(field(v) for v in row) + line_end)
    return out.getvalue()


def have_zstd():
    return shutil.which("zstd") is not None


class RandomImport(cstest.StoreTest):
    """Random CSVs against Python's csv module and the typing rules."""

    def test_random_files_value_by_value(self):
        seed = int(os.environ.get("COLSTORE_SEED") or random.randrange(1 << 30))
        rounds = cstest.scaled(25, 8)
        for round_no in range(rounds):
            rng = random.Random(seed * 1000 + round_no)
            try:
                self.one_round(rng, round_no)
            except (AssertionError, sqlite3.Error) as e:
                raise AssertionError("COLSTORE_SEED=%d round %d: %s" % (seed, round_no, e)) from None

    def one_round(self, rng, round_no):
        kinds = [rng.choice(["int", "float", "huge", "notnumber", "text", "text"]) for _ in range(rng.randint(1, 6))]
        n = rng.choice([0, 1, 5, 200, 3000])
        cols = [draw_column(rng, k, n) for k in kinds]
        rows = [[c[i] for c in cols] for i in range(n)]
        # A single column of NULLs writes blank lines, which hold no record.
        if len(kinds) == 1:
            rows = [r for r in rows if r[0] is not None]
            cols = [[r[0] for r in rows]]
        delim = rng.choice([",", "\t", ";", "|"])
        line_end = rng.choice(["\n", "\r\n"])
        with_header = rng.random() < 0.8
        names = ["col_%d_%s" % (i, k) for i, k in enumerate(kinds)]
        n_files = rng.randint(1, 3)
        compress = rng.choice(["", "", ".gz"] + ([".zst"] if have_zstd() else []))
        d = self.path("in%d" % round_no)
        os.mkdir(d)
        bounds = sorted(rng.randint(0, len(rows)) for _ in range(n_files - 1))
        pieces = [rows[a:b] for a, b in zip([0] + bounds, bounds + [len(rows)])]
        for f, piece in enumerate(pieces):
            text = write_csv(rng, piece, names if with_header else None, delim, line_end, rng.random() < 0.3)
            back = list(csv.reader(io.StringIO(text.lstrip("\ufeff"), newline=""), delimiter=delim))
            want_back = ([names] if with_header else []) + [["" if v is None else v for v in r] for r in piece]
            self.assertEqual(back, want_back, "Python's csv module reads the file as drawn")
            raw = text.encode("utf-8")
            name = os.path.join(d, "part%d.csv" % f)
            if compress == ".gz":
                raw = gzip.compress(raw)
            if compress == ".zst":
                cstest.write_bytes(name, raw)
                subprocess.run(["zstd", "-q", "--rm", name], check=True)
            else:
                cstest.write_bytes(name + compress, raw)
        if not rows and not with_header:
            return  # no columns to import: the empty-input test covers it
        con = self.connect()
        store = self.path("r%d.cst" % round_no)
        source = d if rng.random() < 0.5 else os.path.join(d, "part*.csv" + compress)
        args = [store, source]
        if not with_header:
            args.append("header=false")
        if rng.random() < 0.3:
            args.append("delim=%s" % ("tab" if delim == "\t" else delim))
        result = json.loads(con.execute("SELECT colstore_import(%s)" % ",".join("?" * len(args)), args).fetchone()[0])
        types = [expected_type(c) for c in cols]
        names_got = [c["name"] for c in result["columns"]]
        self.assertEqual(names_got, names if with_header else ["c%d" % i for i in range(len(kinds))])
        self.assertEqual([c["type"] for c in result["columns"]], types, "kinds %s" % kinds)
        self.assertEqual(result["rows"], len(rows))
        self.assertEqual(result["rejected"], 0)
        self.assertEqual(len(result["files"]), n_files)
        con.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % store)
        got = con.execute("SELECT * FROM t ORDER BY rowid").fetchall()
        self.assertEqual(len(got), len(rows))
        for i, (row, grow) in enumerate(zip(rows, got)):
            want = tuple(typed(v, t) for v, t in zip(row, types))
            self.assertEqual(cstest.canon_rows([grow], True), cstest.canon_rows([want], True),
                             "row %d (strings %r)" % (i, row))


class Options(cstest.StoreTest):
    """Each option on a small file."""

    def imp(self, con, *args):
        return json.loads(con.execute("SELECT colstore_import(%s)" % ",".join("?" * len(args)), args).fetchone()[0])

    def write(self, name, text, mode="w"):
        p = self.path(name)
        with open(p, mode, newline="") as f:
            f.write(text)
        return p

    def test_json_fields(self):
        con = self.connect()
        src = self.write("a.csv", "id,x,name\n1,2.5,a\n2,,b\n")
        r = self.imp(con, self.path("a.cst"), src)
        self.assertEqual(set(r) >= {"rows", "rejected", "columns", "files", "bytes_read", "ms", "mb_per_s", "rejects"}, True)
        self.assertEqual(r["columns"], [{"name": "id", "type": "INT64", "nullable": True},
                                        {"name": "x", "type": "FLOAT64", "nullable": True},
                                        {"name": "name", "type": "TEXT", "nullable": True}])
        self.assertEqual(r["files"], [src])
        self.assertEqual(r["bytes_read"], os.path.getsize(src))
        self.assertEqual(r["rejects"], [])

    def test_columns_nulls_delim_quote(self):
        con = self.connect()
        src = self.write("a.txt", "'k'|'v'\n1|NA\n2|'NA'\n3|\n")
        r = self.imp(con, self.path("a.cst"), src, "columns=k INT32 NOT NULL, v TEXT", "delim=|", "quote='", "nulls=NA,-")
        self.assertEqual([(c["name"], c["type"], c["nullable"]) for c in r["columns"]],
                         [("k", "INT32", False), ("v", "TEXT", True)])
        con.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % self.path("a.cst"))
        # nulls= replaces the default: the empty field is '' now; 'NA' quoted is text
        self.assertEqual(con.execute("SELECT k, v FROM t").fetchall(), [(1, None), (2, "NA"), (3, "")])

    def test_header_false_names_c0(self):
        con = self.connect()
        src = self.write("a.csv", "x,y\nz,w\n")
        r = self.imp(con, self.path("a.cst"), src, "header=false")
        self.assertEqual([c["name"] for c in r["columns"]], ["c0", "c1"])
        self.assertEqual(r["rows"], 2)
        r = self.imp(con, self.path("b.cst"), src)  # auto: text, distinct, not numbers: a header
        self.assertEqual([c["name"] for c in r["columns"]], ["x", "y"])
        self.assertEqual(r["rows"], 1)

    def test_on_error_skip_reports_rejects(self):
        con = self.connect()
        src = self.write("a.csv", "a,b\n1,2\n3\n4,5\n6,7,8\n9,\xff\n")
        # invalid UTF-8 needs bytes
        with open(src, "wb") as f:
            f.write(b"a,b\n1,2\n3\n4,5\n6,7,8\n9,\xff\n10,11\n")
        r = self.imp(con, self.path("a.cst"), src, "on_error=skip")
        self.assertEqual(r["rows"], 3)
        self.assertEqual(r["rejected"], 3)
        self.assertEqual(r["rejects"], [
            {"file": src, "line": 3, "reason": "1 fields where the header has 2"},
            {"file": src, "line": 5, "reason": "3 fields where the header has 2"},
            {"file": src, "line": 6, "reason": "field 2 (column b) is not valid UTF-8"}])
        self.assertEqual([c["type"] for c in r["columns"]], ["INT64", "INT64"])

    def test_gzip_and_zstd(self):
        con = self.connect()
        text = "a,b\n" + "".join("%d,x%d\n" % (i, i) for i in range(100000))
        cstest.write_bytes(self.path("g.csv.gz"), gzip.compress(text.encode()))
        r = self.imp(con, self.path("g.cst"), self.path("g.csv.gz"))
        self.assertEqual(r["rows"], 100000)
        if have_zstd():
            self.write("z.csv", text)
            subprocess.run(["zstd", "-q", "--rm", self.path("z.csv")], check=True)
            r = self.imp(con, self.path("z.cst"), self.path("z.csv.zst"))
            self.assertEqual(r["rows"], 100000)
        con.execute("CREATE VIRTUAL TABLE g USING colstore('%s')" % self.path("g.cst"))
        self.assertEqual(con.execute("SELECT sum(a), max(b) FROM g").fetchone(), (sum(range(100000)), "x99999"))

    def test_replace_and_append(self):
        con = self.connect()
        p = self.path("a.cst")
        a = self.write("a.csv", "id,v\n1,x\n")
        b = self.write("b.csv", "id,v\n2,y\n3,z\n")
        self.imp(con, p, a)
        r = self.imp(con, p, b, "mode=append")
        self.assertEqual(r["rows"], 2)
        con.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % p)
        self.assertEqual(con.execute("SELECT * FROM t").fetchall(), [(1, "x"), (2, "y"), (3, "z")])
        self.imp(con, p, b, "mode=replace")
        self.assertEqual(con.execute("SELECT count(*) FROM t").fetchone()[0], 2)

    def test_a_late_misfit_gives_the_two_pass_types(self):
        """The first megabyte types the columns for one pass; a later value
        they do not hold restarts with two passes, and the store is what
        the whole file's types give (classify/expected_type, the documented
        rules), rejects counted once."""
        con = self.connect()
        rng = random.Random(23)
        body = ["%d,%.3f,,%s\n" % (i, rng.random(), "t%d" % i) for i in range(60000)]  # > 1 MiB: past the sample
        cases = [("2.5", "", ""), ("1e5", "", ""), ("99999999999999999999", "", ""), ("7", "abc", ""),
                 ("7", "0.5", "12"), ("-0", "1E3", "x"), ("", "", "")]
        for k, (a, b, c) in enumerate(cases):
            for threads in ("threads=1", "threads=2"):
                for skip in (False, True):
                    lines = ["a,b,c,d\n", "1,2\n" if skip else "1,0.5,,t\n"] + body + ["%s,%s,%s,late\n" % (a, b, c)]
                    src = self.write("late%d.csv" % k, "".join(lines))
                    store = self.path("late%d_%s_%d.cst" % (k, threads, skip))
                    args = [store, src, threads]
                    if skip:
                        args.append("on_error=skip")
                    r = self.imp(con, *args)
                    rows = [ln.rstrip("\n").split(",") for ln in lines[1:] if ln.count(",") == 3]
                    cols = [[v if v != "" else None for v in col] for col in zip(*rows)]
                    types = [expected_type(col) for col in cols]
                    what = "case %r %s skip=%s" % ((a, b, c), threads, skip)
                    self.assertEqual([x["type"] for x in r["columns"]], types, what)
                    self.assertEqual((r["rows"], r["rejected"]), (len(rows), 1 if skip else 0), what)
                    con.execute("CREATE VIRTUAL TABLE lt USING colstore('%s')" % store)
                    got = con.execute("SELECT a, b, c, d FROM lt WHERE rowid IN (0, %d) ORDER BY rowid" % (len(rows) - 1)).fetchall()
                    want = [tuple(typed(None if v == "" else v, t) for v, t in zip(rows[i], types)) for i in (0, -1)]
                    self.assertEqual(cstest.canon_rows(got, True), cstest.canon_rows(want, True), what)
                    con.execute("DROP TABLE lt")

    def test_several_files_share_the_header(self):
        con = self.connect()
        d = self.path("d")
        os.mkdir(d)
        for i, h in enumerate(["a,b", "a,b", "a,c"]):
            with open(os.path.join(d, "f%d.csv" % i), "w") as f:
                f.write("%s\n%d,%d\n" % (h, i, i))
        msg = cstest.StoreTest.assertSqlError(self, con, "SELECT colstore_import(?, ?)", (self.path("x.cst"), d))
        self.assertEqual(msg, "colstore: %s line 1: the header differs from %s's; files imported together must share it"
                         % (os.path.join(d, "f2.csv"), os.path.join(d, "f0.csv")))
        os.remove(os.path.join(d, "f2.csv"))
        r = self.imp(con, self.path("x.cst"), os.path.join(d, "*.csv"))
        self.assertEqual(r["files"], [os.path.join(d, "f0.csv"), os.path.join(d, "f1.csv")])
        self.assertEqual(r["rows"], 2)


class Threads(cstest.StoreTest):
    """threads=N reads plain files in chunks of 8 MiB: a file of several
    chunks with quoted newlines and CRLF gives the serial store (the unit
    test check_import tries every split point on small inputs)."""

    def test_threads_give_the_serial_store(self):
        rng = random.Random(7)
        n = cstest.scaled(1200000, 300000)
        parts = ["id,x,note\r\n"]
        for i in range(n):
            note = rng.choice(["", "plain", '"two\nlines"', '"a ""quote"""', '"cr\r\nlf"', "é"])
            parts.append("%d,%s,%s\r\n" % (i, rng.choice(["", "%.3f" % rng.random()]), note))
        p = self.path("t.csv")
        with open(p, "w", newline="") as f:
            f.write("".join(parts))
        if os.path.getsize(p) < 2 * (8 << 20) and not cstest.ASAN:
            self.fail("the file must span several chunks")
        con = self.connect()
        one = json.loads(con.execute("SELECT colstore_import(?, ?)", (self.path("1.cst"), p)).fetchone()[0])
        three = json.loads(con.execute("SELECT colstore_import(?, ?, 'threads=3')", (self.path("3.cst"), p)).fetchone()[0])
        self.assertEqual(one["rows"], n)
        self.assertEqual((three["rows"], three["columns"]), (one["rows"], one["columns"]))
        con.execute("CREATE VIRTUAL TABLE a USING colstore('%s')" % self.path("1.cst"))
        con.execute("CREATE VIRTUAL TABLE b USING colstore('%s')" % self.path("3.cst"))
        self.assertEqual(con.execute("SELECT count(*) FROM (SELECT rowid, * FROM a EXCEPT SELECT rowid, * FROM b)").fetchone()[0], 0)
        # A text late in the FLOAT64 column: the speculative pass (the
        # sample's types) stops in some chunk of a wave; both restart.
        with open(p, "a", newline="") as f:
            f.write("%d,late,x\r\n" % n)
        one = json.loads(con.execute("SELECT colstore_import(?, ?)", (self.path("1b.cst"), p)).fetchone()[0])
        three = json.loads(con.execute("SELECT colstore_import(?, ?, 'threads=3')", (self.path("3b.cst"), p)).fetchone()[0])
        self.assertEqual([c["type"] for c in one["columns"]], ["INT64", "TEXT", "TEXT"])
        self.assertEqual((three["rows"], three["columns"]), (n + 1, one["columns"]))
        con.execute("CREATE VIRTUAL TABLE a2 USING colstore('%s')" % self.path("1b.cst"))
        con.execute("CREATE VIRTUAL TABLE b2 USING colstore('%s')" % self.path("3b.cst"))
        self.assertEqual(con.execute("SELECT count(*) FROM (SELECT rowid, * FROM a2 EXCEPT SELECT rowid, * FROM b2)").fetchone()[0], 0)
        self.assertEqual(con.execute("SELECT x FROM a2 WHERE rowid = ?", (n,)).fetchone()[0], "late")
        with open(p, "a", newline="") as f:
            f.write("%d,1.0\r\n" % n)
        msg = self.assertSqlError(con, "SELECT colstore_import(?, ?, 'threads=3')", (self.path("x.cst"), p))
        self.assertEqual(msg, "colstore: %s line %d: 2 fields where the header has 3" % (p, n + 3 + sum(
            part.count("\n") - 1 for part in parts[1:])))


CHILD_IMPORTER = r"""
import sys
sys.path.insert(0, %r)
import cstest
path, csv, mode = sys.argv[1], sys.argv[2], sys.argv[3]
con = cstest.connect()
con.execute("SELECT colstore_import(?, ?)", (path, csv)).fetchone()
print("ready", flush=True)
while True:
    con.execute("SELECT colstore_import(?, ?, ?)", (path, csv, "mode=" + mode)).fetchone()
""" % os.path.dirname(os.path.abspath(__file__))


class Killed(cstest.StoreTest):
    """A SIGKILL in the middle of an import: the store at the path is a
    whole one (replace) or holds whole imports (append), and verifies."""

    def test_sigkill_during_replace_and_append(self):
        rng = random.Random(11)
        n = cstest.scaled(100000, 20000)
        csv_path = self.path("k.csv")
        with open(csv_path, "w") as f:
            f.write("a,b,c\n" + "".join("%d,%d.5,\"t\nx%d\"\n" % (i, i, i) for i in range(n)))
        for mode in ("replace", "append", "replace", "append"):
            p = self.path("k_%s_%d.cst" % (mode, rng.randrange(1 << 30)))
            script = CHILD_IMPORTER.replace("path, csv, mode = sys.argv[1], sys.argv[2], sys.argv[3]",
                                            "path, csv, mode = sys.argv[1], %r, %r" % (csv_path, mode))
            fresh = self.after_sigkill(script, p, rng.uniform(0.05, 0.6))
            rows = fresh.execute("SELECT count(*) FROM t").fetchone()[0]
            if mode == "replace":
                self.assertEqual(rows, n)
            else:
                self.assertEqual(rows % n, 0, "an append is whole or absent")
                self.assertGreaterEqual(rows, n)
            self.assertEqual(fresh.execute("SELECT sum(a) FROM t").fetchone()[0], rows // n * (n * (n - 1) // 2))


class Memory(cstest.StoreTest):
    """Bounded memory (issue 23: "peak memory of importing a CSV 4x larger
    than the memory limit you set for the test stays under that limit"): the
    sqlite3 shell runs with the limit set on it (RLIMIT_DATA: heap and
    private mappings, which is where the importer's memory would go; the
    address space would also count the libraries' reservations), imports a
    file four times the limit, and its peak resident memory, measured by
    /usr/bin/time, stays under the limit too."""

    @unittest.skipIf(cstest.ASAN, "the sanitizers' shadow memory is not the importer's")
    @unittest.skipIf(not shutil.which("sqlite3") or not os.path.exists("/usr/bin/time"), "no sqlite3 shell or /usr/bin/time")
    def test_peak_memory_stays_under_a_quarter_of_the_file(self):
        limit = 24 << 20
        p = self.path("big.csv")
        line = "%d,%d.25,\"text, with a comma\",%d\n"
        with open(p, "w") as f:
            f.write("a,b,c,d\n")
            i = 0
            while f.tell() < 4 * limit:
                f.write("".join(line % (k, k, k) for k in range(i, i + 10000)))
                i += 10000
        sql = ".load %s\nSELECT colstore_import('%s', '%s') ->> '$.rows';\n" % (cstest.MODULE, self.path("big.cst"), p)
        # /usr/bin/time reports the peak of the sqlite3 process alone: this
        # process's own children's peak would count the fork of a test
        # process that has grown, before the exec.
        def set_limit():
            import resource
            resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))

        r = subprocess.run(["/usr/bin/time", "-f", "peak_kb=%M", "sqlite3", "-batch", "-bail", ":memory:"], input=sql,
                           capture_output=True, text=True, preexec_fn=set_limit)
        self.assertEqual(r.returncode, 0, "the import under a %d-byte limit: %s" % (limit, r.stderr))
        peak = int(re.search(r"peak_kb=(\d+)", r.stderr).group(1)) * 1024
        self.assertEqual(int(r.stdout.strip()), i)
        self.assertLess(peak, limit, "peak RSS %d bytes importing %d bytes" % (peak, os.path.getsize(p)))


class Errors(cstest.StoreTest):
    """Each error: the exact message, and nothing written."""

    def write(self, name, data):
        p = self.path(name)
        cstest.write_bytes(p, data if isinstance(data, bytes) else data.encode())
        return p

    def fails(self, args, message, code="SQLITE_ERROR"):
        con = self.connect()
        before = sorted(os.listdir(self.dir))
        msg = self.assertSqlError(con, "SELECT colstore_import(%s)" % ",".join("?" * len(args)), args, code=code)
        self.assertEqual(msg, message)
        self.assertEqual(sorted(os.listdir(self.dir)), before, "the failed import left files behind")

    def test_ragged_row(self):
        src = self.write("r.csv", "a,b,c\n1,2,3\n4,5\n")
        self.fails([self.path("t.cst"), src], "colstore: %s line 3: 2 fields where the header has 3" % src)

    def test_ragged_row_late_in_a_big_file(self):
        src = self.write("r.csv", "a,b\n" + "1,2\n" * 300000 + "\"x\ny\"\n")
        self.fails([self.path("t.cst"), src], "colstore: %s line 300002: 1 fields where the header has 2" % src)

    def test_invalid_utf8(self):
        src = self.write("u.csv", b"a,b\n1,ok\n2,caf\xe9\n")
        self.fails([self.path("t.cst"), src], "colstore: %s line 3: field 2 (column b) is not valid UTF-8" % src)

    def test_not_null_missing(self):
        src = self.write("n.csv", "a,b\n1,x\n,y\n")
        self.fails([self.path("t.cst"), src, "columns=a INT64 NOT NULL, b TEXT"],
                   "colstore: %s line 3: NOT NULL column a has no value" % src)

    def test_value_of_the_wrong_type(self):
        src = self.write("v.csv", "a\n1\n2.5\n")
        self.fails([self.path("t.cst"), src, "columns=a INT32"],
                   "colstore: %s line 3: cannot store '2.5' in column a of type INT32: it is not an integer" % src)
        flags = self.write("b.csv", "a\n1\n0\n2\n")
        self.fails([self.path("t.cst"), flags, "columns=a BOOL"],
                   "colstore: %s line 4: cannot store '2' in column a of type BOOL: a BOOL holds 0 or 1" % flags)
        small = self.write("s.csv", "a\n-129\n")
        self.fails([self.path("t.cst"), small, "columns=a INT8"],
                   "colstore: %s line 2: cannot store '-129' in column a of type INT8: it is out of the type's range" % small)

    def test_bad_columns(self):
        src = self.write("c.csv", "a,b\n1,2\n")
        self.fails([self.path("t.cst"), src, "columns=a INT64, b FOO"], "colstore: columns=: column b: unknown type 'FOO'")
        self.fails([self.path("t.cst"), src, "columns=a INT64, b"],
                   "colstore: columns=: column b has no type; write 'name TYPE [NOT NULL], ...'")
        self.fails([self.path("t.cst"), src, "columns=a INT64"],
                   "colstore: columns= names 1 columns but %s line 1 has 2 fields" % src)
        self.fails([self.path("t.cst"), src, "columns=a INT64, A TEXT"], "colstore: two columns are named A")

    def test_create_on_an_existing_path(self):
        src = self.write("c.csv", "a\n1\n")
        p = self.write("t.cst", "not a store")
        self.fails([p, src], "colstore: %s already exists; use mode=replace to overwrite it or mode=append to add to it" % p)
        self.assertEqual(cstest.read_bytes(p), b"not a store")

    def test_unclosed_quote(self):
        src = self.write("q.csv", 'a,b\n1,"open\n2,3\n')
        self.fails([self.path("t.cst"), src],
                   "colstore: %s line 2: a quoted field is not closed before the end of the input" % src)

    def test_bad_options(self):
        src = self.write("o.csv", "a\n1\n")
        self.fails([self.path("t.cst"), src, "mode=overwrite"], "colstore: mode=overwrite: mode is create, replace or append")
        self.fails([self.path("t.cst"), src, "colour=red"],
                   "colstore: unknown colstore_import option 'colour' (mode, columns, header, delim, quote, nulls, "
                   "on_error, threads, progress, format)")
        self.fails([self.path("t.cst"), self.path("none.csv")],
                   "colstore: cannot read %s: No such file or directory" % self.path("none.csv"), code="SQLITE_CANTOPEN")

    def test_empty_input(self):
        src = self.write("e.csv", "")
        self.fails([self.path("t.cst"), src], "colstore: %s is empty: there are no columns to import" % src)

    def test_failed_append_leaves_the_store_as_it_was(self):
        con = self.connect()
        p = self.path("t.cst")
        good = self.write("g.csv", "a,b\n1,x\n")
        con.execute("SELECT colstore_import(?, ?)", (p, good)).fetchone()
        before = cstest.read_bytes(p)
        bad = self.write("b.csv", "a,b\n2,y\n3\n")
        self.assertSqlError(con, "SELECT colstore_import(?, ?, 'mode=append')", (p, bad),
                            contains=("line 3: 1 fields where the header has 2",))
        self.assertEqual(cstest.read_bytes(p), before)
        renamed = self.write("c.csv", "a,c\n2,y\n")
        msg = self.assertSqlError(con, "SELECT colstore_import(?, ?, 'mode=append')", (p, renamed), code=None)
        self.assertEqual(msg, "colstore: mode=append: column 2 is b in the store but c in %s" % renamed)
        typed_wrong = self.write("d.csv", "a,b\nx,y\n")
        msg = self.assertSqlError(con, "SELECT colstore_import(?, ?, 'mode=append')", (p, typed_wrong))
        self.assertEqual(msg, "colstore: %s line 2: cannot store 'x' in column a of type INT64: it is not a number" % typed_wrong)
        self.assertEqual(cstest.read_bytes(p), before)

    def test_interrupt_leaves_nothing(self):
        con = self.connect()
        src = self.write("big.csv", "a,b\n" + "".join("%d,%d\n" % (i, i) for i in range(400000)))
        p = self.path("t.cst")
        con.set_progress_handler(lambda: 1, 100)
        before = sorted(os.listdir(self.dir))
        self.assertSqlError(con, "SELECT colstore_import(?, ?)", (p, src), code="SQLITE_INTERRUPT",
                            contains=("colstore: interrupted",))
        self.assertEqual(sorted(os.listdir(self.dir)), before)
        con.set_progress_handler(None, 0)
        con.execute("SELECT colstore_import(?, ?)", (p, src)).fetchone()
        stored = cstest.read_bytes(p)
        con.set_progress_handler(lambda: 1, 100)
        self.assertSqlError(con, "SELECT colstore_import(?, ?, 'mode=append')", (p, src), code="SQLITE_INTERRUPT")
        self.assertEqual(cstest.read_bytes(p), stored)
        calls = []
        con.set_progress_handler(lambda: calls.append(1), 1000)
        con.execute("SELECT colstore_import(?, ?, 'mode=replace')", (p, src)).fetchone()
        self.assertGreater(len(calls), 0, "the progress handler is called while an import runs")

    def test_sqlite3_interrupt_leaves_nothing(self):
        """sqlite3_interrupt (the shell's Ctrl-C) while the import runs: here
        called from the progress handler, which itself returns 0, so the
        stop comes from the interrupt flag alone."""
        con = self.connect()
        src = self.write("big.csv", "a,b\n" + "".join("%d,%d\n" % (i, i) for i in range(200000)))
        before = sorted(os.listdir(self.dir))
        calls = []

        def handler():
            calls.append(1)
            if len(calls) == 3:
                con.interrupt()
            return 0

        con.set_progress_handler(handler, 50)
        self.assertSqlError(con, "SELECT colstore_import(?, ?)", (self.path("t.cst"), src), code="SQLITE_INTERRUPT",
                            contains=("colstore: interrupted",))
        self.assertEqual(sorted(os.listdir(self.dir)), before)

    def test_progress_line_on_stderr(self):
        if not shutil.which("sqlite3"):
            self.skipTest("no sqlite3 shell")
        src = self.write("p.csv", "a,b\n" + "".join("%d,x%d\n" % (i, i) for i in range(50000)))
        sql = ".load %s\nSELECT colstore_import('%s', '%s', 'progress=on') ->> '$.rows';\n" % (
            cstest.MODULE, self.path("p.cst"), src)
        # bytes: text mode would turn the CRs that rewrite the line into LFs
        r = subprocess.run(["sqlite3", "-batch", "-bail", ":memory:"], input=sql.encode(), capture_output=True, check=True)
        self.assertEqual(r.stdout.decode().strip(), "50000")
        # The types held over the whole file: one pass (see the sample in cs_import.c).
        self.assertTrue(r.stderr.startswith(b"\rcolstore_import: pass 1/1 "), r.stderr[:80])
        self.assertEqual(r.stderr.count(b"\n"), 1, "one line, rewritten in place")
        last = r.stderr.decode().split("\r")[-1]
        self.assertRegex(last, r"^colstore_import: pass 1/1  [0-9.]+ of [0-9.]+ MB  50000 rows  [0-9.]+ MB/s  0s left +\n$")
        # A late text in the INT64 column: the two passes, reported as such.
        src2 = self.write("p2.csv", "a,b\n" + "".join("%d,x%d\n" % (i, i) for i in range(99999)) + "late,x\n")
        sql2 = sql.replace(src, src2).replace("p.cst", "p2.cst")
        r = subprocess.run(["sqlite3", "-batch", "-bail", ":memory:"], input=sql2.encode(), capture_output=True, check=True)
        self.assertEqual(r.stdout.decode().strip(), "100000")
        self.assertTrue(r.stderr.startswith(b"\rcolstore_import: pass 1/1 "), r.stderr[:80])
        last = r.stderr.decode().split("\r")[-1]
        self.assertRegex(last, r"^colstore_import: pass 2/2  [0-9.]+ of [0-9.]+ MB  100000 rows  [0-9.]+ MB/s  0s left +\n$")
        sql = sql.replace("progress=on", "progress=auto").replace("p.cst", "q.cst")
        r = subprocess.run(["sqlite3", "-batch", "-bail", ":memory:"], input=sql.encode(), capture_output=True, check=True)
        self.assertEqual(r.stderr, b"", "progress=auto prints nothing when stderr is not a terminal")

    def test_directonly(self):
        con = self.connect()
        src = self.write("a.csv", "a\n1\n")
        con.execute("CREATE TABLE log(x)")
        con.execute("CREATE TRIGGER tr AFTER INSERT ON log BEGIN SELECT colstore_import('%s', '%s'); END"
                    % (self.path("t.cst"), src))
        with self.assertRaises(sqlite3.Error) as cm:
            con.execute("INSERT INTO log VALUES (1)")
        self.assertIn("unsafe use of colstore_import", str(cm.exception))


if __name__ == "__main__":
    cstest.main()
