"""Listing keys: the counting :class:`Lister` and its pages of :class:`ObjectMeta`.

Listing is done page by page by us rather than by fsspec's helpers, because the planner
needs requests that fsspec does not expose (a partial-key prefix, ``StartAfter``, an early
stop) and because every page sent must be counted (``list_requests``, ``list_retries``).
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, TypeVar
from urllib.parse import unquote_plus

from fsspec.implementations.local import LocalFileSystem

from listing.errors import StorageError
from listing.metrics import Counters
from listing.storage.client import s3_call
from listing.storage.dir_files import DirFiles, micros_of, runs_of
from listing.storage.errors import raise_as, retry_attempts, storage_failure
from listing.storage.local_pages import local_pages, may_hold, stat_file
from listing.storage.s3_pages import columns_of
from listing.storage.spec import StorageSpec

log = logging.getLogger("listing.storage")

PAGE_SIZE = 1000
_T = TypeVar("_T")


class ObjectMeta(NamedTuple):
    """One listed object: fsspec path (no protocol), size, and what identifies its version.
    (A tuple: a long listing makes one per key, cheaper than a frozen dataclass:
    ``python -m bench.client_cpu``.)"""

    path: str
    size: int
    last_modified: dt.datetime | None = None
    etag: str | None = None


_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def decode_keys(keys: list[str]) -> list[str]:
    """S3's URL-encoded keys decoded as botocore decodes each (``unquote_plus``), a page at
    a time: a page's escapes are few and plain (``%3D`` in every Hive key), so each is
    replaced throughout the page at once. A page with any other escape (non-ASCII, ``%25``,
    a line break) or a ``%`` that starts none is decoded key by key."""
    joined = "\n".join(keys)
    percent = joined.count("%")
    if not percent:
        return joined.replace("+", " ").split("\n") if "+" in joined else keys
    # the escapes of the first key that has any are usually all the page holds (``%3D``):
    # counted, not collected; else every escape of the page
    first = next(key for key in keys if "%" in key)
    escapes = set(_ESCAPE.findall(first))
    if sum(joined.count(e) for e in escapes) != percent:
        found = _ESCAPE.findall(joined)
        escapes = set(found) if len(found) == percent else set()
    chars = {e: chr(int(e[1:], 16)) for e in escapes}
    # with every "%" starting an escape and none decoding to "%", no replacement can
    # make a new escape, so the order of the replacements does not matter
    if not chars or any(c > "\x7f" or c in "%\n" for c in chars.values()):
        return [unquote_plus(key) for key in keys]
    joined = joined.replace("+", " ")  # before the escapes, as unquote_plus does
    for escape, char in chars.items():
        joined = joined.replace(escape, char)
    return joined.split("\n")


class Page:
    """One listed page: its files in key order, its common prefixes (``dirs``, with their
    trailing slash), and whether more pages follow (``truncated``).

    Every page holds its files as columns, a run per directory (``runs``): a local or S3
    listing's are made so; a page given its files as :class:`ObjectMeta` (another fsspec
    store's, the listing cache's answers) makes its runs of them (:func:`runs_of_metas`).
    ``files`` makes the :class:`ObjectMeta` of runs once, when first asked for (a reader
    of the runs makes none). Invariant: until the runs are taken, ``files`` is their files
    in order.
    """

    __slots__ = ("_files", "dirs", "truncated", "runs")

    def __init__(self, files: list[ObjectMeta] | None = None, dirs: list[str] | None = None,
                 truncated: bool = False, *, runs: list[DirFiles] | None = None) -> None:
        self._files = files
        self.dirs: list[str] = dirs if dirs is not None else []
        self.truncated = truncated
        self.runs: list[DirFiles] | None = (runs if runs is not None
                                            else runs_of_metas(files or []))

    @property
    def files(self) -> list[ObjectMeta]:
        if self._files is None:
            if self.runs is None:
                raise RuntimeError("the page's runs were taken: its files are gone")
            self._files = _metas(self.runs)
        return self._files

    def take_runs(self) -> Iterator[DirFiles]:
        """The runs, each dropped from the page as it is handed over (its columns are
        freed once the reader is done with them): the last reader of a page of runs takes
        them; ``files`` is then gone, unless it was asked for before."""
        runs = self.runs or []
        self.runs = None
        runs.reverse()
        while runs:
            yield runs.pop()

    def last_key(self) -> str | None:
        """The greatest key of the page's files (None: it has none)."""
        if self.runs is not None:  # runs in key order
            run = next((r for r in reversed(self.runs) if len(r)), None)
            return None if run is None else run.directory + run.name(len(run) - 1)
        return max((m.path for m in self.files), default=None)

    @property
    def file_count(self) -> int:
        """``len(files)``, without making them."""
        if self._files is None:
            return sum(len(run) for run in self.runs or [])
        return len(self._files)

    def __repr__(self) -> str:
        return f"Page({self.file_count} files, {len(self.dirs)} dirs, " \
               f"truncated={self.truncated})"


