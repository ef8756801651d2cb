#!/usr/bin/python3
"""bench_delete.py - DELETE on colstore against a native table, and what
deleted rows cost every later query (issue 11).

WHY.  A column store that deletes by rewriting is unusable for fixing a few
rows, and one whose reads slow down after deletes makes users compact all
the time.  colstore deletes by writing a bitmap per touched record at COMMIT
(a deletion vector) and every read path drops deleted positions itself, so
both costs should be small: a one-row DELETE is a scan of one position plus
one small block and two fsyncs; a scan of a store with 10% deleted walks
the same bytes with a bit test per row.

HOW.  Data: bench_busy.py's table (10M rows: a uniform, b 0..999, c normal,
d 10% ones), native and colstore.  Part 1 times DELETE + COMMIT, durable on
both sides (native: the default rollback journal, synchronous=FULL):
  - one row by rowid, 7 different rows per round, on one copy of each;
  - `UPDATE SET b = b + 1 WHERE a > 0.99` (100,000 rows);
  - `DELETE WHERE a > 0.9` (1M rows), on fresh copies every round;
row counts must agree before anything is timed.  Part 2 deletes the same
random 10% (a BETWEEN 0.45 AND 0.55) from a copy of each and compares the
queries of the earlier issues on four tables: colstore with and without the
deletions, native with and without; every query's rows are checked equal
between colstore and native (with and without) first, then the variants
are timed interleaved, rotating, medians with min/max.  Ratios: colstore
with deletions over without (target <= 1.1 for the full scan) and native
over colstore on the deleted copies (the earlier targets, held).  The
copies live in build/bench-data/scratch and are made again each run.
Part 3 compacts a copy with those deletions and 100,000 updated rows,
without and with 'renumber', beside the floor of any rewrite (the same
bytes copied, fsynced and renamed over a file), rotating, after checking that each result holds
the same rows (and rowids 0..n-1 when renumbered), each replacing a file as
compaction does; GB/s counts the store's
bytes before compaction over the SQL call's wall time (target >= 1 GB/s).
Exits 0 either way.

    /usr/bin/python3 bench/bench_delete.py [--rounds 5] [--rows 10000000]
"""
import argparse
import os
import shutil
import sqlite3
import statistics
import sys
import time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import bench_busy  # noqa: E402  (data generation and connection, shared)

DEL_WHERE = "a BETWEEN 0.45 AND 0.55"   # a random ~10% of the rows

# name, SQL over {T} (the table), target for native/colstore on the deleted copies
READS = [
    ("full scan sum(a), sum(b)", "SELECT sum(a), sum(b) FROM {T}", None),
    ("count(*) WHERE a > 0.99", "SELECT count(*) FROM {T} WHERE a > 0.99", 40),
    ("sum(b) WHERE a > 0.9", "SELECT sum(b) FROM {T} WHERE a > 0.9", 10),
    ("rowid BETWEEN (1M rows) sum(c)", "SELECT sum(c) FROM {T} WHERE rowid BETWEEN {LO} AND {LO} + 999999", 1.5),
    ("rowid IN (10,000)", "SELECT sum(a), sum(b) FROM {T} WHERE rowid IN {IN}", 2.5),
    ("ORDER BY a DESC LIMIT 10", "SELECT rowid, a FROM {T} ORDER BY a DESC LIMIT 10", 30),
]


def med(xs):
    return statistics.median(xs) * 1e3


def fmt(xs):
    return "%8.2f ms [%.2f-%.2f]" % (med(xs), min(xs) * 1e3, max(xs) * 1e3)


def copy(src, dst):
    if os.path.exists(dst):
        os.remove(dst)
    shutil.copyfile(src, dst)
    with open(dst, "rb") as f:       # in the page cache, as the original is
        while f.read(1 << 24):
            pass


def open_rw(module, store, native, cache="map"):
    """A connection with table t over the store and `native` in db n (read-write)."""
    con = sqlite3.connect(":memory:", isolation_level=None, cached_statements=0)
    con.enable_load_extension(True)
    con.load_extension(module)
    con.enable_load_extension(False)
    con.execute("ATTACH ? AS n", (native,))
    con.execute("CREATE VIRTUAL TABLE temp.t USING colstore('%s', cache=%s)" % (store.replace("'", "''"), cache))
    return con


