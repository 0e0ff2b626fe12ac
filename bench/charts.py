"""PNG charts of bench results, written beside their Markdown.

- listing section: requests (planning + reading) and seconds to the result, per query and
  reader, one figure per table;
- throughput section: each reader's time over Spark's own reader's, per query and format,
  with the targets;
- ``bench.s3a``: requests (LIST + HEAD + GET) and end-to-end seconds per query and reader,
  one figure per table, and the throughput on S3 as ours / Spark's S3A time.

Bars are drawn from the result JSON only; a missing figure (a query a reader skipped) is
no bar. Log scales where values span orders of magnitude.

Drawing only: the modules writing results (``bench.report``, ``bench.s3a``,
``bench.planning``) call it; ``python -m bench.report RESULT.json`` redraws a saved result's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def _bars(ax: Any, groups: Sequence[str], series: dict[str, list[float | None]],
          ylabel: str, log: bool, title: str) -> None:
    """Grouped bars: one group per query, one bar per series (reader); None is no bar."""
    n = max(len(series), 1)
    width = 0.8 / n
    for i, (name, values) in enumerate(series.items()):
        xs = [g + (i - (n - 1) / 2) * width for g in range(len(groups))]
        pts = [(x, v) for x, v in zip(xs, values, strict=True) if v is not None and v > 0]
        if pts:
            ax.bar([p[0] for p in pts], [p[1] for p in pts], width, label=name)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    if log:
        ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)


def _save(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    _plt().close(fig)
    return path


def _pair(title: str, groups: list[str], requests: dict[str, list[float | None]],
          seconds: dict[str, list[float | None]], seconds_label: str, path: Path) -> Path:
    plt = _plt()
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    _bars(left, groups, requests, "requests (log)", True, f"{title}: requests")
    _bars(right, groups, seconds, f"{seconds_label} (log)", True, f"{title}: seconds")
    _legend_outside(right)
    return _save(fig, path)


def _legend_outside(ax: Any) -> None:
    """The legend right of the plot: inside, it hid the bars of the first queries."""
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


def listing_charts(sec: dict[str, Any], out_dir: Path) -> list[Path]:
    """The listing section: one PNG per table."""
    paths = []
    for tname, t in sec.get("tables", {}).items():
        queries = list(t["queries"].values())
        readers = list(queries[0]["readers"]) if queries else []
        reqs: dict[str, list[float | None]] = {r: [] for r in readers}
        secs: dict[str, list[float | None]] = {r: [] for r in readers}
        for q in queries:
            for r in readers:
                res = q["readers"].get(r) or {}
                ok = res.get("status") == "ok"
                n = sum((res.get("plan_requests") or {}).values()) + sum(
                    (res.get("read_requests") or {}).values())
                reqs[r].append(n if ok else None)
                secs[r].append(res.get("result_s") or res.get("plan_s") if ok else None)
        paths.append(_pair(f"{tname} ({t['keys']:,} keys)", [q["label"].split(":")[0]
                                                             for q in queries],
                           reqs, secs, "seconds (plan only past the read limit)",
                           out_dir / f"listing-{tname}.png"))
    return paths


def throughput_charts(sec: dict[str, Any], out_dir: Path) -> list[Path]:
    """The throughput section: ours / Spark's reader per query and format."""
    plt = _plt()
    formats = sec.get("formats", {})
    if not formats:
        return []
    fig, axes = plt.subplots(1, len(formats), figsize=(6 * len(formats), 4.5), squeeze=False)
    for ax, (fmt, queries) in zip(axes[0], formats.items(), strict=True):
        qs = list(queries.values())
        readers = [r for r in qs[0]["readers"] if r != "native"]
        series: dict[str, list[float | None]] = {
            r: [q["readers"][r].get("ratio") for q in qs] for r in readers}
        _bars(ax, [q["label"] for q in qs], series, "time / Spark's own reader", False,
              f"{fmt}: {sec['rows']:,} rows, local files")
        for reader, target in (qs[0].get("targets") or {}).items():
            ax.axhline(target, linestyle="--", linewidth=0.8, color="grey")
            ax.annotate(f"target {reader} ≤ {target}", (0, target), fontsize=7)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.legend(fontsize=8)
    return [_save(fig, out_dir / "throughput-ratios.png")]


