"""Partition discovery, differential against Spark: each layout (most from Spark's own
``ParquetPartitionDiscoverySuite`` and ``FileIndexSuite``) is built on local disk and read by
``spark.read.parquet`` (the oracle) and by ``spark.read.format("listing")``; partition columns,
their types, the rows, and filtered counts must agree, or both must fail. Layouts where we
differ on purpose are listed in ``DIFFERENT`` with what we do instead."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

DATA = pa.table({"id": pa.array([1, 2], pa.int64())})
NULL = "__HIVE_DEFAULT_PARTITION__"

# name: (files below the root: ``….parquet`` holds DATA, ``:empty`` marks a zero-byte one,
# ``:data`` a file named otherwise that holds DATA, any other name is zero bytes; filters)
LAYOUTS: dict[str, tuple[list[str], list[str]]] = {
    # types and widening
    "int_long_decimal": (["a=1/p.parquet", "a=3000000000/p.parquet",
                          "a=123456789012345678901/p.parquet"], ["a > 2"]),
    "int_double": (["a=1/p.parquet", "a=1.5/p.parquet"], ["a < 1.2"]),
    "long_double_is_string": (["a=3000000000/p.parquet", "a=1.5/p.parquet"], []),
    "date_timestamp": (["a=2021-01-01/p.parquet", "a=2021-01-01 10%3A00%3A00/p.parquet"],
                       ["a > '2021-01-01'"]),
    "date_string": (["a=2021-01-01/p.parquet", "a=abc/p.parquet"], []),
    "nan_infinity": (["a=NaN/p.parquet", "a=1.5/p.parquet", "a=Infinity/p.parquet",
                      "a=-Infinity/p.parquet"], ["a = 1.5", "a > 1", "a = 'NaN'"]),
    "leading_zeros": (["h=07/p.parquet", "h=7/x.parquet", "h=10/p.parquet"], ["h = 7"]),
    # escaping, default partition name
    "escaped_digit_is_string": (["a=%31/p.parquet", "a=2/p.parquet"], ["a = '1'"]),
    "escaped_date_is_string": (["d=2026-01-01/p.parquet", "d=2026%2D01%2D02/p.parquet"],
                               ["d = '2026-01-02'"]),
    "escaped_string": (["s=a%2Fb/p.parquet", "s=c%3Dd/p.parquet", "s=e f/p.parquet"],
                       ["s = 'a/b'"]),
    "timestamp_escaped_colons": (["t=2021-01-01 00%3A00%3A00/p.parquet",
                                  "t=2021-01-02 12%3A30%3A00.5/p.parquet"],
                                 ["t > '2021-01-01 12:00:00'"]),
    "timestamp_with_t_is_string": (["t=2021-01-01T00%3A00%3A00/p.parquet"], []),
    "default_partition": (["a=1/p.parquet", "a=__HIVE_DEFAULT_PARTITION__/p.parquet"],
                          ["a IS NULL"]),
    # hidden names (shouldFilterOutPathName), empty files
    "underscore_partition": (["_part=x/p.parquet", "_part=y/p.parquet"], ["_part = 'x'"]),
    "underscore_below": (["a=1/_b=2/p.parquet", "a=2/_b=3/p.parquet"], []),
    "hidden_files": (["a=1/p.parquet", "a=1/_SUCCESS", "a=1/.other.crc", "_temporary/x",
                      "a=2/p.parquet", "a=2/_x=y.parquet", "a=2/q.parquet._COPYING_",
                      ".hidden=3/p.parquet", "a=3/a.parquet._COPYING_", "a=3/b.parquet",
                      "a=3/_x=z.parquet"], ["a = 3"]),
    "empty_files": (["a=1/e.parquet:empty", "a=1/p.parquet", "a=2/p.parquet"], []),
    # layouts that must fail
    "empty_column_name": (["=10/p.parquet"], []),
    "conflicting_names": (["a=1/p.parquet", "b=1/p.parquet"], []),
    "conflicting_depths": (["a=1/p.parquet", "a=1/b=2/p.parquet"], []),
    "metadata_dir_beside_partitions": (["_metadata/p.parquet", "a=1/p.parquet"], []),
    "mixed_partition_and_plain": (["a=1/p.parquet", "plain/p.parquet"], []),
    # no partitions
    "flat": (["p.parquet", "q.parquet"], []),
    # ParquetPartitionDiscoverySuite: "parse partitions", "read partitioned table - with
    # nulls", type conflicts (SPARK-22109 and after), escaping (SPARK-7847), string values
    # kept (SPARK-34314), invalid dates and times (SPARK-23436, SPARK-36861), dot files
    # (SPARK-8037), _SUCCESS and _temporary, summary files (SPARK-15895), a file beside a
    # partition folder (SPARK-49163)
    "two_levels_double_and_string": (["a=10/b=20/p.parquet", "a=10.5/b=hello/p.parquet"],
                                     ["b = 'hello'", "a > 10"]),
    "nulls_on_two_levels": ([f"pi={x}/ps={y}/p.parquet" for x in ("1", NULL)
                             for y in ("foo", NULL)], ["pi IS NULL", "ps IS NULL", "pi = 1"]),
    "null_date_timestamp_int_decimal": (
        [f"a={NULL}/b=0/p.parquet", "a=2014-01-01/b=9223372036854775807111/p.parquet",
         f"a=2014-01-01 00%3A01%3A00.0/b={NULL}/p.parquet"],
        ["b > 0", "a IS NULL", "a > '2014-01-01'"]),
    "strings_and_timestamps": (["s=2015-01-01 00%3A00%3A00/p.parquet",
                                "s=2014-01-01 00%3A00%3A00/p.parquet", "s=blah/p.parquet"],
                               ["s = 'blah'", "s = '2015-01-01 00:00:00'"]),
    "decimal_widening": (["d=1/p.parquet", "d=3/p.parquet", f"d={'2' * 30}/p.parquet"],
                         ["d > 2"]),
    # Java's BigDecimal reads 1e5, 1. and 1.0e10 without a fraction: decimal(p, 0)
    "decimal_exponents": (["a=1e5/p.parquet", "a=7/p.parquet", "a=-1./p.parquet",
                           "a=1.0e10/p.parquet"], ["a > 10"]),
    # Double.parseDouble reads hexadecimal and space-padded numbers
    "java_doubles": (["a=0x1p3/p.parquet", "a= 1.5/p.parquet", "a=4d/p.parquet"], ["a > 2"]),
    # yyyy-MM-dd HH:mm:ss[.S]: one digit of a fraction at most, else a string
    "timestamp_fraction_digits": (["t=2021-01-01 00%3A00%3A00.123456/p.parquet",
                                   "t=2021-01-01 00%3A00%3A00.12/p.parquet"], []),
    "timestamp_one_fraction_digit": (["t=2021-01-01 00%3A00%3A00.5/p.parquet",
                                      "t=2021-01-02 00%3A00%3A00/p.parquet"],
                                     ["t > '2021-01-01'"]),
    "escaped_glob_characters": (["s=%2F/p.parquet", "s=%5B%5D/p.parquet", "s=%3F/p.parquet",
                                 "s=This is a string, %2F%5B%5D%3F%3D%3A/p.parquet"],
                                ["s = '[]'", "s = 'This is a string, /[]?=:'"]),
    "string_values_kept": (["part=AA/p.parquet", "part=-0/p.parquet"], ["part = '-0'"]),
    "invalid_dates_and_times_are_strings": (
        ["m=2018-41/h=2018-01-01-04/t=2021-01-01T00/p.parquet",
         "m=2018-42/h=10%3A61/t=T00%3A01%3A02/p.parquet"], []),
    "strings_times_and_timestamps": (["s=00%3A00%3A00/p.parquet", "s=23%3A59%3A00.001/p.parquet",
                                      "s=2015-01-01 00%3A01%3A00/p.parquet"], []),
    "dot_files": (["b=1/c=1/d=1/p.parquet", "b=1/.DS_Store", "b=1/c=1/.foo/bar",
                   "b=2/c=2/d=2/p.parquet"], ["b = 1"]),
    "success_and_temporary": (["b=1/_SUCCESS", "b=1/c=1/_SUCCESS", "b=1/c=1/p.parquet",
                               "b=1/c=1/_temporary/x", "_temporary/0/y", "b=2/_TeMpOrArY/z",
                               "b=2/c=2/p.parquet"], []),
    "summary_files_above_the_leaves": (
        ["p0=0/_metadata:data", "p0=0/_common_metadata:data", "p0=0/.dummy",
         "p0=0/p1=0/_metadata:data", "p0=0/p1=0/_common_metadata:data", "p0=0/p1=0/p.parquet"],
        ["p1 = 0"]),
    "file_beside_partition_folder": (["col1=a/dummy.parquet", "col1=a/col2=b/p.parquet"], []),
    "plain_folder_between_partitions": (["a=10/b_hello/c=1.5/p.parquet",
                                         "a=11/b_hello/c=2.5/p.parquet"], []),
    # a column of nulls only: void (NullType), its rows null
    "only_default_partition": ([f"a={NULL}/p.parquet", f"a={NULL}/q.parquet"],
                               ["a IS NULL", "a IS NOT NULL"]),
    "only_default_partition_below_a_typed_one": (
        [f"d=2026-01-01/a={NULL}/p.parquet", f"d=2026-01-02/a={NULL}/p.parquet"],
        ["d = '2026-01-02'", "a IS NULL"]),
    # 'Infer the TIME data type' (Spark 4.1 and later: HH:mm:ss[.SSSSSS], whatever
    # spark.sql.timeType.enabled says): time(6), a fraction of up to six digits kept
    "time_of_day": (["t=10%3A11%3A12/p.parquet", "t=10%3A11%3A12.001000/p.parquet",
                     "t=23%3A59%3A59.5/p.parquet"],
                    ["t > '10:11:12'", "t = '10:11:12.001'", "t IS NULL"]),
    "time_and_null": (["t=00%3A00%3A00/p.parquet", f"t={NULL}/p.parquet"], ["t IS NULL"]),
    "time_seven_digits_is_string": (["t=10%3A11%3A12.1234567/p.parquet",
                                     "t=10%3A11%3A12/p.parquet"], ["t = '10:11:12'"]),
    "time_and_timestamp_are_strings": (["t=10%3A11%3A12/p.parquet",
                                        "t=2021-01-01 10%3A11%3A12/p.parquet"], []),
    # data files at the root beside partition folders: Spark reads the folders only
    "files_at_root_beside_partition_folders": (
        ["p.parquet", "a=1/p.parquet", "a=2/p.parquet", "z.parquet"], ["a = 1"]),
    "file_at_root_beside_two_levels": (["0.parquet", "a=1/b=x/p.parquet"], ["b = 'x'"]),
    # FileIndexSuite SPARK-26230: names differing only in case are one column under
    # spark.sql.caseSensitive=false (the name Spark keeps is the first in its hash map of
    # leaf folders: compared ignoring case, see CASE_FOLDED)
    "column_names_differing_in_case": (["a=1/p.parquet", "A=2/p.parquet"],
                                       ["a = 2", "A = 1", "a IN (1, 2)"]),
    "column_names_differing_in_case_below": (["d=1/k=x/p.parquet", "d=2/K=y/p.parquet",
                                              "D=3/k=z/p.parquet"], ["k = 'y'", "d > 1"]),
}

#: layouts whose column names Spark spells as its hash map of folders happens to order
CASE_FOLDED = {"column_names_differing_in_case", "column_names_differing_in_case_below"}
#: layouts read by the native hand-off too (new types, skipped root files, merged names)
ON_BOTH_ENGINES = {"only_default_partition", "only_default_partition_below_a_typed_one",
                   "time_of_day", "time_and_null", "files_at_root_beside_partition_folders",
                   "file_at_root_beside_two_levels", *CASE_FOLDED, "default_partition",
                   "hidden_files", "null_date_timestamp_int_decimal"}

#: where we differ from Spark on purpose. Each: files, what Spark does, and the outcome we
#: give instead ("error" and a message, or the schema and the number of rows)
DIFFERENT: dict[str, tuple[list[str], str, tuple]] = {
    # plain subfolders are read as Spark reads plain folders below partition directories
    # (date=X/sub/file) and as with recursiveFileLookup: no file is dropped
    "plain_subfolders": (["path1/p.parquet", "path2/p.parquet"],
                         "UNABLE_TO_INFER_SCHEMA", ([("id", "bigint")], 4)),
    "files_at_root_beside_plain_subfolders": (
        ["p.parquet", "path1/p.parquet", "path2/p.parquet"],
        "reads the root's file only, drops the subfolders' silently", ([("id", "bigint")], 6)),
}


#: both engines read every layout: ours (python) and Spark's own reader fed our file list
ENGINES = ("python", "native")


def build(root, files):
    for f in files:
        path = root / f.removesuffix(":empty").removesuffix(":data")
        path.parent.mkdir(parents=True, exist_ok=True)
        if f.endswith(":data") or (f.endswith(".parquet") and not f.endswith(":empty")):
            pq.write_table(DATA, path)
        else:
            path.write_bytes(b"")


def outcome(df_of, filters, *, fold_names=False):
    """(schema, sorted rows, counts under the filters), or the error's class; column names
    lower-cased with ``fold_names``."""
    try:
        df = df_of()
        rows = sorted(tuple(map(repr, r)) for r in df.collect())
        counts = [df.where(f).count() for f in filters]
        schema = [(f.name.lower() if fold_names else f.name, f.dataType.simpleString())
                  for f in df.schema]
        return schema, rows, counts
    except Exception as err:  # noqa: BLE001 - the outcome compared is "it failed"
        return "error", type(err).__name__


@pytest.mark.parametrize(("name", "engine"), [
    (name, engine) for name in sorted(LAYOUTS)
    for engine in (ENGINES if name in ON_BOTH_ENGINES else ENGINES[:1])])
def test_partition_discovery_as_spark(spark, tmp_path, name, engine):
    files, filters = LAYOUTS[name]
    build(tmp_path, files)
    root = str(tmp_path)
    fold = name in CASE_FOLDED
    theirs = outcome(lambda: spark.read.parquet(root), filters, fold_names=fold)
    ours = outcome(lambda: spark.read.format("listing").option("engine", engine).load(root),
                   filters, fold_names=fold)
    if theirs[0] == "error":
        assert ours[0] == "error", (theirs, ours)
    else:
        assert ours == theirs


@pytest.mark.parametrize("name", sorted(DIFFERENT))
def test_partition_discovery_where_we_differ_on_purpose(spark, tmp_path, name):
    files, spark_does, we_do = DIFFERENT[name]
    build(tmp_path, files)
    root = str(tmp_path)
    theirs = outcome(lambda: spark.read.parquet(root), [])
    assert theirs != outcome(lambda: spark.read.format("listing").load(root), []), spark_does
    if we_do[0] == "error":
        with pytest.raises(Exception, match=we_do[1]):
            spark.read.format("listing").load(root).collect()
    else:
        df = spark.read.format("listing").load(root)
        assert [(f.name, f.dataType.simpleString()) for f in df.schema] == we_do[0]
        assert df.count() == we_do[1]


# --- names that differ only in case: spark.sql.caseSensitive ------------------------------

CASE_SENSITIVE = "spark.sql.caseSensitive"


@pytest.mark.parametrize("engine", ENGINES)
def test_user_schema_names_a_partition_column_in_another_case(spark, tmp_path, engine):
    """FileIndexSuite SPARK-26990: a user schema naming ``A`` reads ``a=foo/`` as ``A``."""
    build(tmp_path, ["a=foo/p.parquet", "a=bar/p.parquet"])
    root = str(tmp_path)
    theirs = outcome(lambda: spark.read.schema("id long, A string").parquet(root),
                     ["A = 'foo'", "a = 'bar'"])
    ours = outcome(lambda: spark.read.format("listing").option("engine", engine)
                   .schema("id long, A string").load(root), ["A = 'foo'", "a = 'bar'"])
    assert theirs[0] == [("id", "bigint"), ("A", "string")]
    assert ours == theirs


@pytest.mark.parametrize("engine", ENGINES)
def test_case_sensitive_session_as_spark(spark, tmp_path, engine):
    """Under ``spark.sql.caseSensitive=true`` (the session's when the source is registered,
    or the option ``case_sensitive``): ``A=2/`` beside ``a=1/`` is refused as Spark refuses
    it, and a user schema's ``A`` is no partition column (null: a data column no file
    has; Spark appends the partition column ``a`` too, we read what the schema names)."""
    import listing

    mixed, lower = tmp_path / "mixed", tmp_path / "lower"
    build(mixed, ["a=1/p.parquet", "A=2/p.parquet"])
    build(lower, ["a=foo/p.parquet"])
    spark.conf.set(CASE_SENSITIVE, "true")
    try:
        listing.register(spark)  # the source takes the session's setting
        theirs = outcome(lambda: spark.read.parquet(str(mixed)), [])
        ours = outcome(lambda: spark.read.format("listing").option("engine", engine)
                       .load(str(mixed)), [])
        assert theirs[0] == ours[0] == "error", (theirs, ours)
        theirs = outcome(lambda: spark.read.schema("id long, A string").parquet(str(lower))
                         .select("id", "A"), [])
        # the hand-off matches names ignoring case: such a relation stays on our reader
        auto = "auto" if engine == "native" else engine
        ours = outcome(lambda: spark.read.format("listing").option("engine", auto)
                       .schema("id long, A string").load(str(lower)), [])
        assert theirs == ours == ([("id", "bigint"), ("A", "string")],
                                  [("1", "None"), ("2", "None")], [])
        if engine == "native":
            with pytest.raises(Exception, match="differs only in case"):
                spark.read.format("listing").option("engine", "native").schema(
                    "id long, A string").load(str(lower)).collect()
    finally:
        spark.conf.set(CASE_SENSITIVE, "false")
        listing.register(spark)
    # positive control: the same session, case-insensitive again, reads both folders
    assert spark.read.format("listing").load(str(mixed)).count() == 4
    # the option states it whatever the session says
    with pytest.raises(Exception, match="different partition columns"):
        spark.read.format("listing").option("case_sensitive", "true").load(str(mixed)).count()


ON_S3 = ["escaped_digit_is_string", "hidden_files", "nan_infinity", "timestamp_escaped_colons",
         "underscore_partition", "empty_column_name", "decimal_exponents",
         "timestamp_fraction_digits", "escaped_glob_characters", "summary_files_above_the_leaves",
         "only_default_partition", "time_of_day", "files_at_root_beside_partition_folders",
         "column_names_differing_in_case_below"]


def _key(f: str) -> str:
    return f.removesuffix(":empty").removesuffix(":data")


@pytest.mark.parametrize("name", ON_S3)
def test_partition_discovery_on_s3_as_spark_on_disk(spark, s3_server, s3_bucket, tmp_path,
                                                     name):
    """The same layouts as S3 keys (listed by the planner, not a file system walk), against
    Spark's reading of them on local disk."""
    import json

    files, filters = LAYOUTS[name]
    build(tmp_path, files)
    s3_server.put_objects_fast(s3_bucket, {
        f"t/{_key(f)}": (tmp_path / _key(f)).read_bytes() for f in files})
    fold = name in CASE_FOLDED
    theirs = outcome(lambda: spark.read.parquet(str(tmp_path)), filters, fold_names=fold)
    ours = outcome(lambda: spark.read.format("listing")
                   .option("storage_options", json.dumps(s3_server.storage_options))
                   .load(f"s3://{s3_bucket}/t"), filters, fold_names=fold)
    if theirs[0] == "error":
        assert ours[0] == "error", (theirs, ours)
    else:
        assert ours == theirs


