"""``python -m bench.s3a``: S3 tables read through Spark, ours against Spark's own S3A reader.

The listing section's tables and query shapes (bench.listing_bench: ``daily`` and ``hourly``,
at its ``--quick`` sizes with ``--quick``) in a moto S3 server in this process, read four
ways in one Spark session
(``listing.session()``, with the S3A connector fetched by ``make s3a``):

- ``listing native``: ``spark.read.format("listing")``, handed off to Spark's Parquet reader
  over ``ListingFileIndex`` (engine=auto);
- ``listing python``: the same with ``engine=python`` (our reader in Python workers);
- ``spark s3a``: ``spark.read.parquet("s3a://bucket/prefix")`` and the query's filter
  (Spark's partition discovery over S3A);
- ``spark basePath``: ``spark.read.option("basePath", root).parquet(root + "date=…/")``,
  the careful user's form, for the queries on one date.

Each figure: LIST / HEAD / GET requests from the server's log and seconds, for building the
DataFrame and its physical plan (``plan_s``) and for the whole ``count()`` (``total_s``);
median of ``--runs`` after one warm-up per reader and query (one run when the warm-up
took over 20 s). Queries matching more than
``--max-files`` files (300; 3 000 without ``--quick``) are left out: every reader sends
a GET per file (Spark's S3A readers a HEAD too), which moto serves at a few hundred a
second. Per table, ``HEAD per file read``: each reader's HEAD requests over the files its
queries read (``heads_per_file``). moto is one Python
process on the same cores as Spark and this driver: its per-request cost (milliseconds, not
S3's tens) favours readers that send many requests.

Throughput on S3 (``--throughput-rows``, 12 M; 1 M with ``--quick``; 0 leaves it out): the
throughput section's Parquet tree (bench.throughput: 20 dates x 3 files) copied into a
bucket of the same server, and its four queries read three ways: ``spark s3a``
(``spark.read.option("basePath", root).parquet(root)``), ``listing native`` and ``listing
python``; the readers take turns, median of ``--runs`` after a warm-up, ``ratio`` = ours /
Spark's S3A time, results checked equal. moto serves every byte from one Python process
on the 2 cores Spark's two task threads also use: the figures measure that server as
much as the readers, and a reader that asks for fewer, larger reads is favoured.

With ``--out``, PNG charts (bench.charts) go beside the Markdown.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.listing_bench import Query, TableDef, build, daily_table, hourly_table, queries

READERS = ("listing native", "listing python", "spark s3a", "spark basePath")
ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = Path(tempfile.gettempdir()) / "listing-bench-data"  # bench.throughput's, reused


def _where(q: Query) -> str:
    parts = []
    for c in q.conjuncts:
        lit = (lambda v: f"DATE '{v}'") if c["type"] == "date" else (
            (lambda v: str(v)) if c["type"] == "int" else (lambda v: f"'{v}'"))
        if c["op"] == "=":
            parts.append(f"{c['col']} = {lit(c['values'][0])}")
        elif c["op"] == "between":
            parts.append(f"{c['col']} BETWEEN {lit(c['values'][0])} AND {lit(c['values'][1])}")
        else:
            parts.append(f"{c['col']} IN ({', '.join(lit(v) for v in c['values'])})")
    return " AND ".join(parts)


def _date_folder(q: Query) -> str | None:
    """``date=…`` when the query pins one date (the basePath form reads that folder)."""
    for c in q.conjuncts:
        if c["col"] == "date" and c["op"] == "=":
            return f"date={c['values'][0]}"
    return None


def _frame(spark: Any, reader: str, table: TableDef, storage: dict[str, Any], q: Query) -> Any:
    root = f"s3://{table.bucket}/{table.prefix}".rstrip("/")
    s3a_root = "s3a" + root[2:]
    where = _where(q)
    if reader.startswith("listing"):
        df = (spark.read.format("listing").option("storage_options", json.dumps(storage))
              .option("engine", "auto" if reader.endswith("native") else "python").load(root))
    elif reader == "spark s3a":
        df = spark.read.parquet(s3a_root)
    else:
        folder = _date_folder(q)
        assert folder is not None
        df = spark.read.option("basePath", s3a_root).parquet(f"{s3a_root}/{folder}/")
    return df.where(where) if where else df


def _load() -> list[float]:
    """The machine's 1-, 5- and 15-minute load averages (moto and Spark share its cores)."""
    return [round(x, 2) for x in os.getloadavg()]


