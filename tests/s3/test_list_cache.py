"""The listing cache (list_cache_ttl): scans of one table reuse what earlier scans listed,
never list to fill it, and see new files once the TTL passes or refresh() is called."""

from __future__ import annotations

import time

import pyarrow as pa

from listing import ListingTable
from listing.list_cache import CACHE
from listing.testing import datasets


def test_a_pruned_scan_reuses_a_wider_listing(s3_server, s3_bucket):
    ds = datasets.daily(f"s3://{s3_bucket}/events", s3_server.storage_options, days=6,
                        put=datasets.fast_writer(s3_server))
    table = ListingTable.open(ds.root, storage_options=s3_server.storage_options,
                              list_cache_ttl="5m")
    table.refresh()
    with s3_server.log.capture() as cap:
        full = table.scan()
    assert cap.count("LIST") >= 1 and full.metrics["list_cache_hits"] == 0
    with s3_server.log.capture() as cap:
        day = table.scan(where="date = '2025-01-03' AND region = 'eu'")
        walk = table.scan(where="region = 'us'")
    assert cap.count("LIST") == 0  # both answered from what the full scan listed
    assert day.metrics["list_cache_hits"] >= 1 and walk.metrics["list_cache_hits"] >= 1
    assert any("listing cache" in step for step in day.listing_plan)
    assert sorted(f.path for f in day.files) == sorted(
        f.path for f in ds.files if str(f.partition_values["date"]) == "2025-01-03"
        and f.partition_values["region"] == "eu")
    assert sorted(f.path for f in walk.files) == sorted(
        f.path for f in ds.files if f.partition_values["region"] == "us")


def test_a_narrow_listing_does_not_answer_a_wider_one(s3_server, s3_bucket):
    ds = datasets.daily(f"s3://{s3_bucket}/events", s3_server.storage_options, days=3,
                        put=datasets.fast_writer(s3_server))
    table = ListingTable.open(ds.root, storage_options=s3_server.storage_options,
                              list_cache_ttl=300)
    table.refresh()
    uncached = ListingTable.open(ds.root, storage_options=s3_server.storage_options)
    with s3_server.log.capture() as cold:  # the same scan, uncached: what it must send
        uncached.scan()
    narrow = table.scan(where="date = '2025-01-02'")
    assert narrow.metrics["list_cache_hits"] == 0 and len(narrow.files) == 2
    with s3_server.log.capture() as cap:
        plan = table.scan()
    assert plan.metrics["list_cache_hits"] == 0
    assert cap.count("LIST") == plan.metrics["list_requests"] == cold.count("LIST") >= 1
    assert sorted(f.path for f in plan.files) == sorted(f.path for f in ds.files)
    with s3_server.log.capture() as cap:  # positive control: the wide listing now answers
        other = table.scan(where="date = '2025-01-03'")  # a day no narrow scan listed
    assert cap.count("LIST") == 0 and other.metrics["list_cache_hits"] >= 1
    assert sorted(f.path for f in other.files) == sorted(
        f.path for f in ds.files if str(f.partition_values["date"]) == "2025-01-03")


def test_new_files_are_seen_after_the_ttl_or_a_refresh(s3_server, s3_bucket):
    ds = datasets.daily(f"s3://{s3_bucket}/events", s3_server.storage_options, days=2,
                        put=datasets.fast_writer(s3_server))
    table = ListingTable.open(ds.root, storage_options=s3_server.storage_options,
                              list_cache_ttl="400ms")
    table.refresh()
    before = len(table.scan().files)
    extra = datasets.encode(pa.table({"id": [1], "amount": [1.0], "name": ["x"]}), "parquet")
    s3_server.put_objects_fast(s3_bucket, {"events/date=2025-01-01/region=us/late.parquet":
                                           extra})
    assert len(table.scan().files) == before  # within the TTL: the cached listing
    time.sleep(0.5)
    assert len(table.scan().files) == before + 1  # after it: listed again
    s3_server.put_objects_fast(s3_bucket, {"events/date=2025-01-02/region=us/later.parquet":
                                           extra})
    table.refresh()
    assert len(table.scan().files) == before + 2


def test_without_the_option_every_scan_lists(s3_server, s3_bucket):
    ds = datasets.daily(f"s3://{s3_bucket}/events", s3_server.storage_options, days=2,
                        put=datasets.fast_writer(s3_server))
    table = ListingTable.open(ds.root, storage_options=s3_server.storage_options)
    table.scan()
    with s3_server.log.capture() as cap:
        plan = table.scan()
    assert cap.count("LIST") >= 1 and "list_cache_hits" not in plan.metrics
    assert CACHE.lookup(table.storage, table.url.prefix, ttl=3600) is None  # nothing kept


def test_a_commit_in_this_process_drops_the_cached_listing(s3_server, s3_bucket):
    """A write job's commit (listing.write) invalidates this process's cached listings of
    its table: the next scan lists again and sees the new file, within the TTL. Positive
    control: a file put by other means stays unseen until refresh()."""
    from listing.write import write_table

    opts = s3_server.storage_options
    ds = datasets.daily(f"s3://{s3_bucket}/events", opts, days=2,
                        put=datasets.fast_writer(s3_server))
    table = ListingTable.open(ds.root, storage_options=opts, list_cache_ttl="5m")
    table.refresh()
    before = len(table.scan().files)
    extra = datasets.encode(pa.table({"id": [1], "amount": [1.0], "name": ["x"]}), "parquet")
    s3_server.put_objects_fast(s3_bucket, {"events/date=2025-01-01/region=us/late.parquet":
                                           extra})
    with s3_server.log.capture() as cap:
        assert len(table.scan().files) == before  # the cached listing answers
    assert cap.count("LIST") == 0
    new = pa.table({"id": [2], "amount": [2.0], "name": ["y"], "date": ["2025-01-02"],
                    "region": ["eu"]})
    write_table(ds.root, new, partition_by=["date", "region"], storage_options=opts)
    with s3_server.log.capture() as cap:
        after = table.scan()
    assert cap.count("LIST") >= 1 and after.metrics["list_cache_hits"] == 0
    assert len(after.files) == before + 2  # the written file, and the one put before
