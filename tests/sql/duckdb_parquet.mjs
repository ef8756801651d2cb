// duckdb_parquet.mjs - DuckDB as test_parquet.py's oracle: it writes the
// Parquet files colstore imports and reads them back for the comparison.
//
// One child per test run, fed one JSON request a line on stdin
// ({"sql": "..."}), answering one JSON line on stdout: {"rows": [[...]]} or
// {"error": "..."}.  BIGINT, HUGEINT and the unsigned 64-bit values come as
// JavaScript BigInts, which JSON cannot carry: they are sent as decimal
// strings, and the test asks for every integer as text anyway, so nothing
// is rounded through a double on the way.
//
//   node duckdb_parquet.mjs        (cwd: the directory @duckdb/node-api is in)
import { DuckDBInstance } from '@duckdb/node-api';
import readline from 'node:readline';

const instance = await DuckDBInstance.create(':memory:');
const con = await instance.connect();
await con.run('SET threads = 1'); // the file's row order, and the same files each run
const lines = readline.createInterface({ input: process.stdin });
const out = (o) => process.stdout.write(JSON.stringify(o, (k, v) => (typeof v === 'bigint' ? v.toString() : v)) + '\n');
out({ ready: (await (await con.run('SELECT version()')).getRows())[0][0] });
for await (const line of lines) {
  const { sql } = JSON.parse(line);
  try {
    out({ rows: await (await con.run(sql)).getRows() });
  } catch (e) {
    out({ error: String(e.message || e) });
  }
}
