# Sourced by the tests that use the Python package as a user installs it
# (test_wheel.sh, test_dask.sh): checks the module and the venv tools (the
# test prints SKIP and exits 77 without python3-venv, setuptools or wheel),
# builds the wheel from the module under test into $tmp/dist with
# packaging/build.sh (so the wheel tested is the one `make wheel` gives),
# and defines new_venv DIR [venv options] to make a fresh virtual
# environment of /usr/bin/python3 with the wheel installed.
# Sets: ROOT, MODULE, PY, tmp (removed at exit), WHEEL; defines skip, fail.

ROOT=${COLSTORE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
MODULE=${COLSTORE_MODULE:-$ROOT/build/colstore}
PY=/usr/bin/python3

skip() { echo "SKIP: $1"; exit 77; }
fail() { echo "FAIL: $1"; exit 1; }

[ -f "$MODULE.so" ] || fail "module not built: $MODULE.so"
"$PY" -c "import venv, ensurepip, setuptools, wheel" 2>/dev/null ||
  skip "python3-venv, python3-setuptools or python3-wheel is not installed"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$ROOT/packaging/build.sh" wheel "$MODULE.so" "$tmp/dist" >/dev/null || fail "the wheel did not build"
WHEEL=$(ls "$tmp"/dist/colstore-*.whl)

new_venv() {
  local dir=$1
  shift
  "$PY" -m venv "$@" "$dir" || fail "python3 -m venv $* failed"
  "$dir/bin/python" -m pip install -q --no-index --disable-pip-version-check "$WHEEL" ||
    fail "pip install of $(basename "$WHEEL") into a fresh venv failed"
}
