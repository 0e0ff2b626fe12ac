"""MkDocs hook: the reference tables, generated from the code at build time.

A page holds ``<!-- generated: NAME -->`` where a table goes; :func:`on_page_markdown`
replaces it with :func:`render` (``NAME``). Nothing here is typed twice: the option registry
(:mod:`listing.options.registry`), the storage allowlist and its S3A mapping
(:mod:`listing.options.storage_options`), the error classes (:mod:`listing.errors`), the
counters (:mod:`listing.metrics`) and the command's parser (:func:`listing.cli.build_parser`)
are the sources. An unknown name fails the build.
"""

from __future__ import annotations

import argparse
import inspect
import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parents[1]
#: the saved benchmark runs the benchmarks page shows (bench/results/<dir>/latest.md): the
#: latest run of each section, with its command and commit
BENCH_RUNS = {"listing": "listing/latest.md", "latency": "latency-quick/latest.md",
              "throughput": "throughput/latest.md", "s3a": "s3a/latest.md",
              "key-grouped": "key_grouped/latest.md", "streaming": "latest.md#5",
              "write-commit": "write-commit.md", "planning-at-scale": "planning/at-scale.md",
              "planning-spark": "planning/spark-quick.md",
              "planning-repeated": "repeated/latest.md",
              "write-spark-s3": "write-spark-s3/latest.md",
              "write-local": "write-local/latest.md", "write-peers": "write-peers/latest.md"}
#: the charts beside them, served at bench/<name> on the site
BENCH_CHARTS = ("listing/listing-hourly.png", "listing/listing-daily.png",
                "throughput/throughput-ratios.png", "s3a/latest-hourly.png",
                "s3a/latest-daily.png", "s3a/latest-throughput.png",
                "planning/at-scale-local-210240.png", "planning/at-scale-local-1051200.png",
                "planning/at-scale-synthetic-10512000.png",
                "planning/spark-quick-local-52560.png", "repeated/latest.png",
                "write-spark-s3/latest.png", "write-local/latest-throughput.png",
                "write-peers/latest-peers.png")

MARKER = re.compile(r"<!-- generated: ([\w-]+) -->")

