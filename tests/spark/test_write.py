"""Hive-partitioned writes (listing.write, listing.spark.writer): encoding, round trips
through our reader and Spark's, and the commit protocol on local files and a real-HTTP S3
server (request counts from the server's own log)."""

from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pytest

from listing import ListingTable
from listing.errors import OptionError, TableExistsError
from listing.spark.writer import write_options
from listing.write import WriteJob, partition_path, write_table

ROWS = pa.table({
    "id": pa.array([1, 2, 3, 4, 5, 6], pa.int64()),
    "amount": pa.array([1.5, None, 3.0, 4.25, 5.0, 6.0]),
    "k": ["a/b", "x=y", "%", None, "a/b", "plain"],
    "d": [dt.date(2024, 1, 1), dt.date(2024, 1, 1), dt.date(2024, 2, 29), None,
          dt.date(2024, 1, 1), dt.date(2024, 1, 2)],
    "n": pa.array([1, 2, 1, 2, 3, 1], pa.int64()),
})
PARTS = ["k", "d", "n"]


def rows(table):
    return sorted(table.to_pylist(), key=lambda r: r["id"])


def read(url, fmt="parquet", storage_options=None):
    t = ListingTable.open(url, format=fmt, storage_options=storage_options)
    return t, t.scan().to_arrow()


def visible_local(root):
    """Files a reader can see: no hidden (``_``/``.``) segment below the root."""
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(("_", "."))]
        out += [os.path.join(d, f) for f in files if not f.startswith(("_", "."))]
    return sorted(out)


def s3_keys(server, bucket, prefix=""):
    resp = server.client().list_objects_v2(Bucket=bucket, Prefix=prefix)
    return sorted(o["Key"] for o in resp.get("Contents", []))


# --- encoding ---------------------------------------------------------------------------------

def test_partition_path_spells_values_as_spark_and_the_reader_do():
    assert partition_path([("k", "a/b"), ("d", dt.date(2024, 1, 2)), ("n", 7)]) == \
        "k=a%2Fb/d=2024-01-02/n=7/"
    assert partition_path([("k", None), ("e", "")]) == \
        "k=__HIVE_DEFAULT_PARTITION__/e=__HIVE_DEFAULT_PARTITION__/"
    assert partition_path([("k", "x=y%"), ("b", True)]) == "k=x%3Dy%25/b=true/"
    ts = dt.datetime(2024, 1, 2, 3, 4, 5, 500000, tzinfo=dt.UTC)
    assert partition_path([("t", ts)]) == "t=2024-01-02 03%3A04%3A05.5/"


@pytest.mark.parametrize("fmt, compression", [
    ("parquet", None), ("csv", None), ("json", None), ("arrow", None),
    ("parquet", "zstd"), ("csv", "gzip"), ("json", "zstd"), ("arrow", "lz4")])
def test_round_trip_every_format(tmp_path, fmt, compression):
    result = write_table(str(tmp_path), ROWS, format=fmt, partition_by=PARTS,
                         compression=compression)
    table, got = read(str(tmp_path), fmt)
    # Spark's inferred partition types: string, date, int (small integers)
    assert table.partition_cols == [("k", pa.string()), ("d", pa.date32()), ("n", pa.int32())]
    expected = ROWS.cast(pa.schema([*ROWS.schema][:4] + [pa.field("n", pa.int32())]))
    assert rows(got.select(expected.column_names)) == rows(expected)
    assert result.rows == 6 and len(result.files) == len(result.partitions) == 6
    # partition columns are not in the files; every file has the same schema
    names = {os.path.basename(f) for f in result.files}
    assert len(names) == 1 and next(iter(names)).startswith(f"part-00000-{result.job_id}-c000")
    assert os.path.exists(tmp_path / "_SUCCESS") and not (tmp_path / "_temporary").exists()
    if fmt == "parquet":
        import pyarrow.parquet as pq
        assert {str(pq.read_schema(f)) for f in result.files} == \
            {str(pa.schema([ROWS.schema.field("id"), ROWS.schema.field("amount")]))}


def test_spark_native_reader_reads_what_write_table_wrote(spark, tmp_path):
    write_table(str(tmp_path), ROWS, partition_by=PARTS)
    got = spark.read.parquet(str(tmp_path)).toArrow()
    assert got.schema.field("n").type == pa.int32() and got.schema.field("d").type == pa.date32()
    assert rows(got.select(ROWS.column_names).cast(ROWS.schema)) == rows(ROWS)