# --- several roots: partition folders of one base path ------------------------------------

def test_several_partition_folders_of_one_base_path_as_spark(spark, tmp_path):
    build(tmp_path, [f"date=2026-01-0{d}/region={r}/p.parquet" for d in (1, 2, 3)
                     for r in ("eu", "us")])
    root = str(tmp_path)
    folders = [f"{root}/date=2026-01-01", f"{root}/date=2026-01-03/region=us"]
    theirs = outcome(lambda: spark.read.option("basePath", root).parquet(*folders),
                     ["region = 'eu'"])
    ours = outcome(lambda: spark.read.format("listing").option("basePath", root).load(folders),
                   ["region = 'eu'"])
    assert ours == theirs and len(theirs[1]) == 6


def test_several_partition_folders_on_s3_list_only_those(spark, s3_server, s3_bucket):
    import json

    data = datasets_encode()
    s3_server.put_objects_fast(s3_bucket, {
        f"t/date=2026-01-{d:02d}/p-{i:03d}.parquet": data for d in range(1, 31)
        for i in range(100)})  # 3,000 keys: three LIST pages flat
    root = f"s3://{s3_bucket}/t"
    df = (spark.read.format("listing").option("basePath", root)
          .option("storage_options", json.dumps(s3_server.storage_options))
          .load([f"{root}/date=2026-01-05", f"{root}/date=2026-01-20"]))
    with s3_server.log.capture(bucket=s3_bucket) as cap:
        rows = df.select("date").distinct().collect()
    assert sorted(str(r.date) for r in rows) == ["2026-01-05", "2026-01-20"]
    assert df.count() == 2 * 100 * 2
    same = (spark.read.format("listing")
            .option("storage_options", json.dumps(s3_server.storage_options)).load(root)
            .where("date IN ('2026-01-05', '2026-01-20')"))
    with s3_server.log.capture(bucket=s3_bucket) as where_cap:
        same.select("date").distinct().collect()
    # the cost of the equivalent where, less than listing the table (three pages)
    assert cap.count("LIST") == where_cap.count("LIST") == 2


