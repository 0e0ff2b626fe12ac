"""Streaming discovery: ``spark.readStream.format("listing")`` and ``table.discovery()``.

Every Spark test runs a real ``writeStream`` (Parquet sink, checkpoint on local disk,
``Trigger.AvailableNow``) against the moto S3 server; a restart is a new query on the same
checkpoint. Request counts come from the server's log.
"""

from __future__ import annotations

import ast
import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from listing import ListingTable
from listing.discovery import StreamOffset
from listing.errors import OptionError
from listing.spark.compat import HAS_ADMISSION_CONTROL
from listing.testing.datasets import encode

SCHEMA = "id long, amount double, name string, date date, hour int"
PARTS = "date:date,hour:int"


class Events:
    """A date/hour table in one bucket; every file holds two ids: 10*n and 10*n+1."""

    def __init__(self, server: Any, bucket: str) -> None:
        self.server, self.bucket = server, bucket
        self.root = f"s3://{bucket}/events"
        self.ids: list[int] = []
        self.n = 0

    def put(self, day: int, hour: int, name: str | None = None) -> list[int]:
        ids = [10 * self.n, 10 * self.n + 1]
        self.n += 1
        table = pa.table({"id": pa.array(ids, pa.int64()), "amount": [1.0, 2.0],
                          "name": ["a", "b"]})
        key = f"events/date=2026-03-{day:02d}/hour={hour:02d}/{name or f'part-{self.n}.parquet'}"
        self.server.put_objects_fast(self.bucket, {key: encode(table, "parquet")})
        return ids

    def add(self, day: int, hour: int) -> None:
        self.ids += self.put(day, hour)

    def seed(self, days: int = 2, hours: int = 3) -> None:
        for d in range(1, days + 1):
            for h in range(hours):
                self.add(d, h)


@pytest.fixture
def events(s3_server, s3_bucket) -> Events:
    return Events(s3_server, s3_bucket)


def stream(spark, server, root: str, **options: Any):
    r = (spark.readStream.format("listing").schema(SCHEMA).option("partition_cols", PARTS)
         .option("storage.endpoint_url", server.endpoint_url)
         .option("storage.key", "testing").option("storage.secret", "testing"))
    for k, v in options.items():
        r = r.option(k, str(v))
    return r.load(root)


#: Spark 4.0 and 4.1 have no admission control for Python sources: they serve
#: Trigger.AvailableNow by one latestOffset() call at the query's start, so a per-trigger
#: limit ends such a run after its first batch (the next run goes on)
NO_AVAILABLE_NOW_LIMITS = ("Spark 4.0/4.1 serve Trigger.AvailableNow for a Python source with "
                           "one latestOffset() call: a per-trigger limit ends the run after "
                           "one batch")


def run(spark, server, root: str, out: Path, **options: Any) -> list[dict[str, Any]]:
    """One restart of the query: every trigger until the data available now is read."""
    if not HAS_ADMISSION_CONTROL and ({"max_files_per_trigger", "max_bytes_per_trigger"}
                                      & set(options)):
        pytest.skip(NO_AVAILABLE_NOW_LIMITS)
    df = stream(spark, server, root, **options)
    q = (df.writeStream.format("parquet").option("path", str(out / "data"))
         .option("checkpointLocation", str(out / "cp")).trigger(availableNow=True).start())
    try:
        assert q.awaitTermination(180), "the stream did not finish"
    finally:
        q.stop()
    return [p for p in q.recentProgress if p["numInputRows"]]


def read_ids(spark, out: Path) -> list[int]:
    if not (out / "data" / "_spark_metadata").exists():
        return []
    return sorted(r.id for r in spark.read.parquet(str(out / "data")).select("id").collect())


def end_offset(progress: list[dict[str, Any]]) -> dict[str, Any]:
    offset = progress[-1]["sources"][0]["endOffset"]
    if not isinstance(offset, str):
        return offset
    try:
        return json.loads(offset)
    except json.JSONDecodeError:  # Spark 4.0 reports a Python source's offset as its repr
        return ast.literal_eval(offset)


