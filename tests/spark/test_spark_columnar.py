"""Python-engine scans reach Spark as columnar batches (ColumnarPythonReads.java).

Real Spark, real Parquet files. Every result is checked against the same query with
``spark.listing.columnarReads=false``, which reads rows through Spark's own Python reader
factory as before, and against the data written.
"""

from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

CONF = "spark.listing.columnarReads"

TABLE = pa.table({
    "id": pa.array(range(300), pa.int64()),
    "small": pa.array([i % 7 if i % 11 else None for i in range(300)], pa.int32()),
    "amount": pa.array([i * 0.5 if i % 13 else None for i in range(300)], pa.float64()),
    "name": pa.array([f"n{i % 17}" if i % 5 else None for i in range(300)], pa.string()),
    "flag": pa.array([i % 3 == 0 if i % 7 else None for i in range(300)], pa.bool_()),
    "price": pa.array([decimal.Decimal(i) / 100 for i in range(300)], pa.decimal128(10, 2)),
    "day": pa.array([dt.date(2025, 1, 1) + dt.timedelta(days=i % 40) for i in range(300)],
                    pa.date32()),
    "at": pa.array([dt.datetime(2025, 1, 1, tzinfo=dt.UTC) + dt.timedelta(minutes=i)
                    for i in range(300)], pa.timestamp("us", tz="UTC")),
    "tags": pa.array([[f"t{i % 3}"] * (i % 3) if i % 4 else None for i in range(300)],
                     pa.list_(pa.string())),
    "point": pa.array([{"x": i, "y": None if i % 2 else f"y{i}"} for i in range(300)],
                      pa.struct([("x", pa.int64()), ("y", pa.string())])),
})


@pytest.fixture(scope="module")
def typed(tmp_path_factory):
    root = tmp_path_factory.mktemp("columnar") / "events"
    for k, region in enumerate(["eu", "us", "ap"]):
        part = root / f"region={region}"
        part.mkdir(parents=True)
        pq.write_table(TABLE.slice(k * 100, 100), part / "part-0.parquet", row_group_size=40)
    return str(root)


def read(spark, root):
    return (spark.read.format("listing").option("engine", "python").load(root))


def both(spark, make):
    """The rows of ``make()`` read as columnar batches, then as rows."""
    try:
        spark.conf.set(CONF, "true")
        columnar = make()
        plan = columnar._jdf.queryExecution().executedPlan().toString()
        got = columnar.collect()
        spark.conf.set(CONF, "false")
        rows = make()
        assert "ColumnarToRow" not in rows._jdf.queryExecution().executedPlan().toString()
        want = rows.collect()
    finally:
        spark.conf.unset(CONF)
    return plan, got, want


def test_a_python_scan_is_read_as_columnar_batches(spark, typed):
    plan, got, want = both(spark, lambda: read(spark, typed))
    lines = plan.splitlines()
    scan = next(i for i, line in enumerate(lines) if "BatchScan listing" in line)
    assert "ColumnarToRow" in lines[scan - 1]
    key = lambda r: r["id"]  # noqa: E731
    assert sorted(got, key=key) == sorted(want, key=key)
    assert len(got) == TABLE.num_rows
    by_id = {r["id"]: r for r in got}
    for i in (0, 11, 13, 150, 299):
        written = TABLE.slice(i, 1).to_pylist()[0]
        row = by_id[i].asDict(recursive=True)
        for name in ("small", "amount", "name", "flag", "price", "day", "tags", "point"):
            assert row[name] == written[name], (i, name)
        assert row["at"].timestamp() == written["at"].timestamp()  # naive local in Spark
        assert row["region"] == ["eu", "us", "ap"][i // 100]


def test_columnar_scans_under_filters_projections_and_aggregates(spark, typed):
    queries = {
        "projection": lambda: read(spark, typed).select("name", "price", "region"),
        "partition filter": lambda: read(spark, typed).where("region = 'us'").select("id"),
        "data filter": lambda: read(spark, typed).where("amount > 20 AND flag").select("id"),
        "aggregate": lambda: read(spark, typed).groupBy("region", "name").agg(
            F.sum("amount").alias("s"), F.max("day").alias("d"), F.count("small").alias("c")),
        "nested": lambda: read(spark, typed).select(F.size("tags").alias("n"), "point.x"),
    }
    for name, make in queries.items():
        _, got, want = both(spark, make)
        assert sorted(map(str, got)) == sorted(map(str, want)), name
        assert got, name


def test_a_join_of_two_columnar_scans(spark, typed):
    def make():
        left = read(spark, typed).select("id", "name")
        right = read(spark, typed).where("region = 'eu'").select("id", "price")
        return left.join(right, "id")

    _, got, want = both(spark, make)
    assert sorted(map(str, got)) == sorted(map(str, want))
    assert len(got) == 100
