"""Streaming discovery: what one trigger costs on the hourly table, ours against a full
listing and against Spark's own file stream source.

    python -m bench.streaming               # 365 days x 24 hours x 12 files = 105,120 keys
    python -m bench.streaming --quick       # 30 days: 8,640 keys
    python -m bench.streaming --runs 5

The hourly table (``bench.listing_bench.hourly_table``) is written to the moto S3 server
and, for Spark's file source (its JVM cannot reach S3 here), to local disk.

1. **Discovery** (``ListingTable.discovery``, no Spark) on S3: requests and seconds of a
   quiet trigger, of a trigger after 12 new keys (one hour) and after 1,200 new keys
   (100 hours), of a reconciliation trigger (a full listing, every ``reconcile_every``
   triggers), of a restart (a new reader's first trigger from the last offset, on the
   unchanged table: its reconciliation), beside one plain flat listing of the table
   (ListObjectsV2 pages, as any client sends them), and of a full listing of the table by
   ``scan()`` (what a source that re-lists on every trigger pays). Requests are the S3
   server's own count.
2. **Through Spark** (``writeStream`` to the ``noop`` sink, processing-time trigger):
   Spark's ``durationMs.latestOffset`` per trigger (the time spent finding new files),
   median over quiet triggers and over triggers after 12 new files, for
   ``spark.readStream.format("listing")`` on S3 (``starting=latest``,
   ``reconcile_every=0``: the steady state) and for ``spark.readStream.parquet`` on the
   local copy, which lists the whole directory tree on every trigger.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.listing_bench import _payload, build, hourly_table

SCHEMA = "id long, amount double, name string, date date, hour int"


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def write_local(root: Path, keys: list[str], payload: bytes) -> None:
    for key in keys:
        path = root / key
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.parent / ("." + path.name + ".tmp")  # hidden while written, then renamed
        tmp.write_bytes(payload)
        os.replace(tmp, path)


def new_keys(prefix: str, day: str, hours: range, files: int) -> list[str]:
    return [f"{prefix}date={day}/hour={h:02d}/part-{i}.parquet"
            for h in hours for i in range(files)]


# --- 1. discovery without Spark -------------------------------------------------------------

def discovery_section(server: Any, table_def: Any, runs: int, log: Callable[[str], None]
                      ) -> list[dict[str, Any]]:
    from listing import ListingTable

    root = f"s3://{table_def.bucket}/{table_def.prefix}"
    opts = server.storage_options
    table = ListingTable.open(root, storage_options=opts, partition_cols=table_def.partitions)
    disc = table.discovery(starting="latest", reconcile_every=0)
    rows: list[dict[str, Any]] = []

    def timed(name: str, fn: Callable[[], Any], n: int) -> Any:
        secs, reqs, out = [], [], None
        for _ in range(n):
            with server.log.capture(bucket=table_def.bucket) as cap:
                t0 = time.perf_counter()
                out = fn()
                secs.append(time.perf_counter() - t0)
            reqs.append(cap.count("LIST"))
        rows.append({"trigger": name, "list_requests": int(_median(reqs)),
                     "seconds": _median(secs)})
        log(f"[streaming] {name}: {rows[-1]['list_requests']} LIST, {rows[-1]['seconds']:.3f} s")
        return out

    offset = timed("start (starting=latest: one full listing)", disc.initial_offset, 1)
    timed("quiet trigger", lambda: disc.new_files(offset), runs)
    day = 0

    def after(n_hours: int) -> Callable[[], Any]:
        def go() -> Any:
            nonlocal offset, day
            day += 1
            keys = new_keys(table_def.prefix, f"2030-01-{day:02d}", range(n_hours), 12)
            server.put_objects_fast(table_def.bucket, dict.fromkeys(keys, _payload()))
            with server.log.capture(bucket=table_def.bucket) as cap:
                t0 = time.perf_counter()
                found = disc.new_files(offset)
                seconds = time.perf_counter() - t0
            assert len(found.files) == len(keys), (len(found.files), len(keys))
            offset = found.offset
            return seconds, cap.count("LIST")
        return go

    for label, hours in (("trigger after 12 new keys (1 hour)", 1),
                         ("trigger after 1,200 new keys (100 hours)", 100)):
        samples = [after(hours)() for _ in range(runs)]
        rows.append({"trigger": label, "list_requests": int(_median([s[1] for s in samples])),
                     "seconds": _median([s[0] for s in samples])})
        log(f"[streaming] {label}: {rows[-1]['list_requests']} LIST, "
            f"{rows[-1]['seconds']:.3f} s")
    full = table.discovery(reconcile_every=1)  # a new reader's first trigger reconciles
    timed("reconciliation trigger (full listing)", lambda: full.new_files(offset), 1)
    # a restarted query: a new table and reader (schema given: its open sends no request)
    again = ListingTable.open(root, storage_options=opts, partition_cols=table_def.partitions,
                              schema=table.file_schema).discovery()
    timed(RESTART, lambda: again.new_files(offset), 1)
    paginator = server.client().get_paginator("list_objects_v2")
    timed(FLAT, lambda: sum(len(p.get("Contents", [])) for p in paginator.paginate(
        Bucket=table_def.bucket, Prefix=table_def.prefix)), 1)
    timed("full listing by scan() (a source that re-lists)", lambda: table.scan(), 1)
    return rows


RESTART = "restart: a new reader's first trigger, unchanged table"
FLAT = "one flat listing (ListObjectsV2 pages, any client)"


# --- 2. through Spark ----------------------------------------------------------------------

def spark_triggers(spark: Any, df: Any, add: Callable[[], None], quiet: int, busy: int,
                   timeout: float = 900) -> dict[str, Any]:
    """Run ``df`` into the noop sink; latestOffset ms of quiet triggers and of triggers
    after ``add()``."""
    q = df.writeStream.format("noop").trigger(processingTime="100 milliseconds").start()
    deadline = time.monotonic() + timeout

    def progress() -> list[dict[str, Any]]:
        if q.exception() is not None:
            raise RuntimeError(str(q.exception()))
        if time.monotonic() > deadline:
            raise TimeoutError("streaming bench timed out")
        return q.recentProgress

    try:
        while not progress():  # the first trigger (reads whatever backlog there is)
            time.sleep(0.2)
        seen = progress()[-1]["batchId"], progress()[-1]["timestamp"]
        quiet_ms: list[float] = []
        while len(quiet_ms) < quiet:
            for p in progress():
                if (p["batchId"], p["timestamp"]) > seen:
                    seen = (p["batchId"], p["timestamp"])
                    if p["numInputRows"] == 0:
                        quiet_ms.append(p["durationMs"].get("latestOffset", 0))
            time.sleep(0.1)
        busy_ms: list[float] = []
        for _ in range(busy):
            add()
            got = False
            while not got:
                for p in progress():
                    if (p["batchId"], p["timestamp"]) > seen:
                        seen = (p["batchId"], p["timestamp"])
                        if p["numInputRows"] > 0:
                            busy_ms.append(p["durationMs"].get("latestOffset", 0))
                            got = True
                time.sleep(0.1)
    finally:
        q.stop()
    return {"quiet_ms": _median(quiet_ms), "after_new_ms": _median(busy_ms),
            "quiet_triggers": len(quiet_ms), "busy_triggers": len(busy_ms)}


def spark_section(server: Any, table_def: Any, local: Path, runs: int,
                  log: Callable[[str], None]) -> list[dict[str, Any]]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from listing.spark.session import session

    spark = session(app_name="bench-streaming", ui=False,
                    conf={"spark.sql.shuffle.partitions": "2",
                          "spark.sql.streaming.noDataProgressEventInterval": "0",
                          "spark.ui.enabled": "false"})
    client = server.client()
    payload = _payload()
    rows = []
    try:
        day = iter(range(1, 28))

        def add_s3() -> None:
            d = f"2031-01-{next(day):02d}"
            for key in new_keys(table_def.prefix, d, range(1), 12):
                client.put_object(Bucket=table_def.bucket, Key=key, Body=payload)

        ours = (spark.readStream.format("listing").schema(SCHEMA)
                .option("partition_cols", "date:date,hour:int")
                .option("storage.endpoint_url", server.endpoint_url)
                .option("storage.key", "testing").option("storage.secret", "testing")
                .option("starting", "latest").option("reconcile_every", "0")
                .load(f"s3://{table_def.bucket}/{table_def.prefix}"))
        log("[streaming] spark: listing source on S3 ...")
        res = spark_triggers(spark, ours, add_s3, quiet=max(5, runs), busy=runs)
        rows.append({"source": "spark.readStream.format('listing') on S3", **res})
        log(f"[streaming] {rows[-1]}")

        lday = iter(range(1, 28))

        def add_local() -> None:
            d = f"2031-01-{next(lday):02d}"
            write_local(local, new_keys(table_def.prefix, d, range(1), 12), payload)

        native = (spark.readStream.schema(SCHEMA)
                  .parquet(str(local / table_def.prefix)))
        log("[streaming] spark: Spark's file stream source on local files (reads the "
            "backlog first) ...")
        res = spark_triggers(spark, native, add_local, quiet=max(5, runs), busy=runs)
        rows.append({"source": "spark.readStream.parquet on local files", **res})
        log(f"[streaming] {rows[-1]}")
    finally:
        spark.stop()
    return rows


def render(keys: int, disc: list[dict[str, Any]], sparks: list[dict[str, Any]]) -> str:
    lines = [f"### Streaming discovery on the hourly table ({keys:,} keys)", "",
             "| trigger (ListingTable.discovery, moto S3) | LIST requests | seconds |",
             "|---|---:|---:|"]
    lines += [f"| {r['trigger']} | {r['list_requests']} | {r['seconds']:.3f} |" for r in disc]
    full = next((r for r in disc if r["trigger"].startswith("full listing")), None)
    quiet = next((r for r in disc if r["trigger"] == "quiet trigger"), None)
    if full and quiet and quiet["seconds"] > 0:
        lines += ["", f"A quiet trigger costs {quiet['list_requests']} LIST against "
                      f"{full['list_requests']} for re-listing the table: "
                      f"{full['seconds'] / quiet['seconds']:.0f}x less time."]
    restart = next((r for r in disc if r["trigger"] == RESTART), None)
    flat = next((r for r in disc if r["trigger"] == FLAT), None)
    if restart and flat:
        lines += ["", f"A restart costs {restart['list_requests']} LIST "
                      f"({restart['seconds']:.3f} s) against {flat['list_requests']} for one "
                      f"flat listing of the table ({flat['seconds']:.3f} s)."]
    if sparks:
        lines += ["", "| through Spark (latestOffset, median) | quiet trigger ms | "
                      "trigger after 12 new files ms |", "|---|---:|---:|"]
        lines += [f"| {r['source']} | {r['quiet_ms']:.0f} | {r['after_new_ms']:.0f} |"
                  for r in sparks]
        if len(sparks) == 2 and sparks[0]["quiet_ms"] > 0:
            ours, spark = sparks
            quiet = spark["quiet_ms"] / ours["quiet_ms"]
            busy = spark["after_new_ms"] / max(ours["after_new_ms"], 1)
            lines += ["", f"Spark's file source / ours, quiet trigger: {quiet:.1f}x; after new "
                          f"files: {busy:.1f}x (Spark on local disk, ours on the moto S3 "
                          "server)."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.streaming", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="30 days (8,640 keys)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-spark", action="store_true", help="only the discovery table")
    args = ap.parse_args(argv)
    from listing.testing.s3 import S3Server

    table_def = hourly_table(30 if args.quick else 365)
    log = lambda msg: print(msg, file=sys.stderr, flush=True)  # noqa: E731
    local = Path(tempfile.mkdtemp(prefix="bench-streaming-"))
    try:
        with S3Server() as server:
            log(f"[streaming] writing {len(table_def.files):,} keys to S3 and local disk")
            build(server, table_def)
            write_local(local, [k for k, _ in table_def.files], _payload())
            disc = discovery_section(server, table_def, args.runs, log)
            sparks = [] if args.no_spark else spark_section(server, table_def, local,
                                                            args.runs, log)
        print(render(len(table_def.files), disc, sparks))
    finally:
        shutil.rmtree(local, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