# --- Spark: exactly once ------------------------------------------------------------------

def test_every_file_read_once_across_triggers_and_restarts(spark, s3_server, events, tmp_path):
    events.seed()
    first = run(spark, s3_server, events.root, tmp_path, max_files_per_trigger=4)
    assert [p["numInputRows"] for p in first] == [8, 4]  # two triggers of <= 4 files
    assert read_ids(spark, tmp_path) == sorted(events.ids)

    events.add(2, 2)  # late, inside the newest partition (the lookback window)
    events.add(2, 5)  # new, after the frontier
    events.add(1, 0)  # late, far before the frontier: only a full listing finds it
    second = run(spark, s3_server, events.root, tmp_path, max_files_per_trigger=4)
    assert read_ids(spark, tmp_path) == sorted(events.ids)  # no file twice, none missed
    assert end_offset(second)["late_files"] == 1

    assert run(spark, s3_server, events.root, tmp_path) == []  # nothing new: no batch
    assert read_ids(spark, tmp_path) == sorted(events.ids)


def test_quiet_trigger_costs_one_list_and_new_keys_one_more(spark, s3_server, events,
                                                            tmp_path):
    events.seed(days=3, hours=4)
    opts = {"reconcile_every": 0, "lookback": 1}
    run(spark, s3_server, events.root, tmp_path, **opts)
    with s3_server.log.capture(bucket=events.bucket) as quiet:
        assert run(spark, s3_server, events.root, tmp_path, **opts) == []
    assert quiet.count("LIST") == 1 and quiet.count("GET") == 0

    for _ in range(3):
        events.add(3, 7)
    with s3_server.log.capture(bucket=events.bucket) as busy:
        progress = run(spark, s3_server, events.root, tmp_path, **opts)
    assert [p["numInputRows"] for p in progress] == [6]
    assert busy.count("LIST") == 1  # the window and the new keys: one page
    assert read_ids(spark, tmp_path) == sorted(events.ids)


def test_a_restart_costs_one_flat_listing(spark, s3_server, events, tmp_path):
    """A restarted query's first trigger (its reconciliation) sends the pages of one flat
    listing of the table, as many as any client's, and reads a file added while it was
    down, once."""
    events.seed(days=2, hours=1)
    hidden = encode(pa.table({"id": pa.array([0], pa.int64())}), "parquet")
    events.server.put_objects_fast(events.bucket, {  # never read: 1,440 keys
        f"events/date=2026-03-0{d}/hour={h:02d}/.part-{i}.crc": hidden
        for d in (1, 2) for h in range(24) for i in range(30)})
    run(spark, s3_server, events.root, tmp_path)
    events.add(1, 5)  # while the query is down, before the frontier
    with s3_server.log.capture(bucket=events.bucket) as flat:
        pages = s3_server.client().get_paginator("list_objects_v2").paginate(
            Bucket=events.bucket, Prefix="events/")
        assert sum(len(p.get("Contents", [])) for p in pages) == 1443
    with s3_server.log.capture(bucket=events.bucket) as restart:
        assert [p["numInputRows"] for p in run(spark, s3_server, events.root,
                                               tmp_path)] == [2]
    assert restart.count("LIST") == flat.count("LIST") == 2
    assert read_ids(spark, tmp_path) == sorted(events.ids)  # each file once


def test_late_file_outside_the_window_is_found_by_reconciliation(spark, s3_server, events,
                                                                 tmp_path):
    events.seed()
    run(spark, s3_server, events.root, tmp_path, reconcile_every=0)
    late = events.put(1, 1, "late.parquet")
    events.add(2, 2)  # inside the window: found without a full listing
    run(spark, s3_server, events.root, tmp_path, reconcile_every=0)
    assert read_ids(spark, tmp_path) == sorted(events.ids)  # the late file is not yet read

    progress = run(spark, s3_server, events.root, tmp_path, reconcile_every=1)
    events.ids += late
    assert read_ids(spark, tmp_path) == sorted(events.ids)
    assert end_offset(progress)["late_files"] == 1


