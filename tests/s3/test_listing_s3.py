"""Listing-pruned scans on a real S3 server: request counts, pruning, layouts.

LIST counts are asserted twice: from the plan's own metrics and from the moto server's
request log, so the metric cannot drift from what was actually sent.
"""

from __future__ import annotations

import datetime as dt
import math
import uuid

import pyarrow as pa
import pytest

from listing import ListingTable, OptionError, PartitionLayoutError, Pushdown, col
from listing.expressions import conjunction, is_true
from listing.testing import datasets

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture(scope="module")
def daily(s3_server):
    """Two years x two regions, one Parquet file each, plus hidden side files."""
    bucket = f"daily-{uuid.uuid4().hex[:8]}"
    s3_server.create_bucket(bucket)
    ds = datasets.daily(f"s3://{bucket}/events", s3_server.storage_options,
                        put=datasets.fast_writer(s3_server))
    datasets.add_hidden_files(ds, put=datasets.fast_writer(s3_server))
    yield ds
    s3_server.drop_bucket(bucket)


@pytest.fixture
def daily_table(daily):
    """A fresh table each test (one LIST and one footer read): a table keeps what its scans
    learn, so no test may see what another's scans taught it."""
    return ListingTable.open(daily.root + "/", storage_options=daily.storage_options)


def scan_counted(server, table, **kwargs):
    """The plan and the LIST requests it sent: what the server saw for the table's bucket,
    each attempt of a retried request included (a loaded machine can see retries)."""
    with server.log.capture(bucket=table.url.prefix.split("/", 1)[0]) as cap:
        plan = table.scan(**kwargs)
    m = plan.metrics
    assert m["list_requests"] + m["list_retries"] == cap.count("LIST"), (
        dict(m), [e for e in cap.entries() if e.code != 200])
    assert cap.count("GET") == 0 and cap.count("HEAD") == 0  # planning reads no file
    return plan, m["list_requests"]


def expected(ds, predicate):
    return sorted(f.path for f in ds.files if predicate(f.partition_values))


def flat_pages(ds) -> int:
    return math.ceil((len(ds.files) + len(ds.hidden_files)) / 1000)


def probes(plan) -> int:
    """The delimiter page a flat listing past its first page sends (beside its second) to
    look for key ranges to list at once: 0 or 1, and the plan says which."""
    sent = sum("1 delimiter page" in step or "key ranges at once" in step
               for step in plan.listing_plan)
    assert sent <= 1, plan.listing_plan
    return sent


def test_open_infers_partition_columns_and_schema(daily_table):
    assert daily_table.partition_cols == [("date", pa.date32()), ("region", pa.string())]
    assert daily_table.schema.names == ["id", "amount", "name", "date", "region"]
    assert daily_table.open_metrics["data_files_opened"] == 1


@pytest.mark.parametrize(("where", "max_lists", "keep"), [
    ("date = '2025-03-01'", 1, lambda v: v["date"] == dt.date(2025, 3, 1)),
    ("date = '2025-03-01' AND region = 'us'", 1,
     lambda v: v["date"] == dt.date(2025, 3, 1) and v["region"] == "us"),
    ("date IN ('2025-03-01', '2025-09-09', '2026-06-30')", 3,
     lambda v: v["date"] in {dt.date(2025, 3, 1), dt.date(2025, 9, 9), dt.date(2026, 6, 30)}),
    ("date BETWEEN '2026-03-01' AND '2026-03-07'", 1,
     lambda v: dt.date(2026, 3, 1) <= v["date"] <= dt.date(2026, 3, 7)),
    ("date >= '2026-12-01' AND region = 'eu'", 1,
     lambda v: v["date"] >= dt.date(2026, 12, 1) and v["region"] == "eu"),
])
def test_partition_filters_cost_few_lists(s3_server, daily, daily_table, where, max_lists, keep):
    plan, lists = scan_counted(s3_server, daily_table, where=where)
    assert lists <= max_lists
    assert sorted(f.path for f in plan.files) == expected(daily, keep)


