"""The service-shaped lake builders of ``listing.testing.datasets``: each writes the keys
its service writes, and its Dataset's rows are what the objects hold."""

from __future__ import annotations

import gzip
import io
import json
import re

import pyarrow as pa
import pyarrow.json as pajson
import pytest

from listing.table import ListingTable
from listing.testing import datasets
from listing.testing.datasets import fast_writer


def _keys(s3_server, bucket: str, prefix: str) -> set[str]:
    found = s3_server.client().list_objects_v2(Bucket=bucket, Prefix=prefix)
    return {o["Key"] for o in found.get("Contents", [])}


def _relative(ds: datasets.Dataset, paths) -> set[str]:
    return {p.removeprefix(ds.root + "/") for p in paths}


def _data(ds: datasets.Dataset, table: pa.Table, sort_by: str) -> tuple[pa.Table, pa.Table]:
    expected = ds.to_table().select(ds.schema.names).sort_by(sort_by)
    return table.select(ds.schema.names).sort_by(sort_by), expected


FIREHOSE_NAME = (r"(\d{4})/(\d{2})/(\d{2})/(\d{2})/events-1-(\d{4})-(\d{2})-(\d{2})-(\d{2})"
                 r"-\d{2}-\d{2}-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}"
                 r"-[0-9a-f]{12}")


@pytest.mark.parametrize("compression,suffix", [("gzip", ".gz"), ("none", ""),
                                                ("snappy", ".snappy")])
def test_firehose_names_objects_as_firehose_and_rows_read_back(s3_server, s3_bucket,
                                                               compression, suffix):
    ds = datasets.firehose(f"s3://{s3_bucket}/fh", s3_server.storage_options,
                           put=fast_writer(s3_server), hours=3, objects_per_hour=2,
                           rows=4, compression=compression)
    keys = _keys(s3_server, s3_bucket, "fh/")
    assert {f"s3://{s3_bucket}/{k}" for k in keys} == ds.paths and len(keys) == 6
    for key in _relative(ds, ds.paths):
        m = re.fullmatch(FIREHOSE_NAME + re.escape(suffix), key)
        assert m, key
        assert m.groups()[:4] == m.groups()[4:]  # the folder's hour is the name's
    assert ds.layout == "{date:yyyy/MM/dd}/{hour:HH}"
    assert {(f.partition_values["date"].isoformat(), f.partition_values["hour"])
            for f in ds.files} == {("2026-11-27", 12), ("2026-11-27", 13), ("2026-11-27", 14)}
    table = ListingTable.open(ds.root, format="json", schema=ds.schema,
                              storage_options=s3_server.storage_options).to_arrow()
    got, expected = _data(ds, table, "id")
    assert got.equals(expected) and got.num_rows == 24


def test_cloudtrail_names_logs_and_digests_and_records_read_back(s3_server, s3_bucket):
    ds = datasets.cloudtrail(f"s3://{s3_bucket}/ct", s3_server.storage_options,
                             put=fast_writer(s3_server), regions=("us-east-1", "eu-west-1"),
                             days=2, objects_per_day=2, records=3)
    keys = {f"s3://{s3_bucket}/{k}" for k in _keys(s3_server, s3_bucket, "ct/")}
    assert keys == ds.paths | set(ds.other_files)
    assert len(ds.files) == 8 and len(ds.other_files) == 4
    log = (r"AWSLogs/123456789012/CloudTrail/(us-east-1|eu-west-1)/2026/11/(\d{2})/"
           r"123456789012_CloudTrail_\1_202611\2T\d{4}Z_[A-Z0-9]{16}\.json\.gz")
    digest = (r"AWSLogs/123456789012/CloudTrail-Digest/(us-east-1|eu-west-1)/2026/11/(\d{2})/"
              r"123456789012_CloudTrail-Digest_\1_trail_\1_202611\2T235900Z\.json\.gz")
    assert all(re.fullmatch(log, k) for k in _relative(ds, ds.paths))
    assert all(re.fullmatch(digest, k) for k in _relative(ds, ds.other_files))
    # one JSON document a file on one line: {"Records": [...]}
    fs = ListingTable.open(ds.root + "/AWSLogs/123456789012/CloudTrail", format="json",
                           schema=ds.schema, storage_options=s3_server.storage_options)
    raw = gzip.decompress(fs.storage.filesystem().cat(ds.files[0].path))
    assert raw.count(b"\n") == 0 and list(json.loads(raw)) == ["Records"]
    table = fs.to_arrow()
    assert table.num_rows == 8  # a row a file; its events in Records
    expected = ds.to_table().select(ds.schema.names)

    def by_first_event(t: pa.Table) -> list:
        return sorted(t["Records"].to_pylist(), key=lambda records: records[0]["eventID"])

    assert by_first_event(table) == by_first_event(expected)
    regions = {r["awsRegion"] for f in ds.files for r in f.table["Records"][0].as_py()}
    assert regions == {"us-east-1", "eu-west-1"}