def test_overwritten_or_deleted_after_read_is_not_read_again(spark, s3_server, events,
                                                            tmp_path):
    events.seed()
    run(spark, s3_server, events.root, tmp_path)
    events.put(1, 0, "part-1.parquet")  # same key as the first file, new content and mtime
    s3_server.client().delete_object(Bucket=events.bucket,
                                     Key="events/date=2026-03-01/hour=01/part-2.parquet")
    assert run(spark, s3_server, events.root, tmp_path) == []  # a full listing ran
    assert read_ids(spark, tmp_path) == sorted(events.ids)


# --- Spark: where it starts, what it sees -------------------------------------------------

def test_partition_filter_prunes_discovery(spark, s3_server, events, tmp_path):
    events.seed(days=3, hours=2)
    want = sorted(events.ids[4:8])  # date = 2026-03-02 (files are written day by day)
    with s3_server.log.capture(bucket=events.bucket) as cap:
        run(spark, s3_server, events.root, tmp_path, where="date = '2026-03-02'")
    assert read_ids(spark, tmp_path) == want
    gets = [e.key for e in cap.entries() if e.kind == "GET"]
    assert gets and all("/date=2026-03-02/" in k for k in gets)
    listed = [e.query.get("prefix", "") for e in cap.entries() if e.kind == "LIST"]
    assert listed == ["events/date=2026-03-02/"]  # as a batch scan lists: one prefix


def test_starting_latest_reads_only_files_added_later(spark, s3_server, events, tmp_path):
    events.seed()
    before = list(events.ids)
    assert run(spark, s3_server, events.root, tmp_path, starting="latest") == []
    events.ids = []
    events.add(2, 2)
    events.add(2, 9)
    run(spark, s3_server, events.root, tmp_path, starting="latest")
    assert read_ids(spark, tmp_path) == sorted(events.ids)
    assert not set(before) & set(read_ids(spark, tmp_path))


def test_empty_table_at_start_then_files_arrive(spark, s3_server, events, tmp_path):
    assert run(spark, s3_server, events.root, tmp_path) == []
    events.seed(days=1, hours=2)
    run(spark, s3_server, events.root, tmp_path)
    assert read_ids(spark, tmp_path) == sorted(events.ids)


def test_hidden_and_temporary_files_are_never_read(spark, s3_server, events, tmp_path):
    events.seed(days=1, hours=2)
    events.put(1, 1, "_temporary/0/part-9.parquet")
    events.put(1, 1, "part-9.parquet.inprogress")
    events.put(1, 1, ".part-9.parquet.crc")
    events.put(1, 1, "_SUCCESS")
    run(spark, s3_server, events.root, tmp_path)
    assert read_ids(spark, tmp_path) == sorted(events.ids)


def test_two_queries_on_one_table_each_read_everything(spark, s3_server, events, tmp_path):
    events.seed(days=1, hours=3)
    run(spark, s3_server, events.root, tmp_path / "a")
    events.add(1, 5)
    run(spark, s3_server, events.root, tmp_path / "b", max_files_per_trigger=1)
    run(spark, s3_server, events.root, tmp_path / "a")
    assert read_ids(spark, tmp_path / "a") == read_ids(spark, tmp_path / "b") \
        == sorted(events.ids)


def test_bad_streaming_option_names_itself(spark, s3_server, events, tmp_path):
    events.seed(days=1, hours=1)
    with pytest.raises(Exception, match="lookback='soon'"):
        run(spark, s3_server, events.root, tmp_path, lookback="soon")


# --- the Python API -----------------------------------------------------------------------

def table(events: Events) -> ListingTable:
    return ListingTable.open(events.root, storage_options=events.server.storage_options)


