"""Progress and clean interruption of the long functions: colstore_create,
colstore_import, colstore_compact and colstore_calibrate (docs/sql.md,
"Progress and interruption").

Each function is run four ways against the same oracle, the files on disk
(names and bytes, before and after): with a progress handler that counts
(SQLite must call it several times while the function runs), with one that
returns nonzero part-way (SQLITE_INTERRUPT, `colstore: interrupted...`,
nothing written or changed), with sqlite3_interrupt from another thread
(the same), and in the sqlite3 shell with progress=on/off/auto (a line on
stderr, or none).  The calibration cache lives in this file's own
directory (COLSTORE_CACHE_DIR, set before the module loads), so an
interrupted calibration can be seen to leave it untouched.
"""
import os
import shutil
import subprocess
import tempfile
import threading

CACHE_DIR = tempfile.mkdtemp(prefix="colstore-progress-cache-")
os.environ["COLSTORE_CACHE_DIR"] = CACHE_DIR

import cstest  # noqa: E402  (after the environment is set)

ROWS = cstest.scaled(300000, 60000)


def files(*dirs):
    """Every file under dirs, by path, with its bytes."""
    out = {}
    for d in dirs:
        for root, _, names in os.walk(d):
            for n in names:
                p = os.path.join(root, n)
                out[p] = cstest.read_bytes(p)
    return out


