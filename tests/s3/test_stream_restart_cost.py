"""A restarted stream's first trigger costs one flat listing of the table and nothing more:
its reconciliation listing covers the frontier and the lookback window, and the offset's
``listed`` (the keys the last full listing listed) tells the planner the listing is too
short to split, so no delimiter page goes beside it. A batch's plan takes the partition
values its listing decoded."""

from __future__ import annotations

import json

import pyarrow as pa

from listing import ListingTable
from listing.testing.datasets import encode

SCHEMA = pa.schema([("id", pa.int64())])
PARTS = [("date", "date"), ("hour", "int")]
#: the fields of an offset as the listing source wrote them before ``listed`` (main at
#: 51ae679): such a checkpoint must still resume
OLD_OFFSET_FIELDS = {"v", "frontier", "batches", "files", "late_files", "newest_us",
                     "not_before_us", "recent", "seen_packed", "batch"}


def _put(server, bucket, days, hours, files):
    data = encode(pa.table({"id": pa.array([1], pa.int64())}), "parquet")
    server.put_objects_fast(bucket, {
        f"events/date=2026-03-{d:02d}/hour={h:02d}/part-{i}.parquet": data
        for d in days for h in hours for i in range(files)})


def _table(server, bucket):
    return ListingTable.open(f"s3://{bucket}/events", storage_options=server.storage_options,
                             schema=SCHEMA, partition_cols=PARTS)


def _flat_pages(server, bucket) -> int:
    """LIST requests of one plain flat listing of the table (ListObjectsV2 pages, as any
    client pages it), counted by the server."""
    with server.log.capture(bucket=bucket) as cap:
        pages = server.client().get_paginator("list_objects_v2").paginate(
            Bucket=bucket, Prefix="events/")
        keys = sum(len(p.get("Contents", [])) for p in pages)
    assert keys > 0
    return cap.count("LIST")


def _restart(server, bucket, offset):
    """A new reader's first trigger from ``offset`` (a restarted query): files, its LIST
    requests, whether it sent a delimiter page, and its end offset."""
    restarted = _table(server, bucket).discovery()  # a new reader: it reconciles
    with server.log.capture(bucket=bucket) as cap:
        found = restarted.new_files(offset, all_available=True)
    assert found.metrics["full_listing"] == 1
    delimited = any(e.query.get("delimiter") for e in cap.entries() if e.kind == "LIST")
    names = sorted(f.path.split("/events/")[1] for f in found.files)
    return names, cap.count("LIST"), delimited, found.offset


def test_restart_costs_one_flat_listing(s3_server, s3_bucket):
    _put(s3_server, s3_bucket, range(1, 3), range(24), 30)  # 1,440 keys: 2 pages
    flat = _flat_pages(s3_server, s3_bucket)
    assert flat == 2
    first = _table(s3_server, s3_bucket).discovery().new_files(all_available=True)
    assert len(first.files) == 1440 and first.offset.listed == 1440
    saved = json.loads(json.dumps(first.offset.to_json()))  # as Spark's checkpoint keeps it

    # unchanged table: the restart is the flat listing's pages, and nothing is read again
    names, lists, delimited, end = _restart(s3_server, s3_bucket, saved)
    assert (names, lists, delimited) == ([], flat, False)

    # positive control: files added while the query was down are found, each exactly once,
    # for the same one listing (the late one far before the frontier too)
    _put(s3_server, s3_bucket, [2], [23], 31)  # one new file in the newest partition
    _put(s3_server, s3_bucket, [3], [0], 1)  # one after the frontier
    s3_server.put_objects_fast(s3_bucket, {"events/date=2026-03-01/hour=00/late.parquet":
                                           encode(pa.table({"id": [2]}), "parquet")})
    names, lists, delimited, end = _restart(s3_server, s3_bucket, saved)
    assert names == ["date=2026-03-01/hour=00/late.parquet",
                     "date=2026-03-02/hour=23/part-30.parquet",
                     "date=2026-03-03/hour=00/part-0.parquet"]
    assert (lists, delimited) == (flat, False)  # 1,443 keys: still 2 pages
    assert end.late_files == 1 and end.listed == 1443


def test_a_checkpoint_written_before_listed_still_resumes(s3_server, s3_bucket):
    _put(s3_server, s3_bucket, range(1, 3), range(24), 30)
    first = _table(s3_server, s3_bucket).discovery().new_files(all_available=True)
    old = {k: v for k, v in first.offset.to_json().items() if k != "listed"}
    assert set(old) == OLD_OFFSET_FIELDS  # the offset as the source wrote it before
    _put(s3_server, s3_bucket, [3], [0], 1)
    names, lists, delimited, end = _restart(s3_server, s3_bucket, old)
    assert names == ["date=2026-03-03/hour=00/part-0.parquet"]  # once, nothing read again
    # not knowing the table's length, its planner sent the delimiter page that may split a
    # long listing (what the count test above would catch), and the offset now knows
    assert delimited and lists == _flat_pages(s3_server, s3_bucket) + 1
    assert end.listed == 1441
    assert _restart(s3_server, s3_bucket, end.to_json())[:3] == ([], lists - 1, False)


class CountingLayout:
    """A layout that counts the keys it decodes."""

    def __init__(self, layout):
        self.layout, self.calls = layout, 0

    def decode(self, *args):
        self.calls += 1
        return self.layout.decode(*args)


def test_a_batch_plan_takes_the_values_its_listing_decoded(s3_server, s3_bucket):
    _put(s3_server, s3_bucket, range(1, 3), range(2), 2)
    discovery = _table(s3_server, s3_bucket).discovery()
    found = discovery.new_files(all_available=True)
    discovery.layout = counting = CountingLayout(discovery.layout)
    files = discovery.files_of(found.offset)
    assert counting.calls == 0  # the listing's decoded values, not a second decoding
    assert [f.partition_values for f in files] == [f.partition_values for f in found.files]
    assert {(str(f.partition_values["date"]), f.partition_values["hour"]) for f in files} == {
        ("2026-03-01", 0), ("2026-03-01", 1), ("2026-03-02", 0), ("2026-03-02", 1)}
    restarted = _table(s3_server, s3_bucket).discovery()  # another reader: it decodes
    restarted.layout = counting
    assert [f.partition_values for f in restarted.files_of(found.offset)] == [
        f.partition_values for f in files]
    assert counting.calls == len(files) == 8
