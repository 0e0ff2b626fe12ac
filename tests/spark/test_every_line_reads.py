"""What every supported Spark line does the same way: ``spark.read.format("listing")``,
``CREATE TABLE ... USING listing`` and ``listing.explain`` on local Parquet, read by Spark's
own Parquet reader over the files our planner lists (``ListingFileIndex``).

On Spark 4 the Python ``listing`` source's relation is handed to that reader by the
extension's ListingNativeEngine; on Spark 3.5, which has no Python data sources, ``listing``
is the extension jar's JVM source (ListingRelationProvider), which builds the same relation.
This module runs unchanged on both (``make test-spark SPARK=3.5.6
SPARK_TESTS=tests/spark/test_every_line_reads.py``). Spark's own ``spark.read.parquet`` of
the same files is the oracle for rows; our Python planner, asked directly, for the LIST
requests.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid

import pytest
from pyspark.sql import functions as F
from spark_plans import executed as _executed
from spark_plans import file_index as _file_index
from spark_plans import files_read as _files_read
from spark_plans import s3a_bucket_conf

import listing
from listing.spark.extension import check_supported
from listing.spark.s3a import connector_jars
from listing.testing import datasets

DAYS = 4
DAY = dt.date(2025, 1, 3)


@pytest.fixture(scope="module")
def events(tmp_path_factory):
    root = tmp_path_factory.mktemp("every-line") / "events"
    return datasets.daily(str(root), days=DAYS, rows_per_file=5)


def _local(url: str) -> str:
    """A ``file:`` URL as Spark spells it (``file:/x`` or ``file:///x``) as a local path."""
    return "/" + url.removeprefix("file:").lstrip("/")


def _paths_read(df) -> set[str]:
    return {_local(r.f) for r in df.select(F.col("_metadata.file_path").alias("f")).collect()}


def _rows(df) -> list[tuple]:
    return sorted(tuple(r) for r in df.collect())


def _oracle(spark, ds, where: str, columns: list[str]):
    """Spark's own Parquet reader over the same files (its partition discovery types
    ``date`` as a date, ``region`` as a string, as our planner does)."""
    return spark.read.parquet(ds.root).where(where).select(*columns)


def test_a_pruned_read_is_spark_s_rows_and_opens_only_the_partition_s_files(spark, events):
    where = f"date = '{DAY}' AND region = 'eu'"
    columns = ["id", "date", "region", "amount"]
    whole = spark.read.format("listing").option("format", "parquet").load(events.root)
    pruned = whole.where(where).select(*columns)
    rows = _rows(pruned)
    assert rows == _rows(_oracle(spark, events, where, columns)) and rows
    matching = [f for f in events.files if f.partition_values["date"] == DAY
                and f.partition_values["region"] == "eu"]
    assert len(rows) == sum(f.num_rows for f in matching)
    # Spark's reader was given the partition's files only, and read rows of those only
    assert _files_read(pruned) == len(matching) < len(events.files)
    assert _paths_read(pruned) == {f.path for f in matching}
    # the files came from our planner, pruned with Spark's partition filters, listing what
    # our planner lists for that filter asked directly
    index = _file_index(pruned)
    assert index.getClass().getName() == "io.github.listing.ListingFileIndex"
    used = json.loads(index.lastUsed())
    assert {"kind": "EqualTo", "attribute": "region", "value": "eu"} in used, used
    direct = listing.ListingTable.open(events.root).scan(where=where)
    assert index.lastListRequests() == direct.metrics["list_requests"] > 0
    # positive control: unfiltered, the same columns come from every partition's files
    control = whole.select(*columns)
    assert len(control.collect()) == events.num_rows  # runs it: the scan's metrics
    assert _files_read(control) == len(events.files)
    everything = listing.ListingTable.open(events.root).scan()
    assert index.lastListRequests() == everything.metrics["list_requests"]
    assert json.loads(index.lastUsed()) == []
    assert _paths_read(whole) == {f.path for f in events.files}


def test_the_schema_is_our_planner_s(spark, events):
    df = spark.read.format("listing").option("format", "parquet").load(events.root)
    table = listing.ListingTable.open(events.root)
    assert df.columns == [*table.schema.names]
    assert dict(df.dtypes)["date"] == "date" and dict(df.dtypes)["region"] == "string"
    assert list(_file_index(df).partitionSchema().fieldNames()) == ["date", "region"]


def test_create_table_using_listing_then_a_filtered_select(spark, events):
    spark.sql(f"CREATE TABLE every_line_events USING listing OPTIONS (path '{events.root}', "
              "format 'parquet')")
    try:
        where = f"region = 'us' AND date >= '{DAY}'"
        q = spark.sql(f"SELECT id, date, amount FROM every_line_events WHERE {where}")
        rows = _rows(q)
        assert rows == _rows(_oracle(spark, events, where, ["id", "date", "amount"])) and rows
        matching = [f for f in events.files if f.partition_values["region"] == "us"
                    and f.partition_values["date"] >= DAY]
        assert _files_read(q) == len(matching) < len(events.files)
        assert "Location: ListingFileIndex" in _executed(q).toString()
    finally:
        spark.sql("DROP TABLE every_line_events")


def test_explain_shows_the_listing_scan(spark, events):
    df = (spark.read.format("listing").option("format", "parquet").load(events.root)
          .where(f"date = '{DAY}'").select("id", "amount"))
    (text,) = listing.explain(df, show=False)
    lines = text.splitlines()
    assert lines[0] == "engine: native (Spark's parquet reader)", text
    assert lines[1] == f"  table: file:{events.root}", text
    assert any(line.startswith("  listed by: the listing planner (ListingFileIndex)")
               for line in lines), text
    files = sum(1 for f in events.files if f.partition_values["date"] == DAY)
    assert f"  files: {files}," in text, text
    assert "FileScan parquet" in _executed(df).toString()


def test_streams_and_writes_refuse_in_one_line_where_spark_has_no_python_sources(
        spark, events, tmp_path):
    """Spark 3.5's JVM ``listing`` source refuses a stream and a write in one line naming
    what to use; on Spark 4 (the control) the Python source takes both."""
    python_sources = check_supported(spark.version).python_sources
    out = str(tmp_path / "written")
    write = spark.range(3).write.format("listing").option("format", "parquet").mode("append")
    if python_sources:
        stream = spark.readStream.format("listing").option("format", "parquet").load(
            events.root)
        assert stream.isStreaming
        write.save(out)
        assert spark.read.parquet(out).count() == 3
        return
    with pytest.raises(Exception, match="lacks: use Spark 4.x for streams") as err:
        spark.readStream.format("listing").load(events.root)
    assert "readStream" in str(err.value).splitlines()[0]
    with pytest.raises(Exception, match=r"lacks: write with listing\.write_spark\("):
        write.save(out)
    with pytest.raises(Exception, match="option where: filter the DataFrame instead"):
        spark.read.format("listing").option("where", "region = 'us'").load(events.root)


@pytest.fixture
def s3_table(s3_server):
    bucket = s3_server.create_bucket(f"every-line-{uuid.uuid4().hex[:8]}")
    ds = datasets.daily(f"s3://{bucket}/events", s3_server.storage_options, days=DAYS,
                        rows_per_file=5, put=datasets.fast_writer(s3_server))
    yield bucket, ds
    s3_server.drop_bucket(bucket)


def test_a_pruned_read_on_s3_lists_one_prefix_and_touches_only_its_objects(
        spark, s3_server, s3_table):
    """Through Spark's S3A connector (fetched by ``make s3a`` for the running pyspark's
    Hadoop): one LIST, of the partition's prefix; no request for another partition's
    object and no HEAD; the rows Spark's own Parquet reader over S3A reads for the same
    filter."""
    assert connector_jars(), "Spark's S3A connector is not fetched: run `make s3a`"
    bucket, ds = s3_table
    where = f"date = '{DAY}'"
    df = (spark.read.format("listing").option("format", "parquet")
          .option("storage_options", json.dumps(ds.storage_options)).load(ds.root)
          .where(where).select("id", "date", "region", "amount"))
    matching = [f for f in ds.files if f.partition_values["date"] == DAY]
    keys = {f"events/{f.path.split('/events/')[1]}" for f in matching}
    with s3_server.log.capture(bucket) as cap:
        rows = _rows(df)
    assert len(rows) == sum(f.num_rows for f in matching) > 0
    (listed,) = [e for e in cap.entries() if e.kind == "LIST"]
    assert listed.query["prefix"] == f"events/date={DAY}/"
    touched = {e.key for e in cap.entries() if e.kind in ("HEAD", "GET")}
    assert touched and touched <= keys, cap.entries()
    # each file opened with its listed size and ETag (ListedOpens.java): no HEAD
    assert cap.count("HEAD") == 0, cap.entries()
    assert "Location: ListingFileIndex" in _executed(df).toString()
    hadoop = spark._jsc.hadoopConfiguration()
    for key, value in s3a_bucket_conf(bucket, s3_server).items():
        hadoop.set(key, value)
    oracle = spark.read.parquet(f"s3a://{bucket}/events").where(where).select(
        "id", "date", "region", "amount")
    with s3_server.log.capture(bucket) as theirs:
        assert rows == _rows(oracle)
    # positive control: Spark's own reader heads every file it reads
    assert {e.key for e in theirs.entries() if e.kind == "HEAD"} >= keys, theirs.entries()
