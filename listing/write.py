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

``mode="error"``/``"ignore"`` check for existing files at ``setup()``, not atomically with
the commit. Files are encoded by the format's :class:`~listing.formats.base.FileSink`. On
S3 each file is built in memory and sent with one PUT (bounded by
``max_records_per_file``); local files are written in place under the staging prefix.
"""

from __future__ import annotations

import dataclasses
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
    PartitionValueError,
    TableExistsError,
)
from listing.formats.base import FileFormat, FileSink, FileWriter
from listing.hive import escape_path_name, is_hidden, is_hidden_below, partition_path
from listing.list_cache import CACHE
from listing.options import parse_int
from listing.storage import multipart
from listing.storage.listing import ObjectMeta
from listing.storage.spec import StorageSpec
from listing.storage.store import MAX_S3_KEY_BYTES, Finish, Store, open_store, store_class
from listing.url import TableUrl

__all__ = ["MODES", "PARTITION_OVERWRITE_MODES", "StagedFile", "TaskCommit", "WriteJob",
           "WriteResult", "partition_path", "write_table"]

log = logging.getLogger("listing.write")

MODES = ("append", "overwrite", "error", "ignore")
PARTITION_OVERWRITE_MODES = ("static", "dynamic")
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
#: files a task keeps open at once (each holds up to a part, or on S3's staged-copy commit
#: its whole file, in memory); opening one more closes the oldest (the partition's next
#: file is ``-c<n+1>``)
MAX_OPEN_FILES = 32
#: how a job publishes its files: ``multipart`` (S3: zero-copy, files are multipart
#: uploads the commit completes), ``copy`` (staged files copied or renamed into place),
#: ``auto`` (multipart on S3, copy elsewhere)
COMMIT_PROTOCOLS = ("auto", "multipart", "copy")
_METRICS = ("files_written", "rows_written", "bytes_written", "files_committed",
            "files_deleted", "staged_deleted", "put_requests", "copy_requests",
            "delete_requests", "list_requests", "get_requests", "post_requests", "renames",
            "retries",
            "cleanup_failures", "jobs_recovered")


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
    metrics: dict[str, int] = field(default_factory=dict)


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

    def dumps(self) -> bytes:
        return json.dumps(dataclasses.asdict(self)).encode()

    @classmethod
    def read(cls, store: Store, path: str) -> _Manifest | None:
        data = store.read(path)
        if data is None:
            return None
        try:
            raw = json.loads(data)
            raw["publish"] = [(src, dst) for src, dst in raw["publish"]]
            raw["uploads"] = [(path, upload_id, [(n, etag) for n, etag in parts])
                              for path, upload_id, parts in raw.get("uploads", [])]
            return cls(**raw)
        except (ValueError, TypeError, KeyError) as err:
            raise CommitError(f"job manifest {path} is unreadable ({err}): remove it by hand "
                              "once you checked the table") from None


_FILE_NAME = re.compile(r"part-\d{5}-(.+)-c\d{3}[^/]*$")


def _job_of(path: str) -> str | None:
    """The job id in a data file's name (``part-<task>-<job id>-c<n>.<ext>``), or None."""
    match = _FILE_NAME.search(path.rsplit("/", 1)[-1])
    return match.group(1) if match else None


