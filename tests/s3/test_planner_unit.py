"""Fast unit tests of the listing planner (choose, then run) and of one group's read, over
in-memory fakes: no server, no Spark, no file.

``MemoryStore`` answers listings as S3's ListObjectsV2 does (keys in order, pages of 1000
entries, a delimiter rolling keys up into common prefixes that count as entries,
``StartAfter``), one counted request per page, and logs each listing, so a test asserts
both how many LIST requests a plan costs and which prefixes it lists (DataFusion tests its
listing the same way, over an in-memory object store). The moto tests
(``test_listing_s3.py``, ``test_parallel_listing.py``) check the same planner end to end;
``test_the_memory_store_pages_as_s3_does`` checks the fake against moto.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Iterator

import pyarrow as pa
import pytest

from listing.errors import CorruptFileError, MissingFileError, PartitionLayoutError
from listing.expressions import Expr, bind, is_true, parse_predicate
from listing.file_stream import ReadSpec, read_group
from listing.files import FileGroup, PartitionedFile
from listing.hive import HiveLayout
from listing.metrics import Counters
from listing.options import ListingOptions
from listing.planner import FileFilter, PlanRun, TableProfile
from listing.planner.choose import Chooser
from listing.planner.nodes import Enumerate, Flat, Walk
from listing.storage import PAGE_SIZE, ObjectMeta, Page
from listing.url import TableUrl

ROOT = "lake/t/"
COLS = [("date", pa.date32()), ("region", pa.string())]
SCHEMA = pa.schema([("id", pa.int64()), *(pa.field(n, t) for n, t in COLS)])
DAY0 = dt.date(2024, 1, 1)


class MemoryStore:
    """Keys in memory, listed as S3 lists them (see the module doc)."""

    splits_ranges = True  # key ranges cost their own pages, as on S3

    def __init__(self, keys: list[str]) -> None:
        self.keys = sorted(keys)
        self.counters = Counters()
        self.counters.start("list_requests")
        #: (prefix, delimiter, start_after, stop_after) of every listing, in order
        self.listings: list[tuple[str, bool, str | None, str | None]] = []

    def pages(self, prefix: str, *, delimiter: bool, start_after: str | None = None,
              stop_after: str | None = None) -> Iterator[Page]:
        self.listings.append((prefix, delimiter, start_after, stop_after))
        lo = bisect.bisect_left(self.keys, prefix)
        if start_after is not None:
            lo = max(lo, bisect.bisect_right(self.keys, start_after))
        entries: list[tuple[str, bool]] = []  # (path, is a common prefix)
        for key in self.keys[lo:]:
            if not key.startswith(prefix):
                break
            rest = key[len(prefix):]
            if delimiter and "/" in rest:
                common = prefix + rest.split("/", 1)[0] + "/"
                # a common prefix sorting before StartAfter is left out, as moto does (the
                # planner drops such directories itself, whatever the store answers)
                if start_after is not None and common <= start_after:
                    continue
                if not entries or entries[-1][0] != common:
                    entries.append((common, True))
            else:
                entries.append((key, False))
        start = 0
        while True:
            self.counters.add("list_requests")
            chunk, start = entries[start:start + PAGE_SIZE], start + PAGE_SIZE
            last = chunk[-1][0] if chunk else None
            done = stop_after is not None and last is not None and last > stop_after
            kept = [(p, d) for p, d in chunk if stop_after is None or p <= stop_after]
            more = start < len(entries) and not done
            yield Page([ObjectMeta(p, 10) for p, d in kept if not d],
                       [p for p, d in kept if d], more)
            if not more:
                return

    def prefixes(self) -> list[str]:
        return [prefix for prefix, *_ in self.listings]


def daily(days: int = 730, regions: tuple[str, ...] = ("eu", "us")) -> list[str]:
    """Two years of days x two regions, one file each: 1460 keys, two flat pages."""
    return [f"{ROOT}date={DAY0 + dt.timedelta(days=i)}/region={r}/part-0.parquet"
            for i in range(days) for r in regions]


def wide(dates: int = 20, regions: int = 10, files: int = 200) -> list[str]:
    """Few dates, many files a region: 2000 keys a date, 40 flat pages."""
    return [f"{ROOT}date={DAY0 + dt.timedelta(days=i)}/region=r{r}/part-{j:04d}.parquet"
            for i in range(dates) for r in range(regions) for j in range(files)]


def predicate(sql: str | None) -> Expr | None:
    return bind(parse_predicate(sql), SCHEMA).expr if sql else None


def sampled(store: MemoryStore, cols: list = COLS) -> TableProfile:
    """The profile ``ListingTable.open`` samples: the first flat page (not counted here)."""
    page = next(store.pages(ROOT, delimiter=False))
    store.counters, store.listings = Counters(), []
    return TableProfile.from_page(ROOT, page, len(cols))


def scan(store: MemoryStore, sql: str | None, *, profile: bool = True,
         concurrency: int = 1) -> tuple[list[str], PlanRun]:
    """Run the planner over ``store``: the matching keys, in the order listed, and the run."""
    prof = sampled(store) if profile else None
    file_filter = FileFilter(TableUrl.parse("s3://" + ROOT), ListingOptions(),
                             name_endings=(".parquet",))
    run = PlanRun(store, ROOT, COLS, prof, predicate(sql), file_filter,
                     max_concurrent_requests=concurrency)
    return [f.meta.path for f in run.files()], run


def brute_force(keys: list[str], sql: str | None) -> list[str]:
    """Every key whose decoded partition values satisfy the filter: the planner's truth."""
    layout, pred = HiveLayout(ROOT, tuple(COLS)), predicate(sql)
    return [k for k in sorted(keys)
            if (values := layout.decode(k, None)) is not None and is_true(pred, values)]


