"""Spark's own Parquet writer in a listing write's tasks (StagedParquetWrites.java,
listing.spark.writer.staged_shape, WriteJob.upload_task): the same table as the Python
writer writes, row for row and folder for folder, on the data users have (every column type,
nulls, non-ASCII and escaped partition values, timestamps in a non-UTC session, layouts,
max_records_per_file, empty writes), no INT96, the same requests on S3, nothing left on
local disk, and the Python writer wherever Spark's cannot write as ours does.

Each differential test writes twice, ``spark.listing.sparkParquetWrites`` on and off; which
writer wrote a file is read from its footer (``created_by``: parquet-mr for Spark's,
parquet-cpp for pyarrow's), the positive control that the path under test was taken."""

from __future__ import annotations

import datetime as dt
import decimal
import glob
import json
import os
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from listing import ListingTable
from listing.testing.faults import FaultProxy
from listing.write import WriteJob, write_table
from listing.write.results import StagedUpload

pytestmark = pytest.mark.spark

CONF = "spark.listing.sparkParquetWrites"
NO_RETRY = {"max_retries": 0, "retry_max_backoff": 0.01}


@pytest.fixture
def conf(spark):
    """Set the conf for a test; the session's own value comes back after it."""
    def set_to(value: bool) -> None:
        spark.conf.set(CONF, "true" if value else "false")
    yield set_to
    spark.conf.unset(CONF)


def data_files(root: str) -> list[str]:
    """The table's data files, relative, the job id in their names replaced by ``J``."""
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(("_", "."))]
        out += [os.path.relpath(os.path.join(d, f), root) for f in files
                if not f.startswith(("_", "."))]
    return sorted(re.sub(r"-[0-9a-f]{32}-", "-J-", p) for p in out)


def _real_files(root: str) -> list[str]:
    return [os.path.join(d, f) for d, dirs, files in os.walk(root)
            for f in files if f.endswith(".parquet") and "/_" not in os.path.join(d, f)]


def both(spark, conf, df, tmp_path, name, **options):
    """The table ``df`` makes with Spark's Parquet writer and with ours: their roots."""
    roots = {}
    mode = options.pop("mode", "overwrite")
    for spark_writes in (True, False):
        conf(spark_writes)
        root = str(tmp_path / f"{name}-{'spark' if spark_writes else 'python'}") + "/"
        w = df.write.format("listing").mode(mode)
        for key, value in options.items():
            w = w.option(key, value)
        w.save(root)
        roots[spark_writes] = root
    return roots[True], roots[False]


def listing_rows(root: str, **options) -> list[dict]:
    rows = ListingTable.open(root, **options).scan().to_arrow().to_pylist()
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def spark_rows(spark, root, **options):
    r = spark.read.format("listing")
    for key, value in options.items():
        r = r.option(key, value)
    return sorted(tuple(x) for x in r.load(root).collect())


def assert_same_table(spark, staged, python, **read_options):
    assert data_files(staged) == data_files(python)
    assert {pq.ParquetFile(p).metadata.created_by.split(" ")[0]
            for p in _real_files(staged)} == {"parquet-mr"}
    assert {pq.ParquetFile(p).metadata.created_by.split(" ")[0]
            for p in _real_files(python)} == {"parquet-cpp-arrow"}
    # compared as JSON text: NaN equals NaN there
    assert json.dumps(listing_rows(staged, **read_options), default=str) == \
        json.dumps(listing_rows(python, **read_options), default=str)
    assert repr(spark_rows(spark, staged, **read_options)) == \
        repr(spark_rows(spark, python, **read_options))


NASTY = ["a/b", "x=y", "%", "日本語", "ümlaut space", "", None, "tab\there", "#?&"]


