"""A directory's listed files as columns: the local lister's pages without an object per
file."""

from __future__ import annotations

import datetime as dt
from array import array
from collections.abc import Iterator
from itertools import accumulate, count, repeat
from operator import add

_UTC = dt.UTC
_fromtimestamp = dt.datetime.fromtimestamp


class DirFiles:
    """Files of one directory that follow one another in key order: ``directory`` (with
    its slash) and, per file, its name, size, modification time and inode change time
    (seconds). A file's key is ``directory + name``; its version (ETag) is its change time
    spelled ``ctime:<repr>``, as :func:`~listing.storage.lister.local_version` spells it.
    Invariant: names in key order, every column as long as the names.

    Filled by :meth:`append`, then :meth:`compact`: the names become one string (names
    joined by ``"\0"``, which no file name holds) and the offset where each ends, not a
    string object a file. ``names`` is then a new list at each access (a directory at a
    time); :meth:`name` reads one."""

    __slots__ = ("directory", "_names", "_joined", "_ends", "sizes", "mtimes", "ctimes")

    def __init__(self, directory: str, names: list[str] | None = None,
                 sizes: array | None = None, mtimes: array | None = None,
                 ctimes: array | None = None) -> None:
        self.directory = directory
        self._names: list[str] | None = names if names is not None else []
        self._joined = ""
        self._ends = _NO_ENDS
        self.sizes: array = sizes if sizes is not None else array("q")
        self.mtimes: array = mtimes if mtimes is not None else array("d")
        self.ctimes: array = ctimes if ctimes is not None else array("d")

    @property
    def names(self) -> list[str]:
        """The files' names, in key order (a list to read, not to change)."""
        if self._names is not None:
            return self._names
        return self._joined.split("\0") if self._ends else []

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

    def append(self, name: str, size: int, mtime: float, ctime: float) -> None:
        assert self._names is not None, "a compacted run takes no more files"
        self._names.append(name)
        self.sizes.append(size)
        self.mtimes.append(mtime)
        self.ctimes.append(ctime)

    def taken(self, keep: list[int]) -> DirFiles:
        """The files at positions ``keep`` (ascending), as another run."""
        names, sizes, mtimes, ctimes = self.names, self.sizes, self.mtimes, self.ctimes
        return DirFiles(self.directory, [names[i] for i in keep],
                        array("q", [sizes[i] for i in keep]),
                        array("d", [mtimes[i] for i in keep]),
                        array("d", [ctimes[i] for i in keep])).compact()

    def paths(self) -> Iterator[str]:
        directory = self.directory
        return (directory + name for name in self.names)

    def times(self) -> list[dt.datetime]:
        """Each file's modification time, as a UTC datetime."""
        return list(map(_fromtimestamp, self.mtimes, repeat(_UTC)))

    def etags(self) -> list[str]:
        return list(map("ctime:{!r}".format, self.ctimes))

    def __repr__(self) -> str:
        return f"DirFiles({self.directory!r}, {len(self)} files)"


_NO_ENDS = array("i")
