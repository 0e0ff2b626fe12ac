"""Layouts and inputs that used to give silently wrong or empty results (or a crash deep
inside): each must now be either correct or an error naming what is at fault."""

from __future__ import annotations

import datetime as dt
import re

import pyarrow as pa
import pytest

from listing import ListingTable
from listing.errors import (
    FilterError,
    ListingError,
    OptionError,
    PartitionLayoutError,
    PartitionValueError,
)
from listing.testing import datasets

SCHEMA = pa.schema([("id", pa.int64())])


def put(server, bucket, keys, ids=(1,)):
    """One tiny Parquet file (column ``id``) at every key."""
    data = datasets.encode(pa.table({"id": pa.array(list(ids), pa.int64())}), "parquet")
    server.put_objects_fast(bucket, {k: data for k in keys})


def open_table(server, bucket, root="t", **kwargs):
    return ListingTable.open(f"s3://{bucket}/{root}", storage_options=server.storage_options,
                             **kwargs)


def names(plan):
    return sorted(f.path.split("/", 4)[4] for f in plan.files)


# --- 1. a needlessly escaped spelling of a safe value ------------------------------------

def test_needlessly_escaped_value_is_found_by_equality_in_and_like(s3_server, s3_bucket):
    put(s3_server, s3_bucket, ["t/city=%41/part-0.parquet", "t/city=B/part-0.parquet",
                               "t/city=C/part-0.parquet"])
    table = open_table(s3_server, s3_bucket)
    assert table.scan().to_arrow().column("city").to_pylist().count("A") == 1
    for where in ["city = 'A'", "city IN ('A', 'B')", "city LIKE 'A%'",
                  "city >= 'A' AND city <= 'A'"]:
        got = table.scan(where=where).to_arrow()
        assert "A" in got.column("city").to_pylist(), where
    assert names(table.scan(where="city = 'A'")) == ["city=%41/part-0.parquet"]


def test_needlessly_escaped_value_below_the_first_level(s3_server, s3_bucket):
    put(s3_server, s3_bucket, ["t/date=2026-01-01/city=%41/part-0.parquet",
                               "t/date=2026-01-01/city=B/part-0.parquet",
                               "t/date=2026-01-02/city=A/part-0.parquet"])
    table = open_table(s3_server, s3_bucket)
    assert names(table.scan(where="date = '2026-01-01' AND city = 'A'")) == [
        "date=2026-01-01/city=%41/part-0.parquet"]
    assert names(table.scan(where="city = 'A'")) == [
        "date=2026-01-01/city=%41/part-0.parquet", "date=2026-01-02/city=A/part-0.parquet"]


def test_needlessly_escaped_date_is_found_by_a_range(s3_server, s3_bucket):
    put(s3_server, s3_bucket, ["t/date=2026-01-01/part-0.parquet",
                               "t/date=2026%2D01%2D02/part-0.parquet",
                               "t/date=2026-01-03/part-0.parquet"])
    table = open_table(s3_server, s3_bucket)
    # as Spark infers it: a date is recognised in its spelling on disk, so the column is a
    # string (tests/spark/test_spark_discovery.py compares); the values are unescaped all the same
    assert table.partition_cols == [("date", pa.string())]
    assert names(table.scan(where="date = '2026-01-02'")) == ["date=2026%2D01%2D02/part-0.parquet"]
    assert len(table.scan(where="date BETWEEN '2026-01-02' AND '2026-01-03'").files) == 2


def test_declared_table_learns_the_spellings_from_its_first_sampling_scan(s3_server, s3_bucket):
    put(s3_server, s3_bucket, ["t/city=%41/part-0.parquet", "t/city=B/part-0.parquet"])
    table = open_table(s3_server, s3_bucket, partition_cols=[("city", "string")], schema=SCHEMA)
    assert table.profile is None  # no request at open
    assert len(table.scan().files) == 2  # lists the root: samples its first page
    assert names(table.scan(where="city = 'A'")) == ["city=%41/part-0.parquet"]


def test_canonical_escapes_keep_exact_prefixes(s3_server, s3_bucket):
    """Spark's own escapes (a/b -> a%2Fb) are one spelling: 'us' is still one prefix."""
    put(s3_server, s3_bucket, [f"t/city={c}/part-{i}.parquet"
                               for c in ("a%2Fb", "us", "eu") for i in range(2)])
    table = open_table(s3_server, s3_bucket)
    plan = table.scan(where="city = 'us'")
    assert names(plan) == ["city=us/part-0.parquet", "city=us/part-1.parquet"]
    assert any("city=us/" in step for step in plan.listing_plan), plan.listing_plan


