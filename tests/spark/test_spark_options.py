"""Spark's option names and forms for the listing source: camelCase names, basePath,
several roots, and an unknown option's error listing what is valid."""

from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pytest

from listing.testing import datasets


@pytest.fixture(scope="module")
def bucket(s3_server):
    name = s3_server.create_bucket(f"sparkopts-{uuid.uuid4().hex[:8]}")
    yield name
    s3_server.drop_bucket(name)


@pytest.fixture(scope="module")
def events(s3_server, bucket):
    return datasets.daily(f"s3://{bucket}/events", s3_server.storage_options, days=4,
                          put=datasets.fast_writer(s3_server))


def reader(spark, server):
    return spark.read.format("listing").option("storage_options",
                                               json.dumps(server.storage_options))


def test_csv_options_by_sparks_names(spark, s3_server, bucket):
    s3_server.put_objects_fast(bucket, {"semi/k=1/a.csv": b"id;name\n1;x\n2;NA\n"})
    rows = (reader(spark, s3_server).option("format", "csv").option("sep", ";")
            .option("nullValue", "NA").option("HEADER", "true")
            .load(f"s3://{bucket}/semi").orderBy("id").collect())
    assert [(r.id, r.name, r.k) for r in rows] == [(1, "x", 1), (2, None, 1)]


def test_merge_schema_by_sparks_name(spark, s3_server, bucket):
    old = datasets.encode(pa.table({"id": pa.array([1], pa.int64())}), "parquet")
    new = datasets.encode(pa.table({"id": pa.array([2], pa.int64()), "extra": ["x"]}),
                          "parquet")
    s3_server.put_objects_fast(bucket, {"ms/d=1/a.parquet": old, "ms/d=2/b.parquet": new})
    df = reader(spark, s3_server).option("mergeSchema", "true").load(f"s3://{bucket}/ms")
    assert df.columns == ["id", "extra", "d"]
    assert sorted((r.id, r.extra) for r in df.collect()) == [(1, None), (2, "x")]


def test_unknown_option_lists_the_valid_names(spark, s3_server, events):
    with pytest.raises(Exception) as err:
        reader(spark, s3_server).option("bogusOption", "1").load(events.root).count()
    text = str(err.value)
    assert "bogusoption" in text and "merge_schema" in text and "path_glob_filter" in text
    assert "pathglobfilter" in text and "basePath" in text


def test_base_path_keeps_the_partition_columns_of_a_folder(spark, s3_server, events):
    folder = f"{events.root}/date=2025-01-02"
    with s3_server.log.capture() as cap:
        df = (reader(spark, s3_server).option("basePath", events.root)
              .option("engine", "python").load(folder))
        rows = df.collect()
    want = [f for f in events.files if str(f.partition_values["date"]) == "2025-01-02"]
    assert len(rows) == sum(f.table.num_rows for f in want) > 0
    assert {str(r.date) for r in rows} == {"2025-01-02"} and "region" in df.columns
    assert cap.count("LIST") <= 2  # open samples one page; the scan lists that folder only
    with pytest.raises(Exception, match="not below basePath"):
        reader(spark, s3_server).option("basePath", events.root + "-other").load(folder)


def test_several_roots_and_recursive_lookup_are_clear_errors(spark, s3_server, events):
    with pytest.raises(Exception, match="several paths"):
        reader(spark, s3_server).load([events.root, events.root + "/date=2025-01-01"])
    with pytest.raises(Exception, match="recursiveFileLookup is not supported"):
        reader(spark, s3_server).option("recursiveFileLookup", "true").load(events.root)


def test_file_metadata_column_as_spark_names_it(spark, s3_server, events):
    df = (reader(spark, s3_server).option("include_file_metadata", "true").load(events.root))
    assert df.schema["_metadata"].dataType.fieldNames() == [
        "file_path", "file_name", "file_size", "file_block_start", "file_block_length",
        "file_modification_time"]
    rows = df.where("date = '2025-01-03'").select(
        "id", "_metadata.file_path", "_metadata.file_name", "_metadata.file_size").collect()
    by_path = {f.path: f for f in events.files}
    assert rows and all(r.file_path in by_path for r in rows)
    for r in rows:
        f = by_path[r.file_path]
        assert str(f.partition_values["date"]) == "2025-01-03"
        assert r.file_name == r.file_path.rsplit("/", 1)[-1]
        assert r.id in f.table.column("id").to_pylist()
        assert r.file_size > 0
    counts = {r.file_path: r["count"] for r in df.groupBy("_metadata.file_path").count().collect()}
    assert counts == {f.path: f.table.num_rows for f in events.files}
    plain = reader(spark, s3_server).load(events.root)
    assert "_metadata" not in plain.columns  # opt-in


def test_skipped_files_are_summed_on_the_driver(spark, s3_server, bucket):
    good = datasets.encode(pa.table({"id": [1, 2]}), "parquet")
    s3_server.put_objects_fast(bucket, {"skips/k=1/a.parquet": good,
                                        "skips/k=2/b.parquet": b"PAR1 garbage",
                                        "skips/k=3/c.parquet": good})
    import listing

    listing.skipped_files(spark, reset=True)
    df = (reader(spark, s3_server).option("ignoreCorruptFiles", "true")
          .schema("id long, k int").load(f"s3://{bucket}/skips"))
    assert sorted(r.id for r in df.collect()) == [1, 1, 2, 2]
    report = listing.skipped_files(spark, reset=True)
    assert report["files_skipped_corrupt"] == 1
    assert report["paths"] == [f"s3://{bucket}/skips/k=2/b.parquet"]
    assert listing.skipped_files(spark) == {}


