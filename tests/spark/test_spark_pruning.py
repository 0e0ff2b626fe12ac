"""Column pruning for the ``listing`` source (the JVM rule ListingColumnPruning).

Spark 4.3 hands Python sources the full schema; the rule narrows each scan to the columns
its query uses, so the Python reader decodes only those. Every scenario that could mix
up two scans of one relation (the stale-pushdown family) must stay exact.
"""

from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pytest

import listing
from listing.spark.reader import counted
from listing.testing import datasets


@pytest.fixture(scope="module")
def events(s3_server):
    bucket = s3_server.create_bucket(f"prune-{uuid.uuid4().hex[:8]}")
    ds = datasets.daily(f"s3://{bucket}/events", s3_server.storage_options, days=6,
                        put=datasets.fast_writer(s3_server))
    yield ds
    s3_server.drop_bucket(bucket)


def load(spark, ds):
    """The listing reader's scan (S3 is handed to Spark's reader by default: engine=auto)."""
    return (spark.read.format("listing").option("engine", "python")
            .option("storage_options", json.dumps(ds.storage_options)).load(ds.root))


def scan_columns(df) -> list[str]:
    """The columns of the (single) listing scan in the executed plan."""
    plan = df._jdf.queryExecution().executedPlan().toString()
    line = next(x for x in plan.splitlines() if "BatchScan listing[" in x)
    inside = line.split("BatchScan listing[", 1)[1].split("]", 1)[0]
    return [c.strip().split("#")[0] for c in inside.split(",") if c.strip()]


def rows_of(ds, *columns):
    return sorted(tuple(r[c] for c in columns) for f in ds.files
                  for r in f.table.append_column("date", [[f.partition_values["date"]]
                                                          * f.table.num_rows])
                  .append_column("region", [[f.partition_values["region"]]
                                            * f.table.num_rows]).to_pylist())


def test_a_projection_reads_only_its_columns(spark, events):
    df = load(spark, events).select("amount", "date")
    assert scan_columns(df) == ["amount", "date"]
    got = sorted((r.amount, r.date) for r in df.collect())
    assert got == rows_of(events, "amount", "date")


def test_count_reads_no_column(spark, events):
    """count(*) is pushed into the scan (ListingCountPushdown): the reader sends a row count
    per batch instead of the rows, and reads no data column for it."""
    df = load(spark, events)
    assert scan_columns(df.groupBy().count()) == ["__listing_rows"]
    assert df.count() == events.num_rows


