"""The S3 test server and dataset builders, checked over real HTTP (no mocks)."""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import io
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.json as pajson
import pyarrow.parquet as pq
import pytest
import s3fs
from botocore.config import Config

from listing.hive import DEFAULT_PARTITION_NAME, unescape_path_name
from listing.testing import datasets
from listing.testing.datasets import add_hidden_files, fast_writer
from listing.testing.s3 import RequestKind, S3Server, classify


def _fs(storage_options: dict[str, Any]) -> s3fs.S3FileSystem:
    """An s3fs instance with no shared instance or listing cache, so every call is real."""
    return s3fs.S3FileSystem(**storage_options, skip_instance_cache=True, use_listings_cache=False)


def _listed_urls(fs: s3fs.S3FileSystem, root: str) -> set[str]:
    return {f"s3://{p}" for p in fs.find(root)}


# --- request log -----------------------------------------------------------------------


def test_log_counts_paginated_list_head_get_exactly(s3_server: S3Server, s3_bucket: str):
    s3_server.put_objects_fast(s3_bucket, {f"k/{i:05d}": b"v" for i in range(2500)})
    client = s3_server.client()
    with s3_server.log.capture(bucket=s3_bucket) as cap:
        pages = list(client.get_paginator("list_objects_v2").paginate(Bucket=s3_bucket))
    assert sum(len(p["Contents"]) for p in pages) == 2500
    assert cap.counts() == Counter({"LIST": 3})
    assert cap.count("LIST") == 3
    tokens = [e.query.get("continuation-token") for e in cap.entries()]
    assert tokens[0] is None and all(tokens[1:])

    with s3_server.log.capture() as cap:
        client.head_object(Bucket=s3_bucket, Key="k/00001")
    assert cap.counts() == Counter({"HEAD": 1})

    with s3_server.log.capture() as cap:
        assert client.get_object(Bucket=s3_bucket, Key="k/00002")["Body"].read() == b"v"
    [entry] = cap.entries()
    assert (entry.method, entry.bucket, entry.key, entry.kind) == (
        "GET", s3_bucket, "k/00002", RequestKind.GET,
    )  # fmt: skip
    assert entry.status == 200


def test_log_classifies_every_kind(s3_server: S3Server, s3_bucket: str):
    client = s3_server.client()
    with s3_server.log.capture() as cap:
        client.put_object(Bucket=s3_bucket, Key="a b/c%d.txt", Body=b"x")  # PUT
        client.list_objects(Bucket=s3_bucket, Prefix="a b/", Delimiter="/")  # LIST (v1)
        client.list_objects_v2(Bucket=s3_bucket, StartAfter="a", MaxKeys=5)  # LIST
        client.get_bucket_location(Bucket=s3_bucket)  # OTHER
        client.get_bucket_versioning(Bucket=s3_bucket)  # OTHER
        client.get_bucket_acl(Bucket=s3_bucket)  # OTHER
        client.get_object_tagging(Bucket=s3_bucket, Key="a b/c%d.txt")  # OTHER
        client.list_buckets()  # OTHER, no bucket
        client.head_bucket(Bucket=s3_bucket)  # HEAD
        client.delete_objects(Bucket=s3_bucket, Delete={"Objects": [{"Key": "zz"}]})  # POST
        client.delete_object(Bucket=s3_bucket, Key="a b/c%d.txt")  # DELETE
    kinds = [e.kind for e in cap.entries()]
    assert kinds == [
        "PUT", "LIST", "LIST", "OTHER", "OTHER", "OTHER", "OTHER", "OTHER", "HEAD", "POST",
        "DELETE",
    ]  # fmt: skip
    put, list_v1 = cap.entries()[:2]
    assert put.key == "a b/c%d.txt"  # decoded exactly once
    assert list_v1.query["prefix"] == "a b/" and list_v1.query["delimiter"] == "/"
    assert cap.entries()[7].bucket is None
    assert cap.entries()[3].query == {"location": ""}


