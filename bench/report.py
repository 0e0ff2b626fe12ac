"""Results as JSON and as the Markdown tables the README quotes (also printed), with the
PNG charts (``bench.charts``) beside them.

``python -m bench.report RESULT.json`` redraws the charts of a saved result (a
``python -m bench`` ``latest.json`` or a ``bench.s3a`` JSON) beside it, and for the former
rewrites its ``latest.md`` with the links.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from bench import charts

READER_NAMES = {"listing": "**ours**", "pyarrow": "pyarrow.dataset", "polars": "Polars",
                "datafusion": "DataFusion", "datafusion+stats": "DataFusion (stats on)"}


def machine() -> dict[str, Any]:
    """Cores, memory and the versions that decide the numbers."""
    info: dict[str, Any] = {"cores": os.cpu_count(), "platform": platform.platform(),
                            "python": platform.python_version()}
    try:
        import psutil

        info["memory_gb"] = round(psutil.virtual_memory().total / 2**30, 1)
    except ImportError:
        info["memory_gb"] = None
    for dist in ("pyspark", "pyarrow", "polars", "datafusion", "moto", "s3fs", "fsspec"):
        try:
            info[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            info[dist] = None
    try:
        java = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30)
        info["java"] = (java.stderr or java.stdout).splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        info["java"] = None
    return info


def code_revision(root: Path) -> str:
    """Which project code was measured: the git commit plus uncommitted changes, or what
    ``BENCH_CODE_REV`` says (set it when running from an exported snapshot)."""
    if os.environ.get("BENCH_CODE_REV"):
        return os.environ["BENCH_CODE_REV"]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--",
                                "listing", "formats", "fixtures"],
                               capture_output=True, text=True, timeout=30).stdout.split("\n")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    changed = [line[3:] for line in dirty if line.strip()]
    return (head or "unknown") + (f" + uncommitted changes in {', '.join(changed)}"
                                  if changed else "")


def write(results: dict[str, Any], out_dir: Path) -> tuple[Path, Path]:
    """latest.json, latest.md and the PNG charts (bench.charts) the Markdown links to."""
    out_dir.mkdir(parents=True, exist_ok=True)
    js, md = out_dir / "latest.json", out_dir / "latest.md"
    js.write_text(json.dumps(results, indent=1, default=str) + "\n")
    pngs = charts.report_charts(results, out_dir)
    md.write_text(markdown(results) + "".join(f"\n![{p.stem}]({p.name})\n" for p in pngs))
    return js, md


# --- Markdown ------------------------------------------------------------------------------


def _s(x: float | None, digits: int = 2) -> str:
    if x is None:
        return "–"
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.{digits}f}" if x >= 0.1 else f"{x:.3f}"


def _table(header: list[str], rows: list[list[str]], align: str | None = None) -> list[str]:
    spec = align or "l" + "r" * (len(header) - 1)
    marks = {"l": ":--", "r": "--:", "c": ":-:"}
    return (["| " + " | ".join(header) + " |",
             "| " + " | ".join(marks[a] for a in spec) + " |"]
            + ["| " + " | ".join(r) + " |" for r in rows])


def markdown(results: dict[str, Any]) -> str:
    m = results["machine"]
    lines = [
        "# Benchmark results", "",
        f"Command: `{results['command']}` — started {results['started']}, took "
        f"{results['seconds'] / 60:.1f} min "
        + ", ".join(f"({k}: {v['seconds'] / 60:.1f} min)" for k, v in results["sections"].items()
                    if isinstance(v, dict) and "seconds" in v) + ".", "",
        f"Machine: {m['cores']} cores, {m['memory_gb']} GB RAM, {m['platform']}; Python "
        f"{m['python']}, pyspark {m['pyspark']}, pyarrow {m['pyarrow']}, Polars {m['polars']}, "
        f"DataFusion {m['datafusion']}, moto {m['moto']}, s3fs {m['s3fs']}, {m['java']}.", "",
        f"Code measured: {results.get('code', 'unknown')}.", "",
    ]
    sections = results["sections"]
    if "listing" in sections:
        lines += _listing_md(sections["listing"])
    if "latency" in sections:
        lines += _latency_md(sections["latency"])
    if "throughput" in sections:
        lines += _throughput_md(sections["throughput"])
    if "memory" in sections:
        lines += _memory_md(sections["memory"])
    if "write" in sections:
        lines += _write_md(sections["write"])
    if "streaming" in sections:
        lines += _module_md("## 5. Streaming discovery (`bench.streaming`)",
                            sections["streaming"])
    if "s3a" in sections:
        lines += _module_md("## 6. S3 through Spark: ours against Spark's S3A reader "
                            "(`bench.s3a`)", sections["s3a"])
    if "planning" in sections:
        lines += _module_md("## 7. Planning at scale (`bench.planning`)", sections["planning"])
    if "planning-s3" in sections:
        lines += _module_md("## 7. Planning at scale on S3, through Spark "
                            "(`bench.planning_s3`)", sections["planning-s3"])
    if "client" in sections:
        lines += _module_md("## 8. The client's CPU per key (`bench.client_cpu`)",
                            sections["client"])
    return "\n".join(lines) + "\n"


def _reqs(c: dict[str, int] | None) -> list[str]:
    c = c or {}
    return [str(c.get("LIST", 0)), str(c.get("GET", 0)), str(c.get("HEAD", 0))]


def _listing_md(sec: dict[str, Any]) -> list[str]:
    if "error" in sec:
        return ["## 1. Listing and planning", "", f"Section failed: `{sec['error']}`", ""]
    st = sec["settings"]
    lines = [
        "## 1. Listing and planning on S3 (moto)", "",
        "Planning = from nothing to the file list (ours: `ListingTable.open` + `scan`; "
        "pyarrow: `ds.dataset` + `get_fragments(filter)`; Polars: `scan_parquet(...).filter`"
        " + `explain()`; DataFusion: `register_listing_table` + `execution_plan()`). "
        "Result = planning + reading the rows into Arrow. LIST / GET / HEAD are the "
        "requests the server saw during planning. `files` = files in the plan (\"–\": "
        "DataFusion elides long file lists in its plan display; every result is checked "
        "by its row count instead). Every reader was given the data schema "
        "and the partition column types. Times are medians of "
        f"{st['runs']} runs after a warm-up, except runs whose first try took more than "
        f"{st['long_s']:.0f} s (one run). Reading is skipped above "
        f"{st['max_read_files']:,} files.", "",
        "moto caveat: moto scans and sorts the whole bucket for every ListObjects and "
        "serialises pages slowly (about 0.3 s per 1 000-key page on the 105 000-key "
        "bucket), so full listings take longer than on S3 and a narrow LIST still pays "
        "for the bucket scan; request counts are exact.",
        "",
    ]
    for tname, t in sec["tables"].items():
        lines += [f"### `{tname}`: {t['keys']:,} keys, `{t['layout']}`", ""]
        rows = []
        for q in t["queries"].values():
            for r, res in q["readers"].items():
                status = res.get("status", "")
                if status in ("timeout", "error"):
                    rows.append([q["label"] if r == "listing" else "", READER_NAMES[r],
                                 *_reqs(res.get("plan_requests")), "–", "–", "–",
                                 f"{status}: {res.get('error', '')[:80]}"])
                    continue
                note = res.get("wrong", "") if status == "wrong result" else ""
                if res.get("read_skipped"):
                    note = (note + "; " if note else "") + "planning only"
                if r == "listing" and res.get("extra"):
                    ex = res["extra"]
                    note = (note + "; " if note else "") + (
                        f"open(): {ex['open_list']} LIST; scan(): {ex['scan_list']} LIST, "
                        f"{_s(res.get('scan_s'))} s")
                rows.append([q["label"] if r == "listing" else "", READER_NAMES[r],
                             *_reqs(res.get("plan_requests")), _s(res.get("plan_s")),
                             _s(res.get("result_s")),
                             "–" if res.get("files") is None else f"{res['files']:,}",
                             ("**WRONG** " if status == "wrong result" else "") + note])
            comp = q.get("comparison") or {}
            if comp:
                text = (f"requests: {comp['request_ratio']:.1f}× fewer than "
                        f"{READER_NAMES[comp['best_peer_requests']['reader']]} "
                        f"({comp.get('request_ratio_scan_only', 0):.1f}× for scan() alone); "
                        f"planning {comp['plan_speedup']:.1f}× faster than "
                        f"{READER_NAMES[comp['best_peer_plan']['reader']]} "
                        f"({comp.get('plan_speedup_scan_only', 0):.1f}× for scan() alone)")
                if "result_speedup" in comp:
                    text += (f"; result {comp['result_speedup']:.2f}× vs "
                             f"{READER_NAMES[comp['best_peer_result']['reader']]}")
                rows.append(["", "*ours vs best peer*", "", "", "", "", "", "", text])
        lines += _table(["query", "reader", "LIST", "GET", "HEAD", "plan s", "result s",
                         "files", "notes"], rows, "llrrrrrrl")
        lines.append("")
    lines += ["### Targets", ""]
    lines += ["\"scan() alone\" = the table already open, as when one table serves many "
              "queries; \"open()+scan()\" = from nothing, like the peers (what `open()` "
              "itself sent is in each query's notes).", ""]
    lines += _table(["target", "measured", "met: scan() alone", "met: open()+scan()"],
                    [[t["target"], t["value"], _met(t["met"]),
                      _met(t["met_including_open"]) if "met_including_open" in t else "–"]
                     for t in sec["targets"]], "llcc")
    lines.append("")
    return lines + sec.get("concurrency", {}).get("table_md", [])


def _latency_md(sec: dict[str, Any]) -> list[str]:
    """``--only latency``: the listing section's latency-model table, run on its own."""
    head = ["## 1b. Listing against a model of S3 latency", ""]
    if "error" in sec:
        return head + [f"Section failed: `{sec['error']}`", ""]
    return head + sec.get("concurrency", {}).get("table_md", [])


