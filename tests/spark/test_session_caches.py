"""Repeated queries of one table in a session, on moto: what they send again.

Under ``list_cache_ttl`` a query that repeats an earlier one sends no request at all (the
sampled first page, the listings, the schema's footer and a ``count()``'s footers are
kept), and one that differs in its filter sends only the LISTs of its new prefixes. By
default listings are sent again (a new query sees new files) while footers, keyed by the
file's version, are not: a rewritten file is read again. Through the Python API and
through ``spark.read.format("listing")``, whose planning and task workers Spark reuses.
"""

from __future__ import annotations

import json

import pyarrow as pa

from listing import ListingTable
from listing.formats.parquet import FOOTERS
from listing.list_cache import CACHE, CachedLister
from listing.metrics import Counters
from listing.schema_cache import SCHEMAS
from listing.storage.spec import StorageSpec
from listing.testing import datasets


def _daily(s3_server, bucket, days=4):
    return datasets.daily(f"s3://{bucket}/events", s3_server.storage_options, days=days,
                          rows_per_file=5, put=datasets.fast_writer(s3_server))


#: days of a table of more than one page (1000 keys): open()'s sample does not hold it all
PAGES = 520


def _lists(cap):
    return [e.query.get("prefix") for e in cap.entries() if e.kind == "LIST"]


# --- the Python API ------------------------------------------------------------------------

def test_a_repeated_open_and_scan_send_nothing_under_the_ttl(s3_server, s3_bucket):
    ds = _daily(s3_server, s3_bucket, days=PAGES)
    opts = s3_server.storage_options
    SCHEMAS.clear()

    def query(where):
        with s3_server.log.capture(s3_bucket) as cap:
            table = ListingTable.open(ds.root, storage_options=opts, list_cache_ttl="5m",
                                      cache_schema=True)
            plan = table.scan(where=where)
        return plan, cap

    first, cap = query("date = '2025-01-02'")
    assert _lists(cap) == ["events/", "events/date=2025-01-02/"] and cap.count("GET") == 1
    again, cap = query("date = '2025-01-02'")
    assert cap.counts() == {} and again.metrics["list_cache_hits"] == 1
    assert [f.path for f in again.files] == [f.path for f in first.files]
    other, cap = query("date = '2025-01-03'")  # only the new prefix
    assert _lists(cap) == ["events/date=2025-01-03/"] and cap.count("GET") == 0
    assert len(other.files) == 2
    # positive control: refresh() forgets the sampled page and the listings
    ListingTable.open(ds.root, storage_options=opts, list_cache_ttl="5m").refresh()
    _, cap = query("date = '2025-01-02'")
    assert _lists(cap) == ["events/", "events/date=2025-01-02/"]


def test_a_listing_that_stopped_early_starts_from_the_kept_pages(s3_server, s3_bucket):
    """A table whose listing fits one page is known whole after open()'s sample; one of
    several pages keeps its first page, and a scan of the whole table lists on after it."""
    small = _daily(s3_server, s3_bucket, days=3)
    opts = s3_server.storage_options
    ListingTable.open(small.root, storage_options=opts, list_cache_ttl="5m").refresh()
    with s3_server.log.capture(s3_bucket) as cap:
        table = ListingTable.open(small.root, storage_options=opts, list_cache_ttl="5m")
        plan = table.scan(where="region = 'eu'")
    assert _lists(cap) == ["events/"] and len(plan.files) == 3  # the sample was all of it

    big = datasets.daily(f"s3://{s3_bucket}/big", opts, days=PAGES,
                         put=datasets.fast_writer(s3_server))
    with s3_server.log.capture(s3_bucket) as cap:
        table = ListingTable.open(big.root, storage_options=opts, list_cache_ttl="5m")
        plan = table.scan()
    starts = [e.query.get("start-after") for e in cap.entries() if e.kind == "LIST"]
    assert len(starts) == 2 and starts[0] is None and starts[1] is not None, cap.entries()
    assert sorted(f.path for f in plan.files) == sorted(f.path for f in big.files)


def test_a_directory_listing_is_answered_again_from_the_cache(s3_server, s3_bucket):
    _daily(s3_server, s3_bucket, days=3)
    spec = StorageSpec("s3", s3_server.storage_options)
    CACHE.invalidate(spec, s3_bucket + "/")

    def listed(prefix):
        lister = CachedLister(spec, Counters(), ttl=300)
        with s3_server.log.capture(s3_bucket) as cap:
            pages = list(lister.pages(prefix, delimiter=True))
        return pages, cap.count("LIST"), lister.counters["list_cache_hits"]

    first, lists, hits = listed(f"{s3_bucket}/events/")
    assert (lists, hits) == (1, 0)
    assert [d.rsplit("/", 2)[1] for d in first[0].dirs] == [
        "date=2025-01-01", "date=2025-01-02", "date=2025-01-03"]
    again, lists, hits = listed(f"{s3_bucket}/events/")
    assert (lists, hits) == (0, 1) and again[0].dirs == first[0].dirs
    # positive control: another directory is listed, once
    assert listed(f"{s3_bucket}/events/date=2025-01-02/")[1:] == (1, 0)


