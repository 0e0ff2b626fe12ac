"""Parquet: projected columns, row groups pruned by min/max statistics, exact row counts."""

from __future__ import annotations

import datetime as dt
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from listing.errors import FileReadError
from listing.expressions import UNKNOWN, Domain, Expr, Known, ValueRange, may_be_true
from listing.files import PartitionedFile
from listing.formats.base import (
    FileFormat,
    FileOpener,
    FileSink,
    FileSource,
    FileWriter,
    Inferred,
)
from listing.formats.conform import unify_schemas
from listing.pushdown import Pushdown
from listing.storage.errors import raise_as, read_failure
from listing.storage.reading import open_input
from listing.storage.spec import StorageSpec, version_key


def open_parquet(fs: Any, file: PartitionedFile, *, data: bool = True) -> pq.ParquetFile:
    """ParquetFile over an fsspec file, opened without a metadata request. ``data``: column
    chunks will be read too, so a small file is fetched whole in one request; without it
    only the footer is fetched (a schema, row counts)."""
    try:
        handle = open_input(fs, file, whole_if_small=data)
        # INT96 in microseconds, Spark's unit: nanoseconds overflow before 1677 and after 2262
        return pq.ParquetFile(handle, pre_buffer=True, coerce_int96_timestamp_unit="us")
    except Exception as err:  # noqa: BLE001 - classified, never swallowed
        raise_as(read_failure(file.path, err, "not a readable Parquet file"), err)


#: serialized footer bytes this process keeps at most (:data:`FOOTERS`); oldest go first
MAX_FOOTER_BYTES = 64 << 20


class FooterCache:
    """Parquet footers read in this process, by file version, so that a session's
    ``count()`` of one table reads each footer once.

    An entry is keyed by the store (protocol and options), the file's path and what
    identifies its version as the listing gave it: its ETag, else its size and
    modification time. A rewritten file has another version and is read again; a file
    listed with neither ETag nor time is never kept. A hit is the footer of the version
    the plan names, the one a read of it returns (reads are pinned to the listed
    version). Bounded by :data:`MAX_FOOTER_BYTES` of serialized footers; ``hits``
    counts answers."""

    def __init__(self, max_bytes: int = MAX_FOOTER_BYTES) -> None:
        self.max_bytes = max_bytes
        self.hits = 0
        self._bytes = 0
        self._entries: OrderedDict[tuple[str, ...], pq.FileMetaData] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(storage: StorageSpec, file: PartitionedFile) -> tuple[str, ...] | None:
        return version_key(storage, file.fs_path, file.size, file.etag, file.last_modified)

    def footer(self, storage: StorageSpec, file: PartitionedFile,
               read: Callable[[], pq.FileMetaData]) -> pq.FileMetaData:
        """``file``'s footer: kept, or ``read()``'s (then kept)."""
        key = self.key(storage, file)
        if key is not None:
            with self._lock:
                found = self._entries.get(key)
                if found is not None:
                    self._entries.move_to_end(key)
                    self.hits += 1
                    return found
        md = read()
        size = md.serialized_size
        if key is not None and size <= self.max_bytes:
            with self._lock:
                old = self._entries.pop(key, None)
                self._bytes += size - (old.serialized_size if old is not None else 0)
                self._entries[key] = md
                while self._bytes > self.max_bytes:
                    _, dropped = self._entries.popitem(last=False)
                    self._bytes -= dropped.serialized_size
        return md

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0


#: the process's footer cache: a read of no column (``count()``) takes its footers here
FOOTERS = FooterCache()


class ParquetFormat(FileFormat):
    name = "parquet"
    extensions = (".parquet", ".parq")
    option_defaults = {"merge_schema": False}
    rows_from_metadata = True

    def is_splittable(self, file: PartitionedFile) -> bool:
        return True

    def infer_schema(self, files: list[PartitionedFile], storage: StorageSpec) -> pa.Schema:
        return self.infer(files, storage).schema

    def infer(self, files: list[PartitionedFile], storage: StorageSpec) -> Inferred:
        """Schema from the footer(s); with one file, its columns' compressed bytes too."""
        fs = storage.filesystem()

        def footer(f: PartitionedFile) -> tuple[str, pa.Schema]:
            return f.path, arrow_schema(open_parquet(fs, f, data=False))

        if not self.options["merge_schema"] or len(files) == 1:
            pf = open_parquet(fs, files[0], data=False)
            return Inferred(arrow_schema(pf), column_bytes(pf.metadata))
        with ThreadPoolExecutor(max_workers=16) as pool:
            return Inferred(unify_schemas(list(pool.map(footer, files))))

    def supports_filter(self, expr: Expr) -> Pushdown:
        return Pushdown.INEXACT


