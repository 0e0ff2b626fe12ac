"""listing.explain(df): what each listing scan of a DataFrame lists and reads."""

from __future__ import annotations

import json
import uuid

import fsspec
import pytest

import listing
from listing.testing import datasets


@pytest.fixture(scope="module")
def events(s3_server):
    bucket = s3_server.create_bucket(f"explain-{uuid.uuid4().hex[:8]}")
    ds = datasets.daily(f"s3://{bucket}/events", s3_server.storage_options, days=5,
                        put=datasets.fast_writer(s3_server))
    yield ds
    s3_server.drop_bucket(bucket)


def test_explain_shows_the_pruned_listing_of_every_scan(spark, s3_server, events):
    df = (spark.read.format("listing").option("engine", "python")  # the listing reader's
          .option("storage_options", json.dumps(events.storage_options)).load(events.root))
    q = df.where("date = '2025-01-02' AND region = 'us'").select("id")
    (text,) = listing.explain(q, show=False)
    want = [f for f in events.files if str(f.partition_values["date"]) == "2025-01-02"
            and f.partition_values["region"] == "us"]
    assert "partition filter (exact): date = DATE '2025-01-02' AND region = 'us'" in text
    assert f"files: {len(want)} in" in text and "list_requests=1," in text
    assert "projection: id" in text
    assert "key" not in text.split("storage:")[1].split("\n")[0] or "***" in text
    both = df.where("date = '2025-01-01'").select("id").union(
        df.where("region = 'eu'").select("id"))
    texts = listing.explain(both, show=False)
    assert len(texts) == 2
    assert "date = DATE '2025-01-01'" in texts[0] and "region = 'eu'" in texts[1]
    assert listing.explain(spark.range(3), show=False) == []


def test_sparks_own_plan_names_the_partition_filters(spark, s3_server, events):
    """The scan's one-line description carries the table and the filters applied exactly
    while listing (DescribedPythonTable, installed by the session extension)."""
    df = (spark.read.format("listing").option("engine", "python")  # the listing reader's
          .option("storage_options", json.dumps(events.storage_options)).load(events.root))
    q = df.where("date = '2025-01-02' AND amount > 1").select("id")
    plan = q._jdf.queryExecution().executedPlan().toString()
    scan = next(line for line in plan.splitlines() if "BatchScan listing" in line)
    assert events.root in scan and "PartitionFilters: [" in scan
    assert "EqualTo(date,2025-01-02)" in scan and "amount" not in scan.split("Filters:")[1]
    assert q.count() == sum(1 for f in events.files
                            if str(f.partition_values["date"]) == "2025-01-02"
                            for v in f.table.column("amount").to_pylist() if v > 1)


def test_sparks_own_plan_says_how_many_files_the_listing_chose(spark, s3_server, events,
                                                               capsys):
    """Once the scan has run, its description (df.explain() shows the final plan then)
    carries the file count, LIST requests and listing plan."""
    df = (spark.read.format("listing").option("engine", "python")  # the listing reader's
          .option("storage_options", json.dumps(events.storage_options)).load(events.root))
    q = df.where("date = '2025-01-02'").groupBy("region").count()
    q.collect()
    q.explain()
    scan = next(line for line in capsys.readouterr().out.splitlines()
                if "BatchScan listing" in line)
    want = sum(1 for f in events.files if str(f.partition_values["date"]) == "2025-01-02")
    assert f"Files: {want} in " in scan and "LIST requests: 1, listing: list" in scan
    assert "date=2025-01-02" in scan.split("listing: ")[1]
    everything = df.groupBy("region").count()
    everything.collect()
    plan = everything._jdf.queryExecution().executedPlan().toString()
    assert f"Files: {len(events.files)} in " in plan


def test_a_small_listing_table_is_broadcast_in_a_join(spark, s3_server, events):
    """The scan reports its size (the listed files' bytes, scaled by the share of the row it
    reads) to Spark's optimizer, which then broadcasts it; asking for the size lists once,
    and the query's execution reuses that listing."""
    df = (spark.read.format("listing").option("engine", "python")  # the listing reader's
          .option("storage_options", json.dumps(events.storage_options)).load(events.root))
    small = df.where("date = '2025-01-03'").select("id", "region")
    big = spark.range(0, 20_000_000).withColumnRenamed("id", "key")
    joined = big.join(small, big.key == small.id)
    plan = joined._jdf.queryExecution().executedPlan().toString()
    assert "BroadcastHashJoin" in plan and "BatchScan listing" in plan
    with s3_server.log.capture() as cap:
        got = joined.count()  # a query of its own: planned, sized and run
    want = [f for f in events.files if str(f.partition_values["date"]) == "2025-01-03"]
    # planned for its size before execution: the description already names the files
    assert f"Files: {len(want)} in " in plan
    assert got == sum(f.table.num_rows for f in want)
    assert cap.count("LIST") == 1  # sized and read from one listing

    stats = small._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()
    fs = fsspec.filesystem("s3", **events.storage_options)
    listed = sum(fs.size(f.path) for f in want)
    assert 0 < int(str(stats)) <= listed  # 2 of the 5 columns: a share of the bytes

    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "10")
    try:  # bigger than the threshold: Spark plans the join as it would for any big table
        plan = big.join(small, big.key == small.id)._jdf.queryExecution().executedPlan()
        assert "BroadcastHashJoin" not in plan.toString()
    finally:
        spark.conf.unset("spark.sql.autoBroadcastJoinThreshold")
