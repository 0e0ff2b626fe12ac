"""A query repeated within ``list_cache_ttl`` sends no request (listing.list_cache), whatever
the layout's padding, on the Python API and both Spark engines; counted by moto's log.

A date range is listed as a key range (``StartAfter`` its first date, up to its last):
such a listing, read to its end, is kept with its bounds and answers the same range
again, or any range or directory inside it. The first query of each case is the positive
control: it lists."""

from __future__ import annotations

import datetime as dt
import io
import json
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from listing import ListingTable
from listing.list_cache import ListingCache, covers
from listing.storage.lister import ObjectMeta
from listing.storage.spec import StorageSpec

DAYS, HOURS, PER_HOUR = 31, 24, 3  # 2,232 keys: three pages of a flat listing
QUERIES = {"week": "date BETWEEN DATE '2025-01-10' AND DATE '2025-01-16'",
           "hour": "date = DATE '2025-01-15' AND hour = 7",
           "hours": "date = DATE '2025-01-15' AND hour BETWEEN 6 AND 8"}
FILES = {"week": 7 * HOURS * PER_HOUR, "hour": PER_HOUR, "hours": 3 * PER_HOUR}


def _payload() -> bytes:
    out = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array([1], pa.int64())}), out)
    return out.getvalue()


@pytest.fixture(scope="module", params=["padded", "unpadded"])
def hourly(request, s3_server):
    """An hourly table (``hour=07`` or ``hour=7``) in a bucket of its own: no process has
    listed it yet."""
    bucket = s3_server.create_bucket(f"repeat-{request.param}-{uuid.uuid4().hex[:8]}")
    body = _payload()
    keys = {}
    for d in range(DAYS):
        day = dt.date(2025, 1, 1) + dt.timedelta(days=d)
        for h in range(HOURS):
            hour = f"{h:02d}" if request.param == "padded" else str(h)
            for i in range(PER_HOUR):
                keys[f"t/date={day}/hour={hour}/part-{i}.parquet"] = body
    s3_server.put_objects_fast(bucket, keys)
    yield f"s3://{bucket}/t"
    s3_server.drop_bucket(bucket)


def _lists(s3_server, run) -> tuple[int, int]:
    """(LIST requests, files or rows) of ``run()``; the LIST requests are printed."""
    with s3_server.log.capture() as cap:
        got = run()
    for entry in cap.entries():
        if entry.kind == "LIST":
            print("LIST", dict(entry.query))
    return cap.count("LIST"), got


@pytest.mark.parametrize("query", sorted(QUERIES))
def test_python_api_repeats_send_nothing(s3_server, hourly, query):
    def scan() -> int:  # opened again each time, as a Spark query opens it
        table = ListingTable.open(hourly, storage_options=s3_server.storage_options,
                                  list_cache_ttl="5m")
        return len(table.scan(where=QUERIES[query]).files)

    table = ListingTable.open(hourly, storage_options=s3_server.storage_options,
                              list_cache_ttl="5m")
    table.refresh()  # what an earlier test of this module listed: forgotten
    first = _lists(s3_server, scan)
    assert first[0] >= 1 and first[1] == FILES[query]  # positive control: it listed
    for _ in range(2):
        assert _lists(s3_server, scan) == (0, FILES[query])


