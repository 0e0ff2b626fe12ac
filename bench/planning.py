"""Planning at scale: the time and memory to plan a scan of a large table, ours against
pyarrow.dataset, Polars and Spark's own file index on local trees, and ours alone on a
synthetic 10 M-key table.

    python -m bench.planning                 # local 210,240 and 1,051,200 files, 10,512,000 keys
    python -m bench.planning --quick         # local 52,560 files, 1,051,200 keys
    python -m bench.planning --local 210240 --synthetic 0 --runs 3
    python -m bench.planning --quick --no-spark   # without the Spark readers
    python -m bench.planning --local 210240 --synthetic 0 --query "whole table"

Trees: ``date=2020-MM-DD/hour=H/part-K.parquet`` (365 days x 24 hours x K files of one
byte), written once under ``--data-dir`` and reused. Every reader is given the data schema
and the partition columns with their types, so planning opens no file. Queries: the whole
table, one month (a ``BETWEEN``), one day, ``hour = 7``.

Each measurement runs in a fresh process (``--child``), readers interleaved run by run;
the medians are reported. Per measurement: seconds from nothing to the list of files (ours:
``ListingTable.open`` + ``scan``; pyarrow: ``ds.dataset`` + ``get_fragments(filter)``;
Polars: ``scan_parquet(root/**/*.parquet, hive_partitioning)`` + ``filter`` +
``explain()``), the process's peak RSS over its RSS before planning (per planned file: the
table's files for the whole table, else the query's), and for ours the bytes Spark ships:
every file group pickled on its own, per planned file. For the whole table two floors run
beside them: the tree read with ``os.scandir`` in one thread, names only (``names walk``,
all Polars needs) and with an ``lstat`` per file (``lstat walk``, what a plan that sizes
its files must do: ours, pyarrow's and Spark's).

On local trees three readers plan in Spark's driver (``bench.planning_spark``, one session
per measurement, warmed up on a two-file tree first): Spark's own ``InMemoryFileIndex``
(``spark.read.option("basePath", root).parquet(root)``), ours through
``spark.read.format("listing")`` with ``engine=python`` and with ``engine=native``; beside
time and the Python peak they report the driver JVM's heap held per planned file.

The synthetic table is served by an in-memory store that pages as S3 does (1000 keys a
page, keys generated as they are listed, so the store itself holds none), each page made
by the S3 lister's own ``listed_page`` (its files as runs of columns): ours plans it
through the planner's listing run (one request at a time) and the table's ``_kept`` and
``_plan``, as ``ListingTable.scan`` does.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import pickle
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.planning_spark import SPARK_READERS
from bench.rss import reset_peak, vm

DAYS, HOURS = 365, 24
DAY0 = dt.date(2020, 1, 1)
QUERIES: dict[str, list[dict[str, Any]]] = {
    "whole table": [],
    "one month": [{"col": "date", "op": "between", "type": "date",
                   "values": ["2020-03-01", "2020-03-31"]}],
    "one day": [{"col": "date", "op": "=", "type": "date", "values": ["2020-03-15"]}],
    "hour = 7": [{"col": "hour", "op": "=", "type": "int", "values": ["7"]}],
}
LOCAL_READERS = ("listing", "pyarrow", "polars")
#: the system calls alone, whole table only: every directory read (``os.scandir``, one
#: thread), with and without an ``lstat`` per file; what a plan that sizes its files
#: (ours, pyarrow, Spark's index) and one that only names them (Polars) cannot go below
FLOOR_READERS = ("names walk", "lstat walk")
TARGET_B_PER_FILE = 250


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def per_hour(files: int) -> int:
    if files % (DAYS * HOURS):
        raise SystemExit(f"--local/--synthetic sizes are multiples of {DAYS * HOURS}")
    return files // (DAYS * HOURS)


# --- the trees -----------------------------------------------------------------------------

def local_tree(data_dir: Path, files: int) -> Path:
    """The local tree of ``files`` one-byte files, written once (a marker when complete)."""
    root = data_dir / f"planning-{files}"
    done = root / "_COMPLETE"
    if done.exists():
        return root
    k = per_hour(files)
    log(f"[planning] writing {files:,} files under {root} (once)")
    for i in range(DAYS):
        day = DAY0 + dt.timedelta(days=i)
        for h in range(HOURS):
            d = root / f"date={day}" / f"hour={h}"
            d.mkdir(parents=True, exist_ok=True)
            for j in range(k):
                fd = os.open(d / f"part-{j}.parquet", os.O_WRONLY | os.O_CREAT, 0o644)
                os.write(fd, b"x")
                os.close(fd)
    done.write_bytes(b"")  # a hidden name: every reader skips it
    return root


class SyntheticStore:
    """A table of ``365 x 24 x per_hour`` keys below ``root`` listed as S3 lists them
    (key order, pages of 1000 entries, a delimiter rolling keys into common prefixes,
    ``StartAfter``), generating the keys as it lists them; counts its requests."""

    splits_ranges = True

    def __init__(self, root: str, per_hour: int) -> None:
        from listing.metrics import Counters

        self.root = root
        self.days = [f"date={DAY0 + dt.timedelta(days=i)}/" for i in range(DAYS)]
        self.hours = sorted(f"hour={h}/" for h in range(HOURS))
        self.names = sorted(f"part-{j}.parquet" for j in range(per_hour))
        self.counters = Counters()

    def entries(self, prefix: str, delimiter: bool, start_after: str | None
                 ) -> Iterator[str]:
        """(path) of every entry in key order; a common prefix ends in "/"."""
        def fits(path: str) -> bool:  # may hold or be a key of the listing
            return path.startswith(prefix) or prefix.startswith(path)

        def after(head: str) -> bool:  # keys below head may come after start_after
            return start_after is None or head >= start_after[:len(head)]

        for day in self.days:
            d = self.root + day
            if not fits(d) or not after(d):
                continue
            if delimiter and len(d) > len(prefix) and d[len(prefix):].count("/") == 1:
                yield d
                continue
            for hour in self.hours:
                h = d + hour
                if not fits(h) or not after(h):
                    continue
                if delimiter and len(h) > len(prefix) and h[len(prefix):].count("/") == 1:
                    yield h
                    continue
                for name in self.names:
                    key = h + name
                    if key.startswith(prefix) and (start_after is None or key > start_after):
                        yield key

    def pages(self, prefix: str, *, delimiter: bool, start_after: str | None = None,
              stop_after: str | None = None) -> Iterator[Any]:
        from listing.storage import PAGE_SIZE
        from listing.storage.lister import listed_page

        entries = self.entries(prefix, delimiter, start_after)
        modified = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
        pending = next(entries, None)
        while True:
            self.counters.add("list_requests")
            chunk: list[str] = []
            while pending is not None and len(chunk) < PAGE_SIZE:
                chunk.append(pending)
                pending = next(entries, None)
            keys = [p for p in chunk if p[-1] != "/"]
            n = len(keys)
            # as the S3 lister makes a page of what the page parser read
            page = listed_page("", keys, [1] * n, [modified] * n, [None] * n,
                               [p for p in chunk if p[-1] == "/"], pending is not None,
                               stop_after)
            more = page.truncated
            yield page
            if not more:
                return


# --- one measurement, in its own process ---------------------------------------------------

def _plan_bytes(plan: Any) -> int:
    return sum(len(pickle.dumps(g, pickle.HIGHEST_PROTOCOL)) for g in plan.file_groups)


def child(reader: str, where: str, query: str) -> dict[str, Any]:
    """Plan ``query`` with ``reader`` on ``where`` (a local root, or ``synthetic:N``)."""
    import pyarrow as pa

    from bench import peers

    conj = QUERIES[query]
    if reader.startswith("spark "):
        from bench import planning_spark

        return planning_spark.child(reader, where, peers.to_sql(conj))
    cols = [("date", pa.date32()), ("hour", pa.int32())]
    schema = pa.schema([("id", pa.int64())])
    out: dict[str, Any] = {}
    if reader == "polars":
        import polars as pl
    elif reader == "pyarrow":
        import pyarrow.dataset as ds
    else:
        from listing import ListingTable  # noqa: F401 - imported before the baseline
    if where.startswith("synthetic:"):
        store, table, run_cls, predicate = _synthetic(int(where.split(":")[1]), cols, schema,
                                                      peers.to_sql(conj))
    reset_peak()
    base = vm("VmRSS")
    t0, cpu0 = time.perf_counter(), time.process_time()
    if where.startswith("synthetic:"):
        from listing.gc_pause import gc_paused

        run = run_cls(store, store.root, cols, None, predicate, table.file_filter)
        with gc_paused():  # as ListingTable.scan keeps and plans what its run lists
            files = table._kept(run.batches())
        split = table.split(table.bind(peers.to_sql(conj)))
        plan = table._plan(files, table.projection(None), split, None, min_partitions=None,
                           listing_plan=run.steps)
        out["files"] = plan.file_count
        out["list_requests"] = store.counters["list_requests"]
    elif reader == "listing":
        from listing import ListingTable

        tab = ListingTable.open(where, partition_cols=cols, schema=schema)
        plan = tab.scan(where=peers.to_sql(conj))
        out["files"] = plan.file_count
        out["list_requests"] = plan.metrics["list_requests"]
    elif reader in FLOOR_READERS:
        out["files"] = _walk(where, stat=reader == "lstat walk")
    elif reader == "pyarrow":
        part = ds.partitioning(pa.schema(cols), flavor="hive")
        dataset = ds.dataset(where, format="parquet", partitioning=part,
                             schema=pa.schema(list(schema) + [pa.field(n, t) for n, t in cols]))
        out["files"] = len(list(dataset.get_fragments(filter=peers.to_pyarrow(conj))))
    else:
        lf = pl.scan_parquet(where + "/**/*.parquet", hive_partitioning=True,
                             schema={"id": pl.Int64},
                             hive_schema={"date": pl.Date, "hour": pl.Int32})
        expr = peers.to_polars(conj)
        if expr is not None:
            lf = lf.filter(expr)
        out["files"] = peers._polars_files(lf.explain())
    out["seconds"] = time.perf_counter() - t0
    out["cpu_seconds"] = time.process_time() - cpu0  # on a loaded machine, beside wall time
    out["peak_bytes"] = vm("VmHWM") - base
    if reader == "listing":
        out["plan_bytes"] = _plan_bytes(plan)
        out["groups"] = len(plan.file_groups)
    return out


def _walk(root: str, *, stat: bool) -> int:
    """The files below ``root`` (hidden names too), read a directory at a time; ``stat``:
    an ``lstat`` per file, as a plan that knows sizes and times needs."""
    files = 0
    stack = [root]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                else:
                    files += 1
                    if stat:
                        entry.stat(follow_symlinks=False)
    return files


def _synthetic(keys: int, cols: list, schema: Any, where: str | None) -> tuple[Any, ...]:
    from listing import formats
    from listing.options import ListingOptions
    from listing.planner import PlanRun
    from listing.storage.spec import StorageSpec
    from listing.table import ListingTable
    from listing.url import TableUrl

    root = "synthetic/t/"
    store = SyntheticStore(root, per_hour(keys))
    table = ListingTable(url=TableUrl.parse("memory://synthetic/t"),
                         storage=StorageSpec("memory"), fmt=formats.get("parquet"),
                         partition_cols=cols, file_schema=schema, profile=None,
                         options=ListingOptions(), open_metrics={})
    split = table.split(table.bind(where))
    return store, table, PlanRun, split.partition


def _measure(reader: str, where: str, query: str, timeout: float,
             module: str = "bench.planning") -> dict[str, Any]:
    """One measurement in a fresh process: ``python -m MODULE --child READER WHERE QUERY``
    (its last stdout line, JSON), or ``{"error": ...}``: the timeout, or the last stderr
    line naming an error (a Java stack trace ends in its frames), its tail logged."""
    cmd = [sys.executable, "-m", module, "--child", reader, where, query]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                             check=False, cwd=Path(__file__).resolve().parents[1])
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s"}
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines() or [f"exit {out.returncode}"]
        named = [ln.strip() for ln in lines if "Error" in ln or "Exception" in ln]
        log("\n".join(lines[-40:]))
        return {"error": (named or lines)[-1][:500]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def _median(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if key in r and r[key] is not None]
    return statistics.median(values) if values else None


def table_runs(where: str, size: int, readers: tuple[str, ...], runs: int,
               timeout: float, *, module: str = "bench.planning",
               queries: Sequence[str] | None = None) -> dict[str, Any]:
    """Every query (``queries``, default all of :data:`QUERIES`) by every reader, ``runs``
    rounds, readers interleaved in each round; each measurement a ``module --child``."""
    result: dict[str, Any] = {"files": size, "queries": {}}
    for query in queries or QUERIES:
        got: dict[str, list[dict[str, Any]]] = {
            r: [] for r in readers if query == "whole table" or r not in FLOOR_READERS}
        for i in range(runs):
            for reader in (list(got) if i % 2 == 0 else list(got)[::-1]):
                m = _measure(reader, where, query, timeout, module)
                got[reader].append(m)
                log(f"[planning] {size:,} {query} {reader}: "
                    + (m["error"] if "error" in m else f"{m['seconds']:.2f} s, "
                       f"{m['files']} files, peak {m['peak_bytes'] / 2**20:.0f} MB"))
        q: dict[str, Any] = {}
        for reader, ms in got.items():
            ok = [m for m in ms if "error" not in m]
            if not ok:
                q[reader] = {"error": ms[-1]["error"]}
                continue
            planned = size if query == "whole table" else (ok[0]["files"] or size)
            peak = _median(ok, "peak_bytes")
            row = {"seconds": _median(ok, "seconds"), "files": ok[0]["files"],
                   "peak_mb": peak / 2**20 if peak is not None else None,
                   "peak_b_per_file": peak / max(planned, 1) if peak is not None else None,
                   "runs": len(ok)}
            cpu = _median(ok, "cpu_seconds")
            if cpu is not None:
                row["cpu_seconds"] = cpu
            for key in ("plan_bytes", "list_requests", "groups"):
                if key in ok[0]:
                    row[key] = ok[0][key]
            jvm = _median(ok, "jvm_bytes")
            if jvm is not None:
                row["jvm_b_per_file"] = jvm / max(planned, 1)
            if "plan_bytes" in row:
                row["plan_b_per_file"] = row["plan_bytes"] / max(ok[0]["files"], 1)
            q[reader] = row
        result["queries"][query] = q
    return result


def markdown(res: dict[str, Any]) -> str:
    lines = [f"**Planning at scale** ({res['command']}; code {res.get('code', '?')}; "
             f"{res['runs']} runs, medians; every measurement a fresh process)", ""]
    for name, t in res["tables"].items():
        lines += [f"*{name}: {t['files']:,} files*", "",
                  "| query | reader | files | seconds | CPU s | vs Polars | peak MB "
                  "| peak B/file | plan B/file | JVM B/file | LIST |",
                  "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
        for query, q in t["queries"].items():
            polars = q.get("polars", {}).get("seconds")
            for reader, r in q.items():
                if "error" in r:
                    lines.append(f"| {query} | {reader} | error: {r['error']} ||||||||| ")
                    continue
                ratio = (f"{r['seconds'] / polars:.2f}×" if polars and reader != "polars"
                         else "")
                pbf, jbf = r.get("plan_b_per_file"), r.get("jvm_b_per_file")
                files = "?" if r["files"] is None else f"{r['files']:,}"
                cpu = r.get("cpu_seconds")
                lines.append(
                    f"| {query} | {reader} | {files} | {r['seconds']:.3f} | "
                    f"{'' if cpu is None else f'{cpu:.2f}'} | {ratio} | "
                    f"{r['peak_mb']:.0f} | {r['peak_b_per_file']:.0f} | "
                    f"{'' if pbf is None else f'{pbf:.0f}'} | "
                    f"{'' if jbf is None else f'{jbf:.0f}'} | {r.get('list_requests', '')} |")
        lines.append("")
    return "\n".join(lines)


def chart(res: dict[str, Any], out: Path) -> list[Path]:
    """Seconds and peak bytes per planned file, per query and reader, one figure a table."""
    from bench.charts import _bars, _plt, _save

    plt = _plt()
    paths = []
    for name, t in res["tables"].items():
        queries = list(t["queries"])
        readers = [r for r in LOCAL_READERS + FLOOR_READERS + SPARK_READERS
                   if any(r in q for q in t["queries"].values())]

        def series(key: str, queries: list[str] = queries, t: dict = t,
                   readers: list[str] = readers) -> dict[str, list[float | None]]:
            # Spark's readers plan in the JVM (and in Python workers): their memory is the
            # driver JVM's heap held per file
            return {r: [t["queries"][q].get(r, {}).get(
                "jvm_b_per_file" if key == "peak_b_per_file" and r in SPARK_READERS else key)
                for q in queries] for r in readers
                if key == "seconds" or r not in FLOOR_READERS}  # the walks hold nothing

        fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
        title = f"planning, {name} files"
        _bars(left, queries, series("seconds"), "seconds to plan (log)", True, title)
        _bars(right, queries, series("peak_b_per_file"),
              f"B / planned file: peak RSS; spark: JVM heap (log; line {TARGET_B_PER_FILE})",
              True, title)
        right.axhline(TARGET_B_PER_FILE, color="black", linewidth=0.8)
        handles, labels = left.get_legend_handles_labels()  # every reader, the walks too
        right.legend(handles, labels, fontsize=8, loc="upper left",
                     bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
        stem = f"{out.stem}-{name.replace(' ', '-').replace(',', '')}"
        paths.append(_save(fig, out.with_name(stem + ".png")))
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.planning", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="local 52,560; synthetic 1,051,200")
    ap.add_argument("--local", type=int, action="append",
                    help="local tree sizes (210240 and 1051200; 0: none)")
    ap.add_argument("--synthetic", type=int, help="synthetic keys (10512000; 0: none)")
    ap.add_argument("--no-spark", action="store_true",
                    help="leave out the readers planning in Spark's driver")
    ap.add_argument("--query", action="append", choices=list(QUERIES),
                    help="only these queries (default: all)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--data-dir", type=Path,
                    default=Path(tempfile.gettempdir()) / "listing-bench-data")
    ap.add_argument("--out", type=Path, help="write OUT.json, OUT.md and OUT-*.png")
    ap.add_argument("--child", nargs=3, metavar=("READER", "WHERE", "QUERY"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    from bench import report

    local = ([n for n in args.local if n] if args.local is not None  # --local 0: none
             else [52_560] if args.quick else [210_240, 1_051_200])
    synthetic = (args.synthetic if args.synthetic is not None
                 else 1_051_200 if args.quick else 10_512_000)
    argv_text = shlex.join(argv if argv is not None else sys.argv[1:])
    res: dict[str, Any] = {"command": f"python -m bench.planning {argv_text}".strip(),
                           "code": report.code_revision(Path(__file__).resolve().parents[1]),
                           "machine": report.machine(), "runs": args.runs, "tables": {}}
    readers = LOCAL_READERS + FLOOR_READERS + (() if args.no_spark else SPARK_READERS)
    for size in local:
        root = local_tree(args.data_dir, size)
        res["tables"][f"local {size:,}"] = table_runs(str(root), size, readers,
                                                      args.runs, args.timeout,
                                                      queries=args.query)
    if synthetic:
        res["tables"][f"synthetic {synthetic:,}"] = table_runs(
            f"synthetic:{synthetic}", synthetic, ("listing",), args.runs, args.timeout,
            queries=args.query)
    text = markdown(res)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(res, indent=1, default=str))
        args.out.with_suffix(".md").write_text(text + "\n")
        try:
            for p in chart(res, args.out):
                log(f"[planning] chart {p}")
        except ImportError as err:  # matplotlib is in the bench extra
            log(f"[planning] no chart: {err}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
