"""Listing this machine's files with ``os.scandir``: the local store's pages.

A listing walks only the directories its prefix can match: the directory part of the
prefix, then, of that directory's children, those whose name starts with the prefix's
last segment (``date=2020-03-`` lists the March folders, never the table). Each directory
is read once (:func:`~listing.storage.local_walk.read_dir`: sizes and times as Spark's file
index reads them). A directory's files become columns
(:class:`~listing.storage.dir_files.DirFiles`): no object per file.

A flat listing reaching a level of at least :data:`FAN_OUT_DIRECTORIES` directories on a
machine of several cores walks that level's subtrees in shares: the first here, each other
in a worker process running :mod:`~listing.storage.local_walk` (one ``lstat`` a file is
Python's work per file, which threads of one interpreter cannot share: measured, two
threads took longer than one). A worker that cannot start, or ends without finishing its
share, has its share walked here instead, so the pages are the same either way; a read
that fails in a worker fails the listing as it would here.

The keys are those fsspec's ``LocalFileSystem`` gives (``find`` for a flat listing, ``ls``
for a delimited one).
Invariant: a page's runs of files are in key order (a directory's children are visited in
the order of ``name + "/"`` for directories and ``name`` for files, which is the order of
the full paths).
"""

from __future__ import annotations

import datetime as dt
import marshal
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator

from listing.errors import StorageError
from listing.storage import local_walk
from listing.storage.dir_files import DirFiles
from listing.storage.local_walk import Items, WalkError, created_ns, may_hold, target_stat

__all__ = ["FAN_OUT_DIRECTORIES", "file_times", "local_pages", "may_hold", "stat_file"]

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICROSECOND = dt.timedelta(microseconds=1)

#: the fewest directories of one level that a flat listing shares out to worker processes
#: (starting one costs about as much as reading a few hundred small directories)
FAN_OUT_DIRECTORIES = 512
#: the most processes (this one included) a flat listing walks in
MAX_PROCESSES = 8


class _Dir:
    """One directory read: ``items``, its files (as runs of consecutive files) and child
    directories (paths) interleaved in key order; ``dirs``, those child directories."""

    __slots__ = ("items", "dirs")

    def __init__(self, directory: str, items: Items) -> None:
        base = directory if directory.endswith("/") else directory + "/"
        self.items: list[DirFiles | str] = [
            item if isinstance(item, str) else DirFiles.of_joined(base, *item)
            for item in items]
        self.dirs: list[str] = [item for item in items if isinstance(item, str)]


def _read(directory: str, name_prefix: str = "",
          keep: Callable[[str], bool] | None = None) -> _Dir | None:
    """The children of ``directory`` whose name starts with ``name_prefix`` (None: it is
    gone, or is no directory). ``keep(path)``: whether a child directory may hold wanted
    keys (None: all may)."""
    try:
        items = local_walk.read_dir(directory, name_prefix, keep)
    except WalkError as err:
        raise StorageError(str(err)) from None
    return None if items is None else _Dir(directory, items)


def file_times(st: os.stat_result) -> tuple[int, float]:
    """A local file's modification time as listed, in microseconds since the epoch, and
    its version: the inode change time, which a rewrite changes and no one can set back
    (``os.utime`` sets the mtime, and changes the ctime).
    The time is the nanoseconds truncated, so milliseconds truncated from it are what
    Java's ``File.lastModified`` and so Spark's file index report; a time of 0 falls back
    to the creation (on Linux, change) time."""
    return (st.st_mtime_ns or created_ns(st)) // 1000, st.st_ctime


def stat_file(path: str) -> tuple[int, dt.datetime, str]:
    """(size, modification time, version) of the local file ``path`` as a listing has
    them (a link: its target's; the version spelled as
    :meth:`~listing.storage.dir_files.DirFiles.etag` spells it); raises
    ``FileNotFoundError`` when it is gone."""
    st = os.lstat(path)
    size = st.st_size
    if os.path.islink(path):
        st, size = target_stat(path, st)
    micros, ctime = file_times(st)
    return size, _EPOCH + micros * _MICROSECOND, f"ctime:{ctime!r}"


