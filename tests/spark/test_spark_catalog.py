"""CREATE TABLE ... USING listing: read in the creating session, in a new session sharing a
persistent (Derby-backed Hive) metastore, and DROP TABLE leaves the data alone. Each step runs
in its own process: a metastore belongs to one JVM at a time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from listing.testing import datasets

JOB = Path(__file__).resolve().parents[1] / "jobs" / "catalog_job.py"


def step(name: str, warehouse: Path, root: str, storage: dict, day: str) -> dict:
    run = subprocess.run([sys.executable, str(JOB), name, str(warehouse), root,
                          json.dumps(storage), day], capture_output=True, text=True,
                         timeout=300, cwd=warehouse, env=dict(os.environ))
    line = next((x for x in run.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert run.returncode == 0 and line, run.stdout[-2000:] + run.stderr[-4000:]
    return json.loads(line[len("RESULT "):])


def test_catalog_table_across_sessions(s3_server, s3_bucket, tmp_path):
    ds = datasets.daily(f"s3://{s3_bucket}/events", s3_server.storage_options, days=3,
                        put=datasets.fast_writer(s3_server))
    day = "2025-01-02"
    want_day = sum(f.table.num_rows for f in ds.files
                   if str(f.partition_values["date"]) == day)
    created = step("create", tmp_path, ds.root, s3_server.storage_options, day)
    assert created["catalog"] == "hive"
    assert created["count"] == ds.num_rows and created["day"] == want_day
    again = step("reopen", tmp_path, ds.root, s3_server.storage_options, day)  # new JVM
    assert again["count"] == ds.num_rows and again["day"] == want_day
    assert again["columns"][-2:] == ["date", "region"]
    assert "events" not in again["tables"]  # dropped at the end of that session
    fs_keys = s3_server.client().list_objects_v2(Bucket=s3_bucket)["KeyCount"]
    assert fs_keys >= len(ds.files)  # DROP TABLE deleted nothing


def test_catalog_table_on_local_files_in_this_session(spark, tmp_path):
    """The path forms Spark's catalog writes (file:/x) are accepted."""
    for d in ("2026-03-01", "2026-03-02"):
        os.makedirs(tmp_path / f"date={d}")
        pq.write_table(pa.table({"id": [1, 2, 3]}), tmp_path / f"date={d}" / "p.parquet")
    spark.sql(f"CREATE TABLE local_events USING listing OPTIONS (path '{tmp_path}', "
              "engine 'python')")
    try:
        assert spark.sql("SELECT count(*) AS n FROM local_events").collect()[0].n == 6
        assert spark.sql("SELECT count(*) AS n FROM local_events "
                         "WHERE date = '2026-03-02'").collect()[0].n == 3
    finally:
        spark.sql("DROP TABLE local_events")
    assert sorted(os.listdir(tmp_path)) == ["date=2026-03-01", "date=2026-03-02"]
