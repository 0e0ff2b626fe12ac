"""A directory's listed files as columns: a listing's pages without an object per file."""

from __future__ import annotations

import datetime as dt
from array import array
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from itertools import accumulate, count, repeat
from operator import add, attrgetter, is_

_UTC = dt.UTC
_MICROSECOND = dt.timedelta(microseconds=1)
_ZERO = dt.timedelta(0)
_tzinfo = attrgetter("tzinfo")


class DirFiles:
    """Files of one directory that follow one another in key order: ``directory`` (with
    its slash) and, per file, its name, size, modification time and version. A file's key
    is ``directory + name``. Invariant: names in key order, every column as long as the
    names.

    ``mtimes`` is either ``array("q")`` of microseconds since the epoch (the time is that
    instant in ``tz``, the zero-offset tzinfo the listing gave it: ``UTC`` for a local
    listing's, see :func:`~listing.storage.local_pages.file_times`, and an S3 listing's
    unless botocore parsed the page), or, where a listing's times are not all in one
    zero-offset tzinfo (one missing, naive, another offset: other fsspec stores), a list
    of the datetimes as listed.
    ``versions`` is either ``array("d")`` of inode change times (a local file's version,
    spelled ``ctime:<repr>``: :func:`~listing.storage.local_pages.file_times`)
    or a list of ETags as listed (without quotes; None: none).

    Filled by :meth:`append` (local) or given whole, then :meth:`compact`: the names
    become one string (names joined by ``"\0"``, which no file name holds) and the offset
    where each ends, not a string object a file. ``names`` is then a new list at each
    access (a directory at a time); :meth:`name` reads one."""

    __slots__ = ("directory", "_names", "_joined", "_ends", "sizes", "mtimes", "versions",
                 "tz")

    def __init__(self, directory: str, names: list[str] | None = None,
                 sizes: array | None = None,
                 mtimes: array | list[dt.datetime | None] | None = None,
                 versions: array | list[str | None] | None = None,
                 tz: dt.tzinfo = _UTC) -> None:
        self.directory = directory
        self._names: list[str] | None = names if names is not None else []
        self._joined = ""
        self._ends = _NO_ENDS
        self.sizes: array = sizes if sizes is not None else array("q")
        self.mtimes: array | list[dt.datetime | None] = (mtimes if mtimes is not None
                                                         else array("q"))
        self.versions: array | list[str | None] = (versions if versions is not None
                                                   else array("d"))
        self.tz = tz

    @classmethod
    def of_joined(cls, directory: str, joined: str, ends: array, sizes: array,
                  mtimes: array, versions: array) -> DirFiles:
        """A compacted local run given as :meth:`compact` makes it: the names joined by
        ``"\0"`` (none holding it) and where each ends, times in microseconds, versions
        as inode change times."""
        run = cls(directory, None, sizes, mtimes, versions)
        run._names = None
        run._joined = joined
        run._ends = ends
        return run

    @property
    def names(self) -> list[str]:
        """The files' names, in key order (a list to read, not to change)."""
        if self._names is not None:
            return self._names
        return self._joined.split("\0") if self._ends else []

    @property
    def joined_names(self) -> str:
        """The names joined by ``"\0"``, which no file name holds (once compacted, the
        string held: no new string a file)."""
        return "\0".join(self._names) if self._names is not None else self._joined

    def name(self, i: int) -> str:
        """File ``i``'s name."""
        if self._names is not None:
            return self._names[i]
        ends = self._ends
        return self._joined[ends[i - 1] + 1 if i else 0:ends[i]]

    def compact(self) -> DirFiles:
        """The names as one string (no more :meth:`append`); this run, or the run as it is
        when a name holds ``"\0"``."""
        names = self._names
        if names is None or not names:
            return self
        joined = "\0".join(names)
        if joined.count("\0") != len(names) - 1:  # a name holds the separator
            return self
        # where each name ends: the lengths so far, and a separator before each but the first
        ends = array("i" if len(joined) < 2**31 else "q",
                     map(add, accumulate(map(len, names)), count()))
        self._joined = joined
        self._ends = ends
        self._names = None
        return self

    def __len__(self) -> int:
        return len(self.sizes)

    def append(self, name: str, size: int, mtime: int, ctime: float) -> None:
        """One local file (``mtime`` in microseconds, ``ctime`` in seconds)."""
        assert self._names is not None, "a compacted run takes no more files"
        assert isinstance(self.versions, array), "a run of ETags is given whole"
        assert isinstance(self.mtimes, array), "a run of datetimes is given whole"
        self._names.append(name)
        self.sizes.append(size)
        self.mtimes.append(mtime)
        self.versions.append(ctime)

    def taken(self, keep: Sequence[int]) -> DirFiles:
        """The files at positions ``keep`` (ascending), as another run."""
        names, sizes, mtimes, versions = self.names, self.sizes, self.mtimes, self.versions
        return DirFiles(self.directory, [names[i] for i in keep],
                        array("q", [sizes[i] for i in keep]),
                        (array(mtimes.typecode, [mtimes[i] for i in keep])
                         if isinstance(mtimes, array) else [mtimes[i] for i in keep]),
                        (array("d", [versions[i] for i in keep])
                         if isinstance(versions, array) else [versions[i] for i in keep]),
                        self.tz).compact()

    def paths(self) -> Iterator[str]:
        directory = self.directory
        return (directory + name for name in self.names)

    @property
    def in_datetimes(self) -> bool:
        """Whether the times are the listed datetimes themselves (not microseconds: see
        the class)."""
        return not isinstance(self.mtimes, array)

    def times(self) -> list[dt.datetime | None]:
        """Each file's modification time, as a datetime in ``tz`` (as listed: with
        :attr:`in_datetimes`)."""
        if not isinstance(self.mtimes, array):
            return list(self.mtimes)
        epoch = _epoch(self.tz)
        return [epoch + m * _MICROSECOND for m in self.mtimes]

    def time(self, i: int) -> dt.datetime | None:
        """File ``i``'s modification time."""
        if not isinstance(self.mtimes, array):
            return self.mtimes[i]
        return _epoch(self.tz) + self.mtimes[i] * _MICROSECOND

    def etags(self) -> list[str | None]:
        """Each file's version: its ETag, or a local file's change time as spelled."""
        versions = self.versions
        if isinstance(versions, array):
            return list(map("ctime:{!r}".format, versions))
        return list(versions)

    def etag(self, i: int) -> str | None:
        """File ``i``'s version (see :meth:`etags`)."""
        v = self.versions[i]
        return f"ctime:{v!r}" if isinstance(self.versions, array) else v

    def __repr__(self) -> str:
        return f"DirFiles({self.directory!r}, {len(self)} files)"