# --- 2. an empty partition value ----------------------------------------------------------

def test_empty_partition_value_is_an_error_at_open(s3_server, s3_bucket):
    put(s3_server, s3_bucket, ["t/date=2026-01-01/a.parquet", "t/date=/b.parquet"])
    with pytest.raises(PartitionValueError, match=r"empty.*'date'.*t/date=/b\.parquet"):
        open_table(s3_server, s3_bucket)
    with pytest.raises(PartitionValueError, match=r"t/date=/b\.parquet"):
        open_table(s3_server, s3_bucket, partition_cols=["date"])


def test_empty_partition_value_is_an_error_at_scan(s3_server, s3_bucket):
    keys = [f"t/a=1/date=2026-01-{d:02d}/part-{i}.parquet" for d in range(1, 29)
            for i in range(40)]
    put(s3_server, s3_bucket, [*keys, "t/a=2/date=/late.parquet"])
    table = open_table(s3_server, s3_bucket, schema=SCHEMA)  # the sample ends before it
    assert table.partition_cols == [("a", pa.int32()), ("date", pa.date32())]
    with pytest.raises(PartitionValueError, match=r"empty.*'date'.*a=2/date=/late\.parquet"):
        table.scan()
    with pytest.raises(PartitionValueError, match=r"a=2/date=/late\.parquet"):
        table.scan(where="a = 2")
    declared = open_table(s3_server, s3_bucket, partition_cols=[("a", "int"), ("date", "string")],
                          schema=SCHEMA)
    with pytest.raises(PartitionValueError, match=r"a=2/date=/late\.parquet"):
        declared.scan(where="date >= '2026-01-10'")


# --- 3. globs that can never match --------------------------------------------------------

def test_url_glob_ending_in_a_slash_is_an_error(s3_server, s3_bucket):
    put(s3_server, s3_bucket, ["t1/a.parquet"])
    with pytest.raises(ListingError, match=re.escape(f"s3://{s3_bucket}/t?/")):
        ListingTable.open(f"s3://{s3_bucket}/t?/", storage_options=s3_server.storage_options,
                          schema=SCHEMA)


def test_url_glob_with_an_unclosed_bracket_is_an_error(s3_server, s3_bucket):
    put(s3_server, s3_bucket, ["t1/a.parquet"])
    with pytest.raises(ListingError, match=r"unclosed '\['"):
        ListingTable.open(f"s3://{s3_bucket}/t[1/*.parquet",
                          storage_options=s3_server.storage_options, schema=SCHEMA)


@pytest.mark.parametrize("glob", ["[", "part-[0.parquet", "k=1/*.parquet", "*.{parquet,csv"])
def test_path_glob_filter_that_cannot_match_is_an_error(s3_server, s3_bucket, glob):
    put(s3_server, s3_bucket, ["t/k=1/part-0.parquet"])
    with pytest.raises(OptionError, match=re.escape(repr(glob))):
        open_table(s3_server, s3_bucket, path_glob_filter=glob)


def test_path_glob_filter_braces_match_as_in_spark(s3_server, s3_bucket):
    put(s3_server, s3_bucket, ["t/k=1/part-0.parquet", "t/k=1/part-1.parquet",
                               "t/k=1/part-2.parquet"])
    table = open_table(s3_server, s3_bucket, path_glob_filter="part-{0,2}.parquet")
    assert names(table.scan()) == ["k=1/part-0.parquet", "k=1/part-2.parquet"]


def test_spark_path_glob_filter_unclosed_bracket_is_an_error(spark, s3_server, s3_bucket):
    put(s3_server, s3_bucket, ["t/k=1/part-0.parquet"])
    with pytest.raises(Exception, match=r"path_glob_filter='\['"):
        _spark_reader(spark, s3_server, pathGlobFilter="[").load(f"s3://{s3_bucket}/t").collect()


# --- 4. the same partition column twice in one path ---------------------------------------

def test_repeated_partition_column_is_a_layout_error_at_open(s3_server, s3_bucket):
    put(s3_server, s3_bucket, ["t/a=1/a=2/part-0.parquet"])
    with pytest.raises(PartitionLayoutError, match=r"'a'.*twice.*t/a=1/a=2/part-0\.parquet"):
        open_table(s3_server, s3_bucket)
    put(s3_server, s3_bucket, ["u/a=1/A=2/part-0.parquet"])
    with pytest.raises(PartitionLayoutError, match=r"u/a=1/A=2/part-0\.parquet"):
        open_table(s3_server, s3_bucket, root="u", partition_cols=["a"])
    # fully declared (no request at open): the scan names it instead of a KeyError
    table = open_table(s3_server, s3_bucket, partition_cols=[("a", "int")], schema=SCHEMA)
    with pytest.raises(PartitionLayoutError, match=r"t/a=1/a=2/part-0\.parquet"):
        table.scan(where="a = 1")


