"""The read path of one Spark task: open a group's files, append partition columns.

DataFusion's ``FileStream``: files are opened one at a time, lazily, through the
format's opener; partition values become constant columns; the residual filter and the
limit apply; missing or corrupt files are skipped (and counted) only when the matching
``ignore_*_files`` option says so. Everything a task needs travels in a
:class:`ReadSpec`, plain metadata that pickles small.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa

from listing.errors import CorruptFileError, MissingFileError
from listing.expressions import Expr, to_arrow
from listing.files import FileGroup, PartitionedFile
from listing.formats.base import FileSource
from listing.formats.conform import with_partition_columns

log = logging.getLogger("listing")

Counts = dict[str, int]


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


def read_group(spec: ReadSpec, group: FileGroup, skipped: Counts | None = None,
               limit: int | None = None) -> Iterator[pa.RecordBatch]:
    """Batches of ``spec.schema`` for one group, files opened one at a time.

    Missing or corrupt files raise, naming the file, unless the matching ``ignore_*``
    option is set; then the skip is counted in ``skipped`` and logged with the path.
    """
    remaining = spec.limit if limit is None else limit
    opener = spec.source.create_opener()
    residual = to_arrow(spec.residual_filter) if spec.residual_filter is not None else None
    part_fields = [f for f in spec.partition_fields if f.name in spec.schema.names]
    full = pa.schema(list(spec.source.output_schema) + part_fields)
    for file in group.files:
        if remaining is not None and remaining <= 0:
            return
        try:
            for batch in opener.open(file):
                batch = with_partition_columns(batch, file.partition_values, part_fields, full)
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
            _skip(skipped, "files_skipped_missing", file)
        except CorruptFileError:
            if not spec.ignore_corrupt_files:
                raise
            _skip(skipped, "files_skipped_corrupt", file)
    if skipped is not None:
        for name, n in opener.metrics.items():
            skipped[name] = skipped.get(name, 0) + n


def read_groups(spec: ReadSpec, groups: Iterable[FileGroup],
                threads: int = 8) -> tuple[pa.Table, Counts]:
    """Every group read in this process (no Spark), honouring the limit, with the counts.

    Without a limit, groups are read by ``threads`` threads (object stores reward
    concurrent GETs); with one, group after group until enough rows arrived.
    """
    groups = list(groups)
    counts: list[Counts] = []
    batches: list[pa.RecordBatch] = []
    if spec.limit is None and threads > 1 and len(groups) > 1:
        def read(group: FileGroup) -> list[pa.RecordBatch]:
            mine: Counts = {}
            counts.append(mine)
            return list(read_group(spec, group, mine))

        with ThreadPoolExecutor(max_workers=min(threads, len(groups))) as pool:
            for part in pool.map(read, groups):
                batches += part
    else:
        remaining = spec.limit
        counts.append({})
        for group in groups:
            for batch in read_group(spec, group, counts[0], remaining):
                batches.append(batch)
                if remaining is not None:
                    remaining -= batch.num_rows
            if remaining is not None and remaining <= 0:
                break
    total: Counts = {}
    for mine in counts:
        for name, n in mine.items():
            total[name] = total.get(name, 0) + n
    return pa.Table.from_batches(batches, schema=spec.schema), total


def _skip(skipped: Counts | None, key: str, file: PartitionedFile) -> None:
    log.warning("skipped %s: %s", file.path, key.removeprefix("files_skipped_"))
    if skipped is not None:
        skipped[key] = skipped.get(key, 0) + 1
