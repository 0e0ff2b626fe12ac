"""The ``listing`` source's batch readers and the task read path.

:class:`PlainListingReader` plans from the relation's own options (``where``, ``limit``);
:class:`ListingReader` adds Spark's pushed filters. ``partitions()`` plans the scan; each
:class:`~listing.spark.input_partition.GroupPartition` carries a file group and the plan's read
settings, because Spark pickles the reader before ``partitions()`` runs. ``read()`` (the
task, :func:`read_partition`) streams Arrow batches shaped exactly as Spark's Arrow reader
wants them; under ``count(*)`` the extension asks for row counts instead (:func:`counted`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.types import StructType

from listing.errors import ListingError, OptionError
from listing.expressions import Bound, bind
from listing.file_stream import read_group
from listing.formats.conform import conform_batch
from listing.metrics import Counters, CountersView
from listing.pushdown import Pushdown
from listing.scan import ScanPlan
from listing.spark.compat import DataSourceReader, InputPartition
from listing.spark.filters import from_spark
from listing.spark.input_partition import SUMMARY_END, SUMMARY_MARK, GroupPartition, key_marker
from listing.spark.progress import ListingProgress
from listing.spark.skips import SKIPS
from listing.spark.types import arrow_schema
from listing.table import ListingTable

log = logging.getLogger("listing.spark")


class PlainListingReader(DataSourceReader):
    """Plans from the relation's own options only (path, where, limit, schema)."""

    def __init__(self, table: ListingTable, schema: StructType, where: Sequence[Any] | None,
                 limit: int | None, min_partitions: int | None = None, skips: Any = None, *,
                 row_counts: bool = False) -> None:
        self.table = table
        self.row_counts = row_counts
        self.where = list(where or [])  # the relation's own filters (option where, basePath)
        self.limit = limit
        self.columns = resolve_columns(table, schema.fieldNames())
        self.target = arrow_schema(schema)
        self.pushed: list[Bound] = []
        self.min_partitions = min_partitions
        self.skips = skips

    def plan(self) -> ScanPlan:
        where: list[Any] = list(self.pushed) + self.where
        progress = ListingProgress(str(self.table.url))  # a long listing, in the driver log
        plan = self.table.scan(columns=self.columns, where=where or None,
                               limit=self.limit, min_partitions=self.min_partitions,
                               progress=progress)
        progress.done()
        return plan

    def partitions(self) -> list[InputPartition]:
        plan = self.plan()
        log.info("%s", plan.explain())
        summary = SUMMARY_MARK + plan.summary().replace(SUMMARY_END, " ") + SUMMARY_END
        return [GroupPartition(plan.read, group, summary if i == 0 else "",
                               key_marker(group) if plan.key_grouped else "")
                for i, group in enumerate(plan.file_groups)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        batches = read_partition(partition, self.target, self.skips)
        if not self.row_counts:
            yield from batches
            return
        per_file = {n.lower() for n in self.table.partition_names}
        yield from counted(batches, all(n.lower() in per_file for n in self.target.names))


#: the column ListingCountPushdown.java adds to a scan under ``count(*)``: it asks for the
#: number of rows each distinct row of a batch stands for, instead of the rows
ROW_COUNT_COLUMN = "__listing_rows"


def split_row_counts(schema: StructType) -> tuple[StructType, bool]:
    """The schema to read, and whether Spark asked for row counts (the last column)."""
    names = schema.fieldNames()
    if names and names[-1] == ROW_COUNT_COLUMN:
        return StructType(schema.fields[:-1]), True
    return schema, False


def counted(batches: Iterator[pa.RecordBatch],
            per_file: bool = False) -> Iterator[pa.RecordBatch]:
    """Each batch as its distinct rows with how many rows each stands for: a count(*) above
    sums them (exact under any row-wise filter on those columns). ``per_file``: every
    column holds one value per file (partition columns), and a batch never spans files,
    so a batch is its first row (count() by date); a batch of no rows sends nothing."""
    rows_field = pa.field(ROW_COUNT_COLUMN, pa.int64(), nullable=False)
    for batch in batches:
        if not batch.num_rows:
            continue
        if per_file or not batch.num_columns:
            yield batch.slice(0, 1).append_column(
                rows_field, pa.array([batch.num_rows], pa.int64()))
            continue
        keys = [f"k{i}" for i in range(batch.num_columns)]  # no name can clash with the count
        grouped = (pa.Table.from_batches([batch.rename_columns(keys)])
                   .group_by(keys, use_threads=False).aggregate([([], "count_all")]))
        rows = grouped.column("count_all").cast(pa.int64())
        table = pa.table([*(grouped.column(k) for k in keys), rows],
                         schema=batch.schema.append(rows_field))
        yield from table.to_batches()


def read_partition(partition: InputPartition, target: pa.Schema,
                   skips: Any = None) -> Iterator[pa.RecordBatch]:
    """One Spark task: its group's batches shaped as ``target``; skips go to ``skips``."""
    if not isinstance(partition, GroupPartition):  # no files matched: Spark's empty task
        return
    counts = Counters()
    paths: list[str] = []
    try:
        for batch in read_group(partition.spec, partition.group, counts, skipped_paths=paths):
            yield conform_batch(batch.rename_columns(target.names), target,
                                partition.group.files[0].path)
    finally:  # the driver sums these (listing.skipped_files)
        if (paths or counts.get("files_changed")) and skips is not None:
            skips.add({**CountersView(counts, names=SKIPS), "paths": paths})


class ListingReader(PlainListingReader):
    """Adds ``pushFilters``: partition filters prune exactly; data filters prune row groups
    and go back to Spark to be re-checked; the rest go back untouched."""

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:  # noqa: N802 - Spark's name
        for f in filters:
            expr = from_spark(f)
            if expr is None:
                yield f
                continue
            try:
                bound = bind(expr, self.table.schema)  # once: classify and scan take it as is
            except ListingError:
                yield f
                continue
            kind = self.table.classify([bound])[0]
            if kind is Pushdown.UNSUPPORTED:
                yield f
                continue
            self.pushed.append(bound)
            if kind is Pushdown.INEXACT:
                yield f


def resolve_columns(table: ListingTable, names: Sequence[str]) -> list[str]:
    """The table's spelling of each of ``names`` (Spark's names are case-insensitive);
    one pass over the table's columns, whatever the number of names."""
    spelling: dict[str, str] = {}
    for n in table.schema.names:
        spelling.setdefault(n.lower(), n)
    out = []
    for name in names:
        found = spelling.get(name.lower())
        if found is None:
            raise OptionError(f"column {name!r} is not in table {table.url}")
        out.append(found)
    return out
