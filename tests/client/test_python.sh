#!/usr/bin/env bash
# /usr/bin/python3 loads build/colstore the way a user does, in a fresh
# process with Python's default transaction handling, and runs a few
# statements; a second fresh process reads what the first committed.
set -euo pipefail

ROOT=${COLSTORE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
MODULE=${COLSTORE_MODULE:-$ROOT/build/colstore}
PY=/usr/bin/python3
if [ ! -f "$MODULE.so" ]; then
  echo "FAIL: module not built: $MODULE.so"
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

"$PY" - "$MODULE" <<'PYEOF'
import sqlite3, sys
module = sys.argv[1]
con = sqlite3.connect("user.db")
con.enable_load_extension(True)
con.load_extension(module)           # the contract's spelling: no .so suffix
con.enable_load_extension(False)
n = con.execute("SELECT colstore_create('ev.cst', 'SELECT value AS id, value * 1.5 AS x, "
                "printf(''e%d'', value) AS name FROM json_each(''[1,2,3,4]'')')").fetchone()[0]
assert n == 4, n
con.execute("CREATE VIRTUAL TABLE ev USING colstore('ev.cst')")
assert con.execute("SELECT colstore_version()").fetchone()[0].startswith("colstore ")
assert con.execute("SELECT rowid, id, x, name FROM ev WHERE rowid BETWEEN 1 AND 2").fetchall() == \
    [(1, 2, 3.0, "e2"), (2, 3, 4.5, "e3")]
# _rows is an input: it reads back as the selection it was given, and is
# an error where there is none (docs/sql.md, "Hidden columns").
sel = bytes([1] + [0] * 7)
assert con.execute("SELECT id, _rows FROM ev WHERE _rows = ?", (sel,)).fetchall() == [(2, sel)]
try:
    con.execute("SELECT _rows FROM ev LIMIT 1").fetchall()
    raise SystemExit("reading _rows without a selection succeeded")
except sqlite3.Error as e:
    assert str(e).startswith("colstore: _rows"), e
# Python opens a transaction before the INSERT; commit() ends it.
con.execute("INSERT INTO ev VALUES (?, ?, ?)", (5, 7.5, "e5"))
con.commit()
assert con.execute("SELECT count(*), sum(id) FROM ev").fetchone() == (5, 15)
# An aggregate table: the totals computed in colstore, the filter a parameter.
con.execute("CREATE VIRTUAL TABLE temp.ev_tot USING colstore_agg(ev)")
assert con.execute("SELECT count, sum_id, max_id FROM ev_tot WHERE id > ?", (2,)).fetchone() == (3, 12, 5)
con.execute("INSERT INTO ev VALUES (6, 9.0, 'e6')")
con.rollback()
assert con.execute("SELECT count(*) FROM ev").fetchone()[0] == 5
try:
    con.execute("INSERT INTO ev VALUES ('six', 1.0, 'bad')")
    raise SystemExit("a bad INSERT succeeded")
except sqlite3.Error as e:
    assert str(e).startswith("colstore: "), e
    assert getattr(e, "sqlite_errorname", "SQLITE_MISMATCH") == "SQLITE_MISMATCH", e.sqlite_errorname
con.rollback()
# DELETE: the connection reads its own deletion before commit; rollback undoes it.
con.execute("DELETE FROM ev WHERE id > ?", (3,))
assert con.execute("SELECT count(*), sum(id) FROM ev").fetchone() == (3, 6)
con.rollback()
assert con.execute("SELECT count(*) FROM ev").fetchone()[0] == 5
# UPDATE: values change in place, rowids stay; visible to all after commit.
con.execute("UPDATE ev SET x = x * 2 WHERE id >= ?", (4,))
con.commit()
assert con.execute("SELECT rowid, x FROM ev WHERE id >= 4 ORDER BY rowid").fetchall() == [(3, 12.0), (4, 15.0)]
con.close()
PYEOF

# A fresh process: the table reconnects from user.db; the .so spelling loads too.
"$PY" - "$MODULE.so" <<'PYEOF'
import sqlite3, sys, json
con = sqlite3.connect("user.db")
con.enable_load_extension(True)
con.load_extension(sys.argv[1])
rows = con.execute("SELECT id, x, name FROM ev ORDER BY rowid").fetchall()
assert rows == [(1, 1.5, "e1"), (2, 3.0, "e2"), (3, 4.5, "e3"), (4, 12.0, "e4"), (5, 15.0, "e5")], rows
info = json.loads(con.execute("SELECT colstore_info('ev')").fetchone()[0])
assert (info["rows"], info["records"]) == (5, 2), info
# Compaction from a binding: the UPDATE's replaced chunks go, the rows stay.
rep = json.loads(con.execute("SELECT colstore_compact('ev')").fetchone()[0])
assert rep["after"]["free_bytes"] == 0 < rep["before"]["free_bytes"] and rep["after"]["records"] == 1, rep
assert con.execute("SELECT id, x, name FROM ev ORDER BY rowid").fetchall() == rows
assert con.execute("SELECT colstore_verify('ev')").fetchone()[0] == "ok"
con.close()
# Without loading the module the table cannot be used, and nothing crashes.
con = sqlite3.connect("user.db")
try:
    con.execute("SELECT * FROM ev")
    raise SystemExit("the table worked without the module")
except sqlite3.OperationalError as e:
    assert "no such module: colstore" in str(e), e
PYEOF

echo "PASS: python client"
