#!/usr/bin/env bash
# `make install` puts the module where sqlite3_load_extension finds it by its
# bare name: `.load colstore` in the sqlite3 shell and load_extension("colstore")
# in Python, from any directory.  Checked twice:
#  1. staged (DESTDIR, PREFIX=/usr): the files, the link and the SONAME that
#     ldconfig indexes; the bare name through LD_LIBRARY_PATH; make uninstall
#     removes exactly what was installed.
#  2. as root on a host with no colstore in /usr/local/lib: the real install
#     into the default prefix, the bare name with no environment at all, and
#     make uninstall, after which the bare name no longer resolves.
# The module is the one already built (make -o module: no rebuild here).
set -uo pipefail

ROOT=${COLSTORE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${COLSTORE_BUILD:-$ROOT/build}
skip() { echo "SKIP: $1"; exit 77; }
fail() { echo "FAIL: $1"; shift; printf '%s\n' "$@"; exit 1; }

command -v sqlite3 >/dev/null 2>&1 || skip "no sqlite3 shell on PATH"
command -v make >/dev/null 2>&1 || skip "no make on PATH"
[ -f "$BUILD/colstore.so" ] || fail "module not built: $BUILD/colstore.so"
PY=/usr/bin/python3

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mk() { make -s -C "$ROOT" -o module -o deps BUILD="$BUILD" "$@"; }

# Loads the bare name from $tmp/elsewhere (not the build directory) in the
# shell and in Python; prints what each returned.
load_bare() {
  mkdir -p "$tmp/elsewhere"
  (cd "$tmp/elsewhere" && env "$@" sqlite3 -batch -cmd '.load colstore' :memory: \
     "SELECT colstore_create('s.cst', 'SELECT 1 AS a UNION ALL SELECT 2');
      CREATE VIRTUAL TABLE t USING colstore('s.cst'); SELECT sum(a) FROM t;" 2>&1)
  (cd "$tmp/elsewhere" && env "$@" "$PY" -c '
import sqlite3
con = sqlite3.connect(":memory:")
con.enable_load_extension(True)
con.load_extension("colstore")
print(con.execute("SELECT colstore_version()").fetchone()[0].split()[0])' 2>&1)
  rm -f "$tmp/elsewhere/s.cst"
}

# 1. Staged.
stage="$tmp/stage"
mk install DESTDIR="$stage" PREFIX=/usr >"$tmp/install.log" 2>&1 || fail "make install DESTDIR failed" "$(cat "$tmp/install.log")"
lib="$stage/usr/lib"
[ -f "$lib/libcolstore.so" ] || fail "no $lib/libcolstore.so" "$(find "$stage")"
[ "$(readlink "$lib/colstore.so")" = libcolstore.so ] || fail "colstore.so is not a link to libcolstore.so" "$(ls -l "$lib")"
soname=$(objdump -p "$lib/libcolstore.so" 2>/dev/null | awk '$1 == "SONAME" { print $2 }')
[ "$soname" = colstore.so ] || fail "SONAME is '$soname', want colstore.so (ldconfig maps the bare name by it)"
[ -f "$stage/usr/share/doc/colstore/README.md" ] || fail "README.md not installed in share/doc/colstore"
# The README's links (docs/performance.md, docs/figures/families.svg) resolve
# in the installed copy as they do in the repository.
for link in $(grep -o '(docs/[A-Za-z0-9_./-]*\.\(md\|svg\))' "$ROOT/README.md" | tr -d '()' | sort -u); do
  [ -f "$stage/usr/share/doc/colstore/$link" ] || fail "README links $link, which is not installed beside it"
done
got=$(load_bare LD_LIBRARY_PATH="$lib")
[ "$got" = "$(printf '2\n3\ncolstore')" ] || fail "bare-name load through LD_LIBRARY_PATH" "$got"
mk uninstall DESTDIR="$stage" PREFIX=/usr >"$tmp/uninstall.log" 2>&1 || fail "make uninstall failed" "$(cat "$tmp/uninstall.log")"
left=$(find "$stage" -type f -o -type l)
[ -z "$left" ] || fail "make uninstall left files behind" "$left"
echo "ok: staged install (DESTDIR, PREFIX=/usr), SONAME colstore.so, LD_LIBRARY_PATH load, uninstall"

# 2. The real default prefix, as a user runs it.
if [ "$(id -u)" != 0 ]; then
  echo "SKIP (part 2): not root; the install into /usr/local was not tried"
  exit 0
fi
if [ -e /usr/local/lib/colstore.so ] || [ -e /usr/local/lib/libcolstore.so ]; then
  echo "SKIP (part 2): colstore is already installed in /usr/local/lib; left as found"
  exit 0
fi
command -v ldconfig >/dev/null 2>&1 || export PATH="$PATH:/sbin:/usr/sbin"
trap 'mk uninstall >/dev/null 2>&1; rm -rf "$tmp"' EXIT
mk install >"$tmp/install.log" 2>&1 || fail "make install failed" "$(cat "$tmp/install.log")"
grep -q "works from any directory" "$tmp/install.log" || fail "make install did not confirm the bare name" "$(cat "$tmp/install.log")"
got=$(load_bare -u LD_LIBRARY_PATH)
[ "$got" = "$(printf '2\n3\ncolstore')" ] || fail "bare-name load after make install" "$got"
mk uninstall >"$tmp/uninstall.log" 2>&1 || fail "make uninstall failed" "$(cat "$tmp/uninstall.log")"
[ ! -e /usr/local/lib/libcolstore.so ] && [ ! -e /usr/local/lib/colstore.so ] || fail "make uninstall left the module in /usr/local/lib"
got=$(load_bare -u LD_LIBRARY_PATH)
case "$got" in 2*) fail "the bare name still loads after make uninstall" "$got" ;; esac
echo "ok: make install into /usr/local, .load colstore and load_extension('colstore') from $tmp/elsewhere, make uninstall"