def arrow_schema(pf: pq.ParquetFile) -> pa.Schema:
    """A file's columns as Spark's Parquet reader types them. pyarrow reads an INT96
    timestamp (Spark's default ``outputTimestampType``, Hive's and Impala's) without a zone;
    an INT96 is an instant in UTC, which Spark types ``timestamp``, not ``timestamp_ntz``.
    INT64 timestamps follow their ``isAdjustedToUTC`` flag, as pyarrow and Spark read them."""
    schema = pf.schema_arrow.remove_metadata()
    int96 = int96_columns(pf.metadata)
    if not int96:
        return schema
    return pa.schema([f.with_type(pa.timestamp("us", tz="UTC")) if f.name in int96 else f
                      for f in schema])


def int96_columns(md: pq.FileMetaData) -> frozenset[str]:
    """Top-level columns stored as INT96 timestamps (a nested one is read as pyarrow reads
    it, without a zone)."""
    schema = md.schema
    return frozenset(schema.column(i).path for i in range(md.num_columns)
                     if schema.column(i).physical_type == "INT96"
                     and "." not in schema.column(i).path)


#: Spark's footer keys of a file written in its LEGACY calendar mode
#: (``spark.sql.parquet.datetimeRebaseModeInWrite``/``int96RebaseModeInWrite``): its dates
#: and timestamps are Julian-calendar values, which Spark's reader rebases back
_LEGACY_KEYS = {b"org.apache.spark.legacyDateTime": "date",
                b"org.apache.spark.legacyINT96": "int96"}
_SPARK_VERSION = b"org.apache.spark.version"
#: the first day both calendars agree on; a timestamp earlier than 1900 may be rebased in a
#: zone's local mean time
_GREGORIAN_START = dt.date(1582, 10, 15)
_REBASED_BEFORE = dt.datetime(1900, 1, 1, tzinfo=dt.UTC)


def legacy_calendar(md: pq.FileMetaData) -> frozenset[str]:
    """Which values (``date``: dates and INT64 timestamps, ``int96``) of a file Spark
    rebases from the Julian calendar when it reads it, by Spark's rule: written by Spark in
    LEGACY mode, or by Spark before 3.0 (3.1 for INT96)."""
    kv = md.metadata or {}
    kinds = {kind for key, kind in _LEGACY_KEYS.items() if key in kv}
    version = kv.get(_SPARK_VERSION)
    if version is not None:
        parts = tuple(int(p) for p in re.findall(rb"\d+", version)[:2])
        kinds |= {"date", "int96"} if parts < (3, 0) else {"int96"} if parts < (3, 1) else set()
    return frozenset(kinds)


def check_calendar(batch: pa.RecordBatch, legacy: frozenset[str], int96: frozenset[str],
                   path: str) -> None:
    """Refuse a legacy-calendar value (:func:`legacy_calendar`) this reader would read
    otherwise than Spark: dates before the Gregorian calendar's start, timestamps before
    1900 (Spark's reader rebases them; pyarrow does not)."""
    for name, array in zip(batch.schema.names, batch.columns, strict=True):
        t = array.type
        kind = "int96" if name in int96 else "date"
        if kind not in legacy or not (pa.types.is_date(t) or pa.types.is_timestamp(t)):
            continue
        low = pc.min(array).as_py()
        if low is None:
            continue
        limit: Any = _GREGORIAN_START if pa.types.is_date(t) else (
            _REBASED_BEFORE if t.tz is not None else _REBASED_BEFORE.replace(tzinfo=None))
        if low < limit:
            raise FileReadError(
                f"column {name!r} of {path} holds {low}, written by Spark in its LEGACY "
                "(Julian) calendar mode, which Spark's reader rebases and this reader does "
                "not: read this table with engine=native, or rewrite it in Spark's "
                "default CORRECTED mode")


