#!/usr/bin/python3
"""plot.py - docs/figures/*.svg from the benchmarks' own JSON output
(issue 21, item 9), and the summary docs/performance.md quotes.

WHAT FEEDS WHAT.  Each bench writes its runs with --json into
bench/results/<name>-run<N>.json:

  busy      bench_busy.py (default settings: 10M rows, 7 rounds, the
            spinner phase included): the filter family, native and
            colstore timed in mode B (native, then colstore, the way the
            README's figures are measured: interleaved, default settings)
  analytic  bench_analytic.py --skip "full ORDER BY c" --duckdb: the
            ordering family (top-k, OFFSET, DISTINCT, SQLite's GROUP BY
            over the colstore table) with DuckDB in memory beside
  agg_sql   bench_agg_sql.py: aggregate tables (colstore_agg) against
            native SQLite's GROUP BY and DuckDB in memory, 1 and 2 threads
  sweep     bench_sweep.py: the size sweep (100K, 1M, 10M rows) and the
            thread sweep (caps 1, 2, 4 and auto at 10M rows)
  busy_cache, analytic_mem  bench_busy.py --cache both and bench_analytic.py
            --cache memory: not drawn; the cache=memory figures of the
            summary, quoted beside the defaults

Without --rerun the files present are read as they are and only a bench
with no file at all is run (--runs times); --rerun runs every bench again
first (the runs take tens of minutes on the 2-core development host; see
docs/performance.md, "Figures").  Every figure reads all the runs of its
bench: a bar or point is the median of the runs' medians, its whisker
the min and max of those medians (the run-to-run spread, not one run's).

FIGURES (docs/figures/, SVG with text kept as text, a few tens of KB):

  families.svg  time per query, native SQLite vs colstore vs DuckDB in
                memory, by query family (log scale), with native/colstore
                above each group: the one README links
  sizes.svg     native and colstore time against the row count, and the
                ratio, per query
  threads.svg   colstore time at kernel thread caps 1, 2, 4 and auto,
                relative to 1 thread, per query (10M rows)

It also prints the median and spread of every ratio the README quotes,
with each run's load average and the command that reproduces it
(--summary only prints that).

    /usr/bin/python3 bench/plot.py [--results bench/results] [--out docs/figures]
        [--rerun] [--runs 3] [--only busy,sweep] [--summary] [--module build/colstore]
    make plots        # python3-matplotlib installed first; PLOTS_RERUN=1 for --rerun
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# name: the bench's arguments (after the script); every run appends --json FILE
BENCHES = {
    "busy": ["bench/bench_busy.py"],
    "analytic": ["bench/bench_analytic.py", "--skip", "full ORDER BY c", "--duckdb"],
    "agg_sql": ["bench/bench_agg_sql.py"],
    "sweep": ["bench/bench_sweep.py"],
    # not drawn: the cache=memory column of the README's claims (--summary --markdown)
    "busy_cache": ["bench/bench_busy.py", "--cache", "both"],
    "analytic_mem": ["bench/bench_analytic.py", "--skip", "full ORDER BY c", "--cache", "memory"],
}

PREVIEW_PNG = False  # --png: a PNG beside each SVG, to look at them where no SVG viewer is
COLORS = {"native": "#8c8c8c", "colstore": "#1f77b4", "duckdb": "#e6a000"}


def runs_of(results, name):
    docs = []
    for p in sorted(glob.glob(os.path.join(results, "%s-run*.json" % name))):
        with open(p) as f:
            d = json.load(f)
        d["_file"] = os.path.relpath(p, ROOT)
        docs.append(d)
    return docs


def run_benches(a, names):
    """a.runs runs of each bench, interleaved (run 1 of every bench, then run
    2, ...) so the host's drift over the hour spreads over all of them."""
    for k in range(1, a.runs + 1):
        for name in names:
            out = os.path.join(a.results, "%s-run%d.json" % (name, k))
            cmd = ["/usr/bin/python3"] + BENCHES[name] + ["--module", a.module, "--json", out]
            print("plot.py: run %d/%d of %s (load %s): %s" % (k, a.runs, name, load(), " ".join(cmd)), flush=True)
            t0 = time.perf_counter()
            r = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL if a.quiet else None)
            if r.returncode != 0:
                sys.exit("plot.py: %s exited %d" % (" ".join(cmd), r.returncode))
            print("plot.py: %s run %d took %.0f s" % (name, k, time.perf_counter() - t0), flush=True)


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def med(xs):
    return statistics.median(xs)


