"""``spark.readStream.format("listing")``: new files of a growing table, trigger by trigger.

Discovery (:mod:`listing.discovery`) runs in Spark's long-lived Python planning worker,
so a backlog bigger than one trigger's limit is listed once and served over several
triggers. Offsets are :class:`~listing.discovery.StreamOffset` JSON; each carries its
batch's files, so ``partitions(start, end)`` after a restart plans exactly the batch that
was planned before. Files are read by the batch source's reader, one file group a task.

Where Spark has admission control for Python sources (:data:`~listing.spark.compat.
HAS_ADMISSION_CONTROL`, Spark 4.2 and later) it passes the trigger's read limit and supports
``Trigger.AvailableNow``; elsewhere (4.0, 4.1) the reader applies ``max_files_per_trigger`` /
``max_bytes_per_trigger`` itself from the offset it last planned, and Spark serves
``Trigger.AvailableNow`` by one ``latestOffset()`` call at the query's start: one batch of
the files that call admits.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.types import StructType

from listing.discovery import DiscoveredFiles, DiscoverySettings, FileDiscovery
from listing.spark.compat import HAS_ADMISSION_CONTROL, DataSourceStreamReader, InputPartition
from listing.spark.input_partition import GroupPartition
from listing.spark.reader import read_partition, resolve_columns
from listing.spark.types import arrow_schema
from listing.storage.spec import StorageSpec
from listing.table import ListingTable

log = logging.getLogger("listing.spark")


class _StreamReader(DataSourceStreamReader):
    """Partition filters come from the ``where`` option.

    A batch's offset pins the versions (ETags) of its files, and a restart replays it: a
    file rewritten after planning is read as it is now (storage ``on_file_change=read``,
    the default here, counted as ``files_changed`` and logged), as Spark's file stream
    reads what is there, so the stream goes on; ``on_file_change=error`` set explicitly
    stops it instead. Batches read their files whole, since only a whole file can be read
    as it is now (byte ranges are planned on the listed size)."""

    def __init__(self, table: ListingTable, schema: StructType, where: list[Any] | None,
                 stream_options: dict[str, str], min_partitions: int | None = None,
                 skips: Any = None) -> None:
        if "on_file_change" not in table.storage.options:
            table = copy.copy(table)
            table.storage = StorageSpec(table.storage.protocol, {
                **table.storage.options, "on_file_change": "read"})
        self.table = table
        self.where = where
        self.settings = DiscoverySettings.parse(stream_options)
        self.discovery = FileDiscovery(table, where, self.settings)
        self.columns = resolve_columns(table, schema.fieldNames())
        self.target = arrow_schema(schema)
        self.min_partitions = min_partitions
        self.skips = skips

    def initialOffset(self) -> dict:  # noqa: N802 - Spark's names
        return self.discovery.initial_offset().to_json()

    def _found(self, found: DiscoveredFiles, start: dict) -> dict:
        log.info("listing stream %s: %s", self.table.url, dict(found.metrics))
        return start if not found.files else found.offset.to_json()

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        if start == end:
            return []
        files = self.discovery.files_of(end)
        plan = self.table.plan_files(files, self.columns, self.where,
                                     min_partitions=self.min_partitions, split_files=False)
        return [GroupPartition(plan.read, group) for group in plan.file_groups]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        yield from read_partition(partition, self.target, self.skips)

    def commit(self, end: dict) -> None:
        """Nothing to release: what was read lives in the offsets Spark keeps."""


if HAS_ADMISSION_CONTROL:
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxBytes,
        ReadMaxFiles,
        SupportsTriggerAvailableNow,
    )

    class ListingStreamReader(_StreamReader, SupportsTriggerAvailableNow):
        """Spark's admission control (``max_files_per_trigger``/``max_bytes_per_trigger``
        as the trigger's read limit) and ``Trigger.AvailableNow``."""

        def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802
            if self.settings.max_files is not None:
                return ReadMaxFiles(self.settings.max_files)
            if self.settings.max_bytes is not None:
                return ReadMaxBytes(self.settings.max_bytes)
            return ReadAllAvailable()

        def latestOffset(self, start: dict, limit: ReadLimit) -> dict:  # noqa: N802
            if isinstance(limit, ReadMaxFiles):  # max_bytes_per_trigger, if set, still caps
                found = self.discovery.new_files(start, max_files=limit.max_files)
            elif isinstance(limit, ReadMaxBytes):
                found = self.discovery.new_files(start, max_bytes=limit.max_bytes)
            else:
                found = self.discovery.new_files(start, all_available=True)
            return self._found(found, start)

        def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
            self.discovery.freeze()

else:

    class ListingStreamReader(_StreamReader):  # type: ignore[no-redef]
        """The reader's own per-trigger limits: Spark passes no start offset and no limit,
        so each ``latestOffset()`` admits the settings' limits of files after the offset the
        reader last planned, committed or returned (Spark replays a planned batch through
        ``partitions`` and commits the last finished one on restart)."""

        _start: dict | None = None

        def latestOffset(self) -> dict:  # type: ignore[override]  # noqa: N802
            start = self._start if self._start is not None else self.initialOffset()
            self._start = self._found(self.discovery.new_files(start), start)
            return self._start

        def partitions(self, start: dict, end: dict) -> list[InputPartition]:
            self._start = end
            return super().partitions(start, end)

        def commit(self, end: dict) -> None:
            self._start = end