def _as_utc(batch: pa.RecordBatch, int96: frozenset[str]) -> pa.RecordBatch:
    """``batch`` with its INT96 columns typed as instants in UTC (:func:`arrow_schema`)."""
    if not int96.intersection(batch.schema.names):
        return batch
    arrays = [a.cast(pa.timestamp("us", tz="UTC")) if n in int96 else a
              for n, a in zip(batch.schema.names, batch.columns, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, names=batch.schema.names)


def column_bytes(md: pq.FileMetaData) -> dict[str, int]:
    """Compressed bytes per top-level column over every row group (a nested column's
    leaves summed under its top-level name)."""
    out: dict[str, int] = {}
    top = [md.schema.column(i).path.split(".")[0] for i in range(md.num_columns)]
    for rg in range(md.num_row_groups):
        group = md.row_group(rg)
        for i, name in enumerate(top):
            out[name] = out.get(name, 0) + group.column(i).total_compressed_size
    return out


class ParquetOpener(FileOpener):
    def read_batches(self, file: PartitionedFile) -> Iterator[pa.RecordBatch]:
        src = self.source
        wanted = src.read_schema.names
        pf: pq.ParquetFile | None = None
        if wanted or src.storage.settings.on_file_change == "read":
            pf = open_parquet(self.fs, file, data=bool(wanted))
            md = pf.metadata
        else:  # no column: the footer's counts, once per file version (FOOTERS)
            md = FOOTERS.footer(src.storage, file,
                                lambda: open_parquet(self.fs, file, data=False).metadata)
        present = set((pf.schema_arrow if pf is not None else md.schema.to_arrow_schema()).names)
        columns = [n for n in wanted if n in present]
        groups = self._row_groups(md, file, present)
        self.count("row_groups_total", md.num_row_groups)
        self.count("row_groups_read", len(groups))
        if not groups:
            return
        if not columns:  # only missing or partition columns wanted: rows still count
            for rg in groups:
                yield _empty_rows(md.row_group(rg).num_rows)
            return
        # one row group per call: pre_buffer caches every row group it is given for the
        # reader's lifetime, so one call for the whole file held the whole file in memory
        assert pf is not None  # columns are read: the file was opened
        int96 = int96_columns(md)
        legacy = legacy_calendar(md)
        for rg in groups:
            for batch in pf.iter_batches(batch_size=src.batch_size, row_groups=[rg],
                                         columns=columns, use_threads=False):
                if legacy:
                    check_calendar(batch, legacy, int96, file.path)
                yield _as_utc(batch, int96)

    def _row_groups(self, md: pq.FileMetaData, file: PartitionedFile,
                    present: set[str]) -> list[int]:
        index = {md.schema.column(j).path: j for j in range(md.num_columns)}
        pred = self.source.predicate
        keep = []
        for rg in range(md.num_row_groups):
            meta = md.row_group(rg)
            if file.byte_range is not None and not _midpoint_in(meta, file.byte_range):
                continue
            if pred is not None and not may_be_true(pred, self._domains(meta, pred, index,
                                                                         present)):
                continue
            keep.append(rg)
        return keep

    @staticmethod
    def _domains(meta: pq.RowGroupMetaData, pred: Expr, index: dict[str, int],
                 present: set[str]) -> dict[str, Domain]:
        domains: dict[str, Domain] = {}
        for name in pred.columns():
            if name not in present:
                domains[name] = Known(None)
                continue
            j = index.get(name)
            st = meta.column(j).statistics if j is not None else None
            if st is None:
                domains[name] = UNKNOWN
                continue
            # pyarrow-stubs misspell has_null_count as hash_null_count
            nulls = st.null_count if st.has_null_count else None  # type: ignore[attr-defined]
            all_null = nulls is not None and nulls == meta.num_rows
            if not st.has_min_max:
                domains[name] = ValueRange(all_null=all_null)
                continue
            domains[name] = ValueRange(st.min, st.max, may_be_null=nulls != 0, all_null=all_null)
        return domains


def _empty_rows(n: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"__rows": pa.nulls(n)}).select([])


def _midpoint_in(meta: pq.RowGroupMetaData, byte_range: tuple[int, int]) -> bool:
    """Spark's rule: a row group belongs to the split holding its midpoint."""
    first = meta.column(0)
    start = first.dictionary_page_offset or first.data_page_offset
    if first.dictionary_page_offset is not None:
        start = min(first.dictionary_page_offset, first.data_page_offset)
    # RowGroupMetaData has no total_compressed_size: sum the column chunks' (as parquet-mr)
    size = sum(meta.column(i).total_compressed_size for i in range(meta.num_columns))
    mid = start + size // 2
    return byte_range[0] <= mid < byte_range[1]


