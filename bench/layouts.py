"""``python -m bench.layouts``: one hour of a Firehose-shaped lake read through Spark.

A lake as Kinesis Data Firehose delivers it (``fh/yyyy/MM/dd/HH/<stream>-1-yyyy-MM-dd-HH-
mm-ss-<uuid>.gz``, gzipped NDJSON, ``--objects`` objects, 100k; 10k with ``--quick``, 60
an hour) in a moto S3 server in this process, and the query "one hour" (``date = X AND
hour = 13``) read four ways in one Spark session (``listing.session()``, with the S3A
connector fetched by ``make s3a``):

- ``listing native``: ``spark.read.format("listing")`` with ``layout
  '{date:yyyy/MM/dd}/{hour:HH}'`` and the filter, handed off to Spark's JSON reader;
- ``listing python``: the same with ``engine=python``;
- ``spark by hand``: ``spark.read.json("s3a://…/fh/2026/11/27/13/")``, the user who
  spells the hour's folder themselves (no columns for date and hour);
- ``spark full + path``: ``spark.read.option("recursiveFileLookup", "true").json(root)``
  filtered on ``_metadata.file_path`` (Spark lists the whole lake, then prunes files by
  path before reading them).

Every reader is given the schema (:data:`SCHEMA`), as a careful user gives it.

Each figure: LIST / HEAD / GET requests from the server's log and seconds to the end of
``count()``, median of ``--runs`` after one warm-up; rows checked equal across readers.
moto is one Python process on the same cores as Spark: its per-request cost
(milliseconds, not S3's tens) favours readers that send many requests.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import json
import os
import shlex
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

READERS = ("listing native", "listing python", "spark by hand", "spark full + path")
LAYOUT = "{date:yyyy/MM/dd}/{hour:HH}"
PER_HOUR = 60  # Firehose's default buffer interval: one object a minute
ROWS_PER_OBJECT = 20
#: given to every reader, as a careful user gives it: Spark's JSON reader would otherwise
#: read every listed file to infer it (the whole lake, for a reader that lists it whole)
SCHEMA = "id long, at string"
ROOT = Path(__file__).resolve().parents[1]


def lake(objects: int, last: dt.datetime) -> dict[str, bytes]:
    """Keys (below ``fh/``) and payloads of ``objects`` Firehose objects, one a minute,
    the last in hour ``last`` (the hour the query reads: full, 60 objects when
    ``objects`` allows)."""
    keys: dict[str, bytes] = {}
    end = last + dt.timedelta(minutes=PER_HOUR - 1)
    for n in range(objects):
        when = end - dt.timedelta(minutes=n)
        rows = "".join(json.dumps({"id": n * ROWS_PER_OBJECT + i, "at": when.isoformat()})
                       + "\n" for i in range(ROWS_PER_OBJECT))
        name = f"stream-1-{when:%Y-%m-%d-%H-%M-%S}-{uuid.UUID(int=n)}.gz"
        keys[f"fh/{when:%Y/%m/%d/%H}/{name}"] = gzip.compress(rows.encode(), mtime=0)
    return keys


def _frame(spark: Any, reader: str, bucket: str, storage: dict[str, Any],
           hour: dt.datetime) -> Any:
    from pyspark.sql import functions as F

    root = f"s3://{bucket}/fh"
    s3a_root = "s3a" + root[2:]
    where = f"date = DATE '{hour:%Y-%m-%d}' AND hour = {hour.hour}"
    if reader.startswith("listing"):
        return (spark.read.format("listing").schema(SCHEMA).option("format", "json")
                .option("layout", LAYOUT).option("storage_options", json.dumps(storage))
                .option("engine", "auto" if reader.endswith("native") else "python")
                .load(root).where(where))
    if reader == "spark by hand":
        return spark.read.schema(SCHEMA).json(f"{s3a_root}/{hour:%Y/%m/%d/%H}/")
    return (spark.read.schema(SCHEMA).option("recursiveFileLookup", "true").json(s3a_root)
            .where(F.col("_metadata.file_path").contains(f"/{hour:%Y/%m/%d/%H}/")))


def measure(spark: Any, server: Any, reader: str, bucket: str, storage: dict[str, Any],
            hour: dt.datetime, runs: int) -> dict[str, Any]:
    """Median seconds of ``runs`` after a warm-up, the last run's requests and rows."""
    samples = []
    for _ in range(runs + 1):
        with server.log.capture(bucket) as cap:
            t0 = time.perf_counter()
            ids = sorted(r[0] for r in _frame(spark, reader, bucket, storage, hour)
                         .select("id").collect())
            seconds = time.perf_counter() - t0
        counts = cap.counts()
        samples.append({"seconds": seconds, "LIST": counts["LIST"], "HEAD": counts["HEAD"],
                        "GET": counts["GET"], "ids": ids})
    timed = samples[1:]
    return {"seconds": statistics.median(s["seconds"] for s in timed),
            **{k: timed[-1][k] for k in ("LIST", "HEAD", "GET", "ids")}, "runs": len(timed)}


