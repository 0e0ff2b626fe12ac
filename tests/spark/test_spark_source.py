"""The ``listing`` Spark source end to end: real Spark, real HTTP S3.

Request counts come from the S3 server's log, so "pruned" means "these files were never
listed or read", not "Spark filtered the rows afterwards".
"""

from __future__ import annotations

import datetime as dt
import json
import os
import uuid
import warnings

import pyarrow as pa
import pytest

import listing
from listing import ListingTable
from listing.spark.session import register
from listing.testing import datasets

DAYS = 40


@pytest.fixture(scope="module")
def events(s3_server):
    bucket = s3_server.create_bucket(f"spark-{uuid.uuid4().hex[:8]}")
    ds = datasets.daily(f"s3://{bucket}/events", s3_server.storage_options, days=DAYS,
                        rows_per_file=5, put=datasets.fast_writer(s3_server))
    datasets.add_hidden_files(ds, put=datasets.fast_writer(s3_server))
    yield ds
    s3_server.drop_bucket(bucket)


def reader(spark, server, **options):
    r = (spark.read.format("listing")
         .option("storage.endpoint_url", server.endpoint_url)
         .option("storage.key", "testing").option("storage.secret", "testing"))
    for k, v in options.items():
        r = r.option(k, v)
    return r


def rows_where(ds, keep) -> int:
    return sum(f.num_rows for f in ds.files if keep(f.partition_values))


def test_reads_every_row_with_partition_columns(spark, s3_server, events):
    df = reader(spark, s3_server).load(events.root + "/")
    assert df.columns == ["id", "amount", "name", "date", "region"]
    assert dict(df.dtypes)["date"] == "date" and dict(df.dtypes)["id"] == "bigint"
    assert df.count() == events.num_rows
    got = {(r.id, r.date, r.region) for r in df.select("id", "date", "region").collect()}
    want = {(i, f.partition_values["date"], f.partition_values["region"])
            for f in events.files for i in f.table.column("id").to_pylist()}
    assert got == want  # no hidden _temporary file leaked in (its ids are negative)


def test_partition_filters_prune_listing_and_reads(spark, s3_server, events):
    df = reader(spark, s3_server, engine="python").load(events.root)  # the listing reader
    query = df.where("date = '2025-01-05' AND region = 'us' AND amount >= 0")
    with s3_server.log.capture() as cap:
        n = query.count()
    assert n == rows_where(events, lambda v: v["date"] == dt.date(2025, 1, 5)
                           and v["region"] == "us")
    assert cap.count("LIST") == 1
    assert cap.count("GET") == 1  # the one matching file, small: read in one GET
    plan = query._jdf.queryExecution().executedPlan().toString()
    spark_filter = next(line for line in plan.splitlines() if "Filter" in line)
    assert "amount" in spark_filter  # inexact: Spark re-checks it
    assert "date" not in spark_filter and "region" not in spark_filter  # exact: pruned by us


def test_data_filters_are_rechecked_by_spark(spark, s3_server, events):
    df = reader(spark, s3_server).load(events.root)
    got = df.where("amount > 900").select("amount").collect()
    want = sum(1 for f in events.files for a in f.table.column("amount").to_pylist() if a > 900)
    assert len(got) == want and all(r.amount > 900 for r in got)


def test_stale_pushdown_dataframe(spark, s3_server, events):
    df = reader(spark, s3_server).load(events.root)
    one_day = rows_where(events, lambda v: v["date"] == dt.date(2025, 1, 2))
    assert df.where("date = '2025-01-02'").count() == one_day
    assert df.count() == events.num_rows  # scenario 1: unfiltered after filtered
    assert df.where("date = '2025-01-03'").count() == rows_where(
        events, lambda v: v["date"] == dt.date(2025, 1, 3))  # scenario 3: two filters in a row
    assert df.where("region = 'eu'").count() == rows_where(events, lambda v: v["region"] == "eu")
    assert df.count() == events.num_rows


