"""Streaming discovery of a table with a ``layout`` (docs/streaming.md): a Firehose prefix
gets a new hour folder, and a trigger lists only after the frontier, as for Hive tables.
A template whose keys do not sort by time is listed whole every trigger.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid

from listing import ListingTable

FIREHOSE = "{date:yyyy/MM/dd}/{hour:HH}"


def _body(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


class Lake:
    """A Firehose-shaped prefix: ``yyyy/MM/dd/HH/stream-1-<time>-<uuid>.json``, two
    objects an hour, ids ``<day>-<hour>-<n>``."""

    def __init__(self, server, bucket: str, root: str = "fh") -> None:
        self.server, self.bucket, self.root = server, bucket, root
        self.url = f"s3://{bucket}/{root}/"

    def hour(self, day: int, hour: int, prefix: str = "") -> set[str]:
        """Puts an hour folder's two objects; returns their keys below the root."""
        keys = {}
        for n in range(2):
            at = dt.datetime(2026, 11, day, hour, n)
            key = (f"{prefix}{at:%Y/%m/%d/%H}/stream-1-{at:%Y-%m-%d-%H-%M-%S}-"
                   f"{uuid.uuid4()}.json")
            keys[f"{self.root}/{key}"] = _body([{"id": f"{day}-{hour}-{n}", "n": n}])
        self.server.put_objects_fast(self.bucket, keys)
        return {k[len(self.root) + 1:] for k in keys}

    def table(self, layout: str = FIREHOSE) -> ListingTable:
        return ListingTable.open(self.url, format="json", layout=layout,
                                 storage_options=self.server.storage_options)


def _keys(found) -> set[str]:
    return {f.path.split("/fh/", 1)[1] for f in found.files}


def test_a_new_hour_folder_is_found_after_the_frontier(s3_server, s3_bucket):
    lake = Lake(s3_server, s3_bucket)
    for hour in (10, 11, 12):
        lake.hour(26, hour)
    discovery = lake.table().discovery(reconcile_every=0)
    first = discovery.new_files()  # earliest: the whole lake, partition values decoded
    assert len(first.files) == 6
    assert {(f.partition_values["date"], f.partition_values["hour"]) for f in first.files} \
        == {(dt.date(2026, 11, 26), h) for h in (10, 11, 12)}
    assert first.offset.recent == {"2026/11/26/12/": first.offset.recent["2026/11/26/12/"]}

    with s3_server.log.capture(bucket=s3_bucket) as quiet:
        none = discovery.new_files(first.offset)
    assert none.files == [] and quiet.count("LIST") == 1
    assert none.metrics["full_listing"] == 0

    added = lake.hour(26, 13)
    with s3_server.log.capture(bucket=s3_bucket) as busy:
        found = discovery.new_files(first.offset)
    assert _keys(found) == added  # exactly the new hour's objects
    assert busy.count("LIST") == 1 and found.metrics["full_listing"] == 0
    assert busy.count("LIST") == found.metrics["list_requests"]
    assert all(f.partition_values == {"date": dt.date(2026, 11, 26), "hour": 13}
               for f in found.files)
    assert list(found.offset.recent) == ["2026/11/26/13/"]  # the window moved to it
    # the listing started at the window (the newest hour folder), not at the root
    assert found.metrics["files_listed"] == 4

    # a file arriving late in the newest hour is found by the window, the next day's hour
    # after the frontier; read once each
    late = lake.hour(26, 13)
    nxt = lake.hour(27, 0)
    again = discovery.new_files(found.offset)
    assert _keys(again) == late | nxt and again.metrics["late_files"] == 0
    assert discovery.new_files(again.offset).files == []


def test_a_template_that_does_not_sort_by_time_lists_whole_each_trigger(s3_server,
                                                                         s3_bucket):
    lake = Lake(s3_server, s3_bucket)
    lake.hour(26, 10, prefix="us/")
    lake.hour(26, 10, prefix="eu/")
    table = lake.table("{region}/" + FIREHOSE)
    assert not table.layout.chronological
    discovery = table.discovery(reconcile_every=0)
    first = discovery.new_files()
    assert len(first.files) == 4

    added = lake.hour(26, 11, prefix="eu/")  # sorts before the frontier (us/…)
    found = discovery.new_files(first.offset)
    assert _keys(found) == added  # found on the next trigger, not lost until a reconcile
    assert found.metrics["full_listing"] == 1
    assert {f.partition_values["region"] for f in found.files} == {"eu"}
    assert discovery.new_files(found.offset).files == []