def _engine(df: Any) -> str:
    plan = df._jdf.queryExecution().executedPlan().toString()  # noqa: SLF001
    return "python" if "BatchScan listing" in plan else "native"


def measure(spark: Any, server: Any, reader: str, table: TableDef, storage: dict[str, Any],
            q: Query, expected_rows: int, runs: int, long_s: float = 20.0) -> dict[str, Any]:
    """Median of ``runs`` after a warm-up; one timed run when the warm-up took over
    ``long_s`` (Spark's discovery of the full hourly table: about a minute a run on moto).
    ``load_s`` is building the DataFrame alone (Spark's discovery; our schema inference),
    ``plan_s`` that and the physical plan, ``total_s`` that and ``count()``."""
    samples: list[dict[str, Any]] = []
    while len(samples) < runs + 1:  # the first is a warm-up for this query
        with server.log.capture(table.bucket) as cap:
            t0 = time.perf_counter()
            df = _frame(spark, reader, table, storage, q)
            tl = time.perf_counter()
            df._jdf.queryExecution().executedPlan()  # noqa: SLF001 - planning, no job yet
            t1 = time.perf_counter()
            rows = df.count()
            t2 = time.perf_counter()
        if rows != expected_rows:
            raise AssertionError(f"{reader} {q.name}: {rows} rows, expected {expected_rows}")
        counts = cap.counts()
        samples.append({"load_s": tl - t0, "plan_s": t1 - t0, "total_s": t2 - t0,
                        "LIST": counts["LIST"], "HEAD": counts["HEAD"], "GET": counts["GET"],
                        "engine": _engine(df) if reader.startswith("listing") else "native"})
        if len(samples) == 1 and samples[0]["total_s"] > long_s:
            runs = 1
    timed = samples[1:]
    out: dict[str, Any] = {k: statistics.median(s[k] for s in timed)
                           for k in ("load_s", "plan_s", "total_s")}
    out.update({k: timed[-1][k] for k in ("LIST", "HEAD", "GET", "engine")})
    out["runs"] = len(timed)
    return out


def _s3a_conf(spark: Any, storage: dict[str, Any], table: TableDef) -> None:
    """The per-bucket S3A settings our hand-off maps these storage options to, set on the
    session for Spark's own reader (so both open the bucket's one S3A filesystem alike).

    S3A's classic input stream for every reader: Hadoop 3.5's default analytics stream
    caches what it read in the bucket's filesystem, so a reader run after another would
    find the files' footers already read (no GET): each query pays its own reads here."""
    bucket = table.bucket
    conf = spark._jsc.hadoopConfiguration()  # noqa: SLF001
    p = f"fs.s3a.bucket.{bucket}."
    for key, value in {"endpoint": storage["endpoint_url"], "path.style.access": "true",
                       "connection.ssl.enabled": "false",
                       "endpoint.region": storage["client_kwargs"]["region_name"],
                       "access.key": storage["key"], "secret.key": storage["secret"],
                       "aws.credentials.provider":
                           "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
                       "input.stream.type": "classic"}.items():
        conf.set(p + key, value)


TP_READERS = ("spark s3a", "listing native", "listing python")


def _tp_frame(spark: Any, reader: str, root: str, storage: dict[str, Any], q: Any) -> Any:
    s3a_root = "s3a" + root[2:]
    if reader == "spark s3a":
        df = spark.read.option("basePath", s3a_root).parquet(s3a_root)
    else:
        df = (spark.read.format("listing").option("storage_options", json.dumps(storage))
              .option("engine", "auto" if reader.endswith("native") else "python").load(root))
    df = df.where(q.where) if q.where else df
    return df.select(*q.columns) if q.columns else df