def timed(con, sql, params=()):
    t0 = time.perf_counter()
    cur = con.execute(sql, params)
    rows = cur.fetchall()
    return time.perf_counter() - t0, rows, cur.rowcount


def timed_pair(con, sql, params, native_first, times):
    """sql ({} the table) on colstore's t and native's n.native, with their
    params, in the order given; each time appended to times[side]; returns
    the rows each changed, colstore first."""
    sides = [("colstore", "t", params[0]), ("native", "n.native", params[1])]
    counts = {}
    for name, table, p in (reversed(sides) if native_first else sides):
        t, _, counts[name] = timed(con, sql.format(table), p)
        times[name].append(t)
    return [counts["colstore"], counts["native"]]


def part1(a, store, native, scratch):
    print("\n## DELETE and UPDATE + COMMIT (durable on both sides)")
    cs_p, nat_p = os.path.join(scratch, "d1.cst"), os.path.join(scratch, "d1.db")
    one = {"colstore": [], "native": []}
    big = {"colstore": [], "native": []}
    upd = {"colstore": [], "native": []}
    for rnd in range(a.rounds):
        copy(store, cs_p)
        copy(native, nat_p)
        con = open_rw(a.module, cs_p, nat_p)
        # one row: positions spread over the table, a different one each time
        for k in range(7):
            r = (rnd * 7 + k) * 1_299_709 % a.rows
            counts = timed_pair(con, "DELETE FROM {} WHERE rowid = ?", ((r,), (r + 1,)), (rnd + k) % 2, one)
            if counts != [1, 1]:
                sys.exit("bench_delete: one-row DELETE removed %r rows" % counts)
        # UPDATE of 100,000 rows' b (one transaction each); then a million rows deleted
        counts = timed_pair(con, "UPDATE {} SET b = b + 1 WHERE a > 0.99", ((), ()), rnd % 2, upd)
        sums = [con.execute("SELECT count(*), sum(b) FROM %s WHERE a > 0.98" % t).fetchone() for t in ("t", "n.native")]
        if counts[0] != counts[1] or sums[0] != sums[1]:
            sys.exit("bench_delete: UPDATE changed %r rows, then %r" % (counts, sums))
        counts = timed_pair(con, "DELETE FROM {} WHERE a > 0.9", ((), ()), rnd % 2, big)
        if counts[0] != counts[1]:
            sys.exit("bench_delete: DELETE WHERE a > 0.9 removed %r rows" % counts)
        left = [con.execute("SELECT count(*), sum(b) FROM %s" % t).fetchone() for t in ("t", "n.native")]
        if left[0] != left[1]:
            sys.exit("bench_delete: after the DELETEs colstore has %r, native %r" % tuple(left))
        con.close()
    print("rows deleted by `a > 0.9`: %d" % counts[0])
    print("%-34s %-30s %-30s %s" % ("", "colstore", "native", "native/colstore"))
    for label, d, target in (("DELETE one row by rowid", one, "< 10 ms"), ("DELETE WHERE a > 0.9", big, "> 1x"),
                             ("UPDATE SET b = b + 1 WHERE a > 0.99", upd, "> 1x")):
        r = med(d["native"]) / med(d["colstore"])
        ok = med(d["colstore"]) < 10 if label.startswith("DELETE one") else r > 1
        print("%-34s %-30s %-30s %6.1fx  target %s: %s" % (label, fmt(d["colstore"]), fmt(d["native"]), r, target,
                                                           "PASS" if ok else "FAIL"))