def test_repeated_declared_partition_column_is_an_option_error(s3_server, s3_bucket):
    put(s3_server, s3_bucket, ["t/a=1/a=2/part-0.parquet"])
    with pytest.raises(OptionError, match="'a'.*twice"):
        open_table(s3_server, s3_bucket, partition_cols=[("a", "int"), ("a", "int")],
                   schema=SCHEMA)


# --- 5. long OR chains ---------------------------------------------------------------------

def test_a_thousand_ors_parse_and_filter_rows(s3_server, s3_bucket):
    data = datasets.encode(pa.table({"id": pa.array(range(0, 3000), pa.int64())}), "parquet")
    s3_server.put_objects_fast(s3_bucket, {f"t/k={k}/part-0.parquet": data for k in range(3)})
    table = open_table(s3_server, s3_bucket)
    where = " OR ".join(f"id = {i}" for i in range(1000))
    got = table.scan(where=where).to_arrow()
    assert sorted(got.column("id").to_pylist()) == sorted(list(range(1000)) * 3)
    on_partitions = " OR ".join(f"k = {i % 2}" for i in range(1000))
    assert names(table.scan(where=on_partitions)) == ["k=0/part-0.parquet", "k=1/part-0.parquet"]
    mixed = " AND ".join(f"id <> {i}" for i in range(1000)) + " AND k = 2"
    assert table.scan(where=mixed).to_arrow().num_rows == 2000
    assert "id = 999" in table.scan(where=where).explain()


def test_a_thousand_ors_built_with_col(s3_server, s3_bucket):
    from listing import col

    put(s3_server, s3_bucket, ["t/k=1/part-0.parquet"], ids=range(2000))
    table = open_table(s3_server, s3_bucket)
    expr = col("id") == 0
    for i in range(1, 1000):
        expr = expr | (col("id") == i)
    assert table.scan(where=expr).to_arrow().num_rows == 1000


def test_too_deep_a_filter_is_a_filter_error(s3_server, s3_bucket):
    put(s3_server, s3_bucket, ["t/k=1/part-0.parquet"])
    table = open_table(s3_server, s3_bucket)
    deep = "NOT (" * 3000 + "id = 1" + ")" * 3000
    with pytest.raises(FilterError, match="too deeply nested"):
        table.scan(where=deep)


# --- 6. integer literals out of the column's range ---------------------------------------

def test_out_of_range_literal_on_a_long_column_is_a_filter_error(s3_server, s3_bucket):
    put(s3_server, s3_bucket, ["t/hour=1/part-0.parquet"])
    table = open_table(s3_server, s3_bucket)
    assert table.schema.field("id").type == pa.int64()
    for where in ["id = 9223372036854775808", "id IN (1, -9223372036854775809)",
                  "id < 99999999999999999999"]:
        with pytest.raises(FilterError, match=r"out of range.*'id'.*int64"):
            table.scan(where=where)


def test_out_of_range_literal_on_an_int_partition_column_is_a_filter_error(s3_server,
                                                                            s3_bucket):
    put(s3_server, s3_bucket, ["t/hour=1/part-0.parquet", "t/hour=2/part-0.parquet"])
    table = open_table(s3_server, s3_bucket)
    assert table.schema.field("hour").type == pa.int32()
    for where in ["hour = 2147483648", "hour = 2147483648 OR id = 1", "hour > -2147483649"]:
        with pytest.raises(FilterError, match=r"out of range.*'hour'.*int32"):
            table.scan(where=where)
    assert len(table.scan(where="hour = 2147483647 OR hour = 1").files) == 1


# --- 7. a k=v directory below the last partition level -----------------------------------

def test_deeper_partition_directory_beyond_the_sample_is_a_layout_error(s3_server, s3_bucket):
    keys = [f"t/date=2026-01-{d:02d}/part-{i}.parquet" for d in range(1, 31) for i in range(40)]
    put(s3_server, s3_bucket, [*keys, "t/date=2026-01-30/extra=1/part-0.parquet"])
    table = open_table(s3_server, s3_bucket)
    assert table.partition_cols == [("date", pa.date32())]
    bad = r"date=2026-01-30/extra=1/part-0\.parquet"
    with pytest.raises(PartitionLayoutError, match=bad):
        table.scan()
    with pytest.raises(PartitionLayoutError, match=bad):
        table.scan(where="date = '2026-01-30'")
    with pytest.raises(PartitionLayoutError, match=bad):
        table.scan(where="date >= '2026-01-29'")