def test_partition_values_nulls_and_escapes_land_as_the_python_writer_puts_them(
        spark, conf, tmp_path):
    rows = [(i, NASTY[i % len(NASTY)], dt.date(2026, 3, 1 + i % 3), float(i) / 3)
            for i in range(60)]
    df = spark.createDataFrame(rows, "id long, k string, date date, amount double")
    staged, python = both(spark, conf, df, tmp_path, "nasty", partition_by="date,k")
    assert len(data_files(staged)) >= 16
    assert_same_table(spark, staged, python)
    # and the folders are Spark's own writer's (the oracle for Hive spelling)
    oracle = str(tmp_path / "oracle")
    df.write.partitionBy("date", "k").parquet(oracle)
    spark_dirs = {os.path.dirname(p) for p in data_files(oracle)}
    assert {os.path.dirname(p) for p in data_files(staged)} == spark_dirs


def test_timestamp_partitions_in_a_non_utc_session_match(spark, conf, tmp_path):
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        df = spark.sql("""
            SELECT id, timestamp_micros(1767225600000000 + (id % 3) * 3600000000 + 1) AS ts,
                   timestamp_micros(1767225600000000 + id * 1000) AS at,
                   CAST(timestamp_micros(1767225600000000 + id) AS timestamp_ntz) AS local_at
            FROM range(30)""")
        staged, python = both(spark, conf, df, tmp_path, "ts", partition_by="ts")
        assert_same_table(spark, staged, python)
        folders = sorted({p.split("/")[0] for p in data_files(staged)})
        assert folders[0].startswith("ts=2025-12-31 16%3A00%3A00"), folders  # LA time
        # no INT96: microsecond INT64 timestamps, adjusted to UTC or not as typed
        meta = pq.ParquetFile(_real_files(staged)[0]).schema
        kinds = {meta.column(i).name: (meta.column(i).physical_type,
                                       str(meta.column(i).logical_type))
                 for i in range(len(meta))}
        assert kinds["at"][0] == "INT64" and "isAdjustedToUTC=true" in kinds["at"][1]
        assert kinds["local_at"][0] == "INT64" and "isAdjustedToUTC=false" in kinds["local_at"][1]
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)


def test_every_column_type_reads_back_as_the_python_writer_wrote_it(spark, conf, tmp_path):
    df = spark.sql("""
        SELECT CAST(id AS tinyint) AS b, CAST(id AS smallint) AS s, CAST(id AS int) AS i,
               id AS l, CAST(id AS float) / 3 AS f,
               CASE WHEN id = 3 THEN double('NaN') ELSE id / 7 END AS d,
               CAST(id / 3 AS decimal(5, 2)) AS small_dec,
               CAST(id * 1234567.891 AS decimal(30, 4)) AS big_dec,
               CASE WHEN id % 4 = 0 THEN NULL ELSE concat('v', id, '→') END AS str,
               CAST(concat('b', id) AS binary) AS bin, id % 2 = 0 AS flag,
               date_add(date'1582-10-01', CAST(id AS int)) AS old_date,
               array(CAST(id AS int), NULL) AS arr, map('k', CAST(id AS int)) AS m,
               named_struct('x', id, 'y', concat('y', id)) AS st,
               CAST(id % 2 AS string) AS part
        FROM range(40)""")
    staged, python = both(spark, conf, df, tmp_path, "types", partition_by="part")
    assert_same_table(spark, staged, python)
    assert ListingTable.open(staged).schema == ListingTable.open(python).schema


def test_a_layout_template_and_max_records_per_file_match(spark, conf, tmp_path):
    rows = [(f"{h}-{i}", i, dt.date(2026, 11, 27), h) for h in (9, 13) for i in range(11)]
    df = spark.createDataFrame(rows, "id string, n long, date date, hour int").repartition(1)
    layout = "{date:yyyy/MM/dd}/{hour:HH}"
    staged, python = both(spark, conf, df, tmp_path, "layout", layout=layout,
                          max_records_per_file="4")
    assert data_files(staged)[0].startswith("2026/11/27/09/part-00000-J-c000")
    assert len(data_files(staged)) == 6  # 11 rows an hour, 4 a file: 3 files each
    assert_same_table(spark, staged, python, layout=layout)