def test_max_records_per_file_and_batches_input(tmp_path):
    batches = ROWS.slice(0, 3).to_batches() + ROWS.slice(3).to_batches()
    result = write_table(str(tmp_path), iter(batches), partition_by=["n"],
                         max_records_per_file=1)
    assert result.metrics["files_written"] == 6
    assert sorted(os.path.basename(f)[-12:] for f in result.files if "/n=1/" in f) == \
        ["c000.parquet", "c001.parquet", "c002.parquet"]
    assert rows(read(str(tmp_path))[1].select(["id"])) == [{"id": i} for i in range(1, 7)]


def test_bad_arguments_are_named(tmp_path):
    with pytest.raises(OptionError, match="partition_by column 'zz'"):
        write_table(str(tmp_path), ROWS, partition_by=["zz"])
    with pytest.raises(OptionError, match="mode='sometimes'"):
        write_table(str(tmp_path), ROWS, mode="sometimes")
    with pytest.raises(OptionError, match="compression 'lzma'"):
        write_table(str(tmp_path), ROWS, format="csv", compression="lzma")
    write_table(str(tmp_path), ROWS)
    with pytest.raises(TableExistsError):
        write_table(str(tmp_path), ROWS, mode="error")
    assert write_table(str(tmp_path), ROWS, mode="ignore").files == []
    assert read(str(tmp_path))[1].num_rows == 6


# --- the commit protocol: local files -----------------------------------------------------

def test_local_staged_files_are_invisible_until_commit(tmp_path):
    root = str(tmp_path)
    old = write_table(root, ROWS.slice(0, 2), partition_by=["k"])
    job = WriteJob(root, ROWS.schema, partition_by=["k"], mode="overwrite")
    job.setup()
    task = job.write_task(ROWS.to_batches())
    assert visible_local(root) == sorted(old.files)  # staged, not visible
    assert rows(read(root)[1].select(["id"])) == [{"id": 1}, {"id": 2}]
    result = job.commit([task])
    assert visible_local(root) == sorted(result.files)
    assert rows(read(root)[1].select(["id"])) == [{"id": i} for i in range(1, 7)]
    assert not os.path.exists(os.path.join(root, "_temporary"))
    assert result.metrics["files_deleted"] == 2 and result.metrics["renames"] == 5


def test_local_failure_before_commit_keeps_old_data_and_leaves_nothing(tmp_path):
    root = str(tmp_path)
    write_table(root, ROWS, partition_by=["k"])
    before = visible_local(root)

    def failing():
        yield from ROWS.slice(0, 3).to_batches()
        raise RuntimeError("task died")
    with pytest.raises(RuntimeError, match="task died"):
        write_table(root, failing(), partition_by=["k"], mode="overwrite")
    assert visible_local(root) == before
    assert not os.path.exists(os.path.join(root, "_temporary"))
    assert read(root)[1].num_rows == 6


def test_dynamic_overwrite_replaces_only_written_partitions(tmp_path):
    root = str(tmp_path)
    write_table(root, ROWS, partition_by=["n"])
    new = pa.table({"id": pa.array([100], pa.int64()), "amount": [0.5], "k": ["z"],
                    "d": [dt.date(2025, 1, 1)], "n": pa.array([2], pa.int64())})
    result = write_table(root, new, partition_by=["n"], mode="overwrite",
                         partition_overwrite_mode="dynamic")
    assert result.metrics["files_deleted"] == 1
    ids = sorted(r["id"] for r in read(root)[1].to_pylist())
    assert ids == [1, 3, 5, 6, 100]  # n=2 (ids 2, 4) replaced, n=1 and n=3 kept
    write_table(root, new, partition_by=["n"], mode="overwrite")  # static: the whole table
    assert [r["id"] for r in read(root)[1].to_pylist()] == [100]
    assert sorted(os.listdir(root)) == ["_SUCCESS", "n=2"]  # emptied partitions removed


# --- the commit protocol: S3 --------------------------------------------------------------

