"""Packing files into the groups Spark tasks read, with Spark's own sizing rule."""

from __future__ import annotations

import dataclasses
import heapq
from array import array
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np

from listing.errors import ListingError
from listing.file_columns import FileColumns, GroupColumns
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


def pack_file_groups(files: FileColumns, fmt: Splitter, options: ListingOptions,
                     min_partitions: int | None = None, *, metadata_only: bool = False,
                     read_share: float = 1.0) -> list[FileGroup]:
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

    The groups are made of the plan's columns (:class:`GroupColumns`: their files made on
    request). A format's ``split`` must cut a file into byte ranges of it
    (:meth:`~listing.formats.base.FileFormat.split`); other pieces raise
    :class:`~listing.errors.ListingError`.
    """
    everything = np.arange(len(files), dtype=np.int64)
    packed = _pack_columns(files, everything, fmt, options, min_partitions, metadata_only,
                           read_share)
    return [FileGroup.of_columns(i, g) for i, g in enumerate(packed)]


class _Packed(NamedTuple):
    """Groups as arrays of piece indices (each in its group's order); ``counts``: pieces
    per file, None when no file was split."""

    groups: list[np.ndarray]
    counts: np.ndarray | None = None


def _pack(sizes: np.ndarray, piece_lengths: Callable[[], np.ndarray],
          split: Callable[[int, int], int], options: ListingOptions,
          min_partitions: int | None, metadata_only: bool, read_share: float) -> _Packed:
    """:func:`pack_file_groups` on files of ``sizes`` (int64, in order): ``split(i,
    file_split)`` splits file ``i`` into pieces and says how many; ``piece_lengths()``
    then gives every piece's length (pieces in file order, a split file's in its place)."""
    n = len(sizes)
    if n == 0:
        return _Packed([])
    parallelism = max(1, options.min_partitions or min_partitions or 1)  # the user's wins
    if metadata_only:
        count = min(parallelism, -(-n // METADATA_FILES_PER_TASK))
        cuts = [n * i // count for i in range(count + 1)]
        return _Packed([np.arange(cuts[i], cuts[i + 1]) for i in range(count)])
    open_cost = options.open_cost_in_bytes
    share = min(max(read_share, 1e-3), 1.0)
    # sizes as arrays (a plan may hold millions of files): the same integers, in the same
    # order, as the per-file arithmetic of Spark's rule
    total = int(_scaled(sizes, share).sum()) + open_cost * n
    max_split = min(options.max_partition_bytes, max(open_cost, total // parallelism))
    file_split = max(1, int(max_split / share))  # the same split, in the file's bytes
    big = np.flatnonzero(sizes > file_split)
    counts = None
    if big.size:  # most files fit a split
        counts = np.ones(n, np.int64)
        for i in big.tolist():
            counts[i] = split(i, file_split)
    lengths_all = piece_lengths()
    # largest first (stable, as Spark sorts); reordered as an array of indices, with
    # no integer object per piece
    scaled = _scaled(lengths_all, share)
    order = np.argsort(-scaled, kind="stable")
    lengths = np.ascontiguousarray(scaled[order], np.int64)
    sparks = _greedy_count(lengths, max_split, open_cost)
    needed = -(-int(scaled.sum()) // options.max_partition_bytes)
    # a file that cannot be split may alone hold more than maxPartitionBytes, so
    # ``needed`` can exceed Spark's count: never more groups than Spark makes
    count = min(max(parallelism * (sparks // parallelism), needed, 1), sparks, len(order))
    lengths += open_cost
    dest = lightest_first(lengths, count)
    del lengths
    by_group = np.argsort(dest, kind="stable")  # each group's pieces in the order taken
    bounds = np.zeros(count + 1, np.int64)
    np.cumsum(np.bincount(dest, minlength=count), out=bounds[1:])
    del dest
    ordered = order[by_group]
    del order, by_group
    return _Packed([ordered[bounds[g]:bounds[g + 1]] for g in range(count)], counts)


def _pack_columns(columns: FileColumns, idx: np.ndarray, fmt: Splitter,
                  options: ListingOptions, min_partitions: int | None, metadata_only: bool,
                  read_share: float) -> list[GroupColumns]:
    """:func:`pack_file_groups` of the files ``idx`` (in order) of ``columns``, as
    groups of columns."""
    ranges: list[tuple[int, int] | None] = []
    counts_of: dict[int, list[tuple[int, int] | None]] = {}

    def split(i: int, file_split: int) -> int:
        file = columns.file(int(idx[i]))
        parts = fmt.split(file, file_split)
        if not all(type(p) is PartitionedFile and p.path == file.path
                   and p.size == file.size and p.partition_values is file.partition_values
                   and p.last_modified == file.last_modified and p.etag == file.etag
                   for p in parts):
            raise ListingError(f"{type(fmt).__name__}.split cut {file.path} into pieces "
                               "that are not byte ranges of it: a plan's pieces are")
        counts_of[i] = [p.byte_range for p in parts]
        return len(parts)

    def piece_lengths() -> np.ndarray:
        sizes = columns.sizes[idx]
        if not counts_of:
            return sizes
        out: list[int] = []
        for i, size in enumerate(sizes.tolist()):
            got = counts_of.get(i)
            if got is None:
                out.append(size)
                ranges.append(None)
            else:
                out += [size if r is None else r[1] - r[0] for r in got]
                ranges.extend(got)
        return np.array(out, np.int64)

    pack = _pack(columns.sizes[idx], piece_lengths, split, options, min_partitions,
                 metadata_only, read_share)
    if pack.counts is None:
        return [columns.group(idx[g], None) for g in pack.groups]
    piece_file = np.repeat(idx, pack.counts)
    return [columns.group(piece_file[g], [ranges[k] for k in g.tolist()])
            for g in pack.groups]


def _scaled(lengths: np.ndarray, share: float) -> np.ndarray:
    """``int(length * share)`` of each length."""
    return lengths if share == 1.0 else (lengths * share).astype(np.int64)


def _greedy_count(lengths: Sequence[int] | np.ndarray, max_split: int, open_cost: int) -> int:
    """How many groups Spark's rule makes of pieces of ``lengths`` (largest first, a group
    closing when the next piece would overflow ``max_split``).

    A group starting at piece ``s`` takes each next piece ``k`` while the bytes charged
    from ``s`` up to ``k`` (lengths and open costs) plus ``k``'s length fit: with ``C``
    the running total of the charges, while ``C[k + 1] <= C[s] + max_split + open_cost``,
    a bound that ``C`` crosses once. So a group ends where a binary search of ``C`` says,
    one search a group, not one step a piece."""
    sizes = np.asarray(lengths, np.int64)
    n = len(sizes)
    if n == 0:
        return 0
    charged = np.zeros(n + 1, np.int64)
    np.cumsum(sizes + open_cost, out=charged[1:])
    if int(charged[-1]) // max(max_split, 1) > n // 8:  # groups of a few pieces: step
        return _greedy_count_stepped(sizes.tolist(), max_split, open_cost)
    count, start = 0, 0
    search = charged.searchsorted
    while start < n:
        end = int(search(charged[start] + max_split + open_cost, "right")) - 1
        start = max(end, start + 1)
        count += 1
    return count


def _greedy_count_stepped(lengths: Iterable[int], max_split: int, open_cost: int) -> int:
    """:func:`_greedy_count`, a piece at a time."""
    count, size = 0, 0
    for length in lengths:
        if count == 0 or size + length > max_split:
            count, size = count + 1, 0
        size += length + open_cost
    return count


#: fewer groups than this take their pieces one at a time (see :func:`lightest_first`)
_FEW_GROUPS = 64


def lightest_first(charges: np.ndarray, count: int) -> np.ndarray:
    """The group (of ``count``) each piece goes to when each piece, in order (``charges``:
    int64, largest first), goes to the group of least load so far, the lower group on a
    tie (LPT); the loads are the charges taken.

    While each of the next ``k`` pieces goes to the ``k`` lightest groups in turn, they are
    placed at once: that holds when the lightest load plus the ``k``-th charge exceeds
    the ``k``-th lightest load (each group given a piece is then heavier than every group
    not yet given one: charges only shrink). Where that batch is short, and for fewer than
    ``_FEW_GROUPS`` groups, pieces are placed one at a time from a heap of the loads. The
    result is the same either way, exactly."""
    n = len(charges)
    dest = np.empty(n, np.int64)
    if count < _FEW_GROUPS:
        loads = np.zeros(count, np.int64)
        _one_at_a_time(charges, loads, dest, 0, n)
        return dest
    groups = np.arange(count)
    loads = np.zeros(count, np.int64)
    order = groups.copy()  # the groups by (load, group)
    i = 0
    while i < n:
        m = min(count, n - i)
        lightest = loads[order[:m]]
        charge = charges[i:i + m]
        late = np.flatnonzero(lightest[0] + charge <= lightest)
        k = int(late[0]) if late.size else m
        if k < _FEW_GROUPS // 2 and m >= _FEW_GROUPS:  # a short batch: a stretch by heap
            j = min(n, i + count)
            _one_at_a_time(charges, loads, dest, i, j)
            order = np.lexsort((groups, loads))
            i = j
            continue
        k = max(k, 1)
        given = order[:k]
        dest[i:i + k] = given
        loads[given] += charge[:k]
        rest = np.concatenate([order[k:], given])
        order = rest[np.lexsort((rest, loads[rest]))]
        i += k
    return dest


def _one_at_a_time(charges: np.ndarray, loads: np.ndarray, dest: np.ndarray, start: int,
                   stop: int) -> None:
    """Pieces ``start`` to ``stop`` placed by :func:`lightest_first`'s rule one at a time,
    ``loads`` and ``dest`` updated: a heap of the loads, each number ``load << shift |
    group``, ordered as the pairs (load, group) without a tuple per piece."""
    count = len(loads)
    shift = count.bit_length()
    mask = (1 << shift) - 1
    # Python integers: a load shifted may not fit 64 bits
    heap = [load << shift | group for group, load in enumerate(loads.tolist())]
    heapq.heapify(heap)
    target = array("q")
    append = target.append
    replace = heapq.heapreplace
    for charge in charges[start:stop].tolist():
        top = heap[0]
        append(top & mask)
        replace(heap, top + (charge << shift))
    dest[start:stop] = np.frombuffer(target, np.int64)
    loads[[packed & mask for packed in heap]] = [packed >> shift for packed in heap]


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


def pack_by_partition_key(files: FileColumns, fmt: Splitter, options: ListingOptions,
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

    if not len(files):
        return KeyPacking([], False, "")
    if not files.values[0]:
        return by_size("key_grouped: the table has no partition columns")
    runs_of: dict[tuple[tuple[str, Any], ...], list[int]] = {}
    for r, values in enumerate(files.values):  # a run's files share its values
        runs_of.setdefault(tuple(values.items()), []).append(r)
    starts = files.starts.tolist()
    index_of = [np.concatenate([np.arange(starts[r], starts[r + 1]) for r in rs])
                for rs in runs_of.values()]
    lengths = [files.sizes[ix] for ix in index_of]
    keys = len(lengths)
    if keys < parallelism:
        return by_size(f"key_grouped: {keys} partition values for {parallelism} tasks")
    average = sum(int(ls.sum()) for ls in lengths) // keys
    if average < options.open_cost_in_bytes:
        return by_size(f"key_grouped: partition values average {average:,} bytes of files, "
                       "under open_cost_in_bytes")
    share = min(max(read_share, 1e-3), 1.0)
    biggest = max(int(_scaled(ls, share).sum()) for ls in lengths)
    if biggest > KEY_GROUP_MAX_SPLITS * options.max_partition_bytes:
        return by_size(f"key_grouped: a partition value holds {biggest:,} bytes to read, over "
                       f"{KEY_GROUP_MAX_SPLITS} x max_partition_bytes")
    one_core = dataclasses.replace(options, min_partitions=1)
    groups: list[FileGroup] = []
    for ix in index_of:
        value_groups = _pack_columns(files, ix, fmt, one_core, None, metadata_only, read_share)
        groups += [FileGroup.of_columns(len(groups) + i, g) for i, g in enumerate(value_groups)]
    return KeyPacking(groups, True, f"by partition value ({keys} values)")
