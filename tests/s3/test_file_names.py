"""Names as services write them, on S3: a given format reads every visible object of a
table, decoded by its suffix; what it cannot decode is an error naming the object."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from listing.errors import CorruptFileError, FileReadError
from listing.table import ListingTable
from listing.testing import datasets
from listing.testing.datasets import fast_writer

SCHEMA = pa.schema([("a", pa.int64())])


def _put(s3_server, bucket: str, objects: dict[str, bytes]) -> None:
    s3_server.put_objects_fast(bucket, objects)


def _parquet(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


@pytest.mark.parametrize("compression", ["gzip", "none", "snappy"])
def test_a_firehose_prefix_is_read_whole_with_its_side_files_skipped(
        s3_server, s3_bucket, compression):
    ds = datasets.firehose(f"s3://{s3_bucket}/fh", s3_server.storage_options,
                           put=fast_writer(s3_server), hours=2, objects_per_hour=3,
                           compression=compression)
    side = datasets.add_hidden_files(ds.root, s3_server.storage_options,
                                     put=fast_writer(s3_server))
    table = ListingTable.open(ds.root, format="json", schema=ds.schema,
                              storage_options=s3_server.storage_options)
    with s3_server.log.capture(s3_bucket) as capture:
        plan = table.scan()
    got = plan.to_arrow()
    assert {f.path for f in plan.files} == ds.paths  # every object, no side file
    assert got.sort_by("id").equals(ds.to_table().select(ds.schema.names).sort_by("id"))
    assert plan.metrics.get("files_skipped_hidden") == len(side) == 6
    assert plan.metrics.get("files_skipped_other") == 0
    assert capture.count("LIST") == 1  # one flat listing of the prefix, as before


def test_path_glob_filter_narrows_a_firehose_prefix_by_suffix(s3_server, s3_bucket):
    ds = datasets.firehose(f"s3://{s3_bucket}/fh", s3_server.storage_options,
                           put=fast_writer(s3_server), hours=1, objects_per_hour=2)
    _put(s3_server, s3_bucket, {"fh/2026/11/27/12/manifest.txt": b"not json\n"})
    whole = ListingTable.open(ds.root, format="json", schema=ds.schema,
                              storage_options=s3_server.storage_options)
    with pytest.raises(CorruptFileError, match=r"manifest\.txt"):  # positive control
        whole.to_arrow()
    kept = ListingTable.open(ds.root, format="json", schema=ds.schema, path_glob_filter="*.gz",
                             storage_options=s3_server.storage_options)
    plan = kept.scan()
    assert {f.path for f in plan.files} == ds.paths
    assert plan.metrics.get("files_skipped_other") == 1
    assert plan.to_arrow().num_rows == ds.num_rows


def test_a_stray_file_in_a_parquet_table_is_an_error_naming_it(s3_server, s3_bucket):
    # Spark reads data.txt as Parquet and fails; so do we, naming it, never dropping it
    _put(s3_server, s3_bucket, {"t/part-0.parquet": _parquet(pa.table({"a": [1, 2]})),
                                "t/data.txt": b"hello\n", "t/_SUCCESS": b""})
    bad = r"t/data\.txt: not a readable Parquet file"
    with pytest.raises(CorruptFileError, match=bad):  # the first file is sampled (as Spark)
        ListingTable.open(f"s3://{s3_bucket}/t", storage_options=s3_server.storage_options)
    table = ListingTable.open(f"s3://{s3_bucket}/t", schema=SCHEMA,
                              storage_options=s3_server.storage_options)
    with pytest.raises(CorruptFileError, match=bad):
        table.to_arrow()


@pytest.mark.parametrize("name,data,problem", [
    ("x.zip", b"PK\x03\x04zipped", r"x\.zip: compressed as zip .*path_glob_filter"),
    ("x.snappy", b"\xff\x06\x00\x00sNaPpY\x00\x05\x00\x00abcde",
     r"x\.snappy: compressed in the snappy framing format"),
    ("x.snappy", b"\x00\x00\x00\x10\x00\x00\x00\x04abcd", r"x\.snappy: not a Hadoop snappy"),
    ("x.deflate", b"\x78\x9c\x01\x02", r"x\.deflate: .*deflate"),
])
def test_a_suffix_not_decoded_is_an_error_naming_file_and_codec(s3_server, s3_bucket, name,
                                                                data, problem):
    _put(s3_server, s3_bucket, {f"j/{name}": data, "j/ok.json": b'{"a": 1}\n'})
    table = ListingTable.open(f"s3://{s3_bucket}/j", format="json", schema=SCHEMA,
                              storage_options=s3_server.storage_options)
    with pytest.raises(FileReadError, match=problem):
        table.to_arrow()
    narrowed = ListingTable.open(f"s3://{s3_bucket}/j", format="json", schema=SCHEMA,
                                 path_glob_filter="*.json",
                                 storage_options=s3_server.storage_options)
    assert narrowed.to_arrow().to_pylist() == [{"a": 1}]