def test_stale_pushdown_temp_view_sql(spark, s3_server, events):
    view = f"events_{uuid.uuid4().hex[:6]}"
    spark.sql(f"""CREATE TEMPORARY VIEW {view} USING listing OPTIONS (
        path '{events.root}', format 'parquet',
        storage_options '{json.dumps(s3_server.storage_options)}')""")
    total = events.num_rows
    assert spark.sql(f"SELECT count(*) FROM {view}").first()[0] == total  # scenario 3 order
    q = f"SELECT count(*) FROM {view} WHERE date = '2025-01-07'"
    assert spark.sql(q).first()[0] == rows_where(events, lambda v: v["date"] == dt.date(2025, 1,
                                                                                      7))
    assert spark.sql(f"SELECT count(*) FROM {view}").first()[0] == total  # scenario 2
    both = spark.sql(f"SELECT region, count(*) AS n FROM {view} WHERE date < '2025-01-03' "
                     f"GROUP BY region ORDER BY region").collect()
    assert [(r.region, r.n) for r in both] == [
        (g, rows_where(events, lambda v, g=g: v["region"] == g and v["date"] < dt.date(2025, 1,
                                                                                       3)))
        for g in ("eu", "us")]


def test_self_union_of_differently_filtered_scans(spark, s3_server, events):
    df = reader(spark, s3_server).load(events.root)
    u = df.where("date = '2025-01-02'").unionByName(df.where("region = 'us'"))
    assert u.count() == (rows_where(events, lambda v: v["date"] == dt.date(2025, 1, 2))
                         + rows_where(events, lambda v: v["region"] == "us"))


def test_to_spark_projects_filters_and_limits(spark, s3_server, events):
    table = ListingTable.open(events.root, storage_options=events.storage_options)
    df = listing.to_spark(table, spark, columns=["id", "region"], where="date <= '2025-01-10'")
    assert df.columns == ["id", "region"]
    assert df.count() == rows_where(events, lambda v: v["date"] <= dt.date(2025, 1, 10))
    with s3_server.log.capture() as cap:
        limited = listing.to_spark(table, spark, where="region = 'eu'", limit=3).collect()
    assert len(limited) == 3 and {r.region for r in limited} == {"eu"}
    assert cap.count("GET") <= 2 * 2  # each of 2 tasks stops after its first file


def test_the_table_method_is_the_spark_engines_to_spark(spark, events):
    """``table.to_spark`` reaches the Spark edge through the ``listing.engines`` entry point
    (the core imports nothing of Spark) and gives what ``listing.to_spark`` gives."""
    from listing.dataframe_engines import engine

    table = ListingTable.open(events.root, storage_options=events.storage_options)
    assert engine("spark") is listing.to_spark
    method = table.to_spark(spark, columns=["id", "date"], where="date <= '2025-01-03'")
    function = listing.to_spark(table, spark, columns=["id", "date"], where="date <= '2025-01-03'")
    assert method.columns == ["id", "date"]
    assert sorted(method.collect()) == sorted(function.collect())
    assert method.count() == rows_where(events, lambda v: v["date"] <= dt.date(2025, 1, 3)) > 0
    with pytest.raises(listing.OptionError, match="no 'flink' engine is installed.*spark"):
        engine("flink")


def test_options_arrive_lower_cased_and_spark_names_work(spark, s3_server, events):
    df = (reader(spark, s3_server, pathGlobFilter="part-0.*", maxPartitionBytes="1m")
          .load(events.root))
    assert df.count() == events.num_rows


@pytest.mark.parametrize(("option", "value", "needle"), [
    ("max_partition_bytes", "lots", "max_partition_bytes"),
    ("format", "parkay", "parkay"),
    ("delimitr", ";", "delimitr"),
    ("partition_cols", "date:weird", "weird"),
])
def test_bad_options_are_named(spark, s3_server, events, option, value, needle):
    with pytest.raises(Exception, match=needle):
        reader(spark, s3_server, **{option: value}).load(events.root).count()


def test_session_python_workers_use_unix_sockets(spark):
    """listing.session() has Spark talk to Python workers over Unix sockets (a task's
    last writes over TCP loopback waited out a delayed ACK): the workers see it."""
    assert spark.sparkContext.getConf().get("spark.python.unix.domain.socket.enabled") == "true"

    def worker_env(batches):
        for _ in batches:
            yield pa.record_batch({"uds": [os.environ.get("PYTHON_UNIX_DOMAIN_ENABLED")]})

    got = spark.range(1, numPartitions=1).mapInArrow(worker_env, "uds string").collect()
    assert [r.uds.lower() for r in got] == ["true"]


def test_missing_path_is_explained(spark):
    with pytest.raises(Exception, match="needs a path"):
        spark.read.format("listing").load().count()