@pytest.mark.parametrize("where", [None, "region = 'us'", "region <> 'us' OR date < '2025-02-01'"])
def test_unselective_filters_cost_no_more_than_a_flat_listing(s3_server, daily, daily_table,
                                                              where):
    plan, lists = scan_counted(s3_server, daily_table, where=where)
    assert lists <= flat_pages(daily) + probes(plan)
    bound = conjunction(b.expr for b in daily_table.bind(where))
    assert sorted(f.path for f in plan.files) == expected(daily, lambda v: is_true(bound, v))


def test_hidden_files_are_never_planned(daily, daily_table):
    plan = daily_table.scan()
    assert len(plan.files) == len(daily.files)
    assert plan.metrics["files_skipped_hidden"] == len(daily.hidden_files)
    assert not any("/_" in f.path or "/." in f.path for f in plan.files)


def test_rows_come_back_with_partition_values(daily, daily_table):
    got = daily_table.scan(where="date = '2025-01-02'", columns=["id", "region", "date"]).to_arrow()
    want = [f for f in daily.files if f.partition_values["date"] == dt.date(2025, 1, 2)]
    assert got.num_rows == sum(f.num_rows for f in want)
    assert set(got.column("region").to_pylist()) == {"us", "eu"}
    assert set(got.column("date").to_pylist()) == {dt.date(2025, 1, 2)}
    assert got.schema.names == ["id", "region", "date"]


def test_data_filter_and_mixed_filter_are_applied_exactly(daily, daily_table):
    rows = daily_table.scan(where="date < '2025-01-10' AND amount > 50").to_arrow()
    assert rows.num_rows > 0 and min(rows.column("amount").to_pylist()) > 50
    mixed = daily_table.scan(where="date < '2025-01-05' AND (region = 'us' OR id < 0)")
    assert set(mixed.to_arrow().column("region").to_pylist()) == {"us"}
    assert "region = 'us' OR id < 0" in mixed.explain()


def test_limit_stops_reading(s3_server, daily_table):
    with s3_server.log.capture() as cap:
        out = daily_table.scan(where="date < '2025-03-01'", limit=4).to_arrow()
    assert out.num_rows == 4
    assert cap.count("GET") <= 2  # two small files, one GET each; not 118 files


def test_classify(daily_table):
    assert daily_table.classify(["date = '2025-01-01'", col("amount") > 3,
                                 "date = '2025-01-01' OR amount > 2"]) == [
        Pushdown.EXACT, Pushdown.INEXACT, Pushdown.UNSUPPORTED]


def test_explain_names_filters_plan_and_counts(daily, daily_table):
    plan = daily_table.scan(where="date = '2025-01-02' AND amount > 1")
    lines = plan.explain().splitlines()
    fields = dict(line.strip().split(": ", 1) for line in lines[1:8])
    assert lines[0] == f"ScanPlan {daily.root}/"
    assert fields["partition filter (exact)"] == "date = DATE '2025-01-02'"
    assert fields["data filter (row groups + rows)"] == "amount > 1"
    assert fields["residual filter (rows)"] == "-" and fields["limit"] == "-"
    assert fields["projection"] == ", ".join(daily_table.schema.names)
    start = lines.index("  listing plan:") + 1
    end = next(i for i, line in enumerate(lines) if line.startswith("  files: "))
    bucket_prefix = daily.root.removeprefix("s3://")
    assert [line.strip() for line in lines[start:end]] == plan.listing_plan == [
        f"list '{bucket_prefix}/date=2025-01-02/' (est. 1 requests)"]
    day = expected(daily, lambda pv: str(pv["date"]) == "2025-01-02")
    assert lines[end].strip() == (f"files: {len(day)} in 1 groups, "
                                  f"{plan.metrics['bytes']:,} bytes")
    group = lines[end + 1].strip()
    assert group.startswith(f"group 0: {len(day)} files, ")
    assert sorted(daily.root + "/" + name for name in group.split(" bytes: ")[1].split(", ")) \
        == day
    metrics = dict(kv.split("=") for kv in lines[-1].removeprefix("  metrics: ").split(", "))
    assert {k: int(v) for k, v in metrics.items()} == dict(plan.metrics)
    assert (plan.metrics["list_requests"], plan.metrics["files_matched"]) == (1, len(day))


