"""Listing this machine's files with ``os.scandir``: the local store's pages.

A listing walks only the directories its prefix can match: the directory part of the
prefix, then, of that directory's children, those whose name starts with the prefix's
last segment (``date=2020-03-`` lists the March folders, never the table). Each directory
is read once with ``os.scandir``; the ``DirEntry`` says whether a child is a directory
without a ``stat``, and the one ``lstat`` a file needs gives its size and modification
time. Directories of one level are read by a few threads at once (the system calls
release the interpreter). A directory's files become columns
(:class:`~listing.storage.dir_files.DirFiles`): no object per file.

The keys are those fsspec's ``LocalFileSystem`` gives (``find`` for a flat listing, ``ls``
for a delimited one); sizes and times are those Spark's file index reads (Hadoop's local
file system: ``File.length`` and ``File.lastModified``): a symlink is a file of its
target's size and times (0 bytes and the link's own times when dangling), and a time is
microseconds truncated from the nanoseconds, so that milliseconds truncated from it are
Java's (:func:`file_times`).
Invariant: a page's runs of files are in key order (a directory's children are visited in
the order of ``name + "/"`` for directories and ``name`` for files, which is the order of
the full paths).
"""

from __future__ import annotations

import datetime as dt
import os
from array import array
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

from listing.errors import StorageError
from listing.storage.dir_files import DirFiles

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICROSECOND = dt.timedelta(microseconds=1)

#: directories read at once by one flat listing
LOCAL_WORKERS = 2

class _Dir:
    """One directory read: ``items``, its files (as runs of consecutive files) and child
    directories (paths) interleaved in key order; ``dirs``, those child directories."""

    __slots__ = ("items", "dirs")

    def __init__(self) -> None:
        self.items: list[DirFiles | str] = []
        self.dirs: list[str] = []