def spread(vals):
    """(median, min, max) of per-run values."""
    return med(vals), min(vals), max(vals)


# ------------------------------------------------------------ the numbers

def busy_rows(docs, cache="map"):
    """{key: {native: [per-run median ms], colstore: [...], ratio: [per-run]}}
    from mode B, for the colstore tables with this cache setting."""
    out = {}
    for d in docs:
        for q in d["queries"]:
            if q["cache"] != cache or "B" not in q["modes"] or q["key"] == "floor":
                continue
            m = q["modes"]["B"]
            e = out.setdefault(q["key"], dict(label=q["label"], native=[], colstore=[], ratio=[], colstore_a=[],
                                              ratio_a=[]))
            e["native"].append(med(m["native_ms"]))
            e["colstore"].append(med(m["colstore_ms"]))
            e["ratio"].append(q["ratio_native_over_colstore_B"])
            # the same query repeated (mode A, back to back), against native of mode B in the same run
            e["colstore_a"].append(med(q["modes"]["A"]["colstore_ms"]))
            e["ratio_a"].append(med(m["native_ms"]) / med(q["modes"]["A"]["colstore_ms"]))
    return out


def analytic_rows(docs):
    out = {}
    for d in docs:
        for q in d["queries"]:
            e = out.setdefault(q["name"], dict(label=q["name"], native=[], colstore=[], duckdb=[], ratio=[]))
            e["native"].append(med(q["native_ms"]))
            e["colstore"].append(med(q["colstore_ms"]))
            if q.get("duckdb_ms"):
                e["duckdb"].append(med(q["duckdb_ms"]))
            e["ratio"].append(q["ratio_native_over_colstore"])
    return out


def agg_rows(docs):
    out = {}
    for d in docs:
        for q in d["queries"]:
            v = q["variants"]
            e = out.setdefault(q["name"], dict(label=q["name"], native=[], colstore=[], colstore1=[], duckdb=[],
                                               duckdb1=[], ratio=[], ratio1=[]))
            e["native"].append(med(v["native"]))
            e["colstore"].append(med(v["agg 2t"]))
            e["colstore1"].append(med(v["agg 1t"]))
            e["ratio"].append(med(v["native"]) / med(v["agg 2t"]))
            e["ratio1"].append(med(v["native"]) / med(v["agg 1t"]))
            if "duckdb 2t" in v:
                e["duckdb"].append(med(v["duckdb 2t"]))
                e["duckdb1"].append(med(v["duckdb 1t"]))
    return out


# ---------------------------------------------------------------- figures

def setup_matplotlib():
    try:
        import matplotlib
    except ImportError:
        sys.exit("plot.py: matplotlib is missing: apt-get install -y python3-matplotlib (make plots does it)")
    matplotlib.use("svg")
    matplotlib.rcParams.update({
        "svg.fonttype": "none",       # text stays text: small files, searchable labels
        "svg.hashsalt": "colstore",   # stable ids, so a rerun with the same numbers gives the same file
        "font.size": 9, "axes.titlesize": 10, "axes.spines.top": False, "axes.spines.right": False,
        "figure.dpi": 100,
    })
    import matplotlib.pyplot as plt
    return plt