def listed_page(head: str, keys: list[str], sizes: list[int],
                times: list[dt.datetime | None], etags: list[str | None], dirs: list[str],
                truncated: bool, stop_after: str | None = None) -> Page:
    """One page of an S3-like listing (keys and common prefixes below ``head``, in key
    order, decoded; per key its size, modification time and ETag) as the page the planner
    reads: the files as runs of one directory each (:class:`DirFiles`), no object per key;
    zero-byte folder markers (keys ending in "/") are no files. Keys and prefixes after
    ``stop_after`` are left out, and the page is then the listing's last. Times that
    cannot be microseconds (one missing, or not all in one zero-offset tzinfo) are kept
    as the datetimes listed."""
    last = max(max(keys, default=""), max(dirs, default=""))
    done = stop_after is not None and bool(last) and head + last > stop_after
    markers = "/\n" in "\n".join(keys) + "\n"  # zero-byte folder markers: no files
    if markers or done:
        limit = stop_after if done else None
        kept = [i for i, key in enumerate(keys)
                if not key.endswith("/") and (limit is None or head + key <= limit)]
        if len(kept) < len(keys):
            keys, sizes, times, etags = (_at(keys, kept), _at(sizes, kept), _at(times, kept),
                                         _at(etags, kept))
    if done:
        assert stop_after is not None
        dirs = [d for d in dirs if head + d <= stop_after]
    dirs = [head + d for d in dirs]
    more = truncated and not done
    in_micros = micros_of(times)
    if in_micros is None:
        return Page(None, dirs, more, runs=runs_of(head, keys, sizes, times, etags))
    micros, tz = in_micros
    return Page(None, dirs, more, runs=runs_of(head, keys, sizes, micros, etags, tz))


def runs_of_metas(files: list[ObjectMeta]) -> list[DirFiles]:
    """Listed files (in key order) as runs of one directory each: their times as UTC
    microseconds when all are in ``UTC`` (the same datetimes, made again), else as the
    datetimes listed (the same objects)."""
    if not files:
        return []
    paths, sizes, times, etags = map(list, zip(*files, strict=True))
    in_micros = micros_of(times)
    if in_micros is not None and in_micros[1] is dt.UTC:
        return runs_of("", paths, sizes, in_micros[0], etags)
    return runs_of("", paths, sizes, times, etags)


def _at(column: list[_T], kept: list[int]) -> list[_T]:
    return [column[i] for i in kept]


def _metas(runs: list[DirFiles]) -> list[ObjectMeta]:
    new = tuple.__new__
    return [new(ObjectMeta, row) for run in runs
            for row in zip(run.paths(), run.sizes, run.times(), run.etags(), strict=True)]


