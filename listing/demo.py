"""``make demo`` / ``listing demo``: the whole story on a laptop, against real HTTP S3.

Starts a moto S3 server on loopback, writes a date-partitioned Parquet table over HTTP,
plans a pruned scan (printing explain() and its request counts), runs the same query
through Spark's ``listing`` source, and prints the rows, Spark's plan and the requests
the server saw, next to what a full listing would have cost. Run it through the command
(``listing demo``, ``python -m listing.cli demo``): the command depends on the demo, never
the reverse.
"""

from __future__ import annotations

import datetime as dt
import sys
import time

from listing.testing import datasets
from listing.testing.s3 import Capture, S3Server


def _counts(cap: Capture) -> str:
    c = cap.counts()
    return ", ".join(f"{k}={c.get(k, 0)}" for k in ("LIST", "GET", "HEAD"))


def run(days: int, where: str) -> None:
    import listing
    from listing import ListingTable

    if hasattr(sys.stdout, "reconfigure"):  # each line as it comes, under `| tee` too
        sys.stdout.reconfigure(line_buffering=True)
    with S3Server() as server:
        bucket = server.create_bucket("lake")
        root = f"s3://{bucket}/events"
        started = time.perf_counter()
        # written straight into the server's store (HTTP writes run ~200 objects/s here);
        # everything below reads through real HTTP
        ds = datasets.daily(root, server.storage_options, start=dt.date(2025, 1, 1), days=days,
                            files_per_partition=2, rows_per_file=20,
                            put=datasets.fast_writer(server))
        print(f"== wrote {len(ds.files)} Parquet files ({ds.num_rows} rows) under {root}/ in "
              f"{time.perf_counter() - started:.1f}s; S3 server on {server.endpoint_url}")

        with server.log.capture() as cap:
            table = ListingTable.open(root, storage_options=server.storage_options)
        print(f"\n== opened the table: {_counts(cap)}")
        print(f"   schema: {', '.join(f'{f.name}: {f.type}' for f in table.schema)}")

        with server.log.capture() as cap:
            plan = table.scan(where=where)
        print(f"\n== plan for WHERE {where}  (server saw: {_counts(cap)})")
        print(plan.explain())
        with server.log.capture() as cap:
            full = table.scan()
        print(f"\n   for comparison, a scan with no filter lists the whole table: "
              f"{_counts(cap)}")
        print("".join(f"     {step}\n" for step in full.listing_plan), end="")

        print("\n== the same query through Spark (spark.read.format('listing'))")
        print("   starting Spark (listing.session(): a local JVM, then the source "
              "registered) …", flush=True)
        started = time.perf_counter()
        # no Python worker reuse: a worker Spark closes mid-exchange at spark.stop() makes
        # pyspark's daemon print a BrokenPipeError traceback over Unix sockets
        # (docs/versions.md, Known issues); a fresh worker per task ends its exchanges
        spark = listing.session(app_name="listing-demo",
                                conf={"spark.python.worker.reuse": "false"})
        print(f"   Spark {spark.version} ready in {time.perf_counter() - started:.0f}s; "
              "load() opens the table in a Python worker …", flush=True)
        with server.log.capture() as cap:
            df = (spark.read.format("listing")
                  .option("format", "parquet")
                  .option("storage.endpoint_url", server.endpoint_url)
                  .option("storage.key", "testing")
                  .option("storage.secret", "testing")
                  .load(root + "/")
                  .where(where))
        print(f"   load() opened the table in a planning worker: {_counts(cap)}")
        with server.log.capture() as cap:
            rows = sorted(df.collect(), key=lambda r: (r.date, r.id))
        why = ("the pruned listing, then one GET per file: small files are read whole"
               + ("; Spark's own reader (S3A) also asks each file's status, one HEAD a file"
                  if cap.count("HEAD") else ""))
        print(f"   {len(rows)} rows; server saw: {_counts(cap)} ({why})")
        for row in rows[:10]:
            print(f"   {row.asDict()}")
        if len(rows) > 10:
            print(f"   … {len(rows) - 10} more")
        print("\n== Spark's plan")
        df.explain()
        print("== what that listing scan did (listing.explain(df))")
        with server.log.capture() as cap:
            texts = listing.explain(df)
        if texts and texts[0].startswith("engine: native"):
            cost = ("Spark's reader read it, fed by our listing: explain asked the driver's "
                    "planner what that scan lists, so it listed again")
        else:
            cost = "explain opened and planned the scan again in the driver: it listed again"
        print(f"   server saw: {_counts(cap)} ({cost})")
        spark.stop()

        print("\n== streaming: one trigger finds a new file without re-listing the table")
        discovery = table.discovery(starting="latest", reconcile_every=0)
        with server.log.capture() as cap:
            offset = discovery.initial_offset()
        print(f"   start at the latest file (starting=latest): {_counts(cap)}")
        day = ds.files[-1].partition_values["date"] + dt.timedelta(days=1)
        key = f"events/date={day.isoformat()}/region=us/part-0.parquet"
        server.put_objects_fast(bucket, {key: datasets.encode(ds.files[0].table, "parquet")})
        with server.log.capture() as cap:
            found = discovery.new_files(offset)
        for f in found.files:
            print(f"   new: {f.path}")
        print(f"   one trigger: {_counts(cap)} (spark.readStream.format('listing') triggers "
              "list the same way)")
