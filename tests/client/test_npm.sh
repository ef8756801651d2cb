#!/usr/bin/env bash
# The npm package as a user gets it: the tarball that `make npm` packs
# (packaging/build.sh, from the module under test) is installed with
# `npm install ./colstore-*.tgz` into a fresh directory (no network: the
# package has no dependencies) and used from there with better-sqlite3:
# require() and import, getLoadablePath() inside the installed package, the
# type declarations present, and the README's Node example run as written.
# better-sqlite3 comes from tests/client/node_client.sh, which skips the
# test where node cannot run it.
set -uo pipefail

ROOT=${COLSTORE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${COLSTORE_BUILD:-$ROOT/build}
MODULE=${COLSTORE_MODULE:-$BUILD/colstore}
INSTALL_TIMEOUT=${COLSTORE_NPM_TIMEOUT:-300}

fail() { echo "FAIL: $1"; exit 1; }
[ -f "$MODULE.so" ] || fail "module not built: $MODULE.so"
. "$ROOT/tests/client/node_client.sh"   # better-sqlite3 in $NODE_CLIENT, or SKIP

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$ROOT/packaging/build.sh" npm "$MODULE.so" "$tmp/dist" >/dev/null || fail "the npm tarball did not pack"
tgz=$(ls "$tmp"/dist/colstore-*.tgz)
app="$tmp/app"
mkdir -p "$app" && cd "$app" && echo '{"name": "colstore-user", "private": true}' >package.json
timeout "$INSTALL_TIMEOUT" npm install --no-audit --no-fund --offline --loglevel=error "$tgz" >"$tmp/install.log" 2>&1 ||
  { cat "$tmp/install.log"; fail "npm install of $(basename "$tgz") into a fresh directory failed"; }
[ -f node_modules/colstore/index.d.ts ] || fail "the package has no type declarations"

# The README's Node example: the js block whose fence names this test.
/usr/bin/python3 - "$ROOT/README.md" "$app/readme.cjs" <<'PYEOF' || fail "README.md has no js block marked for tests/client/test_npm.sh"
import re, sys
blocks = re.findall(r"^```js [^\n]*test_npm\.sh[^\n]*\n(.*?)^```$", open(sys.argv[1], encoding="utf-8").read(), re.S | re.M)
if not blocks:
    sys.exit(1)
open(sys.argv[2], "w").write(blocks[0])
PYEOF

cat >check.cjs <<'JSEOF'
const assert = require('assert');
const path = require('path');
const Database = require('better-sqlite3');
const colstore = require('colstore');
const p = colstore.getLoadablePath();
assert.strictEqual(path.dirname(path.dirname(p)), path.resolve('node_modules/colstore'), p);
const db = new Database(':memory:');
colstore.load(db);
assert.match(db.prepare('SELECT colstore_version() AS v').get().v, /^colstore 0\.1\.0 /);
db.prepare("SELECT colstore_create('n.cst', 'SELECT value AS id FROM json_each(''[1,2,3]'')')").get();
db.exec("CREATE VIRTUAL TABLE n USING colstore('n.cst')");
assert.strictEqual(db.prepare('SELECT sum(id) AS s FROM n').get().s, 6);
assert.throws(() => colstore.load({}), /^TypeError: colstore: load\(db\) takes a better-sqlite3 Database/);
JSEOF
cat >check.mjs <<'JSEOF'
import assert from 'assert';
import Database from 'better-sqlite3';
import * as colstore from 'colstore';
import colstoreDefault from 'colstore';
assert.strictEqual(colstore.getLoadablePath(), colstoreDefault.getLoadablePath());
const db = new Database(':memory:');
colstore.load(db);
assert.strictEqual(db.prepare('SELECT count(*) > 0 AS c FROM pragma_function_list WHERE name = ?').get('colstore_create').c, 1);
JSEOF
# better-sqlite3 beside colstore in the app's node_modules, as a user's
# install has it (ES modules resolve no NODE_PATH): a link to the one
# tests/client/node_client.sh installed.
ln -s "$NODE_CLIENT/node_modules/better-sqlite3" node_modules/better-sqlite3
for f in readme.cjs check.cjs check.mjs; do
  out=$(node "$f" 2>&1) || { echo "$out"; fail "$f failed"; }
done
echo "ok: $(basename "$tgz") installs offline into a fresh directory; require, import and the README example work"