@pytest.mark.parametrize("protocol", ["copy", "multipart"])
def test_s3_commit_protocol_and_request_counts(s3_server, s3_bucket, protocol):
    opts = s3_server.storage_options
    url = f"s3://{s3_bucket}/t"
    write_table(url, ROWS.slice(0, 2), partition_by=["k"], storage_options=opts)
    old_keys = [k for k in s3_keys(s3_server, s3_bucket) if "_SUCCESS" not in k]

    job = WriteJob(url, ROWS.schema, partition_by=["k"], mode="overwrite",
                   storage_options=opts, commit_protocol=protocol)
    job.setup()
    with s3_server.log.capture(s3_bucket) as staging:
        task = job.write_task(ROWS.to_batches())
    files = task.metrics["files_written"]
    if protocol == "copy":  # one PUT per staged file
        assert staging.counts() == {"PUT": 5} == {"PUT": files}
    else:  # one multipart upload per file at its final key, one part each, not completed
        assert staging.counts() == {"POST": 5, "PUT": 5} and files == 5
        assert {f.final for f in task.files} == {f"{s3_bucket}/{e.key}"
                                                  for e in staging.entries()}
    visible = [k for k in s3_keys(s3_server, s3_bucket) if "/_" not in k]
    assert visible == old_keys  # a listing between staging and commit: no job file
    assert rows(read(url, storage_options=opts)[1].select(["id"])) == [{"id": 1}, {"id": 2}]

    with s3_server.log.capture(s3_bucket) as cap:
        result = job.commit([task])
    # the commit's own requests: the overwrite's setup probed the bucket's conditional PUT
    # (PUT, PUT If-None-Match, DeleteObjects), counted in the job's metrics too
    m = {name: n - job.setup_metrics.get(name, 0) for name, n in result.metrics.items()}
    assert job.setup_metrics["put_requests"] == 2 and job.setup_metrics["delete_requests"] == 1
    # GETs: the job's manifest (none yet), the old _SUCCESS, the overwrite lock (ours?); one
    # LIST of the table (static overwrite), one of the staging prefix, one of the multipart
    # uploads (OTHER); PUTs: the lock (If-None-Match), the manifest, the manifest marked
    # published (the commit point), _SUCCESS; DeleteObjects: the old _SUCCESS, the old files,
    # the staged files (copy), the lock, the manifest (last)
    if protocol == "copy":  # a COPY per file
        assert cap.counts() == {"GET": 3, "LIST": 2, "OTHER": 1, "POST": 5, "COPY": 5,
                                "PUT": 4}
        assert (m["delete_requests"], m["copy_requests"]) == (5, 5)
    else:  # a CompleteMultipartUpload (POST) per file, no COPY: zero bytes copied
        assert cap.counts() == {"GET": 3, "LIST": 2, "OTHER": 1, "POST": 5 + 4, "PUT": 4}
        assert (m["delete_requests"], m["copy_requests"]) == (4, 0)
        completes = [e for e in cap.entries() if e.kind == "POST" and "uploadId" in e.query]
        assert len(completes) == 5
    assert m["list_requests"] == 3
    assert m["put_requests"] - task.metrics["put_requests"] == cap.count("PUT")
    assert m["files_deleted"] == 2 and m["files_committed"] == 5 and m["retries"] == 0
    keys = s3_keys(s3_server, s3_bucket)
    assert "t/_SUCCESS" in keys and not [k for k in keys if "_temporary" in k]
    assert not s3_server.client().list_multipart_uploads(Bucket=s3_bucket).get("Uploads")
    _, got = read(url, storage_options=opts)  # _SUCCESS is skipped by the reader
    assert rows(got.select(["id"])) == [{"id": i} for i in range(1, 7)]