def _lock_holder(store: Store, path: str) -> tuple[str, float] | None:
    """(job id, creation time) of the overwrite lock at ``path``, or None if unlocked."""
    data = store.read(path)
    if data is None:
        return None
    try:
        raw = json.loads(data)
        return str(raw["job_id"]), float(raw["created"])
    except (ValueError, KeyError, TypeError):
        return "?", 0.0  # unreadable: stale once recover sees it


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
    to tasks); filesystems are rebuilt where used."""

    def __init__(self, url: str, schema: pa.Schema, *, format: str | FileFormat = "parquet",  # noqa: A002
                 partition_by: Sequence[str] = (), mode: str = "append",
                 partition_overwrite_mode: str = "static",
                 storage_options: dict[str, Any] | None = None,
                 max_records_per_file: int | str | None = None, compression: str | None = None,
                 job_id: str | None = None, recover_after: float = RECOVER_AFTER,
                 commit_protocol: str = "auto", part_size: int | str | None = None,
                 **format_options: Any) -> None:
        self.recover_after = recover_after
        self.url = TableUrl.parse(url)
        if self.url.glob is not None:
            raise OptionError(f"cannot write to a glob {url!r}: give the table's root")
        self.mode = _choice("mode", mode, MODES)
        self.partition_overwrite_mode = _choice("partition_overwrite_mode",
                                                partition_overwrite_mode,
                                                PARTITION_OVERWRITE_MODES)
        self.partition_by = _partition_by(partition_by, schema)
        self.max_records_per_file = (
            None if max_records_per_file in (None, "", 0, "0")
            else parse_int(max_records_per_file, "max_records_per_file", minimum=1))
        self.storage = StorageSpec(self.url.protocol, dict(storage_options or {}))
        protocol = _choice("commit_protocol", commit_protocol, COMMIT_PROTOCOLS)
        if protocol == "multipart" and not store_class(self.storage).supports_multipart:
            raise OptionError(f"commit_protocol='multipart' needs S3 (multipart uploads), "
                              f"not {self.url.protocol}://; use 'copy' or 'auto'")
        #: S3's zero-copy commit: files stream to their final keys as multipart uploads
        self.part_size: int | None = None
        if protocol == "multipart" or (protocol == "auto"
                                       and store_class(self.storage).supports_multipart):
            self.part_size = (multipart.PART_SIZE if part_size in (None, "")
                              else parse_int(part_size, "part_size",
                                             minimum=multipart.MIN_PART_SIZE))
        self.format = formats.get(format, **format_options)
        self.schema = schema
        self.data_schema = pa.schema([f for f in schema if f.name not in self.partition_by])
        self.sink: FileSink = self.format.sink(self.data_schema, compression)
        self.job_id = job_id or uuid.uuid4().hex
        self.prefix = self.url.prefix
        self.staging = f"{self.prefix}{STAGING_DIR}/{self.job_id}/"
        self.skip = False
        self.setup_metrics: dict[str, int] = {}

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
        uploads of jobs without a manifest are left to ``listing recover``/``cleanup``)."""
        recovered = self.recover(str(self.url), self.storage.options,
                                 older_than=self.recover_after, orphans=False)
        self.setup_metrics["jobs_recovered"] = sum(1 for _, what in recovered
                                                   if what != "running")
        if self.mode not in ("error", "ignore"):
            return
        store = open_store(self.storage, self.setup_metrics)
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
        metrics: dict[str, int] = {}
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
            metrics["files_written"] = metrics.get("files_written", 0) + 1
            metrics["rows_written"] = metrics.get("rows_written", 0) + f.rows
            metrics["bytes_written"] = metrics.get("bytes_written", 0) + size

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
            path = partition_path(pairs)
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
        metrics = {name: 0 for name in _METRICS}
        for source in [self.setup_metrics] + [t.metrics for t in given]:
            for name, n in source.items():
                metrics[name] = metrics.get(name, 0) + n
        staged = [f for t in given for f in t.files]
        if self.skip:
            return WriteResult(str(self.url), self.job_id, self.mode, [], [], 0, metrics)
        finals: dict[str, StagedFile] = {}
        for f in staged:
            if f.final in finals:
                raise CommitError(f"job {self.job_id}: two tasks wrote {f.final}")
            finals[f.final] = f
        store = open_store(self.storage, metrics)
        partitions = sorted({f.partition for f in staged})
        try:
            manifest = _Manifest.read(store, self.manifest_path)
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
        metrics["files_committed"] = len(manifest.publish) + len(manifest.uploads)
        self._roll_forward(store, manifest)
        log.info("committed job %s to %s: %d files, %d rows", self.job_id, self.url,
                 len(staged), sum(f.rows for f in staged))
        return WriteResult(str(self.url), self.job_id, self.mode,
                           [self.url.to_url(f.final) for f in staged], partitions,
                           sum(f.rows for f in staged), metrics)

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
        had_success = store.read(self.prefix + SUCCESS_FILE) is not None
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

    def _lock(self, store: Store) -> None:
        """Take the table's overwrite lock, or raise :class:`ConcurrentWriteError` naming
        the job that holds it (two overwrites committing at once would both survive)."""
        body = json.dumps({"job_id": self.job_id, "created": time.time()}).encode()
        if store.put_if_absent(self.lock_path, body) is not False:
            return  # taken (or a store without conditional writes: not isolated)
        holder = _lock_holder(store, self.lock_path)
        if holder is not None and holder[0] == self.job_id:
            return  # ours (a retried request, or a re-run commit)
        raise ConcurrentWriteError(
            f"job {self.job_id} cannot commit its overwrite of {self.url}: job "
            f"{holder[0] if holder else '?'} is committing an overwrite of it (lock "
            f"{self.url.to_url(self.lock_path)}). Nothing visible changed; retry once it "
            f"is done, or, if that job was killed, run `listing recover {self.url}`")

    def _unlock(self, store: Store) -> None:
        """Release the overwrite lock if this job holds it."""
        holder = _lock_holder(store, self.lock_path)
        if holder is not None and holder[0] == self.job_id:
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
        store.metrics["files_deleted"] = store.metrics.get("files_deleted", 0) + \
            len(manifest.remove)
        store.prune_dirs(manifest.remove, self.prefix)
        _invalidate_listings(self.storage, self.prefix)
        try:
            store.put(self.prefix + SUCCESS_FILE, b"")
        except Exception as err:  # noqa: BLE001 - the job is committed: logged, counted
            store.add("cleanup_failures")
            log.warning("job %s is committed to %s; could not write _SUCCESS (its manifest "
                        "stays: recover writes it): %s", manifest.job_id, self.url, err)
            return
        try:
            self._clean_staging(store, lock=manifest.mode == "overwrite")
        except Exception as err:  # noqa: BLE001 - the job is committed: logged, counted
            store.add("cleanup_failures")
            log.warning("job %s is committed to %s; could not clean its staging prefix "
                        "(recover does): %s", manifest.job_id, self.url, err)

    def _roll_back(self, store: Store, manifest: _Manifest) -> None:
        """Undo an unpublished job: delete the new files it published (never an old one:
        every new name holds the job id), restore ``_SUCCESS`` if the table had one, clean
        the staging prefix."""
        store.abort_uploads(manifest.uploads)
        new = [dst for dst in [d for _, d in manifest.publish] + [u[0] for u in manifest.uploads]
               if manifest.job_id in dst.rsplit("/", 1)[-1]]
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
        paths = [p for p in _list_files(store, self.staging) if p != self.manifest_path]
        store.delete(paths)
        store.abort_uploads((path, upload_id, [])
                            for path, upload_id, _ in store.list_uploads(self.prefix)
                            if _job_of(path) == self.job_id)
        store.metrics["staged_deleted"] = store.metrics.get("staged_deleted", 0) + len(paths)
        if lock:
            self._unlock(store)
        if manifest:
            store.delete([self.manifest_path])
        store.remove_dir(self.staging, f"{self.prefix}{STAGING_DIR}")

    def abort(self) -> dict[str, int]:
        """Undo the job (Spark calls it after a failed task or commit): before its commit
        point the table is restored exactly (the new files it published deleted, old files
        never touched) and the staging prefix deleted; a job already committed is finished
        instead (it cannot be undone). Returns what it cost."""
        metrics: dict[str, int] = {}
        store = open_store(self.storage, metrics)
        manifest = _Manifest.read(store, self.manifest_path)
        if manifest is not None and manifest.state == PUBLISHED:
            log.warning("abort of job %s on %s: the job is already committed; finishing it",
                        self.job_id, self.url)
            self._roll_forward(store, manifest)
            return metrics
        if manifest is not None:
            self._roll_back(store, manifest)
        else:
            self._clean_staging(store, manifest=False)
        log.info("aborted job %s on %s: %d staged files deleted", self.job_id, self.url,
                 metrics.get("staged_deleted", 0))
        return metrics

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
        its commit and rolls back. Returns the paths whose uploads were aborted."""
        table = TableUrl.parse(url)
        store = open_store(StorageSpec(table.protocol, dict(storage_options or {})), {})
        old: list[multipart.Upload] = [
            (path, upload_id, []) for path, upload_id, age in store.list_uploads(table.prefix)
            if age >= older_than]
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
        with ``orphans``: a job's tasks may run for longer than any ``older_than``); a
        stale overwrite lock is released. Returns ``(job id, "forward" | "back" |
        "staging removed" | "uploads aborted" | "lock released" | "running")`` per job
        found. Run it with no write to that table in progress, or with ``older_than``
        beyond the longest commit."""
        table = TableUrl.parse(url)
        spec = StorageSpec(table.protocol, dict(storage_options or {}))
        metrics: dict[str, int] = {}
        store = open_store(spec, metrics)
        staging_root = f"{table.prefix}{STAGING_DIR}/"
        jobs: dict[str, list[ObjectMeta]] = {}
        for meta in store.find(staging_root):
            jobs.setdefault(meta.path[len(staging_root):].partition("/")[0], []).append(meta)
        done: list[tuple[str, str]] = []
        now = time.time()
        for job_id, files in sorted(jobs.items()):
            job = cls._bare(table, spec, job_id)
            manifest = (_Manifest.read(store, job.manifest_path)
                        if any(f.path == job.manifest_path for f in files) else None)
            if manifest is not None and manifest.state == PUBLISHED:
                job._roll_forward(store, manifest)
                what = "forward"
            elif manifest is not None:
                what = "back" if now - manifest.created >= older_than else "running"
                if what == "back":
                    job._roll_back(store, manifest)
            elif not orphans:
                continue
            else:  # a job that never reached its commit: staged files only, invisible
                newest = max((f.last_modified.timestamp() for f in files
                              if f.last_modified is not None), default=now)
                what = "staging removed" if now - newest >= older_than else "running"
                if what == "staging removed":
                    job._clean_staging(store, manifest=False)
            done.append((job_id, what))
            log.info("recover %s: job %s %s", table, job_id, what)
        holder = _lock_holder(store, f"{table.prefix}{LOCK_FILE}")
        live = {job_id for job_id, what in done if what == "running"}
        if holder is not None and holder[0] not in live and now - holder[1] >= older_than:
            store.delete([f"{table.prefix}{LOCK_FILE}"])  # its job is gone: a stale lock
            done.append((holder[0], "lock released"))
        if not orphans:
            return done
        uploads_of: dict[str, list[tuple[str, str, float]]] = {}
        for upload in store.list_uploads(table.prefix):  # jobs killed before their commit
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


