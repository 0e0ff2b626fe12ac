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
median of ``--runs`` after one warm-up per reader and query. Queries matching more than
``--max-files`` files (300; 3 000 without ``--quick``) are left out: every reader sends
a HEAD and a GET per file, which moto serves at a few hundred a second. moto is one Python
process on the same cores as Spark and this driver: its per-request cost (milliseconds, not
S3's tens) favours readers that send many requests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.listing_bench import Query, TableDef, build, daily_table, hourly_table, queries

READERS = ("listing native", "listing python", "spark s3a", "spark basePath")
ROOT = Path(__file__).resolve().parents[1]


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


def _engine(df: Any) -> str:
    plan = df._jdf.queryExecution().executedPlan().toString()  # noqa: SLF001
    return "python" if "BatchScan listing" in plan else "native"


def measure(spark: Any, server: Any, reader: str, table: TableDef, storage: dict[str, Any],
            q: Query, expected_rows: int, runs: int) -> dict[str, Any]:
    samples = []
    for _ in range(runs + 1):  # the first is a warm-up for this query
        with server.log.capture(table.bucket) as cap:
            t0 = time.perf_counter()
            df = _frame(spark, reader, table, storage, q)
            df._jdf.queryExecution().executedPlan()  # noqa: SLF001 - planning, no job yet
            t1 = time.perf_counter()
            rows = df.count()
            t2 = time.perf_counter()
        if rows != expected_rows:
            raise AssertionError(f"{reader} {q.name}: {rows} rows, expected {expected_rows}")
        counts = cap.counts()
        samples.append({"plan_s": t1 - t0, "total_s": t2 - t0,
                        "LIST": counts["LIST"], "HEAD": counts["HEAD"], "GET": counts["GET"],
                        "engine": _engine(df) if reader.startswith("listing") else "native"})
    timed = samples[1:]
    out: dict[str, Any] = {k: statistics.median(s[k] for s in timed)
                           for k in ("plan_s", "total_s")}
    out.update({k: timed[-1][k] for k in ("LIST", "HEAD", "GET", "engine")})
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


def run(quick: bool, runs: int, log: Callable[[str], None] = print,
        max_files: int | None = None) -> dict[str, Any]:
    import listing
    from listing.spark.s3a import connector_jars
    from listing.testing.s3 import S3Server

    if not connector_jars():
        raise RuntimeError("Spark's S3A connector is not fetched: make s3a")
    tables = [daily_table(60 if quick else 730), hourly_table(30 if quick else 365)]
    cap = max_files or (300 if quick else 3000)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = listing.session("bench-s3a", conf={"spark.sql.shuffle.partitions": "2"})
    section: dict[str, Any] = {"quick": quick, "runs": runs, "max_files": cap, "tables": {}}
    try:
        with S3Server() as server:
            storage = server.storage_options
            for table in tables:
                secs = build(server, table)
                log(f"[s3a] built {table.name}: {len(table.files):,} keys ({secs:.1f} s)")
                _s3a_conf(spark, storage, table)
                result: dict[str, Any] = {"keys": len(table.files), "queries": {}}
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
                section["tables"][table.name] = result
                server.drop_bucket(table.bucket)
    finally:
        spark.stop()
    return section


def markdown(section: dict[str, Any]) -> str:
    lines = []
    for name, t in section["tables"].items():
        lines += [f"**{name}** ({t['keys']:,} keys; requests LIST/HEAD/GET; seconds: plan, "
                  f"end-to-end count; median of {section['runs']})", "",
                  "| query | files | " + " | ".join(READERS) + " |",
                  "| --- | ---: | " + " | ".join("---" for _ in READERS) + " |"]
        for q in t["queries"].values():
            cells = []
            for reader in READERS:
                r = q["readers"].get(reader)
                cells.append("–" if r is None else
                             f"{r['LIST']}/{r['HEAD']}/{r['GET']}; {r['plan_s']:.2f} s, "
                             f"{r['total_s']:.2f} s" + (" (python)" if reader.endswith(
                                 "native") and r["engine"] != "native" else ""))
            lines.append(f"| {q['label']} | {q['files']} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.s3a", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the daily table at 60 days only")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--max-files", type=int, help="skip queries matching more files "
                    "(300; 3000 without --quick)")
    ap.add_argument("--out", type=Path, help="write <out>.json and <out>.md")
    args = ap.parse_args(argv)
    section = run(args.quick, args.runs, lambda m: print(m, flush=True), args.max_files)
    text = markdown(section)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(section, indent=1))
        args.out.with_suffix(".md").write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
