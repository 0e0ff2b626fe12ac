"""Bad input gets an error naming the URL, path, column or value at fault."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from listing import ListingTable
from listing.errors import (
    FilterError,
    ListingError,
    OptionError,
    PartitionLayoutError,
    PartitionValueError,
    TableNotFoundError,
)
from listing.testing import datasets

SCHEMA = pa.schema([("id", pa.int64())])


def put(server, bucket, *keys, payload=None):
    data = payload if payload is not None else datasets.encode(pa.table({"id": [1]}), "parquet")
    server.put_objects_fast(bucket, {k: data for k in keys})


def test_missing_bucket_is_named(s3_server):
    with s3_server.log.capture() as cap, pytest.raises(TableNotFoundError) as err:
        ListingTable.open("s3://no-such-bucket/events/", storage_options=s3_server.storage_options)
    assert str(err.value).startswith("bucket 'no-such-bucket' does not exist (listing "
                                     "s3://no-such-bucket/events/)")
    assert "empty" not in str(err.value) and cap.count("LIST") == 1  # its own error, one LIST


def test_an_empty_bucket_is_named_empty(s3_server, s3_bucket):
    url = f"s3://{s3_bucket}/nothing/here/"
    with s3_server.log.capture(s3_bucket) as cap, pytest.raises(TableNotFoundError) as err:
        ListingTable.open(url, storage_options=s3_server.storage_options)
    assert str(err.value) == f"no objects under {url}: bucket {s3_bucket!r} is empty"
    assert cap.count("LIST") == 2  # the table's prefix, then the bucket's first page


def test_an_empty_prefix_in_a_bucket_with_other_keys_says_so(s3_server, s3_bucket):
    """One LIST more on this error path only: the open of a table sends the one it did."""
    put(s3_server, s3_bucket, "events/date=2026-01-01/a.parquet")
    url = f"s3://{s3_bucket}/event/"  # a prefix of a name is no folder of it
    with s3_server.log.capture(s3_bucket) as cap, pytest.raises(TableNotFoundError) as err:
        ListingTable.open(url, storage_options=s3_server.storage_options)
    assert str(err.value) == (f"no objects under {url}: the prefix holds no objects "
                              f"(bucket {s3_bucket!r} is not empty)")
    assert cap.count("LIST") == 2
    with s3_server.log.capture(s3_bucket) as cap:  # the control: a table there, one LIST
        table = ListingTable.open(f"s3://{s3_bucket}/events/",
                                  storage_options=s3_server.storage_options)
    assert table.partition_cols[0][0] == "date" and cap.count("LIST") == 1


def test_no_data_files_and_no_schema(s3_server, s3_bucket):
    put(s3_server, s3_bucket, "t/_SUCCESS", "t/readme.txt", payload=b"")
    with pytest.raises(TableNotFoundError, match=r"no parquet files under s3://.*no schema"):
        ListingTable.open(f"s3://{s3_bucket}/t", storage_options=s3_server.storage_options)
    table = ListingTable.open(f"s3://{s3_bucket}/t", storage_options=s3_server.storage_options,
                              schema=SCHEMA)
    # readme.txt is a (empty) data file, as Spark lists it: no rows, never a read
    plan = table.scan()
    assert [f.path.rsplit("/", 1)[1] for f in plan.files] == ["readme.txt"]
    assert plan.to_arrow().num_rows == 0


def test_mixed_kv_and_plain_directories_name_both_paths(s3_server, s3_bucket):
    put(s3_server, s3_bucket, "t/date=2026-01-01/a.parquet", "t/plain/b.parquet")
    with pytest.raises(PartitionLayoutError) as err:
        ListingTable.open(f"s3://{s3_bucket}/t", storage_options=s3_server.storage_options)
    assert "date=2026-01-01/a.parquet" in str(err.value) and "plain/b.parquet" in str(err.value)


def test_different_partition_names_name_both_paths(s3_server, s3_bucket):
    put(s3_server, s3_bucket, "t/date=2026-01-01/a.parquet", "t/day=2026-01-02/b.parquet")
    with pytest.raises(PartitionLayoutError) as err:
        ListingTable.open(f"s3://{s3_bucket}/t", storage_options=s3_server.storage_options)
    assert "date=2026-01-01" in str(err.value) and "day=2026-01-02" in str(err.value)


def test_layout_drift_beyond_the_sample_is_caught_at_scan(s3_server, s3_bucket):
    keys = [f"t/date=2026-01-{d:02d}/part-{i}.parquet" for d in range(1, 29) for i in range(40)]
    put(s3_server, s3_bucket, *keys, "t/zzz/late.parquet")
    table = ListingTable.open(f"s3://{s3_bucket}/t", storage_options=s3_server.storage_options,
                              schema=SCHEMA)
    with pytest.raises(PartitionLayoutError, match="zzz/late.parquet"):
        table.scan()


def test_declared_partition_names_must_match_the_directories(s3_server, s3_bucket):
    put(s3_server, s3_bucket, "t/date=2026-01-01/a.parquet")
    with pytest.raises(PartitionLayoutError, match=r"\['day'\].*date=2026-01-01"):
        ListingTable.open(f"s3://{s3_bucket}/t", storage_options=s3_server.storage_options,
                          partition_cols=[("day", "date")])
    # names differing only in case: the declared spelling wins, as in Spark (SPARK-26990)
    # under its default caseSensitive=false; refused when the table is case-sensitive
    table = ListingTable.open(f"s3://{s3_bucket}/t", storage_options=s3_server.storage_options,
                              partition_cols=[("DATE", "date")])
    assert table.partition_cols[0][0] == "DATE"
    with pytest.raises(PartitionLayoutError, match="differ in case"):
        ListingTable.open(f"s3://{s3_bucket}/t", storage_options=s3_server.storage_options,
                          partition_cols=[("DATE", "date")], case_sensitive=True)


def test_partition_value_not_of_declared_type(s3_server, s3_bucket):
    put(s3_server, s3_bucket, "t/hour=07/a.parquet", "t/hour=x7/b.parquet")
    with pytest.raises(PartitionValueError) as err:
        ListingTable.open(f"s3://{s3_bucket}/t", storage_options=s3_server.storage_options,
                          partition_cols=[("hour", "int")])
    assert "'x7'" in str(err.value) and "'hour'" in str(err.value) and "hour=x7" in str(err.value)


def test_filter_errors_name_column_and_position(tmp_path):
    pq.write_table(pa.table({"id": [1]}), tmp_path / "a.parquet")
    table = ListingTable.open(str(tmp_path))
    with pytest.raises(FilterError, match="unknown column 'nope'"):
        table.scan(where="nope = 1")
    with pytest.raises(FilterError, match=r"column \d+"):
        table.scan(where="id = = 1")
    with pytest.raises(OptionError, match="unknown column 'nope' in projection"):
        table.scan(columns=["nope"])


@pytest.mark.parametrize("url", ["s3://", "s3:///prefix", ""])
def test_malformed_url(url):
    with pytest.raises(ListingError, match="URL"):
        ListingTable.open(url)


def test_unknown_format_and_option_are_named(tmp_path):
    pq.write_table(pa.table({"id": [1]}), tmp_path / "a.parquet")
    with pytest.raises(OptionError, match="unknown format 'parkay'"):
        ListingTable.open(str(tmp_path), format="parkay")
    with pytest.raises(OptionError, match="delimitr"):
        ListingTable.open(str(tmp_path), format="parquet", delimitr=",")
    with pytest.raises(OptionError, match="max_partition_bytes"):
        ListingTable.open(str(tmp_path), max_partition_bytes="lots")
