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
        df = reader(spark, s3_server).option("basePath", events.root).load(folder)
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
