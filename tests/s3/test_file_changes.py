"""A scan reads what it planned: a file rewritten between listing and reading is a
FileChangedError naming it (S3: every GET is conditional on the listed ETag; local files:
size and mtime), never read silently, never called corrupt or missing, never skipped by an
``ignore_*`` option; ``on_file_change=read`` reads the current content and counts it."""

from __future__ import annotations

import io
import json
import os
import time

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

from listing import ListingTable
from listing.errors import FileChangedError, MissingFileError

FORMATS = ["parquet", "csv", "ndjson", "arrow"]
READ_FORMAT = {"parquet": "parquet", "csv": "csv", "ndjson": "json", "arrow": "arrow"}


def encode(ids: list[int], fmt: str) -> bytes:
    """Fixed-width content: the same number of ids (of the same digit count) encodes to
    the same number of bytes in every format."""
    t = pa.table({"id": pa.array(ids, pa.int64())})
    sink = io.BytesIO()
    if fmt == "parquet":
        pq.write_table(t, sink, compression="none", use_dictionary=False, write_statistics=False)
    elif fmt == "csv":
        pacsv.write_csv(t, sink)
    elif fmt == "ndjson":
        sink.write("".join(json.dumps({"id": i}) + "\n" for i in ids).encode())
    else:
        with ipc.new_file(sink, t.schema) as writer:
            writer.write_table(t)
    return sink.getvalue()


OLD, SAME_SIZE, LARGER = [11, 12, 13], [71, 72, 73], list(range(10, 99))


class S3Table:
    def __init__(self, server, bucket, fmt):
        self.server, self.bucket, self.fmt = server, bucket, fmt
        self.root = f"s3://{bucket}/t"
        self.key = f"t/date=2025-01-01/part-0.{fmt}"
        self.path = f"{self.root}/date=2025-01-01/part-0.{fmt}"
        self.put(OLD)
        server.put_objects_fast(bucket, {f"t/date=2025-01-02/part-0.{fmt}": encode([1, 2], fmt)})

    def put(self, ids):
        self.server.put_objects_fast(self.bucket, {self.key: encode(ids, self.fmt)})

    def open(self, **options):
        storage = {**self.server.storage_options, **options.pop("storage", {})}
        return ListingTable.open(self.root, format=READ_FORMAT[self.fmt],
                                 storage_options=storage, **options)


def ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


@pytest.mark.parametrize("fmt", FORMATS)
def test_same_size_rewrite_on_s3_is_a_change(s3_server, s3_bucket, fmt):
    t = S3Table(s3_server, s3_bucket, fmt)
    assert len(encode(OLD, fmt)) == len(encode(SAME_SIZE, fmt))
    plan = t.open().scan()
    t.put(SAME_SIZE)
    with pytest.raises(FileChangedError, match=f"{t.path}: changed since listing"):
        plan.to_arrow()


@pytest.mark.parametrize("fmt", FORMATS)
def test_larger_rewrite_on_s3_is_a_change_not_corruption(s3_server, s3_bucket, fmt):
    t = S3Table(s3_server, s3_bucket, fmt)
    # neither ignore option skips it: the file is neither corrupt nor missing
    plan = t.open(ignore_corrupt_files=True, ignore_missing_files=True).scan()
    t.put(LARGER)
    with pytest.raises(FileChangedError, match=f"{t.path}: changed since listing"):
        plan.collect()  # raised, so not counted as skipped: no result to count it in


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("new", [SAME_SIZE, LARGER], ids=["same-size", "larger"])
def test_on_file_change_read_reads_the_current_content(s3_server, s3_bucket, fmt, new):
    t = S3Table(s3_server, s3_bucket, fmt)
    plan = t.open(storage={"on_file_change": "read"}).scan()
    t.put(new)
    got = plan.collect()
    assert ids(got.table) == sorted([1, 2, *new])
    assert got.metrics["files_changed"] == 1


