#!/usr/bin/env bash
# Builds a colstore package from a built module:
#   packaging/build.sh wheel MODULE.so OUTDIR   -> OUTDIR/colstore-VERSION-py3-none-PLATFORM.whl
#   packaging/build.sh npm   MODULE.so OUTDIR   -> OUTDIR/colstore-VERSION.tgz
#
# Each package is staged in a temporary folder with a stripped copy of the
# module and built there, so the source folders (python/, node/) stay clean:
# the wheel with Debian's setuptools and wheel (`pip wheel
# --no-build-isolation --no-index`: no network), the tarball with `npm pack`.
# `make wheel`, `make npm` and the tests that install the packages
# (tests/client/test_wheel.sh, test_npm.sh) all build through here, so the
# tests check what a user gets.
set -euo pipefail
usage="usage: packaging/build.sh wheel|npm MODULE.so OUTDIR"
kind=${1:?$usage}
module=${2:?$usage}
outdir=${3:?$usage}
root=$(cd "$(dirname "$0")/.." && pwd)
[ -f "$module" ] || { echo "colstore: module not built: $module" >&2; exit 1; }
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

case "$kind" in
  wheel)
    cp "$root/python/setup.py" "$root/python/README.md" "$stage/"
    mkdir "$stage/colstore"
    cp "$root"/python/colstore/*.py "$stage/colstore/"
    strip --strip-debug -o "$stage/colstore/colstore.so" "$module"
    (cd "$stage" && /usr/bin/python3 -m pip wheel --no-build-isolation --no-deps --no-index \
       --disable-pip-version-check -q -w "$outdir" .)
    ls "$outdir"/colstore-*.whl ;;
  npm)
    cp "$root"/node/package.json "$root"/node/README.md "$root"/node/index.* "$stage/"
    mkdir "$stage/lib"
    strip --strip-debug -o "$stage/lib/colstore.so" "$module"
    (cd "$stage" && npm pack --silent --pack-destination "$outdir" >/dev/null)
    ls "$outdir"/colstore-*.tgz ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
