// duckdb_import.mjs - DuckDB's CSV import beside colstore_import
// (bench_import.py runs it, once per timed run, as it runs each sqlite3
// shell: a fresh process pays its own start, as a user's does).
//
// Why this shape: issue 23's target is DuckDB's own route from a CSV to a
// table on disk, `CREATE TABLE t AS SELECT * FROM read_csv('f.csv')` into
// a database file, with its type detection, at a given thread count.  The
// script times that statement alone (not the process start or the module
// load, which colstore's timing includes) and prints, one line,
// "<seconds>\t<rows>\t<json of the column types>" so the bench can check
// that DuckDB typed the columns as colstore did.
//
//   node duckdb_import.mjs <csv> <database file> <threads>
import { DuckDBInstance } from '@duckdb/node-api';

const [csv, dbPath, threads] = process.argv.slice(2);
const instance = await DuckDBInstance.create(dbPath);
const con = await instance.connect();
await con.run(`SET threads = ${Number(threads)}`);
const t0 = process.hrtime.bigint();
await con.run(`CREATE TABLE t AS SELECT * FROM read_csv('${csv.replaceAll("'", "''")}')`);
const secs = Number(process.hrtime.bigint() - t0) / 1e9;
const n = (await (await con.run('SELECT count(*) FROM t')).getRows())[0][0];
const types = (await (await con.run("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 't' ORDER BY ordinal_position")).getRows());
process.stdout.write(`${secs}\t${n}\t${JSON.stringify(types)}\n`);