def test_errors_from_python_workers_lead_with_our_message(spark, s3_server, events):
    """listing.session() hides worker tracebacks: the first line names what is at fault."""
    with pytest.raises(Exception) as err:
        reader(spark, s3_server).option("bogusOption", "1").load(events.root).count()
    first = str(err.value).splitlines()[0]
    assert "OptionError: unknown option(s) bogusoption" in first
    assert "Traceback" not in str(err.value)


def test_merge_schema_merges_only_the_files_the_table_reads(spark, tmp_path):
    """``mergeSchema`` with ``pathGlobFilter``: the union of the files that pass the filter
    (Spark's reader merges its file index's files, filtered), as Spark's own reader has it."""
    for part, name, table in (
            ("d=1", "a.parquet", pa.table({"id": pa.array([1], pa.int64())})),
            ("d=2", "b.parquet", pa.table({"id": pa.array([2], pa.int64()), "extra": ["x"]})),
            ("d=3", "a2.parquet", pa.table({"id": pa.array([3], pa.int64()), "more": [1.5]}))):
        (tmp_path / part).mkdir()
        (tmp_path / part / name).write_bytes(datasets.encode(table, "parquet"))
    root = str(tmp_path)

    def read(fmt):
        return (spark.read.format(fmt).option("mergeSchema", "true")
                .option("pathGlobFilter", "a*").load(root))

    ours, sparks = read("listing"), read("parquet")
    assert ours.schema == sparks.schema
    assert ours.columns == ["id", "more", "d"]  # the positive control: 'more' is merged
    assert sorted(ours.collect()) == sorted(sparks.collect())


def _two_schemas(tmp_path, first, second):
    """``d=1/<first>`` holds only ``id``; ``d=2/<second>`` holds ``id`` and ``extra``: a
    schema taken from the first key of the listing lacks ``extra``."""
    for part, name, table in (
            ("d=1", first, pa.table({"id": pa.array([1], pa.int64())})),
            ("d=2", second, pa.table({"id": pa.array([2], pa.int64()), "extra": ["x"]}))):
        (tmp_path / part).mkdir()
        (tmp_path / part / name).write_bytes(datasets.encode(table, "parquet"))
    return str(tmp_path)


@pytest.mark.parametrize("option, value", [("pathGlobFilter", "b*"),
                                           ("modifiedAfter", "2020-06-01T00:00:00")])
def test_schema_comes_from_the_files_the_table_reads(spark, tmp_path, option, value):
    """Without ``mergeSchema`` the schema is one file's, and that file is one the reader
    keeps (Spark infers from its filtered file index): a first key that ``pathGlobFilter``
    or ``modifiedAfter`` leaves out is not the sample, or ``extra`` would be silently
    missing from every row."""
    import os
    root = _two_schemas(tmp_path, "a.parquet", "b.parquet")
    old = 1577836800  # 2020-01-01: before the modifiedAfter cut, so only d=2/b is kept
    os.utime(os.path.join(root, "d=1", "a.parquet"), (old, old))

    def read(fmt):
        return spark.read.format(fmt).option(option, value).load(root)

    ours, sparks = read("listing"), read("parquet")
    assert ours.schema == sparks.schema
    assert ours.columns == ["id", "extra", "d"]  # the positive control: b's column is there
    assert sorted(ours.collect()) == sorted(sparks.collect()) == [(2, "x", 2)]


def test_schema_of_a_url_glob_comes_from_the_files_it_matches(spark, tmp_path):
    """A glob in the path: the schema is that of a file the glob matches (Spark's reader
    with ``basePath`` infers from the matched files only)."""
    root = _two_schemas(tmp_path, "a.parquet", "a.parquet")

    def read(fmt):
        return spark.read.format(fmt).option("basePath", root).load(root + "/d=2*")

    ours, sparks = read("listing"), read("parquet")
    assert ours.schema == sparks.schema
    assert ours.columns == ["id", "extra", "d"]
    assert sorted(ours.collect()) == sorted(sparks.collect()) == [(2, "x", 2)]


def test_csv_infer_schema_by_sparks_name(spark, tmp_path):
    """``inferSchema=false`` reads every CSV column as a string, as Spark's CSV reader does
    by default: two files whose ``x`` is a number in one and text in the other read as
    Spark reads them. Inferred from the first file (our default), ``x`` is a number and the
    second file cannot be read (the control); ``mergeSchema`` samples both (a string)."""
    for part, text in (("d=1", "id,x\n1,10\n2,20\n"), ("d=2", "id,x\n3,abc\n4,2.5\n")):
        (tmp_path / part).mkdir()
        (tmp_path / part / "f.csv").write_text(text)
    root = str(tmp_path)

    def ours(option, value):
        return (spark.read.format("listing").option("format", "csv").option("header", "true")
                .option(option, value).load(root))

    sparks = spark.read.option("header", "true").csv(root)
    plain = ours("inferSchema", "false")
    assert plain.schema == sparks.schema
    assert sorted(plain.collect()) == sorted(sparks.collect())
    assert sparks.schema["x"].dataType.simpleString() == "string"
    inferred = ours("inferSchema", "true")
    assert inferred.schema["x"].dataType.simpleString() == "bigint"
    with pytest.raises(Exception, match="abc"):
        inferred.collect()
    merged = ours("mergeSchema", "true").orderBy("id").collect()
    assert [r.x for r in merged] == ["10", "20", "abc", "2.5"]
