"""``engine = auto | python | native``: local scans handed to Spark's own file readers.

Real Spark (the session extension's ListingNativeEngine rule), real local files written with
pyarrow. Every native result is checked against the Python engine on the same files, and
every "who read it" claim against Spark's own physical plan.
"""

from __future__ import annotations

import datetime as dt
import json

import pytest
from pyspark.sql import functions as F
from pyspark.sql.types import StructType
from spark_plans import file_index as _file_index
from spark_plans import files_read as _files_read
from spark_plans import nodes as _nodes

import listing
from listing.errors import OptionError
from listing.spark.source import ListingDataSource
from listing.testing import datasets

DAYS = 6


@pytest.fixture(scope="module", params=["parquet", "csv"])
def events(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"native-{request.param}") / "events"
    return datasets.daily(str(root), format=request.param, days=DAYS, rows_per_file=6)


@pytest.fixture(scope="module")
def parquet_events(tmp_path_factory):
    root = tmp_path_factory.mktemp("native-pq") / "events"
    return datasets.daily(str(root), days=DAYS, rows_per_file=6)


def read(spark, ds, engine=None, **options):
    r = spark.read.format("listing").option("format", ds.format)
    if engine is not None:
        r = r.option("engine", engine)
    for k, v in options.items():
        r = r.option(k, v)
    return r.load(ds.root)


def physical(df) -> str:
    return df._jdf.queryExecution().executedPlan().toString()


def engine_of(df) -> str:
    plan = physical(df)
    if "FileScan " in plan and "BatchScan listing" not in plan:
        return "native"
    if "BatchScan listing" in plan and "FileScan " not in plan:
        return "python"
    raise AssertionError(f"neither or both engines in the plan:\n{plan}")


QUERIES = {
    "count": lambda df: df.count(),
    "sum": lambda df: round(df.agg(F.sum("amount")).first()[0], 6),
    "group_by_name": lambda df: sorted(
        (r.name, r.n) for r in df.groupBy("name").agg(F.count("*").alias("n")).collect()),
    "partition_pruned_count": lambda df: df.where("date >= '2025-01-03' AND region = 'eu'"
                                                  ).count(),
    "data_filter": lambda df: sorted(
        (r.id, r.date, r.region) for r in df.where("amount > 500").collect()),
    "rows": lambda df: sorted(tuple(r) for r in df.collect()),
}


@pytest.mark.parametrize("query", sorted(QUERIES))
def test_native_and_python_give_the_same_results(spark, events, query):
    python = read(spark, events, "python")
    native = read(spark, events, "native")
    assert engine_of(python) == "python" and engine_of(native) == "native"
    assert native.schema == python.schema
    got, want = QUERIES[query](native), QUERIES[query](python)
    assert got == want
    if query == "count":
        assert got == events.num_rows
    if query == "partition_pruned_count":
        assert got == sum(f.num_rows for f in events.files
                          if f.partition_values["date"] >= dt.date(2025, 1, 3)
                          and f.partition_values["region"] == "eu")


def test_where_and_limit_options_on_both_engines(spark, events):
    where = "date = '2025-01-02' OR region = 'us'"
    want = sum(f.num_rows for f in events.files
               if f.partition_values["date"] == dt.date(2025, 1, 2)
               or f.partition_values["region"] == "us")
    for engine in ("python", "native"):
        df = read(spark, events, engine, where=where)
        assert engine_of(df) == engine
        assert df.count() == want, engine
        assert {r.region for r in df.where("date <> '2025-01-02'").collect()} == {"us"}
    native = read(spark, events, "native", where=where, limit="5")
    assert native.count() == 5
    assert "PartitionFilters: [" in physical(native) and "region" in physical(
        native).split("PartitionFilters: [")[1].split("]")[0]


