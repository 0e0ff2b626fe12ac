"""SQL writes to a ``CREATE TABLE … USING listing`` table (issue 45, item 5): ``INSERT INTO``,
``INSERT OVERWRITE`` (static and dynamic as the session says) and ``df.writeTo(t)`` reach the
table's stored options (its path, format, storage) and partition by its columns. Spark's own
Parquet catalog table, given the same statements, is the oracle."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from listing import ListingTable
from listing.errors import OptionError
from listing.spark.config import SourceConfig
from listing.write import write_table

CONF = "spark.sql.sources.partitionOverwriteMode"
SEED = [(1, "a", dt.date(2026, 1, 1)), (2, "b", dt.date(2026, 1, 1)),
        (3, "c", dt.date(2026, 1, 2))]
STEPS = [
    "INSERT INTO {t} VALUES (4, 'd', DATE'2026-01-02'), (5, 'e', DATE'2026-01-03')",
    "INSERT INTO {t} SELECT id + 10, name, date FROM {t} WHERE date = '2026-01-01'",
    "SET dynamic",  # INSERT OVERWRITE replaces only the partitions it writes
    "INSERT OVERWRITE {t} VALUES (20, 'x', DATE'2026-01-02')",
    "SET static",  # INSERT OVERWRITE replaces the table
    "INSERT OVERWRITE {t} VALUES (50, 'q', DATE'2026-01-06'), (51, 'r', DATE'2026-01-01')",
]


def collected(df) -> list[tuple]:
    return sorted((r.id, r.name, r.date) for r in df.collect())


@pytest.fixture
def tables(spark, tmp_path):
    """Two tables over the same seed, partitioned by date: ours (listing, with read options
    stored that writes must not take) and Spark's own (parquet)."""
    seed = spark.createDataFrame(SEED, "id long, name string, date date")
    paths = {name: str(tmp_path / name) for name in ("ours", "theirs")}
    for path in paths.values():
        seed.write.partitionBy("date").parquet(path)
    spark.sql(f"CREATE TABLE sql_ours USING listing OPTIONS (path '{paths['ours']}', "
              "format 'parquet', engine 'python', where 'id > 0')")
    spark.sql(f"CREATE TABLE sql_theirs USING parquet LOCATION '{paths['theirs']}'")
    spark.sql("MSCK REPAIR TABLE sql_theirs")  # Spark's table: its partitions registered
    yield paths
    spark.sql("DROP TABLE IF EXISTS sql_ours")
    spark.sql("DROP TABLE IF EXISTS sql_theirs")
    spark.conf.unset(CONF)


def test_sql_writes_do_what_they_do_to_sparks_own_table(spark, tables):
    assert collected(spark.table("sql_ours")) == collected(spark.table("sql_theirs"))
    for step in STEPS:
        if step.startswith("SET "):
            spark.conf.set(CONF, step[4:])
            continue
        for t in ("sql_ours", "sql_theirs"):
            spark.sql(step.format(t=t))
        want = collected(spark.table("sql_theirs"))
        assert collected(spark.table("sql_ours")) == want, step
    assert len(want) == 2  # the static overwrite replaced the table
    # Spark's own reader of our folder: every row where it reads (no root files)
    assert collected(spark.read.parquet(tables["ours"])) == want
    # DataFrameWriterV2: append, and overwritePartitions (dynamic whatever the session says)
    more = spark.createDataFrame([(30, "y", dt.date(2026, 1, 3)), (31, "z", dt.date(2026, 1, 5))],
                                 "id long, name string, date date")
    more.writeTo("sql_ours").append()
    more.write.insertInto("sql_theirs")  # Spark refuses writeTo on its own v1 tables
    want = collected(spark.table("sql_theirs"))
    assert collected(spark.table("sql_ours")) == want and len(want) == 4
    again = spark.createDataFrame([(40, "w", dt.date(2026, 1, 5))],
                                  "id long, name string, date date")
    again.writeTo("sql_ours").overwritePartitions()
    assert collected(spark.read.parquet(tables["ours"])) == sorted(
        [r for r in want if r[2] != dt.date(2026, 1, 5)] + [(40, "w", dt.date(2026, 1, 5))])


def test_a_partitioned_table_created_empty_takes_its_partition_columns(spark, tmp_path):
    path = str(tmp_path / "p")
    spark.sql(f"CREATE TABLE sql_empty (id long, region string) USING listing "
              f"PARTITIONED BY (region) OPTIONS (path '{path}', format 'parquet')")
    try:
        spark.sql("INSERT INTO sql_empty VALUES (1, 'eu'), (2, 'us'), (3, 'eu')")
        assert ListingTable.open(path).partition_names == ["region"]
        want = [(1, "eu"), (2, "us"), (3, "eu")]
        got = spark.read.parquet(path).collect()  # Spark's own reader
        assert sorted((r.id, r.region) for r in got) == sorted(want)
        got = spark.table("sql_empty").collect()
        assert sorted((r.id, r.region) for r in got) == sorted(want)
    finally:
        spark.sql("DROP TABLE IF EXISTS sql_empty")


def test_insert_into_a_table_on_s3(spark, s3_server, s3_bucket):
    url = f"s3://{s3_bucket}/events"
    storage = s3_server.storage_options
    write_table(url, _arrow(SEED), partition_by=["date"], storage_options=storage)
    options = json.dumps({"endpoint_url": s3_server.endpoint_url, "key": "testing",
                          "secret": "testing"})
    spark.sql(f"CREATE TABLE sql_s3 USING listing OPTIONS (path '{url}', format 'parquet', "
              f"storage_options '{options}')")
    try:
        spark.sql("INSERT INTO sql_s3 VALUES (4, 'd', DATE'2026-01-02'), "
                  "(5, 'e', DATE'2026-01-04')")
        want = sorted([*SEED, (4, "d", dt.date(2026, 1, 2)), (5, "e", dt.date(2026, 1, 4))])
        assert collected(spark.table("sql_s3")) == want
        got = ListingTable.open(url, storage_options=storage).scan().to_arrow().to_pylist()
        assert sorted((r["id"], r["name"], r["date"]) for r in got) == want
        keys = [o["Key"] for o in s3_server.client().list_objects_v2(
            Bucket=s3_bucket, Prefix="events/")["Contents"]]
        assert [k for k in keys if k.count("/") == 1 and "/_" not in k] == []  # none at root
    finally:
        spark.sql("DROP TABLE IF EXISTS sql_s3")


def _arrow(rows):
    import pyarrow as pa

    return pa.table({"id": [r[0] for r in rows], "name": [r[1] for r in rows],
                     "date": [r[2] for r in rows]})


def test_a_missing_path_says_how_sql_gives_one():
    with pytest.raises(OptionError, match=r"in SQL, the table's OPTIONS \(path '…'\)"):
        SourceConfig.parse({"format": "parquet"})