def s3a_charts(section: dict[str, Any], out: Path) -> list[Path]:
    """``bench.s3a``: per table requests and seconds; throughput on S3 as ratios."""
    paths = []
    for tname, t in section.get("tables", {}).items():
        queries = list(t["queries"].values())
        readers = sorted({r for q in queries for r in q["readers"]},
                         key=lambda r: ("listing native", "listing python", "spark s3a",
                                        "spark basePath").index(r))
        reqs: dict[str, list[float | None]] = {r: [] for r in readers}
        secs: dict[str, list[float | None]] = {r: [] for r in readers}
        for q in queries:
            for r in readers:
                res = q["readers"].get(r)
                reqs[r].append(None if res is None else res["LIST"] + res["HEAD"] + res["GET"])
                secs[r].append(None if res is None else res["total_s"])
        paths.append(_pair(f"S3, {tname} ({t['keys']:,} keys)",
                           [f"{q['label'].split(':')[0]} ({q['files']} files)"
                            for q in queries], reqs, secs, "seconds, end-to-end count()",
                           out.with_name(f"{out.stem}-{tname}.png")))
    tp = section.get("throughput")
    if tp:
        plt = _plt()
        fig, ax = plt.subplots(figsize=(8, 4.5))
        qs = list(tp["queries"].values())
        readers = [r for r in qs[0]["readers"] if r != "spark s3a"]
        _bars(ax, [q["label"] for q in qs],
              {r: [q["readers"][r]["ratio"] for q in qs] for r in readers},
              "time / Spark's S3A reader", False,
              f"throughput on S3 (moto): {tp['rows']:,} rows, {tp['files']} Parquet files")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.legend(fontsize=8)
        paths.append(_save(fig, out.with_name(f"{out.stem}-throughput.png")))
    return paths


def repeated_charts(res: dict[str, Any], path: Path) -> Path:
    """``bench.repeated``: per pass (busy-loop processes), each reader's wall seconds a
    query and its CPU seconds by process kind (stacked: driver, JVM, Python workers)."""
    plt = _plt()
    passes = list(res.get("passes", {}).values()) or [{"load_procs": 0, **res}]
    readers = list(passes[0]["readers"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    groups = [f"load {p['load_procs']}" for p in passes]
    _bars(left, groups, {r: [p["readers"][r]["total_s"] for p in passes] for r in readers},
          "seconds, plan + count()", False, "wall seconds a repeated query")
    _legend_outside(left)
    width = 0.8 / max(len(readers), 1)
    colors = {"driver": "tab:blue", "jvm": "tab:orange", "workers": "tab:green"}
    for g, p in enumerate(passes):
        for i, r in enumerate(readers):
            xpos = g + (i - (len(readers) - 1) / 2) * width
            bottom = 0.0
            for kind, color in colors.items():
                v = p["readers"][r]["cpu_s"][kind]
                right.bar(xpos, v, width * 0.9, bottom=bottom, color=color,
                          label=kind if g == 0 and i == 0 else None)
                bottom += v
            right.annotate(r.replace("listing ", "").replace("spark ", ""), (xpos, bottom),
                           fontsize=6, ha="center", va="bottom", rotation=90)
    right.set_ylim(0, right.get_ylim()[1] * 1.15)  # room for the labels above the bars
    right.set_xticks(range(len(groups)))
    right.set_xticklabels(groups, fontsize=8)
    right.set_ylabel("CPU seconds (user + system)")
    right.set_title("CPU seconds a repeated query, by process", fontsize=10)
    right.grid(axis="y", alpha=0.3)
    _legend_outside(right)
    fig.suptitle(f"one hour of {res['keys']:,} keys on moto S3, repeated in a session",
                 fontsize=10)
    return _save(fig, path)


def write_charts(results: dict[str, Any], stem: Path) -> list[Path]:
    """``<stem>-throughput.png`` and ``<stem>-peers.png``: each writer's seconds in
    ``bench.write``'s throughput and peers sections (those present in ``results``)."""
    plt = _plt()
    made = []
    sections = {
        "throughput": ("local partitioned write through Spark", "seconds",
                       {"Spark native": "native", "ours format(listing)": "source",
                        "ours write_table": "write_table"}),
        "peers": ("write to S3 (moto)", "wall", {"ours write_table": "write_table",
                                                  "pyarrow write_dataset": "write_dataset"}),
    }
    for name, (title, key, labels) in sections.items():
        sec = results.get(name)
        if not sec:
            continue
        seconds = (sec["seconds"] if key == "seconds"
                   else {how: w["wall"] for how, w in sec["writers"].items()})
        fig, ax = plt.subplots(figsize=(6, 4))
        _bars(ax, list(labels), {"seconds": [seconds[v] for v in labels.values()]},
              "seconds", False, title)
        made.append(_save(fig, stem.with_name(f"{stem.name}-{name}.png")))
    return made


def report_charts(results: dict[str, Any], out_dir: Path) -> list[Path]:
    """Charts of a ``python -m bench`` result, for the sections it holds."""
    sections = results.get("sections", {})
    paths: list[Path] = []
    if "error" not in sections.get("listing", {"error": ""}):
        paths += listing_charts(sections["listing"], out_dir)
    if "error" not in sections.get("throughput", {"error": ""}):
        paths += throughput_charts(sections["throughput"], out_dir)
    return paths