def test_explain_names_the_engine(spark, events):
    q = lambda df: df.where("date = '2025-01-02'").select("id", "amount")  # noqa: E731
    for engine in ("native", None):  # None: the default, auto, on local files
        df = q(read(spark, events, engine))
        plan = physical(df)
        assert f"FileScan {events.format}" in plan and "BatchScan" not in plan
        (text,) = listing.explain(df, show=False)
        lines = text.splitlines()
        assert lines[0] == f"engine: native (Spark's {events.format} reader)"
        assert lines[1] == f"  table: file:{events.root}"
        # the relation's columns (Spark prunes them later, in the FileScan), its filters
        assert lines[2] == "  columns: " + ", ".join(read(spark, events).columns)
        assert lines[3] == "  filters given to Spark: (date = DATE '2025-01-02')"
        assert lines[4].startswith("  listed by: the listing planner (ListingFileIndex)")
        day = [f for f in events.files if str(f.partition_values["date"]) == "2025-01-02"]
        assert f"\n  files: {len(day)}, " in text and "\n  partitions: 2\n" in text
    df = q(read(spark, events, "python"))
    plan = physical(df)
    assert "BatchScan listing" in plan and "FileScan" not in plan
    (text,) = listing.explain(df, show=False)
    day = [f for f in events.files if str(f.partition_values["date"]) == "2025-01-02"]
    assert text.startswith("engine: python") and f"\n  files: {len(day)} in 1 groups" in text
    assert "\n  partition filter (exact): date = DATE '2025-01-02'\n" in text


def test_metadata_column_and_input_file_name_on_native(spark, parquet_events):
    ds = parquet_events
    df = read(spark, ds, "native")
    rows = df.select("id", "_metadata.file_path", "_metadata.file_size").collect()
    assert len(rows) == ds.num_rows
    by_path = {f.path.rstrip("/"): f for f in ds.files}
    sizes = {}
    for r in rows:
        local = r.file_path.removeprefix("file:")
        assert local in by_path, r.file_path
        assert r.id in by_path[local].table.column("id").to_pylist()
        sizes[local] = r.file_size
    assert len(sizes) == len(ds.files) and all(s > 0 for s in sizes.values())
    names = {r.f for r in df.select(F.input_file_name().alias("f")).collect()}
    assert "" not in names and len(names) == len(ds.files)
    # a user schema in another column order: the relation is re-projected, _metadata stays
    reordered = (spark.read.format("listing").option("engine", "native")
                 .schema("date date, id long, region string, amount double, name string")
                 .load(ds.root))
    assert reordered.columns == ["date", "id", "region", "amount", "name"]
    assert reordered.select("_metadata.file_name").distinct().count() == 1


def test_statistics_reach_the_optimizer_broadcast_join(spark, parquet_events):
    big = spark.range(0, 50_000_000).withColumnRenamed("id", "key")

    def join_plan(engine):
        small = read(spark, parquet_events, engine)
        return physical(big.join(small, big.key == small.id))

    native = join_plan("native")
    assert "BroadcastHashJoin" in native and "FileScan parquet" in native
    python = join_plan("python")  # sized from the listed files (DescribedPythonTable)
    assert "BroadcastHashJoin" in python and "BatchScan listing" in python


def test_native_partition_pruning_reads_only_matching_files(spark, parquet_events):
    ds = parquet_events
    q = read(spark, ds, "native").where("date = '2025-01-04'").select("id", "amount")
    rows = q.collect()
    matching = [f for f in ds.files if f.partition_values["date"] == dt.date(2025, 1, 4)]
    assert len(rows) == sum(f.num_rows for f in matching)
    plan = q._jdf.queryExecution().executedPlan()
    if plan.nodeName() == "AdaptiveSparkPlan":
        plan = plan.executedPlan()
    text = plan.toString()
    partition_filters = text.split("PartitionFilters: [")[1].split("]")[0]
    assert "date" in partition_filters and "2025-01-04" in partition_filters
    scans = [n for n in _nodes(plan) if n.nodeName().startswith("Scan")
             or "FileSourceScan" in n.getClass().getSimpleName()]
    assert scans, text
    files_read = scans[0].metrics().apply("numFiles").value()
    assert files_read == len(matching) < len(ds.files)