# --- the Python API --------------------------------------------------------------------------

def write_table(url: str, data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch], *,
                format: str | FileFormat = "parquet",  # noqa: A002
                partition_by: Sequence[str] = (), mode: str = "append",
                partition_overwrite_mode: str = "static",
                storage_options: dict[str, Any] | None = None,
                max_records_per_file: int | None = None, compression: str | None = None,
                **format_options: Any) -> WriteResult:
    """Write ``data`` to the table at ``url``, Hive-partitioned by ``partition_by``.

    ``mode``: ``append`` (default), ``overwrite`` (``partition_overwrite_mode`` ``static``:
    the whole table; ``dynamic``: only the partitions written), ``error`` (fail if the table
    has files), ``ignore`` (do nothing if it has). ``format_options`` are the format's own
    (CSV ``header``, ``delimiter``). Nothing is visible before the commit; any failure
    before it deletes the staged files and leaves the table as it was.
    """
    schema, batches = _schema_and_batches(data)
    job = WriteJob(url, schema, format=format, partition_by=partition_by, mode=mode,
                   partition_overwrite_mode=partition_overwrite_mode,
                   storage_options=storage_options, max_records_per_file=max_records_per_file,
                   compression=compression, **format_options)
    job.setup()
    try:
        task = job.write_task(batches)
    except BaseException:
        try:
            job.abort()
        except Exception as err:  # noqa: BLE001 - the write's own error is the one to raise
            log.warning("could not delete the staged files of job %s: %s", job.job_id, err)
        raise
    return job.commit([task])


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