def _met(ok: bool) -> str:
    return "yes" if ok else "**no**"


def _throughput_md(sec: dict[str, Any]) -> list[str]:
    if "error" in sec:
        return ["## 2. Scan throughput into Spark", "", f"Section failed: `{sec['error']}`", ""]
    sizes = ", ".join(f"{f} {b / 2**20:,.0f} MB" for f, b in sec["bytes"].items())
    lines = [
        "## 2. Scan throughput into Spark (local files, `local[2]`)", "",
        f"{sec['rows']:,} rows in {sec['files']} files per format ({sizes}), "
        "`date=…/` partitions. After a warm-up run each, the readers take turns; a "
        f"figure is the median of {sec['runs']} rounds, of "
        f"{sec.get('short_runs', sec['runs'])} for a query whose first round took under "
        f"{sec.get('short_s', 0):g} s on every reader. `to_spark` = "
        "`listing.to_spark(ListingTable.open(path), spark, columns=…, where=…)`; `source` = "
        "`spark.read.format(\"listing\")…load(path)` + `select`/`where` (columns "
        "narrowed by the session extension's pruning rule); native = "
        "`spark.read.parquet` / `spark.read.csv` with schema. Ratio = ours / native "
        "time (lower is better). The count queries "
        "give `to_spark` `columns=[\"date\"]` (a partition column: no data column is "
        "read).", "",
    ]
    rows = []
    targets: dict[str, float] = {}
    for fmt, queries in sec["formats"].items():
        for q in queries.values():
            rd, targets = q["readers"], q["targets"]
            agree = "" if all(q["agree"].values()) else (
                "results differ: " + ", ".join(r for r, ok in q["agree"].items() if not ok))
            judged = []
            for reader, target in targets.items():
                ratio = rd[reader]["ratio"]
                judged += [_s(rd[reader]["seconds"]), f"**{ratio:.2f}×**",
                           _met(ratio <= target)]
            rows.append([fmt, q["label"], _s(rd["native"]["seconds"]), *judged,
                         _s(rd["to_spark"]["seconds"]), f"{rd['to_spark']['ratio']:.2f}×",
                         agree])
    heads = [h for reader, target in targets.items()
             for h in (f"{reader} s", f"{reader} / native", f"≤ {target}×")]
    lines += _table(["format", "query", "native s", *heads, "to_spark s",
                     "to_spark / native", "notes"],
                    rows, "llr" + "rrc" * len(targets) + "rrl")
    lines.append("")
    prof = sec.get("profile") or {}
    if prof:
        lines += [
            "### Where our time goes", "",
            "Scan alone (`df.write.format(\"noop\")`, no aggregation), median of 3. Python "
            "read = every task's `read()` run serially in-process / 2 cores; IPC write = "
            "writing those batches as an Arrow IPC stream into a socket (the Python half of "
            "the handoff to the JVM) / 2 cores; fixed = our per-query cost measured on a "
            "count that matches no file (driver-side open and planning, Python planner "
            "workers); JVM = the rest: Spark reading the Arrow stream and turning every "
            "batch into rows, and task overhead. Python workers and JVM threads overlap, "
            "so the split is an estimate.", "",
        ]
        rows = []
        for key, p in prof.items():
            if "shares" not in p:
                continue
            sh = p["shares"]
            rows.append([key, str(p["tasks"]), _s(p["native_scan_s"]), _s(p["scan_s"]),
                         f"{p['scan_ratio']:.2f}×",
                         f"{_s(p['python_read_s_per_core'])} ({sh['python_read']:.0%})",
                         f"{_s(p['ipc_write_s_per_core'])} ({sh['ipc_write']:.0%})",
                         f"{_s(p['fixed_s'])} ({sh['fixed']:.0%})",
                         f"{_s(p['jvm_s'])} ({sh['jvm']:.0%})"])
        lines += _table(["scan", "tasks", "native s", "ours s", "ratio", "Python read s",
                         "IPC write s", "fixed s", "JVM s"], rows, "lrrrrrrrr")
        lines.append("")
        fixed = prof.get("fixed overhead")
        if fixed:
            lines += ["Fixed cost per query (a count pruned to zero files, median of 3): "
                      + ", ".join(f"{r} {v:.2f} s" for r, v in fixed.items()) + ".", ""]
        for key, p in prof.items():
            if "one_task" not in p:
                continue
            task = p["one_task"]
            lines += [f"One task, {key}: {task['files']} files, {task['rows']:,} rows, "
                      f"{task['seconds']:.2f} s under cProfile; top functions by own time:",
                      ""]
            lines += _table(["function", "calls", "own s", "cumulative s"],
                            [[f"`{r['function']}`", str(r["calls"]), f"{r['tottime']:.3f}",
                              f"{r['cumtime']:.3f}"] for r in task["top_tottime"][:8]],
                            "lrrr")
            lines.append("")
    return lines