def datasets_encode() -> bytes:
    from listing.testing.datasets import encode

    return encode(DATA, "parquet")


@pytest.mark.parametrize(("paths", "base", "message"), [
    (["t/date=2026-01-01", "t/date=2026-01-01/"], "t", "overlap"),
    (["t/date=2026-01-01", "t/date=2026-01-01/region=eu"], "t", "overlap"),
    (["t/date=2026-01-01", "other/date=2026-01-02"], "t", "not below basePath"),
    (["t/date=2026-01-01", "u/date=2026-01-02"], None, "give basePath"),
])
def test_several_roots_that_are_not_one_table_are_errors(spark, tmp_path, paths, base,
                                                         message):
    build(tmp_path / "t", ["date=2026-01-01/region=eu/p.parquet"])
    reader = spark.read.format("listing")
    if base is not None:
        reader = reader.option("basePath", str(tmp_path / base))
    with pytest.raises(Exception, match=message):
        reader.load([str(tmp_path / p) for p in paths]).collect()


# --- basePath: a folder read as its spelling on disk, files as roots ------------------------

@pytest.mark.parametrize(("files", "paths"), [
    # hour=7/ spells the value of hour=07/ otherwise: Spark reads the folder given only
    (["h=07/p.parquet", "h=7/x.parquet", "h=10/p.parquet"], ["h=07"]),
    (["h=07/p.parquet", "h=7/x.parquet", "h=10/p.parquet"], ["h=07", "h=10"]),
    (["d=1.0/p.parquet", "d=1/p.parquet", "d=2.5/p.parquet"], ["d=1.0"]),
    (["s=%41/p.parquet", "s=A/p.parquet", "s=B/p.parquet"], ["s=%41"]),
    # files, not folders, below basePath (FileIndexSuite's "different path options")
    (["pi=1/ps=foo/p.parquet", "pi=2/ps=bar/p.parquet"], ["pi=1/ps=foo/p.parquet"]),
    (["pi=1/ps=foo/p.parquet", "pi=1/ps=foo/q.parquet", "pi=2/ps=bar/p.parquet"],
     ["pi=1/ps=foo/p.parquet", "pi=2/ps=bar/p.parquet"]),
])
def test_paths_below_base_path_read_as_spark_reads_them(spark, tmp_path, files, paths):
    build(tmp_path, files)
    root = str(tmp_path)
    full = [f"{root}/{p}" for p in paths]
    theirs = outcome(lambda: spark.read.option("basePath", root).parquet(*full), [])
    ours = outcome(lambda: spark.read.format("listing").option("basePath", root)
                   .load(full if len(full) > 1 else full[0]), [])
    assert theirs[0] != "error" and ours == theirs