def test_given_schema_means_no_data_file_is_read(s3_server, daily):
    schema = pa.schema([("id", pa.int64()), ("amount", pa.float64()), ("name", pa.string())])
    with s3_server.log.capture() as cap:
        table = ListingTable.open(daily.root, storage_options=daily.storage_options,
                                  schema=schema)
        table.scan(where="date = '2025-05-05'")
    assert cap.count("GET") == 0 and cap.count("HEAD") == 0
    assert table.open_metrics["data_files_opened"] == 0


def test_inferred_schema_reads_one_footer(s3_server, daily):
    with s3_server.log.capture() as cap:
        ListingTable.open(daily.root, storage_options=daily.storage_options)
    assert cap.count("GET") == 1 and cap.count("HEAD") == 0


def test_declared_partition_types_override_inference(daily):
    table = ListingTable.open(daily.root, storage_options=daily.storage_options,
                              partition_cols=[("date", "string"), ("region", pa.string())])
    assert table.partition_cols == [("date", pa.string()), ("region", pa.string())]
    plan = table.scan(where="date LIKE '2026-02-%'")
    assert {f.partition_values["date"][:8] for f in plan.files} == {"2026-02-"}
    assert plan.metrics["list_requests"] == 1  # LIKE prefix narrows the listing


def test_inferred_schema_does_not_depend_on_the_filter(daily, daily_table):
    again = ListingTable.open(daily.root, storage_options=daily.storage_options)
    assert again.schema == daily_table.schema
    assert daily_table.scan(where="date = '2026-12-31'").schema == daily_table.schema


def test_hour_with_leading_zeros_matches_int_filter(s3_server, s3_bucket):
    ds = datasets.hourly(f"s3://{s3_bucket}/hourly", s3_server.storage_options, days=3)
    table = ListingTable.open(ds.root, storage_options=ds.storage_options)
    assert dict(table.partition_cols)["hour"] == pa.int32()
    plan = table.scan(where="hour = 7")
    assert sorted(f.path for f in plan.files) == expected(ds, lambda v: v["hour"] == 7)
    assert len(plan.files) == 3 and all("hour=07" in f.path for f in plan.files)
    one_day = table.scan(where="date = '2025-01-02' AND hour IN (7, 8)")
    assert len(one_day.files) == 2 and one_day.metrics["list_requests"] == 1


def test_escaped_values_are_unescaped_and_filterable(s3_server, s3_bucket):
    ds = datasets.escaped(f"s3://{s3_bucket}/cities", s3_server.storage_options)
    table = ListingTable.open(ds.root, storage_options=ds.storage_options)
    values = {f.partition_values["city"] for f in table.scan().files}
    assert values == {f.partition_values["city"] for f in ds.files}
    for city in ("a/b", "x:y", "k=v", "100%", "New York"):
        plan = table.scan(where=col("city") == city)
        assert [f.partition_values["city"] for f in plan.files] == [city]


def test_null_partitions_read_as_null(s3_server, s3_bucket):
    ds = datasets.nulls(f"s3://{s3_bucket}/nulls", s3_server.storage_options)
    table = ListingTable.open(ds.root, storage_options=ds.storage_options)
    plan = table.scan(where="region IS NULL")
    assert sorted(f.path for f in plan.files) == expected(ds, lambda v: v["region"] is None)
    assert plan.metrics["list_requests"] <= 1
    rows = plan.to_arrow()
    assert rows.column("region").null_count == rows.num_rows > 0
    dates = table.scan(where="date IS NULL").files
    assert dates and all(f.partition_values["date"] is None for f in dates)
    assert all(v is not None for f in table.scan(where="region = 'us'").files
               for v in [f.partition_values["region"]])