def test_backlog_is_listed_once_and_served_over_triggers(s3_server, events):
    events.seed()
    disc = table(events).discovery(max_files_per_trigger=2, reconcile_every=0)
    found, lists, offset = [], [], None
    for _ in range(3):
        got = disc.new_files(offset)
        found += [f.path for f in got.files]
        lists.append(got.metrics["list_requests"])
        offset = got.offset
    assert lists == [1, 0, 0] and len(found) == 6 == len(set(found))
    quiet = disc.new_files(offset)
    assert quiet.files == [] and quiet.metrics["list_requests"] == 1
    assert quiet.offset == offset


def test_offset_round_trips_through_json_and_restarts_exactly(s3_server, events):
    events.seed()
    first = table(events).discovery(max_files_per_trigger=4).new_files(None)
    saved = json.loads(json.dumps(first.offset.to_json()))
    again = table(events).discovery().files_of(saved)  # a restarted query's plan
    assert [f.path for f in again] == [f.path for f in first.files]
    assert [f.last_modified for f in again] == [f.last_modified for f in first.files]
    rest = table(events).discovery().new_files(saved)
    assert len(rest.files) == 2 and not {f.path for f in rest.files} & {
        f.path for f in first.files}
    assert StreamOffset.from_json(saved) == first.offset


def test_starting_at_a_time_skips_older_files(s3_server, events):
    events.seed(days=1, hours=2)
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    disc = table(events).discovery(starting=later.replace(tzinfo=None).isoformat())
    got = disc.new_files(None)
    assert got.files == [] and got.metrics["files_before_start"] == 2


@pytest.mark.parametrize(("name", "value", "message"), [
    ("lookback", "soon", "lookback='soon'"),
    ("starting", "yesterday", "starting='yesterday'"),
    ("max_files_per_trigger", "0", "max_files_per_trigger"),
    ("reconcile_every", "-1", "reconcile_every"),
    ("max_bytes_per_trigger", "lots", "max_bytes_per_trigger"),
    ("bogus", "1", "unknown streaming option"),
])
def test_bad_options_are_named(s3_server, events, name, value, message):
    events.seed(days=1, hours=1)
    with pytest.raises(OptionError, match=message):
        table(events).discovery(**{name: value})


def test_offset_of_another_version_is_refused():
    with pytest.raises(OptionError, match="version"):
        StreamOffset.from_json({"v": 99})


@pytest.mark.parametrize(("corrupt", "message"), [
    ({"listed": "lots"}, "'listed' is 'lots'"),
    ({"listed": -1}, "'listed' is -1"),
    ({"listed": True}, "'listed' is True"),
    ({"batch": [["date=2026-03-01/hour=00/part-1.parquet"]]}, "malformed"),
    ({"seen_packed": "not base64!"}, "malformed"),
    ({"files": "many"}, "malformed"),
])
def test_a_corrupt_offset_is_refused_by_name(corrupt, message):
    with pytest.raises(OptionError, match=message):
        StreamOffset.from_json({"v": 1, **corrupt})
    assert StreamOffset.from_json({"v": 1, "listed": 7}).listed == 7  # positive control


def test_available_now_lists_once_and_ignores_later_files(s3_server, events):
    events.seed()
    disc = table(events).discovery(max_files_per_trigger=4, reconcile_every=0)
    disc.freeze()  # what Spark's prepareForTriggerAvailableNow does
    first = disc.new_files(None)
    events.add(2, 9)  # arrives after the query started
    second = disc.new_files(first.offset)
    third = disc.new_files(second.offset)
    assert [len(first.files), len(second.files), len(third.files)] == [4, 2, 0]
    assert [first.metrics["list_requests"], second.metrics["list_requests"],
            third.metrics["list_requests"]] == [1, 0, 0]


@pytest.mark.parametrize(("lookback", "window"), [("0", 0), ("2", 2), ("1h", 6)])
def test_lookback_is_partitions_or_a_duration(s3_server, events, lookback, window):
    events.seed()  # 6 partitions, all written within the hour
    disc = table(events).discovery(lookback=lookback, reconcile_every=0)
    offset = disc.new_files(None).offset
    assert len(offset.recent) == window
    events.put(1, 0, "late.parquet")  # inside the window only with "1h"
    found = disc.new_files(offset)
    assert [f.path.rsplit("/", 1)[-1] for f in found.files] == (
        ["late.parquet"] if window == 6 else [])