def test_a_count_reads_each_footer_once_per_file_version(s3_server, s3_bucket):
    """Without the listing cache every scan lists again; a read of no column takes the
    footers it read before. A rewritten file is listed with its new ETag and read again
    (the positive control), its new row count returned."""
    ds = _daily(s3_server, s3_bucket, days=2)
    FOOTERS.clear()

    def count():
        with s3_server.log.capture(s3_bucket) as cap:
            table = ListingTable.open(ds.root, storage_options=s3_server.storage_options,
                                      schema=ds.schema)
            rows = table.scan(columns=[]).to_arrow().num_rows
        return rows, cap

    rows, cap = count()
    assert rows == ds.num_rows and cap.count("GET") == len(ds.files) == 4
    rows, cap = count()
    assert rows == ds.num_rows and cap.count("GET") == 0 and cap.count("LIST") >= 1
    changed = next(f for f in ds.files if f.partition_values["region"] == "eu")
    key = changed.path.split(f"s3://{s3_bucket}/", 1)[1]
    more = pa.table({n: pa.concat_arrays([changed.table[n].combine_chunks()] * 3)
                     for n in ds.schema.names})
    s3_server.put_objects_fast(s3_bucket, {key: datasets.encode(more, "parquet")})
    rows, cap = count()
    assert rows == ds.num_rows + 2 * changed.num_rows
    assert [e.key for e in cap.entries() if e.kind == "GET"] == [key]


# --- through Spark -------------------------------------------------------------------------

def _spark_count(spark, s3_server, ds, where, **options):
    reader = (spark.read.format("listing").option("format", "parquet")
              .option("storage_options", json.dumps(s3_server.storage_options)))
    for k, v in options.items():
        reader = reader.option(k, v)
    bucket = ds.root.split("/")[2]
    with s3_server.log.capture(bucket) as cap:
        rows = reader.load(ds.root).where(where).count()
    return rows, cap


#: repeats of a query within which every reused task worker holds its footers: Spark hands
#: a task the idle worker that waited longest, so a session's earlier queries, leaving
#: several idle, rotate a query's tasks over all of them
MOST_REPEATS = 16


def _until_no_get(run):
    """``run()``'s ``(rows, capture)`` repeated until a repeat sends no GET (at most
    :data:`MOST_REPEATS` times): every worker a task landed on read each footer once."""
    repeats = [run()]
    while repeats[-1][1].count("GET") and len(repeats) < MOST_REPEATS:
        repeats.append(run())
    return repeats


def test_spark_queries_repeated_under_the_ttl_send_only_new_lists(spark, s3_server,
                                                                  s3_bucket):
    """The planning workers Spark reuses keep the listing and schema caches, the task
    workers the footers: the same query again sends nothing; another date, its one LIST."""
    ds = _daily(s3_server, s3_bucket, days=PAGES)
    day = [f for f in ds.files if str(f.partition_values["date"]) == "2025-01-02"]
    rows, cap = _spark_count(spark, s3_server, ds, "date = '2025-01-02'",
                             list_cache_ttl="5m", engine="python")
    assert rows == sum(f.num_rows for f in day)
    assert _lists(cap) == ["events/", "events/date=2025-01-02/"]
    assert cap.count("GET") >= len(day)  # the schema's footer and the count's
    repeats = _until_no_get(lambda: _spark_count(spark, s3_server, ds, "date = '2025-01-02'",
                                                 list_cache_ttl="5m", engine="python"))
    assert [r for r, _ in repeats] == [rows] * len(repeats)
    assert all(_lists(c) == [] for _, c in repeats)
    # footers: kept by each task worker once it has read them
    gets = [c.count("GET") for _, c in repeats]
    assert gets[-1] == 0, gets
    assert all(g <= len(day) for g in gets), gets
    rows, cap = _spark_count(spark, s3_server, ds, "date = '2025-01-03'",
                             list_cache_ttl="5m", engine="python")
    assert rows == sum(f.num_rows for f in ds.files
                       if str(f.partition_values["date"]) == "2025-01-03")
    assert _lists(cap) == ["events/date=2025-01-03/"]  # only the new prefix


def test_spark_count_rereads_only_a_rewritten_file(spark, s3_server, s3_bucket):
    """By default every query lists (new files are seen) and a count's footers come from
    the task workers' cache; a file rewritten in place is listed with its new ETag and
    read again (the positive control), its new row count returned."""
    ds = _daily(s3_server, s3_bucket, days=2)
    where = "date = '2025-01-02' AND region = 'eu'"
    (one,) = [f for f in ds.files if str(f.partition_values["date"]) == "2025-01-02"
              and f.partition_values["region"] == "eu"]
    first = _spark_count(spark, s3_server, ds, where, engine="python")
    counts = [first, *_until_no_get(lambda: _spark_count(spark, s3_server, ds, where,
                                                         engine="python"))]
    assert [r for r, _ in counts] == [one.num_rows] * len(counts)
    assert all(c.count("LIST") == 2 for _, c in counts)  # the sample and the partition
    gets = [c.count("GET") for _, c in counts[1:]]
    assert gets[-1] == 0 and all(g <= 1 for g in gets), gets  # one file: its footer
    key = one.path.split(f"s3://{s3_bucket}/", 1)[1]
    more = pa.table({n: pa.concat_arrays([one.table[n].combine_chunks()] * 2)
                     for n in ds.schema.names})
    s3_server.put_objects_fast(s3_bucket, {key: datasets.encode(more, "parquet")})
    rows, cap = _spark_count(spark, s3_server, ds, where, engine="python")
    assert rows == 2 * one.num_rows
    assert [e.key for e in cap.entries() if e.kind == "GET"] == [key]
