"""Reading local directories: one directory's children as a listing needs them, and a
share of a tree walked by a worker process.

A directory is read once with ``os.scandir``; the ``DirEntry`` says whether a child is a
directory without a ``stat``, and the one ``lstat`` a file needs gives its size and
modification time. A symlink is a file of its target's size and times (0 bytes and the
link's own times when dangling), and a time is microseconds truncated from the
nanoseconds (a time of 0: the creation, on Linux change, time), as Spark's file index
(Java's ``File.length`` and ``File.lastModified``) has them.

Only the standard library is imported here: a worker process runs this file as a script
(``python -I -S local_walk.py``). It reads its share, ``(directories, start_after,
stop_after)``, as one ``marshal`` value on standard input, walks each directory's subtree
depth first, and writes one ``marshal`` record per directory read to standard output
(:data:`DIRECTORY`, the path, and its items or None when it is gone; an :data:`ERROR`
record with the message of a failed read), then ``None``, once the share is done. The parent
(:mod:`listing.storage.local_pages`) reads the same records it would have made itself.
"""

from __future__ import annotations

import marshal
import os
import sys
from array import array
from collections.abc import Callable, Iterator
from itertools import accumulate, count
from operator import add, attrgetter
from typing import Any, BinaryIO

#: a run of consecutive files of one directory: names joined by "\0" (which no file name
#: holds), where each name ends, and their sizes, modification times (microseconds since
#: the epoch) and inode change times (seconds), all as arrays
FileRun = tuple[str, array, array, array, array]
#: a directory's children in key order: runs of files and child directories (paths)
Items = list[FileRun | str]

DIRECTORY, ERROR = "d", "e"

_NAME = attrgetter("name")
_FORMAT, _LINK = 0o170000, 0o120000  # the file type bits of st_mode, a symlink's


class WalkError(OSError):
    """A directory or file could not be read; the message names it (``file://...``)."""


def read_dir(directory: str, name_prefix: str = "",
             keep: Callable[[str], bool] | None = None) -> Items | None:
    """The children of ``directory`` whose name starts with ``name_prefix``, in key order
    (None: it is gone, or is no directory). ``keep(path)``: whether a child directory may
    hold wanted keys (None: all may). Raises :class:`WalkError`."""
    base = directory if directory.endswith("/") else directory + "/"
    files: list[os.DirEntry[str]] = []
    dirs: list[str] = []
    try:
        with os.scandir(directory) as it:
            for found in it:
                if name_prefix and not found.name.startswith(name_prefix):
                    continue
                try:
                    is_dir = found.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                if is_dir:
                    dirs.append(found.name + "/")
                else:
                    files.append(found)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        raise WalkError(f"listing file://{directory} failed: {err}") from None
    files.sort(key=_NAME)
    if not dirs:
        run = _run(base, files) if files else None
        return [run] if run is not None else []
    dirs.sort()
    if not files:
        kept: Items = []
        for d in dirs:
            path = base + d[:-1]
            if keep is None or keep(path):
                kept.append(path)
        return kept
    # both: in key order, a directory's key being its name and a slash
    keyed = sorted([(d, None) for d in dirs] + [(f.name, f) for f in files])
    items: list[FileRun | str | None] = []
    entries: list[os.DirEntry[str]] = []
    for key, entry in keyed:
        if entry is not None:
            entries.append(entry)
            continue
        path = base + key[:-1]
        if keep is None or keep(path):  # a directory left out parts no run
            if entries:
                items.append(_run(base, entries))
                entries = []
            items.append(path)
    if entries:
        items.append(_run(base, entries))
    return [item for item in items if item is not None]


