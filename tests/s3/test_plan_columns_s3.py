"""An S3 listing plans as columns (:mod:`listing.file_columns`), and alike whether its pages
come parsed into columns or as one ObjectMeta a key (what the listing cache and other
stores give, made runs by the page): the same files, groups, byte ranges, pickled bytes,
``explain()`` and metrics, under every packing, each group pickling as the group of its
files as rows, on a real S3 server (moto) whose pages split directories, hold a hidden
file, keys needing URL decoding, a folder marker, and an ETag in odd quotes; and with a
page the fast parser declines (botocore's form). The planned values are those boto3
lists."""

from __future__ import annotations

import datetime as dt
import pickle
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from plan_equality import assert_plans_alike

import listing.table
from listing import ListingTable
from listing.file_columns import FileColumns
from listing.planner.run import LISTED
from listing.scan import ScanPlan
from listing.storage import s3_pages
from listing.storage.lister import Lister, Page

COLS = [("date", pa.date32()), ("hour", pa.int32())]
SCHEMA = pa.schema([("id", pa.int64())])
PER_DIR = 400  # six directories of these: pages of 1000 keys end inside directories
ODD = "t/date=2020-01-02/hour=1/a b+é%41.parquet"  # sent URL-encoded, decoded by us
ODD_ETAG = "t/date=2020-01-03/hour=0/part-0007.parquet"
DECLINED = "t/date=2020-01-02/hour=0/part-0300.parquet"  # on the second page


@pytest.fixture(scope="module")
def bucket(s3_server) -> Iterator[str]:
    name = f"plan-columns-{uuid.uuid4().hex[:12]}"
    s3_server.create_bucket(name)
    items: dict[str, bytes] = {}
    sizes = iter(range(1, 100_000))
    for d in range(1, 4):
        for h in range(2):
            for k in range(PER_DIR):
                items[f"t/date=2020-01-0{d}/hour={h}/part-{k:04d}.parquet"] = \
                    b"x" * (next(sizes) * 7 % 61 + 1)
    # a directory's files in three runs (a subfolder between them), a hidden file, a file
    # of another name (a data file: every name is, as in Spark), a folder marker
    items[ODD] = b"a" * 20
    items["t/date=2020-01-02/hour=1/m/x.parquet"] = b"y" * 40
    items["t/date=2020-01-02/hour=1/_SUCCESS"] = b""
    items["t/date=2020-01-03/hour=0/notes.txt"] = b"n"
    items["t/date=2020-01-01/hour=1/"] = b""
    s3_server.put_objects_fast(name, items)
    _set_etag(name, ODD_ETAG, '"in-quotes"')  # listed in two pairs of quotes
    yield name
    s3_server.drop_bucket(name)


def _set_etag(bucket: str, key: str, etag: str) -> None:
    from moto.s3.models import s3_backends

    partition, account = s3_backends.bucket_accounts[bucket]
    s3_backends[account][partition].buckets[bucket].keys[key]._etag = etag


class MetasLister(Lister):
    """The S3 lister, its pages handed over as one ObjectMeta a key (the page makes its
    runs of them)."""

    def pages(self, prefix: str, **kwargs: Any) -> Iterator[Page]:
        for page in super().pages(prefix, **kwargs):
            yield Page(page.files, page.dirs, page.truncated)


class Declining:
    def __init__(self, on: bool) -> None:
        self.on = on
        self.seen = 0  # pages declined


@pytest.fixture
def declined(monkeypatch, request) -> Declining:
    """With the parameter true, the fast parser declines the page holding DECLINED (as it
    declines a page holding what it does not know): botocore parses it."""
    seen = Declining(request.param)
    if request.param:
        parse = s3_pages.parse_list_page

        def parse_list_page(body: bytes, columns: bool = False) -> dict[str, Any] | None:
            if DECLINED.encode() in body or DECLINED.replace("=", "%3D").encode() in body:
                seen.seen += 1
                return None
            return parse(body, columns)

        monkeypatch.setattr(s3_pages, "parse_list_page", parse_list_page)
    return seen


