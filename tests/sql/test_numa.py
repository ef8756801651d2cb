"""NUMA placement and thread binding through SQL.

colstore_config('numa', ...) is read when a store is opened and
colstore_config('binding', ...) at the start of every threaded kernel; the
results of a query must not depend on either.  colstore_last_plan() and
colstore_calibration() report each setting's requested value beside its
effective one on this host: on a single-node host every placement request but
'off' is effectively 'none (...)', never silently 'interleave'.
"""
import json
import os

import cstest

ROWS = cstest.scaled(300000, 270000)  # > 262144: the kernels go parallel
QUERIES = [
    ("SELECT count(*), total(v), min(k), max(k) FROM t WHERE v > 0.5 AND k >= 1000", False),
    ("SELECT k, v FROM t WHERE v BETWEEN 0.25 AND 0.2505 ORDER BY k", True),
    ("SELECT k FROM t WHERE k % 97 = 0 AND v < 0.5 ORDER BY k", True),
]


class Numa(cstest.StoreTest):
    def setUp(self):
        super().setUp()
        self.file = self.path("n.cst")
        con = self.connect()
        con.execute("CREATE VIRTUAL TABLE t USING colstore('%s', k INT64, v FLOAT64)" % self.file)
        con.execute("BEGIN")
        con.execute("WITH RECURSIVE c(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM c WHERE x < ?) "
                    "INSERT INTO t(k, v) SELECT x, ((x * 2654435761) % 1000003) / 1000003.0 FROM c", (ROWS - 1,))
        con.execute("COMMIT")
        con.close()

    def tearDown(self):
        con = cstest.connect()
        for name, value in (("numa", "auto"), ("binding", "off"), ("threads", 0)):
            con.execute("SELECT colstore_config(?, ?)", (name, value)).fetchone()
        con.close()
        super().tearDown()

    def open(self):
        """A fresh connection, so the store is opened under the current settings."""
        con = self.connect()
        con.execute("CREATE VIRTUAL TABLE t USING colstore('%s')" % self.file)
        return con

    def results(self, con):
        return [cstest.canon_rows(con.execute(q).fetchall(), ordered) for q, ordered in QUERIES]

    def settings(self, con):
        return json.loads(con.execute("SELECT colstore_last_plan()").fetchone()[0])["settings"]

    def host(self, con):
        return json.loads(con.execute("SELECT colstore_calibration()").fetchone()[0])["numa"]

    def test_placement_values_give_identical_results_and_report_effective(self):
        con = self.open()
        con.execute("SELECT colstore_config('numa', 'off')").fetchone()
        want = self.results(self.open())
        host = self.host(con)
        self.assertGreaterEqual(host["nodes"], 1)
        self.assertGreaterEqual(host["cpus"], 1)
        for value in ("auto", "interleave", "local", "off"):
            self.assertEqual(con.execute("SELECT colstore_config('numa', ?)", (value,)).fetchone()[0], value)
            c = self.open()
            self.assertEqual(self.results(c), want, "numa=%s" % value)
            numa = self.settings(c)["numa"]
            self.assertEqual(numa["requested"], value)
            eff = numa["effective"]
            if value == "off":
                self.assertEqual(eff, "off")
            elif host["nodes"] == 1 or not host["libnuma"]:
                self.assertTrue(eff.startswith("none ("), "numa=%s on this host: effective %r" % (value, eff))
            elif value == "local":
                self.assertEqual(eff, "local")
            else:
                self.assertTrue(eff == "interleave" or eff.startswith("none (mbind failed"), eff)
            placement = self.host(c)["placement"]
            self.assertEqual(placement, {"requested": value, "effective": eff})
        if host["nodes"] == 1:  # interleave was never attempted here
            self.assertNotIn("mbind", json.dumps(self.info(con, self.file)["warnings"]))

    def test_binding_gives_identical_threaded_results(self):
        con = self.open()
        self.assertEqual(con.execute("SELECT colstore_config('threads', 2)").fetchone()[0], 2)
        want = self.results(con)
        cpus = self.host(con)["cpus"]
        for value in ("close", "spread", "off"):
            self.assertEqual(con.execute("SELECT colstore_config('binding', ?)", (value,)).fetchone()[0], value)
            self.assertEqual(self.results(con), want, "binding=%s" % value)
            binding = self.settings(con)["binding"]
            self.assertEqual(binding["requested"], value)
            if value == "off":
                self.assertEqual(binding["effective"], "off")
            elif cpus < 2:
                self.assertEqual(binding["effective"], "off (single cpu)")
            else:
                self.assertEqual(binding["effective"], value)
            self.assertEqual(self.host(con)["binding"], binding)


if __name__ == "__main__":
    cstest.main()
