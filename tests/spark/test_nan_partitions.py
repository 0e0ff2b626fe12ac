"""NaN in a float partition column is ordered as Spark orders it: NaN equals NaN and sorts
above every number (``d > 1e308`` holds for ``d=NaN``), in the planner's pruning and in the
filters it evaluates, against Spark's own reader on the same layout."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from listing import ListingTable

DATA = pa.table({"id": pa.array([1, 2], pa.int64())})
VALUES = ["NaN", "1.5", "-2.0", "Infinity", "-Infinity", "__HIVE_DEFAULT_PARTITION__"]
PREDICATES = [
    "d < 1e308", "d <= 'NaN'", "d > 1e308", "d >= 'NaN'", "d = 'NaN'", "d != 'NaN'",
    "d IN ('NaN', 1.5)", "d NOT IN ('NaN')", "d BETWEEN 1 AND 'NaN'", "d BETWEEN 'NaN' AND 'NaN'",
    "d IS NULL", "d > 1", "d < 'Infinity'", "d > 'Infinity'", "NOT (d > 1e308)",
    "d = 'NaN' AND k = 1",
]


def build(root):
    for v in VALUES:
        for k in (1, 2):
            path = root / f"d={v}" / f"k={k}"
            path.mkdir(parents=True)
            pq.write_table(DATA, path / "p.parquet")


def spark_counts(spark, root):
    """Spark's own reader's row count under each predicate (one query)."""
    row = spark.read.parquet(root).selectExpr(
        *[f"count_if(coalesce({p}, false))" for p in PREDICATES]).first()
    return dict(zip(PREDICATES, row, strict=True))


def test_nan_partition_filters_as_spark(spark, tmp_path, s3_server, s3_bucket):
    build(tmp_path)
    root = str(tmp_path)
    expected = spark_counts(spark, root)
    # NaN and Infinity are above 1e308; 2 rows in each of the 2 k folders of a d folder
    assert expected["d > 1e308"] == 8 and expected["d = 'NaN'"] == 4
    table = ListingTable.open(root)
    assert table.partition_cols[0] == ("d", pa.float64())
    assert {p: table.scan(where=p).to_arrow().num_rows for p in PREDICATES} == expected
    # through Spark (its filters pushed to the listing source)
    ours = spark.read.format("listing").load(root)
    for p in ["d > 1e308", "d = 'NaN'", "d IN ('NaN', 1.5)", "NOT (d > 1e308)"]:
        assert ours.where(p).count() == expected[p], p
    # the planner's pruning on S3 keys: the folders it lists and keeps
    s3_server.put_objects_fast(s3_bucket, {
        f"t/{path.relative_to(tmp_path)}": path.read_bytes()
        for path in tmp_path.rglob("*.parquet")})
    on_s3 = ListingTable.open(f"s3://{s3_bucket}/t", storage_options=s3_server.storage_options)
    assert {p: len(on_s3.scan(where=p).files) * 2 for p in PREDICATES} == expected