def test_secrets_stay_out_of_repr_and_explain(daily):
    options = {**daily.storage_options, "secret": "s3cr3t-value", "token": "t0ken-value"}
    table = ListingTable.open(daily.root, storage_options=options)
    text = repr(table) + table.scan(where="date = '2025-01-01'").explain()
    text += repr(table.scan().source)
    assert "s3cr3t-value" not in text and "t0ken-value" not in text


def test_contradictory_range_costs_nothing(s3_server, daily_table):
    plan, lists = scan_counted(s3_server, daily_table,
                               where="date > '2026-03-05' AND date < '2026-03-01'")
    assert lists == 0 and plan.files == []


def test_merge_schema_reads_every_footer(s3_server, s3_bucket):
    old = datasets.encode(pa.table({"id": pa.array([1], pa.int32())}), "parquet")
    new = datasets.encode(pa.table({"id": pa.array([2], pa.int64()), "extra": ["x"]}),
                          "parquet")
    s3_server.put_objects_fast(s3_bucket, {"t/d=1/a.parquet": old, "t/d=2/b.parquet": new})
    url = f"s3://{s3_bucket}/t"
    plain = ListingTable.open(url, storage_options=s3_server.storage_options)
    assert plain.file_schema.names == ["id"]
    merged = ListingTable.open(url, storage_options=s3_server.storage_options,
                               merge_schema=True)
    assert merged.file_schema == pa.schema([("id", pa.int64()), ("extra", pa.string())])
    rows = merged.scan(columns=["id", "extra", "d"]).to_arrow().sort_by("id").to_pylist()
    assert rows == [{"id": 1, "extra": None, "d": 1}, {"id": 2, "extra": "x", "d": 2}]


def test_schema_sample_past_the_first_page_is_a_file_the_table_reads(s3_server, s3_bucket):
    """The first page (1,000 keys) holds only files ``path_glob_filter`` leaves out: the
    schema comes from the first kept file of the pages after it (one LIST more, not the
    first page again), never from a file the table does not read."""
    old = datasets.encode(pa.table({"id": pa.array([1], pa.int64())}), "parquet")
    new = datasets.encode(pa.table({"id": pa.array([2], pa.int64()), "extra": ["x"]}),
                          "parquet")
    skipped = {f"t/d=1/a-{i:04d}.parquet": old for i in range(1000)}
    s3_server.put_objects_fast(s3_bucket, {**skipped, "t/d=2/b.parquet": new})
    url = f"s3://{s3_bucket}/t"
    with s3_server.log.capture(bucket=s3_bucket) as cap:
        table = ListingTable.open(url, storage_options=s3_server.storage_options,
                                  path_glob_filter="b*")
    assert table.file_schema.names == ["id", "extra"]
    assert cap.count("LIST") == table.open_metrics["list_requests"] == 2
    assert cap.count("GET") == 1
    assert table.to_arrow().to_pylist() == [{"id": 2, "extra": "x", "d": 2}]
    # the control: without the filter the first file's schema is the table's
    assert ListingTable.open(url, storage_options=s3_server.storage_options
                             ).file_schema.names == ["id"]
    # a filter that keeps no file reads nothing, with the columns of the table's first file
    none = ListingTable.open(url, storage_options=s3_server.storage_options,
                             path_glob_filter="c*")
    assert none.file_schema.names == ["id"] and none.to_arrow().num_rows == 0


DECLARED = {"partition_cols": [("date", "date"), ("region", "string")],
            "schema": pa.schema([("id", pa.int64()), ("amount", pa.float64()),
                                 ("name", pa.string())])}