def test_on_file_change_read_still_reports_a_vanished_file(s3_server, s3_bucket):
    t = S3Table(s3_server, s3_bucket, "parquet")
    plan = t.open(storage={"on_file_change": "read"}, ignore_missing_files=True).scan()
    t.put(LARGER)
    s3_server.client().delete_object(Bucket=s3_bucket, Key=t.key)
    got = plan.collect()
    assert ids(got.table) == [1, 2]
    assert got.metrics["files_skipped_missing"] == 1


def test_a_changed_file_read_in_byte_ranges_is_always_an_error(s3_server, s3_bucket):
    """Ranges were planned on the listed size: the current content cannot be split by them."""
    t = S3Table(s3_server, s3_bucket, "csv")
    t.put(list(range(1000, 3000)))
    plan = t.open(storage={"on_file_change": "read"}, max_partition_bytes=4096,
                  open_cost_in_bytes=0).scan()
    assert any(f.byte_range for g in plan.file_groups for f in g.files)
    t.put(list(range(5000, 7000)))  # same size
    with pytest.raises(FileChangedError, match=t.path):
        plan.to_arrow()


# --- local files: size and mtime --------------------------------------------------------

class LocalTable:
    def __init__(self, root, fmt):
        self.fmt = fmt
        self.root = root
        self.file = root / "date=2025-01-01" / f"part-0.{fmt}"
        self.file.parent.mkdir(parents=True)
        self.file.write_bytes(encode(OLD, fmt))
        other = root / "date=2025-01-02" / f"part-0.{fmt}"
        other.parent.mkdir(parents=True)
        other.write_bytes(encode([1, 2], fmt))

    def put(self, new):
        before = os.stat(self.file).st_mtime
        self.file.write_bytes(encode(new, self.fmt))
        os.utime(self.file, (time.time(), before + 5))  # a later mtime, whatever the clock

    def open(self, **storage):
        return ListingTable.open(str(self.root), format=READ_FORMAT[self.fmt],
                                 storage_options=storage)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("new", [SAME_SIZE, LARGER], ids=["same-size", "larger"])
def test_local_rewrite_is_a_change(tmp_path, fmt, new):
    t = LocalTable(tmp_path, fmt)
    plan = t.open().scan()
    t.put(new)
    with pytest.raises(FileChangedError, match=f"{t.file}: changed since listing"):
        plan.to_arrow()
    read_plan = t.open(on_file_change="read").scan()
    t.put(OLD)
    got = read_plan.collect()
    assert ids(got.table) == [1, 2, *OLD]
    assert got.metrics["files_changed"] == 1


def test_local_vanished_file_is_missing(tmp_path):
    t = LocalTable(tmp_path, "csv")
    plan = t.open().scan()
    t.file.unlink()
    with pytest.raises(MissingFileError, match=str(t.file)):
        plan.to_arrow()


@pytest.mark.parametrize("fmt", FORMATS)
def test_local_rewrite_with_size_and_mtime_put_back_is_a_change(tmp_path, fmt):
    """A rewrite that keeps the size and puts the mtime back (``os.utime``) still changes
    the inode change time, which no one can set: a FileChangedError, never the new rows
    read silently; ``on_file_change=read`` reads and counts it."""
    t = LocalTable(tmp_path, fmt)
    plan = t.open().scan()
    before = os.stat(t.file)
    t.file.write_bytes(encode(SAME_SIZE, fmt))
    os.utime(t.file, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(t.file)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert after.st_ctime_ns != before.st_ctime_ns
    with pytest.raises(FileChangedError, match="inode changed"):
        plan.to_arrow()
    got = t.open(on_file_change="read").scan()
    t.file.write_bytes(encode(OLD, fmt))
    os.utime(t.file, ns=(before.st_atime_ns, before.st_mtime_ns))
    result = got.collect()
    assert ids(result.table) == [1, 2, *OLD]
    assert result.metrics["files_changed"] == 1
