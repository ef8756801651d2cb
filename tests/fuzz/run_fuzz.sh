#!/usr/bin/env bash
# run_fuzz.sh BUILD TARGET SECONDS [extra libFuzzer flags...]
#
# Runs one libFuzzer target (make fuzz calls it per target) and prints what
# it did: executions, executions per second, coverage, and the inputs of any
# crash, leak or timeout, which libFuzzer saves under BUILD/artifacts/.
#
# The corpus grows in BUILD/corpus/TARGET and is kept between runs (it is in
# the build directory, so never in git).  Each run starts from it plus a seed
# directory made here: the golden files (tests/data/valid, corrupt) for
# fuzz_store, tests/fuzz/seeds/<name>/ where a target has a seed corpus
# (fuzz_import), and for every target its committed regressions
# (tests/fuzz/regressions/<name>/), so what once failed is tried first.
set -u
build=$1 target=$2 seconds=$3
shift 3
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$build/tests/fuzz/$target
name=${target#fuzz_}
[ -x "$bin" ] || { echo "run_fuzz: $bin is not built; run make fuzz-build" >&2; exit 2; }

case $name in
  store) max_len=65536 ;;
  filter) max_len=4096 ;;
  writer) max_len=8192 ;;
  import) max_len=8195 ;;
  parquet) max_len=16384 ;;
  arrow) max_len=8192 ;;
  *) max_len=4096 ;;
esac

corpus=$build/corpus/$target seeds=$build/seeds/$target artifacts=$build/artifacts/$target
log=$build/logs/$target.log
mkdir -p "$corpus" "$seeds" "$artifacts" "$(dirname "$log")"
rm -f "$seeds"/*
if [ "$name" = store ]; then
  for d in valid corrupt; do
    for f in "$root"/tests/data/$d/*.cst; do cp "$f" "$seeds/${d}_$(basename "$f")"; done
  done
fi
if [ -d "$root/tests/fuzz/seeds/$name" ]; then
  for f in "$root"/tests/fuzz/seeds/$name/*; do [ -f "$f" ] && cp "$f" "$seeds/seed_$(basename "$f")"; done
fi
if [ -d "$root/tests/fuzz/regressions/$name" ]; then
  for f in "$root"/tests/fuzz/regressions/$name/*; do [ -f "$f" ] && cp "$f" "$seeds/regression_$(basename "$f")"; done
fi

before=$(ls "$artifacts" | wc -l)
echo "run_fuzz: $target for ${seconds}s (log: $log)"
# The store's threads would only add noise on a shared host: kernels run
# serially at these sizes anyway.
OMP_NUM_THREADS=1 "$bin" "$corpus" "$seeds" \
  -max_total_time="$seconds" -max_len="$max_len" -rss_limit_mb=2048 -timeout=10 \
  -print_final_stats=1 -artifact_prefix="$artifacts/" "$@" >"$log" 2>&1
rc=$?

runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
speed=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1)
corp=$(ls "$corpus" | wc -l)
echo "run_fuzz: $target: ${runs:-?} executions, ${speed:-?} exec/s, ${cov:-cov: ?}, corpus $corp inputs"
after=$(ls "$artifacts" | wc -l)
if [ "$rc" != 0 ] || [ "$after" -gt "$before" ]; then
  echo "run_fuzz: $target FAILED (exit $rc); new artifacts:"
  ls -t "$artifacts" | head -n $((after - before > 0 ? after - before : 1)) | sed "s|^|  $artifacts/|"
  grep -m1 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|check failed' "$log" | sed 's/^/  /'
  echo "  reproduce: $bin <artifact>; minimize: $bin -minimize_crash=1 -runs=10000 <artifact>"
  exit 1
fi
exit 0