def test_fully_declared_table_opens_without_requests(s3_server, daily):
    with s3_server.log.capture() as cap:
        table = ListingTable.open(daily.root, storage_options=daily.storage_options,
                                  **DECLARED)
    assert cap.counts().total() == 0
    plan, lists = scan_counted(s3_server, table, where="date = '2025-02-02'")
    assert lists == 1 and len(plan.files) == 2
    plan, lists = scan_counted(s3_server, table)  # a full scan costs one flat listing
    assert lists == flat_pages(daily) + probes(plan) and len(plan.files) == len(daily.files)


@pytest.mark.parametrize("where", ["region = 'us'", "date IN ('2025-01-01', '2025-09-09', "
                                   "'2026-06-30')", "date < '2025-01-05' OR region = 'eu'"])
def test_multi_prefix_filters_never_cost_more_than_flat_on_a_fresh_table(s3_server, daily,
                                                                          where):
    table = ListingTable.open(daily.root, storage_options=daily.storage_options, **DECLARED)
    plan, lists = scan_counted(s3_server, table, where=where)
    assert lists <= flat_pages(daily) + probes(plan)
    bound = conjunction(b.expr for b in table.bind(where))
    assert sorted(f.path for f in plan.files) == expected(daily, lambda v: is_true(bound, v))


def test_misspelt_declared_column_is_an_error_not_an_empty_result(s3_server, daily):
    table = ListingTable.open(daily.root, storage_options=daily.storage_options,
                              partition_cols=[("day", "date"), ("region", "string")],
                              schema=DECLARED["schema"])
    with pytest.raises(PartitionLayoutError, match=r"\['day', 'region'\].*date="):
        table.scan(where="day = '2025-02-02'")


def test_walk_wins_when_leaf_partitions_are_large(s3_server, s3_bucket):
    payload = datasets.encode(pa.table({"id": [1]}), "parquet")
    keys = {f"t/date=2025-01-{d:02d}/region={r}/part-{i:04d}.parquet": payload
            for d in range(1, 9) for r in ("eu", "us") for i in range(2500)}
    s3_server.put_objects_fast(s3_bucket, keys)
    table = ListingTable.open(f"s3://{s3_bucket}/t", storage_options=s3_server.storage_options,
                              **DECLARED)
    plan, lists = scan_counted(s3_server, table, where="region = 'us'")
    assert len(plan.files) == 8 * 2500
    flat = math.ceil(len(keys) / 1000)  # 40
    # a few flat pages until the first date directory is seen whole, then the date level
    # and 3 pages under each remaining date=…/region=us/
    assert lists <= 0.75 * flat
    assert any("walk" in step for step in plan.listing_plan)


@pytest.mark.parametrize("spelling", ["on", "yes", "1", "TRUE", True])
def test_merge_schema_spellings_mean_the_same_everywhere(s3_server, s3_bucket, spelling):
    """One boolean parser: a spelling the format accepts is the one the table acts on
    (``merge_schema="on"`` used to pass the CSV check and be read as false by the table)."""
    old = datasets.encode(pa.table({"id": pa.array([1], pa.int32())}), "parquet")
    new = datasets.encode(pa.table({"id": pa.array([2], pa.int64()), "extra": ["x"]}),
                          "parquet")
    s3_server.put_objects_fast(s3_bucket, {"t/d=1/a.parquet": old, "t/d=2/b.parquet": new})
    merged = ListingTable.open(f"s3://{s3_bucket}/t", storage_options=s3_server.storage_options,
                               merge_schema=spelling)
    assert merged.file_schema == pa.schema([("id", pa.int64()), ("extra", pa.string())])
    with pytest.raises(OptionError, match=r"merge_schema='maybe'"):
        ListingTable.open(f"s3://{s3_bucket}/t", storage_options=s3_server.storage_options,
                          merge_schema="maybe")


