"""Zero-byte objects: folder markers (``t/``, ``t/date=X/``, what the S3 console's "Create
folder" and Hadoop's S3A leave) are no files, and zero-byte data files have no rows: both
are skipped, as Spark's file index skips them, also when one would be the schema sample."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq

from listing import ListingTable
from listing.testing import datasets

GOOD = pa.table({"id": pa.array([1, 2], pa.int64())})


def put(server, bucket, objects):
    data = datasets.encode(GOOD, "parquet")
    server.put_objects_fast(bucket, {k: (data if v else b"") for k, v in objects.items()})


def open_table(server, bucket, **kwargs):
    return ListingTable.open(f"s3://{bucket}/t", storage_options=server.storage_options,
                             **kwargs)


def test_folder_marker_at_the_root_and_at_partitions(s3_server, s3_bucket):
    put(s3_server, s3_bucket, {"t/": False, "t/date=2026-01-01/": False,
                               "t/date=2026-01-01/p.parquet": True,
                               "t/date=2026-01-02/": False, "t/date=2026-01-02/p.parquet": True})
    table = open_table(s3_server, s3_bucket)
    assert table.partition_cols == [("date", pa.date32())]
    plan = table.scan()
    assert plan.to_arrow().num_rows == 4
    assert len(plan.files) == 2
    one = table.scan(where="date = '2026-01-02'")
    assert one.to_arrow().num_rows == 2


def test_zero_byte_data_files_are_skipped_and_counted(s3_server, s3_bucket):
    # the empty file sorts first: it would be the schema sample
    put(s3_server, s3_bucket, {"t/date=2026-01-01/a.parquet": False,
                               "t/date=2026-01-01/p.parquet": True,
                               "t/date=2026-01-02/p.parquet": True})
    for merge in (False, True):
        table = open_table(s3_server, s3_bucket, merge_schema=merge)
        assert table.schema.names == ["id", "date"]
        plan = table.scan()
        got = plan.collect()
        assert got.table.num_rows == 4
        assert got.metrics["files_skipped_empty"] == 1
        assert plan.metrics["files_matched"] == 3  # listed, then not read


def test_zero_byte_files_through_spark(spark, s3_server, s3_bucket):
    put(s3_server, s3_bucket, {"t/": False, "t/a.parquet": False, "t/p.parquet": True,
                               "t/q.parquet": True})
    df = (spark.read.format("listing")
          .option("storage_options", json.dumps(s3_server.storage_options))
          .load(f"s3://{s3_bucket}/t"))
    assert df.count() == 4 and df.columns == ["id"]


def test_zero_byte_files_as_spark_reads_them(spark, tmp_path):
    """Oracle: spark.read.parquet on the same layout (local disk) reads the same rows."""
    for day, names in (("2026-01-01", ["a", "p"]), ("2026-01-02", ["p"])):
        (tmp_path / f"date={day}").mkdir()
        for name in names:
            path = tmp_path / f"date={day}" / f"{name}.parquet"
            if name == "a":
                path.write_bytes(b"")
            else:
                pq.write_table(GOOD, path)
    theirs = spark.read.parquet(str(tmp_path))
    ours = ListingTable.open(str(tmp_path))
    assert [(f.name, f.dataType.simpleString()) for f in theirs.schema] == [
        ("id", "bigint"), ("date", "date")]
    assert ours.schema.names == theirs.columns
    got = ours.scan().to_arrow()
    assert sorted(zip(got.column("id").to_pylist(), got.column("date").to_pylist(),
                      strict=True)) == sorted((r.id, r.date) for r in theirs.collect())