# --- choosing: plans, no request -------------------------------------------------------------

def test_exact_values_down_the_levels_pin_one_prefix() -> None:
    chooser = Chooser(ROOT, COLS, None, predicate("date = DATE '2024-03-01' AND region = 'us'"))
    plan = chooser.direct()
    assert isinstance(plan, Flat) and plan.prefix == f"{ROOT}date=2024-03-01/region=us/"


def test_a_date_range_narrows_to_the_common_prefix_and_its_bounds() -> None:
    chooser = Chooser(ROOT, COLS, None,
                      predicate("date BETWEEN DATE '2024-03-01' AND DATE '2024-03-09'"))
    plan = chooser.direct()
    assert isinstance(plan, Flat) and plan.prefix == f"{ROOT}date=2024-03-0"
    assert plan.start_after == f"{ROOT}date=2024-03-01"
    assert plan.stop_after is not None and plan.stop_after.startswith(f"{ROOT}date=2024-03-09/")


def test_a_contradiction_lists_nothing() -> None:
    plan = Chooser(ROOT, COLS, None, predicate("date = DATE '2024-03-01' AND "
                                               "date = DATE '2024-03-02'")).direct()
    assert isinstance(plan, Enumerate) and plan.children == []


def test_values_enumerate_into_one_prefix_each_where_that_is_cheaper() -> None:
    store = MemoryStore(daily())
    chooser = Chooser(ROOT, COLS, sampled(store),
                      predicate("region IN ('us', 'eu') AND date = DATE '2024-03-01'"))
    day = f"{ROOT}date=2024-03-01/"
    enumerated = chooser.enumerate(day, 1, {"date": dt.date(2024, 3, 1)})
    assert enumerated is not None and enumerated.est == 2
    assert [c.prefix for c in enumerated.children] == [
        f"{day}region=eu/", f"{day}region=us/"]
    # but a day holds two keys: one listing of the day costs less than two prefixes
    plan = chooser.direct()
    assert isinstance(plan, Flat) and plan.prefix == day and plan.est == 1
    files, _ = scan(store, "region IN ('us', 'eu') AND date = DATE '2024-03-01'")
    assert store.prefixes() == [day] and len(files) == 2