def save(plt, fig, path, source):
    import textwrap
    width = int(fig.get_figwidth() * 19)  # characters of 6.5 pt text across the figure
    fig.text(0.005, 0.005, "\n".join(textwrap.wrap(source, width)), fontsize=6.5, color="#555555", ha="left",
             va="bottom")
    if PREVIEW_PNG:
        fig.savefig(path[:-4] + ".png", format="png", dpi=110)
    fig.savefig(path, format="svg", metadata={"Date": None, "Creator": "colstore bench/plot.py"})
    plt.close(fig)
    print("plot.py: wrote %s (%.1f KB)" % (os.path.relpath(path, ROOT), os.path.getsize(path) / 1024))


def when(docs):
    if not docs:
        return "not run"
    days = sorted({d["meta"]["started_utc"][:10] for d in docs})
    loads = [float(d["meta"][k].split()[0]) for d in docs for k in ("load_start", "load_end") if k in d["meta"]]
    return "%d runs, %s, load average %.1f-%.1f" % (len(docs), ", ".join(days), min(loads), max(loads))


def fig_families(plt, a, busy, analytic, agg):
    """Grouped bars: time per query (log), native vs colstore vs DuckDB, by family."""
    b, an, ag = busy_rows(busy), analytic_rows(analytic), agg_rows(agg)
    # (family, label, entry); each entry has native, colstore and maybe duckdb lists
    groups = []

    def add(fam, label, e):
        if e and e["native"] and e["colstore"]:
            groups.append((fam, label, e))
    add("filters", "count(*)\nWHERE a > 0.99", b.get("count99"))
    e = dict(b["sumb90"]) if "sumb90" in b else None
    if e and "sum_b WHERE a > 0.9" in ag and ag["sum_b WHERE a > 0.9"]["duckdb"]:
        e["duckdb"] = ag["sum_b WHERE a > 0.9"]["duckdb"]
    add("filters", "sum(b)\nWHERE a > 0.9", e)
    add("filters", "10,000 rows\nby _rows = ?", b.get("rows"))
    add("ordering", "ORDER BY a\nDESC LIMIT 10", an.get("ORDER BY a DESC LIMIT 10"))
    add("ordering", "ORDER BY a LIMIT\n10 OFFSET 1e5", an.get("ORDER BY a LIMIT 10 OFFSET 100000"))
    add("ordering", "DISTINCT b", an.get("DISTINCT b"))
    add("aggregates", "GROUP BY b\nsum(a)", ag.get("by b: sum_a"))
    add("aggregates", "GROUP BY d\nWHERE a>0.5", ag.get("by d WHERE a > 0.5: count, avg_c"))
    add("aggregates", "count, sum,\nmin, max", ag.get("totals"))
    if not groups:
        print("plot.py: families.svg: no data")
        return
    fig, ax = plt.subplots(figsize=(10.0, 4.8))
    width = 0.27
    xs, x, last = [], 0.0, None
    for fam, _, _ in groups:
        if last is not None and fam != last:
            x += 0.6
        xs.append(x)
        x += 1.25
        last = fam
    for i, (fam, label, e) in enumerate(groups):
        for j, (key, name) in enumerate((("native", "native SQLite"), ("colstore", "colstore"),
                                         ("duckdb", "DuckDB, in memory"))):
            vals = e.get(key) or []
            if not vals:
                continue
            m, lo, hi = spread(vals)
            ax.bar(xs[i] + (j - 1) * width, m, width, color=COLORS[key], label=name if i == 0 or
                   (key == "duckdb" and not any(g[2].get("duckdb") for g in groups[:i])) else None,
                   yerr=[[m - lo], [hi - m]], error_kw=dict(elinewidth=0.8, capsize=2, ecolor="#333333"))
        r = spread([n / c for n, c in zip(e["native"], e["colstore"])])[0]
        ax.annotate("{:,.0f}×".format(r) if r >= 10 else "%.1f×" % r, (xs[i], max(e["native"])),
                    xytext=(0, 6), textcoords="offset points", ha="center", fontsize=8.5, fontweight="bold",
                    color=COLORS["colstore"])
    ax.set_yscale("log")
    ax.set_ylabel("ms per query (log scale)")
    ax.set_xticks(xs)
    ax.set_xticklabels([g[1] for g in groups], fontsize=7.5)
    fams = []
    for fam, _, _ in groups:
        if fam not in fams:
            fams.append(fam)
    for fam in fams:
        ix = [xs[i] for i, g in enumerate(groups) if g[0] == fam]
        ax.text((min(ix) + max(ix)) / 2, 1.0, fam, transform=ax.get_xaxis_transform(), ha="center", va="bottom",
                fontsize=9, style="italic")
    ax.set_ylim(top=ax.get_ylim()[1] * 30)  # room for the legend above every bar and label
    ax.legend(loc="upper left", fontsize=8, frameon=False, ncol=3, bbox_to_anchor=(0.0, 0.95))
    rows = {d["meta"]["rows"] for d in busy + analytic + agg}
    ax.set_title("%s rows, %d-CPU host: native SQLite vs colstore (bold: native / colstore) vs DuckDB in memory"
                 % ("/".join("{:,}".format(r) for r in sorted(rows)), (busy + analytic + agg)[0]["meta"]["host"]["cpus"]),
                 pad=16)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    src = ("bench_busy.py (mode B; %s), bench_analytic.py --duckdb (%s), bench_agg_sql.py (aggregate tables and "
           "DuckDB at 2 threads; %s). colstore at default settings (cache=map). Bars: median of the runs' "
           "medians; whiskers: min-max of the run medians." % (when(busy), when(analytic), when(agg)))
    save(plt, fig, os.path.join(a.out, "families.svg"), src)