def test_deeper_partition_directory_in_the_sample_of_a_declared_table(s3_server, s3_bucket):
    put(s3_server, s3_bucket, ["t/date=2026-01-01/part-0.parquet",
                               "t/date=2026-01-02/extra=1/part-0.parquet"])
    with pytest.raises(PartitionLayoutError, match=r"date=2026-01-02/extra=1/part-0\.parquet"):
        open_table(s3_server, s3_bucket, partition_cols=[("date", "date")])
    table = open_table(s3_server, s3_bucket, partition_cols=[("date", "date")], schema=SCHEMA)
    with pytest.raises(PartitionLayoutError, match=r"date=2026-01-02/extra=1/part-0\.parquet"):
        table.scan(where="date = '2026-01-02'")


def test_plain_directories_below_the_partitions_are_still_read(s3_server, s3_bucket):
    """Spark reads date=X/sub/file as partition date=X; only k=v below is a conflict."""
    put(s3_server, s3_bucket, ["t/date=2026-01-01/part-0.parquet",
                               "t/date=2026-01-01/sub/part-1.parquet"])
    table = open_table(s3_server, s3_bucket)
    assert len(table.scan(where="date = '2026-01-01'").files) == 2


# --- 8 and 9. Spark: partition_cols without types, user schema types -------------------

def _json(value):
    import json

    return json.dumps(value)


def _spark_reader(spark, server, **options):
    r = spark.read.format("listing").option("storage_options", _json(server.storage_options))
    for k, v in options.items():
        r = r.option(k, v)
    return r


def _hourly(server, bucket):
    keys = [f"t/date=2026-01-0{d}/hour={h:02d}/part-0.parquet" for d in (1, 2) for h in (7, 8)]
    put(server, bucket, keys, ids=(1, 2))
    return f"s3://{bucket}/t"


def test_spark_partition_cols_without_types_are_inferred(spark, s3_server, s3_bucket):
    url = _hourly(s3_server, s3_bucket)
    df = _spark_reader(spark, s3_server, partition_cols="date,hour").load(url)
    assert dict(df.dtypes) == {"id": "bigint", "date": "date", "hour": "int"}
    assert df.count() == 8
    assert df.where("hour = 7 AND date = '2026-01-02'").count() == 2
    mixed = _spark_reader(spark, s3_server, partition_cols="date, hour:string").load(url)
    assert dict(mixed.dtypes) == {"id": "bigint", "date": "date", "hour": "string"}
    assert sorted({r.hour for r in mixed.collect()}) == ["07", "08"]


def test_spark_user_schema_types_partition_columns(spark, s3_server, s3_bucket):
    url = _hourly(s3_server, s3_bucket)
    df = (_spark_reader(spark, s3_server)
          .schema("id long, date string, hour long").load(url))
    rows = df.collect()
    assert len(rows) == 8
    assert {(r.date, r.hour) for r in rows} == {(f"2026-01-0{d}", h) for d in (1, 2)
                                                for h in (7, 8)}
    assert df.where("date = '2026-01-02' AND hour = 8").count() == 2
    assert isinstance(rows[0].date, str) and not isinstance(rows[0].date, dt.date)


def test_spark_user_schema_type_a_value_does_not_parse_as(spark, s3_server, s3_bucket):
    put(s3_server, s3_bucket, ["t/hour=07/part-0.parquet", "t/hour=x7/part-0.parquet"])
    df = (_spark_reader(spark, s3_server)
          .schema("id long, hour int").load(f"s3://{s3_bucket}/t"))
    with pytest.raises(Exception, match=r"'x7'.*'hour'.*hour=x7/part-0\.parquet"):
        df.collect()


# --- 10. partition discovery as Spark 4.3 discovers (tests/spark/test_spark_discovery.py compares)