def test_a_respelled_level_is_never_enumerated_nor_narrowed() -> None:
    """A sampled ``region=%75s`` ('us' needlessly escaped) means a value may have two
    spellings: no prefix built from a value can be trusted at that level."""
    keys = daily(days=3) + [f"{ROOT}date=2024-01-01/region=%75s/part-1.parquet"]
    store = MemoryStore(keys)
    profile = sampled(store)
    assert profile.respelled == [False, True]
    chooser = Chooser(ROOT, COLS, profile, predicate("date = DATE '2024-01-01' AND "
                                                     "region = 'us'"))
    assert chooser.enumerate(f"{ROOT}date=2024-01-01/", 1, {"date": DAY0}) is None
    assert chooser.narrow(f"{ROOT}date=2024-01-01/", 1, {"date": DAY0}) is None
    files, _ = scan(store, "date = DATE '2024-01-01' AND region = 'us'")
    assert files == [f"{ROOT}date=2024-01-01/region=%75s/part-1.parquet",
                     f"{ROOT}date=2024-01-01/region=us/part-0.parquet"]


@pytest.mark.parametrize(("pages_read", "dates_seen"), [(2, 1), (3, 2)])
def test_a_walk_wins_whatever_the_size_only_once_two_directories_were_seen(
        pages_read, dates_seen) -> None:
    """Invariant: a walk chosen as cheaper per first-level directory never costs more than
    listing on. Two pages of one date (2000 keys) make a walk look cheaper per date (one
    listing of ``region=r3/`` against two pages), but one directory seen says nothing of
    the walk's own root listing, which may be the request that makes it dearer."""
    store = MemoryStore(wide())
    pages = store.pages(ROOT, delimiter=False)
    files = [meta for _, page in zip(range(pages_read), pages, strict=False)
             for meta in page.files]
    profile = TableProfile.from_page(ROOT, Page(files, [], True), len(COLS))
    assert len(profile.sample_values[0]) == dates_seen
    alt, per_dir_cheaper = Chooser(ROOT, COLS, profile,
                                   predicate("region = 'r3'")).root_alternative()
    if dates_seen == 1:
        assert (alt, per_dir_cheaper) == (None, False)
    else:
        assert isinstance(alt, Walk) and per_dir_cheaper


# --- running: requests counted, prefixes listed ------------------------------------------------

@pytest.mark.parametrize(("sql", "lists", "prefixes"), [
    # one prefix: one request, whether or not the table was sampled
    ("date = DATE '2024-03-01' AND region = 'us'", 1, [f"{ROOT}date=2024-03-01/region=us/"]),
    ("date BETWEEN DATE '2024-03-01' AND DATE '2024-03-09'", 1, [f"{ROOT}date=2024-03-0"]),
    ("date >= DATE '2025-12-01'", 1, [f"{ROOT}date="]),
    # no partition filter, or one no prefix can serve: the flat listing, 2 pages
    (None, 2, [ROOT]),
    ("region = 'us'", 2, [ROOT]),
    # dates far apart: one flat page, then on to the last date wanted, not to the end
    ("date IN (DATE '2024-03-01', DATE '2025-06-01', DATE '2025-12-30')", 2, [ROOT, ROOT]),
])
@pytest.mark.parametrize("profile", [True, False], ids=["sampled", "declared"])
def test_daily_table_request_counts(sql, lists, prefixes, profile) -> None:
    keys = daily()
    store = MemoryStore(keys)
    files, _ = scan(store, sql, profile=profile)
    assert store.counters["list_requests"] == lists
    assert store.prefixes() == prefixes
    assert files == brute_force(keys, sql)