def test_classify_table():
    assert classify("GET", "b", None, {"list-type": "2", "prefix": "p/"}) == "LIST"
    assert classify("GET", "b", None, {"versions": ""}) == "OTHER"
    assert classify("GET", "b", None, {"uploads": ""}) == "OTHER"
    assert classify("GET", "b", "k", {"x-id": "GetObject", "partNumber": "1"}) == "GET"
    assert classify("GET", "b", "k", {"response-content-type": "a/b"}) == "GET"
    assert classify("GET", "b", "k", {"uploadId": "u"}) == "OTHER"
    assert classify("OPTIONS", "b", "k", {}) == "OTHER"


def test_capture_windows_are_scoped(s3_server: S3Server, s3_bucket: str):
    client = s3_server.client()
    other = s3_server.create_bucket(f"{s3_bucket[:40]}-other")
    try:
        client.list_objects_v2(Bucket=s3_bucket)  # before any window
        with s3_server.log.capture() as everything:
            with s3_server.log.capture(bucket=s3_bucket) as mine:
                client.list_objects_v2(Bucket=s3_bucket)
                client.list_objects_v2(Bucket=other)
                s3_server.log.clear()  # must not disturb open captures
                client.head_bucket(Bucket=s3_bucket)
            client.list_objects_v2(Bucket=s3_bucket)  # after the inner window
        client.list_objects_v2(Bucket=s3_bucket)  # after both windows
        assert mine.counts() == Counter({"LIST": 1, "HEAD": 1})
        assert everything.counts() == Counter({"LIST": 3, "HEAD": 1})
        assert everything.count("GET") == 0
        # the global log only kept what came after clear()
        assert s3_server.log.counts(bucket=s3_bucket) == Counter({"HEAD": 1, "LIST": 2})
        assert s3_server.log.counts(bucket=other) == Counter()
    finally:
        s3_server.drop_bucket(other)


def test_virtual_host_style_requests_are_attributed(s3_server: S3Server, s3_bucket: str):
    # Virtual-host style needs a bucket.s3.amazonaws.com Host header; sending through the
    # server as an HTTP proxy keeps the request signed and local.
    s3_server.put_objects_fast(s3_bucket, {"dir/file.txt": b"hello"})
    client = boto3.client(
        "s3", endpoint_url="http://s3.amazonaws.com", region_name="us-east-1",
        aws_access_key_id="testing", aws_secret_access_key="testing",
        config=Config(proxies={"http": s3_server.endpoint_url}, s3={"addressing_style": "virtual"}),
    )  # fmt: skip
    with s3_server.log.capture() as cap:
        assert client.get_object(Bucket=s3_bucket, Key="dir/file.txt")["Body"].read() == b"hello"
        assert client.list_objects_v2(Bucket=s3_bucket, Prefix="dir/")["KeyCount"] == 1
    got = [(e.bucket, e.key, e.kind, e.status) for e in cap.entries()]
    assert got == [(s3_bucket, "dir/file.txt", "GET", 200), (s3_bucket, None, "LIST", 200)]


def test_storage_options_never_reach_aws_or_imds(
    s3_server: S3Server, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
):
    for var in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_DEFAULT_REGION",
        "AWS_REGION",
        "AWS_ENDPOINT_URL",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    # Any credential or region lookup via IMDS would land on our server and be logged.
    monkeypatch.setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", s3_server.endpoint_url)
    s3_server.put_objects_fast(s3_bucket, {"x": b"1"})
    with s3_server.log.capture() as cap:
        fs = _fs(s3_server.storage_options)
        assert fs.ls(s3_bucket) == [f"{s3_bucket}/x"]
        assert fs.cat(f"{s3_bucket}/x") == b"1"
        s3_server.client().head_object(Bucket=s3_bucket, Key="x")
    assert all(e.bucket == s3_bucket for e in cap.entries()), cap.entries()
    assert not any(e.path.startswith("/latest") for e in s3_server.log.entries())