# --- when the scan stays on the Python engine ------------------------------------------

@pytest.mark.parametrize(("option", "value", "named"), [
    ("storage.on_file_change", "read", "storage.on_file_change"),
    ("storage_options", '{"on_file_change": "read"}', "storage_options"),
    ("include_file_metadata", "true", "include_file_metadata"),
    ("ignoreCorruptFiles", "true", "ignorecorruptfiles"),
    ("ignore_missing_files", "yes", "ignore_missing_files"),
])
def test_options_spark_cannot_honour_stay_python(spark, parquet_events, option, value, named):
    auto = read(spark, parquet_events, None, **{option: value})
    assert engine_of(auto) == "python"
    if not option.startswith("storage"):
        assert auto.count() == parquet_events.num_rows
    with pytest.raises(Exception, match=f"engine=native.*{named}"):
        read(spark, parquet_events, "native", **{option: value})


def test_a_file_name_glob_reads_natively_with_and_without_our_planner(spark, tmp_path):
    """``path_glob_filter`` keeps the files Spark's ``pathGlobFilter`` keeps: our planner
    applies it; without one (Spark Connect), Spark's own index is given it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from listing.spark.file_index import register_planner, unregister_planner

    root = tmp_path / "globbed" / "k=1"
    root.mkdir(parents=True)
    for i, name in enumerate(["keep-1.parquet", "drop-1.parquet", "keep-2", "Keep-3.parquet"]):
        pq.write_table(pa.table({"id": [i]}), root / name)
    load = str(tmp_path / "globbed")

    def ids(engine):
        df = (spark.read.format("listing").option("engine", engine)
              .option("path_glob_filter", "keep-*").load(load))
        return engine_of(df), sorted(r.id for r in df.collect())

    want = sorted(r.id for r in spark.read.option("pathGlobFilter", "keep-*")
                  .parquet(load).collect())
    assert want == [0, 2]  # case-sensitive, any ending
    assert ids("python") == ("python", want)
    assert ids("native") == ("native", want)
    unregister_planner(spark)
    try:
        assert ids("native") == ("native", want)
    finally:
        assert register_planner(spark)


def test_custom_format_stays_python(spark, tmp_path):
    ds = datasets.daily(str(tmp_path / "arrow"), format="arrow", days=2)
    df = spark.read.format("listing").option("format", "arrow").load(ds.root)
    assert engine_of(df) == "python" and df.count() == ds.num_rows
    with pytest.raises(Exception, match="engine=native.*format arrow"):
        spark.read.format("listing").option("format", "arrow").option(
            "engine", "native").load(ds.root)


def test_native_without_the_extension_is_a_clear_error(parquet_events):
    """The Python reader runs only when no extension took the scan: it names what is
    missing instead of quietly reading with the Python engine."""
    source = ListingDataSource({"path": parquet_events.root, "engine": "native"})
    with pytest.raises(OptionError, match=r"needs the listing Spark extension "
                                          r"\(listing.spark.session\)"):
        source.reader(StructType.fromJson(json.loads(
            '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,'
            '"metadata":{}}]}')))
    auto = ListingDataSource({"path": parquet_events.root})
    assert auto.reader(auto.schema()) is not None


def test_python_engine_never_hands_off(spark, parquet_events):
    df = read(spark, parquet_events, "python")
    assert engine_of(df) == "python"
    with pytest.raises(Exception, match="_metadata"):
        df.select("_metadata.file_path").collect()


def test_catalog_table_and_to_spark_hand_off(spark, parquet_events, tmp_path):
    """A catalog table's stored options and ListingTable.to_spark's listing_table source are
    handed off too; to_spark filters (our expressions) keep the Python engine."""
    ds = parquet_events
    spark.sql(f"CREATE TABLE native_events USING listing OPTIONS (path '{ds.root}', "
              "engine 'native')")
    try:
        q = spark.sql("SELECT count(*) AS n FROM native_events WHERE region = 'us'")
        assert "FileScan parquet" in physical(q)
        assert q.first().n == sum(f.num_rows for f in ds.files
                                  if f.partition_values["region"] == "us")
    finally:
        spark.sql("DROP TABLE native_events")
    table = listing.ListingTable.open(ds.root)
    whole = listing.to_spark(table, spark, columns=["id", "date"])
    assert engine_of(whole) == "native" and whole.columns == ["id", "date"]
    assert whole.count() == ds.num_rows
    pruned = listing.to_spark(table, spark, columns=["id"], where="region = 'eu'")
    assert engine_of(pruned) == "python"
    assert pruned.count() == sum(f.num_rows for f in ds.files
                                 if f.partition_values["region"] == "eu")


def test_to_spark_csv_stays_python(spark, tmp_path):
    """Spark's CSV reader maps columns by position: to_spark's projected relation would
    read the wrong columns, so it keeps our reader (which maps them by header name)."""
    ds = datasets.daily(str(tmp_path / "csv"), format="csv", days=2, rows_per_file=4)
    df = listing.to_spark(listing.ListingTable.open(ds.root, format="csv"), spark,
                          columns=["name"])
    assert engine_of(df) == "python"
    assert sorted(r.name for r in df.collect()) == sorted(
        n for f in ds.files for n in f.table.column("name").to_pylist())


def test_csv_with_a_schema_in_another_order_stays_python(spark, tmp_path):
    """Our CSV reader maps columns by header name, Spark's by position: a user schema that
    is not the header in order keeps the Python engine (native names the header)."""
    ds = datasets.daily(str(tmp_path / "csv"), format="csv", days=2, rows_per_file=4)
    schema = "name string, id long, date date, region string"
    df = (spark.read.format("listing").option("format", "csv").schema(schema).load(ds.root))
    assert engine_of(df) == "python"
    assert sorted((r.id, r.name) for r in df.collect()) == sorted(
        (i, n) for f in ds.files for i, n in zip(f.table.column("id").to_pylist(),
                                                 f.table.column("name").to_pylist(),
                                                 strict=True))
    with pytest.raises(Exception, match="engine=native.*CSV header"):
        (spark.read.format("listing").option("format", "csv").option("engine", "native")
         .schema(schema).load(ds.root))
    same = (spark.read.format("listing").option("format", "csv")
            .schema("id long, amount double, name string, date date, region string")
            .load(ds.root))
    assert engine_of(same) == "native" and same.count() == ds.num_rows


def test_a_python_format_under_a_builtin_name_stays_python(spark, tmp_path):
    """A user's class registered as "ndjson" replaces ours in Python; Spark's JSON reader
    would not be it, so auto keeps the Python engine and native says why."""
    from listing import formats
    from listing.formats.json import JsonFormat

    class Tagged(JsonFormat):
        pass

    ds = datasets.daily(str(tmp_path / "nd"), format="ndjson", days=2)
    assert engine_of(spark.read.format("listing").option("format", "ndjson")
                     .load(ds.root)) == "native"
    formats.register("ndjson", Tagged)
    try:
        df = spark.read.format("listing").option("format", "ndjson").load(ds.root)
        assert engine_of(df) == "python" and df.count() == ds.num_rows
        with pytest.raises(Exception, match="format ndjson is registered from Python"):
            spark.read.format("listing").option("format", "ndjson").option(
                "engine", "native").load(ds.root)
    finally:
        formats._REGISTRY.pop("ndjson", None)  # noqa: SLF001 - undo the registration
        listing.register(spark)
    assert engine_of(spark.read.format("listing").option("format", "ndjson")
                     .load(ds.root)) == "native"


# --- our listing feeds Spark's reader (ListingFileIndex) ---------------------------------

def _f(kind, attribute, value=None):
    """One filter as the file index hands its planner (ListingFileIndex.filter)."""
    out = {"kind": kind, "attribute": attribute}
    return out if value is None else {**out, "value": value}


def test_handed_off_scan_reads_through_our_file_index(spark, events):
    df = read(spark, events, "native")
    index = _file_index(df)
    assert index.getClass().getName() == "io.github.listing.ListingFileIndex"
    assert str(index.toString()) == (f"ListingFileIndex[file:{events.root}, files from the "
                                     "listing planner]")
    plan = physical(df)
    assert f"FileScan {events.format}" in plan and "Location: ListingFileIndex" in plan
    assert list(index.partitionSchema().fieldNames()) == ["date", "region"]
    assert df.count() == events.num_rows


def test_partition_filters_prune_through_our_planner(spark, events):
    def q(df):
        return df.where("date >= '2025-01-03' AND region = 'eu'").select("id", "date", "amount")

    native, python = q(read(spark, events, "native")), q(read(spark, events, "python"))
    rows = sorted(tuple(r) for r in native.collect())
    assert rows == sorted(tuple(r) for r in python.collect())
    index = _file_index(native)
    used = json.loads(index.lastUsed())
    assert _f("EqualTo", "region", "eu") in used, used
    assert _f("GreaterThanOrEqual", "date", "2025-01-03") in used, used
    matching = [f for f in events.files if f.partition_values["date"] >= dt.date(2025, 1, 3)
                and f.partition_values["region"] == "eu"]
    assert len(rows) == sum(f.num_rows for f in matching)
    assert _files_read(native) == len(matching)


def test_filters_the_planner_cannot_take_are_applied_in_the_jvm(spark, events):
    """A conjunct our planner does not get (a function) is evaluated by Spark on the partition
    values the planner returned: pruning is lost, never rows. Filters travel as structure, so
    a quote in a string or a LIKE prefix reaches the planner as Spark's push-down has it."""
    quoted = """region = "e'u" OR date = '2025-01-05'"""  # a string literal in any Spark
    sent = {}
    for where in ("upper(region) = 'EU' AND date = '2025-01-02'", quoted, "region LIKE 'u%'"):
        native = read(spark, events, "native").where(where)
        python = read(spark, events, "python").where(where)
        assert sorted(tuple(r) for r in native.collect()) == sorted(
            tuple(r) for r in python.collect()), where
        sent[where] = json.loads(_file_index(native).lastSent())
    upper = sent["upper(region) = 'EU' AND date = '2025-01-02'"]
    assert _f("EqualTo", "date", "2025-01-02") in upper  # the control: its sibling goes
    assert all(f.get("attribute") != "region" or f["kind"] == "IsNotNull"
               for f in upper), upper  # upper(region) = 'EU': not sent
    assert {"kind": "Or", "left": _f("EqualTo", "region", "e'u"),
            "right": _f("EqualTo", "date", "2025-01-05")} in sent[quoted]
    assert _f("StringStartsWith", "region", "u") in sent["region LIKE 'u%'"]


