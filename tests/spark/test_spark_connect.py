"""The listing source through Spark Connect: a local Connect server started from pip's
pyspark with the extension set server-side, used from a Connect client (in a subprocess,
since a Connect server cannot share this process's JVM)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from listing.testing import datasets

JOB = Path(__file__).resolve().parents[1] / "jobs" / "connect_job.py"


def test_listing_source_from_a_connect_client(s3_server, s3_bucket):
    ds = datasets.daily(f"s3://{s3_bucket}/events", s3_server.storage_options, days=4,
                        put=datasets.fast_writer(s3_server))
    day = "2025-01-02"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARK_CONNECT")}
    with s3_server.log.capture() as cap:
        run = subprocess.run([sys.executable, str(JOB), ds.root,
                              json.dumps(s3_server.storage_options), day],
                             capture_output=True, text=True, timeout=300, env=env)
    line = next((x for x in run.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert run.returncode == 0 and line, run.stdout[-2000:] + run.stderr[-4000:]
    out = json.loads(line[len("RESULT "):])
    assert out["session"].startswith("pyspark.sql.connect")
    want = [f for f in ds.files if str(f.partition_values["date"]) == day]
    assert out["pruning"] is True  # the server reports the extension: pushFilters is on
    assert out["day_count"] == sum(f.table.num_rows for f in want)
    assert out["all_count"] == ds.num_rows
    assert "BatchScan listing[amount#" in out["explain"]  # pruning ran on the server
    assert out["to_spark_ids"] == sorted(i for f in want for i in f.table.column("id")
                                         .to_pylist())
    assert out["sql_count"] == out["day_count"]
    # the filtered queries listed the day's prefix: pushdown reached the planner
    prefixes = {e.query.get("prefix", "") for e in cap.entries() if e.kind == "LIST"}
    assert any(p.endswith(f"date={day}/") for p in prefixes), prefixes
