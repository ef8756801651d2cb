// duckdb_export.mjs - DuckDB's side of bench_export.py: it loads the bench
// table into a DuckDB database file, times its own export of that table
// (COPY t TO ...), and reads any exported file back for the comparison.
//
// Why this shape: issue 24's target is DuckDB's `COPY t TO 'f.parquet'`
// from its database file at a given thread count.  Each timed run is a
// fresh process (as each colstore run is a fresh sqlite3 shell) and
// prints the statement's own time.
//
//   node duckdb_export.mjs load <csv> <database file>
//   node duckdb_export.mjs export <database file> <out> <codec|csv> <threads>   prints "<seconds>"
//   node duckdb_export.mjs check <file>   prints the JSON of [count, sum, min, max] of a, b, c, d
import { DuckDBInstance } from '@duckdb/node-api';

const [mode, src, dst, arg, threads] = process.argv.slice(2);
const q = (s) => s.replaceAll("'", "''");
const big = (k, v) => (typeof v === 'bigint' ? v.toString() : v);
const cols = "{'a': 'BIGINT', 'b': 'DOUBLE', 'c': 'BIGINT', 'd': 'DOUBLE'}";
if (mode === 'load') {
  const instance = await DuckDBInstance.create(dst);
  const con = await instance.connect();
  await con.run(`CREATE OR REPLACE TABLE t AS SELECT * FROM read_csv('${q(src)}', columns = ${cols}, header = true)`);
} else if (mode === 'export') {
  const instance = await DuckDBInstance.create(src, { access_mode: 'READ_ONLY' });
  const con = await instance.connect();
  await con.run(`SET threads = ${Number(threads)}`);
  const opts = arg === 'csv' ? 'FORMAT csv, HEADER true' : `FORMAT parquet, COMPRESSION ${arg}`;
  const t0 = process.hrtime.bigint();
  await con.run(`COPY t TO '${q(dst)}' (${opts})`);
  process.stdout.write(`${Number(process.hrtime.bigint() - t0) / 1e9}\n`);
} else {
  const instance = await DuckDBInstance.create(':memory:');
  const con = await instance.connect();
  const from = src.endsWith('.csv') ? `read_csv('${q(src)}', columns = ${cols}, header = true)` : `read_parquet('${q(src)}')`;
  const aggs = (await (await con.run(
    `SELECT count(a), sum(a), min(a), max(a), count(b), sum(b), min(b), max(b), count(c), sum(c), min(c), max(c), count(d), sum(d), min(d), max(d) FROM ${from}`)).getRows())[0];
  process.stdout.write(`${JSON.stringify(aggs, big)}\n`);
}
