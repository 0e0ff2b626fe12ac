"""The benchmark figures the README and docs/benchmarks.md quote, read from the saved runs.

One source: every figure is computed here from a file of ``bench/results/`` (each
:class:`Row` names its file), and shown with that run's command and commit (the JSON's
``command`` and ``code``, else the header line of the ``.md`` saved beside it). The
benchmarks page renders :func:`summary_table` at build time (``<!-- generated:
bench-summary -->``); the README, which mkdocs does not build, holds a copy of
:func:`readme_table` between ``<!-- bench-summary -->`` markers that
``tests/spark/test_docs_blocks.py`` compares with this module's output, and
``python docs_hooks/bench_figures.py`` rewrites it. A newer run saved under the same name
(``listing/latest.json``, ...) is picked up by the next build with no edit.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
README_START = "<!-- bench-summary: generated from bench/results by docs_hooks/bench_figures.py -->"
README_END = "<!-- /bench-summary -->"


def load(path: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((RESULTS / path).read_text())
    return data


def run_of(path: str) -> tuple[str, str]:
    """``(command, commit)`` of a saved run: its JSON's, else its ``.md`` header's."""
    data = load(path)
    if data.get("command") and data.get("code"):
        return str(data["command"]), str(data["code"])
    head = (RESULTS / path).with_suffix(".md").read_text().split("\n", 1)[0]
    m = re.search(r"\((python -m [^;]+); code (\w+)", head)
    if not m:
        raise ValueError(f"{path}: no command and commit in the JSON or its .md")
    return m.group(1), m.group(2)


def s(seconds: float) -> str:
    """Seconds as the pages show them: three decimals below 0.1 s, else two."""
    return f"{seconds:.3f} s" if seconds < 0.1 else f"{seconds:,.2f} s"


def x(ratio: float) -> str:
    return f"{ratio:.2f}×"


def span(ratios: list[float]) -> str:
    return f"{min(ratios):.2f}–{max(ratios):.2f}×"


@dataclass(frozen=True)
class Row:
    """One line of the summary: what was measured, our figure, the peer's, from ``path``."""

    what: str
    path: str
    ours: Callable[[dict[str, Any]], str]
    peer: Callable[[dict[str, Any]], str]
    readme: bool = False  # the README's table quotes it


def _listing_point(d: dict[str, Any]) -> dict[str, Any]:
    readers: dict[str, Any] = (d["sections"]["listing"]["tables"]["hourly"]["queries"]["point"]
                               ["readers"])
    return readers


def _reader(r: dict[str, Any], label: str = "") -> str:
    return f"{label}{r['plan_requests']['LIST']} LIST, {s(r['plan_s'])}"


def _model(d: dict[str, Any]) -> dict[str, Any]:
    model: dict[str, Any] = d["sections"]["listing"]["concurrency"]
    return model


def _model_ours(d: dict[str, Any]) -> float:
    rows = _model(d)["servers"][_model(d)["model"]]["rows"]
    return float(next(r["plan_s"] for r in rows
                      if r["query"] == "all" and r["max_concurrent_requests"] == 8))


def _throughput(d: dict[str, Any], reader: str) -> list[float]:
    formats = d["sections"]["throughput"]["formats"]
    return [q["readers"][reader]["ratio"] for f in formats.values() for q in f.values()]


def _s3a_ratios(d: dict[str, Any], reader: str) -> list[float]:
    return [q["readers"][reader]["ratio"] for q in d["throughput"]["queries"].values()]


def _streaming(d: dict[str, Any], trigger: str) -> int:
    """The LIST count of a row of the streaming section's saved table."""
    out = d["sections"]["streaming"]["output"]
    m = re.search(rf"^\| {re.escape(trigger)}[^|]*\| (\d+) \|", out, re.M)
    if not m:
        raise ValueError(f"no streaming row {trigger!r}")
    return int(m.group(1))


def _s3a_point(d: dict[str, Any], reader: str) -> dict[str, Any]:
    r: dict[str, Any] = d["tables"]["hourly"]["queries"]["point"]["readers"][reader]
    return r


def _at_scale(d: dict[str, Any], table: str, query: str) -> dict[str, Any]:
    q: dict[str, Any] = d["tables"][table]["queries"][query]
    return q


def _whole_ratio(d: dict[str, Any], table: str) -> float:
    q = _at_scale(d, table, "whole table")
    return float(q["listing"]["seconds"] / q["polars"]["seconds"])


def _repeated(d: dict[str, Any], reader: str) -> dict[str, Any]:
    r: dict[str, Any] = d["readers"][reader]
    return r


