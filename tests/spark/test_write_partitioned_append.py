"""Appending to a Hive-partitioned table without ``partition_by`` (issue 45, item 3).

Such an append used to write its files at the table's root, where reads (ours and Spark's)
skip them beside the partition directories: the rows vanished. A write to an existing
table now partitions by the table's own columns, as Spark's ``insertInto`` does, and refuses
a layout that reads would not see. Spark's own reader of the same folder is the oracle."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from spark_plans import s3a_bucket_conf

from listing import ListingTable
from listing.errors import OptionError
from listing.write import write_table

OLD = pa.table({"id": [1, 2, 3], "date": ["2026-01-01", "2026-01-01", "2026-01-02"],
                "region": ["eu", "us", "eu"]})
NEW = pa.table({"id": [4, 5], "date": ["2026-01-02", "2026-01-03"], "region": ["us", "eu"]})
MORE = [(6, "2026-01-01", "us"), (7, "2026-01-04", "eu")]  # appended through Spark


def ours(url: str, storage_options: dict | None = None) -> list[tuple]:
    """The rows our reader sees: (id, date as text, region)."""
    got = ListingTable.open(url, storage_options=storage_options).scan().to_arrow()
    return sorted((r["id"], str(r["date"]), r["region"]) for r in got.to_pylist())


def theirs(spark, url: str) -> list[tuple]:
    """The rows Spark's own Parquet reader sees in the same folder."""
    return sorted((r.id, str(r.date), r.region) for r in spark.read.parquet(url).collect())


def rows(*tables: pa.Table) -> list[tuple]:
    return sorted((r["id"], r["date"], r["region"]) for t in tables for r in t.to_pylist())


def root_files(keys: list[str], root: str) -> list[str]:
    """Visible data files right below ``root`` (what reads skip beside partitions)."""
    below = [k[len(root):] for k in keys if k.startswith(root)]
    return [k for k in below if "/" not in k and not k.startswith(("_", "."))]


def append_both_ways(spark, url: str, spark_url: str, storage_options: dict,
                     spark_options: dict) -> None:
    """The old table, partitioned; then an append without partition_by through the Python
    API and one through Spark's writer."""
    write_table(url, OLD, partition_by=["date", "region"], storage_options=storage_options)
    assert len(ours(url, storage_options)) == 3  # positive control: the old rows read back
    result = write_table(url, NEW, storage_options=storage_options)  # no partition_by
    assert sorted(result.partitions) == ["date=2026-01-02/region=us/",
                                         "date=2026-01-03/region=eu/"]
    assert result.metrics["list_requests"] >= 1
    df = spark.createDataFrame(MORE, "id long, date string, region string")
    df.write.format("listing").options(**spark_options).mode("append").save(url)
    want = rows(OLD, NEW) + MORE
    assert ours(url, storage_options) == sorted(want)
    assert theirs(spark, spark_url) == sorted(want)


def test_appends_without_partition_by_land_in_the_partitions_local(spark, tmp_path):
    root = str(tmp_path / "t")
    append_both_ways(spark, root, root, {}, {})
    assert root_files([str(p) for p in _walk(root)], root + "/") == []


def test_appends_without_partition_by_land_in_the_partitions_s3(spark, s3_server, s3_bucket):
    hadoop = spark._jsc.hadoopConfiguration()
    for key, value in s3a_bucket_conf(s3_bucket, s3_server).items():
        hadoop.set(key, value)
    storage = s3_server.storage_options
    spark_options = {"storage.endpoint_url": s3_server.endpoint_url,
                     "storage.key": "testing", "storage.secret": "testing"}
    append_both_ways(spark, f"s3://{s3_bucket}/t", f"s3a://{s3_bucket}/t", storage,
                     spark_options)
    keys = [o["Key"] for o in s3_server.client().list_objects_v2(
        Bucket=s3_bucket).get("Contents", [])]
    assert root_files(keys, "t/") == []


def _walk(root: str) -> list[str]:
    return [os.path.join(d, f) for d, _, files in os.walk(root) for f in files]


def test_a_layout_that_reads_would_not_see_is_refused(tmp_path):
    url = str(tmp_path / "t")
    write_table(url, OLD, partition_by=["date", "region"])
    before = sorted(_walk(url))
    with pytest.raises(OptionError, match=r"partition_by=\['region'\].*\['date', 'region'\]"):
        write_table(url, NEW, partition_by=["region"])
    with pytest.raises(OptionError, match=r"partitioned by \['date', 'region'\].*'region'"):
        write_table(url, NEW.drop_columns(["region"]))
    with pytest.raises(OptionError, match=r"partition_by=\['date'\].*\['date', 'region'\]"):
        write_table(url, NEW, partition_by=["date"], mode="overwrite",
                    partition_overwrite_mode="dynamic")
    assert sorted(_walk(url)) == before  # nothing written
    write_table(url, NEW, partition_by=["date", "region"])  # positive control: agreeing
    assert ours(url) == rows(OLD, NEW)

    flat = str(tmp_path / "flat")
    write_table(flat, OLD)
    with pytest.raises(OptionError, match=r"not partitioned.*partition_by=\['date'\]"):
        write_table(flat, NEW, partition_by=["date"])
    write_table(flat, NEW)  # positive control: an unpartitioned append
    got = ListingTable.open(flat).scan().to_arrow().to_pylist()
    assert sorted((r["id"], r["date"], r["region"]) for r in got) == rows(OLD, NEW)

    mixed = tmp_path / "mixed"  # two layouts reads cannot reconcile
    write_table(str(mixed / "a"), OLD, partition_by=["date"])
    write_table(str(mixed / "b"), OLD, partition_by=["region"])
    (mixed / "a").rename(mixed / "x=1")
    with pytest.raises(OptionError, match="cannot be determined"):
        write_table(str(mixed), NEW)


def test_overwrites_keep_the_tables_partitions(tmp_path):
    url = str(tmp_path / "t")
    write_table(url, OLD, partition_by=["date", "region"])
    # dynamic: only the partitions written are replaced (no partition_by: the table's)
    write_table(url, NEW, mode="overwrite", partition_overwrite_mode="dynamic")
    assert ours(url) == rows(OLD, NEW)
    # static, no partition_by: the whole table replaced, still partitioned as it was
    result = write_table(url, NEW, mode="overwrite")
    assert ours(url) == rows(NEW) and result.partitions
    assert ListingTable.open(url).partition_names == ["date", "region"]
    # static with another layout: every old file goes, so the new layout is the table's
    write_table(url, OLD, partition_by=["region"], mode="overwrite")
    assert ListingTable.open(url).partition_names == ["region"]
    assert ours(url) == rows(OLD)
