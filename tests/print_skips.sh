#!/usr/bin/env bash
# Prints, after a ctest run, the tests that were skipped (they exit 77: no
# sqlite3 shell, no node, no ../shared/slt) with the reason each printed, so
# that a test that could not run shows at the end of `make test` instead of
# passing in silence.  ctest's own summary names them but not why.
# Usage: tests/print_skips.sh BUILD_DIR CTEST_OUTPUT_FILE
build=${1:-build}
summary=${2:-$build/ctest-output.txt}
log="$build/Testing/Temporary/LastTest.log"
[ -f "$summary" ] || exit 0
names=$(sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\) (Skipped)$/\1/p' "$summary")
[ -n "$names" ] || exit 0
echo
echo "colstore: $(echo "$names" | wc -l) test(s) skipped (not run, not passed):"
for name in $names; do
  echo "  $name"
  [ -f "$log" ] && awk -v t="$name" '
    $0 == "1/1 Test: " t || ($0 ~ /^[0-9]+\/[0-9]+ Test: / && $3 == t) { on = 1; next }
    on && /^Output:$/ { out = 1; next }
    out && /^<end of output>$/ { exit }
    out && /SKIP/ { print "    " $0 }' "$log"
done
exit 0