def _loaded(d: dict[str, Any], reader: str) -> dict[str, Any]:
    """A reader's figures in the saved run's loaded pass (8 busy loops)."""
    r: dict[str, Any] = d["passes"]["8"]["readers"][reader]
    return r


M1 = "local 1,051,200"
K210 = "local 210,240"
N2M = "synthetic S3 2,102,400"

ROWS: tuple[Row, ...] = (
    Row("one hour of a 105,120-key hourly table on moto S3: planning", "listing/latest.json",
        lambda d: _reader(_listing_point(d)["listing"]),
        lambda d: _reader(_listing_point(d)["polars"], "Polars: "), readme=True),
    Row("the whole table against a model of S3 latency (30 ms a LIST): planning",
        "listing/latest.json",
        lambda d: f"{s(_model_ours(d))} (8 requests at a time)",
        lambda d: (f"Polars: {s(_model(d)['peers_on_model']['all']['polars']['plan_s'])} "
                   f"({x(_model(d)['peers_on_model']['all']['polars']['plan_s'] / _model_ours(d))}"
                   " our time)")),
    Row("full scans into Spark, 12 M rows (`engine=auto`)", "throughput/latest.json",
        lambda d: f"{span(_throughput(d, 'source'))} Spark's time",
        lambda d: "Spark's own readers", readme=True),
    Row("the same scans pinned to our reader (`engine=python`)", "throughput/latest.json",
        lambda d: f"{span(_throughput(d, 'source_python'))} Spark's time",
        lambda d: "Spark's own readers"),
    Row("a quiet streaming trigger on that hourly table", "latest.json",
        lambda d: f"{_streaming(d, 'quiet trigger')} LIST",
        lambda d: f"re-listing it: {_streaming(d, 'full listing by scan()')} LIST", readme=True),
    Row("the same hour through Spark, handed to Spark's S3A reader", "s3a/latest.json",
        lambda d: (f"{_s3a_point(d, 'listing native')['LIST']} LIST, "
                   f"{s(_s3a_point(d, 'listing native')['total_s'])}"),
        lambda d: (f"`spark.read.parquet(\"s3a://…\")`: {_s3a_point(d, 'spark s3a')['LIST']} "
                   f"LIST, {s(_s3a_point(d, 'spark s3a')['total_s'])}"), readme=True),
    Row("scans on moto S3, 12 M rows: handed off / our reader", "s3a/latest.json",
        lambda d: (f"{span(_s3a_ratios(d, 'listing native'))} / "
                   f"{span(_s3a_ratios(d, 'listing python'))} Spark's S3A time"),
        lambda d: "Spark's S3A reader"),
    Row("planning one month of a 1,051,200-file local tree", "planning/at-scale.json",
        lambda d: s(_at_scale(d, M1, "one month")["listing"]["seconds"]),
        lambda d: (f"Polars: {s(_at_scale(d, M1, 'one month')['polars']['seconds'])} "
                   f"(ours: {x(_at_scale(d, M1, 'one month')['listing']['seconds'] / _at_scale(d, M1, 'one month')['polars']['seconds'])}"  # noqa: E501
                   " its time)"), readme=True),
    Row("planning that whole tree (and a 210,240-file one)", "planning/whole-tables.json",
        lambda d: (f"{s(_at_scale(d, M1, 'whole table')['listing']['seconds'])}: "
                   f"{x(_whole_ratio(d, M1))} Polars' time ({x(_whole_ratio(d, K210))} at 210k)"),
        lambda d: f"Polars: {s(_at_scale(d, M1, 'whole table')['polars']['seconds'])}",
        readme=True),
    Row("one hour through Spark, the query repeated in a session (`engine=python`)",
        "repeated/latest.json",
        lambda d: (f"{_repeated(d, 'listing python')['repeated']['LIST']} LIST, "
                   f"{s(_repeated(d, 'listing python')['total_s'])}; with `list_cache_ttl` "
                   f"{sum(_repeated(d, 'listing python ttl')['repeated'].values())} requests, "
                   f"{s(_repeated(d, 'listing python ttl')['total_s'])}"),
        lambda d: (f"S3A, `basePath` form: {_repeated(d, 'spark basePath')['repeated']['LIST']} "
                   f"LIST, {_repeated(d, 'spark basePath')['repeated']['HEAD']} HEAD, "
                   f"{_repeated(d, 'spark basePath')['repeated']['GET']} GET, "
                   f"{s(_repeated(d, 'spark basePath')['total_s'])}"), readme=True),
    Row("the same repeated hour on a loaded machine (8 busy loops on 2 cores)",
        "repeated/latest.json",
        lambda d: (f"`engine=auto` {x(_loaded(d, 'listing native')['vs_s3a_wall'])} S3A's time "
                   f"and {x(_loaded(d, 'listing native')['vs_s3a_cpu'])} its CPU; "
                   f"`engine=python` {x(_loaded(d, 'listing python')['vs_s3a_wall'])} and "
                   f"{x(_loaded(d, 'listing python')['vs_s3a_cpu'])}"),
        lambda d: (f"S3A, `basePath` form: {s(_loaded(d, 'spark basePath')['total_s'])}, "
                   f"{_loaded(d, 'spark basePath')['cpu_s']['total']:.2f} s of CPU a query")),
    Row("a partitioned local write through Spark, 6 M rows into 120 partitions",
        "write-local/latest.json",
        lambda d: (f"{s(d['throughput']['seconds']['source'])}, "
                   f"{d['throughput']['files']['source']} files (ours: "
                   f"{x(d['throughput']['seconds']['source'] / d['throughput']['seconds']['native'])}"  # noqa: E501
                   " its time)"),
        lambda d: (f"Spark's `partitionBy(...).parquet`: "
                   f"{s(d['throughput']['seconds']['native'])}, "
                   f"{d['throughput']['files']['native']} files")),
    Row("`write_table` to S3, 4.8 M rows over 2 dates (moto)", "write-peers/latest.json",
        lambda d: (f"{s(d['peers']['writers']['write_table']['wall'])} (ours: "
                   f"{x(d['peers']['writers']['write_table']['wall'] / d['peers']['writers']['write_dataset']['wall'])}"  # noqa: E501
                   " its time)"),
        lambda d: (f"`pyarrow.dataset.write_dataset` to s3fs: "
                   f"{s(d['peers']['writers']['write_dataset']['wall'])}")),
    Row("a 1 GB partitioned write through Spark to S3 (moto, `local[2]`)",
        "write-spark-s3/latest.json",
        lambda d: (f"{s(d['writers']['ours']['wall'])}, "
                   f"{_requests(d['writers']['ours'])} requests"),
        lambda d: (f"S3A magic committer: {s(d['writers']['magic']['wall'])}, "
                   f"{_requests(d['writers']['magic'])} requests (ours: "
                   f"{x(d['writers']['ours']['wall'] / d['writers']['magic']['wall'])} its "
                   f"time); default committer: {s(d['writers']['default']['wall'])}, "
                   f"{_requests(d['writers']['default'])} requests")),
    Row("the whole 2,102,400-key synthetic table planned on `engine=native` "
        "(S3, `spark.driver.memory=4g`)", "planning/s3-2m-whole-native.json",
        lambda d: (f"{s(_at_scale(d, N2M, 'whole table')['spark native']['seconds'])}, "
                   f"{_at_scale(d, N2M, 'whole table')['spark native']['list_requests']:,} LIST, "
                   f"driver JVM {_at_scale(d, N2M, 'whole table')['spark native']['jvm_b_per_file']:.0f}"  # noqa: E501
                   " B a file"),
        lambda d: "before the chunked hand-off: failed past 1,875,000 files"),
)


