"""ScanPlan: the result of planning, a value.

It holds metadata only (paths, byte ranges, partition values, schema, the format's
FileSource with storage *options*), so it pickles small and every executor rebuilds its
filesystem from those options. Its only moving part is :class:`ScanMetrics`, the
counters of what planning did and, once the plan is read, what reading did
(DataFusion's metrics set on an execution plan).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa

from listing.expressions import Expr
from listing.files import FileGroup, PartitionedFile
from listing.storage import StorageSpec, redact
from listing.file_stream import ReadSpec, read_groups


class ScanMetrics(dict[str, int]):
    """Request and file counters; reading a plan adds its skips and row-group counts."""

    def add(self, counts: dict[str, int]) -> None:
        for name, n in counts.items():
            self[name] = self.get(name, 0) + n


@dataclass(frozen=True)
class ScanPlan:
    """Files to read, how they are grouped into tasks, and what each task applies."""

    url: str
    storage: StorageSpec
    partition_filter: Expr | None
    data_filter: Expr | None
    files: list[PartitionedFile]
    file_groups: list[FileGroup]
    read: ReadSpec
    listing_plan: list[str] = field(default_factory=list)
    metrics: ScanMetrics = field(default_factory=ScanMetrics, compare=False)
    #: every file group holds files of one partition value (the ``key_grouped`` option)
    key_grouped: bool = False
    #: which packing ``key_grouped`` chose, and why ("" when the option is off)
    packing: str = ""

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
    def to_arrow(self, threads: int = 8) -> pa.Table:
        """Read the whole plan in this process; skips are added to ``metrics``."""
        table, counts = read_groups(self.read, self.file_groups, threads)
        self.metrics.add(counts)
        return table

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
            f"  files: {len(self.files)} in {len(self.file_groups)} groups, "
            f"{m.get('bytes', 0):,} bytes",
        ]
        if self.packing:
            lines.append(f"  packing: {self.packing}")
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

    def summary(self) -> str:
        """One line for Spark's scan description: files chosen, requests, listing plan."""
        m = self.metrics
        return (f"Files: {len(self.files)} in {len(self.file_groups)} groups "
                f"({m.get('bytes', 0):,} bytes), LIST requests: {m.get('list_requests', 0)}, "
                f"listing: {' / '.join(line.strip() for line in self.listing_plan) or '-'}"
                + (f", packing: {self.packing}" if self.packing else ""))

    def __repr__(self) -> str:
        return (f"ScanPlan({self.url}, files={len(self.files)}, "
                f"groups={len(self.file_groups)}, list_requests={self.metrics['list_requests']})")


def _text(expr: Expr | None) -> str:
    return "-" if expr is None else str(expr)