class Lister:
    """Lists keys under a (possibly partial) key prefix, one counted request per page.

    A page that fails after the client's retries ends the listing with an error (never a
    partial list): :class:`StorageError` naming the prefix, :class:`TableNotFoundError`
    for a missing bucket, :class:`StorageConfigError` for a request the client refuses.
    """

    def __init__(self, spec: StorageSpec, counters: Counters | None = None,
                 progress: Callable[[int, int], None] | None = None) -> None:
        self.spec = spec
        self.fs = spec.filesystem()
        #: where its requests are counted (``list_requests``, ``list_retries``): an
        #: operation's (a scan, an open) or its own
        self.counters = Counters() if counters is None else counters
        self.counters.start("list_requests", "list_retries")
        self.progress = progress  # called with (requests, keys) after every page
        self.keys = 0
        #: directories read by listings of a local or other non-S3 store (each ``ls``,
        #: ``find`` or ``os.scandir``): what a narrowed prefix saves there
        self.directories = 0
        # this machine's files are walked with os.scandir (a subclass of fsspec's local
        # filesystem may list differently: it is listed through fsspec)
        self._local = type(self.fs) is LocalFileSystem
        # the planner may list several prefixes at once from its threads: keys and progress
        # calls are updated under this lock, counts under the counters' own (s3fs runs
        # every request on its own event loop thread; our threads only wait for them)
        self._lock = threading.Lock()

    @property
    def splits_ranges(self) -> bool:
        """Whether one flat listing may be sent as several key ranges at once: the store
        lists in key order from ``StartAfter`` (S3), so a range costs its own pages; other
        stores list everything in one request and filter. A subclass that answers or keeps
        whole listings (the listing cache) says no."""
        return self.spec.is_s3

    @property
    def reads_directories(self) -> bool:
        """Whether a listing costs the directories it reads rather than its requests: a
        local or other non-S3 store reads one directory per delimited listing and per
        prefix that names a directory (``date=X/hour=7/``), every directory below for a
        flat one, in one request."""
        return not self.spec.is_s3

    def pages(self, prefix: str, *, delimiter: bool, start_after: str | None = None,
              stop_after: str | None = None) -> Iterator[Page]:
        """Pages of objects whose path starts with ``prefix``.

        ``start_after``/``stop_after`` bound the key range (exclusive/inclusive); stores
        that list in key order use them to skip pages, others filter.
        """
        pages = (self._s3_pages if self.spec.is_s3 else
                 self._local_pages if self._local else self._fs_pages)(
            prefix, delimiter, start_after, stop_after)
        for page in pages:
            with self._lock:
                self.keys += page.file_count + len(page.dirs)
                if self.progress is not None:
                    self.progress(self.counters["list_requests"], self.keys)
            yield page

    def _s3_pages(self, prefix: str, delimiter: bool, start_after: str | None,
                  stop_after: str | None) -> Iterator[Page]:
        bucket, _, key_prefix = prefix.partition("/")
        # URL-encoded keys (any key then fits in XML), decoded here and not by botocore:
        # its decoding key by key was a tenth of a page's CPU (see decode_keys)
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": key_prefix, "MaxKeys": PAGE_SIZE,
                                  "EncodingType": "url"}
        if delimiter:
            kwargs["Delimiter"] = "/"
        if start_after and start_after.startswith(bucket + "/"):
            kwargs["StartAfter"] = start_after[len(bucket) + 1:]
        while True:
            self.counters.add("list_requests")
            try:
                resp = s3_call(self.fs, "list_objects_v2", **kwargs)
            except Exception as err:  # noqa: BLE001 - classified, never swallowed
                raise_as(storage_failure("listing", f"s3://{prefix}", err, self.spec.settings,
                                         self.spec.options), err)
            retries = retry_attempts(resp)
            if retries:
                self.counters.add("list_retries", retries)
                log.info("LIST s3://%s took %d retries", prefix, retries)
            keys, times, etags, sizes = columns_of(resp)
            dirs = [p["Prefix"] for p in resp.get("CommonPrefixes", [])]
            if resp.get("EncodingType") == "url":
                keys, dirs = decode_keys(keys), decode_keys(dirs)
            page = listed_page(bucket + "/", keys, sizes, times, etags, dirs,
                               bool(resp.get("IsTruncated")), stop_after)
            more = page.truncated
            yield page
            if not more:
                return
            kwargs["ContinuationToken"] = resp["NextContinuationToken"]
            kwargs.pop("StartAfter", None)

    def _counted_directory(self) -> None:
        with self._lock:
            self.directories += 1

    def _local_pages(self, prefix: str, delimiter: bool, start_after: str | None,
                     stop_after: str | None) -> Iterator[Page]:
        """One page: see :func:`~listing.storage.local_pages.local_pages`."""
        self.counters.add("list_requests")
        for runs, dirs in local_pages(prefix, delimiter, start_after, stop_after,
                                      on_directory=self._counted_directory):
            yield Page(None, dirs, runs=runs)

    def _fs_pages(self, prefix: str, delimiter: bool, start_after: str | None,
                  stop_after: str | None) -> Iterator[Page]:
        """One page, listed through fsspec: the prefix's directory (``ls``), and for a
        flat listing ``find`` below it, or, when the prefix ends inside a name
        (``date=2020-03-``), below each child whose name starts with it."""
        parent, _, name_prefix = prefix.rpartition("/")
        parent = parent or "/"
        self.counters.add("list_requests")
        try:
            if delimiter:
                self._counted_directory()
                entries = self.fs.ls(parent, detail=True)
            elif name_prefix:
                entries = self._fs_matching(parent, name_prefix, start_after, stop_after)
            else:
                self._counted_directory()
                entries = list(self.fs.find(parent, detail=True, withdirs=False).values())
        except FileNotFoundError:
            return
        except OSError as err:
            raise StorageError(f"listing {self.spec.protocol}://{prefix} failed: {err}") from None
        files, dirs = [], []
        local = self.spec.is_local
        for e in entries:
            path = self.fs._strip_protocol(e["name"])
            if not path.startswith(prefix) and not (path + "/").startswith(prefix):
                continue
            if start_after is not None and path <= start_after:
                continue
            if stop_after is not None and path > stop_after:
                continue
            if e.get("type") == "directory":
                dirs.append(path.rstrip("/") + "/")
            elif local:  # sizes and times as the scandir listing has them
                files.append(_local_meta(path))
            else:
                files.append(ObjectMeta(path, int(e.get("size") or 0), entry_mtime(e),
                                        e.get("ETag") or e.get("etag")))
        files.sort(key=lambda f: f.path)
        dirs.sort()
        yield Page(files, dirs)

    def _fs_matching(self, parent: str, name_prefix: str, start_after: str | None,
                     stop_after: str | None) -> list[dict]:
        """The files below ``parent`` whose path there starts with ``name_prefix``: the
        matching children of ``parent``, and every file below those of them that are
        directories and may hold keys within the bounds (an empty list when ``parent``
        does not exist, as ``find`` has it)."""
        self._counted_directory()
        try:
            children = self.fs.ls(parent, detail=True)
        except FileNotFoundError:
            return []
        entries = []
        for child in children:
            path = self.fs._strip_protocol(child["name"]).rstrip("/")
            if not path.rpartition("/")[2].startswith(name_prefix):
                continue
            if child.get("type") == "directory":
                if not may_hold(path, start_after, stop_after):
                    continue
                self._counted_directory()
                entries += self.fs.find(path, detail=True, withdirs=False).values()
            else:
                entries.append(child)
        return entries


def _local_meta(path: str) -> ObjectMeta:
    """The local file ``path`` as :func:`~listing.storage.local_pages.local_pages` lists
    it (a file deleted since: 0 bytes, no time, as a dangling link)."""
    try:
        return ObjectMeta(path, *stat_file(path))
    except OSError:
        return ObjectMeta(path, 0, None, None)


def entry_mtime(entry: dict) -> dt.datetime | None:
    """The modification time in an fsspec ``info``/``ls`` entry, or None."""
    value = entry.get("LastModified") or entry.get("mtime") or entry.get("created")
    if isinstance(value, int | float):
        return dt.datetime.fromtimestamp(value, tz=dt.UTC)
    return value if isinstance(value, dt.datetime) else None


