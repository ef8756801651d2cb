#!/usr/bin/env bash
# profile_sql.sh - instructions per row, by function, for bench_sql's queries.
#
# Runs bench_sql --profile under callgrind, collecting only inside
# profile_target() (one run of one variant, after a warm-up run outside it),
# and prints the total instructions (Ir), Ir per row, and the functions with
# the most self Ir per row.  Instruction counts are deterministic, so unlike
# the timings they do not depend on how busy the machine is; they do not
# see cache misses or branch mispredictions (callgrind counts instructions,
# not cycles).
#
# usage: bench/profile_sql.sh [-b BUILD_DIR] [-d DATA_DIR] [-r ROWS] [-n TOP] [VARIANT ...]
#   VARIANT is QUERY/NAME as in bench_sql's table, e.g. "sum(a)/colstore",
#   or create/colstore, open/core, open/sql.  Default: the sum(a) variants, sum(b), count(*)
#   and the range query for colstore and native, colstore_create, and both opens.
#   ROWS defaults to 1000000 (the --quick data set; made on first use).
set -euo pipefail

build=build
data=
rows=1000000
top=12
while getopts "b:d:r:n:h" opt; do
  case $opt in
    b) build=$OPTARG ;;
    d) data=$OPTARG ;;
    r) rows=$OPTARG ;;
    n) top=$OPTARG ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
data=${data:-$build/bench-data}
bench=$build/bench_sql
[ -x "$bench" ] || { echo "profile_sql: $bench not found; build first (cmake --build $build)" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "profile_sql: valgrind is not installed" >&2; exit 1; }
command -v callgrind_annotate >/dev/null || { echo "profile_sql: callgrind_annotate is not installed" >&2; exit 1; }

if [ $# -eq 0 ]; then
  set -- "sum(a)/bench_floor(array)" "sum(a)/bench_floor(map)" "sum(a)/colstore" "sum(a)/native" \
    "sum(a)/native, mmap_size=4G" "sum(b)/colstore" "sum(b)/native" "count(*)/colstore" "count(*)/native" \
    "range sum(a)/colstore" "range sum(a)/native" "create/colstore" "open/core" "open/sql"
fi

# Make (or reuse) the data set once, outside valgrind.
"$bench" --rows "$rows" --dir "$data" --profile "count(*)/colstore" >/dev/null

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for v in "$@"; do
  f=$out/cg.out
  log=$(valgrind --tool=callgrind --collect-atstart=no --toggle-collect=profile_target \
    --callgrind-out-file="$f" "$bench" --rows "$rows" --dir "$data" --profile "$v" 2>&1)
  visited=$(printf '%s\n' "$log" | sed -n 's/.*rows visited \([0-9]*\).*/\1/p')
  per=${visited:-1}
  case $v in open/*) per=1 ;; esac
  total=$(callgrind_annotate --auto=no "$f" 2>/dev/null | awk '/PROGRAM TOTALS/ && !done {gsub(",", "", $1); print $1; done = 1}')
  printf '\n== %s: %s Ir in total' "$v" "$total"
  if [ "$per" != 1 ]; then
    awk -v t="$total" -v n="$per" 'BEGIN { printf ", %.1f Ir per row (%d rows)\n", t / n, n }'
  else
    printf ' (one open)\n'
  fi
  callgrind_annotate --auto=no --inclusive=no "$f" 2>/dev/null |
    awk -v n="$per" -v top="$top" '
      /file:function/ { on = 1; next }
      on && /^-+$/ { next }
      on && k < top && NF >= 2 && $1 ~ /^[0-9,]+$/ {
        ir = $1; gsub(",", "", ir);
        fn = $0; sub(/^ *[0-9,]+ *(\([^)]*\))? */, "", fn); sub(/ \[.*\]$/, "", fn);
        lib = ""; m = split($0, parts, / \[/); if (m > 1) { lib = parts[m]; sub(/\]$/, "", lib); sub(/.*\//, "", lib) }
        printf "  %10.2f Ir%s  %-48s %s\n", ir / n, (n > 1 ? "/row" : "    "), fn, lib;
        k++
      }'
done
