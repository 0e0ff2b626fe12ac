"""ScanPlan: the result of planning, and the only thing shipped to executors.

It holds metadata only (paths, byte ranges, partition values, schema, the format's
FileSource with storage *options*), so it pickles small and every executor rebuilds its
filesystem from those options. ``read_group`` is what one Spark task runs.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from listing.formats.base import CorruptFileError, FileFormat, FileSource, MissingFileError
from listing.formats.conform import with_partition_columns
from listing.expr import Expr
from listing.files import FileGroup, PartitionedFile
from listing.options import ListingOptions
from listing.storage import StorageSpec, redact

log = logging.getLogger("listing")


@dataclass
class ScanPlan:
    """Files to read, how they are grouped into tasks, and what each task applies."""

    url: str
    storage: StorageSpec
    schema: pa.Schema  # output: projected data columns and partition columns
    partition_fields: list[pa.Field]
    source: FileSource
    partition_filter: Expr | None
    data_filter: Expr | None
    residual_filter: Expr | None
    limit: int | None
    files: list[PartitionedFile]
    file_groups: list[FileGroup]
    metrics: dict[str, Any]
    listing_plan: list[str] = field(default_factory=list)
    options: ListingOptions = field(default_factory=ListingOptions)

    # --- reading (executor side) ----------------------------------------------------------
    def read_group(self, group: FileGroup | int, skipped: dict[str, int] | None = None,
                   limit: int | None = None) -> Iterator[pa.RecordBatch]:
        """Batches of ``schema`` for one group: files opened one at a time, lazily.

        Missing or corrupt files raise, naming the file, unless the matching
        ``ignore_*_files`` option is set; then the skip is counted in ``skipped`` and
        logged with the file's path.
        """
        if isinstance(group, int):
            group = self.file_groups[group]
        remaining = self.limit if limit is None else limit
        opener = self.source.create_opener()
        residual = self.residual_filter.to_arrow() if self.residual_filter is not None else None
        part_fields = [f for f in self.partition_fields if f.name in self.schema.names]
        full = pa.schema(list(self.source.output_schema) + part_fields)
        for file in group.files:
            if remaining is not None and remaining <= 0:
                return
            try:
                for batch in opener.open(file):
                    batch = with_partition_columns(batch, file.partition_values, part_fields,
                                                   full)
                    if residual is not None:
                        batch = batch.filter(residual)
                    batch = batch.select(self.schema.names)
                    if remaining is not None:
                        batch = batch.slice(0, remaining)
                        remaining -= batch.num_rows
                    if batch.num_rows:
                        yield batch
                    if remaining is not None and remaining <= 0:
                        return
            except MissingFileError:
                if not self.options.ignore_missing_files:
                    raise
                _skip(skipped, "files_skipped_missing", file)
            except CorruptFileError:
                if not self.options.ignore_corrupt_files:
                    raise
                _skip(skipped, "files_skipped_corrupt", file)
        for name, n in opener.metrics.items():
            if skipped is not None:
                skipped[name] = skipped.get(name, 0) + n

    def to_arrow(self, threads: int = 8) -> pa.Table:
        """Read the whole plan in this process (no Spark), honouring the limit.

        Without a limit, file groups are read by ``threads`` threads (object stores reward
        concurrent GETs); with one, group after group until enough rows arrived.
        """
        counts: list[dict[str, int]] = []
        batches: list[pa.RecordBatch] = []
        if self.limit is None and threads > 1 and len(self.file_groups) > 1:
            def read(group: FileGroup) -> list[pa.RecordBatch]:
                mine: dict[str, int] = {}
                counts.append(mine)
                return list(self.read_group(group, mine))

            with ThreadPoolExecutor(max_workers=min(threads, len(self.file_groups))) as pool:
                for part in pool.map(read, self.file_groups):
                    batches += part
        else:
            remaining = self.limit
            counts.append({})
            for group in self.file_groups:
                for batch in self.read_group(group, counts[0], remaining):
                    batches.append(batch)
                    if remaining is not None:
                        remaining -= batch.num_rows
                if remaining is not None and remaining <= 0:
                    break
        for mine in counts:
            for name, n in mine.items():
                self.metrics[name] = self.metrics.get(name, 0) + n
        return pa.Table.from_batches(batches, schema=self.schema)

    # --- describing -----------------------------------------------------------------------
    def explain(self) -> str:
        m = self.metrics
        lines = [
            f"ScanPlan {self.url}",
            f"  storage: {self.storage.protocol} {redact(self.storage.options) or ''}".rstrip(),
            f"  format: {self.source.format.name}",
            f"  projection: {', '.join(self.schema.names)}",
            f"  partition filter (exact): {_text(self.partition_filter)}",
            f"  data filter (row groups + rows): {_text(self.data_filter)}",
            f"  residual filter (rows): {_text(self.residual_filter)}",
            f"  limit: {self.limit if self.limit is not None else '-'}",
            "  listing plan:",
            *[f"    {line}" for line in self.listing_plan],
            f"  files: {len(self.files)} in {len(self.file_groups)} groups, "
            f"{m.get('bytes', 0):,} bytes",
        ]
        for g in self.file_groups[:8]:
            names = ", ".join(f.path.removeprefix(self.url)
                              + (f"[{f.byte_range[0]}:{f.byte_range[1]}]" if f.byte_range
                                 else "") for f in g.files[:3])
            more = f", … {len(g.files) - 3} more" if len(g.files) > 3 else ""
            lines.append(f"    group {g.index}: {len(g.files)} files, {g.bytes:,} bytes: "
                         f"{names}{more}")
        if len(self.file_groups) > 8:
            lines.append(f"    … {len(self.file_groups) - 8} more groups")
        lines.append("  metrics: " + ", ".join(f"{k}={v}" for k, v in m.items()))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"ScanPlan({self.url}, files={len(self.files)}, "
                f"groups={len(self.file_groups)}, list_requests={self.metrics['list_requests']})")


def _text(expr: Expr | None) -> str:
    return "-" if expr is None else str(expr)


def _skip(skipped: dict[str, int] | None, key: str, file: PartitionedFile) -> None:
    log.warning("skipped %s: %s", file.path, key.removeprefix("files_skipped_"))
    if skipped is not None:
        skipped[key] = skipped.get(key, 0) + 1


def pack_file_groups(files: list[PartitionedFile], fmt: FileFormat, options: ListingOptions,
                     min_partitions: int | None = None) -> list[FileGroup]:
    """Split big files and pack pieces into groups with Spark's ``FilePartition`` rule.

    ``maxSplitBytes = min(maxPartitionBytes, max(openCostInBytes, bytesPerCore))`` where
    ``bytesPerCore`` spreads the total (each file charged ``openCostInBytes`` extra) over
    ``min_partitions``; pieces are packed largest first, a group closing when the next
    piece would overflow it.
    """
    if not files:
        return []
    parallelism = max(1, options.min_partitions or min_partitions or 1)  # the user's wins
    open_cost = options.open_cost_in_bytes
    total = sum(f.size + open_cost for f in files)
    max_split = min(options.max_partition_bytes, max(open_cost, total // parallelism))
    pieces = [p for f in files for p in fmt.split(f, max_split)]
    pieces.sort(key=lambda p: p.length, reverse=True)
    groups: list[list[PartitionedFile]] = []
    current: list[PartitionedFile] = []
    size = 0
    for piece in pieces:
        if current and size + piece.length > max_split:
            groups.append(current)
            current, size = [], 0
        current.append(piece)
        size += piece.length + open_cost
    if current:
        groups.append(current)
    return [FileGroup(i, tuple(g)) for i, g in enumerate(groups)]