def part2(a, store, native, scratch):
    print("\n## Reads with 10%% of rows deleted (`DELETE WHERE %s`), cache=%s" % (DEL_WHERE, a.cache))
    cs_p, nat_p = os.path.join(scratch, "d2.cst"), os.path.join(scratch, "d2.db")
    copy(store, cs_p)
    copy(native, nat_p)
    con = open_rw(a.module, cs_p, nat_p, a.cache)
    t_cs, _, n_cs = timed(con, "DELETE FROM t WHERE " + DEL_WHERE)
    t_nat, _, n_nat = timed(con, "DELETE FROM n.native WHERE " + DEL_WHERE)
    if n_cs != n_nat:
        sys.exit("bench_delete: the 10%% DELETE removed %d and %d rows" % (n_cs, n_nat))
    print("deleted %d rows: colstore %.0f ms, native %.0f ms" % (n_cs, t_cs * 1e3, t_nat * 1e3))
    con.execute("ATTACH ? AS o", ("file:%s?mode=ro" % native,))
    con.execute("CREATE VIRTUAL TABLE temp.full USING colstore('%s', cache=%s)" % (store.replace("'", "''"), a.cache))
    for p in (native, store):
        bench_busy.warm_file(p)
    ids = sorted(__import__("random").Random(5).sample(range(a.rows), 10_000))
    lo = a.rows // 3
    tables = {"colstore": ("t", 0), "colstore no deletions": ("full", 0), "native": ("n.native", 1),
              "native no deletions": ("o.native", 1)}

    def sql_for(q, var):
        name, add = tables[var]
        return q.format(T=name, LO=lo + add, IN="(" + ",".join(str(i + add) for i in ids) + ")")

    def same(x, y):
        return len(x) == len(y) and all(len(r) == len(q) and all(
            u == v or (isinstance(u, float) and abs(u - v) <= 1e-9 * max(abs(u), abs(v))) for u, v in zip(r, q))
            for r, q in zip(x, y))

    for label, q, _ in READS:
        got = {}
        for var in tables:
            rows = con.execute(sql_for(q, var)).fetchall()
            if "rowid, a" in q and "native" in var:
                rows = [(r - 1, x) for r, x in rows]   # 1-based native rowids
            got[var] = rows
        if not same(got["colstore"], got["native"]) or not same(got["colstore no deletions"], got["native no deletions"]):
            sys.exit("bench_delete: %s differs: %r" % (label, {k: v[:3] for k, v in got.items()}))
    times = {(label, var): [] for label, _, _ in READS for var in tables}
    names = list(tables)
    for rnd in range(a.rounds):
        for label, q, _ in READS:
            order = names[rnd % len(names):] + names[:rnd % len(names)]
            for var in order:
                if "native" in var and rnd >= a.native_rounds:
                    continue
                t, _, _ = timed(con, sql_for(q, var))
                times[(label, var)].append(t)
    print("%-32s %-28s %-28s %-10s %-14s %s" % ("", "colstore (10% deleted)", "colstore (none)", "del/none",
                                                "native (10%)", "native/colstore (target)"))
    for label, _, target in READS:
        c, f, n = times[(label, "colstore")], times[(label, "colstore no deletions")], times[(label, "native")]
        r = med(c) / med(f)
        speed = med(n) / med(c)
        verdict = ""
        if target:
            verdict = "%.1fx (%sx %s)" % (speed, target, "PASS" if speed >= target else "FAIL")
        else:
            verdict = "%.1fx; del/none target <= 1.1: %s" % (speed, "PASS" if r <= 1.1 else "FAIL")
        print("%-32s %-28s %-28s %-10s %-14s %s" % (label, fmt(c), fmt(f), "%.2f" % r, "%.0f ms" % med(n), verdict))
    con.close()


def fsync_copy(src, dst):
    """The floor of any rewrite: the same bytes copied into a new file,
    made durable and renamed over dst (whose old file is freed)."""
    tmp = dst + ".new"
    t0 = time.perf_counter()
    shutil.copyfile(src, tmp)
    fd = os.open(tmp, os.O_RDONLY)
    os.fsync(fd)
    os.close(fd)
    os.rename(tmp, dst)
    return time.perf_counter() - t0