def run(objects: int, runs: int, log: Callable[[str], None]) -> dict[str, Any]:
    import listing
    from bench.s3a import _s3a_conf
    from listing.spark.s3a import connector_jars
    from listing.testing.s3 import S3Server

    if not connector_jars():
        raise RuntimeError("Spark's S3A connector is not fetched: make s3a")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = listing.session("bench-layouts", conf={"spark.sql.shuffle.partitions": "2"})
    section: dict[str, Any] = {"objects": objects, "runs": runs, "readers": {}}
    try:
        with S3Server() as server:
            storage = server.storage_options
            bucket = server.create_bucket(f"bench-layouts-{uuid.uuid4().hex[:8]}")
            t0 = time.perf_counter()
            hour = dt.datetime(2026, 11, 27, 13)
            keys = lake(objects, hour)
            server.put_objects_fast(bucket, keys)
            log(f"[layouts] built {len(keys):,} objects ({time.perf_counter() - t0:.1f} s)")
            _s3a_conf(spark, storage, SimpleNamespace(bucket=bucket))
            want = None
            for reader in READERS:
                res = measure(spark, server, reader, bucket, storage, hour, runs)
                ids = res.pop("ids")
                if want is None:
                    want = ids
                if ids != want or not ids:
                    raise AssertionError(f"{reader}: {len(ids)} rows, expected {len(want)}")
                res["rows"] = len(ids)
                section["readers"][reader] = res
                log(f"[layouts] {reader:<17} LIST {res['LIST']:>4} HEAD {res['HEAD']:>5} "
                    f"GET {res['GET']:>5} {res['seconds']:7.2f} s ({res['rows']} rows)")
            server.drop_bucket(bucket)
    finally:
        spark.stop()
    return section


def markdown(section: dict[str, Any]) -> str:
    base = section["readers"]["spark by hand"]["seconds"]
    lines = [f"**one hour of a Firehose-shaped lake** ({section['objects']:,} objects, "
             f"{PER_HOUR} an hour; requests LIST/HEAD/GET; seconds to the end of the query, "
             f"median of {section['runs']}; ratio to Spark reading the hour's folder by "
             "hand)", "", "| reader | LIST | HEAD | GET | seconds | ratio |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for reader, r in section["readers"].items():
        lines.append(f"| {reader} | {r['LIST']} | {r['HEAD']} | {r['GET']} | "
                     f"{r['seconds']:.2f} | {r['seconds'] / base:.2f}x |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from bench import report

    ap = argparse.ArgumentParser(prog="python -m bench.layouts", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="10k objects")
    ap.add_argument("--objects", type=int, help="objects in the lake (100k; quick 10k)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", type=Path, help="write <out>.json and <out>.md")
    args = ap.parse_args(argv)
    objects = args.objects or (10_000 if args.quick else 100_000)
    command = shlex.join(["python", "-m", "bench.layouts",
                          *(argv if argv is not None else sys.argv[1:])])
    started = dt.datetime.now().astimezone().isoformat(timespec="seconds")
    load_start = [round(x, 2) for x in os.getloadavg()]
    t0 = time.perf_counter()
    section = run(objects, args.runs, lambda m: print(m, flush=True))
    section.update({"command": command, "code": report.code_revision(ROOT),
                    "started": started, "seconds": time.perf_counter() - t0,
                    "load_start": load_start,
                    "load_end": [round(x, 2) for x in os.getloadavg()]})
    text = (f"Command: `{command}`, code {section['code']}, started {started}, took "
            f"{section['seconds'] / 60:.1f} min; load average (1, 5, 15 min) "
            f"{', '.join(map(str, load_start))} at the start, "
            f"{', '.join(map(str, section['load_end']))} at the end (2 cores).\n\n"
            + markdown(section))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(section, indent=1))
        args.out.with_suffix(".md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