def test_user_schema_projects_without_reading_footers(spark, s3_server, events):
    with s3_server.log.capture() as cap:
        # our reader (Spark's S3A reader would take a table with S3A on the classpath)
        df = reader(spark, s3_server, engine="python").schema("id long, date date").load(
            events.root)
        # rows of a column, not count(): a count's footers may come from this process's
        # footer cache, filled by an earlier test
        assert len(df.where("date = '2025-01-04'").select("id").collect()) == rows_where(
            events, lambda v: v["date"] == dt.date(2025, 1, 4))
    matching = sum(1 for f in events.files if f.partition_values["date"] == dt.date(2025, 1, 4))
    assert cap.count("GET") == matching  # one GET per (small) file read; none to infer


def test_secrets_do_not_show_in_spark_plans(spark, s3_server, events):
    """The token reaches the relation Spark reads with (positive control), and no plan,
    explain output or SQL status-store entry of the query shows it."""
    import io
    from contextlib import redirect_stdout

    df = (reader(spark, s3_server, engine="python").option("storage.token", "tok-SECRET-123")
          .load(events.root).where("date = '2025-01-02'"))
    assert df.count() == rows_where(events, lambda v: v["date"] == dt.date(2025, 1, 2))
    relation = df._jdf.queryExecution().analyzed().children().apply(0)
    assert relation.getClass().getSimpleName() == "DataSourceV2Relation"
    assert relation.options().get("storage.token") == "tok-SECRET-123"
    out = io.StringIO()
    with redirect_stdout(out):
        df.explain(True)
        df.explain("formatted")
    texts = [out.getvalue(), str(df._jdf.queryExecution().toString())]
    executions = spark._jsparkSession.sharedState().statusStore().executionsList()
    for i in range(executions.size()):
        e = executions.apply(i)
        texts += [str(e.description()), str(e.details()), str(e.physicalPlanDescription())]
    assert "BatchScan listing" in texts[0]  # the scan is described, options and all
    for text in texts:
        assert "tok-SECRET-123" not in text


def test_unguarded_session_does_not_prune_and_stays_correct(spark, s3_server, events):
    rule = "io.github.listing.StalePushdownGuard"
    spark.conf.set("spark.sql.optimizer.excludedRules", rule)
    try:
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            result = register(spark)
        assert not result.guarded and not result.prunes_with_spark_filters
        df = reader(spark, s3_server).load(events.root)
        assert df.where("date = '2025-01-02'").count() == rows_where(
            events, lambda v: v["date"] == dt.date(2025, 1, 2))
        assert df.count() == events.num_rows
    finally:
        spark.conf.unset("spark.sql.optimizer.excludedRules")
        assert register(spark).prunes_with_spark_filters


def test_arrow_types_reach_spark(spark, s3_server, s3_bucket):
    table = pa.table({"s": pa.array(["a"], pa.large_string()),
                      "ts": pa.array([dt.datetime(2026, 1, 1, 12)], pa.timestamp("ns", "UTC")),
                      "u": pa.array([7], pa.uint32()), "f": pa.array([1.5], pa.float32())})
    s3_server.put_objects_fast(s3_bucket, {"t/k=1/a.parquet": datasets.encode(table, "parquet")})
    row = reader(spark, s3_server).load(f"s3://{s3_bucket}/t").first()
    assert row.s == "a" and row.u == 7 and row.f == 1.5 and row.k == 1
    # the same instant: pyspark gives a timestamp as a naive datetime in local time
    instant = dt.datetime(2026, 1, 1, 12, tzinfo=dt.UTC)
    assert row.ts == dt.datetime.fromtimestamp(instant.timestamp())
    assert str(row.ts.astimezone(dt.UTC)) == "2026-01-01 12:00:00+00:00"


def test_create_table_documented_forms(spark, s3_server, events):
    """pyspark 4.3 drops CREATE TABLE's stored options on read; the extension's
    ListingCatalogOptions rule gives them back, and options given with the query win."""
    name = f"ev_{uuid.uuid4().hex[:6]}"
    opts = json.dumps(s3_server.storage_options)
    spark.sql(f"CREATE TABLE {name} USING listing OPTIONS (path '{events.root}', "
              f"storage_options '{opts}')")
    try:
        day = rows_where(events, lambda v: v["date"] == dt.date(2025, 1, 2))
        assert spark.sql(f"SELECT count(*) FROM {name}").first()[0] == rows_where(
            events, lambda v: True)
        assert spark.sql(f"SELECT count(*) FROM {name} WHERE date = '2025-01-02'"
                         ).first()[0] == day
        q = (f"SELECT count(*) FROM {name} WITH ('path' = '{events.root}', "
             f"'storage_options' = '{opts}') WHERE date = '2025-01-02'")
        assert spark.sql(q).first()[0] == day
    finally:
        spark.sql(f"DROP TABLE IF EXISTS {name}")