def test_pushed_counts_are_exact_under_groups_and_filters(spark, events):
    df = load(spark, events)
    by_date = df.groupBy("date").count()
    assert scan_columns(by_date) == ["date", "__listing_rows"]
    want: dict = {}
    for (d,) in rows_of(events, "date"):
        want[d] = want.get(d, 0) + 1
    assert {r["date"]: r["count"] for r in by_date.collect()} == want
    # a filter on a data column: counted per distinct value, filtered by Spark above
    amounts = [a for (a,) in rows_of(events, "amount")]
    cut = sorted(amounts)[len(amounts) // 3]
    q = df.where(f"amount > {cut} AND region = 'eu'")
    assert scan_columns(q.groupBy().count()) == ["amount", "region", "__listing_rows"]
    assert q.count() == sum(1 for a, r in rows_of(events, "amount", "region")
                            if a > cut and r == "eu")
    # no row matches: count() is 0, not null
    assert df.where("date = '1999-01-01'").count() == 0
    # SQL count(1) with a group and HAVING
    df.createOrReplaceTempView("counted_events")
    got = spark.sql("SELECT region, count(1) AS n FROM counted_events GROUP BY region "
                    "HAVING count(1) > 0").collect()
    regions: dict = {}
    for (r,) in rows_of(events, "region"):
        regions[r] = regions.get(r, 0) + 1
    assert {x["region"]: x["n"] for x in got} == regions


def test_counted_batches_stand_for_their_rows():
    """The reader's side of a pushed count: a batch of per-file values (partition
    columns) is its first row with the batch's row count; other batches are grouped by
    their distinct rows; empty batches send nothing."""
    day = pa.record_batch({"date": ["2026-01-01"] * 3})
    other_day = pa.record_batch({"date": ["2026-01-02"] * 2})
    per_file = list(counted(iter([day, pa.record_batch({"date": pa.array([], pa.string())}),
                                  other_day]), per_file=True))
    assert [b.to_pylist() for b in per_file] == [
        [{"date": "2026-01-01", "__listing_rows": 3}],
        [{"date": "2026-01-02", "__listing_rows": 2}]]
    mixed = pa.record_batch({"amount": [1, 2, 1, None]})
    rows = [r for b in counted(iter([mixed])) for r in b.to_pylist()]
    assert sorted(rows, key=str) == sorted([{"amount": 1, "__listing_rows": 2},
                                            {"amount": 2, "__listing_rows": 1},
                                            {"amount": None, "__listing_rows": 1}], key=str)
    no_columns = mixed.select([])
    assert [b.to_pylist() for b in counted(iter([no_columns, no_columns.slice(0, 0)]))] == [
        [{"__listing_rows": 4}]]


def test_counts_of_values_are_not_pushed(spark, events):
    """count(column) counts non-null values, count(DISTINCT …) distinct ones, and a count
    beside another aggregate needs the rows: those scans read rows as before."""
    df = load(spark, events)
    from pyspark.sql import functions as F

    for q, want in [
        (df.agg(F.count("amount")), sum(1 for (a,) in rows_of(events, "amount")
                                         if a is not None)),
        (df.agg(F.countDistinct("region")), len({r for (r,) in rows_of(events, "region")})),
    ]:
        assert "__listing_rows" not in scan_columns(q)
        assert q.collect()[0][0] == want
    both = df.agg(F.count(F.lit(1)), F.max("id"))
    assert "__listing_rows" not in scan_columns(both)
    assert both.collect()[0][1] == max(i for (i,) in rows_of(events, "id"))


def test_filter_columns_are_read_with_the_projection(spark, events):
    df = load(spark, events).where("amount > 50").select("id")
    assert set(scan_columns(df)) == {"id", "amount"}
    want = sorted(i for i, a in rows_of(events, "id", "amount") if a > 50)
    assert sorted(r.id for r in df.collect()) == want


def test_select_star_reads_everything(spark, events):
    df = load(spark, events)
    assert scan_columns(df.select("*")) == df.columns
    assert df.select("*").count() == events.num_rows


def test_two_scans_of_one_dataframe_with_other_columns_stay_apart(spark, events):
    df = load(spark, events)
    day = df.where("date = '2025-01-02'")
    assert day.select("id").count() == sum(1 for d in rows_of(events, "date")
                                           if str(d[0]) == "2025-01-02")
    assert df.select("amount").count() == events.num_rows  # not the pruned or narrowed read
    union = df.select("id").union(df.selectExpr("cast(amount as bigint)"))
    assert union.count() == 2 * events.num_rows
    joined = df.select("id", "date").join(df.select("id", "name", "date"), ["id", "date"])
    assert joined.count() == df.join(df, ["id", "date"]).count()


def test_cached_and_viewed_relations_stay_exact(spark, events):
    df = load(spark, events)
    cached = df.cache()
    try:
        assert cached.select("id").count() == events.num_rows
        assert sorted(r.amount for r in cached.select("amount").collect()) == \
            sorted(a for (a,) in rows_of(events, "amount"))
    finally:
        cached.unpersist()
    df.createOrReplaceTempView("pruned_events")
    by_region = spark.sql("SELECT region, count(*) AS n FROM pruned_events GROUP BY region")
    assert {r.region: r.n for r in by_region.collect()} == {
        reg: sum(1 for (x,) in rows_of(events, "region") if x == reg)
        for (reg,) in set(rows_of(events, "region"))}
    names = spark.sql("SELECT name FROM pruned_events WHERE date = '2025-01-03'")
    assert len(names.collect()) == sum(1 for (d,) in rows_of(events, "date")
                                       if str(d) == "2025-01-03")
    assert spark.sql("SELECT * FROM pruned_events").count() == events.num_rows


def test_a_narrow_projection_runs_fewer_python_tasks(spark, tmp_path):
    """On our reader, tasks are packed by the bytes the projection reads (the schema
    footer's column sizes): a small column of 16 files is 2 tasks, the big one 16."""
    import os

    import pyarrow.parquet as pq
    from pyspark.sql import functions as F

    flags = 0
    for i in range(16):
        os.makedirs(tmp_path / f"part={i}")
        flag = pa.array(list(os.urandom(20_000)), pa.uint8())
        flags += sum(flag.to_pylist())
        pq.write_table(pa.table({"flag": flag,
                                 "text": pa.array([os.urandom(16).hex()] * 20_000)}),
                       tmp_path / f"part={i}" / "a.parquet", use_dictionary=False,
                       compression="none")
    df = (spark.read.format("listing").option("engine", "python")
          .option("max_partition_bytes", "1m").option("open_cost_in_bytes", "64k")
          .load(str(tmp_path)))
    assert df.select("flag").rdd.getNumPartitions() == 2
    assert df.select("text").rdd.getNumPartitions() == 16
    assert df.agg(F.sum("flag")).collect()[0][0] == flags
    assert df.select("text").distinct().count() == 16
    # to_spark with a filter stays on our reader: the column sizes travel in its options
    from listing import ListingTable

    table = ListingTable.open(str(tmp_path), max_partition_bytes=2**20,
                              open_cost_in_bytes=2**16)
    narrow = listing.to_spark(table, spark, columns=["flag"], where="flag >= 0")
    assert narrow.rdd.getNumPartitions() == 2
    assert listing.to_spark(table, spark, columns=["text"], where="text <> ''").rdd \
        .getNumPartitions() == 16
    assert narrow.agg(F.sum("flag")).collect()[0][0] == flags

