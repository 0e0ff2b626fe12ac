"""Parallel listing (``max_concurrent_requests``): the same files, in the same order, with
the same metrics as the sequential run, on the moto S3 server.

Enumerated and walked prefixes send exactly the sequential run's requests, only several at
a time; a long flat listing split into key ranges costs at most its flat pages + one
partial page per range + the delimiter page that names the split points. Both sides of
every comparison are counted from the plan's metrics and from moto's request log.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import threading
import time
import uuid

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_pruning_property import COLUMNS, layout, predicates, trees

from listing import ListingTable, OptionError, col
from listing.errors import StorageError
from listing.testing.faults import FaultProxy

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

SCHEMA = pa.schema([("x", pa.int64())])
START = dt.date(2025, 1, 1)
DAYS, HOURS, PER_HOUR = 60, 6, 30  # 10 800 keys: 11 flat pages, enough to be split
FAST = {"max_retries": 1, "retry_max_backoff": 0.05}
HOURLY_COLS = (("d", pa.date32()), ("n", pa.int32()))


def open_table(url, options, parallel, cols=HOURLY_COLS):
    return ListingTable.open(url, storage_options=options, partition_cols=list(cols),
                             schema=SCHEMA, max_concurrent_requests=parallel)


def scan_counted(server, table, where=None):
    with server.log.capture() as cap:
        plan = table.scan(where=where)
    assert plan.metrics["list_requests"] == cap.count("LIST")
    return plan


def ranges_of(plan) -> int:
    found = [int(m.group(1)) for line in plan.listing_plan
             if (m := re.search(r"as (\d+) key ranges at once", line))]
    return sum(found)


def assert_same(seq, par, *, ranged_ok=False):
    """``par`` planned exactly ``seq``'s files in ``seq``'s order, with its metrics."""
    assert [f.path for f in par.files] == [f.path for f in seq.files]
    assert [f.partition_values for f in par.files] == [f.partition_values for f in seq.files]
    for name, value in seq.metrics.items():
        if name != "list_requests":
            assert par.metrics[name] == value, name
    ranges = ranges_of(par)
    probed = any("1 delimiter page" in line for line in par.listing_plan)
    if not ranges and not probed:
        assert par.metrics["list_requests"] == seq.metrics["list_requests"]
        assert par.listing_plan == seq.listing_plan
    else:
        assert ranged_ok, par.listing_plan
        assert par.metrics["list_requests"] <= seq.metrics["list_requests"] + ranges + 1


# --- a table long enough to be split ------------------------------------------------------

@pytest.fixture(scope="module")
def hourly(s3_server):
    bucket = s3_server.create_bucket(f"par-hourly-{uuid.uuid4().hex[:8]}")
    keys = {f"t/d={START + dt.timedelta(days=d)}/n={h:02d}/part-{i:02d}.parquet": b""
            for d in range(DAYS) for h in range(HOURS) for i in range(PER_HOUR)}
    keys["t/_SUCCESS"] = b""
    s3_server.put_objects_fast(bucket, keys)
    yield f"s3://{bucket}/t", len(keys)
    s3_server.drop_bucket(bucket)


@pytest.fixture
def hourly_tables(s3_server, hourly):
    """Fresh tables each test: a table learns its layout from its scans, so sequential and
    parallel sides are compared in the same (unlearned) state whatever ran before."""
    url, _ = hourly
    return {p: open_table(url, s3_server.storage_options, p) for p in (1, 4, 8)}


HOURLY_FILTERS = [
    None,
    "n = 2",  # flat, re-decided page by page: split once no other plan is in view
    "n IN (1, 4)",
    f"d = '{START + dt.timedelta(days=9)}'",
    f"d = '{START + dt.timedelta(days=9)}' AND n = 3",
    f"d BETWEEN '{START + dt.timedelta(days=5)}' AND '{START + dt.timedelta(days=25)}'",
    f"d IN ('{START}', '{START + dt.timedelta(days=30)}', '{START + dt.timedelta(days=59)}')",
    f"d >= '{START + dt.timedelta(days=40)}' AND n < 2",
    f"d < '{START + dt.timedelta(days=3)}' OR n = 5",
]


@pytest.mark.parametrize("where", HOURLY_FILTERS)
def test_parallel_plan_is_the_sequential_plan(s3_server, hourly_tables, where):
    seq = scan_counted(s3_server, hourly_tables[1], where)
    assert ranges_of(seq) == 0
    for parallel in (4, 8):
        assert_same(seq, scan_counted(s3_server, hourly_tables[parallel], where),
                    ranged_ok=True)


def test_full_listing_is_split_and_costs_at_most_one_page_more_per_range(s3_server, hourly,
                                                                         hourly_tables):
    _, n_keys = hourly
    flat_pages = math.ceil(n_keys / 1000)
    seq = scan_counted(s3_server, hourly_tables[1])
    assert seq.metrics["list_requests"] == flat_pages
    par = scan_counted(s3_server, hourly_tables[8])
    ranges = ranges_of(par)
    assert 2 <= ranges <= 8, par.listing_plan
    assert par.metrics["list_requests"] <= flat_pages + ranges + 1
    assert [f.path for f in par.files] == [f.path for f in seq.files]
    assert par.metrics["files_listed"] == n_keys


def test_fully_declared_table_samples_then_splits(s3_server, hourly):
    """No profile at all: the first page is the sample, the rest is split."""
    url, n_keys = hourly
    plans = {}
    for parallel in (1, 6):
        table = open_table(url, s3_server.storage_options, parallel)
        plans[parallel] = scan_counted(s3_server, table, "n = 4")
        assert table.profile is not None
    assert_same(plans[1], plans[6], ranged_ok=True)


@pytest.mark.parametrize("start", [0, 2500, 3999, 7777, 10799])
def test_start_after_is_respected_by_every_range(s3_server, hourly, start):
    url, _ = hourly
    table = open_table(url, s3_server.storage_options, 8)
    keys = sorted(f.path.removeprefix("s3://") for f in table.scan().files)
    after = keys[start]
    results = {}
    for sequential in (True, False):  # a stream's run: the table's, after its frontier
        run = table.listing_run(start_after=after, sequential=sequential)
        assert run.max_concurrent_requests == (1 if sequential else 8)
        results[sequential] = [f.meta.path for f in run.files()]
    assert results[True] == results[False] == keys[start + 1:]


# --- random layouts and filters -------------------------------------------------------------

@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data(), tree=trees())
def test_random_trees_plan_alike(s3_server, data, tree):
    names, rows, _, _, _ = tree
    bucket = s3_server.create_bucket(f"par-prop-{uuid.uuid4().hex[:12]}")
    try:
        keys = layout("t", tree, frozenset())
        s3_server.put_objects_fast(bucket, dict.fromkeys(keys, b""))
        cols = [(n, COLUMNS[n]) for n in names]
        seq_t, par_t = (open_table(f"s3://{bucket}/t", s3_server.storage_options, p, cols)
                        for p in (1, 4))
        for _ in range(3):
            predicate = data.draw(predicates(names, rows))
            assert_same(scan_counted(s3_server, seq_t, predicate),
                        scan_counted(s3_server, par_t, predicate), ranged_ok=True)
    finally:
        s3_server.drop_bucket(bucket)


# --- concurrency bound ------------------------------------------------------------------------

class InFlight:
    """Wraps the one S3 call every listing goes through: how many run at once."""

    def __init__(self, monkeypatch, delay=0.02):
        import listing.storage.lister as storage

        self.now = self.most = self.calls = 0
        self.lock = threading.Lock()
        real = storage.s3_call

        def call(fs, method, **kwargs):
            with self.lock:
                self.now += 1
                self.calls += 1
                self.most = max(self.most, self.now)
            try:
                time.sleep(delay)
                return real(fs, method, **kwargs)
            finally:
                with self.lock:
                    self.now -= 1

        monkeypatch.setattr(storage, "s3_call", call)


@pytest.mark.parametrize("where", [None, "n IN (1, 4)",
                                   f"d >= '{START + dt.timedelta(days=40)}' AND n < 2"])
def test_one_request_at_a_time_means_one(s3_server, hourly_tables, monkeypatch, where):
    flight = InFlight(monkeypatch)
    plan = hourly_tables[1].scan(where=where)
    assert flight.most == 1 and flight.calls == plan.metrics["list_requests"]


@pytest.mark.parametrize("parallel", [2, 4])
def test_concurrency_is_bounded(s3_server, hourly, monkeypatch, parallel):
    url, _ = hourly
    table = open_table(url, s3_server.storage_options, parallel)
    flight = InFlight(monkeypatch)
    plan = table.scan(where="n IN (1, 4)")  # a walk over 60 days, then 120 prefixes
    assert flight.most == parallel
    assert flight.calls == plan.metrics["list_requests"]


# --- failures ---------------------------------------------------------------------------------

@pytest.fixture
def proxy(s3_server):
    with FaultProxy(s3_server.endpoint_url) as p:
        yield p


def failing_scan(proxy, url, parallel, where, fail_after):
    table = open_table(url, {**proxy.storage_options, **FAST}, parallel)
    seen = []

    def progress(requests, keys):
        seen.append(requests)
        if len(seen) == fail_after and not proxy.rules:
            proxy.add_rule("LIST", "500")

    with pytest.raises(StorageError) as err:
        table.scan(where=where, progress=progress)
    proxy.clear_rules()
    return str(err.value)


@pytest.mark.parametrize("where", [None, "n IN (1, 4)", "n = 2",
                                   f"d >= '{START + dt.timedelta(days=40)}' AND n < 2"])
@pytest.mark.parametrize("fail_after", [1, 2])
def test_a_failing_server_is_the_same_clear_error(proxy, hourly, where, fail_after):
    url, _ = hourly
    messages = [failing_scan(proxy, url, p, where, fail_after) for p in (1, 4)]
    pattern = re.compile(r"listing s3://\S+ failed after 2 attempts \(max_retries=1\): "
                         r"InternalError \(HTTP 500\)")
    for message in messages:
        assert pattern.search(message), message


def test_no_partial_result_and_no_thread_left(proxy, hourly):
    url, _ = hourly
    before = {t.name for t in threading.enumerate()}
    failing_scan(proxy, url, 8, "n IN (1, 4)", 3)
    time.sleep(0.1)
    assert not [t for t in threading.enumerate()
                if t.name == "listing-fetch" and t.name not in before and t.is_alive()]


# --- the option -------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [0, -1, "many", 65, "1.5"])
def test_bad_values_are_clear_option_errors(value):
    with pytest.raises(OptionError, match="max_concurrent_requests"):
        ListingTable.open("memory://nowhere/t", partition_cols=[("d", "date")], schema=SCHEMA,
                          max_concurrent_requests=value)


def test_default_and_string_values():
    from listing.options import ListingOptions

    assert ListingOptions().max_concurrent_requests == 8
    assert ListingOptions.from_dict({"max_concurrent_requests": "1"}).max_concurrent_requests == 1


def test_local_files_list_alike(tmp_path):
    """fsspec's local filesystem from several threads: the same plan."""
    for d in range(5):
        for h in range(3):
            folder = tmp_path / f"d={START + dt.timedelta(days=d)}" / f"n={h}"
            folder.mkdir(parents=True)
            (folder / "part-0.parquet").write_bytes(b"")
    plans = {p: open_table(str(tmp_path), {}, p).scan(where=col("n").isin([0, 2]))
             for p in (1, 4)}
    assert_same(plans[1], plans[4])