def throughput_s3(spark: Any, server: Any, storage: dict[str, Any], rows: int, runs: int,
                  data_dir: Path, log: Callable[[str], None]) -> dict[str, Any]:
    """bench.throughput's Parquet tree and queries, on S3: Spark's S3A reader and ours."""
    from bench import throughput as tp

    local = tp.generate(data_dir, rows)["parquet"]
    total = tp.table_rows(data_dir, rows)
    table = TableDef("throughput", "bench-s3a-throughput", "tp/", [], [])
    server.drop_bucket(table.bucket)
    server.create_bucket(table.bucket)
    files = sorted(p for p in local.rglob("*.parquet"))
    server.put_objects_fast(table.bucket, {
        table.prefix + p.relative_to(local).as_posix(): p.read_bytes() for p in files})
    _s3a_conf(spark, storage, table)
    root = f"s3://{table.bucket}/{table.prefix}".rstrip("/")
    out: dict[str, Any] = {"rows": total, "files": len(files),
                           "bytes": sum(p.stat().st_size for p in files), "runs": runs,
                           "load_start": _load(), "queries": {}}
    log(f"[s3a] throughput: {total:,} rows, {len(files)} files, "
        f"{out['bytes'] / 2**20:.0f} MiB in moto")
    for q in tp._queries():  # noqa: SLF001 - the same queries as the local section
        results, requests, engines = {}, {}, {}
        for reader in TP_READERS:  # warm-up, with the request counts
            with server.log.capture(table.bucket) as cap:
                df = _tp_frame(spark, reader, root, storage, q)
                results[reader] = tp._norm(q.run(df))  # noqa: SLF001
            counts = cap.counts()
            requests[reader] = {k: counts[k] for k in ("LIST", "HEAD", "GET")}
            engines[reader] = "native" if reader == "spark s3a" else _engine(df)
        times: dict[str, list[float]] = {r: [] for r in TP_READERS}
        for _ in range(runs):  # in turns: a slow spell falls on every reader alike
            for reader in TP_READERS:
                t0 = time.perf_counter()
                q.run(_tp_frame(spark, reader, root, storage, q))
                times[reader].append(time.perf_counter() - t0)
        base = statistics.median(times["spark s3a"])
        qres: dict[str, Any] = {"label": q.label, "readers": {},
                                "agree": all(v == results["spark s3a"]
                                             for v in results.values())}
        for reader in TP_READERS:
            med = statistics.median(times[reader])
            qres["readers"][reader] = {"seconds": med, "times": times[reader],
                                       "ratio": med / base, "engine": engines[reader],
                                       **requests[reader]}
            log(f"[s3a] throughput {q.name:<6} {reader:<15} {med:6.2f} s "
                f"({med / base:.2f}x) LIST {requests[reader]['LIST']} "
                f"HEAD {requests[reader]['HEAD']} GET {requests[reader]['GET']} "
                f"({engines[reader]})")
        if not qres["agree"]:
            raise AssertionError(f"throughput {q.name}: results differ {results}")
        out["queries"][q.name] = qres
    out["load_end"] = _load()
    server.drop_bucket(table.bucket)
    return out