def sweep_runs(docs):
    """{key: {"label", "sizes": {rows: {native: [run medians], colstore: [...]}}, "threads": {variant: [...]}}}"""
    out = {}
    for d in docs:
        top = max(s["rows"] for s in d["sizes"])
        for s in d["sizes"]:
            for q in s["queries"]:
                e = out.setdefault(q["key"], dict(label=q["label"], sizes={}, threads={}))
                z = e["sizes"].setdefault(s["rows"], dict(native=[], colstore=[]))
                z["native"].append(med(q["variants"]["native"]))
                z["colstore"].append(med(q["variants"]["colstore"]))
                if s["rows"] == top:
                    for v, xs in q["variants"].items():
                        if v.startswith("colstore"):
                            e["threads"].setdefault(v, []).append(med(xs))
    return out


def fig_sizes(plt, a, docs):
    e = sweep_runs(docs)
    if not e:
        print("plot.py: sizes.svg: no data")
        return
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10.0, 4.2))
    cmap = plt.get_cmap("tab10")
    for i, (key, q) in enumerate(e.items()):
        rows = sorted(q["sizes"])
        nat = [spread(q["sizes"][n]["native"]) for n in rows]
        cs = [spread(q["sizes"][n]["colstore"]) for n in rows]
        c = cmap(i)
        for ser, style, lab in ((nat, "--", None), (cs, "-", q["label"])):
            ax1.errorbar(rows, [s[0] for s in ser], yerr=[[s[0] - s[1] for s in ser], [s[2] - s[0] for s in ser]],
                         fmt=style, marker="o", ms=3, color=c, lw=1.2, capsize=2, label=lab)
        ratios = [spread([x / y for x, y in zip(q["sizes"][n]["native"], q["sizes"][n]["colstore"])]) for n in rows]
        ax2.errorbar(rows, [r[0] for r in ratios], yerr=[[r[0] - r[1] for r in ratios], [r[2] - r[0] for r in ratios]],
                     fmt="-", marker="o", ms=3, color=c, lw=1.2, capsize=2, label=q["label"])
    for ax in (ax1, ax2):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("rows")
    ax1.set_ylabel("ms per query (median)")
    ax1.set_title("time: colstore (solid) and native SQLite (dashed)")
    ax2.set_ylabel("native / colstore")
    ax2.set_title("speed-up over native")
    h, l = ax2.get_legend_handles_labels()
    fig.legend(h, l, fontsize=7.5, frameon=False, loc="lower center", ncol=len(l), bbox_to_anchor=(0.5, 0.045))
    fig.tight_layout(rect=(0, 0.11, 1, 1))
    save(plt, fig, os.path.join(a.out, "sizes.svg"),
         "bench_sweep.py (%s); default settings; whiskers: min-max of run medians" % when(docs))