def test_a_filter_on_the_second_level_walks_after_the_first_pages() -> None:
    """``region = 'r3'`` over 2000 keys a date: three flat pages show the dates' size, then
    one delimiter listing of the root and one prefix per date left, ``region=r3/``: 22
    requests where the flat listing costs 40."""
    keys = wide()
    store = MemoryStore(keys)
    files, run = scan(store, "region = 'r3'")
    assert store.counters["list_requests"] == 3 + 1 + 18
    assert store.listings[:2] == [(ROOT, False, None, None),  # 3 pages of the flat listing
                                  (ROOT, True, None, None)]  # the walk's root listing
    assert store.prefixes()[2:] == [f"{ROOT}date={DAY0 + dt.timedelta(days=i)}/region=r3/"
                                    for i in range(2, 20)]
    assert any("walk" in step for step in run.steps)
    assert files == brute_force(keys, "region = 'r3'")
    assert run.metrics["files_matched"] == len(files) == 4000


def test_a_full_scan_never_costs_more_than_the_flat_listing() -> None:
    keys = wide()
    store = MemoryStore(keys)
    files, run = scan(store, None)
    assert store.counters["list_requests"] == len(keys) // PAGE_SIZE == 40
    assert files == sorted(keys) and run.metrics["files_listed"] == len(keys)


@pytest.mark.parametrize("sql", [None, "region IN ('r3', 'r5')", "region = 'r3'"])
def test_concurrent_runs_list_what_a_sequential_run_lists(sql) -> None:
    """With requests sent ahead (and a long flat listing split into key ranges), the files,
    their order and the counts are the sequential run's; the split costs its delimiter page
    and at most one partial page a range."""
    keys = wide()
    seq_store, par_store = MemoryStore(keys), MemoryStore(keys)
    seq, seq_run = scan(seq_store, sql)
    par, par_run = scan(par_store, sql, concurrency=4)
    assert par == seq == brute_force(keys, sql)
    assert par_run.metrics == seq_run.metrics
    split = any("key ranges at once" in step for step in par_run.steps)
    assert par_store.counters["list_requests"] <= \
        seq_store.counters["list_requests"] + (1 + 4 if split else 0)


def test_a_profile_learned_from_a_whole_listing_plans_the_next_scan() -> None:
    """A scan that listed the whole table flat (6 pages) leaves a complete profile; the
    next, selective scan plans from it without a probing page and costs no more than on
    a freshly sampled table: 3 dates, 3 prefixes. (Taking a complete profile for one page
    once listed all 6 pages here, estimating 1.)"""
    keys = daily(days=3000)
    store = MemoryStore(keys)
    _, first = scan(store, "region = 'us'")
    assert store.counters["list_requests"] == 6
    assert first.profile is not None and first.profile.complete
    wanted = "date IN (DATE '2024-01-05', DATE '2026-01-05', DATE '2031-06-01')"
    fresh_store = MemoryStore(keys)
    fresh, _ = scan(fresh_store, wanted)
    store.counters, store.listings = Counters(), []
    file_filter = FileFilter(TableUrl.parse("s3://" + ROOT), ListingOptions(),
                             name_endings=(".parquet",))
    learned = PlanRun(store, ROOT, COLS, first.profile, predicate(wanted), file_filter)
    files = [f.meta.path for f in learned.files()]
    assert files == fresh == brute_force(keys, wanted) and len(files) == 6
    assert store.counters["list_requests"] == 3 <= fresh_store.counters["list_requests"]
    assert store.prefixes() == [f"{ROOT}date={d}/"
                                for d in ("2024-01-05", "2026-01-05", "2031-06-01")]


def test_a_run_starts_after_a_given_key() -> None:
    """``start_after`` (a stream's frontier): keys up to it are neither listed nor returned."""
    keys = daily(days=10)
    store = MemoryStore(keys)
    after = f"{ROOT}date=2024-01-05/region=us/part-0.parquet"
    file_filter = FileFilter(TableUrl.parse("s3://" + ROOT), ListingOptions(),
                             name_endings=(".parquet",))
    run = PlanRun(store, ROOT, COLS, None, None, file_filter, after)
    assert [f.meta.path for f in run.files()] == [k for k in sorted(keys) if k > after]
    assert store.listings == [(ROOT, False, after, None)]