def part3(a, store, native, scratch):
    print("\n## colstore_compact of the store after `DELETE WHERE %s` and `UPDATE SET b = b + 1 WHERE a > 0.99`" % DEL_WHERE)
    base = os.path.join(scratch, "c0.cst")
    copy(store, base)
    con = open_rw(a.module, base, native)
    con.execute("DELETE FROM t WHERE " + DEL_WHERE)
    con.execute("UPDATE t SET b = b + 1 WHERE a > 0.99")
    want = con.execute("SELECT count(*), sum(a), sum(b) FROM t").fetchone()
    con.close()
    times = {"compact": [], "renumber": [], "copy+fsync": []}
    reports = {}
    for rnd in range(a.rounds):
        order = ["compact", "renumber", "copy+fsync"]
        order = order[rnd % 3:] + order[:rnd % 3]
        for kind in order:
            p = os.path.join(scratch, "c-%s.cst" % kind)
            if kind == "copy+fsync":
                copy(base, p)  # the file it replaces, as compaction replaces one
                times[kind].append(fsync_copy(base, p))
                continue
            copy(base, p)
            c = sqlite3.connect(":memory:", isolation_level=None)
            c.enable_load_extension(True)
            c.load_extension(a.module)
            sql = "SELECT colstore_compact(?, 'renumber')" if kind == "renumber" else "SELECT colstore_compact(?)"
            t0 = time.perf_counter()
            rep = c.execute(sql, (p,)).fetchone()[0]
            times[kind].append(time.perf_counter() - t0)
            reports[kind] = rep
            c.execute("CREATE VIRTUAL TABLE temp.t USING colstore('%s')" % p.replace("'", "''"))
            got = c.execute("SELECT count(*), sum(a), sum(b) FROM t").fetchone()
            span = c.execute("SELECT min(rowid), max(rowid) FROM t").fetchone()
            if got != want or (kind == "renumber" and span != (0, want[0] - 1)):
                sys.exit("bench_delete: %s gave %r (rowids %r), expected %r" % (kind, got, span, want))
            c.close()
    import json
    before = json.loads(reports["compact"])["before"]
    print("store before: %.1f MB, %d rows, %d positions, %d records, %.1f MB free" %
          (before["bytes"] / 1e6, before["rows"], before["positions"], before["records"], before["free_bytes"] / 1e6))
    for kind in ("compact", "renumber"):
        r = json.loads(reports[kind])
        print("  %-9s after: %.1f MB, %d positions, %d records, %d copied whole; cs_compact's own %.0f ms" %
              (kind, r["after"]["bytes"] / 1e6, r["after"]["positions"], r["after"]["records"], r["records_copied"], r["ms"]))
    floor = med(times["copy+fsync"])
    for kind in ("compact", "renumber", "copy+fsync"):
        gbs = before["bytes"] / 1e9 / (med(times[kind]) / 1e3)
        verdict = "" if kind == "copy+fsync" else "  %.2fx the copy; target >= 1 GB/s: %s" % (
            med(times[kind]) / floor, "PASS" if gbs >= 1 else "FAIL")
        print("%-12s %-30s %5.2f GB/s of store bytes%s" % (kind, fmt(times[kind]), gbs, verdict))


def main():
    ap = argparse.ArgumentParser()
    bench_busy.data_arguments(ap, rounds=5)
    ap.add_argument("--native-rounds", type=int, default=3)
    ap.add_argument("--part", choices=("1", "2", "3", "both", "all"), default="all",
                    help="1: DELETE/UPDATE timings, 2: reads with deletions, 3: colstore_compact; both: 1 and 2")
    ap.add_argument("--cache", choices=("map", "memory"), default="map",
                    help="part 2's colstore tables (memory: this VM's cold mapped pages out of the comparison)")
    a = ap.parse_args()
    _, native, store = bench_busy.data_files(a)
    scratch = os.path.join(a.dir, "scratch")
    os.makedirs(scratch, exist_ok=True)
    print("bench_delete: %d rows, %d rounds, sqlite %s, load average %s" %
          (a.rows, a.rounds, sqlite3.sqlite_version, open("/proc/loadavg").read().split()[:3]))
    try:
        if a.part in ("1", "both", "all"):
            part1(a, store, native, scratch)
        if a.part in ("2", "both", "all"):
            part2(a, store, native, scratch)
        if a.part in ("3", "all"):
            part3(a, store, native, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