def test_a_large_remembered_set_is_packed_in_the_offset():
    seen = {f"date=2026-03-{d:02d}/hour={h:02d}/part-{i}.parquet": 1_795_000_000_000_000 + n
            for n, (d, h, i) in enumerate((d, h, i) for d in range(1, 29)
                                          for h in range(24) for i in range(12))}
    offset = StreamOffset(frontier=max(seen), seen=seen)
    packed = json.dumps(offset.to_json())
    assert "seen_packed" in packed and len(packed) < len(json.dumps(seen)) / 5
    assert StreamOffset.from_json(json.loads(packed)) == offset
    small = StreamOffset(seen=dict(list(seen.items())[:3]))
    assert json.loads(json.dumps(small.to_json()))["seen"] == small.seen  # readable


# --- a file of a planned batch rewritten before the batch is read ---------------------------

def test_a_file_rewritten_after_its_batch_was_planned_does_not_wedge_the_stream(
        spark, s3_server, events, tmp_path):
    """The offset of a planned batch pins its files' ETags and a restart replays it: a file
    rewritten in between is read as it is now (counted, logged), on the first run and on
    every restart, instead of a FileChangedError at every restart."""
    events.seed(days=1, hours=2)
    key = "events/date=2026-03-01/hour=00/part-1.parquet"
    seen: list[list[int]] = []

    def rewrite_then_crash(df, batch_id):
        # the batch is planned (its offset is in the checkpoint): rewrite one of its files,
        # then fail as a crashed driver would, before the batch commits
        table = pa.table({"id": pa.array([900, 901, 902], pa.int64()), "amount": [1.0] * 3,
                          "name": ["x"] * 3})
        s3_server.put_objects_fast(events.bucket, {key: encode(table, "parquet")})
        raise RuntimeError("crash after planning")

    def collect(df, batch_id):
        seen.append(sorted(r.id for r in df.select("id").collect()))

    def start(fn) -> str | None:
        """Run the query to its end; the error it stopped with, if any."""
        q = (stream(spark, s3_server, events.root).writeStream.foreachBatch(fn)
             .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True)
             .start())
        return finish(q)

    import listing

    listing.skipped_files(spark, reset=True)
    assert "crash after planning" in (start(rewrite_then_crash) or "")
    for _ in range(2):  # the replayed batch reads the current content; a restart after it
        assert start(collect) is None  # finds nothing new
    assert seen == [[10, 11, 900, 901, 902]]
    # counted where the driver sees it, not only in the task's log
    assert listing.skipped_files(spark, reset=True).get("files_changed") == 1


def test_explicit_on_file_change_error_still_stops_the_stream(spark, s3_server, events,
                                                             tmp_path):
    """Positive control: with storage.on_file_change=error set, the rewritten file is an
    error (the stream's default is what lets it go on)."""
    events.seed(days=1, hours=1)
    key = "events/date=2026-03-01/hour=00/part-1.parquet"

    def rewrite_then_read(df, batch_id):
        table = pa.table({"id": pa.array([900], pa.int64()), "amount": [1.0], "name": ["x"]})
        s3_server.put_objects_fast(events.bucket, {key: encode(table, "parquet")})
        df.count()

    q = (stream(spark, s3_server, events.root, **{"storage.on_file_change": "error"})
         .writeStream.foreachBatch(rewrite_then_read)
         .option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True).start())
    assert "changed since listing" in (finish(q) or "")


def finish(q) -> str | None:
    """Wait for an AvailableNow query to end; the error it stopped with, if any."""
    from pyspark.errors import StreamingQueryException

    try:
        q.awaitTermination(180)
    except StreamingQueryException as err:
        return str(err)
    finally:
        q.stop()
    return None