def test_the_memory_store_pages_as_s3_does(s3_server, s3_bucket) -> None:
    """The fake against moto through the real Lister: the same pages (keys, common
    prefixes, truncation) and request counts for flat, delimited and bounded listings."""
    from listing.storage import Lister, StorageSpec

    keys = [k.replace(ROOT, f"{s3_bucket}/t/", 1) for k in daily(days=520)]  # 1040 keys
    s3_server.put_objects_fast(s3_bucket, {k.split("/", 1)[1]: b"x" for k in keys})
    real = Lister(StorageSpec("s3", s3_server.storage_options))
    fake = MemoryStore(keys)
    root = f"{s3_bucket}/t/"

    def pages(lister, prefix, delimiter, start_after, stop_after):
        before = lister.counters["list_requests"]
        got = [([m.path for m in p.files], p.dirs, p.truncated)
               for p in lister.pages(prefix, delimiter=delimiter, start_after=start_after,
                                     stop_after=stop_after)]
        return got, lister.counters["list_requests"] - before

    for listing in [
            (root, False, None, None), (root, True, None, None),
            (f"{root}date=2024-0", False, f"{root}date=2024-03-01", f"{root}date=2024-03-09/~"),
            (f"{root}date=2025-01-0", True, None, None),
            (root, True, f"{root}date=2024-02-01/region=eu/part-0.parquet", None)]:
        assert pages(fake, *listing) == pages(real, *listing), listing


# --- reading one group -------------------------------------------------------------------------

class _Source:
    """A format's FileSource over batches in memory; a path may be missing or corrupt."""

    def __init__(self, files: dict[str, list[pa.RecordBatch] | type[Exception]]) -> None:
        self.files = files
        self.output_schema = pa.schema([("id", pa.int64())])
        self.opened: list[str] = []

    def create_opener(self) -> _Opener:
        return _Opener(self)


class _Opener:
    def __init__(self, source: _Source) -> None:
        self.source = source
        self.metrics: dict[str, int] = {}

    def open(self, file: PartitionedFile) -> Iterator[pa.RecordBatch]:
        """Lazily, as formats open: nothing is read (nor fails) before the first batch."""
        self.source.opened.append(file.path)
        self.metrics["row_groups_read"] = self.metrics.get("row_groups_read", 0) + 1
        content = self.source.files[file.path]
        if isinstance(content, type):
            raise content(f"{file.path}: {content.__name__}")
        yield from content


def _group(source: _Source) -> FileGroup:
    return FileGroup(0, tuple(
        PartitionedFile(path, 10, {"date": DAY0 + dt.timedelta(days=i), "region": "us"})
        for i, path in enumerate(source.files)))


def _spec(source: _Source, **kwargs) -> ReadSpec:
    return ReadSpec(source=source, schema=pa.schema([("id", pa.int64()), ("date", pa.date32())]),
                    partition_fields=tuple(pa.field(n, t) for n, t in COLS), **kwargs)


def _ids(n: int, start: int = 0) -> list[pa.RecordBatch]:
    return [pa.record_batch([pa.array(range(start, start + n), pa.int64())], names=["id"])]


def test_read_group_appends_partition_values_and_applies_the_residual_filter() -> None:
    source = _Source({"a": _ids(3), "b": _ids(3, 10), "c": _ids(3, 20)})
    spec = _spec(source, residual_filter=predicate("date > DATE '2024-01-01' AND id < 22"))
    got = pa.Table.from_batches(list(read_group(spec, _group(source))))
    assert got.column_names == ["id", "date"]  # the spec's schema: region is not projected
    assert got.column("id").to_pylist() == [10, 11, 12, 20, 21]
    assert got.column("date").to_pylist() == [DAY0 + dt.timedelta(days=1)] * 3 + \
        [DAY0 + dt.timedelta(days=2)] * 2