def _run(base: str, entries: list[os.DirEntry[str]]) -> FileRun | None:
    """The files ``entries`` (in key order) as a run; None when all are gone."""
    stats: list[os.stat_result] = []
    sizes: list[int] = []
    names: list[str] = []
    for entry in entries:
        try:
            st = entry.stat(follow_symlinks=False)
            size = st.st_size
            if st.st_mode & _FORMAT == _LINK:
                st, size = target_stat(entry, st)
        except FileNotFoundError:  # deleted since it was listed
            continue
        except OSError as err:
            raise WalkError(f"listing file://{base + entry.name} failed: {err}") from None
        names.append(entry.name)
        stats.append(st)
        sizes.append(size)
    if not names:
        return None
    joined = "\0".join(names)
    # where each name ends: the lengths so far, and a separator before each but the first
    ends = array("i" if len(joined) < 2**31 else "q",
                 map(add, accumulate(map(len, names)), count()))
    return (joined, ends, array("q", sizes),
            array("q", [(st.st_mtime_ns or created_ns(st)) // 1000 for st in stats]),
            array("d", [st.st_ctime for st in stats]))


def target_stat(entry: os.DirEntry[str] | str, own: os.stat_result
                ) -> tuple[os.stat_result, int]:
    """A link's target's stat and size; the link's own stat and 0 bytes when dangling."""
    try:
        st = entry.stat(follow_symlinks=True) if isinstance(entry, os.DirEntry) else os.stat(entry)
    except OSError:  # a dangling link
        return own, 0
    return st, st.st_size


def created_ns(st: os.stat_result) -> int:
    return getattr(st, "st_birthtime_ns", None) or st.st_ctime_ns


def may_hold(directory: str, start_after: str | None, stop_after: str | None) -> bool:
    """Whether keys below ``directory`` (no trailing slash) can lie in
    ``(start_after, stop_after]``."""
    head = directory + "/"
    if stop_after is not None and head > stop_after and not stop_after.startswith(head):
        return False
    return start_after is None or head >= start_after[:len(head)]


def walk(directories: list[str], start_after: str | None, stop_after: str | None
         ) -> Iterator[tuple[str, Items | None]]:
    """Every directory of the subtrees of ``directories`` whose keys may lie in the
    bounds, with its items (None: gone), depth first. Raises :class:`WalkError`."""

    def keep(path: str) -> bool:
        return may_hold(path, start_after, stop_after)

    stack = list(reversed(directories))
    while stack:
        directory = stack.pop()
        items = read_dir(directory, "", keep)
        yield directory, items
        if items:
            stack += reversed([item for item in items if isinstance(item, str)])


def encode(items: Items | None) -> Any:
    """``items`` as marshal writes them (arrays as their type code and bytes)."""
    if items is None:
        return None
    return [item if isinstance(item, str)
            else (item[0], item[1].typecode, *(a.tobytes() for a in item[1:]))
            for item in items]


def decode(value: Any) -> Items | None:
    """:func:`encode`'s ``items`` back."""
    if value is None:
        return None
    out: Items = []
    for item in value:
        if isinstance(item, str):
            out.append(item)
            continue
        joined, ends_code, ends, sizes, mtimes, ctimes = item
        out.append((joined, _array(ends_code, ends), _array("q", sizes),
                    _array("q", mtimes), _array("d", ctimes)))
    return out


def _array(code: str, data: bytes) -> array:
    out = array(code)
    out.frombytes(data)
    return out


def serve(stdin: BinaryIO, stdout: BinaryIO) -> None:
    """A worker's whole life: its share from ``stdin``, walked whole, then its records
    to ``stdout`` (held until the share is done: the parent reads them once its own share
    is done, and a worker blocked on a full pipe would walk no further meanwhile)."""
    directories, start_after, stop_after = marshal.load(stdin)
    records: list[bytes] = []
    try:
        for directory, items in walk(directories, start_after, stop_after):
            records.append(marshal.dumps((DIRECTORY, directory, encode(items))))
    except WalkError as err:
        records.append(marshal.dumps((ERROR, str(err))))
    records.append(marshal.dumps(None))
    stdout.writelines(records)
    stdout.flush()


if __name__ == "__main__":
    serve(sys.stdin.buffer, sys.stdout.buffer)