def _requests(writer: dict[str, Any]) -> int:
    """A writer's requests of its last run, all kinds."""
    return sum(writer["requests"].values())


def _line(row: Row) -> str:
    data = load(row.path)
    command, code = run_of(row.path)
    return (f"| {row.what} | {row.ours(data)} | {row.peer(data)} | `{command}`, `{code}`, "
            f"`bench/results/{row.path}` |")


HEADER = ("| what | `listing` | the alternative | run (command, commit, saved result) |\n"
          "| :-- | :-- | :-- | :-- |")


def summary_table() -> str:
    """Every row, as the benchmarks page shows it."""
    return "\n".join([HEADER, *(_line(r) for r in ROWS)])


def readme_table() -> str:
    """The rows the README quotes, between its markers."""
    return "\n".join([README_START, HEADER, *(_line(r) for r in ROWS if r.readme), README_END])


def readme_copy(readme: str) -> str:
    """The README's copy of :func:`readme_table` (markers included)."""
    start, end = readme.index(README_START), readme.index(README_END) + len(README_END)
    return readme[start:end]


def rewrite_readme(path: Path = ROOT / "README.md") -> bool:
    """Replace the README's copy with :func:`readme_table`; whether it changed."""
    text = path.read_text()
    new = text.replace(readme_copy(text), readme_table())
    path.write_text(new)
    return new != text


if __name__ == "__main__":
    changed = rewrite_readme()
    print("README.md rewritten" if changed else "README.md already matches bench/results")
    sys.exit(0)
