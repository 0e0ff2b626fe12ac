"""Hive-partitioned writes with a commit protocol (DataFusion's ``insert_into`` + demux).

``write_table(url, data, partition_by=[...], mode=...)`` writes a pyarrow Table or an
iterable of RecordBatches as ``<root>/k1=v1/k2=v2/part-<task>-<job id>-c<n>.<ext>``,
spelled exactly as the reader (:mod:`listing.hive`) and Spark read it back: names and values
escaped by :func:`listing.hive.escape_path_name`, null and the empty string as
``__HIVE_DEFAULT_PARTITION__``, dates ``YYYY-MM-DD``, timestamps ``YYYY-MM-DD HH:MM:SS[.f]``
(UTC for zoned values), booleans ``true``/``false``. Partition columns are not stored in
the files; every file of a job has the same schema (the data columns, in input order).

A job runs in three steps (:class:`WriteJob`; Spark runs them as driver, tasks, driver):

1. ``setup()``: finishes or undoes the table's half-done jobs (:meth:`WriteJob.recover`),
   then checks ``mode`` (``error``/``ignore`` look for visible files: one LIST).
2. ``write_task(batches, task)``: every file goes under the hidden staging prefix
   ``<root>/_temporary/<job id>/task-<task>-<attempt>/…``, which readers skip (a ``_``
   segment); returns a :class:`TaskCommit` naming the staged files. Partition values
   are checked first (column names readers hide, NUL bytes, S3 keys over 1,024 bytes).
3. ``commit(tasks)``: publish, then remove, never the reverse. The job's manifest
   (``_temporary/<job id>/_manifest.json``: mode, partitions, the files to publish and
   the old files an overwrite removes) is written before anything visible changes;
   ``_SUCCESS`` is removed; every new file is published under a name no other job's file
   has (the job id is in it); the manifest is marked ``published`` (the commit point);
   the old files are removed; ``_SUCCESS`` is written; the staging prefix is deleted.

Invariants: the table holds exactly the old files, or the old files plus part of the new
ones (before the commit point; a rollback deletes them), or all the new ones plus part of
the old ones (after it; a roll forward removes them). ``abort()``, a failed commit and
``recover`` on a job before its commit point restore the old table (new files deleted,
old files never touched); a job past it cannot be undone and is finished. A failure
after the commit point to write ``_SUCCESS`` or clean the staging prefix is logged and
counted (``cleanup_failures``), never raised: a visible job is a successful one, and a
re-run of its commit changes nothing. ``_SUCCESS`` is present exactly when no job is
between its first visible change and its end.

What a concurrent reader can see, per storage:

- **before the commit** (staging, or an aborted job): nothing of the job, anywhere.
- **during the commit**, on every storage: the old files plus a growing part of the new
  ones, then all the new ones plus a shrinking part of the old ones. Each file appears
  whole (local ``os.replace``; an S3 COPY or PUT is atomic per object), the set does not.
  Readers that must never see a partial job wait for ``_SUCCESS``.
- **a killed job**: the same mix, frozen, with its manifest under ``_temporary/``:
  ``recover`` (or the next write) finishes it.

A manifest read back is untrusted (anyone who writes the table can write one): it is
followed only if this table's writer could have made it (:func:`_check_manifest`: every
path under the table's root, names carrying the job id), else left in place and reported.
An overwrite relies on the store refusing a second create of its lock: where the store
does not (probed once per bucket), it is refused unless ``overwrite_without_lock``.

``mode="error"``/``"ignore"`` check for existing files at ``setup()``, not atomically with
the commit. Files are encoded by the format's :class:`~listing.formats.base.FileSink`. On
S3 each file is built in memory and sent with one PUT (bounded by
``max_records_per_file``); local files are written in place under the staging prefix.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import re
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from listing import formats
from listing.errors import (
    CommitError,
    ConcurrentWriteError,
    OptionError,
    PartitionLayoutError,
    PartitionValueError,
    StorageError,
    TableExistsError,
)
from listing.formats.base import FileFormat, FileSink, FileWriter
from listing.hive import (
    discover_columns,
    escape_path_name,
    is_hidden,
    is_hidden_below,
    partition_path,
)
from listing.list_cache import CACHE
from listing.metrics import Counters, CountersView
from listing.options import registry
from listing.storage import multipart
from listing.storage.lister import Lister, ObjectMeta
from listing.storage.spec import StorageSpec
from listing.storage.store import (
    MAX_S3_KEY_BYTES,
    Finish,
    NotAPlainFile,
    Store,
    open_store,
    store_class,
)
from listing.url import TableUrl

__all__ = ["MODES", "PARTITION_OVERWRITE_MODES", "ManifestRefused", "StagedFile", "TaskCommit",
           "WriteJob", "WriteResult", "partition_path", "target_partition_by", "write_table"]

log = logging.getLogger("listing.write")

MODES = ("append", "overwrite", "error", "ignore")
PARTITION_OVERWRITE_MODES = registry.option("partition_overwrite_mode").choices
STAGING_DIR = "_temporary"
SUCCESS_FILE = "_SUCCESS"
MANIFEST_FILE = "_manifest.json"
PUBLISHING, PUBLISHED = "publishing", "published"
#: a write rolls back the half-done jobs it finds whose manifest is older than this
#: (seconds; a younger one may still be committing); jobs past their commit point are
#: always finished
RECOVER_AFTER = 3600.0
#: the overwrite lock, hidden at the table's root (created with If-None-Match / O_EXCL)
LOCK_FILE = "_overwrite.lock"
#: the largest manifest read, in bytes, and the most entries (files to publish and to
#: remove, uploads, partitions) it may hold: a larger one is refused unread (recovery's
#: work is bounded), and a job that would write one is refused before its commit
MAX_MANIFEST_BYTES = 256 * 2**20
MAX_MANIFEST_ENTRIES = 1_000_000
#: the largest overwrite lock read, in bytes (a job id and a time)
MAX_LOCK_BYTES = 4096
#: files a task keeps open at once (each holds up to a part, or on S3's staged-copy commit
#: its whole file, in memory); opening one more closes the oldest (the partition's next
#: file is ``-c<n+1>``)
MAX_OPEN_FILES = 32
#: how a job publishes its files: ``multipart`` (S3: zero-copy, files are multipart
#: uploads the commit completes), ``copy`` (staged files copied or renamed into place),
#: ``auto`` (multipart on S3, copy elsewhere)
COMMIT_PROTOCOLS = ("auto", "multipart", "copy")
#: the counters a :class:`WriteResult` shows, 0 when not counted (others once counted)
WRITE_METRICS = ("files_written", "rows_written", "bytes_written", "files_committed",
                 "files_deleted", "staged_deleted", "put_requests", "copy_requests",
                 "delete_requests", "list_requests", "get_requests", "post_requests",
                 "renames", "retries", "cleanup_failures", "jobs_recovered",
                 "manifests_refused", "locks_refused")


# --- the values that travel: staged files, task commit messages, the result ----------------

@dataclass(frozen=True)
class StagedFile:
    """One file a task wrote under the staging prefix, and where commit moves it."""

    staged: str  # fsspec path (no protocol) under <root>/_temporary/<job id>/; "" if uploaded
    final: str  # fsspec path in the table
    partition: str  # "k1=v1/k2=v2/" ("" for an unpartitioned table)
    rows: int
    size: int
    upload_id: str = ""  # a multipart upload to ``final`` the commit completes (zero-copy)
    parts: tuple[tuple[int, str], ...] = ()  # its (part number, ETag)


@dataclass(frozen=True)
class TaskCommit:
    """What one task hands to the job commit (Spark's commit message): its staged files
    and what writing them cost."""

    task: int
    attempt: int
    files: tuple[StagedFile, ...]
    metrics: Counters = field(default_factory=Counters)


@dataclass
class WriteResult:
    """A committed job: its files (URLs), the partitions it wrote, rows and metrics.

    ``metrics`` counts files and rows, and the requests sent for them on S3 (``put_requests``
    data files and ``_SUCCESS``, ``copy_requests`` moves, ``delete_requests``
    DeleteObjects batches, ``list_requests`` listing pages, ``retries``); on local files
    ``renames`` and deleted files."""

    url: str
    job_id: str
    mode: str
    files: list[str]
    partitions: list[str]
    rows: int
    metrics: dict[str, int]


def _shown(metrics: Counters) -> dict[str, int]:
    """A job's counts as its :class:`WriteResult` holds them: a plain dict of every name of
    :data:`WRITE_METRICS` (0 when not counted) and any other counted."""
    return dict(CountersView(metrics, WRITE_METRICS))


@dataclass
class _Manifest:
    """A job's intent, written under its staging prefix before the table changes: the
    files it publishes (staged, final), the old files it then removes, and whether it
    passed its commit point (``state`` ``published``)."""

    job_id: str
    mode: str
    partition_overwrite_mode: str
    partitions: list[str]
    publish: list[tuple[str, str]]
    remove: list[str]
    had_success: bool
    state: str
    created: float
    uploads: list[multipart.Upload] = field(default_factory=list)

    #: the manifest's lists, whose entries :data:`MAX_MANIFEST_ENTRIES` bounds
    LISTS = ("publish", "remove", "partitions", "uploads")

    @property
    def entries(self) -> int:
        return sum(len(getattr(self, name)) for name in self.LISTS)

    def dumps(self) -> bytes:
        """The manifest as written; :class:`CommitError` when it is over the limits a
        reader keeps (:data:`MAX_MANIFEST_BYTES`, :data:`MAX_MANIFEST_ENTRIES`)."""
        data = json.dumps(dataclasses.asdict(self)).encode()
        if len(data) > MAX_MANIFEST_BYTES or self.entries > MAX_MANIFEST_ENTRIES:
            raise CommitError(
                f"job {self.job_id} would record {self.entries} files and partitions "
                f"({len(data)} bytes) in its manifest, more than recovery reads "
                f"({MAX_MANIFEST_ENTRIES} entries, {MAX_MANIFEST_BYTES} bytes): write or "
                "overwrite the table in smaller parts (partition_overwrite_mode=dynamic)")
        return data

    @classmethod
    def parse(cls, data: bytes) -> _Manifest:
        """The manifest ``data`` holds; :class:`ManifestRefused` when it is not one (not
        JSON, nested too deep, the wrong types, over :data:`MAX_MANIFEST_BYTES` or
        :data:`MAX_MANIFEST_ENTRIES`)."""
        if len(data) > MAX_MANIFEST_BYTES:
            raise ManifestRefused(f"it holds more than {MAX_MANIFEST_BYTES} bytes")
        try:
            raw = json.loads(data)
            if not isinstance(raw, dict):
                raise TypeError("not a JSON object")
            for name in cls.LISTS:
                if not isinstance(raw.get(name, []), list):
                    raise TypeError(f"its {name} is not a list")
            if sum(len(raw.get(name, [])) for name in cls.LISTS) > MAX_MANIFEST_ENTRIES:
                raise ManifestRefused(f"it holds more than {MAX_MANIFEST_ENTRIES} entries")
            raw["publish"] = [(src, dst) for src, dst in raw["publish"]]
            raw["uploads"] = [(path, upload_id, [(n, etag) for n, etag in parts])
                              for path, upload_id, parts in raw.get("uploads", [])]
            manifest = cls(**raw)
        except (ValueError, TypeError, KeyError, RecursionError, MemoryError) as err:
            why = "nested too deep" if isinstance(err, RecursionError) else _short(str(err))
            raise ManifestRefused(f"it is unreadable ({why})") from None
        kinds: dict[str, tuple[type, ...]] = {
            "job_id": (str,), "mode": (str,), "partition_overwrite_mode": (str,),
            "state": (str,), "had_success": (bool,), "created": (int, float),
            "partitions": (list,), "remove": (list,)}
        for name, kind in kinds.items():
            if not isinstance(getattr(manifest, name), kind):
                raise ManifestRefused(f"its {name} is not a {kind[0].__name__}")
        if manifest.state not in (PUBLISHING, PUBLISHED) or manifest.mode not in MODES:
            raise ManifestRefused(f"its state {manifest.state!r} or mode {manifest.mode!r} "
                                  "is not one a job writes")
        for _, upload_id, parts in manifest.uploads:
            if not isinstance(upload_id, str) or not all(
                    isinstance(n, int) and isinstance(e, str) for n, e in parts):
                raise ManifestRefused("its uploads are not (path, upload id, parts)")
        return manifest


class ManifestRefused(CommitError):
    """A job manifest that breaks a rule of :func:`_check_manifest`: never followed, left
    in place for a person to look at. The message names the rule."""


#: a job id as the writer makes it (a UUID's hex) and accepts: letters, digits, ``_``, ``-``
JOB_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{0,127}")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 160 else f"{text[:157]}..."


_BAD_SEGMENTS = frozenset(("", ".", ".."))


def _real(store: Store, path: str, cache: dict[str, str] | None) -> str:
    """``path`` with its directories' links resolved (:meth:`Store.real_path`), each
    directory resolved once per ``cache``."""
    head, _, name = path.rpartition("/")
    if cache is None:
        return store.real_path(path)
    real = cache.get(head)
    if real is None:
        real = cache[head] = store.real_path(f"{head}/x")[:-1]
    return real + name


def _outside(store: Store, path: object, root: str,
             cache: dict[str, str] | None = None) -> str | None:
    """Why ``path`` (an fsspec path) is not a path strictly under ``root`` on this store,
    or None when it is: a name the store cannot hold (:meth:`Store.name_problem`: a lone
    surrogate, too long), another protocol, a ``.``/``..``/empty segment, a NUL byte (or
    below ``root`` a backslash), outside ``root`` (another bucket or directory), or led out
    of it by a link. Linear in the path's length; ``cache`` keeps resolved directories."""
    if not isinstance(path, str) or not path:
        return "is not a path"
    unfit = store.name_problem(path)
    if unfit is not None:
        return unfit
    if "://" in path or "::" in path:
        return "names another protocol"
    if "\0" in path:
        return "holds a NUL byte"
    if not path.startswith(root):
        return f"is not under the table's root {root}"
    if _BAD_SEGMENTS.intersection(path[len(root):].split("/")):
        return "has an empty, '.' or '..' segment"
    if "\\" in path[len(root):]:  # a separator on Windows; escaped in every name we write
        return "holds a backslash"
    real_root = _real(store, f"{root}x", cache)[:-1]  # the root itself resolved too
    if not _real(store, path, cache).startswith(real_root):
        return "leads out of the table through a link"
    return None


_KINDS = {"link": "a symbolic link (never followed)", "dir": "a directory",
          "other": "no regular file (a device, pipe or socket)"}


def _not_plain(store: Store, path: str) -> str | None:
    """Why the file at ``path`` is one the commit must not act on (a link, a directory,
    a device or pipe: local files, one ``lstat``), or None (a file, or nothing there)."""
    kind = store.kind(path)
    return f"is {_KINDS[kind]}" if kind in _KINDS else None


def _check_manifest(store: Store, manifest: _Manifest, prefix: str, job_dir: str) -> None:
    """Raise :class:`ManifestRefused` unless ``manifest`` (found in
    ``<prefix>_temporary/<job_dir>/``) is one this table's writer could have made: its job
    id matches :data:`JOB_ID` and is ``job_dir``; every path lies under the table's root on
    the same store and bucket (:func:`_outside`); each publish source is under the job's
    staging prefix; each publish destination and upload is a visible file of the table
    whose name carries the job id; each removed file is a visible file of the table."""
    job_id = manifest.job_id
    if not JOB_ID.fullmatch(job_id):
        raise ManifestRefused(f"its job id {_short(job_id)} is not a job id (letters, digits, "
                              "'_', '-')")
    if job_id != job_dir:
        raise ManifestRefused(f"its job id {_short(job_id)} is not its directory's name "
                              f"{_short(job_dir)}")
    staging = f"{prefix}{STAGING_DIR}/{job_id}/"
    if manifest.uploads and not store.supports_multipart:
        raise ManifestRefused("it names multipart uploads, and this store has none")

    for i, partition in enumerate(manifest.partitions):
        if not isinstance(partition, str):
            raise ManifestRefused(f"partitions[{i}] {_short(partition)} is not a string")
    cache: dict[str, str] = {}
    checks_kinds = store.kind(prefix) != "unknown"  # local files: one lstat a file

    def check(field_name: str, path: object, under: str, own: bool) -> None:
        why = _outside(store, path, under, cache)
        if why is None and is_hidden_below(prefix, str(path)) and under == prefix:
            why = "is not a visible data file of the table"
        if why is None and own and _job_of(str(path)) != job_id:
            why = f"is not named for job {job_id}"
        if why is None and checks_kinds:
            why = _not_plain(store, str(path))
        if why is not None:
            raise ManifestRefused(f"{field_name} {_short(path)} {why}")

    for i, (src, dst) in enumerate(manifest.publish):
        check(f"publish[{i}] source", src, staging, own=False)
        check(f"publish[{i}] destination", dst, prefix, own=True)
    for i, (path, _, _) in enumerate(manifest.uploads):
        check(f"uploads[{i}]", path, prefix, own=True)
    for i, path in enumerate(manifest.remove):
        check(f"remove[{i}]", path, prefix, own=False)
    why = _not_plain(store, f"{prefix}{SUCCESS_FILE}")
    if why is not None:  # finishing or undoing the job writes it
        raise ManifestRefused(f"the table's {SUCCESS_FILE} {why}")


_FILE_NAME = re.compile(r"part-\d{5}-(.+)-c\d{3}[^/]*$")


def _job_of(path: str) -> str | None:
    """The job id in a data file's name (``part-<task>-<job id>-c<n>.<ext>``), or None."""
    match = _FILE_NAME.search(path.rsplit("/", 1)[-1])
    return match.group(1) if match else None


def _lock_holder(store: Store, path: str) -> str | None:
    """The job id in the overwrite lock at ``path`` (``"?"`` when unreadable), or None if
    unlocked; :class:`NotAPlainFile` when the lock is no plain file (a link, a directory)
    or larger than :data:`MAX_LOCK_BYTES`. The lock's age is the store's
    (:meth:`Store.last_modified`), not its writer's clock."""
    data = store.read(path, limit=MAX_LOCK_BYTES)
    if data is None:
        return None
    try:
        holder = json.loads(data)["job_id"]
    except (ValueError, KeyError, TypeError, RecursionError):
        return "?"  # unreadable: stale once recover sees it
    return holder if isinstance(holder, str) and JOB_ID.fullmatch(holder) else "?"


def _invalidate_listings(spec: StorageSpec, prefix: str) -> None:
    """Drop this process's cached listings of the table (its files changed)."""
    CACHE.invalidate(spec, prefix)


# --- encoding partition values ---------------------------------------------------------------

_PARTITION_TYPES = (pa.types.is_string, pa.types.is_large_string, pa.types.is_integer,
                    pa.types.is_date, pa.types.is_boolean, pa.types.is_decimal,
                    pa.types.is_floating, pa.types.is_timestamp, pa.types.is_null)


# --- listing what a job wrote --------------------------------------------------------------

def _list_files(store: Store, prefix: str, visible_below: str | None = None) -> list[str]:
    """Every file under ``prefix``; with ``visible_below``, only those whose path below it
    has no hidden segment (``_temporary/…``, ``_SUCCESS``, ``.crc``)."""
    paths = [f.path for f in store.find(prefix)]
    if visible_below is not None:
        paths = [p for p in paths if not is_hidden_below(visible_below, p)]
    return paths


# --- one job ---------------------------------------------------------------------------------

class _OpenFile:
    def __init__(self, writer: FileWriter, finish: Finish, staged: str,
                 final: str, partition: str) -> None:
        self.writer, self.finish = writer, finish
        self.staged, self.final, self.partition = staged, final, partition
        self.rows = 0


class WriteJob:
    """One write job: ``setup()`` on the driver, ``write_task()`` in each task,
    ``commit(tasks)`` or ``abort()`` on the driver. Plain metadata, picklable (Spark ships it
    to tasks); filesystems are rebuilt where used. ``partition_by`` is taken as given: the
    entry points resolve it against the table first (:func:`target_partition_by`)."""

    def __init__(self, url: str, schema: pa.Schema, *, format: str | FileFormat = "parquet",  # noqa: A002
                 partition_by: Sequence[str] = (), mode: str = "append",
                 partition_overwrite_mode: str = "static",
                 storage_options: dict[str, Any] | None = None,
                 max_records_per_file: int | str | None = None, compression: str | None = None,
                 job_id: str | None = None, recover_after: float = RECOVER_AFTER,
                 commit_protocol: str = "auto", part_size: int | str | None = None,
                 overwrite_without_lock: bool | str = False, time_zone: str = "UTC",
                 **format_options: Any) -> None:
        self.recover_after = recover_after
        #: the zone a timestamp partition value is spelled in (Spark's session time zone)
        self.time_zone: str = registry.parse({"time_zone": time_zone}, "listing")["time_zone"]
        # Spark's maxRecordsPerFile 0: no limit; part_size "": the default
        given = registry.parse({
            "overwrite_without_lock": overwrite_without_lock,
            "partition_overwrite_mode": partition_overwrite_mode,
            "max_records_per_file": None if max_records_per_file in ("", 0, "0")
            else max_records_per_file,
            "part_size": part_size if part_size != "" else None}, "write")
        #: overwrite even where the store cannot isolate it (no conditional PUT): the
        #: caller serialises overwrites of the table itself
        self.overwrite_without_lock: bool = given.get("overwrite_without_lock", False)
        if job_id is not None and not JOB_ID.fullmatch(job_id):
            raise OptionError(f"job_id={job_id!r} must be letters, digits, '_' and '-' (at "
                              "most 128), starting with a letter or digit")
        self.url = TableUrl.parse(url)
        if self.url.glob is not None:
            raise OptionError(f"cannot write to a glob {url!r}: give the table's root")
        self.mode = _choice("mode", mode, MODES)
        self.partition_overwrite_mode: str = given.get("partition_overwrite_mode", "static")
        self.partition_by = _partition_by(partition_by, schema)
        self.max_records_per_file: int | None = given.get("max_records_per_file")
        self.storage = StorageSpec(self.url.protocol, self.url.storage_options(storage_options))
        protocol = _choice("commit_protocol", commit_protocol, COMMIT_PROTOCOLS)
        if protocol == "multipart" and not store_class(self.storage).supports_multipart:
            raise OptionError(f"commit_protocol='multipart' needs S3 (multipart uploads), "
                              f"not {self.url.protocol}://; use 'copy' or 'auto'")
        #: S3's zero-copy commit: files stream to their final keys as multipart uploads
        self.part_size: int | None = None
        if protocol == "multipart" or (protocol == "auto"
                                       and store_class(self.storage).supports_multipart):
            self.part_size = given.get("part_size", multipart.PART_SIZE)
            if self.part_size < multipart.MIN_PART_SIZE:
                raise OptionError(f"option part_size={self.part_size!r} must be at least "
                                  f"{multipart.MIN_PART_SIZE}")
        self.format = formats.get(format, **format_options)
        self.schema = schema
        self.data_schema = pa.schema([f for f in schema if f.name not in self.partition_by])
        self.sink: FileSink = self.format.sink(self.data_schema, compression)
        self.job_id = job_id or uuid.uuid4().hex
        self.prefix = self.url.prefix
        self.staging = f"{self.prefix}{STAGING_DIR}/{self.job_id}/"
        self.skip = False
        #: what :meth:`setup` cost, and what it found (``jobs_recovered``…)
        self.setup_metrics = Counters()

    def __repr__(self) -> str:
        return (f"WriteJob({self.url}, job_id={self.job_id!r}, format={self.format.name!r}, "
                f"partition_by={self.partition_by!r}, mode={self.mode!r}, "
                f"storage={self.storage!r})")

    # --- driver: before the tasks ---------------------------------------------------------
    def setup(self) -> None:
        """Check ``mode`` against the table: ``error`` raises :class:`TableExistsError`
        and ``ignore`` turns the job into a no-op when visible files exist. First finishes
        or undoes the half-done jobs of the table (:meth:`recover`, from their manifests,
        rolling back only those older than ``recover_after`` seconds; staged files and
        uploads of jobs without a manifest are left to ``listing recover``/``cleanup``; a
        refused manifest is left in place with a warning and counted in
        ``manifests_refused``). An overwrite is refused (:class:`ConcurrentWriteError`) on
        a store that cannot isolate it, unless ``overwrite_without_lock``."""
        recovered = self.recover(str(self.url), self.storage.options,
                                 older_than=self.recover_after, orphans=False)
        refused = [(job, what) for job, what in recovered if what.startswith("refused")]
        self.setup_metrics.add("jobs_recovered", sum(
            1 for _, what in recovered if what != "running" and not what.startswith("refused")))
        self.setup_metrics.add("manifests_refused",
                               sum(1 for job, _ in refused if job != LOCK_FILE))
        self.setup_metrics.add("locks_refused", sum(1 for job, _ in refused if job == LOCK_FILE))
        for job, what in refused:
            if job == LOCK_FILE:
                log.warning("write of job %s to %s goes on; the table's overwrite lock was "
                            "no lock (%s): check it, then delete it by hand",
                            self.job_id, self.url, what)
                continue
            log.warning("write of job %s to %s goes on, leaving job %s's manifest under "
                        "%s%s/ as it is (%s): check it, then delete it by hand",
                        self.job_id, self.url, job, self.url, STAGING_DIR, what)
        store = open_store(self.storage, self.setup_metrics)
        try:
            self._check_staging(store)
        except ManifestRefused as err:
            raise CommitError(f"cannot write to {self.url}: {err}; nothing was written "
                              "(remove the link)") from None
        if self.mode == "overwrite":
            self._check_isolation(store)
        if self.mode not in ("error", "ignore"):
            return
        if _list_files(store, self.prefix, visible_below=self.prefix):
            if self.mode == "error":
                raise TableExistsError(f"{self.url} already holds files (mode='error'); use "
                                       "mode='append' or 'overwrite'")
            self.skip = True

    # --- a task -----------------------------------------------------------------------------
    def write_task(self, batches: Iterable[pa.RecordBatch], task: int = 0,
                   attempt: int = 0) -> TaskCommit:
        """Write ``batches`` under the staging prefix: one open file per partition, a new
        one after ``max_records_per_file`` rows. Nothing is visible to readers."""
        metrics = Counters()
        if self.skip:
            return TaskCommit(task, attempt, (), metrics)
        store = open_store(self.storage, metrics, self.part_size)
        stage_dir = f"{self.staging}task-{task:05d}-{attempt}/"
        open_files: dict[str, _OpenFile] = {}
        counters: dict[str, int] = {}
        done: list[StagedFile] = []

        def close(f: _OpenFile) -> None:
            f.writer.close()
            size, upload = f.finish()
            if upload is None:
                done.append(StagedFile(f.staged, f.final, f.partition, f.rows, size))
            else:
                done.append(StagedFile("", f.final, f.partition, f.rows, size, upload[1],
                                       tuple(upload[2])))
            metrics.add("files_written")
            metrics.add("rows_written", f.rows)
            metrics.add("bytes_written", size)

        def open_file(partition: str) -> _OpenFile:
            n = counters.get(partition, 0)
            counters[partition] = n + 1
            name = self._file_name(task, n)
            staged = f"{stage_dir}{partition}{name}"
            final = f"{self.prefix}{partition}{name}"
            out, finish = store.create(final if self.part_size is not None else staged)
            return _OpenFile(self.sink.open(out), finish, staged, final, partition)

        key_room = None
        if store.max_key_bytes is not None:  # the longest staged key, less its partition
            longest = f"{stage_dir}{self._file_name(task, 999)}".partition("/")[2]
            key_room = store.max_key_bytes - len(longest.encode())
        try:
            for batch in batches:
                for partition, part in self._split(self._conform(batch), key_room):
                    offset = 0
                    while offset < part.num_rows:
                        f = open_files.get(partition)
                        if f is None:
                            if len(open_files) >= MAX_OPEN_FILES:  # bounded memory: the
                                close(open_files.pop(next(iter(open_files))))  # oldest goes
                            f = open_files[partition] = open_file(partition)
                        room = part.num_rows - offset
                        if self.max_records_per_file is not None:
                            room = min(room, self.max_records_per_file - f.rows)
                        f.writer.write(part.slice(offset, room))
                        f.rows += room
                        offset += room
                        if self.max_records_per_file is not None and \
                                f.rows >= self.max_records_per_file:
                            close(open_files.pop(partition))
            if not done and not open_files and not self.partition_by and task == 0:
                open_files[""] = open_file("")  # an empty table keeps its schema
            for partition in list(open_files):
                close(open_files.pop(partition))
        except BaseException:
            for f in open_files.values():  # the staged files go with the job's abort
                try:
                    f.writer.close()
                except Exception:  # noqa: BLE001, S110 - the original error matters
                    pass
            raise
        return TaskCommit(task, attempt, tuple(done), metrics)

    def _file_name(self, task: int, n: int) -> str:
        """The name of a task's ``n``-th file in a partition: the job id makes it a name
        no other job's file has."""
        return f"part-{task:05d}-{self.job_id}-c{n:03d}{self.sink.extension}"

    def _conform(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if batch.schema.equals(self.schema):
            return batch
        missing = [n for n in self.schema.names if n not in batch.schema.names]
        if missing:
            raise OptionError(f"batch for {self.url} lacks column(s) {missing} of the job's "
                              f"schema ({', '.join(self.schema.names)})")
        try:
            columns = [batch.column(f.name).cast(f.type) for f in self.schema]
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
            raise OptionError(f"batch for {self.url} does not fit the job's schema: {err}") \
                from None
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def _split(self, batch: pa.RecordBatch,
               key_room: int | None = None) -> Iterator[tuple[str, pa.RecordBatch]]:
        """``(partition path, rows of the data columns)`` per distinct partition value.
        Values with a NUL byte, and paths longer than ``key_room`` bytes, are refused
        (:class:`PartitionValueError`) before the batch's first partition is yielded."""
        data = batch.select(self.data_schema.names)
        if not self.partition_by:
            if batch.num_rows:
                yield "", data
            return
        if not batch.num_rows:
            return
        codes, values = [], []
        for name in self.partition_by:
            encoded: Any = pc.dictionary_encode(batch.column(name), null_encoding="encode")
            codes.append(encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64))
            values.append(encoded.dictionary.to_pylist())
        keys, inverse = np.unique(np.stack(codes, axis=1), axis=0, return_inverse=True)
        order = np.argsort(inverse.reshape(-1), kind="stable")
        bounds = np.cumsum(np.bincount(inverse.reshape(-1), minlength=len(keys)))[:-1]
        paths = []
        for key in keys:  # every partition of the batch checked before any of it is written
            pairs = [(name, values[i][key[i]]) for i, name in enumerate(self.partition_by)]
            for name, value in pairs:
                if isinstance(value, str) and "\0" in value:
                    raise PartitionValueError(
                        f"partition column {name!r} holds a value with a NUL byte "
                        f"({value!r}): no store keeps it in a path; nothing was written")
            path = partition_path(pairs, self.time_zone)
            if key_room is not None and len(path.encode()) > key_room:
                raise PartitionValueError(
                    f"partition {path.rstrip('/')!r} makes S3 keys under {self.url} longer "
                    f"than {MAX_S3_KEY_BYTES} bytes (the limit); nothing was written")
            paths.append(path)
        for path, rows in zip(paths, np.split(order, bounds), strict=True):
            yield path, data.take(rows)

    # --- driver: after the tasks ------------------------------------------------------------
    @property
    def manifest_path(self) -> str:
        """Where the job records its intent before the table changes."""
        return f"{self.staging}{MANIFEST_FILE}"

    def commit(self, tasks: Iterable[TaskCommit | None]) -> WriteResult:
        """Make the staged files of ``tasks`` the table's: record the job's manifest, remove
        ``_SUCCESS``, publish every new file, mark the manifest published (the commit
        point), remove the old files an overwrite replaces, write ``_SUCCESS``, clean the
        staging prefix. Before the commit point a failure rolls the job back (the old table,
        exactly) and raises :class:`CommitError`; after it the job is committed: a failure
        to remove old files raises (``recover`` finishes), a failure to clean up is logged
        and counted in ``cleanup_failures``. Re-running a commit is idempotent."""
        given = [t for t in tasks if t is not None]
        metrics = Counters()
        for source in [self.setup_metrics] + [t.metrics for t in given]:
            metrics.add_all(source)
        staged = [f for t in given for f in t.files]
        if self.skip:
            return WriteResult(str(self.url), self.job_id, self.mode, [], [], 0,
                               _shown(metrics))
        finals: dict[str, StagedFile] = {}
        for f in staged:
            if f.final in finals:
                raise CommitError(f"job {self.job_id}: two tasks wrote {f.final}")
            finals[f.final] = f
        store = open_store(self.storage, metrics)
        partitions = sorted({f.partition for f in staged})
        try:
            manifest = self._read_manifest(store)
            if store.kind(self.prefix + SUCCESS_FILE) == "dir":  # (a link or a pipe is
                raise NotAPlainFile(  # replaced by the commit's rename, never opened)
                    f"its {SUCCESS_FILE} is a directory, which the commit cannot replace; "
                    "remove it by hand")
            if manifest is None:
                if self.mode == "overwrite":
                    self._lock(store)
                manifest = self._plan(store, staged, partitions)
                store.put_atomic(self.manifest_path, manifest.dumps())
        except ConcurrentWriteError:
            raise
        except Exception as err:
            if self.mode == "overwrite":
                self._unlock_quietly(store)
            raise CommitError(f"job {self.job_id} could not start its commit to {self.url}: "
                              f"{err}. Nothing visible changed") from err
        if manifest.state != PUBLISHED:
            try:
                store.delete([self.prefix + SUCCESS_FILE])
                store.publish(manifest.publish)
                store.complete(manifest.uploads)
                manifest.state = PUBLISHED
                store.put_atomic(self.manifest_path, manifest.dumps())  # the commit point
            except Exception as err:
                try:
                    self._roll_back(store, manifest)
                    what = "rolled back: the table is as it was"
                except Exception as again:  # noqa: BLE001 - reported with the first error
                    what = (f"rolling back failed too ({again}): `listing recover "
                            f"{self.url}` restores the old table")
                raise CommitError(f"job {self.job_id} failed while publishing to "
                                  f"{self.url}: {err}; {what}") from err
        metrics.add("files_committed", len(manifest.publish) + len(manifest.uploads))
        self._roll_forward(store, manifest)
        log.info("committed job %s to %s: %d files, %d rows", self.job_id, self.url,
                 len(staged), sum(f.rows for f in staged))
        return WriteResult(str(self.url), self.job_id, self.mode,
                           [self.url.to_url(f.final) for f in staged], partitions,
                           sum(f.rows for f in staged), _shown(metrics))

    def _plan(self, store: Store, staged: Sequence[StagedFile],
              partitions: Sequence[str]) -> _Manifest:
        """The job's manifest: its new files, and the old files an overwrite removes."""
        new = {f.final for f in staged}
        old: list[str] = []
        if self.mode == "overwrite":
            if self.partition_overwrite_mode == "dynamic" and self.partition_by:
                for partition in partitions:
                    old += _list_files(store, self.prefix + partition, visible_below=self.prefix)
            else:
                old = _list_files(store, self.prefix, visible_below=self.prefix)
        success = self.prefix + SUCCESS_FILE
        kind = store.kind(success)
        had_success = (store.read(success) is not None if kind == "unknown"
                       else kind != "absent")
        return _Manifest(self.job_id, self.mode, self.partition_overwrite_mode,
                         list(partitions),
                         [(f.staged, f.final) for f in staged if not f.upload_id],
                         sorted(set(old) - new), had_success, PUBLISHING, time.time(),
                         [(f.final, f.upload_id, list(f.parts))
                          for f in staged if f.upload_id])

    @property
    def lock_path(self) -> str:
        """The table's overwrite lock: held by the one overwrite committing."""
        return f"{self.prefix}{LOCK_FILE}"

    def _check_isolation(self, store: Store) -> None:
        """Raise :class:`ConcurrentWriteError` when the store cannot isolate an overwrite
        (its PUTs ignore ``If-None-Match``: two overwrites would both take the lock and
        both survive, the union of their rows), unless ``overwrite_without_lock``."""
        if self.overwrite_without_lock or store.conditional_puts(self.prefix):
            return
        raise ConcurrentWriteError(
            f"refusing to overwrite {self.url}: its store does not honour conditional "
            "writes (a PUT with If-None-Match: * on an existing key was not refused), so "
            "the table's overwrite lock cannot keep two overwrites apart and both would "
            "survive, the union of their rows. If nothing else overwrites this table at "
            "the same time (you serialise its writers with a lock of your own), pass "
            "overwrite_without_lock=true; otherwise use a store that honours If-None-Match "
            "(AWS S3 does). Nothing was written")

    def _lock(self, store: Store) -> None:
        """Take the table's overwrite lock, or raise :class:`ConcurrentWriteError` naming
        the job that holds it (two overwrites committing at once would both survive)."""
        self._check_isolation(store)
        body = json.dumps({"job_id": self.job_id, "created": time.time()}).encode()
        taken = store.put_if_absent(self.lock_path, body)
        if taken is not False:
            return  # taken (or, with overwrite_without_lock, a store that cannot tell)
        try:
            holder = _lock_holder(store, self.lock_path)
        except NotAPlainFile as err:
            raise ConcurrentWriteError(
                f"job {self.job_id} cannot commit its overwrite of {self.url}: its lock "
                f"{err}, so no overwrite can take it (left in place). Nothing visible "
                "changed; check it, then delete it by hand") from None
        if holder == self.job_id:
            return  # ours (a retried request, or a re-run commit)
        raise ConcurrentWriteError(
            f"job {self.job_id} cannot commit its overwrite of {self.url}: job "
            f"{holder or '?'} is committing an overwrite of it (lock "
            f"{self.url.to_url(self.lock_path)}). Nothing visible changed; retry once it "
            f"is done, or, if that job was killed, run `listing recover {self.url}`")

    def _unlock(self, store: Store) -> None:
        """Release the overwrite lock if this job holds it (a lock that is no plain file
        is no job's: left in place)."""
        try:
            holder = _lock_holder(store, self.lock_path)
        except NotAPlainFile:
            return
        if holder == self.job_id:
            store.delete([self.lock_path])

    def _unlock_quietly(self, store: Store) -> None:
        try:
            self._unlock(store)
        except Exception as err:  # noqa: BLE001 - the first error is the one to raise
            log.warning("job %s could not release the lock of %s: %s", self.job_id,
                        self.url, err)

    def _roll_forward(self, store: Store, manifest: _Manifest) -> None:
        """Finish a published job: remove the old files it replaces (raises on failure),
        then write ``_SUCCESS`` and clean the staging prefix (failures logged, counted)."""
        try:
            store.delete(manifest.remove)
        except Exception as err:
            raise CommitError(
                f"job {manifest.job_id} is committed to {self.url} (its new files are in "
                f"place) but {len(manifest.remove)} old file(s) could not be removed: {err}. "
                f"`listing recover {self.url}` (or the next write) removes them") from err
        store.metrics.add("files_deleted", len(manifest.remove))
        store.prune_dirs(manifest.remove, self.prefix)
        _invalidate_listings(self.storage, self.prefix)
        try:
            store.put(self.prefix + SUCCESS_FILE, b"")
        except Exception as err:  # noqa: BLE001 - the job is committed: logged, counted
            store.metrics.add("cleanup_failures")
            log.warning("job %s is committed to %s; could not write _SUCCESS (its manifest "
                        "stays: recover writes it): %s", manifest.job_id, self.url, err)
            return
        try:
            self._clean_staging(store, lock=manifest.mode == "overwrite")
        except Exception as err:  # noqa: BLE001 - the job is committed: logged, counted
            store.metrics.add("cleanup_failures")
            log.warning("job %s is committed to %s; could not clean its staging prefix "
                        "(recover does): %s", manifest.job_id, self.url, err)

    def _roll_back(self, store: Store, manifest: _Manifest) -> None:
        """Undo an unpublished job: delete the new files it published (never an old one:
        every new name holds the job id), restore ``_SUCCESS`` if the table had one, clean
        the staging prefix."""
        store.abort_uploads(manifest.uploads)
        new = [dst for dst in [d for _, d in manifest.publish] + [u[0] for u in manifest.uploads]
               if manifest.job_id and _job_of(dst) == manifest.job_id]
        store.delete(new)
        store.prune_dirs(new, self.prefix)
        if manifest.had_success:
            store.put(self.prefix + SUCCESS_FILE, b"")
        _invalidate_listings(self.storage, self.prefix)
        self._clean_staging(store, lock=manifest.mode == "overwrite")

    def _clean_staging(self, store: Store, manifest: bool = True, lock: bool = False) -> None:
        """Delete everything under the job's staging prefix and abort the job's multipart
        uploads still in progress (failed task attempts), its manifest (if it has one)
        last."""
        self._check_staging(store)
        cache: dict[str, str] = {}  # a file reached through a link is not the job's
        paths = [p for p in _list_files(store, self.staging) if p != self.manifest_path
                 and _outside(store, p, self.staging, cache) is None]
        store.delete(paths)
        store.abort_uploads((path, upload_id, [])  # where listed: failed task attempts'
                            for path, upload_id, _ in _uploads(store, self.prefix) or []
                            if _job_of(path) == self.job_id)
        store.metrics.add("staged_deleted", len(paths))
        if lock:
            self._unlock(store)
        if manifest:
            store.delete([self.manifest_path])
        store.remove_dir(self.staging, f"{self.prefix}{STAGING_DIR}")

    def abort(self, tasks: Iterable[TaskCommit | None] = ()) -> Counters:
        """Undo the job (Spark calls it after a failed task or commit): before its commit
        point the table is restored exactly (the new files it published deleted, old files
        never touched) and the staging prefix deleted, the multipart uploads of ``tasks``
        aborted (on stores that cannot list uploads, the only way to find those of a job
        that wrote no manifest); a job already committed is finished instead (it cannot be
        undone). Returns what it cost."""
        metrics = Counters()
        store = open_store(self.storage, metrics)
        try:
            manifest = self._read_manifest(store)
        except ManifestRefused as refused:
            log.warning("abort of job %s on %s: its manifest %s is refused, left in place "
                        "and not followed: %s", self.job_id, self.url,
                        self.url.to_url(self.manifest_path), refused)
            return metrics
        if manifest is not None and manifest.state == PUBLISHED:
            log.warning("abort of job %s on %s: the job is already committed; finishing it",
                        self.job_id, self.url)
            self._roll_forward(store, manifest)
            return metrics
        if manifest is not None:
            self._roll_back(store, manifest)
        else:
            store.abort_uploads((f.final, f.upload_id, []) for t in tasks if t is not None
                                for f in t.files if f.upload_id)
            self._clean_staging(store, manifest=False)
        log.info("aborted job %s on %s: %d staged files deleted", self.job_id, self.url,
                 metrics.get("staged_deleted", 0))
        return metrics

    def _read_manifest(self, store: Store) -> _Manifest | None:
        """The job's manifest, checked (:func:`_check_manifest`; raises
        :class:`ManifestRefused`, also when it is a link, a directory or larger than
        :data:`MAX_MANIFEST_BYTES`: never read through a link nor past the limit), or None
        when it has none."""
        try:
            data = store.read(self.manifest_path, limit=MAX_MANIFEST_BYTES)
        except NotAPlainFile as err:
            raise ManifestRefused(str(err)) from None
        if data is None:
            return None
        manifest = _Manifest.parse(data)
        _check_manifest(store, manifest, self.prefix, self.job_id)
        return manifest

    def _check_staging(self, store: Store) -> None:
        """Raise :class:`ManifestRefused` unless the job's staging directory is a job's
        (its name a job id) and lies in the table: no link leads out of it, and neither it
        nor ``_temporary`` is a link or a file (local files)."""
        if not JOB_ID.fullmatch(self.job_id):
            raise ManifestRefused(f"the directory name {_short(self.job_id)} is not a job id")
        why = _outside(store, f"{self.staging}x", self.prefix)
        for directory in (f"{self.prefix}{STAGING_DIR}", self.staging.rstrip("/")):
            kind = store.kind(directory) if why is None else "dir"
            if kind not in ("absent", "dir", "unknown"):
                why = f"is not a directory ({directory} is {_KINDS.get(kind, 'a file')})"
        if why is not None:
            raise ManifestRefused(f"the staging directory {_short(self.staging)} {why}")

    @classmethod
    def _bare(cls, table: TableUrl, spec: StorageSpec, job_id: str) -> WriteJob:
        """A job known by its id only: enough to finish or undo it from its manifest."""
        job = cls.__new__(cls)
        job.url, job.storage, job.job_id, job.prefix = table, spec, job_id, table.prefix
        job.staging = f"{table.prefix}{STAGING_DIR}/{job_id}/"
        return job

    @classmethod
    def cleanup(cls, url: str, storage_options: dict[str, Any] | None = None, *,
                older_than: float = 0.0) -> list[str]:
        """Abort every multipart upload in progress under the table at ``url`` started at
        least ``older_than`` seconds ago (S3; elsewhere there are none): the uploads of
        jobs that will never complete them. A running job whose upload is aborted fails
        its commit and rolls back. Job manifests are not read. Returns the paths whose
        uploads were aborted; raises :class:`StorageError` where the store cannot list
        uploads."""
        table = TableUrl.parse(url)
        store = open_store(StorageSpec(table.protocol, table.storage_options(storage_options)))
        listed = _uploads(store, table.prefix)
        if listed is None:
            raise StorageError(
                f"the store of {table} cannot list multipart uploads (ListMultipartUploads "
                "answered 501 Not Implemented), so `listing cleanup` cannot find them; "
                f"`listing recover {table}` aborts those its jobs' manifests name, and a "
                "lifecycle rule aborting incomplete uploads (where the store has one) the "
                "rest")
        old: list[multipart.Upload] = [
            (path, upload_id, []) for path, upload_id, age in listed if age >= older_than]
        store.abort_uploads(old)
        return [path for path, _, _ in old]

    @classmethod
    def recover(cls, url: str, storage_options: dict[str, Any] | None = None, *,
                older_than: float = 0.0, orphans: bool = True) -> list[tuple[str, str]]:
        """Finish or undo every half-done job of the table at ``url``, from its manifest:
        a job past its commit point is rolled forward (its replaced files removed,
        ``_SUCCESS`` written), any other job whose manifest is at least ``older_than``
        seconds old is rolled back (the old table exactly); the staged files of a job that
        never reached its commit (no manifest), unchanged for ``older_than`` seconds, are
        deleted, and so are the multipart uploads (S3) of jobs without a manifest (only
        with ``orphans``: a job's tasks may run for longer than any ``older_than``).

        A manifest is untrusted data (anyone who can write the table can write one): one
        that breaks a rule of :func:`_check_manifest`, and a staging directory that is no
        job's (its name no job id, or a link out of the table), are never acted on: left
        in place, logged as a warning naming the file and the rule, and reported as
        ``"refused: <rule>"``. Ages are the store's (its files' modification times), never
        a writer's clock. The overwrite lock is released when no running job holds it: by
        an explicit recovery (``orphans``) whatever its age when ``older_than`` is 0, else
        once the lock file is ``older_than`` seconds old.

        Returns ``(job id, "forward" | "back" | "staging removed" | "uploads aborted" |
        "lock released: …" | "running" | "refused: …")`` per job found. Run it with no
        write to that table in progress, or with ``older_than`` beyond the longest
        commit."""
        table = TableUrl.parse(url)
        spec = StorageSpec(table.protocol, table.storage_options(storage_options))
        store = open_store(spec)
        staging_root = f"{table.prefix}{STAGING_DIR}/"
        done: list[tuple[str, str]] = []
        if _outside(store, staging_root + "x", table.prefix) is not None:
            rule = f"{table.to_url(staging_root)} leads out of the table through a link"
            log.warning("recover %s: refused every job: %s; nothing done", table, rule)
            return [(STAGING_DIR, f"refused: {rule}")]
        jobs: dict[str, list[ObjectMeta]] = {}
        for meta in store.find(staging_root):
            jobs.setdefault(meta.path[len(staging_root):].partition("/")[0], []).append(meta)
        now = time.time()
        for job_id, files in sorted(jobs.items()):
            job = cls._bare(table, spec, job_id)
            listed = next((f for f in files if f.path == job.manifest_path), None)
            try:
                job._check_staging(store)
                manifest = job._read_manifest(store) if listed is not None else None
            except ManifestRefused as refused:
                done.append((job_id, f"refused: {refused}"))
                log.warning("recover %s: job manifest %s refused, left in place and not "
                            "followed: %s", table, table.to_url(job.manifest_path), refused)
                continue
            try:
                if manifest is not None and manifest.state == PUBLISHED:
                    job._roll_forward(store, manifest)
                    what = "forward"
                elif manifest is not None:
                    written = _stamp(listed.last_modified if listed is not None else None,
                                     now)
                    what = "back" if now - written >= older_than else "running"
                    if what == "back":
                        job._roll_back(store, manifest)
                elif not orphans:
                    continue
                else:  # a job that never reached its commit: staged files only, invisible
                    newest = max((_stamp(f.last_modified, now) for f in files), default=now)
                    what = "staging removed" if now - newest >= older_than else "running"
                    if what == "staging removed":
                        job._clean_staging(store, manifest=False)
            except NotAPlainFile as err:  # changed since checked: stopped, left in place
                done.append((job_id, f"refused: {err}"))
                log.warning("recover %s: job %s stopped and left in place: %s", table,
                            job_id, err)
                continue
            done.append((job_id, what))
            log.info("recover %s: job %s %s", table, job_id, what)
        lock = f"{table.prefix}{LOCK_FILE}"
        try:
            holder = _lock_holder(store, lock)
        except NotAPlainFile as err:
            # no job's lock (ours are small plain files): set aside where the store can,
            # so the next overwrite can take the lock; its content kept for a person
            holder, aside = None, store.set_aside(lock)
            kept = (f"set aside as {table.to_url(aside)}" if aside else "left in place")
            done.append((LOCK_FILE, f"refused: the overwrite lock {err}; {kept}"))
            log.warning("recover %s: the overwrite lock %s refused, %s: %s",
                        table, table.to_url(lock), kept, err)
        live = {job_id for job_id, what in done if what == "running"}
        if holder is not None and holder not in live:
            stamp = store.last_modified(lock)
            age = now - (now if stamp is None else stamp)  # by the store's clock
            if (orphans and older_than <= 0) or age >= older_than:
                store.delete([lock])  # its job is gone: a stale lock
                done.append((holder, "lock released: its job has no live manifest"))
                log.warning("recover %s: released the overwrite lock of job %s (written "
                            "%.0f s ago by the store's clock): its job has no live "
                            "manifest", table, holder, age)
        if not orphans:
            return done
        uploads_of: dict[str, list[tuple[str, str, float]]] = {}
        listed_uploads = _uploads(store, table.prefix)
        if listed_uploads is None:
            log.warning("recover %s: the store cannot list multipart uploads (501): those "
                        "of jobs without a manifest cannot be found (a lifecycle rule "
                        "aborting incomplete uploads can); those manifests name were "
                        "aborted", table)
        for upload in listed_uploads or []:  # jobs killed before their commit
            owner = _job_of(upload[0])
            if owner is not None and owner not in jobs:
                uploads_of.setdefault(owner, []).append(upload)
        for job_id, uploads in sorted(uploads_of.items()):
            what = ("uploads aborted" if min(age for _, _, age in uploads) >= older_than
                    else "running")
            if what == "uploads aborted":
                store.abort_uploads((path, upload_id, []) for path, upload_id, _ in uploads)
            done.append((job_id, what))
            log.info("recover %s: job %s %s", table, job_id, what)
        return done


def _uploads(store: Store, prefix: str) -> list[tuple[str, str, float]] | None:
    """The multipart uploads in progress under ``prefix``, or None where the store cannot
    list them (ListMultipartUploads answered 501)."""
    if not store.lists_uploads(prefix):
        return None
    try:
        return store.list_uploads(prefix)
    except StorageError:
        if store.lists_uploads(prefix):
            raise
        return None


def _stamp(when: dt.datetime | None, default: float) -> float:
    return default if when is None else when.timestamp()


# --- the Python API --------------------------------------------------------------------------

def write_table(url: str, data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch], *,
                format: str | FileFormat = "parquet",  # noqa: A002
                partition_by: Sequence[str] = (), mode: str = "append",
                partition_overwrite_mode: str = "static",
                storage_options: dict[str, Any] | None = None,
                max_records_per_file: int | None = None, compression: str | None = None,
                **format_options: Any) -> WriteResult:
    """Write ``data`` to the table at ``url``, Hive-partitioned by ``partition_by`` (by
    default, an existing table's own partition columns: :func:`target_partition_by`).

    ``mode``: ``append`` (default), ``overwrite`` (``partition_overwrite_mode`` ``static``:
    the whole table; ``dynamic``: only the partitions written), ``error`` (fail if the table
    has files), ``ignore`` (do nothing if it has). ``format_options`` are the format's own
    (CSV ``header``, ``delimiter``). Nothing is visible before the commit; any failure
    before it deletes the staged files and leaves the table as it was.
    """
    schema, batches = _schema_and_batches(data)
    looked = Counters()
    partition_by = target_partition_by(url, schema, partition_by, mode=mode,
                                       partition_overwrite_mode=partition_overwrite_mode,
                                       storage_options=storage_options, counters=looked)
    job = WriteJob(url, schema, format=format, partition_by=partition_by, mode=mode,
                   partition_overwrite_mode=partition_overwrite_mode,
                   storage_options=storage_options, max_records_per_file=max_records_per_file,
                   compression=compression, **format_options)
    job.setup_metrics.add_all(looked)
    job.setup()
    try:
        task = job.write_task(batches)
    except BaseException:
        try:
            job.abort()
        except Exception as err:  # noqa: BLE001 - the write's own error is the one to raise
            log.warning("could not delete the staged files of job %s: %s", job.job_id, err)
        raise
    try:
        return job.commit([task])
    except BaseException:  # a refused or failed commit leaves no staged file or upload
        try:
            job.abort([task])
        except Exception as err:  # noqa: BLE001 - the commit's own error is the one to raise
            log.warning("could not delete the staged files of job %s: %s", job.job_id, err)
        raise