def test_our_plan_is_the_file_list_spark_reads(spark, events):
    """Spark's file list is exactly our plan's, and it comes from the planner at query time
    (Spark's own index lists once, when the relation is built, and would miss this file)."""
    df = read(spark, events, "native")
    index = _file_index(df)
    table = listing.ListingTable.open(events.root, format=events.format)
    want = {"file:" + f.path for f in table.scan().files}
    assert set(df.inputFiles()) == want and len(want) == len(events.files)
    modified = {r.t for r in df.select(
        F.col("_metadata.file_modification_time").alias("t")).collect()}
    assert min(modified) > dt.datetime(2020, 1, 1)  # our listing's times, not zero
    before = index.asks()
    assert df.where("region = 'us'").count() == sum(
        f.num_rows for f in events.files if f.partition_values["region"] == "us")
    assert index.asks() == before + 1
    assert _f("EqualTo", "region", "us") in json.loads(index.lastUsed())


def test_the_csv_header_check_reads_one_file_and_lists_no_table(spark, tmp_path):
    """Spark's CSV reader maps columns by position, so a hand-off first reads one file's
    header: the planner's first file (one LIST), never an unfiltered plan of the table
    (which on a large table would be a whole listing for every query)."""
    ds = datasets.daily(str(tmp_path / "csv"), format="csv", days=4, rows_per_file=5)
    df = read(spark, ds, "native").where("date = '2025-01-03'")
    index = _file_index(df)
    assert df.count() == 10  # two regions, one file of 5 rows each
    assert "FileScan csv" in physical(df)
    assert index.asks() == 1, "only the query's own plan"
    assert json.loads(index.lastSent()) == [_f("IsNotNull", "date"),
                                            _f("EqualTo", "date", "2025-01-03")]
    first = listing.ListingTable.open(ds.root, format="csv").first_file()
    assert first is not None and first.path == min(f.path for f in ds.files)