def _plans(s3_server, bucket: str, monkeypatch, where: str | None = None,
           columns: list[str] | None = None, min_partitions: int | None = None,
           **options: Any) -> tuple[ScanPlan, ScanPlan]:
    def scan() -> ScanPlan:
        table = ListingTable.open(f"s3://{bucket}/t/", partition_cols=COLS, schema=SCHEMA,
                                  storage_options=s3_server.storage_options, **options)
        return table.scan(columns, where, min_partitions=min_partitions)

    columnar = scan()
    with monkeypatch.context() as m:
        m.setattr(listing.table, "Lister", MetasLister)
        metas = scan()
    return columnar, metas


CASES = [
    {},
    {"max_concurrent_requests": 1},
    {"where": "hour = 1"},
    {"where": "date BETWEEN DATE '2020-01-02' AND DATE '2020-01-03'"},
    {"min_partitions": 3},
    # files bigger than a split: byte ranges
    {"max_partition_bytes": 16, "open_cost_in_bytes": 4, "min_partitions": 2},
    # one group per partition value
    {"key_grouped": True, "open_cost_in_bytes": 1, "min_partitions": 2},
    # a read of footers only (partition columns alone): whole files in key order
    {"columns": ["date"], "min_partitions": 2},
]


# (case, a page declined by the fast parser)
PARAMS = [(case, False) for case in CASES] + [(CASES[0], True), (CASES[6], True)]


@pytest.mark.parametrize(("case", "declined"), PARAMS, indirect=["declined"],
                         ids=[f"{c}{'-declined' if d else ''}" for c, d in PARAMS])
def test_s3_pages_of_columns_and_of_metas_plan_alike(s3_server, bucket, monkeypatch,
                                                     declined, case):
    columnar, rows = _plans(s3_server, bucket, monkeypatch, **case)
    assert_plans_alike(columnar, rows, ("bytes", "file_groups", "list_requests", *LISTED))
    for g, r in zip(columnar.file_groups, rows.file_groups, strict=True):
        back = pickle.loads(pickle.dumps(g))
        assert back == g and back.files == g.files
        assert _sharing(g.files) == _sharing(r.files)
    assert _sharing(columnar.files) == _sharing(rows.files)
    # the times' zones too (equal datetimes may differ in their tzinfo)
    assert [f.last_modified.tzinfo for f in columnar.files] == \
        [f.last_modified.tzinfo for f in rows.files]
    # a page declined only where asked
    assert declined.on or not declined.seen


def _keys(plan: ScanPlan) -> set[str]:
    return {f.path.split("/", 3)[3] for f in plan.files}


def _sharing(files: Any) -> list[int]:
    """For each file, the position of the first file holding the same values object."""
    first: dict[int, int] = {}
    return [first.setdefault(id(f.partition_values), i) for i, f in enumerate(files)]


@pytest.mark.parametrize("declined", [False, True], ids=["fast", "declined"], indirect=True)
def test_planned_values_are_those_boto3_lists(s3_server, bucket, monkeypatch, declined):
    columnar, _ = _plans(s3_server, bucket, monkeypatch)
    listed = {}
    for page in s3_server.client().get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix="t/"):
        for o in page.get("Contents", []):
            listed[o["Key"]] = o
    files = columnar.files
    assert len(files) == len(listed) - 2  # the marker, _SUCCESS
    for f in files:
        o = listed[f.path.split("/", 3)[3]]
        assert (f.size, f.last_modified, f.etag) == \
            (o["Size"], o["LastModified"], o["ETag"].strip('"'))
    assert bool(declined.seen) == declined.on
    # botocore's page too: the client parses its times as ours (client.fast_timestamp)
    assert {f.last_modified.tzinfo for f in files} == {dt.UTC}


