"""colstore_calibrate() and colstore_calibration(): measuring the kernel knobs,
the calibration cache and its hardware fingerprint, and precedence.

Calibration is process-wide and the extension reads the cache the first time
it is loaded in a process, so this file points COLSTORE_CACHE_DIR at its own
temporary directory before anything loads the module, and the tests that
need a fresh process (the cache read at load) run a child.  Runs are short:
one or two rounds of one target at a time, and under the sanitizers
(COLSTORE_ASAN) only the mask target with one round.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

CACHE_DIR = tempfile.mkdtemp(prefix="colstore-calcache-")
os.environ["COLSTORE_CACHE_DIR"] = CACHE_DIR

import cstest  # noqa: E402  (after the environment is set)

CACHE = os.path.join(CACHE_DIR, "calibration.txt")
REGIMES = ["resident_unsorted", "resident_sorted", "dram_unsorted", "dram_sorted"]
FAMILIES = ["gather_rows", "gather_sorted", "gather_mask", "pred_eval"]


def calibration(con):
    return json.loads(con.execute("SELECT colstore_calibration()").fetchone()[0])


def calibrate(con, *args):
    sql = "SELECT colstore_calibrate(%s)" % ", ".join("?" * len(args))
    return json.loads(con.execute(sql, args).fetchone()[0])


class CalibrateTest(cstest.StoreTest):

    def assertSweep(self, sw, values, rounds):
        self.assertEqual([c["value"] for c in sw["candidates"]], values)
        for c in sw["candidates"]:
            self.assertGreater(c["median_us"], 0)
            self.assertLessEqual(c["min_us"], c["median_us"])
            self.assertLessEqual(c["median_us"], c["max_us"])
        self.assertIn(sw["pick"], values)
        if rounds < 2:
            self.assertIsNone(sw["halves_agree"])
        else:
            self.assertIn(sw["halves_agree"], (True, False))

    def test_lifecycle_calibrate_report_cache_clear(self):
        con = self.connect()
        shutil.rmtree(CACHE_DIR, ignore_errors=True)
        con.execute("SELECT colstore_calibrate('clear')").fetchone()
        before = calibration(con)
        self.assertEqual(before["source"], "defaults")
        self.assertFalse(before["cache_exists"])
        self.assertIsNone(before["fingerprint_matches"])
        self.assertIsNone(before["calibration"]["threads"])
        self.assertEqual(before["effective"]["threads"]["from"], "default")
        self.assertIn("cores=", before["fingerprint"])

        # mask: cheap enough for every run, sanitizers included.
        r = calibrate(con, "mask", 1)
        self.assertEqual(r["target"], "mask")
        self.assertEqual(r["rounds"], 1)
        self.assertEqual(len(r["mask"]["densities"]), 7)
        for d, sw in r["mask"]["densities"].items():
            self.assertTrue(0 < float(d) < 1)
            self.assertSweep(sw, ["positions", "mask"], 1)
        self.assertTrue(0 <= r["mask"]["pick"] <= 1)
        self.assertIn(r["mask"]["mask_native"], ("enabled", "disabled"))
        self.assertTrue(r["saved"], r.get("save_error"))
        self.assertEqual(r["cache_path"], CACHE)
        self.assertAlmostEqual(r["applied"]["mask_gate"], r["mask"]["pick"], places=3)
        self.assertNotIn("threads", r)
        self.assertTrue(os.path.exists(CACHE))
        self.assertEqual(sorted(os.listdir(CACHE_DIR)), ["calibration.txt"])  # no temporary files left

        after = calibration(con)
        self.assertEqual(after["source"], "calibration")
        self.assertTrue(after["fingerprint_matches"])
        self.assertEqual(after["cache_fingerprint"], after["fingerprint"])
        self.assertIsNone(after["warning"])
        self.assertEqual(after["effective"]["mask_gate"]["from"], "calibration")

        if not cstest.ASAN:
            # Thread candidates stop at the cpus this process may use; a
            # pick is applied only where both halves of the rounds agree.
            for attempt in range(5):
                r = calibrate(con, "threads", 2)
                cpus = r["threads"]["cpus"]
                self.assertTrue(1 <= cpus <= os.cpu_count(), r["threads"])
                values = list(range(1, min(cpus, 8) + 1))
                self.assertEqual(sorted(r["threads"]["families"]), sorted(FAMILIES))
                for sw in r["threads"]["families"].values():
                    self.assertSweep(sw, values, 2)
                self.assertIn(r["threads"]["pick"], values)
                # A partial run keeps what was calibrated before.
                self.assertIsNotNone(r["applied"]["mask_gate"])
                eff = calibration(con)["effective"]["threads"]
                if r["threads"]["halves_agree"]:
                    self.assertIs(r["threads"]["applied"], True)
                    self.assertEqual(r["applied"]["threads"], r["threads"]["pick"])
                    self.assertEqual(eff, {"value": r["threads"]["pick"], "from": "calibration"})
                    break
                self.assertTrue(r["threads"]["applied"].startswith("default kept: the two halves"), r["threads"])
                self.assertIsNone(r["applied"]["threads"])
                self.assertEqual(eff["from"], "default")
            else:
                self.fail("five threads calibrations in a row had halves that disagreed: %s" % r["threads"])

            # An explicit colstore_config('threads') wins over calibration.
            other = 3 if r["threads"]["pick"] != 3 else 2
            con.execute("SELECT colstore_config('threads', ?)", (other,)).fetchone()
            try:
                self.assertEqual(calibration(con)["effective"]["threads"], {"value": other, "from": "colstore_config"})
                self.assertEqual(calibration(con)["calibration"]["threads"], r["threads"]["pick"])
            finally:
                con.execute("SELECT colstore_config('threads', 0)").fetchone()
            self.assertEqual(calibration(con)["effective"]["threads"]["from"], "calibration")

            r = calibrate(con, "prefetch", 1)
            self.assertEqual(sorted(r["prefetch"]["regimes"]), sorted(REGIMES))
            for sw in r["prefetch"]["regimes"].values():
                self.assertSweep(sw, [0, 8, 32, 64, 128, 256], 1)
            self.assertEqual(r["applied"]["prefetch"], r["prefetch"]["pick"])
            eff = calibration(con)["effective"]["prefetch"]
            for reg in REGIMES:
                self.assertEqual(eff[reg], {"value": r["prefetch"]["pick"][reg], "from": "calibration"})

        # Explicit mask_gate wins too, and colstore_last_plan reports the gate.
        con.execute("SELECT colstore_config('mask_gate', 0.5)").fetchone()
        try:
            self.assertEqual(calibration(con)["effective"]["mask_gate"], {"value": 0.5, "from": "colstore_config"})
        finally:
            con.execute("SELECT colstore_config('mask_gate', 'auto')").fetchone()

        # clear removes the file and the calibration in effect.
        r = calibrate(con, "clear")
        self.assertEqual(r, {"target": "clear", "cache_path": CACHE, "removed": True})
        self.assertFalse(os.path.exists(CACHE))
        cleared = calibration(con)
        self.assertEqual(cleared["source"], "defaults")
        self.assertIsNone(cleared["calibration"]["mask_gate"])
        self.assertEqual(cleared["effective"]["mask_gate"]["from"], "default")
        self.assertFalse(calibrate(con, "clear")["removed"])

    def write_cache(self, fingerprint, body="threads=1\nprefetch.dram_sorted=64\nmask_gate=0.2500\n"):
        os.makedirs(CACHE_DIR, exist_ok=True)
        with open(CACHE, "w") as f:
            f.write("# test\nformat=1\nfingerprint=%s\n%send\n" % (fingerprint, body))

    def test_foreign_and_corrupt_cache_are_ignored_and_reported(self):
        con = self.connect()
        here = calibration(con)["fingerprint"]
        other = "cpu=Some Other CPU;cores=96;sockets=2;numa_nodes=8;llc_bytes=1;page_bytes=4096"
        try:
            self.write_cache(other)
            c = calibration(con)
            self.assertIs(c["fingerprint_matches"], False)
            self.assertEqual(c["cache_fingerprint"], other)
            self.assertEqual(c["fingerprint"], here)
            self.assertIn("another host", c["warning"])
            with open(CACHE, "w") as f:
                f.write("format=1\nfingerprint=%s\nthreads=lots\nend\n" % here)
            c = calibration(con)
            self.assertIsNone(c["fingerprint_matches"])
            self.assertTrue(c["cache_exists"])
            self.assertIn("ignored", c["warning"])
            self.assertIn("line 3", c["warning"])
        finally:
            con.execute("SELECT colstore_calibrate('clear')").fetchone()

    def child_calibration(self):
        code = ("import json, cstest\n"
                "con = cstest.connect()\n"
                "print(con.execute('SELECT colstore_calibration()').fetchone()[0])\n")
        env = cstest.child_env()
        env["COLSTORE_CACHE_DIR"] = CACHE_DIR
        out = subprocess.run([cstest.PYTHON, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout.strip().splitlines()[-1])

    def test_cache_is_read_at_load_only_when_fingerprint_matches(self):
        con = self.connect()
        here = calibration(con)["fingerprint"]
        try:
            self.write_cache(here)
            c = self.child_calibration()
            self.assertEqual(c["source"], "cache")
            self.assertTrue(c["fingerprint_matches"])
            self.assertEqual(c["effective"]["threads"], {"value": 1, "from": "calibration"})
            self.assertEqual(c["effective"]["prefetch"]["dram_sorted"], {"value": 64, "from": "calibration"})
            self.assertEqual(c["effective"]["prefetch"]["dram_unsorted"]["from"], "default")
            self.assertEqual(c["effective"]["mask_gate"], {"value": 0.25, "from": "calibration"})

            self.write_cache(here.replace("cores=", "cores=1"))  # a stale cache from another host
            c = self.child_calibration()
            self.assertEqual(c["source"], "defaults")
            self.assertIs(c["fingerprint_matches"], False)
            self.assertEqual(c["effective"]["threads"]["from"], "default")
        finally:
            con.execute("SELECT colstore_calibrate('clear')").fetchone()

    def test_bad_target_and_rounds_are_errors_listing_valid_ones(self):
        con = self.connect()
        self.assertSqlError(con, "SELECT colstore_calibrate('warp')",
                            contains=("'warp'", "all, threads, prefetch, mask, clear"))
        self.assertSqlError(con, "SELECT colstore_calibrate(NULL)", contains=("all, threads, prefetch, mask, clear",))
        for bad in ("0", "1001", "'x'", "2.5", "-1", "NULL"):
            self.assertSqlError(con, "SELECT colstore_calibrate('mask', %s)" % bad, contains=("1 to 1000",))
        self.assertFalse(os.path.exists(CACHE))

    def test_functions_are_direct_only(self):
        con = self.connect("direct.db")  # a schema view, not TEMP: SQLite trusts TEMP ones
        con.execute("CREATE VIEW v AS SELECT colstore_calibration() AS c")
        self.assertSqlError(con, "SELECT * FROM v", prefix=None, contains=("unsafe use",))


if __name__ == "__main__":
    try:
        cstest.main()
    finally:
        shutil.rmtree(CACHE_DIR, ignore_errors=True)