@pytest.mark.parametrize("protocol", ["copy", "multipart"])
def test_s3_abort_and_failure_leave_nothing(s3_server, s3_bucket, protocol):
    opts = s3_server.storage_options
    url = f"s3://{s3_bucket}/t"
    job = WriteJob(url, ROWS.schema, partition_by=["k"], storage_options=opts,
                   commit_protocol=protocol)
    job.write_task(ROWS.to_batches(), task=0)
    job.write_task(ROWS.to_batches(), task=1, attempt=1)
    with s3_server.log.capture(s3_bucket) as cap:
        m = job.abort()
    # GET: no manifest, no commit; LIST: the staging prefix; OTHER: the multipart uploads
    if protocol == "copy":  # the staged files in one DeleteObjects
        assert m["staged_deleted"] == 10
        assert cap.counts() == {"GET": 1, "LIST": 1, "OTHER": 1, "POST": 1}
    else:  # one AbortMultipartUpload (DELETE) per upload, both task attempts'
        assert m["uploads_aborted"] == 10
        assert cap.counts() == {"GET": 1, "LIST": 1, "OTHER": 1, "DELETE": 10}
    assert s3_keys(s3_server, s3_bucket) == []
    assert not s3_server.client().list_multipart_uploads(Bucket=s3_bucket).get("Uploads")

    write_table(url, ROWS, partition_by=["k"], storage_options=opts)
    before = s3_keys(s3_server, s3_bucket)

    def failing():
        yield from ROWS.to_batches()
        raise RuntimeError("source failed")
    with s3_server.log.capture(s3_bucket) as cap, pytest.raises(RuntimeError):
        write_table(url, failing(), partition_by=["k"], mode="overwrite",
                    storage_options=opts)
    assert cap.count("COPY") == 0 and s3_keys(s3_server, s3_bucket) == before
    assert read(url, storage_options=opts)[1].num_rows == 6


# --- Spark --------------------------------------------------------------------------------

def spark_rows(spark):
    return spark.createDataFrame(ROWS.to_pylist(),
                                 "id long, amount double, k string, d date, n long")


def test_spark_write_round_trip_local(spark, tmp_path):
    root = str(tmp_path)
    df = spark_rows(spark)
    df.write.format("listing").option("partition_by", "k,d,n").mode("append").save(root)
    assert os.path.exists(os.path.join(root, "_SUCCESS"))
    names = {os.path.basename(f).split("-c0")[0][:10] for f in visible_local(root)}
    assert names <= {"part-00000", "part-00001"}
    expected = rows(ROWS.cast(pa.schema([*ROWS.schema][:4] + [pa.field("n", pa.int32())])))
    assert rows(read(root)[1].select(ROWS.column_names)) == expected
    native = spark.read.parquet(root).select(*ROWS.column_names).toArrow()
    assert rows(native) == expected
    through_source = (spark.read.format("listing").option("engine", "python").load(root)
                      .select(*ROWS.column_names))
    assert rows(through_source.toArrow()) == expected
    df.limit(1).write.format("listing").option("partition_by", "k,d,n").mode("overwrite") \
        .save(root)
    assert spark.read.format("listing").load(root).count() == 1


def test_spark_write_of_many_interleaved_partitions_makes_a_file_per_task(spark, tmp_path):
    """Rows of 40 partitions (more than a task keeps files open), interleaved, in 2 tasks:
    as Spark's own writer does, each partition gets one file per task holding its rows,
    not a file per batch; every row read back once."""
    df = spark.range(0, 100_000, numPartitions=2).selectExpr(  # 5 Arrow batches a task
        "id", "CAST((id * 7919) % 40 AS INT) AS k")
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    (df.write.format("listing").option("partition_by", "k").mode("overwrite").save(ours))
    df.write.partitionBy("k").mode("overwrite").parquet(theirs)

    def files_per_partition(root):
        return sorted(len([f for f in os.listdir(os.path.join(root, d))
                           if not f.startswith((".", "_"))])
                      for d in os.listdir(root) if d.startswith("k="))

    assert len(files_per_partition(ours)) == 40  # the control: more than 32 partitions
    assert files_per_partition(ours) == files_per_partition(theirs)
    assert max(files_per_partition(ours)) <= 2
    back = spark.read.format("listing").load(ours)
    assert back.count() == 100_000 and back.select("id").distinct().count() == 100_000


def test_spark_write_to_s3_csv(spark, s3_server, s3_bucket):
    url = f"s3://{s3_bucket}/t"
    (spark_rows(spark).write.format("listing").option("format", "csv")
     .option("partition_by", "d").option("storage.endpoint_url", s3_server.endpoint_url)
     .option("storage.key", "testing").option("storage.secret", "testing")
     .mode("append").save(url))
    table, got = read(url, "csv", s3_server.storage_options)
    assert table.partition_cols == [("d", pa.date32())]
    assert sorted(r["id"] for r in got.to_pylist()) == [1, 2, 3, 4, 5, 6]
    assert not [k for k in s3_keys(s3_server, s3_bucket) if "_temporary" in k]


