"""The read path of one Spark task: open a group's files, append partition columns.

DataFusion's ``FileStream``: files are opened one at a time, lazily, through the
format's opener; partition values become constant columns; the residual filter and the
limit apply; missing or corrupt files are skipped (and counted) only when the matching
``ignore_*_files`` option says so. Everything a task needs travels in a
:class:`ReadSpec`, plain metadata that pickles small.
"""

from __future__ import annotations

import logging
from collections import Counter, deque
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import pyarrow as pa

from listing.errors import CorruptFileError, MissingFileError
from listing.expressions import Expr, to_arrow
from listing.files import FILE_METADATA, FILE_METADATA_FIELD, FileGroup, PartitionedFile
from listing.formats.base import FileOpener, FileSource
from listing.formats.conform import with_partition_columns

log = logging.getLogger("listing")


class Metrics(Mapping[str, int]):
    """Typed counters read as a mapping of name to count, in the order ``explain()`` prints
    them; a count that was not measured is absent (subclasses say which in :meth:`pairs`)."""

    def pairs(self) -> Iterator[tuple[str, int]]:
        raise NotImplementedError

    def __getitem__(self, name: str) -> int:
        for key, value in self.pairs():
            if key == name:
                return value
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return (key for key, _ in self.pairs())

    def __len__(self) -> int:
        return sum(1 for _ in self.pairs())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self.pairs())})"


@dataclass(repr=False)
class ReadMetrics(Metrics):
    """What reading files did: the files the ``ignore_*_files`` options skipped (absent
    while none was) and the formats' own counts (``read_retries``, ``row_groups_read``,
    ``bytes_read``, ``files_skipped_empty``…), summed over every file opened. One reader's
    accumulator (a task, or one thread of :func:`read_groups`); :meth:`add` sums two."""

    files_skipped_missing: int = 0
    files_skipped_corrupt: int = 0
    formats: Counter[str] = field(default_factory=Counter)

    def pairs(self) -> Iterator[tuple[str, int]]:
        if self.files_skipped_missing:
            yield "files_skipped_missing", self.files_skipped_missing
        if self.files_skipped_corrupt:
            yield "files_skipped_corrupt", self.files_skipped_corrupt
        yield from self.formats.items()

    def add(self, other: ReadMetrics) -> None:
        self.files_skipped_missing += other.files_skipped_missing
        self.files_skipped_corrupt += other.files_skipped_corrupt
        self.formats.update(other.formats)


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


def read_group(spec: ReadSpec, group: FileGroup, metrics: ReadMetrics | None = None,
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
    openers' counts) or as it happens (skips).
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
                    metrics.files_skipped_missing += 1
            except CorruptFileError:
                if not spec.ignore_corrupt_files:
                    raise
                _skip("corrupt", file, skipped_paths)
                if metrics is not None:
                    metrics.files_skipped_corrupt += 1
    finally:
        for pending in ahead:
            pending.cancel()
        if pool is not None:
            pool.shutdown(wait=True)
        if metrics is not None:
            for opener in openers:
                metrics.formats.update(opener.metrics)


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
                threads: int = 8) -> tuple[pa.Table, ReadMetrics]:
    """Every group read in this process (no Spark), honouring the limit, with what the
    reads did.

    Without a limit, groups are read by ``threads`` threads (object stores reward
    concurrent GETs); with one, group after group until enough rows arrived.
    """
    groups = list(groups)
    each: list[ReadMetrics] = []
    batches: list[pa.RecordBatch] = []
    if spec.limit is None and threads > 1 and len(groups) > 1:
        def read(group: FileGroup) -> list[pa.RecordBatch]:
            mine = ReadMetrics()
            each.append(mine)
            return list(read_group(spec, group, mine))

        with ThreadPoolExecutor(max_workers=min(threads, len(groups))) as pool:
            for part in pool.map(read, groups):
                batches += part
    else:
        remaining = spec.limit
        each.append(ReadMetrics())
        for group in groups:
            for batch in read_group(spec, group, each[0], remaining):
                batches.append(batch)
                if remaining is not None:
                    remaining -= batch.num_rows
            if remaining is not None and remaining <= 0:
                break
    total = ReadMetrics()
    for mine in each:
        total.add(mine)
    return pa.Table.from_batches(batches, schema=spec.schema), total


def _skip(kind: str, file: PartitionedFile, paths: list[str] | None) -> None:
    log.warning("skipped %s: %s", file.path, kind)
    if paths is not None:
        paths.append(file.path)
