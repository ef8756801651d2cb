#!/usr/bin/env bash
# The sqlite3 shell loads build/colstore the way the README shows (.load),
# makes a store with colstore_create, opens it as a table, queries it, and
# gets exactly the expected output; a bad INSERT gives a `colstore:` error.
set -euo pipefail

ROOT=${COLSTORE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
MODULE=${COLSTORE_MODULE:-$ROOT/build/colstore}
SHELL_BIN=$(command -v sqlite3 || true)
if [ -z "$SHELL_BIN" ]; then
  echo "SKIP: no sqlite3 shell on PATH"
  exit 77  # ctest: skipped (SKIP_RETURN_CODE)
fi
if [ ! -f "$MODULE.so" ]; then
  echo "FAIL: module not built: $MODULE.so"
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

fail() {
  echo "FAIL: $1"
  shift
  printf '%s\n' "$@"
  exit 1
}

out=$("$SHELL_BIN" -batch -bail :memory: 2>&1 <<SQL
.load $MODULE
.mode list
.separator |
SELECT colstore_create('shell.cst', 'WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 5)
  SELECT i AS n, i * 0.5 AS half, CASE WHEN i % 2 THEN ''odd'' END AS parity, ''ré'' || i AS label FROM c');
CREATE VIRTUAL TABLE s USING colstore('shell.cst');
SELECT rowid, n, half, parity, label, typeof(n), typeof(half), typeof(parity) FROM s WHERE rowid >= 1 AND rowid < 4;
SELECT count(*), sum(n), total(half), group_concat(label, ',') FROM s;
INSERT INTO s VALUES (6, 3.0, NULL, 'six');
SELECT rowid, n, half, label FROM s WHERE rowid = 5;
SELECT json_extract(colstore_info('s'), '\$.rows'), json_extract(colstore_info('s'), '\$.columns[1].type');
SELECT colstore_verify('shell.cst');
CREATE VIRTUAL TABLE temp.s_by USING colstore_agg(s, parity);
SELECT quote(parity), count, sum_n, max_label FROM s_by WHERE n > 1 ORDER BY parity;
DROP TABLE s_by;
DROP TABLE s;
CREATE VIRTUAL TABLE t USING colstore('t.cst', a INT8 NOT NULL, b TEXT);
INSERT INTO t VALUES (1, 'x'), (-2, NULL);
SELECT a, quote(b) FROM t ORDER BY a;
SQL
) || fail "the shell session failed" "$out"

expected='5
1|2|1.0||ré2|integer|real|null
2|3|1.5|odd|ré3|integer|real|text
3|4|2.0||ré4|integer|real|null
5|15|7.5|ré1,ré2,ré3,ré4,ré5
5|6|3.0|six
6|FLOAT64
ok
NULL|3|12|six
'"'"'odd'"'"'|2|8|ré5
-2|NULL
1|'"'"'x'"'"''

if [ "$out" != "$expected" ]; then
  fail "output differs" "--- expected" "$expected" "--- got" "$out" "--- diff" "$(diff <(echo "$expected") <(echo "$out") || true)"
fi

# Errors: a `colstore:` message, a non-zero exit with -bail, nothing written.
set +e
err=$("$SHELL_BIN" -batch -bail :memory: 2>&1 <<SQL
.load $MODULE
CREATE VIRTUAL TABLE t USING colstore('t.cst');
INSERT INTO t VALUES (300, 'too big');
SELECT 'not reached';
SQL
)
rc=$?
set -e
[ $rc -ne 0 ] || fail "a failing INSERT did not make the shell exit non-zero" "$err"
case "$err" in
  *"colstore: cannot store INTEGER 300 in column t.a of type INT8"*) ;;
  *) fail "unexpected error text" "$err" ;;
esac
case "$err" in *"not reached"*) fail "-bail did not stop at the error" "$err" ;; esac

count=$("$SHELL_BIN" -batch :memory: <<SQL
.load $MODULE
CREATE VIRTUAL TABLE t USING colstore('t.cst');
SELECT count(*) FROM t;
SQL
)
[ "$count" = "2" ] || fail "the failed INSERT changed the table: count=$count"

# A missing module is the shell's error, not a crash.
if "$SHELL_BIN" -batch :memory: ".load $tmp/nonexistent" >/dev/null 2>&1; then
  fail "loading a missing module succeeded"
fi

echo "PASS: sqlite3 shell client"