def test_paths_below_base_path_on_s3_list_what_the_where_lists(s3_server, s3_bucket):
    """``hour=07/`` as the path: the keys of ``hour=7/`` are listed (the value is the same)
    but never read; Python API, with what the plan says."""
    from listing import ListingTable

    data = datasets_encode()
    s3_server.put_objects_fast(s3_bucket, {f"t/h={h}/p.parquet": data for h in ("07", "7", "10")})
    table = ListingTable.open(f"s3://{s3_bucket}/t", folders=["h=07"],
                              storage_options=s3_server.storage_options)
    plan = table.scan(where="h = 7")
    assert [f.path.split("/t/")[1] for f in plan.files] == ["h=07/p.parquet"]
    assert "h=07" in plan.explain()


# --- more of Spark's discovery suites: roots, path options ---------------------------------

@pytest.mark.parametrize(("files", "read"), [
    # SPARK-11678: discovery stops at the root, whatever its name
    (["key=value/b=1/c=1/p.parquet", "key=value/b=2/c=2/p.parquet", "key=value/_SUCCESS"],
     "key=value"),
    (["key=value/table/b=1/c=1/p.parquet", "key=value/table/b=2/c=2/p.parquet"],
     "key=value/table"),
    # a leaf folder or a file read alone has no partition columns
    (["pi=1/ps=foo/p.parquet", "pi=2/ps=bar/p.parquet"], "pi=1/ps=foo"),
    (["pi=1/ps=foo/p.parquet", "pi=2/ps=bar/p.parquet"], "pi=1/ps=foo/p.parquet"),
])
def test_table_root_as_spark_reads_it(spark, tmp_path, files, read):
    build(tmp_path, files)
    path = f"{tmp_path}/{read}"
    theirs = outcome(lambda: spark.read.parquet(path), [])
    assert theirs[0] != "error"
    assert outcome(lambda: spark.read.format("listing").load(path), []) == theirs


