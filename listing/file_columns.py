"""The kept files of a scan as columns: the one form a plan holds on the driver.

Every listing hands each directory's files over as columns
(:class:`~listing.storage.dir_files.DirFiles`: a local scandir's, an S3 page's, the
listing cache's answers, another fsspec store's); a scan keeps those runs as they are,
with each run's directory URL and partition values once, so that planning makes no Python
object per file. Files chosen otherwise (a stream's batch: ``plan_files``) become runs
too (:meth:`FileColumns.of_files`). Packing works on the runs' sizes (NumPy), a file
group is a list of file indices into them (:class:`GroupColumns`), and a
:class:`PartitionedFile` is made only when someone asks for ``plan.files`` or
``group.files`` (``whole_file(head + name, size, values, run.time(i), run.etag(i))``),
files of one run sharing its values.
"""

from __future__ import annotations

import datetime as dt
import pickle
from array import array
from collections.abc import Mapping, Sequence
from itertools import repeat
from typing import Any

import numpy as np

from listing.files import PartitionedFile, joined, packed, set_range, whole_file
from listing.storage.dir_files import DirFiles, micros_of

_UTC = dt.UTC


class FileColumns:
    """Files of one plan as runs of one directory each, in plan (key) order: per run its
    directory's URL ``head`` (with its slash), its partition ``values`` (shared by its
    files: read them, never change them) and its :class:`DirFiles`; ``sizes``, every
    file's size in plan order (int64). Invariant: ``starts[r]`` is run ``r``'s first file,
    ``starts[-1]`` the number of files; runs are never changed once added."""

    __slots__ = ("heads", "values", "runs", "starts", "sizes", "_keys", "_list", "_times")

    def __init__(self, runs: Sequence[tuple[str, DirFiles, Mapping[str, Any]]] = ()) -> None:
        self.heads: list[str] = [head for head, _, _ in runs]
        self.runs: list[DirFiles] = [files for _, files, _ in runs]
        self.values: list[Mapping[str, Any]] = [values for _, _, values in runs]
        lengths = np.fromiter(map(len, self.runs), np.int64, len(self.runs))
        self.starts = np.zeros(len(self.runs) + 1, np.int64)
        np.cumsum(lengths, out=self.starts[1:])
        self.sizes = (np.concatenate([np.frombuffer(r.sizes, np.int64) for r in self.runs])
                      if self.runs else np.zeros(0, np.int64))
        self._keys: list[int] | None = None
        self._list: list[PartitionedFile] | None = None
        self._times: set[bool] | None = None

    def time_kinds(self) -> set[bool]:
        """The kinds of its runs' times: whether microseconds in ``UTC``, each (found
        once)."""
        if self._times is None:
            self._times = {_in_utc_micros(run) for run in self.runs}
        return self._times

    def __len__(self) -> int:
        return int(self.starts[-1])

    def __repr__(self) -> str:
        return f"FileColumns({len(self)} files in {len(self.runs)} runs)"

    @classmethod
    def of_files(cls, files: Sequence[PartitionedFile]) -> FileColumns:
        """Whole files chosen already (a stream's batch, a caller's own listing) as runs:
        consecutive files of one directory that share one partition-values object make
        one run; :meth:`files` gives them back equal, in order, sharing those objects.
        Raises ``ValueError`` for a byte range or a subclass of :class:`PartitionedFile`
        (a plan's files are whole, and only their fields are kept)."""
        runs: list[tuple[str, DirFiles, Mapping[str, Any]]] = []
        start, n = 0, len(files)
        while start < n:
            first = files[start]
            _check_whole(first)
            cut = first.path.rfind("/") + 1
            head, values = first.path[:cut], first.partition_values
            end = start + 1
            while end < n and (f := files[end]).partition_values is values \
                    and f.path.rfind("/") + 1 == cut and f.path.startswith(head):
                _check_whole(f)
                end += 1
            chunk = files[start:end]
            times = [f.last_modified for f in chunk]
            in_micros = micros_of(times)
            run = DirFiles(head, [f.path[cut:] for f in chunk], array("q", [f.size for f in chunk]),
                           in_micros[0] if in_micros is not None and in_micros[1] is _UTC
                           else times, [f.etag for f in chunk]).compact()
            runs.append((head, run, values))
            start = end
        return cls(runs)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FileColumns):
            return self.files() == other.files()
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable caches: unhashable

    # --- rows, on request -----------------------------------------------------------------
    def files(self) -> list[PartitionedFile]:
        """Every file as a :class:`PartitionedFile`, in plan order (made once, then kept)."""
        if self._list is None:
            out: list[PartitionedFile] = []
            for head, run, values in zip(self.heads, self.runs, self.values, strict=True):
                out += map(whole_file, map(head.__add__, run.names), run.sizes,
                           repeat(values), run.times(), run.etags())
            self._list = out
        return self._list

    def file(self, i: int) -> PartitionedFile:
        """File ``i`` (in plan order)."""
        r = int(np.searchsorted(self.starts, i, "right")) - 1
        run, o = self.runs[r], i - int(self.starts[r])
        return whole_file(self.heads[r] + run.name(o), run.sizes[o], self.values[r],
                          run.time(o), run.etag(o))

    def locate(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(run, position in its run) of each file index of ``idx``."""
        runs = np.searchsorted(self.starts, idx, "right") - 1
        return runs, idx - self.starts[runs]

    def dir_keys(self) -> list[int]:
        """Per run, a number for its (head, values object): runs of one directory that
        share their values (a directory's files split by a subdirectory) share it, as a
        group's pickled columns have one slot for them."""
        if self._keys is None:
            seen: dict[tuple[str, int], int] = {}
            self._keys = [seen.setdefault((h, id(v)), len(seen))
                          for h, v in zip(self.heads, self.values, strict=True)]
        return self._keys

    def group(self, idx: np.ndarray, ranges: list[tuple[int, int] | None] | None
              ) -> GroupColumns:
        return GroupColumns(self, idx, ranges)


class GroupColumns:
    """The files of one file group: indices into a plan's :class:`FileColumns`, in the
    group's order, and each one's byte range (None: all whole). What a
    :class:`~listing.files.FileGroup` made from columns holds in place of its files."""

    __slots__ = ("columns", "idx", "ranges")

    def __init__(self, columns: FileColumns, idx: np.ndarray,
                 ranges: list[tuple[int, int] | None] | None) -> None:
        self.columns = columns
        self.idx = idx
        self.ranges = ranges if ranges is not None and any(ranges) else None

    def __len__(self) -> int:
        return len(self.idx)

    @property
    def bytes(self) -> int:
        if self.ranges is None:
            return int(self.columns.sizes[self.idx].sum())
        sizes = self.columns.sizes[self.idx].tolist()
        return sum(s if r is None else r[1] - r[0]
                   for s, r in zip(sizes, self.ranges, strict=True))

    def files(self, n: int | None = None) -> tuple[PartitionedFile, ...]:
        """The group's first ``n`` files (None: all) as :class:`PartitionedFile`."""
        cols = self.columns
        idx = self.idx if n is None else self.idx[:n]
        made = cols._list
        if made is not None and self.ranges is None:  # the plan's files, made already
            return tuple(made[i] for i in idx.tolist())
        runs, offsets = cols.locate(idx)
        out = []
        for k, (r, o) in enumerate(zip(runs.tolist(), offsets.tolist(), strict=True)):
            run = cols.runs[r]
            f = whole_file(cols.heads[r] + run.name(o), run.sizes[o], cols.values[r],
                           run.time(o), run.etag(o))
            if self.ranges is not None and self.ranges[k] is not None:
                set_range(f, self.ranges[k])
            out.append(f)
        return tuple(out)

    def pickled(self) -> tuple[Any, ...]:
        """The columns :func:`~listing.files.group_columns` makes of :meth:`files`, made
        from these columns: the same values, so the same pickled bytes."""
        cols = self.columns
        idx = self.idx
        runs, offsets = cols.locate(idx)
        keys = cols.dir_keys()
        heads, all_values, all_runs = cols.heads, cols.values, cols.runs
        slots: dict[int, int] = {}  # a directory's key -> its slot, in order of first file
        dirs: list[str] = []
        values: list[Mapping[str, Any]] = []
        slot_of = array("i")
        names: list[str] = []
        mtimes: list[Any] = []  # seconds, microseconds or datetimes
        etags: list[str | None] = []
        for r, o in zip(run_list := runs.tolist(), offsets.tolist(), strict=True):
            key = keys[r]
            slot = slots.get(key)
            if slot is None:
                slot = slots[key] = len(dirs)
                dirs.append(heads[r])
                values.append(all_values[r])
            slot_of.append(slot)
            run = all_runs[r]
            names.append(run.name(o))
            mtimes.append(run.mtimes[o])
            etags.append(run.etag(o))
        return (joined(dirs), packed(pickle.dumps(values, pickle.HIGHEST_PROTOCOL)),
                packed(slot_of.tobytes()), joined(names),
                packed(cols.sizes[idx].astype(np.int64).tobytes()),
                self.ranges, _group_times(cols, run_list, offsets, mtimes),
                None if all(e is None for e in etags) else etags)


def _check_whole(file: PartitionedFile) -> None:
    if type(file) is not PartitionedFile or file.byte_range is not None:
        raise ValueError(f"a plan's files are whole PartitionedFile values, got {file!r}")


def _group_times(cols: FileColumns, runs: list[int], offsets: np.ndarray,
                 mtimes: list[Any]) -> bytes | list[dt.datetime | None]:
    """A group's times (its files' runs, offsets in them and ``mtimes`` values) as
    :func:`~listing.files.group_columns` has them: packed microseconds when all are in
    ``UTC``, else the datetimes."""
    all_runs = cols.runs
    kinds = cols.time_kinds()  # the plan's, else the group's own
    if len(kinds) > 1:
        kinds = {_in_utc_micros(all_runs[r]) for r in set(runs)}
    if kinds == {True}:  # microseconds in UTC (a local or S3 listing's, the cache's)
        return packed(np.array(mtimes, np.int64).tobytes())
    # another tzinfo (botocore's own), times as listed, or runs of several kinds: each
    # time made (or taken as listed)
    times = [all_runs[r].time(o) for r, o in zip(runs, offsets.tolist(), strict=True)]
    found = micros_of(times)
    return packed(found[0].tobytes()) if found is not None and found[1] is _UTC else times


def run_micros(run: DirFiles) -> np.ndarray:
    """A run's modification times as microseconds since the epoch: the instants of
    :meth:`~listing.storage.dir_files.DirFiles.time`; not for a run of datetimes kept as
    listed (:attr:`~listing.storage.dir_files.DirFiles.in_datetimes`)."""
    mtimes = run.mtimes
    assert isinstance(mtimes, array), "a run of datetimes has no microseconds"
    return np.frombuffer(mtimes, np.int64)


def _in_utc_micros(run: DirFiles) -> bool:
    return run.tz is _UTC and not run.in_datetimes

