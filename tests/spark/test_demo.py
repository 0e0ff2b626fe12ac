"""`make demo` runs `listing demo`: it must print rows, the plan, request counts and
Spark's plan (run in a subprocess: it starts its own S3 server and Spark session)."""

from __future__ import annotations

import os
import subprocess
import sys

from listing.spark.s3a import connector_jars


def test_demo_prints_rows_plan_and_request_counts():
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    proc = subprocess.run([sys.executable, "-m", "listing.cli", "demo", "--days", "450"],
                          capture_output=True, text=True, timeout=600, env=env)
    out = proc.stdout
    # no traceback at the end (pyspark's daemon printed BrokenPipeError ones at stop)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    # what the demo is doing while Spark starts and plans (it sat silent for a minute)
    assert "   starting Spark (listing.session()" in out and " ready in " in out, out[-3000:]
    assert "== plan for WHERE date BETWEEN '2026-03-01' AND '2026-03-03'" in out, out[-3000:]
    assert "(server saw: LIST=1, GET=0, HEAD=0)" in out  # planning the query: one LIST
    assert "list 'lake/events/date=2026-03-0' from date=2026-03-01 to date=2026-03-03" in out
    # 1,800 keys: 2 flat pages, and the delimiter page sent beside the second to look for
    # key ranges to list at once (none left to split after it)
    assert "a scan with no filter lists the whole table: LIST=3" in out
    assert "1 delimiter page sent to split the rest, unused" in out
    # 6 small files: one GET each, and no HEAD, on either engine (handed to Spark's S3A
    # reader, each file opens with its listed size and ETag)
    native = bool(connector_jars())
    saw = [line for line in out.splitlines() if "rows; server saw:" in line]
    assert len(saw) == 1, out[-3000:]
    assert "rows; server saw: LIST=1, GET=6, HEAD=0" in saw[0], saw[0]  # counts shown
    assert "'region': 'us'" in out and "'date': datetime.date(2026, 3, 1)" in out
    tail = out.split("listing.explain(df)", 1)[1]  # our plan of Spark's scan, after Spark's
    if native:  # handed to Spark's own Parquet reader over S3A, fed by our listing
        assert "== Physical Plan ==" in out and "FileScan parquet" in out
        assert "Location: ListingFileIndex" in out
        assert "engine: native (Spark's parquet reader)" in tail
        assert "filters given to Spark: (date >= DATE '2026-03-01')" in tail
        # explain plans the scan's listing again in the driver (files and requests shown)
        assert "list 'lake/events/date=2026-03-0' from" in tail and "files: 6," in tail
        assert "server saw: LIST=1, GET=0, HEAD=0 (Spark's reader read it" in tail
    else:
        assert "== Physical Plan ==" in out and "BatchScan listing" in out
        assert "partition filter (exact): date >= DATE '2026-03-01'" in tail
        assert "list 'lake/events/date=2026-03-0' from" in tail  # the pruned listing, again
        # re-open (a page, a footer), plan: the demo says it listed again
        assert "server saw: LIST=2, GET=1, HEAD=0 (explain opened and planned" in tail
    stream = out.split("== streaming:", 1)[1]
    assert "new: s3://lake/events/date=2026-03-27/region=us/part-0.parquet" in stream
    assert "one trigger: LIST=1, GET=0, HEAD=0" in stream  # not a listing of the table