def local_pages(prefix: str, delimiter: bool, start_after: str | None,
                stop_after: str | None, on_directory: Callable[[], None] | None = None,
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
    workers: list[_Worker] = []
    try:
        _walk(top.dirs, read, read_dirs, workers, start_after, stop_after)
        for worker in workers:
            found = worker.result()
            if found is None:  # it did not finish: its share is walked here
                _walk(worker.directories, read, read_dirs, None, start_after, stop_after)
                continue
            for directory, read_dir in found.items():
                if on_directory is not None:
                    on_directory()
                if read_dir is not None:
                    read_dirs[directory] = read_dir
    finally:
        for worker in workers:
            worker.close()
    runs: list[DirFiles] = []
    _collect(read_dirs, parent, runs)
    del read_dirs, top  # only the runs are held while the page is read
    yield bounded(runs), []


def _walk(level: list[str], read: Callable[[str], _Dir | None], read_dirs: dict[str, _Dir],
          workers: list[_Worker] | None, start_after: str | None, stop_after: str | None
          ) -> None:
    """Read the subtrees of ``level`` into ``read_dirs``, a level at a time; the first
    level wide enough shared out to ``workers`` (None: none), each walking its share
    meanwhile."""
    while level:
        if (workers is not None and not workers and len(level) >= FAN_OUT_DIRECTORIES
                and (n := _processes()) > 1):
            shares = [level[len(level) * i // n:len(level) * (i + 1) // n] for i in range(n)]
            level = shares[0]
            workers += [_Worker(share, start_after, stop_after) for share in shares[1:]]
        below: list[str] = []
        for directory in level:
            found = read(directory)
            if found is not None:
                read_dirs[directory] = found
                below += found.dirs
        level = below


def _processes() -> int:
    """How many processes a flat listing may walk in: the cores this process may run
    on, at most :data:`MAX_PROCESSES`."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    return min(cores, MAX_PROCESSES)


class _Worker:
    """A share of a level (``directories``) walked in a worker process
    (:mod:`~listing.storage.local_walk` run as a script); its records are read once this
    process has walked its own share."""

    def __init__(self, directories: list[str], start_after: str | None,
                 stop_after: str | None) -> None:
        self.directories = directories
        self._proc: subprocess.Popen[bytes] | None = None
        self._sender: threading.Thread | None = None
        try:
            self._proc = subprocess.Popen(_worker_command(), stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except (OSError, ValueError):  # no interpreter to start: walked here
            return
        # sent from a thread: a share larger than the pipe holds would otherwise wait
        # here for the worker to start
        self._sender = threading.Thread(
            target=_send, args=(self._proc, marshal.dumps((directories, start_after,
                                                          stop_after))),
            name="listing-local-walk", daemon=True)
        self._sender.start()

    def result(self) -> dict[str, _Dir | None] | None:
        """Each directory the worker read (None: gone), once it has finished; None when it
        did not finish its share (none started, or it ended early). Raises the
        :class:`~listing.errors.StorageError` of a read that failed there."""
        proc = self._proc
        if proc is None or self._sender is None:
            return None
        self._sender.join()
        assert proc.stdout is not None
        found: dict[str, _Dir | None] = {}
        try:
            while (record := marshal.load(proc.stdout)) is not None:
                if record[0] == local_walk.ERROR:
                    raise StorageError(str(record[1]))
                _, directory, items = record
                decoded = local_walk.decode(items)
                found[directory] = None if decoded is None else _Dir(directory, decoded)
        except (OSError, EOFError, ValueError, TypeError):  # it ended early
            return None
        return found

    def close(self) -> None:
        """Stop the worker if it still runs, and wait for it."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            proc.kill()
        if self._sender is not None:
            self._sender.join()
        if proc.stdout is not None:
            proc.stdout.close()
        proc.wait()


def _worker_command() -> list[str]:
    """A worker: this interpreter, isolated (no environment, no site packages: the walk
    needs the standard library only), running :mod:`~listing.storage.local_walk`."""
    return [sys.executable, "-I", "-S", local_walk.__file__]


def _send(proc: subprocess.Popen[bytes], share: bytes) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(share)
        proc.stdin.close()
    except OSError:  # it ended: its result says so
        pass


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
            st, size = target_stat(path, st)
    except OSError:
        return None
    directory, _, name = path.rpartition("/")
    run = DirFiles(directory + "/")
    run.append(name, size, *file_times(st))
    return run.compact()
