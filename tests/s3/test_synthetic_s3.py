"""The bench's synthetic S3 endpoint (bench/synthetic_s3.py) lists, pages and serves as S3
does, so the planning bench's figures through it are those of an S3 listing."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench.planning import SyntheticStore
from bench.synthetic_s3 import BUCKET, Endpoint, serve
from fixtures.s3 import dummy_client

pytestmark = pytest.mark.s3  # an S3 endpoint over HTTP, in its own process

KEYS = 8760  # one key an hour


@pytest.fixture(scope="module")
def endpoint() -> Iterator[Endpoint]:
    with serve(KEYS) as ep:
        yield ep


@pytest.fixture(scope="module")
def client(endpoint: Endpoint) -> Any:
    import boto3

    return dummy_client(boto3.session.Session(), endpoint.url)


def _list(client: Any, **kwargs: Any) -> tuple[list[str], list[str], int]:
    """Keys and common prefixes of every page, and the number of pages."""
    keys: list[str] = []
    dirs: list[str] = []
    pages = 0
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, **kwargs):
        pages += 1
        keys += [o["Key"] for o in page.get("Contents", [])]
        dirs += [p["Prefix"] for p in page.get("CommonPrefixes", [])]
    return keys, dirs, pages


def test_flat_listing_pages_through_every_key_in_order(client: Any) -> None:
    prefix = "t/date=2020-01-"  # January: 744 keys
    expected = list(SyntheticStore("t/", 1).entries(prefix, False, None))
    keys, dirs, pages = _list(client, Prefix=prefix, PaginationConfig={"PageSize": 100})
    assert keys == expected and len(keys) == 31 * 24 and dirs == []
    assert pages == 8  # continuation tokens
    assert _list(client, Prefix=prefix)[2] == 1
    page = client.list_objects_v2(Bucket=BUCKET, Prefix="t/", MaxKeys=5000)
    assert page["KeyCount"] == 1000 and page["IsTruncated"]  # 1000 a page at most, as S3


def test_delimiter_rolls_keys_into_folders(client: Any) -> None:
    assert _list(client, Prefix="", Delimiter="/")[:2] == ([], ["t/", "warm/"])
    days = _list(client, Prefix="t/", Delimiter="/")[1]
    assert len(days) == 365 and days[0] == "t/date=2020-01-01/" and days == sorted(days)
    hours = _list(client, Prefix="t/date=2020-03-15/", Delimiter="/")[1]
    assert hours == sorted(f"t/date=2020-03-15/hour={h}/" for h in range(24))
    assert _list(client, Prefix="t/date=2020-03-15/hour=7/", Delimiter="/")[:2] == (
        ["t/date=2020-03-15/hour=7/part-0.parquet"], [])


def test_start_after_lists_what_follows(client: Any) -> None:
    after = "t/date=2020-12-29/hour=5/part-0.parquet"
    keys = _list(client, Prefix="t/", StartAfter=after)[0]
    expected = [k for k in SyntheticStore("t/", 1).entries("t/", False, None) if k > after]
    assert keys == expected and len(keys) == 4 + 24  # hour=6..9 of 12-29, all of 12-30
    # a folder holding keys past start-after is listed; the folders before it are not
    assert _list(client, Prefix="t/", Delimiter="/", StartAfter=after)[1] == [
        "t/date=2020-12-29/", "t/date=2020-12-30/"]


def test_objects_are_one_parquet_file_read_by_ranges(client: Any) -> None:
    key = "t/date=2020-03-15/hour=7/part-0.parquet"
    head = client.head_object(Bucket=BUCKET, Key=key)
    body = client.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    assert head["ContentLength"] == len(body)
    tail = client.get_object(Bucket=BUCKET, Key=key, Range="bytes=-8")
    assert tail["ContentRange"] == f"bytes {len(body) - 8}-{len(body) - 1}/{len(body)}"
    assert tail["Body"].read() == body[-8:] and body.endswith(b"PAR1")
    assert pq.read_table(io.BytesIO(body)).schema == pa.schema([("id", pa.int64())])
    for missing in ("t/date=2020-03-15/hour=7/part-1.parquet", "t/date=2020-12-31/hour=0/"
                    "part-0.parquet", "t/date=2020-03-15/hour=24/part-0.parquet"):
        with pytest.raises(client.exceptions.ClientError, match="404"):
            client.head_object(Bucket=BUCKET, Key=missing)


def test_our_planner_lists_it_as_an_s3_table(endpoint: Endpoint) -> None:
    from listing import ListingTable

    before = endpoint.counts()
    table = ListingTable.open(endpoint.table, storage_options=endpoint.storage_options,
                              partition_cols=[("date", pa.date32()), ("hour", pa.int32())])
    assert table.schema.names == ["id", "date", "hour"]  # one footer read, by ranges
    day = table.scan(where="date = DATE '2020-03-15'")
    assert sorted(f.path for f in day.files) == sorted(
        f"s3://{BUCKET}/t/date=2020-03-15/hour={h}/part-0.parquet" for h in range(24))
    whole = table.scan()
    assert whole.file_count == KEYS
    sent = endpoint.counts() - before
    assert sent["LIST"] >= day.metrics["list_requests"] + whole.metrics["list_requests"]
    assert sent["GET"] >= 1
