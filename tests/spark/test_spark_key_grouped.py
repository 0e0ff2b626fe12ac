"""Key-grouped scans (the ``key_grouped`` option, KeyGroupedScans.java): a listing scan whose
tasks each read one partition value tells Spark so, and Spark plans no shuffle for a GROUP BY
or a join on the partition columns.

Real Spark, real Parquet files. Every result is checked against Spark's own Parquet reader
on the same files, and every absent ``Exchange`` beside the same query without the option,
which shuffles.
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from listing.file_columns import FileColumns
from listing.files import FileGroup, PartitionedFile
from listing.options import ListingOptions
from listing.packing import KEY_GROUP_MAX_SPLITS, pack_by_partition_key
from listing.spark.input_partition import key_marker

MB = 1024 * 1024
DATES = [dt.date(2024, 1, d) for d in range(1, 5)]
#: Spark's settings for joins whose sides are keyed on different partition columns
#: (README, "Key-grouped scans")
JOIN_CONFS = {"spark.sql.autoBroadcastJoinThreshold": "-1",
              "spark.sql.sources.v2.bucketing.allowKeysSubsetOfPartitionKeys.enabled": "true",
              "spark.sql.requireAllClusterKeysForCoPartition": "false"}


def write_table(root, dates, regions, seed):
    for d in dates:
        for region in regions:
            part = root / f"date={d.isoformat()}" / f"region={region}"
            part.mkdir(parents=True)
            n = 20 + (d.day * 7 + seed) % 13
            pq.write_table(pa.table({
                "id": pa.array([seed * 10_000 + d.day * 100 + i for i in range(n)], pa.int64()),
                "amount": pa.array([float((i * d.day + seed) % 17) for i in range(n)]),
            }), part / "part-0.parquet")
    return str(root)


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    base = tmp_path_factory.mktemp("key_grouped")
    # a null region (Hive's default partition) is a key value like any other
    events = write_table(base / "events", DATES, ["eu", "__HIVE_DEFAULT_PARTITION__"], 1)
    # fewer dates on one side: Spark pads the missing keys (pushPartValues)
    targets = write_table(base / "targets", DATES[1:], ["eu"], 2)
    one_day = write_table(base / "one_day", DATES[:1], ["eu", "us"], 3)
    return {"events": events, "targets": targets, "one_day": one_day}


@pytest.fixture
def confs(spark):
    """Sets Spark confs for one test, then restores them."""
    saved: dict[str, str | None] = {}

    def set_(values):
        for key, value in values.items():
            saved.setdefault(key, spark.conf.get(key, None))
            spark.conf.set(key, value)

    yield set_
    for key, value in saved.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)


def listing(spark, root, key_grouped=True, engine="python"):
    """A read of ``root``; these tables' values are far smaller than open_cost_in_bytes,
    under which key grouping is declined (it would not pay), so the option is 0 here."""
    return (spark.read.format("listing").option("engine", engine)
            .option("open_cost_in_bytes", "0")
            .option("key_grouped", str(key_grouped).lower()).load(root))


def executed(df):
    """The rows, sorted, and the executed plan (AQE's final plan: read after the action)."""
    rows = sorted(df.collect(), key=repr)
    return rows, df._jdf.queryExecution().executedPlan().toString()


def spark_rows(df):
    return sorted(df.collect(), key=repr)


@pytest.mark.parametrize("keys", [["date"], ["date", "region"]])
def test_group_by_partition_columns_plans_no_exchange(spark, tables, keys):
    def query(df):
        return df.groupBy(*keys).agg(F.sum("amount").alias("total"), F.count("*").alias("n"),
                                     F.max("id").alias("top"))

    rows, plan = executed(query(listing(spark, tables["events"])))
    assert "Exchange" not in plan, plan
    assert "packing: by partition value (8 values)" in plan, plan
    assert rows == spark_rows(query(spark.read.parquet(tables["events"])))
    assert len(rows) == (4 if keys == ["date"] else 8)
    # positive control: the same query without the option shuffles on the keys
    _, shuffled = executed(query(listing(spark, tables["events"], key_grouped=False)))
    assert "Exchange hashpartitioning(date" in shuffled, shuffled


def test_group_by_under_filter_and_projection_stays_exact(spark, tables):
    def query(df):
        return (df.where((F.col("date") >= "2024-01-03") & (F.col("amount") > 4))
                .select("date", "amount").groupBy("date").agg(F.sum("amount").alias("t")))

    rows, plan = executed(query(listing(spark, tables["events"])))
    assert "Exchange" not in plan, plan
    assert rows == spark_rows(query(spark.read.parquet(tables["events"])))
    assert len(rows) == 2


def test_join_on_date_plans_no_exchange_on_either_side(spark, tables, confs):
    confs(JOIN_CONFS)

    def query(events, targets):
        return (events.select("date", "id", "amount")
                .join(targets.select("date", F.col("id").alias("tid")), "date"))

    rows, plan = executed(query(listing(spark, tables["events"]),
                                listing(spark, tables["targets"])))
    assert "SortMergeJoin" in plan, plan
    assert "Exchange" not in plan, plan
    assert rows == spark_rows(query(spark.read.parquet(tables["events"]),
                                    spark.read.parquet(tables["targets"])))
    assert rows
    # positive control: without the option both sides shuffle
    _, shuffled = executed(query(listing(spark, tables["events"], key_grouped=False),
                                 listing(spark, tables["targets"], key_grouped=False)))
    final = shuffled.split("== Initial Plan ==")[0]
    assert final.count("Exchange hashpartitioning(date") == 2, shuffled


def test_join_of_aggregates_keyed_on_different_columns(spark, tables, confs):
    """One side keyed on (date), the other on (date, region): Spark groups the latter by
    date with the settings in JOIN_CONFS."""
    confs(JOIN_CONFS)

    def query(events, targets):
        left = events.groupBy("date").agg(F.sum("amount").alias("total"))
        right = targets.groupBy("date", "region").agg(F.count("*").alias("n"))
        return left.join(right, "date")

    rows, plan = executed(query(listing(spark, tables["events"]),
                                listing(spark, tables["targets"])))
    assert "Exchange" not in plan, plan
    assert rows == spark_rows(query(spark.read.parquet(tables["events"]),
                                    spark.read.parquet(tables["targets"])))
    assert len(rows) == 3


def test_stale_pushdown_scenarios_stay_exact(spark, tables):
    """One DataFrame queried filtered, then unfiltered, then self-joined on date: each query
    reads its own files (the guard), keyed or not."""
    df = listing(spark, tables["events"])
    ref = spark.read.parquet(tables["events"])
    day = F.col("date") == "2024-01-02"
    assert executed(df.where(day).groupBy("date").count())[0] == spark_rows(
        ref.where(day).groupBy("date").count())
    assert executed(df.groupBy("date").count())[0] == spark_rows(ref.groupBy("date").count())
    both = df.where(day).select("date", "id").join(df.select("date", "amount"), "date")
    assert executed(both.groupBy("date").count())[0] == spark_rows(
        ref.where(day).select("date", "id").join(ref.select("date", "amount"), "date")
        .groupBy("date").count())


def test_declined_when_fewer_values_than_tasks(spark, tables):
    """A scan of one partition value on a session of parallelism 2 keeps packing by size,
    says why in the plan, and shuffles (correctly)."""
    df = listing(spark, tables["one_day"]).where(F.col("region") == "eu")
    rows, plan = executed(df.groupBy("date").count())
    assert "packing: by size (key_grouped: 1 partition values for 2 tasks)" in plan, plan
    assert "Exchange hashpartitioning(date" in plan, plan
    assert rows == spark_rows(spark.read.parquet(tables["one_day"]).where(F.col("region") == "eu")
                              .groupBy("date").count())


def test_engine_auto_keeps_key_grouped_scans_on_the_python_engine(spark, tables):
    """Spark's file source reports a partitioning for bucketed tables only: the hand-off
    (ListingNativeEngine.java) leaves a key_grouped scan on the Python engine."""
    rows, plan = executed(listing(spark, tables["events"], engine="auto")
                          .groupBy("date").count())
    assert "BatchScan listing" in plan and "Exchange" not in plan, plan
    # positive control: the same read without the option is handed to Spark's file source
    _, native = executed(listing(spark, tables["events"], key_grouped=False, engine="auto")
                         .groupBy("date").count())
    assert "FileScan" in native, native
    assert rows == spark_rows(spark.read.parquet(tables["events"]).groupBy("date").count())


# --- packing (pure logic) -------------------------------------------------------------------

class WholeFiles:
    def split(self, file, target_bytes):
        return [file]


def files(values, size=8 * MB):
    """Files as a plan holds them (as columns), each with its own values."""
    return FileColumns.of_files([PartitionedFile(f"s3://b/t/date={d}/f{i}.parquet", size,
                                                 {"date": d}) for i, d in enumerate(values)])


def test_pack_by_partition_key_groups_hold_one_value():
    fs = files(["a", "b", "a", "c", "b", "a"])
    packed = pack_by_partition_key(fs, WholeFiles(), ListingOptions(key_grouped=True), 2)
    assert packed.key_grouped and packed.reason == "by partition value (3 values)"
    assert [g.index for g in packed.groups] == list(range(len(packed.groups)))
    assert sorted(f.path for g in packed.groups for f in g.files) == \
        sorted(f.path for f in fs.files())
    for g in packed.groups:
        assert len({f.partition_values["date"] for f in g.files}) == 1


def test_pack_by_partition_key_declines_with_a_reason():
    opts = ListingOptions(key_grouped=True, max_partition_bytes=MB)
    few = pack_by_partition_key(files(["a", "a", "b"]), WholeFiles(), opts, 4)
    assert not few.key_grouped
    assert few.reason == "by size (key_grouped: 2 partition values for 4 tasks)"
    big = pack_by_partition_key(files(["a"] * (KEY_GROUP_MAX_SPLITS + 1) + ["b"]),
                                WholeFiles(), opts, 2)
    assert not big.key_grouped and "over 4 x max_partition_bytes" in big.reason
    flat = pack_by_partition_key(FileColumns.of_files([PartitionedFile("s3://b/t/f.parquet", 1)]),
                                 WholeFiles(), opts, 1)
    assert flat.reason == "by size (key_grouped: the table has no partition columns)"
    small = pack_by_partition_key(files(["a", "b", "c"], size=MB), WholeFiles(),
                                  ListingOptions(key_grouped=True), 2)
    assert not small.key_grouped
    assert small.reason == ("by size (key_grouped: partition values average 1,048,576 bytes "
                            "of files, under open_cost_in_bytes)")


def test_key_marker_is_the_text_key_grouped_scans_reads():
    """The bytes KeyGroupedScans.java parses: JSON between the marks, ASCII-escaped, a date
    as ISO text (``LocalDate.parse``), other values JSON's own; a timestamp (a type that
    class does not convert) marks no key."""
    values = {"date": dt.date(2024, 1, 31), "region": "zürich", "n": 7, "ok": True,
              "none": None}
    group = FileGroup(0, (PartitionedFile("s3://b/t/f.parquet", 1, values),))
    assert key_marker(group) == (
        '\x1elisting-key:{"names": ["date", "region", "n", "ok", "none"], '
        '"values": ["2024-01-31", "z\\u00fcrich", 7, true, null]}\x1e')
    stamped = {"at": dt.datetime(2024, 1, 31, 12, tzinfo=dt.UTC)}
    assert key_marker(FileGroup(0, (PartitionedFile("s3://b/t/f.parquet", 1, stamped),))) == ""
