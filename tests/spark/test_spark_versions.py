"""What every supported Spark line (4.0 to 4.3) gives, on the running one.

``make test` runs it on the default pyspark; ``make test-spark SPARK=4.1.4`` on another. A
session starts with the extension of this line; a pruned read through
``spark.read.format("listing")`` is exact and reads only its partition's files on both
engines (S3 on moto; the native engine through Spark's S3A connector); a stream delivers
each file once; a partitioned write round-trips; types are the same on every line.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pyspark
import pytest

import listing
from listing.spark import compat
from listing.spark.extension import GUARD_RULE_CLASS, extension_jar, is_guard_active
from listing.spark.lines import line_of
from listing.spark.types import arrow_schema, spark_struct
from listing.testing import datasets

DAY = dt.date(2025, 1, 3)


@pytest.fixture(scope="module")
def events(s3_server):
    bucket = s3_server.create_bucket(f"versions-{uuid.uuid4().hex[:8]}")
    ds = datasets.daily(f"s3://{bucket}/events", s3_server.storage_options, days=4,
                        put=datasets.fast_writer(s3_server))
    yield ds, bucket
    s3_server.drop_bucket(bucket)


def load(spark, ds, engine: str):
    return (spark.read.format("listing").option("engine", engine)
            .option("storage_options", json.dumps(ds.storage_options)).load(ds.root))


def test_the_session_runs_this_line_s_extension(spark):
    line = line_of(spark.version)
    assert line.minor == ".".join(pyspark.__version__.split(".")[:2])
    assert is_guard_active(spark)
    assert extension_jar().is_file()


@pytest.mark.parametrize("engine", ["python", "native"])
def test_a_pruned_read_is_exact_and_reads_only_its_partition(spark, s3_server, events, engine):
    ds, bucket = events
    df = load(spark, ds, engine).where(f"date = '{DAY}' AND region = 'eu'")
    with s3_server.log.capture(bucket=bucket) as cap:
        got = sorted(tuple(r) for r in df.select("id", "amount").collect())
    want = sorted((r["id"], r["amount"]) for f in ds.files
                  if f.partition_values == {"date": DAY, "region": "eu"}
                  for r in f.table.to_pylist())
    assert got == want and got
    read = {e.key for e in cap.entries() if e.key}  # every request on an object
    assert read and all(f"date={DAY}/region=eu/" in k for k in read), read
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert ("FileScan parquet" in plan) == (engine == "native"), plan
    # positive control: the whole table reads every partition's files (the pruned read's
    # file may come from the bytes S3A's input stream kept of it, at its listed ETag)
    with s3_server.log.capture(bucket=bucket) as cap:
        assert len(load(spark, ds, engine).select("id", "amount").collect()) == ds.num_rows
    whole = {e.key for e in cap.entries() if e.key}
    assert whole | read == {f.path.split("/", 3)[3] for f in ds.files}, cap.entries()


@pytest.mark.parametrize("excluded", ["", GUARD_RULE_CLASS])
def test_explain_describes_the_scan_spark_runs(spark, s3_server, events, excluded):
    """The files ``listing.explain`` plans are the files the real scan reads, with the
    extension's rules on or switched off (then, where Spark hands Python sources no
    filters, nothing prunes and explain claims nothing)."""
    ds, bucket = events
    spark.conf.set("spark.sql.optimizer.excludedRules", excluded)
    try:
        df = load(spark, ds, "python").where(f"date = '{DAY}' AND region = 'eu'")
        text = "\n".join(listing.explain(df, show=False))
        with s3_server.log.capture(bucket=bucket) as cap:
            df.collect()
    finally:
        spark.conf.unset("spark.sql.optimizer.excludedRules")
    read = {e.key for e in cap.entries() if e.kind == "GET"}
    planned = int(text.split("  files: ", 1)[1].split(" ", 1)[0])
    assert planned == len(read), text
    pruned = compat.HAS_FILTER_PUSHDOWN or not excluded
    assert planned == (1 if pruned else len(ds.files)), text
    assert ("no pushdown" in text) == (not pruned), text


def test_scans_of_one_dataframe_never_share_their_filters(spark, events):
    """The stale-pushdown family on every line (on 4.0 the filters reach the source as an
    option of the relation, on 4.1+ through pushFilters)."""
    ds, _ = events
    df = load(spark, ds, "python")

    def rows(keep) -> int:
        return sum(f.num_rows for f in ds.files if keep(f.partition_values))

    assert df.where(f"date = '{DAY}'").count() == rows(lambda v: v["date"] == DAY)
    assert df.count() == ds.num_rows  # the unfiltered query after a filtered one
    both = df.where("region = 'eu'").union(df.where("region = 'us'"))
    assert both.count() == ds.num_rows
    name = f"versions_{uuid.uuid4().hex[:8]}"
    df.createOrReplaceTempView(name)
    assert spark.sql(f"SELECT * FROM {name} WHERE region = 'eu'").count() == rows(
        lambda v: v["region"] == "eu")
    assert spark.sql(f"SELECT * FROM {name}").count() == ds.num_rows


def test_a_stream_delivers_each_file_once(spark, tmp_path):
    root = tmp_path / "stream"

    def put(n: int) -> None:
        folder = root / f"k={n % 2}"
        folder.mkdir(parents=True, exist_ok=True)
        # written under a hidden name and renamed into place, as a file stream needs: the
        # running query may list while a file is being written
        pq.write_table(pa.table({"id": [10 * n, 10 * n + 1]}), folder / f".part-{n}.tmp")
        os.replace(folder / f".part-{n}.tmp", folder / f"part-{n}.parquet")

    for n in range(3):
        put(n)
    df = (spark.readStream.format("listing").schema("id long, k int")
          .option("partition_cols", "k:int").option("max_files_per_trigger", "1")
          .load(str(root)))
    name = f"versions_{uuid.uuid4().hex[:8]}"
    q = (df.writeStream.format("memory").queryName(name)
         .option("checkpointLocation", str(tmp_path / "cp")).start())
    try:
        q.processAllAvailable()
        batches = [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]
        assert batches == [2, 2, 2]  # one file a trigger, on every line
        put(3)
        q.processAllAvailable()
    finally:
        q.stop()
    ids = sorted(r.id for r in spark.table(name).collect())
    assert ids == sorted(i for n in range(4) for i in (10 * n, 10 * n + 1))


def test_available_now_reads_what_is_there_once(spark, tmp_path):
    root = tmp_path / "once"
    for n in range(3):
        (root / f"k={n}").mkdir(parents=True)
        pq.write_table(pa.table({"id": [n]}), root / f"k={n}" / "part.parquet")
    df = (spark.readStream.format("listing").schema("id long, k int")
          .option("partition_cols", "k:int").load(str(root)))
    out = tmp_path / "out"
    for _ in range(2):  # the second run has nothing new
        q = (df.writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(tmp_path / "cp"))
             .trigger(availableNow=True).start())
        assert q.awaitTermination(180)
    assert sorted(r.id for r in spark.read.parquet(str(out)).collect()) == [0, 1, 2]


def test_a_partitioned_write_round_trips(spark, tmp_path):
    rows = [(1, "a", DAY), (2, "b", DAY), (3, "a", DAY + dt.timedelta(days=1))]
    df = spark.createDataFrame(rows, "id long, k string, d date")
    root = str(tmp_path / "out")
    df.write.format("listing").option("partition_by", "k,d").mode("append").save(root)
    back = spark.read.format("listing").load(root)
    assert sorted(tuple(r) for r in back.select("id", "k", "d").collect()) == sorted(rows)
    assert dict(back.dtypes)["d"] == "date"


def test_schemas_convert_the_same_on_every_line():
    arrow = pa.schema([("utc", pa.timestamp("us", "UTC")), ("naive", pa.timestamp("us")),
                       ("d", pa.date32()), ("s", pa.string())])
    struct = spark_struct(arrow)
    assert [f.dataType.simpleString() for f in struct.fields] == [
        "timestamp", "timestamp_ntz", "date", "string"]
    assert arrow_schema(struct) == arrow


def test_filters_have_the_same_shape_with_or_without_pushdown():
    """The filter classes the source converts (pyspark's from 4.1, the compat module's
    before) take the same fields."""
    from listing.expressions import Compare
    from listing.spark.filters import from_spark

    assert from_spark(compat.filters.EqualTo(("k",), 1)) == Compare("k", "=", 1)
    assert from_spark(compat.filters.Not(compat.filters.IsNull(("k",)))) is not None
