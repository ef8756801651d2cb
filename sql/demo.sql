-- colstore demo: make a 1M-row store of event-like data from a query, then
-- query it from the sqlite3 shell.  Run with `make demo` (which loads the
-- module and turns .timer on), or by hand:
--   sqlite3 -cmd '.load build/colstore' -cmd '.timer on' :memory: < sql/demo.sql
.headers on
.mode column

-- 1. A store from any query.  Expressions have no declared type, so the
--    column types are inferred from the values (integer -> INT64,
--    real -> FLOAT64, text -> TEXT); NULLs stay NULLs.
SELECT colstore_create('demo.cst', '
  WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999999)
  SELECT i                                                AS event,
         (i * 2654435761) % 1000                          AS run,
         abs(random() % 1000000) / 1000.0                 AS energy,
         CASE WHEN i % 10 = 0 THEN NULL
              ELSE (abs(random()) % 2000 - 1000) / 100.0 END AS eta,
         CASE i % 4 WHEN 0 THEN ''muon'' WHEN 1 THEN ''electron''
                    WHEN 2 THEN ''photon'' ELSE ''jet'' END AS kind
  FROM n', 'replace') AS rows_written;

-- 2. Open it as a table.  The schema comes from the file.
CREATE VIRTUAL TABLE ev USING colstore('demo.cst');
SELECT json_extract(colstore_info('ev'), '$.rows') AS rows,
       json_extract(colstore_info('ev'), '$.records') AS records,
       json_extract(colstore_info('ev'), '$.bytes') AS bytes;
SELECT json_extract(value, '$.name') AS col, json_extract(value, '$.type') AS type,
       json_extract(value, '$.null_count') AS nulls, json_extract(value, '$.sorted') AS sorted
FROM json_each(colstore_info('ev'), '$.columns');

-- 3. Full scans read straight from the mapping.
SELECT count(*), round(avg(energy), 3) AS avg_energy, count(eta) AS with_eta FROM ev;
SELECT kind, count(*) AS n, round(avg(energy), 2) AS avg_energy FROM ev GROUP BY kind ORDER BY kind;

-- 4. rowid is the 0-based row position: lookups and ranges touch only those rows.
SELECT rowid, * FROM ev WHERE rowid = 123456;
SELECT count(*), round(sum(energy), 3) FROM ev WHERE rowid BETWEEN 500000 AND 599999;
EXPLAIN QUERY PLAN SELECT energy FROM ev WHERE rowid >= 10 AND rowid < 20;

-- 4b. Aggregates computed inside colstore: an aggregate table has a row per
--     group (count, then count_X, sum_X, avg_X, min_X, max_X per column), and
--     WHERE conditions on the source columns select the rows aggregated.
--     Compare its time with the same GROUP BY stepped through SQLite above.
CREATE VIRTUAL TABLE temp.ev_kind USING colstore_agg(ev, kind);
SELECT kind, count AS n, round(avg_energy, 2) AS avg_energy FROM ev_kind ORDER BY kind;
SELECT kind, count AS n, round(max_energy, 2) AS max_energy FROM ev_kind WHERE eta > 5 ORDER BY kind;
SELECT kind, count(*) AS n, round(max(energy), 2) AS max_energy FROM ev WHERE eta > 5 GROUP BY kind ORDER BY kind;
EXPLAIN QUERY PLAN SELECT count FROM ev_kind WHERE eta > 5;

-- 5. Appends are transactional: ROLLBACK leaves nothing, COMMIT is durable.
BEGIN;
INSERT INTO ev VALUES (1000000, 7, 1.5, NULL, 'muon');
ROLLBACK;
INSERT INTO ev SELECT event + 1000000, run, energy, eta, kind FROM ev WHERE rowid < 3;
SELECT count(*) FROM ev;

-- 5b. DELETE and UPDATE in place: other rows keep their rowids; the file
--     gains a deletion bitmap and new chunks for the changed column only.
DELETE FROM ev WHERE kind = 'jet' AND energy > 990;
UPDATE ev SET eta = NULL WHERE rowid BETWEEN 10 AND 19;
SELECT count(*) AS n, count(eta) AS with_eta FROM ev;
SELECT json_extract(colstore_info('ev'), '$.rows') AS live_rows,
       json_extract(colstore_info('ev'), '$.positions') AS positions,
       json_extract(colstore_info('ev'), '$.format_version') AS format;

-- 5c. Compaction rewrites the store without the dead bytes (replaced chunks,
--     the appends' small records); rowids stay unless you ask 'renumber'.
SELECT json_extract(c, '$.before.bytes') AS bytes_before, json_extract(c, '$.after.bytes') AS bytes_after,
       json_extract(c, '$.after.records') AS records_after
  FROM (SELECT colstore_compact('ev') AS c);
SELECT count(*) AS n, count(eta) AS with_eta, max(rowid) AS last_rowid FROM ev;

-- 6. Every checksum in the file, checked.  (Bad input is an error that
--    starts "colstore:" and changes nothing; try
--    INSERT INTO ev VALUES ('not a number', 1, 1.0, 1.0, 'jet');)
SELECT colstore_verify('ev') AS verify;