class ParquetSource(FileSource):
    opener_class = ParquetOpener


ParquetFormat.source_class = ParquetSource


# --- writing ------------------------------------------------------------------------------

#: a Parquet writer buffers this much Arrow data (or rows) into one row group: callers hand
#: it small batches (Spark's 10,000 rows, split over every partition a task writes), and a
#: row group per batch made files half as big again; the cap bounds a task's memory per file
ROW_GROUP_BUFFER_BYTES = 8 << 20
ROW_GROUP_MAX_ROWS = 1_000_000


#: rows of a file's first row group whose distinct values decide, per column, whether the
#: column is dictionary-encoded (:func:`dictionary_columns`)
DICTIONARY_SAMPLE_ROWS = 65_536


def dictionary_columns(table: pa.Table) -> list[str] | bool:
    """The columns of ``table`` worth a dictionary: those whose first
    :data:`DICTIONARY_SAMPLE_ROWS` rows hold each value at least twice on average (and every
    column of a dictionary type). pyarrow tries a dictionary for every column and falls
    back to plain encoding only once the dictionary page passes 1 MiB, in every row group
    again: on columns of (nearly) unique values (ids, names, amounts, timestamps) that
    costs about half a file's encoding time and leaves row groups larger than plain
    encoding would (parquet-mr, Spark's writer, tests the first page and falls back for
    the whole column chunk). ``True`` (pyarrow's choice) for a schema with nested columns,
    whose dictionary columns are leaf paths."""
    if any(pa.types.is_nested(f.type) for f in table.schema):
        return True
    sample = table.slice(0, DICTIONARY_SAMPLE_ROWS)
    rows = sample.num_rows
    out = []
    for field, column in zip(table.schema, sample.columns, strict=True):
        if pa.types.is_dictionary(field.type) or pa.types.is_boolean(field.type):
            out.append(field.name)
        elif rows and pc.count_distinct(column, mode="all").as_py() * 2 <= rows:
            out.append(field.name)
    return out


class ParquetWriter(FileWriter):
    def __init__(self, sink: ParquetSink, out: pa.NativeFile) -> None:
        self.out, self.sink = out, sink
        #: made at the first row group, whose values choose the dictionary columns
        self.writer: pq.ParquetWriter | None = None
        self.buffer: list[pa.RecordBatch] = []
        self.buffered_bytes = self.buffered_rows = 0

    def _open(self, first: pa.Table | None) -> pq.ParquetWriter:
        codec: Any = self.sink.compression or "none"
        use_dictionary: Any = True if first is None else dictionary_columns(first)  # a list too
        self.writer = pq.ParquetWriter(self.out, self.sink.schema, compression=codec,
                                       use_dictionary=use_dictionary)
        return self.writer

    def write(self, batch: pa.RecordBatch) -> None:
        self.buffer.append(batch)
        self.buffered_bytes += batch.nbytes
        self.buffered_rows += batch.num_rows
        if (self.buffered_bytes >= ROW_GROUP_BUFFER_BYTES
                or self.buffered_rows >= ROW_GROUP_MAX_ROWS):
            self._flush()

    def _flush(self) -> None:
        if self.buffer:
            table = pa.Table.from_batches(self.buffer)
            writer = self.writer or self._open(table)
            writer.write_table(table, row_group_size=max(table.num_rows, 1))
            self.buffer, self.buffered_bytes, self.buffered_rows = [], 0, 0

    def close(self) -> None:
        self._flush()
        (self.writer or self._open(None)).close()
        self.out.close()


class ParquetSink(FileSink):
    """Parquet files (snappy unless ``compression`` says otherwise)."""

    compressions = {c: c for c in ("snappy", "gzip", "brotli", "zstd", "lz4")}

    def __init__(self, format: FileFormat, schema: pa.Schema,  # noqa: A002
                 compression: str | None = "snappy") -> None:
        super().__init__(format, schema, "snappy" if compression is None else compression)

    def open(self, out: pa.NativeFile) -> FileWriter:
        return ParquetWriter(self, out)


ParquetFormat.sink_class = ParquetSink