# --- where we differ on purpose, beyond DIFFERENT's layouts --------------------------------

def test_data_column_that_is_a_partition_column_comes_last(spark, tmp_path):
    """SPARK-18108: a file holding a column named as a partition column. The partition
    folder's value and type win in both; Spark's V1 Parquet source keeps the data column's
    place, we put it after the data columns as Spark's V2 file sources do."""
    (tmp_path / "a=1").mkdir()
    pq.write_table(pa.table({"a": pa.array([5], pa.int64()), "b": [2.0]}),
                   tmp_path / "a=1" / "p.parquet")
    theirs = outcome(lambda: spark.read.parquet(str(tmp_path)), ["a = 1"])
    ours = outcome(lambda: spark.read.format("listing").load(str(tmp_path)), ["a = 1"])
    assert theirs == ([("a", "int"), ("b", "double")], [("1", "2.0")], [1])
    assert ours == ([("b", "double"), ("a", "int")], [("2.0", "1")], [1])


def test_user_schema_without_partition_columns_projects(spark, tmp_path):
    """A user schema naming data columns only: Spark appends the inferred partition columns
    anyway; ours reads what the schema names (a narrower schema is how a Python source is
    told its projection)."""
    build(tmp_path, ["a=7/p.parquet", "a=8/p.parquet"])
    theirs = spark.read.schema("id long").parquet(str(tmp_path))
    ours = spark.read.format("listing").schema("id long").load(str(tmp_path))
    assert theirs.columns == ["id", "a"] and ours.columns == ["id"]
    assert ours.count() == theirs.count() == 4


def test_the_same_folder_twice_is_refused(spark, tmp_path):
    """Spark reads a folder given twice once; we refuse the request (it names a file twice)."""
    build(tmp_path, ["h=10/p.parquet", "h=11/p.parquet"])
    root = str(tmp_path)
    assert spark.read.option("basePath", root).parquet(f"{root}/h=10", f"{root}/h=10").count() == 2
    with pytest.raises(Exception, match="overlap"):
        spark.read.format("listing").option("basePath", root).load(
            [f"{root}/h=10", f"{root}/h=10"]).collect()
