"""Listing this machine's files with ``os.scandir``: the local store's pages.

A listing walks only the directories its prefix can match: the directory part of the
prefix, then, of that directory's children, those whose name starts with the prefix's
last segment (``date=2020-03-`` lists the March folders, never the table). Each directory
is read once with ``os.scandir``; the ``DirEntry`` says whether a child is a directory
without a ``stat``, and the one ``lstat`` a file needs gives its size and modification
time. Directories of one level are read by a few threads at once (the system calls
release the interpreter). A directory's files become columns
(:class:`~listing.storage.dir_files.DirFiles`): no object per file.

The keys, sizes and times are those fsspec's ``LocalFileSystem`` gives (``find`` for a
flat listing, ``ls`` for a delimited one): a symlink is a file of its target's size
(0 when dangling) and the link's own time; a time of 0 falls back to the change time.
Invariant: a page's runs of files are in key order (a directory's children are visited in
the order of ``name + "/"`` for directories and ``name`` for files, which is the order of
the full paths).
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

from listing.errors import StorageError
from listing.storage.dir_files import DirFiles

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
    items: list[str | tuple[list[str], list[int], list[float], list[float]]] = []
    run: tuple[list[str], list[int], list[float], list[float]] | None = None
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
                size = _target_size(entry)
        except FileNotFoundError:  # deleted since it was listed
            continue
        except OSError as err:
            raise StorageError(f"listing file://{base + key} failed: {err}") from None
        if run is None:
            run = ([], [], [], [])
            items.append(run)
        run[0].append(key)
        run[1].append(size)
        run[2].append(st.st_mtime or _created(st))
        run[3].append(st.st_ctime)
    out.items = [item if isinstance(item, str)  # one string of names, not one a file
                 else DirFiles(base, item[0], array("q", item[1]), array("d", item[2]),
                               array("d", item[3])).compact() for item in items]
    return out


def _target_size(entry: os.DirEntry[str]) -> int:
    try:
        return entry.stat(follow_symlinks=True).st_size
    except OSError:  # a dangling link
        return 0


def _created(st: os.stat_result) -> float:
    return getattr(st, "st_birthtime", st.st_ctime)


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
        size = os.stat(path).st_size if os.path.islink(path) else st.st_size
    except OSError:
        return None
    directory, _, name = path.rpartition("/")
    run = DirFiles(directory + "/")
    run.append(name, size, st.st_mtime or _created(st), st.st_ctime)
    return run.compact()
