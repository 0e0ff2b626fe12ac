"""Writes with a ``layout`` template (docs/layouts.md, docs/writes.md): a Firehose-shaped
table written through the Python API lands in ``yyyy/MM/dd/HH/`` folders, reads back through
the layout, and a dynamic overwrite replaces only the hour folders it writes."""

from __future__ import annotations

import datetime as dt
import re

import pyarrow as pa
import pytest

from listing import ListingTable
from listing.errors import OptionError, PartitionValueError
from listing.write import write_table

FIREHOSE = "{date:yyyy/MM/dd}/{hour:HH}"
DAY = dt.date(2026, 11, 27)


def _rows(hours: tuple[int, ...], tag: str) -> pa.Table:
    ids = [f"{tag}-{h}-{i}" for h in hours for i in range(3)]
    return pa.table({"id": ids, "n": list(range(len(ids))),
                     "date": pa.array([DAY] * len(ids), pa.date32()),
                     "hour": pa.array([h for h in hours for _ in range(3)], pa.int32())})


def _read(url: str, storage: dict) -> list[tuple]:
    table = ListingTable.open(url, format="parquet", layout=FIREHOSE,
                              storage_options=storage)
    got = table.scan().to_arrow()
    return sorted(zip(*(got.column(c).to_pylist() for c in ("id", "n", "date", "hour")),
                      strict=True))


def _expected(*tables: pa.Table) -> list[tuple]:
    return sorted(t for table in tables
                  for t in zip(*(table.column(c).to_pylist()
                                 for c in ("id", "n", "date", "hour")), strict=True))


def test_a_firehose_layout_write_reads_back_and_overwrites_one_hour(s3_server):
    with s3_server.temporary_buckets("layout-write") as (bucket,):
        url, storage = f"s3://{bucket}/root/", s3_server.storage_options
        first = _rows((12, 13, 14), "a")
        write_table(url, first, layout=FIREHOSE, storage_options=storage)
        keys = [o["Key"] for o in s3_server.client().list_objects_v2(
            Bucket=bucket, Prefix="root/")["Contents"]]
        data = sorted(k for k in keys if k.endswith(".parquet"))
        assert len(data) == 3
        for key, hour in zip(data, (12, 13, 14), strict=True):
            assert re.fullmatch(rf"root/2026/11/27/{hour}/part-\d{{5}}-\w+-c000\.parquet",
                                key), key
        assert _read(url, storage) == _expected(first)

        # dynamic: hour 13 replaced, 12 and 14 kept
        second = _rows((13,), "b")
        write_table(url, second, layout=FIREHOSE, mode="overwrite",
                    partition_overwrite_mode="dynamic", storage_options=storage)
        kept = first.filter(pa.compute.not_equal(first.column("hour"), 13))
        assert kept.num_rows == 6  # positive control: the other hours are there to keep
        assert _read(url, storage) == _expected(kept, second)


def test_a_layout_with_a_different_partition_by_is_refused_naming_both(s3_server, s3_bucket):
    with pytest.raises(OptionError, match=r"partition_by=\['hour'\].*option layout"):
        write_table(f"s3://{s3_bucket}/layout-conflict/", _rows((13,), "a"),
                    layout=FIREHOSE, partition_by=["hour"],
                    storage_options=s3_server.storage_options)


def test_a_value_the_template_cannot_spell_back_is_refused(s3_server, s3_bucket):
    rows = _rows((13,), "a").set_column(3, "hour", pa.array([25] * 3, pa.int32()))
    with pytest.raises(PartitionValueError, match=r"cannot be written with the layout"):
        write_table(f"s3://{s3_bucket}/layout-hour-25/", rows, layout=FIREHOSE,
                    storage_options=s3_server.storage_options)


def test_a_layout_append_to_a_hive_table_is_refused_and_a_static_overwrite_is_not(
        s3_server, s3_bucket):
    url, storage = f"s3://{s3_bucket}/hive/", s3_server.storage_options
    write_table(url, _rows((13,), "a"), partition_by=["date", "hour"], storage_options=storage)
    with pytest.raises(OptionError, match=r"option layout=.*does not describe.*date="):
        write_table(url, _rows((14,), "b"), layout=FIREHOSE, storage_options=storage)
    second = _rows((14,), "b")  # positive control: a static overwrite replaces the table
    write_table(url, second, layout=FIREHOSE, mode="overwrite", storage_options=storage)
    assert _read(url, storage) == _expected(second)