def _epoch(tz: dt.tzinfo) -> dt.datetime:
    return _EPOCH_UTC if tz is _UTC else dt.datetime(1970, 1, 1, tzinfo=tz)


_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=_UTC)
_NO_ENDS = array("i")


def micros_of(times: Sequence[dt.datetime | None]) -> tuple[array, dt.tzinfo] | None:
    """Listed modification times as microseconds since the epoch and the tzinfo they
    share, from which :meth:`DirFiles.time` makes each again (equal, in that tzinfo);
    None when one is missing or they are not all in one zero-offset tzinfo."""
    if not times:
        return array("q"), _UTC
    if None in times:
        return None
    tz = times[0].tzinfo  # type: ignore[union-attr]
    if not all(map(is_, map(_tzinfo, times), repeat(tz))):  # the same object (some
        return None  # tzinfo classes compare equal to others and are not hashable)
    if tz is None or tz.utcoffset(None) != _ZERO:
        return None
    epoch = _epoch(tz)
    # a batch written at once shares its times: each distinct one computed once
    micros = {t: (t - epoch) // _MICROSECOND for t in dict.fromkeys(times)}  # type: ignore[operator]
    return array("q", map(micros.__getitem__, times)), tz


def runs_of(head: str, keys: list[str], sizes: Sequence[int],
            micros: array | list[dt.datetime | None], etags: list[str | None],
            tz: dt.tzinfo = _UTC) -> list[DirFiles]:
    """Listed keys (below ``head``, in key order; no key ends in "/") and their columns
    (``micros``: microseconds in ``tz``, or the datetimes as listed: see
    :class:`DirFiles`) as runs of consecutive keys of one directory each."""
    runs: list[DirFiles] = []
    start, n = 0, len(keys)
    while start < n:
        first = keys[start]
        d = first[:first.rfind("/") + 1]
        cut = len(d)
        # in key order, a directory's keys end before d + the greatest character: its
        # files, unless a subdirectory's keys lie among them (or the keys are out of order)
        end = max(bisect_right(keys, d + _LAST, start), start + 1)
        chunk = keys[start:end]
        names = [key[cut:] for key in chunk]
        if not all(map(str.startswith, chunk, repeat(d))) or "/" in "".join(names):
            end = start + 1  # one key at a time
            while end < n and keys[end].startswith(d) and "/" not in keys[end][cut:]:
                end += 1
            names = [key[cut:] for key in keys[start:end]]
        runs.append(DirFiles(head + d, names, array("q", sizes[start:end]),
                             micros[start:end], etags[start:end], tz).compact())
        start = end
    return runs


_LAST = chr(0x10FFFF)
