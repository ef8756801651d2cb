#!/usr/bin/env bash
# Node with better-sqlite3 loads build/colstore (db.loadExtension, as the
# contract shows) and checks query results.  better-sqlite3 comes from
# tests/client/node_client.sh, which skips the test where node cannot run it.
set -uo pipefail

ROOT=${COLSTORE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${COLSTORE_BUILD:-$ROOT/build}
MODULE=${COLSTORE_MODULE:-$BUILD/colstore}
INSTALL_TIMEOUT=${COLSTORE_NPM_TIMEOUT:-300}

if [ ! -f "$MODULE.so" ]; then
  echo "FAIL: module not built: $MODULE.so"
  exit 1
fi
. "$ROOT/tests/client/node_client.sh"   # better-sqlite3 in $NODE_CLIENT, or SKIP

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/check.cjs" <<'JSEOF'
const assert = require('assert');
const Database = require('better-sqlite3');
const [modulePath, dir] = process.argv.slice(2);
const db = new Database(':memory:');
db.loadExtension(modulePath);
const store = dir + '/node.cst';
assert.match(db.prepare('SELECT colstore_version() AS v').get().v, /^colstore \d+\.\d+\.\d+ \(format 1-2: /);
const n = db.prepare("SELECT colstore_create(?, 'SELECT value AS id, value * 0.25 AS w, ''n'' || value AS tag " +
                     "FROM json_each(''[10, 20, 30]'')') AS n").get(store).n;
assert.strictEqual(n, 3);
db.exec(`CREATE VIRTUAL TABLE n USING colstore('${store}')`);
assert.deepStrictEqual(db.prepare('SELECT rowid AS r, id, w, tag FROM n WHERE rowid >= ?').all(1),
                       [{r: 1, id: 20, w: 5, tag: 'n20'}, {r: 2, id: 30, w: 7.5, tag: 'n30'}]);
// rowid has INTEGER affinity: text bounds compare as numbers.
assert.strictEqual(db.prepare('SELECT id FROM n WHERE rowid = ?').get('2').id, 30);
assert.deepStrictEqual(db.prepare("SELECT id FROM n WHERE rowid > '0' AND rowid < ' 2 '").all(), [{id: 20}]);
// Writes in a transaction; a failed one leaves nothing.
const ins = db.prepare('INSERT INTO n VALUES (?, ?, ?)');
db.transaction(() => { ins.run(40, 10.0, 'n40'); ins.run(50, 12.5, 'n50'); })();
assert.throws(() => db.transaction(() => { ins.run(60, 1, 'ok'); ins.run('bad', 1, 'x'); })(),
              (e) => e.code === 'SQLITE_MISMATCH' && /^colstore: /.test(e.message));
assert.throws(() => db.prepare('UPDATE n SET rowid = 7').run(), /colstore: the rowid of table n is the row's position/);
ins.run('70', '1.5', 'numeric text converts');
assert.deepStrictEqual(db.prepare('SELECT id, w FROM n WHERE rowid = 5').get(), {id: 70, w: 1.5});
assert.throws(() => ins.run('1e400', 1, 'x'), /colstore: cannot store TEXT '1e400' in column n.id of type INT64/);
assert.deepStrictEqual(db.prepare('SELECT count(*) AS c, sum(id) AS s FROM n').get(), {c: 6, s: 220});
// 64-bit integers come back exactly with safeIntegers.
db.exec(`CREATE VIRTUAL TABLE big USING colstore('${dir}/big.cst', v INT64)`);
db.prepare('INSERT INTO big VALUES (?)').run(-9223372036854775808n);
assert.strictEqual(db.prepare('SELECT v FROM big').safeIntegers().get().v, -9223372036854775808n);
assert.strictEqual(JSON.parse(db.prepare("SELECT colstore_info('n') AS j").get().j).rows, 6);
assert.strictEqual(db.prepare("SELECT colstore_verify('n') AS v").get().v, 'ok');
// An aggregate table, grouped, its filter a bound parameter.
db.exec('CREATE VIRTUAL TABLE temp.n_by USING colstore_agg(n, tag)');
assert.deepStrictEqual(db.prepare('SELECT tag, count, sum_id FROM n_by WHERE id >= ? AND id < ? ORDER BY tag').all(30, 50),
                       [{tag: 'n30', count: 1, sum_id: 30}, {tag: 'n40', count: 1, sum_id: 40}]);
// DELETE: its changes count, other rowids kept, the aggregate table sees it.
assert.strictEqual(db.prepare('DELETE FROM n WHERE id >= ? AND id < ?').run(30, 50).changes, 2);
assert.deepStrictEqual(db.prepare('SELECT rowid AS r FROM n ORDER BY rowid').all().map((x) => x.r), [0, 1, 4, 5]);
assert.deepStrictEqual(db.prepare('SELECT count(*) AS c FROM n_by WHERE id >= 30 AND id < 50').get(), {c: 0});
// UPDATE: in place, rowids kept.
assert.strictEqual(db.prepare('UPDATE n SET tag = ? WHERE id > ?').run('big', 60).changes, 1);
assert.deepStrictEqual(db.prepare('SELECT rowid AS r, tag FROM n WHERE id > 60').all(), [{r: 5, tag: 'big'}]);
// Compaction, renumbered: the deleted rows go, the others become rowids 0..3.
const rep = JSON.parse(db.prepare("SELECT colstore_compact('n', 'renumber') AS c").get().c);
assert.deepStrictEqual([rep.before.positions, rep.after.positions, rep.after.rows], [6, 4, 4]);
assert.deepStrictEqual(db.prepare('SELECT rowid AS r, tag FROM n WHERE id > 60').all(), [{r: 3, tag: 'big'}]);
db.close();
console.log('node checks passed');
JSEOF

if ! out=$(cd "$NODE_CLIENT" && NODE_PATH="$NODE_CLIENT/node_modules" node "$tmp/check.cjs" "$MODULE" "$tmp" 2>&1); then
  echo "FAIL: node client"
  echo "$out"
  exit 1
fi
echo "$out"
echo "PASS: node client"
