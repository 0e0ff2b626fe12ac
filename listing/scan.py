"""ScanPlan: the result of planning, a value.

It holds metadata only (paths, byte ranges, partition values, schema, the format's
FileSource with storage *options*), so it pickles small and every executor rebuilds its
filesystem from those options. Its :class:`ScanMetrics` (a view of the scan's
:class:`~listing.metrics.Counters`) count what planning did;
reading the plan (:meth:`ScanPlan.collect`) returns what reading did beside the rows, and
leaves the plan as it was (DataFusion's metrics of an execution plan, kept apart from it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import pyarrow as pa

from listing.expressions import Expr
from listing.file_columns import FileColumns
from listing.file_stream import ReadSpec, read_groups
from listing.files import FileGroup, PartitionedFile
from listing.metrics import Counters, CountersView
from listing.redact import redact
from listing.storage.spec import StorageSpec


class ScanMetrics(CountersView):
    """What one plan's counters say, read as a mapping (``plan.metrics["list_requests"]``)
    in the order ``explain()`` prints them: ``list_requests``, ``data_files_opened``,
    ``file_groups`` and ``bytes`` always; the listing's counts when the scan listed (files
    chosen otherwise, by streaming discovery, have none); the read's counts in a
    :class:`ScanResult`, once the plan was read. A value: the counts as they were when
    the plan was made."""

    ALWAYS = ("list_requests", "data_files_opened", "file_groups", "bytes")

    def __init__(self, counts: Mapping[str, int] | None = None) -> None:
        super().__init__(dict(counts or {}))


class ScanResult(NamedTuple):
    """A plan read in this process: its rows, and the plan's metrics with the read's."""

    table: pa.Table
    metrics: ScanMetrics


@dataclass(frozen=True)
class ScanPlan:
    """Files to read, how they are grouped into tasks, and what each task applies."""

    url: str
    storage: StorageSpec
    partition_filter: Expr | None
    data_filter: Expr | None
    #: the files, as columns (:attr:`files` on request)
    planned: FileColumns
    file_groups: list[FileGroup]
    read: ReadSpec
    listing_plan: list[str] = field(default_factory=list)
    metrics: ScanMetrics = field(default_factory=ScanMetrics, compare=False)
    #: every file group holds files of one partition value (the ``key_grouped`` option)
    key_grouped: bool = False
    #: which packing ``key_grouped`` chose, and why ("" when the option is off)
    packing: str = ""

    @property
    def files(self) -> list[PartitionedFile]:
        """The files to read, in key order (made from the plan's columns on first access,
        then kept)."""
        return self.planned.files()

    @property
    def file_count(self) -> int:
        """``len(files)``, without making them."""
        return len(self.planned)

    @property
    def schema(self) -> pa.Schema:
        """Output columns: projected data columns, then partition columns."""
        return self.read.schema

    @property
    def source(self) -> object:
        return self.read.source

    @property
    def residual_filter(self) -> Expr | None:
        return self.read.residual_filter

    @property
    def limit(self) -> int | None:
        return self.read.limit

    # --- reading (no Spark) ---------------------------------------------------------------
    def collect(self, threads: int = 8) -> ScanResult:
        """Read the whole plan in this process: the rows, and ``metrics`` with what the
        read did (skipped files, retries, row groups, bytes). The plan is unchanged."""
        table, read = read_groups(self.read, self.file_groups, threads)
        counts = Counters(dict(self.metrics))
        counts.add_all(read)
        return ScanResult(table, ScanMetrics(counts))

    def to_arrow(self, threads: int = 8) -> pa.Table:
        """The rows of :meth:`collect`."""
        return self.collect(threads).table

    # --- describing -----------------------------------------------------------------------
    def explain(self) -> str:
        m = self.metrics
        lines = [
            f"ScanPlan {self.url}",
            f"  storage: {self.storage.protocol} {redact(self.storage.options) or ''}".rstrip(),
            f"  format: {self.read.source.format.name}",
            f"  projection: {', '.join(self.schema.names)}",
            f"  partition filter (exact): {_text(self.partition_filter)}",
            f"  data filter (row groups + rows): {_text(self.data_filter)}",
            f"  residual filter (rows): {_text(self.residual_filter)}",
            f"  limit: {self.limit if self.limit is not None else '-'}",
            "  listing plan:",
            *[f"    {line}" for line in self.listing_plan],
            f"  files: {self.file_count} in {len(self.file_groups)} groups, "
            f"{m['bytes']:,} bytes",
        ]
        if self.packing:
            lines.append(f"  packing: {self.packing}")
        for g in self.file_groups[:8]:
            names = ", ".join(f.path.removeprefix(self.url)
                              + (f"[{f.byte_range[0]}:{f.byte_range[1]}]" if f.byte_range
                                 else "") for f in g.first(3))
            count = g.file_count
            more = f", … {count - 3} more" if count > 3 else ""
            lines.append(f"    group {g.index}: {count} files, {g.bytes:,} bytes: "
                         f"{names}{more}")
        if len(self.file_groups) > 8:
            lines.append(f"    … {len(self.file_groups) - 8} more groups")
        lines.append("  metrics: " + ", ".join(f"{k}={v}" for k, v in m.items()))
        return "\n".join(lines)

    def summary(self) -> str:
        """One line for Spark's scan description: files chosen, requests, listing plan."""
        m = self.metrics
        return (f"Files: {self.file_count} in {len(self.file_groups)} groups "
                f"({m['bytes']:,} bytes), LIST requests: {m['list_requests']}, "
                f"listing: {' / '.join(line.strip() for line in self.listing_plan) or '-'}"
                + (f", packing: {self.packing}" if self.packing else ""))

    def __repr__(self) -> str:
        return (f"ScanPlan({self.url}, files={self.file_count}, "
                f"groups={len(self.file_groups)}, list_requests={self.metrics['list_requests']})")


def _text(expr: Expr | None) -> str:
    return "-" if expr is None else str(expr)