def test_times_in_another_zero_offset_zone_stay_in_it():
    """Times a page gives in another zero-offset tzinfo (botocore's own parser gives
    ``tzlocal()`` or ``tzutc()``) are made again in it, and a group holding them pickles
    as a group of rows does (its times as datetimes, not packed)."""
    from dateutil.tz import tzutc

    from listing.files import FileGroup, group_columns
    from listing.storage.lister import listed_page

    when = [dt.datetime(2026, 3, 1, 10, 0, 0, 123000, tzinfo=tzutc()),
            dt.datetime(2026, 3, 1, 10, 0, 1, tzinfo=tzutc())]
    in_utc = dt.datetime(2026, 3, 1, 11, tzinfo=dt.UTC)
    pages = [listed_page("b/", ["t/x=1/a", "t/x=1/b"], [3, 4], when, ["e1", None], [], True),
             listed_page("b/", ["t/x=2/c"], [5], [in_utc], ["e3"], [], False)]
    runs = [(f"s3://{r.directory}", r, {"x": i}) for i, p in enumerate(pages) for r in p.runs]
    cols = FileColumns(runs)
    assert [f.last_modified for f in cols.files()] == [*when, in_utc]
    assert [f.last_modified.tzinfo for f in cols.files()] == [tzutc(), tzutc(), dt.UTC]
    import numpy as np

    for idx in ([0, 1], [0, 1, 2], [2]):
        group = cols.group(np.array(idx), None)
        rows = group_columns(group.files())
        assert rows is not None
        assert group.pickled() == rows
        assert pickle.dumps(FileGroup.of_columns(0, group)) == \
            pickle.dumps(FileGroup(0, group.files()))
    # positive control: datetimes, not packed, where a time is not in UTC
    assert isinstance(cols.group(np.array([0, 2]), None).pickled()[6], list)
    assert isinstance(cols.group(np.array([2]), None).pickled()[6], bytes)
    # a page whose times cannot be microseconds keeps them as listed, and its group
    # pickles as the group of its rows
    naive = dt.datetime(2026, 3, 1, 10)  # noqa: DTZ001 - a store may list naive times
    odd = listed_page("b/", ["t/a", "t/b", "t/c"], [1, 2, 3], [None, naive, in_utc],
                      [None, "e", None], [], False)
    assert [r.in_datetimes for r in odd.runs] == [True]
    assert [m.last_modified for m in odd.files] == [None, naive, in_utc]
    odd_cols = FileColumns([(f"s3://{r.directory}", r, {}) for r in odd.runs])
    assert [f.last_modified for f in odd_cols.files()] == [None, naive, in_utc]
    group = odd_cols.group(np.array([2, 0]), None)
    assert group.pickled() == group_columns(group.files())
    assert pickle.dumps(FileGroup.of_columns(0, group)) == \
        pickle.dumps(FileGroup(0, group.files()))


def test_the_table_is_what_the_cases_are_named_for(s3_server, bucket, monkeypatch):
    """Positive controls: pages end inside directories, a directory's files come in runs
    split by a subfolder, the odd keys are planned or skipped as they should be, key
    ranges and byte ranges happen."""
    whole, rows = _plans(s3_server, bucket, monkeypatch)
    assert whole.metrics["list_requests"] >= 4
    heads = [h.split("/t/", 1)[1] for h in whole.planned.heads]
    # more runs than directories: pages split them, and so does the subfolder m/
    assert len(heads) > len(set(heads)) == 7  # six partitions and m/
    keys = _keys(whole)
    assert ODD in keys and ODD_ETAG in keys
    assert "t/date=2020-01-02/hour=1/m/x.parquet" in keys
    assert "t/date=2020-01-03/hour=0/notes.txt" in keys
    assert not any(k.endswith(("_SUCCESS", "/")) for k in keys)
    assert whole.metrics["files_skipped_hidden"] >= 1
    odd = next(f for f in whole.files if f.path.endswith(ODD_ETAG))
    assert odd.etag == "in-quotes"  # its quotes stripped
    split, _ = _plans(s3_server, bucket, monkeypatch, **CASES[5])
    assert any(f.byte_range for g in split.file_groups for f in g.files)


# the whole table (one flat listing), and "hour = 0": flat page by page, deciding after each
@pytest.mark.parametrize("where", [None, "hour = 0"])
def test_key_ranges_plan_alike(s3_server, s3_bucket, monkeypatch, where):
    """A listing long enough to be split into key ranges listed at once (its pages then
    cut again into pages of 1000 keys where the planner decides page by page)."""
    s3_server.put_objects_fast(s3_bucket, {
        f"t/date=2020-01-{d:02d}/hour={h}/part-{k:03d}.parquet": b"x" * (k % 7 + 1)
        for d in range(1, 22) for h in range(2) for k in range(200)})
    columnar, metas = _plans(s3_server, s3_bucket, monkeypatch, where=where)
    assert "key ranges at once" in "\n".join(columnar.listing_plan)  # positive control
    assert_plans_alike(columnar, metas, ("bytes", "file_groups", "list_requests", *LISTED))
    assert columnar.file_count == (4200 if where == "hour = 0" else 8400)