def test_our_planner_reads_the_csv_header_the_jvm_compares(tmp_path):
    """The hand-off's header check takes the column names our CSV format reads (one LIST,
    one first line), not a second CSV parser in the JVM; none for a table without one."""
    from listing.spark.file_index import ListingPlanner

    ds = datasets.daily(str(tmp_path / "csv"), format="csv", days=2, rows_per_file=3)
    from pyspark.sql.types import DateType, DoubleType, LongType, StringType, StructField

    schema = StructType([StructField("id", LongType()), StructField("amount", DoubleType()),
                         StructField("name", StringType()), StructField("date", DateType()),
                         StructField("region", StringType())]).json()  # no JVM: a unit test
    planner = ListingPlanner()
    answer = json.loads(planner.sample(json.dumps({"path": ds.root, "format": "csv"}),
                                       schema))
    assert answer["path"] == min(f.path for f in ds.files)
    assert answer["header"] == ["id", "amount", "name"]
    parquet = datasets.daily(str(tmp_path / "pq"), days=1, rows_per_file=3)
    answer = json.loads(planner.sample(json.dumps({"path": parquet.root}), schema))
    assert answer["path"] is not None and answer["header"] is None


def test_a_file_added_after_load_is_planned_at_query_time(spark, tmp_path):
    import shutil

    ds = datasets.daily(str(tmp_path / "t"), days=2, rows_per_file=4)
    ours = read(spark, ds, "native")
    from listing.spark.file_index import register_planner, unregister_planner

    unregister_planner(spark)
    try:
        spark_listed = read(spark, ds, "native")
        assert _file_index(spark_listed).getClass().getSimpleName() == "InMemoryFileIndex"
    finally:
        assert register_planner(spark)
    new = tmp_path / "t" / "date=2025-01-09" / "region=eu"
    new.mkdir(parents=True)
    shutil.copy(ds.files[0].path, new / "part-0.parquet")
    assert ours.count() == ds.num_rows + ds.files[0].num_rows  # our planner listed it
    assert spark_listed.count() == ds.num_rows  # Spark listed when the relation was built
    assert ours.where("date = '2025-01-09'").count() == ds.files[0].num_rows