def _memory_md(sec: dict[str, Any]) -> list[str]:
    lines = ["## 3. Memory: peak RSS of one task (`bench.memory`)", ""]
    if "error" in sec:
        return lines + [f"Section failed: `{sec['error']}`", ""]
    lines += [f"`{sec['command']}`: each file read by one task in a fresh process "
              "(schema inference, then every batch through the format's opener).", ""]
    if sec.get("rows"):
        lines += _table(["format", "file MB", "rows", "batches", "seconds", "rows/s",
                         "baseline MB", "peak RSS MB"],
                        [[r["format"], f"{r['file_mb']:,.0f}", f"{r['rows']:,}",
                          f"{r['batches']:,}", _s(r["seconds"]), f"{r['rows_per_s']:,.0f}",
                          f"{r['base_mb']:,.0f}", f"**{r['peak_mb']:,.0f}**"]
                         for r in sec["rows"]], "lrrrrrrr")
    lines += ["", sec.get("verdict", ""), ""]
    return lines


def _write_md(sec: dict[str, Any]) -> list[str]:
    return _module_md("## 4. Partitioned writes (`bench.write`)", sec)


def _module_md(title: str, sec: dict[str, Any]) -> list[str]:
    """A section a bench module printed itself: its command and its tables."""
    lines = [title, ""]
    if "error" in sec:
        return lines + [f"Section failed: `{sec['error']}`", ""]
    return lines + [f"`{sec['command']}`:", "", sec.get("output", ""), ""]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.report", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("result", type=Path, help="a latest.json of python -m bench, or the "
                    "JSON bench.s3a --out wrote")
    args = ap.parse_args(argv)
    data = json.loads(args.result.read_text())
    if "sections" in data:
        write(data, args.result.parent)  # draws the charts and links them
        paths = sorted(args.result.parent.glob("*.png"))
    else:
        paths = charts.s3a_charts(data, args.result.with_suffix(""))
    for p in paths:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