def test_names_differing_only_in_case_are_one_column(s3_server, s3_bucket):
    """``A=…/`` and ``a=…/`` are one column (Spark's default spark.sql.caseSensitive=false),
    named as the first key spells it; a filter finds every spelling, so that level is
    never enumerated by a prefix built from one of them."""
    put(s3_server, s3_bucket, ["t/A=1/part-0.parquet", "t/a=2/part-0.parquet",
                               "t/a=3/part-0.parquet"])
    table = open_table(s3_server, s3_bucket)
    assert table.partition_cols == [("A", pa.int32())]
    assert sorted(table.scan().to_arrow().column("A").to_pylist()) == [1, 2, 3]
    assert names(table.scan(where="a = 2")) == ["a=2/part-0.parquet"]
    assert names(table.scan(where="A IN (1, 3)")) == ["A=1/part-0.parquet", "a=3/part-0.parquet"]
    with pytest.raises(PartitionLayoutError, match="different partition columns"):
        open_table(s3_server, s3_bucket, case_sensitive=True)


def test_declared_name_in_another_case_reads_the_directories(s3_server, s3_bucket):
    """SPARK-26990: a declared ``A`` reads ``a=…/`` and keeps the declared name. Declared
    with types and a schema (no request at open), the first scan lists and decodes the
    keys, and marks the level: no later scan builds a prefix from ``A``."""
    put(s3_server, s3_bucket, ["t/a=1/part-0.parquet", "t/a=2/part-0.parquet"])
    sampled = open_table(s3_server, s3_bucket, partition_cols=["A"])
    assert sampled.partition_cols == [("A", pa.int32())]
    assert sampled.profile is not None and sampled.profile.respelled == [True]
    assert names(sampled.scan(where="A = 1")) == ["a=1/part-0.parquet"]
    declared = open_table(s3_server, s3_bucket, partition_cols=[("A", "int")], schema=SCHEMA)
    assert declared.profile is None  # no request at open
    assert names(declared.scan(where="A = 1")) == ["a=1/part-0.parquet"]
    assert declared.profile is not None and declared.profile.respelled == [True]
    assert names(declared.scan(where="A = 2")) == ["a=2/part-0.parquet"]
    with pytest.raises(PartitionLayoutError, match="differ in case"):
        open_table(s3_server, s3_bucket, partition_cols=["A"], case_sensitive=True)


def test_files_at_the_root_of_a_partitioned_table_are_not_read(s3_server, s3_bucket, caplog):
    """As Spark: only the partition folders are read; the root's files are skipped,
    counted, and reported once in the log."""
    put(s3_server, s3_bucket, ["t/stray.parquet", "t/k=1/part-0.parquet",
                               "t/k=2/part-0.parquet"])
    table = open_table(s3_server, s3_bucket)
    assert table.partition_cols == [("k", pa.int32())]
    with caplog.at_level("WARNING", logger="listing"):
        plan = table.scan()
    assert names(plan) == ["k=1/part-0.parquet", "k=2/part-0.parquet"]
    assert plan.metrics["files_skipped_hidden"] == 1
    assert plan.to_arrow().num_rows == 2
    # positive control: a table of root files only is an unpartitioned table
    put(s3_server, s3_bucket, ["u/a.parquet", "u/b.parquet"])
    assert len(open_table(s3_server, s3_bucket, root="u").scan().files) == 2
    # a file between partition levels is still a layout error, as in Spark
    put(s3_server, s3_bucket, ["v/k=1/x.parquet", "v/k=1/j=2/part-0.parquet"])
    with pytest.raises(PartitionLayoutError):
        open_table(s3_server, s3_bucket, root="v")


def test_only_null_partition_values_are_a_null_column(s3_server, s3_bucket):
    """Spark types a column whose every value is __HIVE_DEFAULT_PARTITION__ void: here
    ``pa.null()``, its values null."""
    put(s3_server, s3_bucket, ["t/k=__HIVE_DEFAULT_PARTITION__/part-0.parquet"])
    table = open_table(s3_server, s3_bucket)
    assert table.schema.field("k").type == pa.null()
    got = table.scan().to_arrow()
    assert got.schema.field("k").type == pa.null() and got.column("k").null_count == 1
    assert table.scan(where="k IS NULL").to_arrow().num_rows == 1
    assert table.scan(where="k IS NOT NULL").to_arrow().num_rows == 0


def test_time_partition_values_are_times(s3_server, s3_bucket):
    put(s3_server, s3_bucket, ["t/t=10%3A11%3A12/part-0.parquet",
                               "t/t=10%3A11%3A12.001000/part-0.parquet"])
    table = open_table(s3_server, s3_bucket)
    assert table.schema.field("t").type == pa.time64("us")
    assert sorted(table.scan().to_arrow().column("t").to_pylist()) == [
        dt.time(10, 11, 12), dt.time(10, 11, 12, 1000)]
    assert names(table.scan(where="t > '10:11:12'")) == ["t=10%3A11%3A12.001000/part-0.parquet"]