def sequential_and_parallel(server, keys, where=None):
    """The plans of one table of empty ``keys`` (under ``t/`` of a bucket of their own),
    scanned one request at a time and 8 at a time, each counted on the server."""
    bucket = server.create_bucket(f"par-{uuid.uuid4().hex[:8]}")
    try:
        server.put_objects_fast(bucket, dict.fromkeys(keys, b""))
        url = f"s3://{bucket}/t"
        return tuple(scan_counted(server, open_table(url, server.storage_options, p), where)
                     for p in (1, 8))
    finally:
        server.drop_bucket(bucket)


@pytest.mark.parametrize("n_keys, pages, probed", [(900, 1, False), (1500, 2, True),
                                                    (2400, 3, True)])
def test_a_short_listing_costs_its_pages_and_one_delimiter_page_at_most(s3_server, n_keys,
                                                                        pages, probed):
    """One page: exactly the flat listing. Longer: the delimiter page that looks for
    split points goes out beside the second page; when the rest is too short to split,
    it is the only request more, and the plan says so."""
    seq, par = sequential_and_parallel(s3_server, (
        f"t/d={START + dt.timedelta(days=i // 300)}/n={i % 300 // 30:02d}/"
        f"part-{i % 30:02d}.parquet" for i in range(n_keys)))
    assert seq.metrics["list_requests"] == pages
    assert [f.path for f in par.files] == [f.path for f in seq.files]
    assert len(par.files) == n_keys and ranges_of(par) == 0
    assert par.metrics["list_requests"] == pages + probed
    assert any("1 delimiter page" in line for line in par.listing_plan) == probed