def test_empty_writes_keep_the_schema_or_write_nothing(spark, conf, tmp_path):
    empty = spark.sql("SELECT id, CAST(id AS string) AS k FROM range(0)")
    staged, python = both(spark, conf, empty, tmp_path, "empty")
    assert data_files(staged) == data_files(python) == ["part-00000-J-c000.parquet"]
    assert pq.ParquetFile(_real_files(staged)[0]).metadata.created_by.startswith("parquet-mr")
    assert ListingTable.open(staged).schema.names == ["id", "k"]
    assert spark.read.format("listing").load(staged).count() == 0
    staged, python = both(spark, conf, empty, tmp_path, "empty-parts", partition_by="k")
    assert data_files(staged) == data_files(python) == []
    assert os.path.exists(os.path.join(staged, "_SUCCESS"))


def test_appends_and_overwrites_through_spark_writes_keep_the_table_right(
        spark, conf, tmp_path):
    """Spark's writer appends to a table our writer made, and back; a dynamic overwrite
    replaces only the partitions it writes; insertInto-style writes (the table's own
    partition columns, no option) fall back to the Python writer and stay right."""
    root = str(tmp_path / "mixed") + "/"
    first = spark.createDataFrame([(1, "a"), (2, "b")], "id long, k string")
    conf(False)
    first.write.format("listing").option("partition_by", "k").mode("append").save(root)
    conf(True)
    second = spark.createDataFrame([(3, "b"), (4, "c")], "id long, k string")
    second.write.format("listing").option("partition_by", "k").mode("append").save(root)
    assert sorted(r["id"] for r in listing_rows(root)) == [1, 2, 3, 4]
    (spark.createDataFrame([(5, "b")], "id long, k string").write.format("listing")
     .option("partition_by", "k").option("partition_overwrite_mode", "dynamic")
     .mode("overwrite").save(root))
    assert sorted((r["k"], r["id"]) for r in listing_rows(root)) == [
        ("a", 1), ("b", 5), ("c", 4)]
    # no partition_by: the job takes the table's (one LIST in its writer) and the planned
    # order (none) differs, so the Python writer writes it
    spark.createDataFrame([(6, "d")], "id long, k string").write.format("listing") \
        .mode("append").save(root)
    new = [p for p in _real_files(root) if "k=d" in p]
    assert [pq.ParquetFile(p).metadata.created_by.split(" ")[0] for p in new] == [
        "parquet-cpp-arrow"]
    assert sorted(r["id"] for r in listing_rows(root)) == [1, 4, 5, 6]


@pytest.mark.parametrize("options", [
    {"compression": "brotli"},
    {"format": "parquet", "merge_schema": "true"},
])
def test_what_spark_cannot_write_as_ours_goes_to_the_python_writer(
        spark, conf, tmp_path, options):
    conf(True)
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id long, k string")
    root = str(tmp_path / "python") + "/"
    w = df.write.format("listing").option("partition_by", "k").mode("overwrite")
    for key, value in options.items():
        w = w.option(key, value)
    try:
        w.save(root)
    except Exception as err:  # noqa: BLE001 - a read-only option is refused by its name
        assert "merge_schema" in str(err)
        return
    assert {pq.ParquetFile(p).metadata.created_by.split(" ")[0]
            for p in _real_files(root)} == {"parquet-cpp-arrow"}
    assert sorted(r["id"] for r in listing_rows(root)) == [1, 2]


def spark_local_dirs(spark) -> list[str]:
    """The executor's block manager folders, where Spark's writer puts a task's files (as
    Spark tells its Python workers)."""
    found = spark.sparkContext.parallelize([0], 1) \
        .map(lambda _: os.environ.get("SPARK_LOCAL_DIRS", "")).collect()[0]
    assert found, "Spark names no local folder"
    return found.split(",")


def spark_local_files(spark) -> list[str]:
    return [p for d in spark_local_dirs(spark)
            for p in glob.glob(os.path.join(d, "**", "temp_local_*.parquet"), recursive=True)]


