// duckdb_parquet.mjs - DuckDB's side of bench_parquet.py: it writes the
// bench table as Parquet, and times its own import of a Parquet file.
//
// Why this shape: issue 24's target is DuckDB's route from a Parquet file
// to a table on disk, `CREATE TABLE t AS SELECT * FROM read_parquet(...)`
// into a database file, at a given thread count.  Each timed run is a
// fresh process (as each colstore run is a fresh sqlite3 shell); the
// statement's own time is printed beside the aggregates the bench compares
// with colstore's store, so a wrong import could not pass as a fast one.
//
//   node duckdb_parquet.mjs write <csv> <parquet> <codec>
//   node duckdb_parquet.mjs import <parquet> <database file> <threads>
//     prints "<seconds>\t<json of [count, sum, min, max] per column a, b, c, d>"
import { DuckDBInstance } from '@duckdb/node-api';

const [mode, src, dst, arg] = process.argv.slice(2);
const q = (s) => s.replaceAll("'", "''");
const big = (k, v) => (typeof v === 'bigint' ? v.toString() : v);
if (mode === 'write') {
  const instance = await DuckDBInstance.create(':memory:');
  const con = await instance.connect();
  await con.run(`COPY (SELECT * FROM read_csv('${q(src)}', columns = {'a': 'BIGINT', 'b': 'DOUBLE', 'c': 'BIGINT', 'd': 'DOUBLE'}, header = true))
                 TO '${q(dst)}' (FORMAT parquet, COMPRESSION ${arg})`);
} else {
  const instance = await DuckDBInstance.create(dst);
  const con = await instance.connect();
  await con.run(`SET threads = ${Number(arg)}`);
  const t0 = process.hrtime.bigint();
  await con.run(`CREATE TABLE t AS SELECT * FROM read_parquet('${q(src)}')`);
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  const aggs = (await (await con.run(
    'SELECT count(a), sum(a), min(a), max(a), count(b), sum(b), min(b), max(b), count(c), sum(c), min(c), max(c), count(d), sum(d), min(d), max(d) FROM t')).getRows())[0];
  process.stdout.write(`${secs}\t${JSON.stringify(aggs, big)}\n`);
}