def fig_threads(plt, a, docs):
    e = sweep_runs(docs)
    if not e:
        print("plot.py: threads.svg: no data")
        return
    caps = docs[-1]["threads"]["caps"]
    names = ["colstore %dt" % c for c in caps] + ["colstore"]
    ticks = ["%d" % c for c in caps] + ["auto\n(default)"]
    fig, ax = plt.subplots(figsize=(7.2, 3.8))
    cmap = plt.get_cmap("tab10")
    xs = list(range(len(names)))
    for i, (key, q) in enumerate(e.items()):
        base = q["threads"].get(names[0])
        if not base:
            continue
        ser = [spread([b / x for b, x in zip(base, q["threads"][n])]) for n in names]
        ax.errorbar(xs, [s[0] for s in ser], yerr=[[s[0] - s[1] for s in ser], [s[2] - s[0] for s in ser]],
                    fmt="-", marker="o", ms=3.5, color=cmap(i), lw=1.2, capsize=2,
                    label="%s (%.2f ms at 1 thread)" % (q["label"], med(base)))
    cpus = docs[-1]["meta"].get("cpus_online") or docs[-1]["meta"]["host"]["cpus"]
    ax.axhline(1.0, color="#999999", lw=0.8, ls=":")
    ax.set_yscale("log", base=2)
    from matplotlib.ticker import FuncFormatter
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: "%g×" % v))
    ax.set_xticks(xs)
    ax.set_xticklabels(ticks)
    ax.set_xlabel("kernel thread cap, colstore_config('threads', N) (this host: %d CPUs)" % cpus)
    ax.set_ylabel("speed-up over 1 thread")
    ax.set_title("colstore on %s rows: what more kernel threads buy" % "{:,}".format(docs[-1]["threads"]["rows"]))
    ax.legend(fontsize=7, frameon=False, loc="best")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    save(plt, fig, os.path.join(a.out, "threads.svg"),
         "bench_sweep.py (%s); whiskers: min-max across runs of the per-run ratio" % when(docs))


# ---------------------------------------------------------------- summary