def test_alb_logs_names_objects_as_elb_and_rows_read_back(s3_server, s3_bucket):
    ds = datasets.alb_logs(f"s3://{s3_bucket}/alb", s3_server.storage_options,
                           put=fast_writer(s3_server), days=2, objects_per_day=2, rows=3)
    keys = {f"s3://{s3_bucket}/{k}" for k in _keys(s3_server, s3_bucket, "alb/")}
    assert keys == ds.paths and len(keys) == 4
    assert ds.root == f"s3://{s3_bucket}/alb/AWSLogs/123456789012/elasticloadbalancing/us-east-1"
    name = (r"2026/11/(\d{2})/123456789012_elasticloadbalancing_us-east-1_app\.web\."
            r"50dc6c495c0c9188_202611\1T\d{4}Z_10\.0\.\d+\.\d+_[a-z0-9]{8}\.log\.gz")
    assert all(re.fullmatch(name, k) for k in _relative(ds, ds.paths))
    table = ListingTable.open(ds.root, format="csv", schema=ds.schema,
                              storage_options=s3_server.storage_options,
                              **ds.read_options).to_arrow()
    got, expected = _data(ds, table, "time")
    assert got.equals(expected) and got.num_rows == 12
    assert any(" " in r for r in got["request"].to_pylist())  # quoted fields kept whole


def test_kafka_connect_writes_dt_hr_folders_read_as_hive(s3_server, s3_bucket):
    ds = datasets.kafka_connect(f"s3://{s3_bucket}/kc", s3_server.storage_options,
                                put=fast_writer(s3_server), hours=2, kafka_partitions=2)
    assert ds.root == f"s3://{s3_bucket}/kc/topics/events"
    assert _relative(ds, ds.paths) == {
        "dt=2026-11-27/hr=12/events+0+0000000000.json.gz",
        "dt=2026-11-27/hr=12/events+1+0000000000.json.gz",
        "dt=2026-11-27/hr=13/events+0+0000000003.json.gz",
        "dt=2026-11-27/hr=13/events+1+0000000003.json.gz"}
    table = ListingTable.open(ds.root, format="json", schema=ds.schema,
                              storage_options=s3_server.storage_options).to_arrow()
    assert table.sort_by("id").equals(ds.to_table().sort_by("id"))  # dt date, hr int


def test_builders_are_deterministic_by_seed(tmp_path):
    one = datasets.firehose(str(tmp_path / "a"), seed=3)
    two = datasets.firehose(str(tmp_path / "b"), seed=3)
    other = datasets.firehose(str(tmp_path / "c"), seed=4)
    names = [{p.rsplit("/", 1)[1] for p in d.paths} for d in (one, two, other)]
    assert names[0] == names[1] != names[2]
    assert one.to_table().equals(two.to_table())
    data = gzip.decompress((tmp_path / one.files[0].path.removeprefix(str(tmp_path) + "/"))
                           .read_bytes())
    first = pajson.read_json(io.BytesIO(data), parse_options=pajson.ParseOptions(
        explicit_schema=one.schema))
    assert first.equals(one.files[0].table)