@pytest.fixture(scope="module")
def hundred_days(s3_server):
    """100 days x 24 hours x 2 empty files: 4,800 keys, the first page holds about 20 days."""
    bucket = f"days-{uuid.uuid4().hex[:8]}"
    s3_server.create_bucket(bucket)
    keys = {f"t/date={dt.date(2024, 1, 1) + dt.timedelta(days=d)}/hour={h}/part-{p}.parquet": b""
            for d in range(100) for h in range(24) for p in range(2)}
    s3_server.put_objects_fast(bucket, keys)
    yield f"s3://{bucket}/t", sorted(keys)
    s3_server.drop_bucket(bucket)


@pytest.mark.parametrize(("days", "lists", "step"), [
    # far beyond the first page: enumerate them at once (1 + 2), not after 2 more flat pages
    (["2024-03-20", "2024-04-05"], 3, "enumerate 2 prefixes"),
    # a few days beyond it: listing on up to the last one is cheaper, and stops there
    (["2024-01-25", "2024-01-27"], 2, "to date=2024-01-27"),
    # behind it: nothing more to list
    (["2024-01-02", "2024-01-05"], 1, "enumerate 0 prefixes"),
    # one in the first page, two ahead at a cost equal to listing on (2 pages): those two
    # prefixes (the one in the first page is not counted), sent at once, only wanted keys
    (["2024-01-05", "2024-02-01", "2024-02-20"], 3, "enumerate 2 prefixes"),
])
def test_date_lists_far_or_near_ahead_of_the_first_page(s3_server, hundred_days, days, lists,
                                                         step):
    url, keys = hundred_days
    table = ListingTable.open(url, storage_options=s3_server.storage_options,
                              partition_cols=[("date", "date"), ("hour", "int")],
                              schema=pa.schema([("x", pa.int64())]))
    where = "date IN (" + ", ".join(f"DATE '{d}'" for d in days) + ")"
    plan, sent = scan_counted(s3_server, table, where=where)
    assert sent == lists, plan.listing_plan
    assert any(step in line for line in plan.listing_plan), plan.listing_plan
    bucket = url.split("/")[2]
    want = sorted(f"s3://{bucket}/{k}" for k in keys if any(f"date={d}/" in k for d in days))
    assert sorted(f.path for f in plan.files) == want and len(want) == 48 * len(days)


def test_first_file_costs_one_list_and_skips_hidden_and_empty_keys(s3_server, s3_bucket):
    """``first_file`` (the native engine's CSV header check) lists one page, not the table,
    and returns the first key that is data: not ``_SUCCESS``, not an empty file."""
    keys = {"t/_SUCCESS": b"", "t/date=2024-01-01/empty.parquet": b""}
    keys.update({f"t/date=2024-01-{d:02d}/part-{i}.parquet": b"x" for d in range(1, 29)
                 for i in range(60)})  # 1,680 keys: two pages
    s3_server.put_objects_fast(s3_bucket, keys)
    table = ListingTable.open(f"s3://{s3_bucket}/t", storage_options=s3_server.storage_options,
                              partition_cols=[("date", "date")],
                              schema=pa.schema([("x", pa.int64())]))
    with s3_server.log.capture() as cap:
        first = table.first_file()
    assert cap.count("LIST") == 1 and cap.count("GET") == 0
    assert first is not None
    assert first.path == f"s3://{s3_bucket}/t/date=2024-01-01/part-0.parquet"
    assert first.partition_values == {"date": dt.date(2024, 1, 1)} and first.size == 1
    s3_server.drop_bucket(s3_bucket)
    s3_server.create_bucket(s3_bucket)
    assert ListingTable.open(f"s3://{s3_bucket}/t", storage_options=s3_server.storage_options,
                             partition_cols=[("date", "date")],
                             schema=pa.schema([("x", pa.int64())])).first_file() is None