def _schema_and_batches(data: Any) -> tuple[pa.Schema, Iterable[pa.RecordBatch]]:
    if isinstance(data, pa.Table):
        return data.schema, data.to_batches()
    if isinstance(data, pa.RecordBatch):
        return data.schema, [data]
    if isinstance(data, pa.RecordBatchReader):
        return data.schema, data
    iterator = iter(data)
    first = next(iterator, None)
    if first is None:
        raise OptionError("write_table got no batches: give a pyarrow Table (its schema is "
                          "kept even when empty) or at least one RecordBatch")
    if not isinstance(first, pa.RecordBatch):
        raise OptionError(f"write_table takes a pyarrow Table or RecordBatches, got "
                          f"{type(first).__name__}")

    def chained() -> Iterator[pa.RecordBatch]:
        yield first
        yield from iterator
    return first.schema, chained()


def _choice(name: str, value: str, allowed: Sequence[str]) -> str:
    text = str(value).strip().lower()
    text = {"errorifexists": "error", "default": "error"}.get(text, text) \
        if name == "mode" else text
    if text not in allowed:
        raise OptionError(f"{name}={value!r} must be one of {', '.join(allowed)}")
    return text


def _partition_by(columns: Sequence[str] | str, schema: pa.Schema) -> list[str]:
    if isinstance(columns, str):
        columns = [c.strip() for c in columns.split(",") if c.strip()]
    out: list[str] = []
    for name in columns:
        if name not in schema.names:
            raise OptionError(f"partition_by column {name!r} is not in the data "
                              f"({', '.join(schema.names)})")
        if name in out:
            raise OptionError(f"partition_by names {name!r} twice")
        if not name or is_hidden(f"{escape_path_name(name)}=", directory=True):
            raise OptionError(f"partition_by column {name!r}: a directory name that starts "
                              "with '.' (or is empty) is hidden from readers (Spark's and "
                              "ours), so the rows would read back as none; rename the column")
        type_ = schema.field(name).type
        if not any(check(type_) for check in _PARTITION_TYPES):
            raise OptionError(f"partition_by column {name!r} has type {type_}, which cannot "
                              "be a partition value (strings, numbers, booleans, dates and "
                              "timestamps can)")
        out.append(name)
    if out and len(out) == len(schema.names):
        raise OptionError("partition_by cannot name every column: the files would hold none")
    return out


