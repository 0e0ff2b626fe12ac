"""The read path of one Spark task: open a group's files, append partition columns.

DataFusion's ``FileStream``: files are opened one at a time, lazily, through the
format's opener; partition values become constant columns; the residual filter and the
limit apply; missing or corrupt files are skipped (and counted) only when the matching
``ignore_*_files`` option says so. Everything a task needs travels in a
:class:`ReadSpec`, plain metadata that pickles small.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa

from listing.errors import CorruptFileError, MissingFileError
from listing.expressions import Expr, to_arrow
from listing.files import FILE_METADATA, FILE_METADATA_FIELD, FileGroup, PartitionedFile
from listing.formats.base import FileOpener, FileSource
from listing.formats.conform import with_partition_columns
from listing.metrics import Counters

log = logging.getLogger("listing")


@dataclass(frozen=True)
class ReadSpec:
    """How to read any group of one plan (the files excluded)."""

    source: FileSource
    schema: pa.Schema  # what each batch holds: projected data and partition columns
    partition_fields: tuple[pa.Field, ...]
    residual_filter: Expr | None = None
    limit: int | None = None
    ignore_missing_files: bool = False
    ignore_corrupt_files: bool = False
    prefetch: int = 4  # files opened ahead (first batch fetched) while one is read
    file_metadata: bool = False  # append the _metadata struct (schema names it)


def read_group(spec: ReadSpec, group: FileGroup, metrics: Counters | None = None,
               limit: int | None = None, skipped_paths: list[str] | None = None
               ) -> Iterator[pa.RecordBatch]:
    """Batches of ``spec.schema`` for one group, files opened one at a time.

    While one file's batches are consumed, the next ``spec.prefetch`` files are opened and
    their first batches fetched by helper threads: object stores answer each GET after a
    round trip, which a task of many small files would otherwise wait for file by file.
    With a row limit nothing is fetched ahead, so no file past the limit is requested.
    Missing or corrupt files raise, naming the file, unless the matching ``ignore_*``
    option is set; then the file is skipped, logged with its path and added to
    ``skipped_paths``. What the read did is added to ``metrics`` when it ends (the
    openers' counts: ``read_retries``, ``row_groups_read``, ``bytes_read``…) or as it
    happens (``files_skipped_missing``, ``files_skipped_corrupt``).
    """
    remaining = spec.limit if limit is None else limit
    residual = to_arrow(spec.residual_filter) if spec.residual_filter is not None else None
    projected = set(spec.schema.names)  # and the partition columns the residual filter reads
    if spec.residual_filter is not None:
        projected |= spec.residual_filter.columns()
    part_fields = [f for f in spec.partition_fields if f.name in projected]
    if spec.file_metadata:
        part_fields.append(FILE_METADATA_FIELD)  # a per-file constant, like partition values
    full = pa.schema(list(spec.source.output_schema) + part_fields)
    openers: list[FileOpener] = []
    # with a limit, files past it must not be fetched: a limit reads one file at a time
    depth = 0 if remaining is not None else min(spec.prefetch, len(group.files) - 1)
    pool = ThreadPoolExecutor(max_workers=depth) if depth > 0 else None
    ahead: deque[Future[_Started]] = deque()
    submitted = 0
    try:
        for file in group.files:
            if remaining is not None and remaining <= 0:
                return
            while pool is not None and submitted < len(group.files) and len(ahead) <= depth:
                ahead.append(pool.submit(_start, spec, group.files[submitted], openers))
                submitted += 1
            started = ahead.popleft().result() if ahead else _start(spec, file, openers)
            try:
                values = file.partition_values
                if spec.file_metadata:
                    values = {**values, FILE_METADATA: file.file_metadata()}
                for batch in started.batches():
                    batch = with_partition_columns(batch, values, part_fields, full)
                    if residual is not None:
                        batch = batch.filter(residual)
                    batch = batch.select(spec.schema.names)
                    if remaining is not None:
                        batch = batch.slice(0, remaining)
                        remaining -= batch.num_rows
                    if batch.num_rows:
                        yield batch
                    if remaining is not None and remaining <= 0:
                        return
            except MissingFileError:
                if not spec.ignore_missing_files:
                    raise
                _skip("missing", file, skipped_paths)
                if metrics is not None:
                    metrics.add("files_skipped_missing")
            except CorruptFileError:
                if not spec.ignore_corrupt_files:
                    raise
                _skip("corrupt", file, skipped_paths)
                if metrics is not None:
                    metrics.add("files_skipped_corrupt")
    finally:
        for pending in ahead:
            pending.cancel()
        if pool is not None:
            pool.shutdown(wait=True)
        if metrics is not None:
            for opener in openers:
                metrics.add_all(opener.metrics)


@dataclass
class _Started:
    """A file whose first batch was fetched (or whose opening failed)."""

    first: pa.RecordBatch | None
    rest: Iterator[pa.RecordBatch]
    error: BaseException | None = None

    def batches(self) -> Iterator[pa.RecordBatch]:
        if self.error is not None:
            raise self.error
        if self.first is not None:
            yield self.first
            yield from self.rest


def _start(spec: ReadSpec, file: PartitionedFile, openers: list[FileOpener]) -> _Started:
    """Open ``file`` with its own opener and fetch its first batch; errors are kept for
    the reading thread to raise, in file order."""
    opener = spec.source.create_opener()
    openers.append(opener)
    rest = opener.open(file)
    try:
        return _Started(next(rest, None), rest)
    except Exception as err:  # noqa: BLE001 - re-raised by batches(), where it belongs
        return _Started(None, iter(()), err)


def read_groups(spec: ReadSpec, groups: Iterable[FileGroup],
                threads: int = 8) -> tuple[pa.Table, Counters]:
    """Every group read in this process (no Spark), honouring the limit, with what the
    reads did.

    Without a limit, groups are read by ``threads`` threads (object stores reward
    concurrent GETs); with one, group after group until enough rows arrived.
    """
    groups = list(groups)
    metrics = Counters()  # every thread's reads counted here
    batches: list[pa.RecordBatch] = []
    if spec.limit is None and threads > 1 and len(groups) > 1:
        def read(group: FileGroup) -> list[pa.RecordBatch]:
            return list(read_group(spec, group, metrics))

        with ThreadPoolExecutor(max_workers=min(threads, len(groups))) as pool:
            for part in pool.map(read, groups):
                batches += part
    else:
        remaining = spec.limit
        for group in groups:
            for batch in read_group(spec, group, metrics, remaining):
                batches.append(batch)
                if remaining is not None:
                    remaining -= batch.num_rows
            if remaining is not None and remaining <= 0:
                break
    return pa.Table.from_batches(batches, schema=spec.schema), metrics


def _skip(kind: str, file: PartitionedFile, paths: list[str] | None) -> None:
    log.warning("skipped %s: %s", file.path, kind)
    if paths is not None:
        paths.append(file.path)
