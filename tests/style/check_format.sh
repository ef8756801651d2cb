#!/bin/bash
# check_format.sh - every C file of the project is laid out as .clang-format
# says, so layout is settled by the tool and never argued over in review.
#
# clang-format's output changes between major versions, so the check runs
# only with the version the Makefile installs (Debian 12's clang-format 14);
# with another one, or none, it reports SKIPPED (exit 77) and says why.
# To fix a failure: clang-format -i FILE (the check prints the files).
#
#     tests/style/check_format.sh [SOURCE_DIR]
set -u
src=${1:-$(dirname "$0")/../..}
cd "$src" || exit 1
want=14
if ! command -v clang-format >/dev/null; then
  echo "SKIPPED: clang-format is not installed (apt-get install clang-format)"; exit 77
fi
have=$(clang-format --version | sed -n 's/.*version \([0-9]*\).*/\1/p')
if [ "$have" != "$want" ]; then
  echo "SKIPPED: clang-format $have lays code out differently from $want, which the tree follows"; exit 77
fi
files=$(find core ext bench tests -name build -prune -o \( -name '*.c' -o -name '*.h' \) -print | sort)
bad=0
for f in $files; do
  if ! clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f (run: clang-format -i $f)"; bad=$((bad + 1))
  fi
done
n=$(echo "$files" | wc -w)
if [ "$bad" -ne 0 ]; then echo "$bad of $n files differ from .clang-format"; exit 1; fi
echo "$n files follow .clang-format"
