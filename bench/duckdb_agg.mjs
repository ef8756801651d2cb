// duckdb_agg.mjs - DuckDB beside colstore_agg (bench_agg_sql.py drives it).
//
// Why a child process: DuckDB's Node API is the DuckDB a user on this
// host can install (npm), and keeping it running lets the Python bench
// interleave its queries with colstore's round by round, instead of timing
// the two engines minutes apart on a host whose load drifts.
//
// Protocol, one line each way: the first line of stdin is the CSV path;
// the script loads it into an in-memory table t(a, b, c, d, kind) and
// answers "ready <rows>".  Then each line "<threads>\t<sql>" runs sql with
// that many threads and answers "<seconds>\t<json rows>".  EOF ends it.
import { DuckDBInstance } from '@duckdb/node-api';
import * as readline from 'node:readline';

const rl = readline.createInterface({ input: process.stdin });
const lines = rl[Symbol.asyncIterator]();
const out = (s) => process.stdout.write(s + '\n');

const csv = (await lines.next()).value;
const instance = await DuckDBInstance.create(':memory:');
const con = await instance.connect();
await con.run(`CREATE TABLE t AS SELECT a, b, c, d,
                 CASE b % 5 WHEN 0 THEN 'muon' WHEN 1 THEN 'electron' WHEN 2 THEN 'photon'
                            WHEN 3 THEN 'jet' ELSE 'tau' END AS kind
               FROM read_csv('${csv}', header = false,
                             columns = {'a': 'DOUBLE', 'b': 'BIGINT', 'c': 'DOUBLE', 'd': 'INTEGER'})`);
const n = (await (await con.run('SELECT count(*) FROM t')).getRows())[0][0];
out(`ready ${n}`);
for (;;) {
  const { value, done } = await lines.next();
  if (done) break;
  const tab = value.indexOf('\t');
  const threads = value.slice(0, tab), sql = value.slice(tab + 1);
  await con.run(`SET threads = ${Number(threads)}`);
  const t0 = process.hrtime.bigint();
  const rows = await (await con.run(sql)).getRows();
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  out(`${secs}\t${JSON.stringify(rows, (k, v) => (typeof v === 'bigint' ? Number(v) : v))}`);
}