def test_spark_partition_by_is_refused(spark, tmp_path):
    # Spark 4.3 refuses .partitionBy for a Python source itself, before our code runs
    with pytest.raises(Exception, match="partitioning"):
        spark_rows(spark).write.format("listing").partitionBy("k").mode("append") \
            .save(str(tmp_path))
    assert visible_local(str(tmp_path)) == []
    # where a client does pass the columns (DataSourceUtils' key), ours names the option
    with pytest.raises(OptionError, match=r"option\('partition_by', 'k,d'\)"):
        write_options({"path": "/x", "__partition_columns": '["k","d"]'})
    with pytest.raises(OptionError, match="use option 'partition_by'"):
        write_options({"path": "/x", "partition_cols": "k"})


# --- a custom format writes through the same contract ----------------------------------------

def test_custom_format_writes_through_its_sink(tmp_path):
    """examples/fixed_width_format.py defines a FileSink: write_table writes the format,
    partitioned, and ListingTable reads it back by name; a later value too wide for the
    widths of the file fails the job, which leaves nothing behind."""
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    if root not in sys.path:  # examples/ is not an installed package
        sys.path.insert(0, root)
    from examples.fixed_width_format import FixedWidthSink  # registers "fixed_width"

    data = ROWS.select(["id", "amount", "d", "n"]).append_column(
        "name", pa.array(["alice", None, "Zoë", "bob", "eve", "carol"]))
    result = write_table(str(tmp_path), data, format="fixed_width", partition_by=["d"])
    assert len(result.partitions) == 4 and all(f.endswith(".fwf") for f in result.files)
    with open(next(f for f in result.files if "d=2024-02-29" in f)) as f:
        assert f.read() == "id amount n name\n 3    3.0 1 Zoë\n"
    table, got = read(str(tmp_path), "fixed_width")
    assert table.partition_cols == [("d", pa.date32())]
    assert table.schema.field("amount").type == pa.float64()
    assert rows(got.select(data.column_names)) == rows(data)

    wide = str(tmp_path / "wide")
    batches = [pa.record_batch({"id": [1], "s": ["ab"]}),
               pa.record_batch({"id": [2], "s": ["abcdef"]})]
    with pytest.raises(OptionError, match="column 's' has 6 characters.*'columns'"):
        write_table(wide, batches, format="fixed_width")
    assert visible_local(wide) == [] and not os.path.exists(os.path.join(wide, "_temporary"))
    assert isinstance(WriteJob(wide, data.schema, format="fixed_width").sink, FixedWidthSink)


def test_small_batches_make_full_row_groups(tmp_path):
    """Spark hands writers small batches split over partitions; the Parquet sink buffers
    them into row groups instead of writing one per batch."""
    import pyarrow.parquet as pq

    batches = [pa.record_batch({"id": list(range(i * 80, i * 80 + 80)),
                                "part": ["a"] * 80}) for i in range(50)]
    write_table(str(tmp_path), batches, partition_by=["part"])
    (written,) = (tmp_path / "part=a").glob("*.parquet")
    meta = pq.ParquetFile(written).metadata
    assert meta.num_rows == 4000 and meta.num_row_groups == 1
    assert pq.read_table(written).column("id").to_pylist() == list(range(4000))


@pytest.mark.parametrize("fmt", ["parquet", "csv", "json", "arrow"])
def test_spark_write_round_trip_every_format(spark, tmp_path, fmt):
    """Written by Spark through the listing source, read back by ListingTable and by the
    listing source: the same rows and partition values for every built-in format."""
    root = str(tmp_path)
    (spark_rows(spark).write.format("listing").option("format", fmt)
     .option("partition_by", "k,d").mode("overwrite").save(root))
    table, got = read(root, fmt)
    assert [n for n, _ in table.partition_cols] == ["k", "d"]
    want = sorted((r["id"], r["k"], str(r["d"])) for r in ROWS.to_pylist())
    assert sorted((r["id"], r["k"], str(r["d"])) for r in got.to_pylist()) == want
    back = spark.read.format("listing").option("format", fmt).option("engine", "python").load(root)
    assert sorted((r.id, r.k, str(r.d)) for r in back.collect()) == want
