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

# name: (files below the root (an empty string: a zero-byte file), filters to count)
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
}

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
    # partition names differing only in case: Spark merges them (spark.sql.caseSensitive
    # false); we name both paths, since the planner's exact prefixes are case-sensitive
    "column_names_differing_in_case": (["a=1/p.parquet", "A=2/p.parquet"],
                                       "one column A: int", ("error", "different partition")),
    # a column whose only value is null: Spark types it void (NullType), we string
    "only_default_partition": (["a=__HIVE_DEFAULT_PARTITION__/p.parquet"], "a: void",
                               ([("id", "bigint"), ("a", "string")], 2)),
    # Spark 4 infers TIME from 10:11:12; we read a string
    "time_of_day": (["t=10%3A11%3A12/p.parquet"], "t: time(6)",
                    ([("id", "bigint"), ("t", "string")], 2)),
}


def build(root, files):
    for f in files:
        path = root / f.removesuffix(":empty")
        path.parent.mkdir(parents=True, exist_ok=True)
        if f.endswith(":empty") or not f.endswith(".parquet"):
            path.write_bytes(b"")
        else:
            pq.write_table(DATA, path)


def outcome(df_of, filters):
    """(schema, sorted rows, counts under the filters), or the error's class."""
    try:
        df = df_of()
        rows = sorted(tuple(map(repr, r)) for r in df.collect())
        counts = [df.where(f).count() for f in filters]
        return [(f.name, f.dataType.simpleString()) for f in df.schema], rows, counts
    except Exception as err:  # noqa: BLE001 - the outcome compared is "it failed"
        return "error", type(err).__name__


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_partition_discovery_as_spark(spark, tmp_path, name):
    files, filters = LAYOUTS[name]
    build(tmp_path, files)
    root = str(tmp_path)
    theirs = outcome(lambda: spark.read.parquet(root), filters)
    ours = outcome(lambda: spark.read.format("listing").load(root), filters)
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


ON_S3 = ["escaped_digit_is_string", "hidden_files", "nan_infinity", "timestamp_escaped_colons",
         "underscore_partition", "empty_column_name"]


@pytest.mark.parametrize("name", ON_S3)
def test_partition_discovery_on_s3_as_spark_on_disk(spark, s3_server, s3_bucket, tmp_path,
                                                     name):
    """The same layouts as S3 keys (listed by the planner, not a file system walk), against
    Spark's reading of them on local disk."""
    import json

    files, filters = LAYOUTS[name]
    build(tmp_path, files)
    s3_server.put_objects_fast(s3_bucket, {
        f"t/{f.removesuffix(':empty')}": (tmp_path / f.removesuffix(":empty")).read_bytes()
        for f in files})
    theirs = outcome(lambda: spark.read.parquet(str(tmp_path)), filters)
    ours = outcome(lambda: spark.read.format("listing")
                   .option("storage_options", json.dumps(s3_server.storage_options))
                   .load(f"s3://{s3_bucket}/t"), filters)
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