def test_without_a_planner_spark_lists_the_table_itself(spark, events):
    """No registered planner (Spark Connect, no callback server): Spark's own file index,
    with the same results on the whole query matrix."""
    from listing.spark.file_index import register_planner, unregister_planner

    unregister_planner(spark)
    try:
        native = read(spark, events, "native")
        assert _file_index(native).getClass().getSimpleName() == "InMemoryFileIndex"
        python = read(spark, events, "python")
        for name, query in QUERIES.items():
            assert query(native) == query(python), name
    finally:
        assert register_planner(spark)
    assert _file_index(read(spark, events, "native")).getClass().getSimpleName() == (
        "ListingFileIndex")


def test_partition_values_from_our_planner_keep_their_types(spark, tmp_path):
    """Integers, a Hive null and an escaped string come back typed as the relation says;
    filters on them (sent or evaluated in the JVM) agree with the Python engine."""
    parts = [{"year": y, "city": c} for y in (2024, 2025) for c in ("a/b", "x y", None)]
    ds = datasets.build(str(tmp_path / "typed"), parts, rows_per_file=2)
    native, python = read(spark, ds, "native"), read(spark, ds, "python")
    assert _file_index(native).getClass().getSimpleName() == "ListingFileIndex"
    assert native.schema == python.schema
    used = {}
    for where in (None, "year = 2025", "city IS NULL", "city = 'a/b' OR year > 2024",
                  "city IN ('x y', 'q') AND year <= 2024", "NOT (city = 'x y')"):
        n = native if where is None else native.where(where)
        p = python if where is None else python.where(where)
        assert sorted(tuple(r) for r in n.collect()) == sorted(
            tuple(r) for r in p.collect()), where
        used[where] = json.loads(_file_index(n).lastUsed())
    assert _f("EqualTo", "year", 2025) in used["year = 2025"]
    assert _f("IsNull", "city") in used["city IS NULL"]
    assert {"kind": "Or", "left": _f("EqualTo", "city", "a/b"),
            "right": _f("GreaterThan", "year", 2024)} in used["city = 'a/b' OR year > 2024"]


