"""ListingTable.partitions: SHOW PARTITIONS from the listing alone."""

from __future__ import annotations

import datetime as dt

from listing import ListingTable
from listing.testing import datasets


def test_partitions_from_the_listing(s3_server, s3_bucket):
    ds = datasets.daily(f"s3://{s3_bucket}/events", s3_server.storage_options, days=3,
                        files_per_partition=2, put=datasets.fast_writer(s3_server))
    table = ListingTable.open(ds.root, storage_options=s3_server.storage_options)
    with s3_server.log.capture() as cap:
        parts = table.partitions(where="date >= '2025-01-02'").to_pylist()
    assert cap.count("GET") == 0 and cap.count("LIST") == 1
    want: dict[tuple, list[int]] = {}
    for f in ds.files:
        key = (f.partition_values["date"], f.partition_values["region"])
        if key[0] >= dt.date(2025, 1, 2):
            want.setdefault(key, [0, 0])[0] += 1
    assert [(p["date"], p["region"]) for p in parts] == sorted(want)
    assert all(p["files"] == want[(p["date"], p["region"])][0] for p in parts)
    assert all(p["bytes"] > 0 for p in parts)