def _read(directory: str, name_prefix: str = "",
          keep: Callable[[str], bool] | None = None) -> _Dir | None:
    """The children of ``directory`` whose name starts with ``name_prefix`` (None: it is
    gone, or is no directory). ``keep(path)``: whether a child directory may hold wanted
    keys (None: all may)."""
    base = directory if directory.endswith("/") else directory + "/"
    # (sort key, the entry of a file or None for a directory)
    children: list[tuple[str, os.DirEntry[str] | None]] = []
    try:
        with os.scandir(directory) as it:
            for found in it:
                name = found.name
                if name_prefix and not name.startswith(name_prefix):
                    continue
                try:
                    is_dir = found.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                children.append((name + "/", None) if is_dir else (name, found))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        raise StorageError(f"listing file://{directory} failed: {err}") from None
    children.sort()  # keys are unique: entries are never compared
    out = _Dir()
    dirs = out.dirs
    # child directories, and runs of files as lists (names, sizes, modification and change
    # times), each run made a DirFiles once read
    items: list[str | tuple[list[str], list[int], list[int], list[float]]] = []
    run: tuple[list[str], list[int], list[int], list[float]] | None = None
    for key, entry in children:
        if entry is None:
            path = base + key[:-1]
            if keep is None or keep(path):
                items.append(path)
                dirs.append(path)
                run = None
            continue
        try:
            st = entry.stat(follow_symlinks=False)
            size = st.st_size
            if entry.is_symlink():
                st, size = _target_stat(entry, st)
        except FileNotFoundError:  # deleted since it was listed
            continue
        except OSError as err:
            raise StorageError(f"listing file://{base + key} failed: {err}") from None
        if run is None:
            run = ([], [], [], [])
            items.append(run)
        run[0].append(key)
        run[1].append(size)
        run[2].append((st.st_mtime_ns or _created_ns(st)) // 1000)  # as file_times
        run[3].append(st.st_ctime)
    out.items = [item if isinstance(item, str)  # one string of names, not one a file
                 else DirFiles(base, item[0], array("q", item[1]), array("q", item[2]),
                               array("d", item[3])).compact() for item in items]
    return out


def _target_stat(entry: os.DirEntry[str] | str, own: os.stat_result
                 ) -> tuple[os.stat_result, int]:
    """A link's target's stat and size; the link's own stat and 0 bytes when dangling."""
    try:
        st = entry.stat(follow_symlinks=True) if isinstance(entry, os.DirEntry) else os.stat(entry)
    except OSError:  # a dangling link
        return own, 0
    return st, st.st_size


def file_times(st: os.stat_result) -> tuple[int, float]:
    """A local file's modification time as listed, in microseconds since the epoch, and
    its version: the inode change time, which a rewrite changes and no one can set back
    (``os.utime`` sets the mtime, and changes the ctime).
    The time is the nanoseconds truncated, so milliseconds truncated from it are what
    Java's ``File.lastModified`` and so Spark's file index report; a time of 0 falls back
    to the creation (on Linux, change) time."""
    return (st.st_mtime_ns or _created_ns(st)) // 1000, st.st_ctime


def _created_ns(st: os.stat_result) -> int:
    return getattr(st, "st_birthtime_ns", None) or st.st_ctime_ns


def stat_file(path: str) -> tuple[int, dt.datetime, str]:
    """(size, modification time, version) of the local file ``path`` as a listing has
    them (a link: its target's; the version spelled as
    :meth:`~listing.storage.dir_files.DirFiles.etag` spells it); raises
    ``FileNotFoundError`` when it is gone."""
    st = os.lstat(path)
    size = st.st_size
    if os.path.islink(path):
        st, size = _target_stat(path, st)
    micros, ctime = file_times(st)
    return size, _EPOCH + micros * _MICROSECOND, f"ctime:{ctime!r}"


def local_pages(prefix: str, delimiter: bool, start_after: str | None,
                stop_after: str | None, workers: int = LOCAL_WORKERS,
                on_directory: Callable[[], None] | None = None,
                ) -> Iterator[tuple[list[DirFiles], list[str]]]:
    """The one page (files as runs of one directory each, directories with their slash)
    of the keys below the local path ``prefix``, within ``(start_after, stop_after]``;
    ``delimiter``: the children of the prefix's directory only. Nothing when a delimited
    listing's directory does not exist; an empty page when a flat one's does not.
    ``on_directory`` is called for every directory read."""
    parent, _, name_prefix = prefix.rpartition("/")
    parent = parent or "/"

    def wanted(path: str) -> bool:
        return may_hold(path, start_after, stop_after)

    def read(directory: str, name_prefix: str = "") -> _Dir | None:
        if on_directory is not None:
            on_directory()
        return _read(directory, name_prefix, None if delimiter else wanted)

    def in_bounds(path: str) -> bool:
        return ((start_after is None or path > start_after)
                and (stop_after is None or path <= stop_after))

    def bounded(runs: list[DirFiles]) -> list[DirFiles]:
        if start_after is None and stop_after is None:
            return runs
        out = []
        for run in runs:
            keep = [i for i, path in enumerate(run.paths()) if in_bounds(path)]
            if len(keep) == len(run):
                out.append(run)
            elif keep:
                out.append(run.taken(keep))
        return out

    top = read(parent, name_prefix)
    if top is None:
        if os.path.isfile(parent) and not name_prefix:  # a file where a directory was named
            run = _file_run(parent)
            yield (bounded([run]) if run is not None else []), []
        elif not delimiter:
            yield [], []
        return
    if delimiter:
        yield (bounded([r for r in top.items if isinstance(r, DirFiles)]),
               [d + "/" for d in top.dirs if in_bounds(d)])
        return
    read_dirs: dict[str, _Dir] = {parent: top}
    level = list(top.dirs)
    pool = (ThreadPoolExecutor(workers, thread_name_prefix="listing-local")
            if workers > 1 and level else None)
    try:
        while level:
            below: list[str] = []
            if pool is None:
                found_dirs: Iterator[_Dir | None] = map(read, level)
            else:  # a few directories a task: one each costs more to hand over than to read
                size = -(-len(level) // (4 * workers))
                chunks = [level[i:i + size] for i in range(0, len(level), size)]
                found_dirs = (found for chunk in pool.map(lambda c: [read(d) for d in c], chunks)
                              for found in chunk)
            for directory, found in zip(level, found_dirs, strict=True):
                if found is not None:
                    read_dirs[directory] = found
                    below += found.dirs
            level = below
    finally:
        if pool is not None:
            pool.shutdown()
    runs: list[DirFiles] = []
    _collect(read_dirs, parent, runs)
    del read_dirs, top  # only the runs are held while the page is read
    yield bounded(runs), []


def may_hold(directory: str, start_after: str | None, stop_after: str | None) -> bool:
    """Whether keys below ``directory`` (no trailing slash) can lie in
    ``(start_after, stop_after]``."""
    head = directory + "/"
    if stop_after is not None and head > stop_after and not stop_after.startswith(head):
        return False
    return start_after is None or head >= start_after[:len(head)]


def _collect(read_dirs: dict[str, _Dir], top: str, runs: list[DirFiles]) -> None:
    """The runs of files below ``top``, in key order (depth first, children in key
    order)."""
    stack: list[Iterator[DirFiles | str]] = []
    found = read_dirs.get(top)
    if found is not None:
        stack.append(iter(found.items))
    append = runs.append
    while stack:
        for item in stack[-1]:
            if isinstance(item, DirFiles):
                append(item)
            else:
                child = read_dirs.get(item)
                if child is not None:
                    stack.append(iter(child.items))
                    break
        else:
            stack.pop()


def _file_run(path: str) -> DirFiles | None:
    """The file ``path`` alone, as a run."""
    try:
        st = os.lstat(path)
        size = st.st_size
        if os.path.islink(path):
            st, size = _target_stat(path, st)
    except OSError:
        return None
    directory, _, name = path.rpartition("/")
    run = DirFiles(directory + "/")
    run.append(name, size, *file_times(st))
    return run.compact()
