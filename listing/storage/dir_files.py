"""A directory's listed files as columns: the local lister's pages without an object per
file."""

from __future__ import annotations

import datetime as dt
from array import array
from collections.abc import Iterator
from itertools import repeat

_UTC = dt.UTC
_fromtimestamp = dt.datetime.fromtimestamp


class DirFiles:
    """Files of one directory that follow one another in key order: ``directory`` (with
    its slash) and, per file, its name, size, modification time and inode change time
    (seconds). A file's key is ``directory + name``; its version (ETag) is its change time
    spelled ``ctime:<repr>``, as :func:`~listing.storage.lister.local_version` spells it.
    Invariant: names in key order, every column as long as ``names``."""

    __slots__ = ("directory", "names", "sizes", "mtimes", "ctimes")

    def __init__(self, directory: str, names: list[str] | None = None,
                 sizes: array | None = None, mtimes: array | None = None,
                 ctimes: array | None = None) -> None:
        self.directory = directory
        self.names: list[str] = names if names is not None else []
        self.sizes: array = sizes if sizes is not None else array("q")
        self.mtimes: array = mtimes if mtimes is not None else array("d")
        self.ctimes: array = ctimes if ctimes is not None else array("d")

    def __len__(self) -> int:
        return len(self.names)

    def append(self, name: str, size: int, mtime: float, ctime: float) -> None:
        self.names.append(name)
        self.sizes.append(size)
        self.mtimes.append(mtime)
        self.ctimes.append(ctime)

    def taken(self, keep: list[int]) -> DirFiles:
        """The files at positions ``keep`` (ascending), as another run."""
        names, sizes, mtimes, ctimes = self.names, self.sizes, self.mtimes, self.ctimes
        return DirFiles(self.directory, [names[i] for i in keep],
                        array("q", [sizes[i] for i in keep]),
                        array("d", [mtimes[i] for i in keep]),
                        array("d", [ctimes[i] for i in keep]))

    def paths(self) -> Iterator[str]:
        directory = self.directory
        return (directory + name for name in self.names)

    def times(self) -> list[dt.datetime]:
        """Each file's modification time, as a UTC datetime."""
        return list(map(_fromtimestamp, self.mtimes, repeat(_UTC)))

    def etags(self) -> list[str]:
        return list(map("ctime:{!r}".format, self.ctimes))

    def __repr__(self) -> str:
        return f"DirFiles({self.directory!r}, {len(self.names)} files)"