def run(quick: bool, runs: int, log: Callable[[str], None] = print,
        max_files: int | None = None, days: tuple[int, int] | None = None,
        throughput_rows: int | None = None,
        data_dir: Path = DATA_DIR) -> dict[str, Any]:
    import listing
    from listing.spark.s3a import connector_jars
    from listing.testing.s3 import S3Server

    if not connector_jars():
        raise RuntimeError("Spark's S3A connector is not fetched: make s3a")
    daily_days, hourly_days = days or ((60, 30) if quick else (730, 365))
    tables = [daily_table(daily_days), hourly_table(hourly_days)]
    tp_rows = (1_000_000 if quick else 12_000_000) if throughput_rows is None else throughput_rows
    cap = max_files or (300 if quick else 3000)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = listing.session("bench-s3a", conf={"spark.sql.shuffle.partitions": "2",
                                                # the throughput GROUP BY ran out of 1 GiB
                                                "spark.driver.memory": "3g"})
    section: dict[str, Any] = {"quick": quick, "runs": runs, "max_files": cap, "tables": {}}
    try:
        with S3Server() as server:
            storage = server.storage_options
            for table in tables:
                secs = build(server, table)
                log(f"[s3a] built {table.name}: {len(table.files):,} keys ({secs:.1f} s)")
                _s3a_conf(spark, storage, table)
                result: dict[str, Any] = {"keys": len(table.files), "load_start": _load(),
                                          "queries": {}}
                for q in queries(table):
                    files = sum(1 for _, v in table.files if q.matches(v))
                    if files > cap:
                        log(f"[s3a] {table.name}/{q.name}: {files} files, over --max-files")
                        continue
                    qres: dict[str, Any] = {"label": q.label, "files": files, "readers": {}}
                    for reader in READERS:
                        if reader == "spark basePath" and _date_folder(q) is None:
                            continue
                        res = measure(spark, server, reader, table, storage, q, 3 * files,
                                      runs)
                        qres["readers"][reader] = res
                        log(f"[s3a] {table.name}/{q.name:<6} {reader:<15} "
                            f"LIST {res['LIST']:>4} HEAD {res['HEAD']:>5} GET {res['GET']:>5} "
                            f"plan {res['plan_s']:6.2f} s total {res['total_s']:6.2f} s "
                            f"({res['engine']})")
                    result["queries"][q.name] = qres
                result["load_end"] = _load()
                result["heads_per_file"] = heads_per_file(result)
                log(f"[s3a] {table.name}: HEAD per file read " + ", ".join(
                    f"{r} {v:.2f}" for r, v in result["heads_per_file"].items()))
                log(f"[s3a] {table.name}: load average {result['load_start']} at the "
                    f"start, {result['load_end']} at the end")
                section["tables"][table.name] = result
                server.drop_bucket(table.bucket)
            if tp_rows:
                section["throughput"] = throughput_s3(spark, server, storage, tp_rows, runs,
                                                      data_dir, log)
    finally:
        spark.stop()
    return section


def heads_per_file(result: dict[str, Any]) -> dict[str, float]:
    """Per reader, the HEAD requests of its measured queries over the files they read: S3A
    heads every file Spark's readers open (1.00) unless the open is given its status, as
    the hand-off's is (ListedOpens.java: 0.00); Spark's own discovery heads folders too."""
    heads: dict[str, int] = {}
    files: dict[str, int] = {}
    for q in result["queries"].values():
        for reader, r in q["readers"].items():
            heads[reader] = heads.get(reader, 0) + r["HEAD"]
            files[reader] = files.get(reader, 0) + q["files"]
    return {r: heads[r] / files[r] for r in READERS if files.get(r)}


def _loads(part: dict[str, Any]) -> str:
    """``; load average a → b`` (1-minute averages at the part's start and end), if known."""
    if "load_start" not in part or "load_end" not in part:
        return ""
    return f"; load average {part['load_start'][0]:.1f} → {part['load_end'][0]:.1f}"


