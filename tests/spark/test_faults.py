"""The toolkit against a misbehaving store: the moto server behind a fault-injecting proxy.

A transient storage failure is never a "corrupt file" to skip: after the client's retries
it fails the read with an error naming the file; under a rate of transient faults that
the retries absorb, results are exact. Retries are bounded by ``max_retries`` (s3fs's own
loop never multiplies botocore's), counted in ``plan.metrics`` and kept short here with
``retry_max_backoff`` so no test waits on backoff.
"""

from __future__ import annotations

import json
import time
import uuid

import pyarrow as pa
import pytest

from listing import ListingTable
from listing.errors import StorageError
from listing.testing import datasets
from listing.testing.faults import FaultProxy

#: retries kept short so a test never waits on its backoff for long
FAST = {"max_retries": 3, "retry_max_backoff": 0.05}
FAULT_KINDS = ["503", "500", "reset", "truncate"]
FORMATS = ["parquet", "csv", "csv.gz", "ndjson", "arrow"]
READ_FORMAT = {"parquet": "parquet", "csv": "csv", "csv.gz": "csv", "ndjson": "json",
               "arrow": "arrow"}


@pytest.fixture
def proxy(s3_server):
    with FaultProxy(s3_server.endpoint_url) as p:
        yield p


@pytest.fixture
def small(s3_server, s3_bucket):
    return datasets.daily(f"s3://{s3_bucket}/events", s3_server.storage_options, days=4,
                          put=datasets.fast_writer(s3_server))


def opts(proxy, **extra):
    return {**proxy.storage_options, **FAST, **extra}


# --- transient failures are storage errors, not corrupt files ---------------------------

@pytest.mark.parametrize("fault", ["500", "reset"])
def test_transient_failure_is_not_skipped_as_corrupt(proxy, small, fault):
    victim = small.files[1].path.split("/", 3)[3]
    table = ListingTable.open(small.root, storage_options=opts(proxy, max_retries=1),
                              ignore_corrupt_files=True, ignore_missing_files=True)
    plan = table.scan()
    proxy.add_rule("GET", fault, path_contains=victim)
    with pytest.raises(StorageError, match=victim.replace("=", ".")):
        plan.collect()  # raised: not skipped as corrupt, though ignore_corrupt_files is set
    assert proxy.stats.faults(op="GET", fault=fault) >= 1
    proxy.clear_rules()
    assert plan.to_arrow().num_rows == small.num_rows  # the same plan reads once it recovers


def test_retries_absorb_a_rate_of_503s(proxy, small):
    # threads draw the faults in no fixed order: with 4 attempts a file meets 4 faults in a
    # row often enough to fail a run now and then (0.3**4 a file); 10 attempts make it 6e-6
    table = ListingTable.open(small.root, storage_options=opts(proxy, max_retries=9))
    plan = table.scan(where="date >= '2025-01-02'")
    want = sum(f.table.num_rows for f in small.files
               if str(f.partition_values["date"]) >= "2025-01-02")
    proxy.add_rule("GET", "503", rate=0.3, seed=3)
    assert plan.to_arrow().num_rows == want
    assert proxy.stats.faults(op="GET", fault="503") >= 1


# --- retries: bounded by max_retries, counted -------------------------------------------

def test_list_retries_are_counted_in_the_plan(proxy, small):
    table = ListingTable.open(small.root, storage_options=opts(proxy))
    proxy.add_rule("LIST", "503", times=2)
    plan = table.scan()
    assert {f.path for f in plan.files} == small.paths
    assert proxy.stats.faults(op="LIST", fault="503") == 2
    assert plan.metrics["list_retries"] == 2


def test_read_retries_are_counted_in_the_plan(proxy, small):
    plan = ListingTable.open(small.root, storage_options=opts(proxy)).scan()
    assert plan.metrics["list_retries"] == 0
    proxy.add_rule("GET", "503", times=2)
    proxy.add_rule("GET", "truncate", times=1)  # a body cut short: re-requested by us
    got = plan.collect()
    assert got.table.num_rows == small.num_rows
    assert proxy.stats.faults(op="GET") == 3
    assert got.metrics["read_retries"] == 3


def test_persistent_503_with_max_retries_1_fails_fast_naming_the_prefix(proxy, small):
    proxy.add_rule("LIST", "503")
    start = time.monotonic()
    with pytest.raises(StorageError, match=r"listing s3://[^ ]+/events/ failed after 2 "
                                           r"attempts \(max_retries=1\): SlowDown \(HTTP 503\)"):
        ListingTable.open(small.root, storage_options=opts(proxy, max_retries=1))
    assert time.monotonic() - start < 3
    assert proxy.stats.faults(op="LIST") == 2  # not 5 x 5 = 25 (botocore x s3fs)


def test_default_attempts_are_bounded_not_multiplied(proxy, small):
    """Defaults: 4 retries, 5 attempts per request, for a 503 as for anything else."""
    proxy.add_rule("LIST", "503")
    with pytest.raises(StorageError, match="after 5 attempts"):
        ListingTable.open(small.root, storage_options={**proxy.storage_options,
                                                       "retry_max_backoff": 0.01})
    assert proxy.stats.faults(op="LIST") == 5


@pytest.mark.parametrize("fault", FAULT_KINDS)
def test_persistent_list_fault_is_a_storage_error_after_max_retries(proxy, small, fault):
    proxy.add_rule("LIST", fault)
    with pytest.raises(StorageError, match=r"listing s3://[^ ]+/events/ failed") as err:
        ListingTable.open(small.root, storage_options=opts(proxy, max_retries=2))
    assert "(max_retries=2)" in str(err.value)
    injected = proxy.stats.faults(op="LIST")
    # aiohttp re-sends an idempotent request once when the connection is reset
    assert injected == 3 if fault != "reset" else 3 <= injected <= 6