# --- the target's layout, before a job starts ------------------------------------------------

def target_partition_by(url: str, schema: pa.Schema, partition_by: Sequence[str] | str = (),
                        *, mode: str = "append", partition_overwrite_mode: str = "static",
                        storage_options: dict[str, Any] | None = None,
                        counters: Counters | None = None) -> list[str]:
    """The partition columns a write of ``schema`` to ``url`` must use, so that reads see
    every row it writes and every row the table held (Spark's ``insertInto``).

    The table's layout is discovered as reads discover it (:func:`listing.hive.
    discover_columns` on the first page of the flat listing: one LIST, counted in
    ``counters``); only ``append`` and ``overwrite`` look (``error``/``ignore`` write to an
    empty table or not at all). Invariants, where the table holds visible files:

    - partitioned by ``P``: no ``partition_by`` means ``P`` (an append would otherwise put
      its files at the root, which reads skip beside partition directories); one other
      than ``P`` is an :class:`OptionError` naming both, as is data without a column of
      ``P``; except a static overwrite, which replaces every file (the layout given wins);
    - not partitioned (files at its root): a ``partition_by`` is refused unless the write
      is a static overwrite, since its directories would hide the root files from reads;
    - a layout reads cannot determine (:class:`PartitionLayoutError`) refuses the write.
    """
    given = _partition_by(partition_by, schema)
    mode = _choice("mode", mode, MODES)
    if mode not in ("append", "overwrite"):
        return given
    replaces_all = mode == "overwrite" and str(partition_overwrite_mode).lower() != "dynamic"
    table = TableUrl.parse(url)
    if table.glob is not None:
        return given  # WriteJob refuses it, naming the glob
    lister = Lister(StorageSpec(table.protocol, dict(storage_options or {})), counters)
    page = next(iter(lister.pages(table.prefix, delimiter=False)), None)
    paths = [m.path for m in page.files] if page is not None else []
    visible = [p for p in paths if not is_hidden_below(table.prefix, p)]
    if not visible:
        return given  # a new or empty table takes the layout given
    try:
        existing = [n for n, _ in discover_columns(table.prefix, visible, None, table.to_url)]
    except PartitionLayoutError as err:
        raise OptionError(f"cannot write to {table}: its partition layout cannot be "
                          f"determined ({err}); nothing was written") from None
    if replaces_all and (given or not all(n in schema.names for n in existing)):
        return given  # every old file goes: nothing the write leaves is hidden
    if not existing:
        if given and not replaces_all:
            raise OptionError(
                f"{table} is not partitioned (its files sit at its root) but the write has "
                f"partition_by={given}: reads would skip its root files beside the new "
                "partition directories; write without partition_by, or overwrite the whole "
                "table (mode='overwrite', partition_overwrite_mode='static')")
        return given
    if not given:
        missing = [n for n in existing if n not in schema.names]
        if missing:
            raise OptionError(
                f"{table} is partitioned by {existing} but the data has no column "
                f"{', '.join(map(repr, missing))} (columns: {', '.join(schema.names)}); "
                "files written without them would sit where reads skip them")
        return _partition_by(existing, schema)
    if given != existing:
        raise OptionError(
            f"partition_by={given} disagrees with the partition columns of {table}, "
            f"{existing}: reads would skip one of the two layouts; give "
            f"partition_by={existing} (or none)")
    return given