def test_repr_and_options_hold_only_dummy_credentials(s3_server: S3Server):
    assert repr(s3_server) == f"S3Server({s3_server.endpoint_url})"
    opts = s3_server.storage_options
    assert opts["key"] == opts["secret"] == "testing"
    opts["key"] = "changed"
    assert s3_server.storage_options["key"] == "testing"  # a fresh dict each time


# --- fast put --------------------------------------------------------------------------


def test_put_objects_fast_is_visible_over_http(s3_server: S3Server, s3_bucket: str):
    items = {f"p/{i:04d}.bin": f"value-{i}".encode() for i in range(3000)}
    s3_server.put_objects_fast(s3_bucket, items)
    fs = _fs(s3_server.storage_options)
    with s3_server.log.capture(bucket=s3_bucket) as cap:
        listed = fs.ls(f"{s3_bucket}/p", detail=True)
    assert cap.counts() == Counter({"LIST": 3})
    assert {e["name"] for e in listed} == {f"{s3_bucket}/{k}" for k in items}
    info = {e["name"]: e for e in listed}[f"{s3_bucket}/p/0042.bin"]
    assert info["size"] == len(b"value-42")
    assert info["ETag"].strip('"') == hashlib.md5(b"value-42").hexdigest()
    assert fs.cat(f"{s3_bucket}/p/0042.bin") == b"value-42"


def test_put_objects_fast_needs_an_existing_bucket(s3_server: S3Server):
    with pytest.raises(KeyError, match="no-such-bucket"):
        s3_server.put_objects_fast("no-such-bucket", {"k": b""})