def test_read_group_with_a_limit_opens_no_file_past_it() -> None:
    source = _Source({"a": _ids(3), "b": _ids(3, 10), "c": _ids(3, 20)})
    rows = list(read_group(_spec(source, limit=4), _group(source)))
    assert sum(b.num_rows for b in rows) == 4
    assert source.opened == ["a", "b"]  # "c" was never requested


@pytest.mark.parametrize("error", [MissingFileError, CorruptFileError])
def test_read_group_raises_or_skips_and_counts_a_bad_file(error) -> None:
    source = _Source({"a": _ids(2), "bad": error, "c": _ids(2, 20)})
    with pytest.raises(error, match="bad"):
        list(read_group(_spec(source), _group(source)))
    kind = "missing" if error is MissingFileError else "corrupt"
    spec = _spec(source, **{f"ignore_{kind}_files": True})
    metrics, paths = Counters(), []
    got = [i for b in read_group(spec, _group(source), metrics, skipped_paths=paths)
           for i in b.column("id").to_pylist()]
    assert got == [0, 1, 20, 21] and paths == ["bad"]
    assert dict(metrics) == {f"files_skipped_{kind}": 1, "row_groups_read": 3}


# --- the table: bound once, values stay values ---------------------------------------------------

def test_a_scan_binds_its_filter_once_and_leaves_the_plan_a_value(tmp_path, monkeypatch) -> None:
    """``scan()`` binds and splits ``where`` once and plans with that split (``plan_files``
    binding it again was a second pass); reading the plan returns the read's metrics and
    changes neither the plan nor the table's declared shape."""
    import pyarrow.parquet as pq

    import listing.table as table_module
    from listing import ListingTable

    for day in ("2024-01-01", "2024-01-02"):
        (tmp_path / f"date={day}").mkdir()
        pq.write_table(pa.table({"id": [1, 2, 3]}), tmp_path / f"date={day}" / "a.parquet")
    table = ListingTable.open(str(tmp_path), partition_cols=[("date", "date")],
                              schema=pa.schema([("id", pa.int64())]))
    assert table.profile is None  # all declared: open() listed nothing
    calls: list[object] = []
    real_bind = table_module.bind
    monkeypatch.setattr(table_module, "bind",
                        lambda e, s, *z: calls.append(e) or real_bind(e, s, *z))
    plan = table.scan(where="date = DATE '2024-01-02' AND id > 1")
    assert len(calls) == 1
    assert str(plan.partition_filter) == "date = DATE '2024-01-02'"
    assert str(plan.data_filter) == "id > 1"
    planned = dict(plan.metrics)
    rows, metrics = plan.collect()
    assert rows.column("id").to_pylist() == [2, 3]
    assert metrics["row_groups_read"] == 1 and "row_groups_read" not in plan.metrics
    assert dict(plan.metrics) == planned
    assert table.partition_cols == [("date", pa.date32())]
    assert table.profile is None  # that scan listed one prefix: no sample of the table
    table.scan()
    assert table.profile is not None and table.profile.keys == 2  # the flat listing's, kept


@pytest.mark.parametrize("case_sensitive", [False, True])
def test_a_column_spelled_in_another_case_past_the_sample(case_sensitive: bool) -> None:
    """``REGION=us/`` on the last day, pages after the sampled one: merged into ``region``
    as Spark does by default, refused when names are case-sensitive (Spark's
    ``spark.sql.caseSensitive=true`` refuses the same layout)."""
    keys = daily() + [f"{ROOT}date={DAY0 + dt.timedelta(days=800)}/REGION=us/part-0.parquet"]
    store = MemoryStore(keys)
    file_filter = FileFilter(TableUrl.parse("s3://" + ROOT), ListingOptions(),
                             name_endings=(".parquet",))
    run = PlanRun(store, ROOT, COLS, sampled(store), None, file_filter,
                     case_sensitive=case_sensitive)
    if case_sensitive:
        with pytest.raises(PartitionLayoutError, match="'REGION' where 'region'"):
            list(run.files())
    else:
        assert [f.meta.path for f in run.files()] == sorted(keys)