def test_a_refused_partition_value_fails_the_write_and_leaves_nothing(spark, conf, tmp_path):
    conf(True)
    root = str(tmp_path / "nul") + "/"
    spark.createDataFrame([(1, "old")], "id long, k string").write.format("listing") \
        .option("partition_by", "k").mode("append").save(root)
    # one task: its failure is the job's (with two, Spark may abort the job while the other
    # task still stages its file, which `listing cleanup` removes: hidden, not the table's)
    bad = spark.createDataFrame([(2, "fine"), (3, "bad\0value")], "id long, k string") \
        .coalesce(1)
    with pytest.raises(Exception, match="NUL byte"):
        bad.write.format("listing").option("partition_by", "k").mode("overwrite").save(root)
    assert [r["id"] for r in listing_rows(root)] == [1]  # the old table, as it was
    assert not [p for p in glob.glob(root + "**", recursive=True) if "_temporary" in p]
    assert spark_local_files(spark) == []
    # positive control: the check sees a file where Spark's writer puts its files
    probe = os.path.join(spark_local_dirs(spark)[0], "temp_local_probe.parquet")
    open(probe, "wb").close()
    try:
        assert spark_local_files(spark) == [probe]
    finally:
        os.remove(probe)


def test_on_s3_a_spark_written_table_costs_the_python_writers_requests(
        spark, conf, s3_server, s3_bucket):
    df = spark.sql("SELECT id, CAST(id % 3 AS string) AS k FROM range(3000)").repartition(2)
    counts = {}
    for spark_writes in (True, False):
        conf(spark_writes)
        url = f"s3://{s3_bucket}/t-{spark_writes}"
        w = df.write.format("listing").option("partition_by", "k").mode("append")
        for name, value in s3_server.storage_options.items():
            w = w.option(f"storage.{name}", json.dumps(value) if isinstance(value, dict)
                         else str(value))
        with s3_server.log.capture(s3_bucket) as cap:
            w.save(url)
        counts[spark_writes] = sorted(e.kind for e in cap.entries())
        table = ListingTable.open(url, storage_options=s3_server.storage_options)
        assert sorted(table.scan().to_arrow().column("id").to_pylist()) == list(range(3000))
    assert counts[True] == counts[False]
    assert spark_local_files(spark) == []


# --- the upload task on its own: a fault at every request (no Spark) ----------------------

OLD = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "k": ["a", "b", "c"]})
NEW = pa.table({"id": pa.array([11, 12], pa.int64()), "k": ["b", "z"]})


def local_files(tmp_path, name):
    """NEW's rows as the local files another engine's task wrote: one per partition."""
    out = []
    for i, k in enumerate(["b", "z"]):
        path = str(tmp_path / f"{name}-{i}.parquet")
        pq.write_table(NEW.filter(pa.compute.equal(NEW["k"], k)).select(["id"]), path)
        out.append(StagedUpload(path, 1, (("k", k),)))
    return out