def test_second_server_and_reset_in_a_subprocess():
    # reset() wipes moto's process-global S3 state, so exercise it away from the session
    # server other tests share.
    code = textwrap.dedent(
        """
        from listing.testing.s3 import S3Server
        with S3Server() as a, S3Server() as b:
            assert a.port != b.port
            a.create_bucket("bkt-reset")
            a.put_objects_fast("bkt-reset", {"k": b"v"})
            # one process-global backend: b sees what a wrote
            assert b.client().get_object(Bucket="bkt-reset", Key="k")["Body"].read() == b"v"
            a.reset()
            assert a.client().list_buckets()["Buckets"] == []
            a.create_bucket("bkt-reset")  # the name is free again
        print("ok")
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


# --- dataset builders ------------------------------------------------------------------


def test_daily_writes_exactly_what_it_reports(s3_server: S3Server, s3_bucket: str):
    root = f"s3://{s3_bucket}/daily"
    ds = datasets.daily(root, s3_server.storage_options, days=5, files_per_partition=2)
    assert ds.partition_cols == [("date", pa.date32()), ("region", pa.string())]
    assert len(ds.files) == 5 * 2 * 2 and ds.num_rows == 20 * 3
    first = ds.files[0]
    assert first.path == f"{root}/date=2025-01-01/region=us/part-0.parquet"
    assert first.partition_values == {"date": dt.date(2025, 1, 1), "region": "us"}
    fs = _fs(s3_server.storage_options)
    assert _listed_urls(fs, root) == ds.paths
    table = pq.read_table(io.BytesIO(fs.cat(first.path)))
    assert table.schema == ds.schema and table.equals(first.table)
    ids = ds.to_table().column("id").to_pylist()
    assert len(set(ids)) == len(ids) == ds.num_rows


def test_hourly_zero_pads_hours_and_types_them_as_int(s3_server: S3Server, s3_bucket: str):
    root = f"s3://{s3_bucket}/hourly"
    with s3_server.log.capture() as cap:
        ds = datasets.hourly(
            root, s3_server.storage_options, format="csv", days=2, hours=[0, 7, 23],
            put=fast_writer(s3_server),
        )  # fmt: skip
    assert cap.entries() == []  # fast writer: no HTTP at all
    assert ("hour", pa.int32()) in ds.partition_cols
    assert f"{root}/date=2025-01-02/hour=07/part-0.csv" in ds.paths
    assert {f.partition_values["hour"] for f in ds.files} == {0, 7, 23}
    fs = _fs(s3_server.storage_options)
    assert _listed_urls(fs, root) == ds.paths
    back = pacsv.read_csv(io.BytesIO(fs.cat(ds.files[-1].path)))
    assert back.num_rows == 2 and back.equals(ds.files[-1].table)


def test_escaped_spells_values_like_spark(s3_server: S3Server, s3_bucket: str):
    root = f"s3://{s3_bucket}/escaped"
    ds = datasets.escaped(root, s3_server.storage_options, put=fast_writer(s3_server))
    dirs = {f.path[len(root) + 1 :].rsplit("/", 1)[0]: f for f in ds.files}
    for spelled, value in [
        ("city=a%2Fb", "a/b"), ("city=x%3Ay", "x:y"), ("city=k%3Dv", "k=v"),
        ("city=100%25", "100%"), ("city=New York", "New York"), ("city=plain", "plain"),
        ("city=what%3F", "what?"), ("city=tab%09here", "tab\there"), ("city=Zürich", "Zürich"),
        ("city=%7Bbrace}", "{brace}"), ("city=%5Bx%5D%5E2", "[x]^2"),
    ]:  # fmt: skip
        assert dirs[spelled].partition_values == {"city": value}
        assert unescape_path_name(spelled.split("=", 1)[1]) == value
    assert _listed_urls(_fs(s3_server.storage_options), root) == ds.paths


def test_nulls_use_the_hive_default_partition(s3_server: S3Server, s3_bucket: str):
    root = f"s3://{s3_bucket}/nulls"
    ds = datasets.nulls(root, s3_server.storage_options, format="ndjson", days=2)
    null_region = [f for f in ds.files if f.partition_values["region"] is None]
    null_date = [f for f in ds.files if f.partition_values["date"] is None]
    assert len(null_region) == 3 and len(null_date) == 2
    assert all(f"region={DEFAULT_PARTITION_NAME}/" in f.path for f in null_region)
    assert all(f"/date={DEFAULT_PARTITION_NAME}/" in f.path for f in null_date)
    assert _listed_urls(_fs(s3_server.storage_options), root) == ds.paths
    full = ds.to_table()
    assert full.column("region").null_count == 3 * 3
    assert full.schema.field("date").type == pa.date32()


def test_hidden_files_are_written_but_not_reported(s3_server: S3Server, s3_bucket: str):
    root = f"s3://{s3_bucket}/hidden"
    ds = datasets.daily(root, s3_server.storage_options, days=2, put=fast_writer(s3_server))
    before = set(ds.paths)
    hidden = add_hidden_files(ds, put=fast_writer(s3_server))
    assert ds.paths == before and ds.hidden_files == hidden
    assert f"{root}/_SUCCESS" in hidden
    assert f"{root}/date=2025-01-01/region=us/_temporary/0/part-x.parquet" in hidden
    assert f"{root}/.part-0.parquet.crc" in hidden
    listed = _listed_urls(_fs(s3_server.storage_options), root)
    assert listed == before | set(hidden)
    # the plain-root form, over HTTP this time
    extra = add_hidden_files(f"s3://{s3_bucket}/other/", s3_server.storage_options)
    assert _listed_urls(_fs(s3_server.storage_options), f"s3://{s3_bucket}/other") == set(extra)


@pytest.mark.parametrize("format", datasets.FORMATS)
def test_every_format_round_trips_locally(tmp_path, format: str):
    ds = datasets.daily(str(tmp_path), format=format, days=1, regions=("us",), rows_per_file=4)
    [f] = ds.files
    assert f.path == f"{tmp_path}/date=2025-01-01/region=us/part-0.{format}"
    data = Path(f.path).read_bytes()
    if format == "parquet":
        back = pq.read_table(io.BytesIO(data))
    elif format == "csv":
        back = pacsv.read_csv(io.BytesIO(data))
    elif format == "csv.gz":
        back = pacsv.read_csv(io.BytesIO(gzip.decompress(data)))
    elif format == "ndjson":
        back = pajson.read_json(io.BytesIO(data)).select(ds.schema.names)
    else:
        back = pa.ipc.open_file(io.BytesIO(data)).read_all()
    assert back.cast(ds.schema).equals(f.table) and back.num_rows == 4


def test_build_is_deterministic_and_supports_custom_layouts(tmp_path):
    a = datasets.build(str(tmp_path / "a"), [{}], rows_per_file=5, files_per_partition=2)
    b = datasets.build(str(tmp_path / "b"), [{}], rows_per_file=5, files_per_partition=2)
    assert [f.path.rsplit("/", 1)[1] for f in a.files] == ["part-0.parquet", "part-1.parquet"]
    assert a.partition_cols == [] and a.to_table().equals(b.to_table())
    assert (tmp_path / "a" / "part-1.parquet").read_bytes() == (
        tmp_path / "b" / "part-1.parquet"
    ).read_bytes()
    c = datasets.build(
        str(tmp_path / "c"), [{"y": 2024, "flag": True}, {"y": 3_000_000_000, "flag": None}]
    )
    assert c.partition_cols == [("y", pa.int64()), ("flag", pa.bool_())]
    assert (tmp_path / "c" / "y=2024" / "flag=true" / "part-0.parquet").exists()
    assert (tmp_path / "c" / "y=3000000000" / f"flag={DEFAULT_PARTITION_NAME}").is_dir()
    with pytest.raises(ValueError, match="columns"):
        datasets.build(str(tmp_path / "d"), [{"a": 1}, {"b": 2}])


def test_fast_writer_rejects_non_s3_urls():
    with pytest.raises(ValueError, match="fast_writer"):
        fast_writer(S3Server())("file:///tmp/x", b"")


def test_docs_describe_what_dataset_builders_return(tmp_path):
    """The docs once said the builders return "the files" (``len(ds)`` fails): every
    ``ds.<name>`` the testing page names exists on what a builder returns."""
    import re
    from pathlib import Path

    from listing.testing import datasets as builders

    text = (Path(__file__).resolve().parents[2] / "docs" / "testing.md").read_text()
    assert "each returns the files it wrote" not in text
    named = set(re.findall(r"`ds\.(\w+)", text))
    assert {"files", "root", "num_rows", "paths", "to_table"} <= named
    ds = builders.daily(str(tmp_path / "t"), days=1)
    assert [n for n in sorted(named) if not hasattr(ds, n)] == []
    assert {"path", "partition_values", "num_rows", "table"} <= set(vars(ds.files[0]))


def test_docs_say_what_each_dataset_builder_returns():
    """The testing page's list of builders: each named one exists, and returns a
    ``Dataset`` unless the page names it as the exception."""
    import re
    import typing

    text = (Path(__file__).resolve().parents[2] / "docs" / "testing.md").read_text()
    para = text.split("Builders in `listing.testing.datasets`:", 1)[1].split("brute-force", 1)[0]
    listed, _, returns = para.partition("Each builder")
    names = [n for n in re.findall(r"`(\w+)`", listed) if n in datasets.__all__]
    exceptions = set(re.findall(r"`(\w+)`", returns.split("returns a `Dataset`", 1)[0]))
    assert {"daily", "hourly", "add_hidden_files", "build"} <= set(names), names
    for name in names:
        hint = typing.get_type_hints(getattr(datasets, name))["return"]
        assert (hint is datasets.Dataset) == (name not in exceptions), (name, hint)