_NATIVE = {
    "planner": "read by the listing planner",
    "ignore": "changes tasks, never rows",
    "false_only": "keeps the Python engine when true",
    "python": "keeps the Python engine",
}


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _default(value: Any) -> str:
    if value is None or value == ():
        return ""
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value}`"


def _native(option: Any) -> str:
    if option.native == "spark":
        return (f"Spark's `{option.spark_option}` "
                f"({', '.join(option.native_formats)})")
    text = _NATIVE[option.native]
    if option.native in ("false_only", "python") and option.why:
        return f"{text}: `{option.name}` {option.why}"
    return text


def options_table(*scopes: str) -> str:
    """The registry's options of ``scopes`` (shown ones only), one row each."""
    from listing.options import registry

    rows = ["| option | Spark's spelling | kind | default | meaning | on Spark's own reader |",
            "| --- | --- | --- | --- | --- | --- |"]
    for o in registry.in_scope(*scopes):  # type: ignore[arg-type]
        if not o.listed:
            continue
        spark = ", ".join(f"`{s}`" for s in o.spark)
        kind = " / ".join(o.choices) if o.choices else o.kind
        rows.append(f"| `{o.name}` | {spark} | {_cell(kind)} | {_default(o.default)} | "
                    f"{_cell(o.meaning)} | {_cell(_native(o))} |")
    return "\n".join(rows)


def write_options_table() -> str:
    """What a write does with each option the registry knows a write's answer for."""
    from listing.options import registry

    rows = ["| option | Spark's spelling | kind | meaning | a write |",
            "| --- | --- | --- | --- | --- |"]
    for o in registry.OPTIONS:
        if not o.listed or not o.on_write:
            continue
        does = {"take": "takes it", "ignore": "ignores it",
                "refuse": "refuses it" + (f" (use `{o.instead}`)" if o.instead else "")}
        spark = ", ".join(f"`{s}`" for s in o.spark)
        rows.append(f"| `{o.name}` | {spark} | {_cell(o.kind)} | {_cell(o.meaning)} | "
                    f"{does[o.on_write]} |")
    return "\n".join(rows)


def format_options_table() -> str:
    """Each built-in format's own options, with their defaults."""
    from listing import formats

    rows = ["| format | option | default |", "| --- | --- | --- |"]
    for name in ("parquet", "csv", "json", "arrow"):
        fmt = formats.get(name)
        for key, value in sorted(fmt.option_defaults.items()):
            rows.append(f"| `{name}` | `{key}` | {_cell(_default(value))} |")
    return "\n".join(rows)


def errors_table() -> str:
    """Every error class of :mod:`listing.errors`: its bases and what it means."""
    from listing import errors

    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass)
               if issubclass(c, errors.ListingError) and c.__module__ == errors.__name__]
    classes.sort(key=lambda c: (len(c.__mro__), c.__name__))
    rows = ["| error | is a | raised when |", "| --- | --- | --- |"]
    for c in classes:
        bases = ", ".join(f"`{b.__name__}`" for b in c.__bases__)
        doc = " ".join((c.__doc__ or "").split("\n\n")[0].split())
        rows.append(f"| `{c.__name__}` | {bases} | {_cell(doc)} |")
    return "\n".join(rows)


def metrics_table() -> str:
    """Every counter of :data:`listing.metrics.COUNTERS`, in the order metrics are shown."""
    from listing.metrics import COUNTERS

    rows = ["| counter | counts |", "| --- | --- |"]
    rows += [f"| `{name}` | {_cell(meaning)} |" for name, meaning in COUNTERS.items()]
    return "\n".join(rows)


def cli_help() -> str:
    """``listing --help`` and every command's ``--help``, as the command prints them."""
    from listing.cli import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "92"
    try:
        parser = build_parser()
        out = [f"### `listing --help`\n\n```text\n{parser.format_help().rstrip()}\n```"]
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        for name, p in sub.choices.items():
            out.append(f"### `listing {name} --help`\n\n```text\n{p.format_help().rstrip()}\n```")
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return "\n\n".join(out)


def _storage_table() -> str:
    from listing.options import storage_options

    return storage_options.markdown_table()


def _withheld_table() -> str:
    from listing.options import storage_options

    return storage_options.withheld_markdown_table()


def _s3a_table() -> str:
    from listing.options import storage_options

    return storage_options.s3a_markdown_table()


def bench_run(name: str) -> str:
    """One saved run's Markdown (bench/results/...), its headings moved two levels down
    under the page's; ``file#N`` keeps the header and section ``## N.`` only."""
    path, _, section = BENCH_RUNS[name].partition("#")
    text = (ROOT / "bench" / "results" / path).read_text()
    if section:
        head = text.split("\n## ", 1)[0]
        part = text.split(f"\n## {section}.", 1)[1].split("\n## ", 1)[0]
        text = f"{head}\n## {section}.{part}"
    text = re.sub(r"^# .*\n", "", text)  # the file's own title
    folder = Path(path).parent.as_posix()
    text = re.sub(r"\]\(([\w.-]+\.png)\)",  # charts beside it, as served (on_files)
                  lambda m: f"](bench/{folder}-{m.group(1)})", text)
    return re.sub(r"^(#+) ", lambda m: "#" * min(len(m.group(1)) + 1, 6) + " ", text,
                  flags=re.M).strip()


def bench_method() -> str:
    """bench/README.md's method and caveats (from "What is measured" to the latest
    results), headings one level down."""
    text = (ROOT / "bench" / "README.md").read_text()
    text = text.split("\n## What is measured", 1)[1].split("\n## Latest results", 1)[0]
    text = "## What is measured" + text
    return re.sub(r"^(#+) ", lambda m: "#" * min(len(m.group(1)) + 1, 6) + " ", text,
                  flags=re.M).strip()


def version() -> str:
    """The package's version, from pyproject.toml (the one place it is written)."""
    import tomllib

    return str(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"])


def repository_url() -> str | None:
    """The repository the site links to: ``[project.urls] Repository`` in pyproject.toml,
    else this clone's ``origin`` remote (an https URL only), else none."""
    import subprocess
    import tomllib

    urls = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"].get("urls", {})
    if urls.get("Repository"):
        return str(urls["Repository"])
    try:
        origin = subprocess.run(["git", "-C", str(ROOT), "remote", "get-url", "origin"],
                                capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        return None
    origin = re.sub(r"^git@([^:]+):", r"https://\1/", origin).removesuffix(".git")
    return origin if origin.startswith("https://") else None


def _bench_summary() -> str:
    sys.path.insert(0, str(ROOT / "docs_hooks"))
    try:
        import bench_figures
    finally:
        sys.path.pop(0)
    return bench_figures.summary_table()


GENERATORS: dict[str, Callable[[], str]] = {
    "source-options": lambda: options_table("source"),
    "listing-options": lambda: options_table("listing"),
    "stream-options": lambda: options_table("stream"),
    "format-spellings": lambda: options_table("format"),
    "write-options": write_options_table,
    "format-options": format_options_table,
    "storage-allowlist": _storage_table,
    "storage-withheld": _withheld_table,
    "s3a-mapping": _s3a_table,
    "errors": errors_table,
    "metrics": metrics_table,
    "cli-help": cli_help,
    "bench-method": bench_method,
    "bench-summary": _bench_summary,
    "version": lambda: f"Version {version()} (`pyproject.toml`).",
    **{f"bench-{name}": (lambda n=name: bench_run(n)) for name in BENCH_RUNS},
}


def render(name: str) -> str:
    """The Markdown for ``<!-- generated: name -->``; a KeyError names an unknown one."""
    if name not in GENERATORS:
        raise KeyError(f"unknown generated table {name!r}; known: {', '.join(GENERATORS)}")
    return GENERATORS[name]()


def expand(markdown: str) -> str:
    """``markdown`` with every marker replaced by its table."""
    return MARKER.sub(lambda m: render(m.group(1)), markdown)


#: a chart served from bench/results (on_files), not already a link
CHART = re.compile(r"(?<!\[)!\[([^\]]*)\]\((bench/[\w.-]+\.png)\)")


def link_charts(markdown: str) -> str:
    """Each benchmark chart as a full-width image that opens at full size when clicked."""
    return CHART.sub(lambda m: f"[![{m.group(1)}]({m.group(2)})]({m.group(2)}){{ .chart }}",
                     markdown)


#: what a reader of the Markdown in a clone is told (how to build the page), not the site's
CLONE_NOTE = re.compile(r"<!-- clone-note -->.*?<!-- /clone-note -->\n?", re.S)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return link_charts(expand(CLONE_NOTE.sub("", markdown)))


#: the installed layout, staged for mkdocstrings (mkdocs.yml: paths): formats/ and
#: fixtures/ are listing.formats and listing.testing only once installed, and griffe reads
#: packages from the file system (as .ci/lint stages them for mypy)
STAGE = ROOT / ".docs-src"


def stage_installed_layout() -> Path:
    """``.docs-src/listing``: a copy of ``listing/`` with ``formats/`` and ``fixtures/`` as
    its ``formats`` and ``testing`` (copies: griffe resolves links to their real paths)."""
    package = STAGE / "listing"
    shutil.rmtree(STAGE, ignore_errors=True)
    skip = shutil.ignore_patterns("__pycache__", "*.jar")
    shutil.copytree(ROOT / "listing", package, ignore=skip)
    shutil.copytree(ROOT / "formats", package / "formats", ignore=skip)
    shutil.copytree(ROOT / "fixtures", package / "testing", ignore=skip)
    return STAGE


@event_priority(100)  # before mkdocstrings' own on_config: it keeps only paths that exist
def on_config(config: Any) -> Any:
    stage_installed_layout()
    config["copyright"] = f"spark-listing {version()}, Apache-2.0"
    if not config.get("repo_url") and (url := repository_url()):
        config["repo_url"] = url  # the header's repository link
    return config


def on_files(files: Any, config: Any) -> Any:
    """The benchmark charts, from bench/results/, served at ``bench/<name>``."""
    from mkdocs.structure.files import File

    for chart in BENCH_CHARTS:
        files.append(File.generated(config, f"bench/{chart.replace('/', '-')}",
                                    abs_src_path=str(ROOT / "bench" / "results" / chart)))
    return files