class ProgressTest(cstest.StoreTest):

    def setUp(self):
        super().setUp()
        self.con = self.connect()
        self.con.execute("CREATE TABLE src(a INTEGER, b REAL, c TEXT)")
        self.con.execute("WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
                         "INSERT INTO src SELECT i, i * 0.5, 'v' || (i % 97) FROM n", (ROWS - 1,))
        self.csv = self.path("in.csv")
        with open(self.csv, "w") as f:
            f.write("a,b\n")
            f.writelines("%d,%d\n" % (i, i * 3) for i in range(ROWS))
        # A store of many records, some rows deleted: what compaction rewrites.
        self.store = self.path("s.cst")
        self.con.execute("SELECT colstore_create(?, 'SELECT * FROM src')", (self.store,)).fetchone()
        self.con.execute("CREATE VIRTUAL TABLE s USING colstore('%s')" % self.store)
        self.con.execute("DELETE FROM s WHERE a % 7 = 0")
        self.existing = self.path("old.cst")  # the target of a 'replace'
        self.con.execute("SELECT colstore_create(?, 'SELECT 1 AS x')", (self.existing,)).fetchone()

    def tearDown(self):
        self.con.set_progress_handler(None, 0)
        super().tearDown()

    def ops(self):
        """(name, sql, params) of every long operation, each writing or
        changing something under self.dir (or the calibration cache)."""
        return [
            ("create", "SELECT colstore_create(?, 'SELECT * FROM src')", (self.path("new.cst"),)),
            ("create inferred", "SELECT colstore_create(?, 'SELECT a + 0 AS a, b * 1 AS b FROM src')",
             (self.path("inf.cst"),)),
            ("create replace", "SELECT colstore_create(?, 'SELECT * FROM src', 'replace')", (self.existing,)),
            ("import", "SELECT colstore_import(?, ?)", (self.path("imp.cst"), self.csv)),
            ("compact", "SELECT colstore_compact('s', 'renumber')", ()),
            ("calibrate", "SELECT colstore_calibrate('mask', 1)", ()),
        ]

    def assertStopped(self, name, sql, params, before):
        self.assertSqlError(self.con, sql, params, code="SQLITE_INTERRUPT", contains=("interrupted",))
        self.assertEqual(files(self.dir, CACHE_DIR), before, "%s: files changed by an interrupted call" % name)

    def test_progress_handler_is_called(self):
        for name, sql, params in self.ops():
            with self.subTest(op=name):
                calls = []
                self.con.set_progress_handler(lambda: calls.append(1), 100)
                self.con.execute(sql, params).fetchone()
                self.con.set_progress_handler(None, 0)
                self.assertGreaterEqual(len(calls), 3, "%s: the progress handler was called %d times" % (name, len(calls)))

    def test_handler_returning_nonzero_stops_and_writes_nothing(self):
        for name, sql, params in self.ops():
            for stop_after in (1, 4):
                with self.subTest(op=name, stop_after=stop_after):
                    before = files(self.dir, CACHE_DIR)
                    calls = []

                    def handler():
                        calls.append(1)
                        return len(calls) >= stop_after

                    self.con.set_progress_handler(handler, 100)
                    self.assertStopped(name, sql, params, before)
                    self.con.set_progress_handler(None, 0)
        # the connection and the store still work after the interrupts
        self.assertEqual(self.con.execute("SELECT count(*) FROM s").fetchone()[0],
                         self.con.execute("SELECT count(*) FROM src WHERE a % 7 != 0").fetchone()[0])

    def test_sqlite3_interrupt_from_another_thread(self):
        """The interrupt comes from a timer thread while the call runs: the
        handler (returning 0) starts the timer at its first call and waits
        until the interrupt was sent, so the call cannot finish first."""
        for name, sql, params in self.ops():
            with self.subTest(op=name):
                before = files(self.dir, CACHE_DIR)
                sent = threading.Event()

                def interrupt():
                    self.con.interrupt()
                    sent.set()

                def handler():
                    if not sent.is_set():
                        threading.Timer(0.01, interrupt).start()
                        sent.wait(10)
                    return 0

                self.con.set_progress_handler(handler, 100)
                self.assertStopped(name, sql, params, before)
                self.con.set_progress_handler(None, 0)
                self.assertTrue(sent.is_set())

    # -- the line on stderr, in the sqlite3 shell

    def shell(self, script):
        if not shutil.which("sqlite3"):
            self.skipTest("no sqlite3 shell")
        setup = ".load %s\nCREATE VIRTUAL TABLE s USING colstore('%s');\n" % (cstest.MODULE, self.store)
        # bytes: text mode would turn the CRs that rewrite the line into LFs
        env = dict(os.environ, COLSTORE_CACHE_DIR=CACHE_DIR)
        return subprocess.run(["sqlite3", "-batch", ":memory:"], input=(setup + script).encode(), capture_output=True,
                              env=env, timeout=300)

    def shell_ops(self):
        src = "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < %d) SELECT i AS a FROM n" % (
            ROWS - 1)
        return [
            ("colstore_create", "SELECT colstore_create('%s', '%s', 'progress=%%s');" % (self.path("sh.cst"), src),
             r"[0-9]+ rows  [0-9.]+ (MB|rows)/s"),
            ("colstore_create", "SELECT colstore_create('%s', '%s', 'replace', 'progress=%%s');"
             % (self.existing, src), r"[0-9]+ rows  [0-9.]+ (MB|rows)/s"),
            ("colstore_import", "SELECT colstore_import('%s', '%s', 'progress=%%s') ->> '$.rows';"
             % (self.path("sh2.cst"), self.csv), r"[0-9]+ rows  [0-9.]+ MB/s  [0-9?]+s? left"),
            ("colstore_compact", "SELECT colstore_compact('%s', 'progress=%%s') ->> '$.after.rows';" % self.store,
             r"[0-9.]+ of [0-9.]+ MB  [0-9]+ rows  [0-9.]+ MB/s  [0-9?]+s? left"),
            ("colstore_calibrate", "SELECT colstore_calibrate('mask', 1, 'progress=%s') ->> '$.target';",
             r"done  0s left"),
        ]

    def test_progress_on_prints_one_line_in_place(self):
        for fn, sql, pattern in self.shell_ops():
            with self.subTest(fn=fn, sql=sql):
                r = self.shell(sql % "on")
                self.assertEqual(r.returncode, 0, r.stderr[-400:])
                err = r.stderr.decode()
                self.assertTrue(err.startswith("\r%s: " % fn), err[:120])
                self.assertEqual(err.count("\n"), 1, "one line, rewritten in place: %r" % err[-300:])
                self.assertTrue(err.endswith("\n"))
                last = err.split("\r")[-1]
                self.assertRegex(last, "^%s: .*%s" % (fn, pattern))
                self.assertIn("0s left", last)

    def test_progress_off_and_auto_print_nothing_without_a_terminal(self):
        for fn, sql, _ in self.shell_ops():
            for mode in ("off", "auto"):
                with self.subTest(fn=fn, mode=mode):
                    shutil.rmtree(self.path("sh.cst"), ignore_errors=True)
                    for p in ("sh.cst", "sh2.cst"):
                        if os.path.exists(self.path(p)):
                            os.remove(self.path(p))
                    r = self.shell(sql % mode)
                    self.assertEqual(r.returncode, 0, r.stderr[-400:])
                    self.assertEqual(r.stderr, b"")
        # and without the argument (auto)
        r = self.shell("SELECT colstore_compact('%s') ->> '$.after.rows';" % self.store)
        self.assertEqual((r.returncode, r.stderr), (0, b""))

    def test_progress_auto_prints_on_a_terminal(self):
        """auto (the default) prints the line when stderr is a terminal: here
        a pseudo-terminal the test reads."""
        if not shutil.which("sqlite3"):
            self.skipTest("no sqlite3 shell")
        import pty
        master, slave = pty.openpty()
        script = (".load %s\nSELECT colstore_compact('%s', 'renumber') ->> '$.after.rows';\n"
                  % (cstest.MODULE, self.store))
        try:
            r = subprocess.run(["sqlite3", "-batch", ":memory:"], input=script.encode(), stdout=subprocess.PIPE,
                               stderr=slave, timeout=300)
            os.close(slave)
            slave = None
            got = b""
            while True:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # EIO: the terminal's other side is closed and drained
                    break
                if not chunk:
                    break
                got += chunk
        finally:
            if slave is not None:
                os.close(slave)
            os.close(master)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(int(r.stdout), ROWS - len(range(0, ROWS, 7)))
        self.assertIn(b"\rcolstore_compact: ", got)
        self.assertRegex(got.decode(), r"[0-9]+ rows  [0-9.]+ MB/s  0s left")

    def test_bad_progress_value_lists_the_valid_ones(self):
        for sql, params in [
            ("SELECT colstore_create(?, 'SELECT 1 AS x', 'progress=yes')", (self.path("b.cst"),)),
            ("SELECT colstore_create(?, 'SELECT 1 AS x', 'replace', 'progress=')", (self.existing,)),
            ("SELECT colstore_import(?, ?, 'progress=1')", (self.path("b.cst"), self.csv)),
            ("SELECT colstore_compact('s', 'progress=loud')", ()),
            ("SELECT colstore_compact('s', 'renumber', 'progress=ON ')", ()),
            ("SELECT colstore_calibrate('mask', 1, 'progress=always')", ()),
            ("SELECT colstore_calibrate('progress=sometimes')", ()),
        ]:
            with self.subTest(sql=sql):
                before = files(self.dir, CACHE_DIR)
                msg = self.assertSqlError(self.con, sql, params, contains=("progress=",))
                self.assertRegex(msg, r"progress is auto\b.*, on or off")
                self.assertEqual(files(self.dir, CACHE_DIR), before)

    def test_progress_argument_is_accepted_everywhere_it_is_documented(self):
        con = self.con
        self.assertEqual(con.execute("SELECT colstore_create(?, 'SELECT * FROM src', 'progress=off')",
                                     (self.path("a.cst"),)).fetchone()[0], ROWS)
        self.assertEqual(con.execute("SELECT colstore_create(?, 'SELECT 2 AS y', 'replace', 'PROGRESS=Off')",
                                     (self.existing,)).fetchone()[0], 1)
        con.execute("CREATE VIRTUAL TABLE o USING colstore('%s')" % self.existing)
        self.assertEqual(con.execute("SELECT y FROM o").fetchall(), [(2,)])
        con.execute("SELECT colstore_compact('s', 'progress=off')").fetchone()
        con.execute("SELECT colstore_compact('s', 'renumber', 'progress=off')").fetchone()
        self.assertEqual(con.execute("SELECT max(rowid) + 1 = count(*) FROM s").fetchone()[0], 1)
        # 'replace' is still checked; the option is only ever the last argument
        self.assertSqlError(con, "SELECT colstore_create(?, 'SELECT 1 AS x', 'progress=off', 'replace')",
                            (self.path("c.cst"),), code="SQLITE_MISUSE")
        self.assertSqlError(con, "SELECT colstore_compact('s', 'progress=off', 'renumber')", (), code="SQLITE_MISUSE")

    def test_shell_progress_limit_stops_colstore_create(self):
        before = files(self.dir, CACHE_DIR)
        src = "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < %d) SELECT i AS a FROM n" % (
            ROWS - 1)
        r = self.shell(".progress 1000 --limit 20 --quiet\nSELECT colstore_create('%s', '%s');\n"
                       ".progress off\nSELECT 'after', count(*) FROM s;\n" % (self.path("lim.cst"), src))
        err = r.stderr.decode()
        self.assertIn("interrupted", err)
        self.assertIn("colstore: interrupted", err)
        self.assertIn("after|", r.stdout.decode(), "the shell goes on after the interrupt")
        self.assertEqual(files(self.dir, CACHE_DIR), before)


if __name__ == "__main__":
    try:
        cstest.main()
    finally:
        shutil.rmtree(CACHE_DIR, ignore_errors=True)