@pytest.mark.parametrize("hourly", ["padded"], indirect=True)
def test_spark_native_repeats_send_nothing(spark, s3_server, hourly):
    """On the native engine the listing planner runs in the driver's Python, whose cache
    the repeats share. (The schema is given: no planning worker opens the table at
    ``load()``. A worker's cache lasts only as long as Spark keeps that worker: see
    docs/python-api.md, *Listing cache*.)"""
    ListingTable.open(hourly, storage_options=s3_server.storage_options,
                      list_cache_ttl="5m").refresh()  # this process's cache

    def count(where: str) -> int:
        df = (spark.read.format("listing").option("engine", "native")
              .schema("id bigint, date date, hour int")
              .option("storage_options", json.dumps(s3_server.storage_options))
              .option("list_cache_ttl", "5m").load(hourly).where(where))
        return df.count()

    # the week's key range, listed flat; the 7 x 3 files of hour 7 read (not the 504)
    week = QUERIES["week"] + f" AND hour = 7 AND '{uuid.uuid4().hex}' <> ''"  # no plan reused
    first = _lists(s3_server, lambda: count(week))
    assert first[0] >= 1 and first[1] == 7 * PER_HOUR  # positive control: it listed
    assert _lists(s3_server, lambda: count(week)) == (0, 7 * PER_HOUR)
    # hours inside the week: answered from the week's key range
    assert _lists(s3_server, lambda: count(QUERIES["hours"])) == (0, FILES["hours"])


def _meta(path: str) -> ObjectMeta:
    return ObjectMeta(path, 1)


def test_a_key_range_answers_what_lies_within_it_for_its_ttl():
    """Bounds: a listing of ``(start_after, stop_after]`` answers a request whose keys all
    lie within them, and no other; an entry's age runs from when it was kept."""
    now = [100.0]
    cache = ListingCache(clock=lambda: now[0])
    spec = StorageSpec("s3", {})
    lo, hi = "t/date=2025-01-10", "t/date=2025-01-16/\uffff"
    cache.store(spec, "t/date=2025-01-1", [_meta("t/date=2025-01-12/a")], lo, hi)
    inside = [("t/date=2025-01-1", lo, hi), ("t/date=2025-01-12/", None, None),
              ("t/date=2025-01-1", "t/date=2025-01-11", "t/date=2025-01-12/\uffff")]
    outside = [("t/date=2025-01-1", None, None), ("t/date=2025-01-1", lo, None),
               ("t/date=2025-01-10", None, None),  # its own key is lo: not listed
               ("t/date=2025-01-16/", None, None),  # keys below it may sort past hi
               ("t/date=2025-01-17/", None, None), ("t/date=2025-01-0", None, None),
               ("t/", lo, hi)]
    for want in inside:
        assert cache.lookup(spec, want[0], 60, *want[1:]) is not None, want
    for want in outside:
        assert cache.lookup(spec, want[0], 60, *want[1:]) is None, want
    assert covers("t/", None, None, "t/x/", "a", "b")  # a whole listing covers all below
    now[0] += 59.9
    assert cache.lookup(spec, "t/date=2025-01-12/", 60) is not None
    now[0] += 0.2
    assert cache.lookup(spec, "t/date=2025-01-12/", 60) is None  # 60.1 s old: expired
    cache.store(spec, "t/date=2025-01-1", [], lo, hi)
    cache.invalidate(spec, "t/date=2025-01-12/")  # a commit below it drops it
    assert cache.lookup(spec, "t/date=2025-01-12/", 60) is None


def test_native_takes_the_ttl_only_where_the_planner_feeds_spark(spark, tmp_path):
    """Without the driver's planner (Spark Connect, no callback) Spark's own file index
    lists, and cannot honour the cache: the scan stays on the Python engine and
    ``engine=native`` names the option."""
    from listing.spark.file_index import register_planner, unregister_planner
    from listing.testing import datasets

    ds = datasets.daily(str(tmp_path / "t"), days=2)

    def read(engine: str):
        return (spark.read.format("listing").option("engine", engine)
                .option("list_cache_ttl", "5m").load(ds.root))

    def plan(df) -> str:
        return df._jdf.queryExecution().executedPlan().toString()

    native = read("native")  # positive control: the planner feeds Spark's reader
    assert "FileScan parquet" in plan(native) and native.count() == ds.num_rows
    unregister_planner(spark)
    try:
        with pytest.raises(Exception, match="engine=native.*list_cache_ttl"):
            read("native")
        auto = read("auto")
        assert "BatchScan listing" in plan(auto) and auto.count() == ds.num_rows
    finally:
        assert register_planner(spark)
