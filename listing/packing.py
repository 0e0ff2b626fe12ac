"""Packing files into the groups Spark tasks read, with Spark's own sizing rule."""

from __future__ import annotations

import dataclasses
import heapq
from typing import Any, Protocol

import numpy as np

from listing.files import FileGroup, PartitionedFile
from listing.options import ListingOptions


class Splitter(Protocol):
    """What packing needs of a format: cut one file into byte ranges."""

    def split(self, file: PartitionedFile, target_bytes: int) -> list[PartitionedFile]:
        """Pieces of a file bigger than ``target_bytes`` (a smaller one is not asked)."""


class _WholeFiles:
    """A splitter that keeps every file whole."""

    def split(self, file: PartitionedFile, target_bytes: int) -> list[PartitionedFile]:
        return [file]


WHOLE_FILES: Splitter = _WholeFiles()

#: the fewest files a group of a metadata-only read takes (unless it is the last): a
#: Python task costs more to run than a JVM one, about as much as 16 local footers,
#: and a task opens 4 files ahead (ReadSpec.prefetch), so 16 footers from an object store
#: cost about 4 round trips
METADATA_FILES_PER_TASK = 16


def pack_file_groups(files: list[PartitionedFile], fmt: Splitter, options: ListingOptions,
                     min_partitions: int | None = None, *,
                     metadata_only: bool = False, read_share: float = 1.0) -> list[FileGroup]:
    """Split big files with Spark's ``FilePartition`` sizing, then pack the pieces into as
    few balanced groups as that sizing allows, a multiple of the parallelism.

    ``maxSplitBytes = min(maxPartitionBytes, max(openCostInBytes, bytesPerCore))`` where
    ``bytesPerCore`` spreads the total (each file charged ``openCostInBytes`` extra) over
    ``min_partitions``. Spark then closes a group when the next piece would overflow
    ``maxSplitBytes``, which often leaves one group more than there are cores (3 files on
    2 cores: 3 tasks, a second wave for the third). A Python task costs tens of
    milliseconds more to start than a JVM one, so here the number of groups is Spark's
    rounded down to a multiple of the parallelism, never fewer than the data needs at
    ``maxPartitionBytes`` a group (the open cost is a charge for balance, not data), and
    pieces go largest first to the lightest group.

    ``read_share``: the part of each file's bytes the read fetches (Parquet reads only
    the projected columns' chunks; :meth:`ListingTable.read_share`). Sizes are scaled by
    it before any of the above, so groups are sized by the bytes a task fetches, not by
    the files' sizes (a projection of a few columns packs into fewer, fuller groups).

    ``metadata_only``: the read needs each file's metadata only (a Parquet ``count()``
    reads footers), so a file's bytes say nothing of its cost: whole files, in key order,
    go into at most one group per core, and a group takes at least
    ``METADATA_FILES_PER_TASK`` files (unless it is the last): the cost of such a read is
    a task's fixed start-up cost, not the files' bytes.
    """
    if not files:
        return []
    parallelism = max(1, options.min_partitions or min_partitions or 1)  # the user's wins
    if metadata_only:
        count = min(parallelism, -(-len(files) // METADATA_FILES_PER_TASK))
        cuts = [len(files) * i // count for i in range(count + 1)]
        return [FileGroup(i, tuple(files[cuts[i]:cuts[i + 1]])) for i in range(count)]
    open_cost = options.open_cost_in_bytes
    share = min(max(read_share, 1e-3), 1.0)
    # sizes as arrays (a plan may hold millions of files): the same integers, in the same
    # order, as the per-file arithmetic of Spark's rule
    sizes = np.fromiter((f.size for f in files), np.int64, len(files))
    total = int(_scaled(sizes, share).sum()) + open_cost * len(files)
    max_split = min(options.max_partition_bytes, max(open_cost, total // parallelism))
    file_split = max(1, int(max_split / share))  # the same split, in the file's bytes
    pieces: list[PartitionedFile] = files
    big = np.flatnonzero(sizes > file_split)
    if big.size:  # most files fit a split
        pieces = list(files)
        for i in big[::-1].tolist():
            pieces[i:i + 1] = fmt.split(files[i], file_split)
    # largest first (stable, as Spark sorts); reordered as an array of references, with
    # no integer object per piece
    scaled = _scaled(np.fromiter((p.length for p in pieces), np.int64, len(pieces)), share)
    order = np.argsort(-scaled, kind="stable")
    ordered = np.fromiter(pieces, object, len(pieces))[order]
    lengths: list[int] = scaled[order].tolist()
    sparks = _greedy_count(lengths, max_split, open_cost)
    needed = -(-sum(lengths) // options.max_partition_bytes)
    # a file that cannot be split may alone hold more than maxPartitionBytes, so
    # ``needed`` can exceed Spark's count: never more groups than Spark makes
    count = min(max(parallelism * (sparks // parallelism), needed, 1), sparks, len(ordered))
    groups: list[list[PartitionedFile]] = [[] for _ in range(count)]
    # a heap of the groups' loads, each number load << shift | group: ordered as the pairs
    # (load, group), without a tuple per piece
    shift = count.bit_length()
    mask = (1 << shift) - 1
    lightest = list(range(count))
    for piece, length in zip(ordered, lengths, strict=True):  # to the lightest group (LPT)
        top = lightest[0]
        groups[top & mask].append(piece)
        heapq.heapreplace(lightest, top + ((length + open_cost) << shift))
    return [FileGroup(i, tuple(g)) for i, g in enumerate(groups)]


def _scaled(lengths: np.ndarray, share: float) -> np.ndarray:
    """``int(length * share)`` of each length."""
    return lengths if share == 1.0 else (lengths * share).astype(np.int64)


def _greedy_count(lengths: list[int], max_split: int, open_cost: int) -> int:
    """How many groups Spark's rule makes of pieces of ``lengths`` (largest first, a group
    closing when the next piece would overflow ``max_split``)."""
    count, size = 0, 0
    for length in lengths:
        if count == 0 or size + length > max_split:
            count, size = count + 1, 0
        size += length + open_cost
    return count


#: a partition value whose files hold more than this many ``max_partition_bytes`` (of the
#: bytes a read fetches) keeps packing by size: under a key-grouped scan Spark reads all of
#: one value's groups in one task
KEY_GROUP_MAX_SPLITS = 4


@dataclasses.dataclass(frozen=True)
class KeyPacking:
    """Groups packed for a ``key_grouped`` read, and whether each holds one partition value."""

    groups: list[FileGroup]
    key_grouped: bool
    #: for ``explain()``: which packing was chosen, and why
    reason: str


def pack_by_partition_key(files: list[PartitionedFile], fmt: Splitter, options: ListingOptions,
                          min_partitions: int | None = None, *, metadata_only: bool = False,
                          read_share: float = 1.0) -> KeyPacking:
    """Groups that each hold files of one value of the partition columns (a value's files
    packed by :func:`pack_file_groups` as if on one core), when that pays; otherwise
    :func:`pack_file_groups`'s groups.

    Declined when the files have no partition values, when there are fewer values than
    the parallelism (tasks would idle), when the values' files average fewer bytes than
    ``open_cost_in_bytes`` (a Python task per value then costs more than the shuffle it
    saves: the key-grouped benchmark; file bytes, not the bytes a projection reads, so
    that the two sides of a self-join decide alike), or when one value
    holds more than ``KEY_GROUP_MAX_SPLITS`` times ``max_partition_bytes`` to read (Spark
    reads a value's groups in one task under a key-grouped scan).
    """
    parallelism = max(1, options.min_partitions or min_partitions or 1)

    def by_size(reason: str) -> KeyPacking:
        groups = pack_file_groups(files, fmt, options, min_partitions,
                                  metadata_only=metadata_only, read_share=read_share)
        return KeyPacking(groups, False, f"by size ({reason})")

    if not files:
        return KeyPacking([], False, "")
    if not files[0].partition_values:
        return by_size("key_grouped: the table has no partition columns")
    by_key: dict[tuple[tuple[str, Any], ...], list[PartitionedFile]] = {}
    for f in files:
        by_key.setdefault(tuple(f.partition_values.items()), []).append(f)
    if len(by_key) < parallelism:
        return by_size(f"key_grouped: {len(by_key)} partition values for {parallelism} "
                       "tasks")
    average = sum(f.length for f in files) // len(by_key)
    if average < options.open_cost_in_bytes:
        return by_size(f"key_grouped: partition values average {average:,} bytes of files, "
                       "under open_cost_in_bytes")
    share = min(max(read_share, 1e-3), 1.0)
    biggest = max(sum(int(f.length * share) for f in fs) for fs in by_key.values())
    if biggest > KEY_GROUP_MAX_SPLITS * options.max_partition_bytes:
        return by_size(f"key_grouped: a partition value holds {biggest:,} bytes to read, over "
                       f"{KEY_GROUP_MAX_SPLITS} x max_partition_bytes")
    one_core = dataclasses.replace(options, min_partitions=1)
    groups: list[FileGroup] = []
    for fs in by_key.values():
        for g in pack_file_groups(fs, fmt, one_core, metadata_only=metadata_only,
                                  read_share=read_share):
            groups.append(FileGroup(len(groups), g.files))
    return KeyPacking(groups, True, f"by partition value ({len(by_key)} values)")
