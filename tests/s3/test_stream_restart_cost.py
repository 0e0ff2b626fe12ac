"""A restarted stream's first trigger costs the table's full listing and nothing more (the
reconciliation listing covers the frontier and the lookback window), and a batch's plan
takes the partition values its listing decoded."""

from __future__ import annotations

import pyarrow as pa

from listing import ListingTable
from listing.testing.datasets import encode

SCHEMA = pa.schema([("id", pa.int64())])
PARTS = [("date", "date"), ("hour", "int")]


def _put(server, bucket, days, hours, files):
    data = encode(pa.table({"id": pa.array([1], pa.int64())}), "parquet")
    server.put_objects_fast(bucket, {
        f"events/date=2026-03-{d:02d}/hour={h:02d}/part-{i}.parquet": data
        for d in days for h in hours for i in range(files)})


def _table(server, bucket):
    return ListingTable.open(f"s3://{bucket}/events", storage_options=server.storage_options,
                             schema=SCHEMA, partition_cols=PARTS)


def test_restart_costs_the_flat_listing_only(s3_server, s3_bucket):
    _put(s3_server, s3_bucket, range(1, 8), range(24), 15)  # 2,520 keys: 3 LIST pages flat
    table = _table(s3_server, s3_bucket)
    with s3_server.log.capture(bucket=s3_bucket) as flat:
        assert len(table.scan().files) == 2520
    first = _table(s3_server, s3_bucket).discovery().new_files(all_available=True)
    assert len(first.files) == 2520
    _put(s3_server, s3_bucket, [7], [23], 16)  # one new file in the newest partition
    _put(s3_server, s3_bucket, [8], [0], 1)  # one after the frontier
    restarted = _table(s3_server, s3_bucket).discovery()  # a new reader: it reconciles
    with s3_server.log.capture(bucket=s3_bucket) as cap:
        found = restarted.new_files(first.offset, all_available=True)
    assert sorted(f.path.split("/events/")[1] for f in found.files) == [
        "date=2026-03-07/hour=23/part-15.parquet", "date=2026-03-08/hour=00/part-0.parquet"]
    assert found.metrics["full_listing"] == 1
    # the reconciliation listing is the table's full listing, and nothing else: no listing
    # of the frontier or of the lookback window beside it (3 pages, and the delimiter page
    # the planner sends to split a long listing, in both)
    assert cap.count("LIST") == flat.count("LIST") == 4, (cap.counts(), flat.counts())


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
