"""Counters: what the toolkit did, counted by name; the one metrics type.

Every count (requests sent, keys listed, files read, skipped or written) is added to a
:class:`Counters`, a mapping of counter name to count that any thread may add to. The names
are declared here, each with what it counts (:data:`COUNTERS`, in the order metrics are
shown); adding to a name not declared is an error, so every name a user reads
(``plan.metrics``, ``table.open_metrics``, a write's ``result.metrics``, ``explain()``) is
one of these. What a caller shows is a :class:`CountersView`: some of the counts, in the
declared order.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable, Iterator, Mapping
from typing import Any

#: every counter the toolkit keeps: its name and what it counts, in the order shown
COUNTERS: dict[str, str] = {
    # listing: the lister, the planner's run, the listing cache
    "list_requests": "listing requests sent (S3: a LIST page, or ListMultipartUploads; "
                     "elsewhere: one listing)",
    "list_retries": "retries the client needed for the listing requests",
    "files_listed": "keys the planner's listing returned",
    "files_matched": "listed keys the scan keeps (data files its filters match)",
    "partitions_pruned": "listed partitions the partition filter left out",
    "files_skipped_hidden": "listed keys left out as hidden (_ or . names, _COPYING_)",
    "files_skipped_other": "listed keys left out as no data file of the table (format, glob, "
                           "modification time)",
    "files_skipped_layout": "listed keys left out as not following the table's layout "
                            "template (a sibling folder, a stray file, a deeper key)",
    "prefixes_skipped_layout": "folders a walk of a layout table found that do not follow "
                               "its template (not listed)",
    "list_cache_hits": "listing requests the listing cache answered (list_cache_ttl)",
    # planning and opening
    "data_files_opened": "data files read to open a table (schema inference)",
    "file_groups": "file groups planned (Spark tasks)",
    "bytes": "bytes of the files planned",
    # reading
    "files_skipped_missing": "files skipped as missing (ignore_missing_files)",
    "files_skipped_corrupt": "files skipped as corrupt (ignore_corrupt_files)",
    "files_skipped_empty": "zero-byte files skipped without a request",
    "files_changed": "files read as they are now, changed since listing "
                     "(on_file_change=read)",
    "read_requests": "GET requests sent to read S3 data files",
    "read_retries": "retries the client needed to read data files",
    "bytes_read": "bytes read from S3 data files",
    "row_groups_total": "Parquet row groups in the files opened",
    "row_groups_read": "Parquet row groups read (the rest pruned by statistics)",
    # writing: the requests of a store
    "get_requests": "GET requests sent by a store (manifests, locks, _SUCCESS)",
    "head_requests": "HEAD requests sent by a store",
    "put_requests": "PUT requests sent (files, manifests, locks, _SUCCESS, upload parts)",
    "post_requests": "POST requests sent (multipart uploads created and completed)",
    "copy_requests": "server-side copies (or fsspec copies) sent to publish files",
    "delete_requests": "delete requests sent (S3: DeleteObjects batches, "
                       "AbortMultipartUpload)",
    "retries": "retries the client needed for a store's requests",
    "renames": "local files renamed into place",
    "uploads_aborted": "multipart uploads aborted",
    # writing: the job
    "files_written": "data files a job's tasks wrote",
    "rows_written": "rows a job's tasks wrote",
    "rows_spilled": "rows a job's tasks kept on local disk until they could be written: rows "
                    "of partitions beyond a task's 32 open files",
    "bytes_written": "bytes of the data files a job's tasks wrote",
    "files_committed": "files a commit published",
    "files_deleted": "old files an overwrite removed",
    "staged_deleted": "staged files deleted after a commit or an abort",
    "cleanup_failures": "cleanups a committed job could not finish (recover does)",
    "jobs_recovered": "half-done jobs a write finished or undid before it started",
    "manifests_refused": "job manifests a write found and refused to follow",
    "locks_refused": "overwrite locks a write found that are no plain file (a link, a "
                     "directory), left in place",
    # streaming discovery: one trigger
    "full_listing": "1 when the trigger listed the whole table (reconciliation), else 0",
    "files": "files the trigger hands to its batch",
    "files_before_start": "files left out as modified before the stream's start",
    "files_too_old": "files left out as older than max_file_age",
    "late_files": "files found behind the frontier, outside the lookback window",
    "window_files": "files found behind the frontier, inside the lookback window",
}

_DECLARED_LOCK = threading.Lock()


def declare(name: str, meaning: str) -> None:
    """Declare a counter of a user's format (its opener's ``counters`` are declared so, in
    every process that reads); declaring a name again with the same meaning is no error."""
    if not name.isidentifier() or not meaning:
        raise ValueError(f"a counter needs an identifier as name and a meaning, got {name!r}")
    with _DECLARED_LOCK:
        known = COUNTERS.get(name)
        if known is not None and known != meaning:
            raise ValueError(f"counter {name!r} is declared already: {known}")
        COUNTERS[name] = meaning


def _check(name: str) -> None:
    if name not in COUNTERS:
        raise ValueError(f"counter {name!r} is not declared (listing.metrics.COUNTERS; a "
                         "format's own: its FileOpener subclass's counters)")


class Counters(Mapping[str, int]):
    """Counts by declared name, added to from any thread; read as a mapping of the names
    counted so far (a name never counted is absent, one started or added to is present,
    possibly 0), in the order they were first counted. Pickles as its counts."""

    __slots__ = ("_counts", "_lock")

    def __init__(self, counts: dict[str, int] | None = None) -> None:
        """Counts kept in ``counts`` (shared: a caller passing its own dict sees every
        count added there), or in a new dict."""
        self._counts: dict[str, int] = {} if counts is None else counts
        self._lock = threading.Lock()

    def add(self, name: str, n: int = 1) -> None:
        """Add ``n`` to the counter ``name`` (present from now on, even when ``n`` is 0)."""
        if name not in COUNTERS:
            _check(name)
        with self._lock:
            self._counts[name] = self._counts.get(name, 0) + n

    def start(self, *names: str) -> None:
        """Counters measured from now on: present, 0 until added to."""
        for name in names:
            self.add(name, 0)

    def add_all(self, counts: Mapping[str, int]) -> None:
        """Add every count of ``counts`` (another Counters, or a plain mapping)."""
        for name, n in list(counts.items()):
            self.add(name, n)

    def snapshot(self) -> dict[str, int]:
        """The counts now, as a new dict."""
        with self._lock:
            return dict(self._counts)

    def __getitem__(self, name: str) -> int:
        return self._counts[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.snapshot())

    def __len__(self) -> int:
        return len(self._counts)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.snapshot()})"

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.snapshot(),)


class CountersView(Mapping[str, int]):
    """Some counts of a :class:`Counters` (or of a snapshot of one), read as a mapping in
    the declared order: every name of ``always`` (0 when not counted) and the other names
    of ``names`` (default: every name) once counted. Read-only."""

    #: names shown whether counted or not (a subclass's fixed view)
    ALWAYS: tuple[str, ...] = ()

    def __init__(self, counts: Mapping[str, int], always: Iterable[str] | None = None,
                 names: Collection[str] | None = None) -> None:
        self._counts = counts
        self._always = frozenset(self.ALWAYS if always is None else always)
        self._names = None if names is None else frozenset(names) | self._always
        for name in self._names or self._always:
            _check(name)

    def _pairs(self) -> Iterator[tuple[str, int]]:
        counts = dict(self._counts.items())
        for name in (*COUNTERS, *(n for n in counts if n not in COUNTERS)):
            if name in counts:
                if self._names is None or name in self._names:
                    yield name, counts[name]
            elif name in self._always:
                yield name, 0

    def __getitem__(self, name: str) -> int:
        if self._names is not None and name not in self._names:
            raise KeyError(name)
        if name in self._counts:
            return self._counts[name]
        if name in self._always:
            return 0
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self._pairs())

    def __len__(self) -> int:
        return sum(1 for _ in self._pairs())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self._pairs())})"
