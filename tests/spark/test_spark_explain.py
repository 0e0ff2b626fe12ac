"""listing.explain(df): what each listing scan of a DataFrame lists and reads."""

from __future__ import annotations

import json
import uuid

import fsspec
import pytest
from pyspark.sql import functions as F

import listing
from listing.testing import datasets


@pytest.fixture(scope="module")
def events(s3_server):
    bucket = s3_server.create_bucket(f"explain-{uuid.uuid4().hex[:8]}")
    ds = datasets.daily(f"s3://{bucket}/events", s3_server.storage_options, days=5,
                        put=datasets.fast_writer(s3_server))
    yield ds
    s3_server.drop_bucket(bucket)


def _field(text: str, label: str) -> str:
    """The value of the one ``  label: value`` line of a ScanPlan explain text."""
    (value,) = [line.split(": ", 1)[1] for line in text.splitlines()
                if line.startswith(f"  {label}: ")]
    return value


def _listing_plan(text: str) -> list[str]:
    """The lines under ``listing plan:``, up to the ``files:`` line."""
    lines = text.splitlines()
    start = lines.index("  listing plan:") + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("  files: "))
    return [line.strip() for line in lines[start:end]]


def _metrics(text: str) -> dict[str, int]:
    return {k: int(v) for k, v in (kv.split("=") for kv in _field(text, "metrics").split(", "))}


def _listed(text: str) -> list[str]:
    """The files the group lines name (at most 3 a group)."""
    return [name.strip() for line in text.splitlines() if line.startswith("    group ")
            for name in line.split(" bytes: ", 1)[1].split(", ") if not name.startswith("…")]


def test_explain_shows_the_pruned_listing_of_every_scan(spark, s3_server, events):
    secret = {"key": f"explain-key-{uuid.uuid4().hex}",
              "secret": f"explain-secret-{uuid.uuid4().hex}"}  # moto takes any credentials
    options = {**events.storage_options, **secret}
    df = (spark.read.format("listing").option("engine", "python")  # the listing reader's
          .option("storage_options", json.dumps(options)).load(events.root))
    prefix = events.root.removeprefix("s3://") + "/"

    def want(keep) -> list[str]:
        return sorted(f.path.removeprefix(events.root + "/") for f in events.files
                      if keep(str(f.partition_values["date"]), f.partition_values["region"]))

    q = df.where("date = '2025-01-02' AND region = 'us'").select("id")
    (text,) = listing.explain(q, show=False)
    one = want(lambda d, r: d == "2025-01-02" and r == "us")
    assert _field(text, "partition filter (exact)") == (
        "date = DATE '2025-01-02' AND region = 'us'")
    assert _listing_plan(text) == [f"list '{prefix}date=2025-01-02/region=us/' "
                                   "(est. 1 requests)"]  # one partition's prefix, not the table
    assert _field(text, "files").startswith(f"{len(one)} in ") and sorted(_listed(text)) == one
    metrics = _metrics(text)
    assert (metrics["list_requests"], metrics["files_listed"], metrics["files_matched"]) == (
        1, len(one), len(one))
    assert _field(text, "projection").split(", ")[0] == "id"
    storage = _field(text, "storage")
    assert options["endpoint_url"] in storage  # the line carries the options' values...
    assert "'key': '***'" in storage and "'secret': '***'" in storage  # ...but no secret
    assert not any(value in text for value in secret.values())

    both = df.where("date = '2025-01-01'").select("id").union(
        df.where("region = 'eu'").select("id"))
    day, eu = listing.explain(both, show=False)
    first = want(lambda d, r: d == "2025-01-01")
    assert _field(day, "partition filter (exact)") == "date = DATE '2025-01-01'"
    assert _listing_plan(day) == [f"list '{prefix}date=2025-01-01/' (est. 1 requests)"]
    assert sorted(_listed(day)) == first and _metrics(day)["files_matched"] == len(first)
    second = want(lambda d, r: r == "eu")  # region is below date: one listing of the table
    assert _field(eu, "partition filter (exact)") == "region = 'eu'"
    assert _listing_plan(eu) == [f"list '{prefix}' (est. 1 requests)"]
    assert _metrics(eu)["files_listed"] == len(events.files)
    assert _metrics(eu)["files_matched"] == len(second)
    assert _field(eu, "files").startswith(f"{len(second)} in ")
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


@pytest.mark.parametrize("engine", ["python", "native"])
def test_both_engines_say_what_the_scan_listed_and_read(spark, s3_server, events, engine):
    """The same account on both engines: on native (S3A reads the files) the listing
    planner that feeds Spark's reader is asked, in the driver, what it lists for the
    query's filters: files, partitions, bytes, the listing plan and its requests."""
    df = (spark.read.format("listing").option("engine", engine)
          .option("storage_options", json.dumps(events.storage_options)).load(events.root))
    q = df.where("date = '2025-01-02'").select("id")
    (text,) = listing.explain(q, show=False)
    assert text.startswith(f"engine: {engine} ")
    day = [f for f in events.files if str(f.partition_values["date"]) == "2025-01-02"]
    fs = fsspec.filesystem("s3", **events.storage_options)
    prefix = events.root.removeprefix("s3://") + "/"
    assert _listing_plan(text) == [f"list '{prefix}date=2025-01-02/' (est. 1 requests)"]
    files = _field(text, "files")
    assert files.split(",")[0].split(" ")[0] == str(len(day))
    assert files.endswith(f", {sum(fs.size(f.path) for f in day):,} bytes")
    assert _field(text, "partitions") == "2"  # us and eu of that day
    assert _field(text, "partition filter (exact)") == "date = DATE '2025-01-02'"
    metrics = _metrics(text)
    assert (metrics["list_requests"], metrics["files_matched"]) == (1, len(day))
    if engine == "native":  # the files Spark reads are the ones explain names
        read = {r.p for r in df.where("date = '2025-01-02'")
                .select(F.col("_metadata.file_path").alias("p")).collect()}
        assert sorted(p.removeprefix("s3a://") for p in read) == sorted(
            f.path.removeprefix("s3://") for f in day)