@pytest.mark.parametrize("per_dir, n_keys", [(2, 2400), (2, 5200), (3, 6000)])
@pytest.mark.parametrize("where", [None, "n = 1"])
def test_directories_too_small_to_split_send_no_delimiter_page(s3_server, per_dir, n_keys,
                                                               where):
    """Two or three keys a directory (a daily table with two regions): the delimiter page
    names at most 1000 directories, 2 or 3 pages of keys, one of which the page fetched
    beside it lists: never enough to split, so a listing of any length costs exactly its
    flat pages, the unfiltered scan and the filtered one alike."""
    seq, par = sequential_and_parallel(s3_server, (
        f"t/d={START + dt.timedelta(days=i // per_dir)}/n={i % per_dir:02d}/part-00.parquet"
        for i in range(n_keys)), where)
    assert seq.metrics["list_requests"] == math.ceil(n_keys / 1000)
    assert [f.path for f in par.files] == [f.path for f in seq.files]
    assert len(par.files) == (n_keys if where is None else n_keys // per_dir)
    assert par.metrics["list_requests"] == seq.metrics["list_requests"]
    assert not any("delimiter" in line for line in par.listing_plan), par.listing_plan


def test_four_keys_a_directory_are_still_split(s3_server):
    """Four keys a directory (the bench's daily table), 8 pages: the delimiter page can
    show 3 pages past the second, enough for two ranges, so it goes out and splits."""
    seq, par = sequential_and_parallel(s3_server, (
        f"t/d={START + dt.timedelta(days=i // 4)}/n={i % 4:02d}/part-00.parquet"
        for i in range(8000)))
    assert seq.metrics["list_requests"] == 8
    assert ranges_of(par) == 2, par.listing_plan
    assert_same(seq, par, ranged_ok=True)


def test_a_date_range_short_after_its_first_page_sends_no_delimiter_page(s3_server,
                                                                          hourly_tables):
    """16 days of 180 keys (3 pages) on a table opened without a sample: after the first
    page, the days left up to the range's end hold under 4 pages, too few to split."""
    days = f"d BETWEEN '{START + dt.timedelta(days=5)}' AND '{START + dt.timedelta(days=20)}'"
    seq = scan_counted(s3_server, hourly_tables[1], days)
    par = scan_counted(s3_server, hourly_tables[8], days)
    assert seq.metrics["list_requests"] == 3
    assert par.metrics["list_requests"] == 3, par.listing_plan
    assert [f.path for f in par.files] == [f.path for f in seq.files]
    assert len(par.files) == 16 * HOURS * PER_HOUR


def test_a_long_date_range_is_still_split(s3_server, hourly, hourly_tables):
    """54 days (10 pages): the rest after the first page is long, so it is split."""
    days = f"d BETWEEN '{START + dt.timedelta(days=2)}' AND '{START + dt.timedelta(days=55)}'"
    seq = scan_counted(s3_server, hourly_tables[1], days)
    par = scan_counted(s3_server, hourly_tables[8], days)
    assert seq.metrics["list_requests"] == 10
    assert ranges_of(par) >= 2, par.listing_plan
    assert_same(seq, par, ranged_ok=True)
    assert len(par.files) == 54 * HOURS * PER_HOUR