def markdown(section: dict[str, Any]) -> str:
    lines = []
    for name, t in section["tables"].items():
        lines += [f"**{name}** ({t['keys']:,} keys; requests LIST/HEAD/GET; seconds: plan, "
                  f"end-to-end count; median of {section['runs']}{_loads(t)})", "",
                  "| query | files | " + " | ".join(READERS) + " |",
                  "| --- | ---: | " + " | ".join("---" for _ in READERS) + " |"]
        for q in t["queries"].values():
            cells = []
            for reader in READERS:
                r = q["readers"].get(reader)
                cells.append("–" if r is None else
                             f"{r['LIST']}/{r['HEAD']}/{r['GET']}; {r['plan_s']:.2f} s, "
                             f"{r['total_s']:.2f} s" + (" (python)" if reader.endswith(
                                 "native") and r["engine"] != "native" else "")
                             + (" (1 run)" if r.get("runs") == 1 else ""))
            lines.append(f"| {q['label']} | {q['files']} | " + " | ".join(cells) + " |")
        if t.get("heads_per_file"):
            lines += ["", "HEAD requests per file read: " + ", ".join(
                f"{r} {v:.2f}" for r, v in t["heads_per_file"].items())]
        lines.append("")
    tp = section.get("throughput")
    if tp:
        lines += [f"**throughput on S3** ({tp['rows']:,} rows, {tp['files']} Parquet files, "
                  f"{tp['bytes'] / 2**20:.0f} MiB in moto; seconds, median of {tp['runs']}; "
                  "ours / Spark's S3A reader; requests LIST/HEAD/GET of the warm-up"
                  f"{_loads(tp)})", "",
                  "| query | " + " | ".join(TP_READERS) + " |",
                  "| --- | " + " | ".join("---" for _ in TP_READERS) + " |"]
        for q in tp["queries"].values():
            cells = []
            for reader in TP_READERS:
                r = q["readers"][reader]
                cells.append(f"{r['seconds']:.2f} s" + (
                    "" if reader == "spark s3a" else f" ({r['ratio']:.2f}x)")
                    + f"; {r['LIST']}/{r['HEAD']}/{r['GET']}"
                    + (" (python)" if reader.endswith("native") and r["engine"] != "native"
                       else ""))
            lines.append(f"| {q['label']} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from bench import charts, report

    ap = argparse.ArgumentParser(prog="python -m bench.s3a", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the daily table at 60 days, the "
                    "hourly at 30, throughput on 1 M rows")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--max-files", type=int, help="skip queries matching more files "
                    "(300; 3000 without --quick)")
    ap.add_argument("--daily-days", type=int, help="days of the daily table (730; quick 60)")
    ap.add_argument("--hourly-days", type=int, help="days of the hourly table (365: 105,120 "
                    "keys; quick 30)")
    ap.add_argument("--throughput-rows", type=int, help="rows of the throughput tree copied "
                    "to S3 (12 M; quick 1 M; 0: leave throughput out)")
    ap.add_argument("--out", type=Path, help="write <out>.json, <out>.md and PNG charts")
    args = ap.parse_args(argv)
    days = None
    if args.daily_days or args.hourly_days:
        daily, hourly = (60, 30) if args.quick else (730, 365)
        days = (args.daily_days or daily, args.hourly_days or hourly)
    command = shlex.join(["python", "-m", "bench.s3a",
                          *(argv if argv is not None else sys.argv[1:])])
    started = dt.datetime.now().astimezone().isoformat(timespec="seconds")
    load_start = _load()
    t0 = time.perf_counter()
    section = run(args.quick, args.runs, lambda m: print(m, flush=True), args.max_files,
                  days, args.throughput_rows)
    section.update({"command": command, "code": report.code_revision(ROOT),
                    "started": started, "seconds": time.perf_counter() - t0,
                    "load_start": load_start, "load_end": _load()})
    text = (f"Command: `{command}`, code {section['code']}, started {started}, took "
            f"{section['seconds'] / 60:.1f} min; load average (1, 5, 15 min) "
            f"{', '.join(map(str, load_start))} at the start, "
            f"{', '.join(map(str, section['load_end']))} at the end (2 cores).\n\n"
            + markdown(section))
    if args.out:  # the results first: a chart that fails loses no run
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(section, indent=1))
        args.out.with_suffix(".md").write_text(text)
        pngs = charts.s3a_charts(section, args.out)
        text += "\n" + "\n".join(f"![{p.stem}]({p.name})" for p in pngs) + "\n"
        args.out.with_suffix(".md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