def test_a_fault_at_every_request_of_an_upload_task_leaves_the_old_table(
        s3_server, s3_bucket, tmp_path):
    direct = s3_server.storage_options
    with FaultProxy(s3_server.endpoint_url) as proxy:
        opts = {**proxy.storage_options, **NO_RETRY}
        url = f"s3://{s3_bucket}/probe"
        write_table(url, OLD, partition_by=["k"], storage_options=direct)
        job = WriteJob(url, NEW.schema, partition_by=["k"], mode="overwrite",
                       storage_options=opts)
        job.setup()
        before = proxy.stats.requests
        uploads = local_files(tmp_path, "probe")
        task = job.upload_task(uploads, 0, 0)
        n = proxy.stats.requests - before
        assert n >= 4 and not [u for u in uploads if os.path.exists(u.local)]
        job.commit([task])  # positive control: without a fault, the new rows
        assert sorted(ListingTable.open(url, storage_options=direct).scan().to_arrow()
                      .column("id").to_pylist()) == [11, 12]
        for index in range(n):
            url = f"s3://{s3_bucket}/t{index}"
            write_table(url, OLD, partition_by=["k"], storage_options=direct)
            job = WriteJob(url, NEW.schema, partition_by=["k"], mode="overwrite",
                           storage_options=opts)
            job.setup()
            uploads = local_files(tmp_path, f"t{index}")
            rule = proxy.add_rule(None, "503", skip=index, times=1)
            with pytest.raises(Exception):  # noqa: B017 - any error of the failed request
                job.upload_task(uploads, 0, 0)
            proxy.clear_rules()
            assert rule.fired, index
            job.abort()  # what Spark does after a failed task
            assert not [u for u in uploads if os.path.exists(u.local)], index
            got = ListingTable.open(url, storage_options=direct).scan().to_arrow()
            assert sorted(got.column("id").to_pylist()) == [1, 2, 3], index
            assert not s3_server.client().list_multipart_uploads(
                Bucket=s3_bucket, Prefix=f"t{index}/").get("Uploads"), index


def test_an_upload_refuses_a_nul_value_before_any_request(s3_server, s3_bucket, tmp_path):
    url = f"s3://{s3_bucket}/nul"
    job = WriteJob(url, NEW.schema, partition_by=["k"], storage_options=s3_server.storage_options)
    job.setup()
    uploads = local_files(tmp_path, "nul")
    bad = [uploads[0], StagedUpload(uploads[1].local, 1, (("k", "z\0"),))]
    with s3_server.log.capture(s3_bucket) as cap, pytest.raises(Exception, match="NUL byte"):
        job.upload_task(bad, 0, 0)
    assert cap.count("PUT") == 0 and cap.count("POST") == 0
    assert not [u for u in uploads if os.path.exists(u.local)]


def test_decimal_and_date_edge_values_survive(spark, conf, tmp_path):
    rows = [(1, decimal.Decimal("-99999999999999999999999999.9999"), dt.date(1, 1, 1)),
            (2, decimal.Decimal("0.0001"), dt.date(9999, 12, 31)), (3, None, None)]
    df = spark.createDataFrame(rows, "id long, v decimal(30, 4), d date")
    staged, python = both(spark, conf, df, tmp_path, "edges")
    assert_same_table(spark, staged, python)


def test_a_staged_row_naming_a_file_outside_sparks_folders_is_refused(tmp_path, monkeypatch):
    from listing.errors import OptionError
    from listing.spark.writer import STAGED_FILE, STAGED_ROWS, staged_files

    job = WriteJob(str(tmp_path / "t"), NEW.schema, partition_by=["k"])
    spark_dir, elsewhere = tmp_path / "blockmgr", tmp_path / "home"
    spark_dir.mkdir()
    elsewhere.mkdir()
    for d in (spark_dir, elsewhere):
        (d / "temp_local_1.parquet").write_bytes(b"x")
    (spark_dir / "secret").write_bytes(b"x")

    def batch(path):
        return pa.record_batch({"k": ["b"], STAGED_FILE: [str(path)], STAGED_ROWS: [1]})

    monkeypatch.setenv("SPARK_LOCAL_DIRS", str(spark_dir))
    for bad in (elsewhere / "temp_local_1.parquet", spark_dir / "secret",
                spark_dir / ".." / "home" / "temp_local_1.parquet",
                spark_dir / "temp_local_missing.parquet"):
        with pytest.raises(OptionError, match="not a file Spark's Parquet writer made"):
            staged_files(iter([batch(bad)]), job)
    ok = staged_files(iter([batch(spark_dir / "temp_local_1.parquet")]), job)  # control
    assert ok == [StagedUpload(str(spark_dir / "temp_local_1.parquet"), 1, (("k", "b"),))]
    monkeypatch.delenv("SPARK_LOCAL_DIRS")
    with pytest.raises(OptionError):
        staged_files(iter([batch(spark_dir / "temp_local_1.parquet")]), job)
