"""Packing files into the groups Spark tasks read, with Spark's own sizing rule."""

from __future__ import annotations

from typing import Protocol

from listing.files import FileGroup, PartitionedFile
from listing.options import ListingOptions


class Splitter(Protocol):
    """What packing needs of a format: cut one file into byte ranges."""

    def split(self, file: PartitionedFile, target_bytes: int) -> list[PartitionedFile]: ...


def pack_file_groups(files: list[PartitionedFile], fmt: Splitter, options: ListingOptions,
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