def test_base_path_and_unpartitioned_tables_through_our_planner(spark, tmp_path):
    ds = datasets.daily(str(tmp_path / "b"), days=3)
    folder = f"{ds.root}/date=2025-01-02"
    native = (spark.read.format("listing").option("engine", "native")
              .option("basePath", ds.root).load(folder))
    python = (spark.read.format("listing").option("engine", "python")
              .option("basePath", ds.root).load(folder))
    assert _file_index(native).getClass().getSimpleName() == "ListingFileIndex"
    assert sorted(tuple(r) for r in native.collect()) == sorted(
        tuple(r) for r in python.collect())
    assert native.count() == sum(f.num_rows for f in ds.files
                                 if f.partition_values["date"] == dt.date(2025, 1, 2))
    flat = datasets.build(str(tmp_path / "flat"), [{}], rows_per_file=5)
    df = read(spark, flat, "native")
    assert _file_index(df).partitionSchema().size() == 0
    assert df.count() == 5 and df.where("id >= 0").count() == 5


def test_nanosecond_timestamps_stay_python(spark, tmp_path):
    """pyarrow writes Parquet nanosecond timestamps, which Spark 4.3's Parquet reader does
    not read: the planner's sampled footer keeps such a table on the Python engine."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "t" / "k=1").mkdir(parents=True)
    ts = dt.datetime(2026, 1, 1, 12)
    pq.write_table(pa.table({"ts": pa.array([ts], pa.timestamp("ns", "UTC"))}),
                   tmp_path / "t" / "k=1" / "a.parquet")
    df = spark.read.format("listing").load(str(tmp_path / "t"))
    assert engine_of(df) == "python"
    assert df.count() == 1 and df.first().ts.year == 2026
    with pytest.raises(Exception, match="engine=native.*nanosecond timestamps"):
        spark.read.format("listing").option("engine", "native").load(str(tmp_path / "t"))
    pq.write_table(pa.table({"ts": pa.array([ts], pa.timestamp("us", "UTC"))}),
                   tmp_path / "t" / "k=1" / "a.parquet")
    assert engine_of(spark.read.format("listing").load(str(tmp_path / "t"))) == "native"


HOSTILE_NAMES = ["a,b.parquet", "q'uo\"te.parquet", "new\nline.parquet", "ünï cødé ✓.parquet",
                 "100%.parquet", "%41 sp ace.parquet", "h#sh?x.parquet", "br[a]{c}e.parquet"]
HOSTILE_CITIES = ["a,b", "it's \"q\"", "new\nline", "ünï ✓", "100%", "%41", "x y", "a/b",
                  "c:d=e"]


def test_hostile_file_names_and_values_cross_to_the_jvm_as_data(spark, tmp_path):
    """File names and partition values with commas, quotes, newlines, unicode, ``%``,
    spaces and URL syntax reach Spark's reader as the files they are: the same rows as the
    Python engine, and every row's file path, size and modification time as Spark's own
    file index reads them from the same tree."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from listing.hive import escape_path_name

    root = tmp_path / "hostile"
    ids = iter(range(10_000))
    for city in HOSTILE_CITIES:
        folder = root / f"city={escape_path_name(city)}"
        folder.mkdir(parents=True)
        for name in HOSTILE_NAMES:
            pq.write_table(pa.table({"id": [next(ids)]}), folder / name)
    native = spark.read.format("listing").option("engine", "native").load(str(root))
    python = spark.read.format("listing").option("engine", "python").load(str(root))
    spark_own = spark.read.schema("id long, city string").option("basePath", str(root)
                                                                 ).parquet(str(root))
    assert _file_index(native).getClass().getSimpleName() == "ListingFileIndex"
    assert _file_index(spark_own).getClass().getSimpleName() == "InMemoryFileIndex"

    def files(df):
        return sorted(tuple(r) for r in df.select(
            "id", "city", "_metadata.file_path", "_metadata.file_size",
            "_metadata.file_modification_time", F.input_file_name()).collect())

    got, want = files(native), files(spark_own)
    assert len(got) == len(HOSTILE_CITIES) * len(HOSTILE_NAMES)
    assert {r[1] for r in got} == set(HOSTILE_CITIES)
    assert sorted(tuple(r) for r in native.collect()) == sorted(
        tuple(r) for r in python.collect())
    assert [r[:5] for r in got] == [r[:5] for r in want]
    # input_file_name is the file's URL: Spark's own index spells its local ones file:///
    assert [r[5] for r in got] == [r[2] for r in got]
    assert [r[5] for r in want] == [r[2].replace("file:/", "file:///", 1) for r in want]
    assert any("%0A" in r[2] and "%25" in r[2] for r in got)  # escaped, not cut at them