@pytest.mark.parametrize("fault", FAULT_KINDS)
def test_persistent_get_fault_is_a_storage_error_naming_the_file(proxy, small, fault):
    plan = ListingTable.open(small.root, storage_options=opts(proxy, max_retries=2)).scan()
    victim = small.files[0].path
    proxy.add_rule("GET", fault, path_contains=victim.split("/", 3)[3])
    with pytest.raises(StorageError, match=f"reading {victim} failed") as err:
        plan.to_arrow()
    assert "(max_retries=2)" in str(err.value)
    injected = proxy.stats.faults(op="GET")
    assert injected == 3 if fault != "reset" else 3 <= injected <= 6


# --- the fault suite: exact results or a clear error, never a partial or wrong one ----------

@pytest.fixture(scope="module")
def big(s3_server):
    """2,500 keys: planning lists them in three pages."""
    bucket = s3_server.create_bucket(f"faults-big-{uuid.uuid4().hex[:8]}")
    payload = datasets.encode(pa.table({"id": [1]}), "parquet")
    keys = [f"big/date=2025-01-{d:02d}/part-{i:03d}.parquet"
            for d in range(1, 26) for i in range(100)]
    s3_server.put_objects_fast(bucket, {k: payload for k in keys})
    yield f"s3://{bucket}/big", {f"{bucket}/{k}" for k in keys}
    s3_server.drop_bucket(bucket)


def _open_big(root, options, **table_options):
    return ListingTable.open(root, storage_options=options, schema=pa.schema([("id", pa.int64())]),
                             partition_cols=[("date", "date")], **table_options)


@pytest.mark.parametrize("fault", [*FAULT_KINDS, "mixed"])
def test_paged_listing_under_list_faults_is_exact_or_an_error(proxy, big, fault):
    root, keys = big
    if fault == "mixed":
        for kind, seed in zip(FAULT_KINDS, (14, 1, 8, 2), strict=True):
            proxy.add_rule("LIST", kind, rate=0.15, seed=seed)
    else:
        proxy.add_rule("LIST", fault, rate=0.35, seed=4)  # seeded: the first request fails
    table = _open_big(root, opts(proxy))
    try:
        plan = table.scan()
    except StorageError as err:
        assert f"listing {root}/" in str(err)
        return
    assert plan.metrics["list_requests"] >= 3
    assert {f.path.removeprefix("s3://") for f in plan.files} == keys  # never partial
    assert proxy.stats.faults(op="LIST") >= 1
    assert plan.metrics["list_retries"] >= 1


@pytest.mark.parametrize("concurrency, failed", [(1, 1), (8, 2)])
def test_a_later_page_failing_is_an_error_not_a_partial_list(proxy, big, concurrency, failed):
    """Every LIST after the first page fails: the second page's error, after its two
    attempts; at 8 at a time, the delimiter page sent beside it fails its two too."""
    root, _ = big
    table = _open_big(root, opts(proxy, max_retries=1), max_concurrent_requests=concurrency)

    def fail_from_now_on(requests, keys):
        if not proxy.rules:
            proxy.add_rule("LIST", "500")

    with pytest.raises(StorageError, match=f"listing {root}/ failed after 2 attempts"):
        table.scan(progress=fail_from_now_on)
    assert proxy.stats.faults(op="LIST") == 2 * failed


@pytest.fixture(scope="module")
def tables(s3_server):
    """One small daily table per built-in format (12 files each)."""
    bucket = s3_server.create_bucket(f"faults-fmt-{uuid.uuid4().hex[:8]}")
    out = {fmt: datasets.daily(f"s3://{bucket}/{fmt}", s3_server.storage_options, days=6,
                               format=fmt, put=datasets.fast_writer(s3_server))
           for fmt in FORMATS}
    yield out
    s3_server.drop_bucket(bucket)


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_under_get_faults_is_exact_or_an_error(proxy, tables, fmt):
    ds = tables[fmt]
    plan = ListingTable.open(ds.root, format=READ_FORMAT[fmt],
                             storage_options=opts(proxy)).scan()
    want = plan.to_arrow().sort_by("id")  # no faults yet
    assert want.num_rows == ds.num_rows
    for i, kind in enumerate(FAULT_KINDS):
        proxy.add_rule("GET", kind, rate=0.1, seed=100 * i + len(fmt))
    try:
        got = plan.collect()
    except StorageError as err:
        assert f"reading {ds.root}/" in str(err)
        return
    assert got.table.sort_by("id").equals(want)
    assert proxy.stats.faults(op="GET") >= 1
    assert got.metrics["read_retries"] >= 1


def test_spark_count_under_get_faults_is_exact_or_an_error(spark, proxy, tables):
    ds = tables["parquet"]
    reader = (spark.read.format("listing").option("format", "parquet")
              .option("storage_options", json.dumps(opts(proxy))))
    df = reader.load(ds.root + "/")
    assert df.count() == ds.num_rows
    for i, kind in enumerate(FAULT_KINDS):
        proxy.add_rule("GET", kind, rate=0.1, seed=7 + i)
    try:  # a column read: a count() alone may take every footer from the workers' cache
        count = reader.load(ds.root + "/").where("id >= 0").count()
    except Exception as err:  # noqa: BLE001 - Spark wraps the worker's error
        assert "StorageError" in str(err) and f"reading {ds.root}/" in str(err)
        return
    assert count == ds.num_rows
    assert proxy.stats.faults(op="GET") >= 1