def claims_markdown(a, busy, analytic, agg):
    """The README's claims as a Markdown table (docs/performance.md quotes it):
    each the median [min-max] across runs of each run's own ratio."""
    busy_cache, analytic_mem = runs_of(a.results, "busy_cache"), runs_of(a.results, "analytic_mem")
    b, bm = busy_rows(busy), busy_rows(busy_cache, "memory")
    an, anm, ag = analytic_rows(analytic), analytic_rows(analytic_mem), agg_rows(agg)

    def r(vals):
        if not vals:
            return "-"
        m, lo, hi = spread(vals)
        f = (lambda v: "{:,.0f}".format(v)) if m >= 20 else (lambda v: "%.1f" % v)
        return "**%s×** [%s–%s]" % (f(m), f(lo), f(hi))

    def ms_(vals):
        m = med(vals)
        return "%.0f" % m if m >= 100 else "%.1f" % m if m >= 1 else "%.2f" % m

    rows = []
    for key, claim, was in (("count99", "`count(*) WHERE a > 0.99`", "~70×"), ("sumb90", "`sum(b) WHERE a > 0.9`", "~11×"),
                            ("rows", "10,000 rows by `_rows = ?` vs native `rowid IN`", "~11×")):
        if key in b:
            e = b[key]
            rows.append((claim, was, r(e["ratio"]), "%s / %s" % (ms_(e["colstore"]), ms_(e["native"])),
                         r(e["ratio_a"]), r(bm[key + "@memory"]["ratio"]) if key + "@memory" in bm else "-",
                         "bench_busy (B)"))
    for name, claim, was in (("ORDER BY a DESC LIMIT 10", "`ORDER BY a DESC LIMIT 10`", "~32×"),
                             ("DISTINCT b", "`SELECT DISTINCT b`", "~85×")):
        if name in an:
            e = an[name]
            rows.append((claim, was, r(e["ratio"]), "%s / %s" % (ms_(e["colstore"]), ms_(e["native"])), "-",
                         r(anm[name]["ratio"]) if name in anm else "-", "bench_analytic"))
    if "by b: sum_a" in ag:
        e = ag["by b: sum_a"]
        rows.append(("`GROUP BY b` `sum(a)`, aggregate table, 1 thread", "~146×", r(e["ratio1"]),
                     "%s / %s" % (ms_(e["colstore1"]), ms_(e["native"])), "-", "-", "bench_agg_sql"))
        rows.append(("the same, 2 threads", "", r(e["ratio"]), "%s / %s" % (ms_(e["colstore"]), ms_(e["native"])),
                     "-", "-", "bench_agg_sql"))
        if e["duckdb"]:
            rows.append(("DuckDB / aggregate table, 1 thread", "faster than DuckDB",
                         r([dk / c for dk, c in zip(e["duckdb1"], e["colstore1"])]),
                         "%s / %s (DuckDB)" % (ms_(e["colstore1"]), ms_(e["duckdb1"])), "-", "-", "bench_agg_sql"))
            rows.append(("DuckDB / aggregate table, 2 threads", "faster than DuckDB",
                         r([dk / c for dk, c in zip(e["duckdb"], e["colstore"])]),
                         "%s / %s (DuckDB)" % (ms_(e["colstore"]), ms_(e["duckdb"])), "-", "-", "bench_agg_sql"))
    print("\n| claim (10M rows) | README said | measured, default settings: median [min–max] of the runs' ratios | "
          "colstore / native ms (medians) | the query repeated (back to back) | with `cache=memory` | bench |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print("\n| run | started (UTC) | load average at start → end | command |")
    print("|---|---|---|---|")
    for name in ("busy", "analytic", "agg_sql", "sweep", "busy_cache", "analytic_mem"):
        for d in runs_of(a.results, name):
            m = d["meta"]
            print("| %s | %s | %s → %s | `%s` |" % (os.path.basename(d["_file"])[:-5], m["started_utc"][11:16],
                                                 " ".join(m["load_start"].split()[:3]),
                                                 " ".join(m.get("load_end", "?").split()[:3]),
                                                 m["command"].replace("--skip full ORDER BY c",
                                                                      "--skip 'full ORDER BY c'").replace(" --json bench/results/%s.json" %
                                                                      os.path.basename(d["_file"])[:-5], "")))


def summary(a, busy, analytic, agg, sweep):
    busy_cache, analytic_mem = runs_of(a.results, "busy_cache"), runs_of(a.results, "analytic_mem")
    print("\nSUMMARY: median [min, max] across runs of each run's own ratio (native / colstore unless said)")
    for name, docs in (("busy", busy), ("analytic", analytic), ("agg_sql", agg), ("sweep", sweep),
                       ("busy_cache", busy_cache), ("analytic_mem", analytic_mem)):
        for d in docs:
            m = d["meta"]
            print("  %s %s: %s .. %s, load %s -> %s; %s" % (name, d["_file"], m["started_utc"], m.get("finished_utc"),
                                                         " ".join(m["load_start"].split()[:3]),
                                                         " ".join(m.get("load_end", "?").split()[:3]), m["command"]))

    def line(label, vals, extra=""):
        if vals:
            m, lo, hi = spread(vals)
            print("  %-44s %8.1fx [%.1f, %.1f]  (%d runs)%s" % (label, m, lo, hi, len(vals), extra))
    for key, e in busy_rows(busy).items():
        line("busy B: " + e["label"], e["ratio"], "  colstore %.2f ms, native %.1f ms" %
             (med(e["colstore"]), med(e["native"])))
        line("busy A (repeated): " + e["label"], e["ratio_a"], "  colstore %.2f ms" % med(e["colstore_a"]))
    for key, e in analytic_rows(analytic).items():
        x = ""
        if e["duckdb"]:
            x = "; DuckDB/colstore %.2fx" % med([dk / c for dk, c in zip(e["duckdb"], e["colstore"])])
        line("analytic: " + e["label"], e["ratio"], "  colstore %.2f ms, native %.1f ms%s" %
             (med(e["colstore"]), med(e["native"]), x))
    for cache in ("map", "memory"):
        for key, e in busy_rows(busy_cache, cache).items():
            line("busy --cache both, %s B: %s" % (cache, e["label"]), e["ratio"],
                 "  colstore %.2f ms, native %.1f ms" % (med(e["colstore"]), med(e["native"])))
    for key, e in analytic_rows(analytic_mem).items():
        line("analytic --cache memory: " + e["label"], e["ratio"], "  colstore %.2f ms, native %.1f ms" %
             (med(e["colstore"]), med(e["native"])))
    for key, e in agg_rows(agg).items():
        x = ""
        if e["duckdb"]:
            x = "; DuckDB/agg %.2fx at 1t [%s], %.2fx at 2t [%s]" % (
                med([dk / c for dk, c in zip(e["duckdb1"], e["colstore1"])]),
                ", ".join("%.2f" % (dk / c) for dk, c in zip(e["duckdb1"], e["colstore1"])),
                med([dk / c for dk, c in zip(e["duckdb"], e["colstore"])]),
                ", ".join("%.2f" % (dk / c) for dk, c in zip(e["duckdb"], e["colstore"])))
        line("agg_sql native/agg 1t: " + e["label"], e["ratio1"], x)
        line("agg_sql native/agg 2t: " + e["label"], e["ratio"])


def main():
    ap = argparse.ArgumentParser(description="docs/figures/*.svg from the benches' JSON")
    ap.add_argument("--results", default=os.path.join(HERE, "results"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "figures"))
    ap.add_argument("--module", default=os.path.join(ROOT, "build", "colstore"))
    ap.add_argument("--rerun", action="store_true", help="run the benches again first (tens of minutes)")
    ap.add_argument("--runs", type=int, default=3, help="runs per bench when running it (default 3)")
    ap.add_argument("--only", default="", help="with --rerun: only these benches (%s)" % ",".join(BENCHES))
    ap.add_argument("--quiet", action="store_true", help="the benches' own output not shown")
    ap.add_argument("--summary", action="store_true", help="print the summary only, no figures")
    ap.add_argument("--markdown", action="store_true", help="also print the README claims and the runs as Markdown tables")
    ap.add_argument("--png", action="store_true", help="also a PNG beside each SVG (a preview; not committed)")
    ap.add_argument("--no-run", action="store_true", help="never run a bench: draw what the JSON files hold")
    a = ap.parse_args()
    global PREVIEW_PNG
    PREVIEW_PNG = a.png
    os.makedirs(a.results, exist_ok=True)
    names = [w for w in a.only.split(",") if w] or list(BENCHES)
    for w in names:
        if w not in BENCHES:
            sys.exit("plot.py: --only: give some of %s" % ",".join(BENCHES))
    if a.rerun:
        for name in names:
            for p in glob.glob(os.path.join(a.results, "%s-run*.json" % name)):
                os.remove(p)
    missing = [n for n in names if not runs_of(a.results, n)]
    if missing and not a.no_run:
        run_benches(a, missing)
    busy, analytic, agg, sweep = (runs_of(a.results, n) for n in ("busy", "analytic", "agg_sql", "sweep"))
    if not a.summary:
        plt = setup_matplotlib()
        os.makedirs(a.out, exist_ok=True)
        fig_families(plt, a, busy, analytic, agg)
        fig_sizes(plt, a, sweep)
        fig_threads(plt, a, sweep)
    summary(a, busy, analytic, agg, sweep)
    if a.markdown:
        claims_markdown(a, busy, analytic, agg)


if __name__ == "__main__":
    main()