def test_local_times_and_links_read_as_spark_s_file_index_reads_them(spark, tmp_path):
    """A local file's time is its nanoseconds floored to the millisecond (Java's
    ``File.lastModified``), on both engines, where a float's rounding gave the next
    millisecond; a symlinked file is its target's size and time, and reads (a link's own
    time once made every read of it fail as "changed since listing")."""
    import os

    import pyarrow as pa
    import pyarrow.parquet as pq

    root, outside = tmp_path / "times", tmp_path / "outside"
    (root / "k=1").mkdir(parents=True)
    outside.mkdir()
    # nanoseconds a float rounds up to the next millisecond (and microsecond), and to none
    stamps = {"a.parquet": 1_700_000_000_078_999_900, "b.parquet": 1_700_000_000_000_000_400,
              "c.parquet": 1_600_000_000_123_456_789}
    for i, (name, ns) in enumerate(stamps.items()):
        pq.write_table(pa.table({"id": [i]}), root / "k=1" / name)
        os.utime(root / "k=1" / name, ns=(ns, ns))
    pq.write_table(pa.table({"id": [10, 11]}), outside / "target.parquet")
    os.utime(outside / "target.parquet", ns=(1_500_000_000_000_000_000,) * 2)
    os.symlink(outside / "target.parquet", root / "k=1" / "link.parquet")
    assert round(stamps["a.parquet"] / 1e9, 6) * 1000 % 1000 == 79  # positive control
    cols = ["id", "k", "_metadata.file_path", "_metadata.file_size",
            "_metadata.file_modification_time"]

    def files(df):
        return sorted(tuple(r) for r in df.select(*cols).collect())

    want = files(spark.read.schema("id long, k int").parquet(str(root)))
    assert len(want) == 5
    got = {engine: files(spark.read.format("listing").option("engine", engine)
                         .option("include_file_metadata", engine == "python")
                         .load(str(root))) for engine in ("native", "python")}
    assert got["native"] == want
    # the Python engine's paths are the table's URLs: compare the rest
    assert [r[:2] + r[3:] for r in got["python"]] == [r[:2] + r[3:] for r in want]
    times = {r[2].rsplit("/", 1)[-1]: r[4] for r in want}
    assert times["a.parquet"].microsecond == 78_000
    assert times["link.parquet"].year == 2017  # the target's time, not the link's
    table = listing.ListingTable.open(str(root))
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == [0, 1, 2, 10, 11]
