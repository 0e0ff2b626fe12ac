"""One write job (:class:`WriteJob`): its options, ``setup()`` on the driver, and the tasks
that split their rows by partition (the demux) and stage one file per partition under the
job's hidden staging prefix. The commit it inherits (:mod:`listing.write.commit`);
recovery is :mod:`listing.write.recovery`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from listing import formats
from listing.errors import CommitError, OptionError, PartitionValueError, TableExistsError
from listing.formats.base import FileFormat, FileSink, FileWriter
from listing.layout import TemplateLayout
from listing.metrics import Counters
from listing.options import registry
from listing.storage import multipart
from listing.storage.spec import StorageSpec
from listing.storage.store import MAX_S3_KEY_BYTES, Finish, open_store, store_class
from listing.url import TableUrl
from listing.write import recovery
from listing.write.commit import JobCommit
from listing.write.lock import LOCK_FILE, check_isolation
from listing.write.manifest import ManifestRefusedError
from listing.write.options import (
    checked_partition_by,
    layout_partition_by,
    typed_commit_protocol,
    write_mode,
)
from listing.write.paths import (
    JOB_ID,
    STAGING_DIR,
    list_files,
    partition_dir,
    write_layout,
)
from listing.write.results import StagedFile, StagedUpload, TaskCommit
from listing.write.spill import PartitionSpill

log = logging.getLogger("listing.write")

#: a write rolls back the half-done jobs it finds whose manifest is older than this
#: (seconds; a younger one may still be committing); jobs past their commit point are
#: always finished
RECOVER_AFTER = 3600.0
#: files a task keeps open at once (each holds up to a part, or on S3's staged-copy commit
#: its whole file, in memory); rows of further partitions wait on local disk until those
#: are closed (:mod:`listing.write.spill`): a partition gets one file per task
MAX_OPEN_FILES = 32


class _OpenFile:
    def __init__(self, writer: FileWriter, finish: Finish, staged: str,
                 final: str, partition: str) -> None:
        self.writer, self.finish = writer, finish
        self.staged, self.final, self.partition = staged, final, partition
        self.rows = 0


#: bytes a local file is copied to its store in at a time (:class:`_CopiedFile`)
COPY_CHUNK = 8 << 20


class _CopiedFile(FileWriter):
    """A finished local file, copied into the output stream on ``close()``."""

    def __init__(self, local: IO[bytes], out: pa.NativeFile) -> None:
        self.local, self.out, self.closed = local, out, False

    @classmethod
    def opener(cls, local: IO[bytes]) -> Callable[[pa.NativeFile], FileWriter]:
        return lambda out: cls(local, out)

    def write(self, batch: pa.RecordBatch) -> None:
        raise TypeError("a copied file takes no rows")

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        while chunk := self.local.read(COPY_CHUNK):
            self.out.write(chunk)
        self.out.close()


class _TaskFiles:
    """One task's files of a job: opened at their staged (or, multipart, final) keys, named
    per partition, finished into :class:`StagedFile` records counted in ``metrics``."""

    def __init__(self, job: WriteJob, task: int, attempt: int) -> None:
        self.job, self.task, self.attempt = job, task, attempt
        self.metrics = Counters()
        self.store = open_store(job.storage, self.metrics, job.part_size)
        self.stage_dir = f"{job.staging}task-{task:05d}-{attempt}/"
        self.counters: dict[str, int] = {}
        self.done: list[StagedFile] = []
        #: multipart files written, their last parts maybe still being sent: finished
        #: at the task's end, so that every file's uploads overlap
        self.closed: list[_OpenFile] = []
        #: the bytes a partition's folder may take in a key (None: no limit)
        self.key_room: int | None = None
        if self.store.max_key_bytes is not None:  # the longest staged key, less its folder
            longest = f"{self.stage_dir}{job._file_name(task, 999)}".partition("/")[2]
            self.key_room = self.store.max_key_bytes - len(longest.encode())

    @property
    def empty(self) -> bool:
        """No file closed yet."""
        return not self.done and not self.closed

    def open(self, partition: str,
             writer: Callable[[pa.NativeFile], FileWriter]) -> _OpenFile:
        n = self.counters.get(partition, 0)
        self.counters[partition] = n + 1
        name = self.job._file_name(self.task, n)
        staged = f"{self.stage_dir}{partition}{name}"
        final = f"{self.job.prefix}{partition}{name}"
        out, finish = self.store.create(final if self.job.part_size is not None else staged)
        return _OpenFile(writer(out), finish, staged, final, partition)

    def close(self, f: _OpenFile) -> None:
        f.writer.close()
        if self.job.part_size is not None:
            self.closed.append(f)
        else:  # a staged file is sent (or is on disk) now: its buffer goes
            self._finish(f)

    def _finish(self, f: _OpenFile) -> None:
        size, upload = f.finish()
        if upload is None:
            self.done.append(StagedFile(f.staged, f.final, f.partition, f.rows, size))
        else:
            self.done.append(StagedFile("", f.final, f.partition, f.rows, size, upload[1],
                                        tuple(upload[2])))
        self.metrics.add("files_written")
        self.metrics.add("rows_written", f.rows)
        self.metrics.add("bytes_written", size)

    def finished(self) -> TaskCommit:
        """The task's commit message, once every file's uploads are done (a failure raises
        here)."""
        while self.closed:
            self._finish(self.closed[0])
            self.closed.pop(0)
        return TaskCommit(self.task, self.attempt, tuple(self.done), self.metrics)

    def discard(self, still_open: Sequence[_OpenFile]) -> None:
        """After a failure: no file is still being sent once this returns; the staged files
        and uploads go with the job's abort."""
        for f in [*still_open, *self.closed]:
            try:
                f.finish(keep=False)
            except Exception:  # noqa: BLE001, S110 - the original error matters
                pass
        for f in still_open:
            try:
                f.writer.close()
            except Exception:  # noqa: BLE001, S110 - the original error matters
                pass


def group_rows(codes: Sequence[np.ndarray],
               sizes: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Rows grouped by their tuple of ``codes`` (one array per partition column, each code
    below its column's ``sizes``): ``(the rows in group order, where each group after the
    first starts in that order)``. Groups come in ascending order of
    their code tuples, rows in input order within a group. Linear in the rows while the
    codes' product is small (a count per key), a sort of one integer key otherwise; never
    a sort of row tuples (numpy's ``unique(axis=0)``, ~30 times slower)."""
    key = np.asarray(codes[0], dtype=np.int64)
    for column, size in zip(codes[1:], sizes[1:], strict=True):
        if int(key.max(initial=0)) + 1 > (1 << 62) // max(size, 1):  # densify first
            key = np.unique(key, return_inverse=True)[1].reshape(-1)
        key = key * size + np.asarray(column, dtype=np.int64)
    span = int(key.max(initial=0)) + 1
    if span <= max(1 << 16, 4 * len(key)):
        counts = np.bincount(key, minlength=span)
        present = np.flatnonzero(counts)
        dense = np.zeros(span, dtype=np.int64)
        dense[present] = np.arange(len(present))
        group, sizes_of = dense[key], counts[present]
    else:
        _, group = np.unique(key, return_inverse=True)
        group = group.reshape(-1)
        sizes_of = np.bincount(group)
    groups = len(sizes_of)
    if groups == 1:
        order = np.arange(len(key))
    else:  # a stable sort of small integers is a radix sort in numpy
        small = np.uint8 if groups <= 1 << 8 else np.uint16 if groups <= 1 << 16 else np.int64
        order = np.argsort(group.astype(small), kind="stable")
    return order, np.cumsum(sizes_of)[:-1]


def check_write_options(fmt: str | FileFormat, options: dict[str, Any], where: str,
                        *entry: Callable[..., Any]) -> None:
    """Refuse, before any request, an option of a write that is no keyword of
    :class:`WriteJob` (or of the ``entry`` point that passes its options on) and no
    option of the format ``fmt``, naming the option meant."""
    if not options:
        return
    registry.refuse_unknown(options, {
        "keywords": registry.keyword_names(WriteJob.__init__, *entry),
        f"{formats.label(fmt)} options": formats.option_names(fmt)}, where)


class WriteJob(JobCommit):
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
                 layout: Any = None, **format_options: Any) -> None:
        check_write_options(format, format_options, "for WriteJob")
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
        table = TableUrl.parse(url)
        if table.glob is not None:
            raise OptionError(f"cannot write to a glob {url!r}: give the table's root")
        self.mode = write_mode(mode)
        self.partition_overwrite_mode: str = given.get("partition_overwrite_mode", "static")
        self.partition_by = checked_partition_by(partition_by, schema)
        #: the template (option ``layout``) partition folders are spelled with; None: Hive
        self.layout: TemplateLayout | None = None
        if layout not in (None, ""):
            self.layout = write_layout(table.prefix, layout, schema, self.time_zone)
            self.partition_by = layout_partition_by(self.layout.names, partition_by, schema)
        self.max_records_per_file: int | None = given.get("max_records_per_file")
        storage = StorageSpec(table.protocol, table.storage_options(storage_options))
        protocol = typed_commit_protocol(commit_protocol)
        if protocol == "multipart" and not store_class(storage).supports_multipart:
            raise OptionError(f"commit_protocol='multipart' needs S3 (multipart uploads), "
                              f"not {table.protocol}://; use 'copy' or 'auto'")
        #: S3's zero-copy commit: files stream to their final keys as multipart uploads
        self.part_size: int | None = None
        if protocol == "multipart" or (protocol == "auto"
                                       and store_class(storage).supports_multipart):
            self.part_size = given.get("part_size", multipart.PART_SIZE)
            if self.part_size < multipart.MIN_PART_SIZE:
                raise OptionError(f"option part_size={self.part_size!r} must be at least "
                                  f"{multipart.MIN_PART_SIZE}")
        self.format = formats.get(format, **format_options)
        self.schema = schema
        self.data_schema = pa.schema([f for f in schema if f.name not in self.partition_by])
        self.sink: FileSink = self.format.sink(self.data_schema, compression)
        super().__init__(table, storage, job_id or uuid.uuid4().hex)

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
        except ManifestRefusedError as err:
            raise CommitError(f"cannot write to {self.url}: {err}; nothing was written "
                              "(remove the link)") from None
        if self.mode == "overwrite":
            check_isolation(store, self.url, self.overwrite_without_lock)
            self.isolation_checked = True
        if self.mode not in ("error", "ignore"):
            return
        if list_files(store, self.prefix, visible_below=self.prefix):
            if self.mode == "error":
                raise TableExistsError(f"{self.url} already holds files (mode='error'); use "
                                       "mode='append' or 'overwrite'")
            self.skip = True

    # --- a task -----------------------------------------------------------------------------
    def write_task(self, batches: Iterable[pa.RecordBatch], task: int = 0,
                   attempt: int = 0) -> TaskCommit:
        """Write ``batches`` under the staging prefix: one file per partition (a new one
        after ``max_records_per_file`` rows); at most :data:`MAX_OPEN_FILES` open, the rows
        of further partitions spilled to local disk and written once those are closed.
        Nothing is visible to readers."""
        if self.skip:
            return TaskCommit(task, attempt, (), Counters())
        files = _TaskFiles(self, task, attempt)
        open_files: dict[str, _OpenFile] = {}

        def write_rows(partition: str, part: pa.RecordBatch) -> None:
            offset = 0
            while offset < part.num_rows:
                f = open_files.get(partition)
                if f is None:
                    f = open_files[partition] = files.open(partition, self.sink.open)
                room = part.num_rows - offset
                if self.max_records_per_file is not None:
                    room = min(room, self.max_records_per_file - f.rows)
                f.writer.write(part.slice(offset, room))
                f.rows += room
                offset += room
                if self.max_records_per_file is not None and \
                        f.rows >= self.max_records_per_file:
                    files.close(open_files.pop(partition))

        spill = PartitionSpill()
        try:
            for batch in batches:
                for partition, part in self._split(self._conform(batch), files.key_room):
                    if partition not in open_files and (
                            partition in spill or len(open_files) >= MAX_OPEN_FILES):
                        spill.add(partition, part)  # bounded memory: written below
                    else:
                        write_rows(partition, part)
            if files.empty and not open_files and not self.partition_by and task == 0:
                # an empty table keeps its schema
                open_files[self._root_dir()] = files.open(self._root_dir(), self.sink.open)
            for partition in list(open_files):
                files.close(open_files.pop(partition))
            if spill:
                files.metrics.add("rows_spilled", spill.rows)
            for partition, parts in spill.partitions():  # one open file at a time
                for part in parts:
                    write_rows(partition, part)
                if partition in open_files:
                    files.close(open_files.pop(partition))
            return files.finished()
        except BaseException:
            files.discard(list(open_files.values()))
            raise
        finally:
            spill.close()

    def upload_task(self, uploads: Sequence[StagedUpload], task: int = 0,
                    attempt: int = 0) -> TaskCommit:
        """Send the finished local files another engine wrote in this task (Spark's Parquet
        writer) as the job's files, where :meth:`write_task` would have written them: a
        partition's ``n``-th file named as its, each checked as its rows would be (a NUL
        byte, an S3 key too long) before any is sent. The local files are removed."""
        try:
            if self.skip:
                return TaskCommit(task, attempt, (), Counters())
            files = _TaskFiles(self, task, attempt)
            dirs = [self._checked_dir(list(u.values), files.key_room) for u in uploads]
            f: _OpenFile | None = None
            try:
                for upload, partition in zip(uploads, dirs, strict=True):
                    with open(upload.local, "rb") as local:
                        f = files.open(partition, _CopiedFile.opener(local))
                        f.rows = upload.rows
                        files.close(f)  # the copy
                    f = None
                    os.remove(upload.local)
                return files.finished()
            except BaseException:
                files.discard([f] if f is not None else [])
                raise
        finally:
            for upload in uploads:
                with contextlib.suppress(OSError):
                    os.remove(upload.local)

    def _root_dir(self) -> str:
        """The folder of an unpartitioned write: the root, or a literal-only layout's."""
        return partition_dir([], self.time_zone, self.layout)

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
                yield self._root_dir(), data
            return
        if not batch.num_rows:
            return
        codes, values = [], []
        for name in self.partition_by:
            encoded: Any = pc.dictionary_encode(batch.column(name), null_encoding="encode")
            codes.append(encoded.indices.to_numpy(zero_copy_only=False))
            values.append(encoded.dictionary.to_pylist())
        order, bounds = group_rows(codes, [len(v) for v in values])
        keys = [[c[row] for c in codes] for row in order[np.r_[0, bounds]]]
        paths = [  # every partition of the batch checked before any of it is written
            self._checked_dir([(name, values[i][key[i]])
                               for i, name in enumerate(self.partition_by)], key_room)
            for key in keys]
        if len(paths) == 1:  # the whole batch in one partition: no copy
            yield paths[0], data
            return
        for path, rows in zip(paths, np.split(order, bounds), strict=True):
            yield path, data.take(rows)

    def _checked_dir(self, pairs: list[tuple[str, Any]], key_room: int | None) -> str:
        """The folder of partition values ``pairs``; a value with a NUL byte, or a folder
        longer than ``key_room`` bytes, is refused (:class:`PartitionValueError`)."""
        for name, value in pairs:
            if isinstance(value, str) and "\0" in value:
                raise PartitionValueError(
                    f"partition column {name!r} holds a value with a NUL byte "
                    f"({value!r}): no store keeps it in a path; nothing was written")
        path = partition_dir(pairs, self.time_zone, self.layout)
        if key_room is not None and len(path.encode()) > key_room:
            raise PartitionValueError(
                f"partition {path.rstrip('/')!r} makes S3 keys under {self.url} longer "
                f"than {MAX_S3_KEY_BYTES} bytes (the limit); nothing was written")
        return path

    # --- the table's half-done jobs -------------------------------------------------------
    @classmethod
    def cleanup(cls, url: str, storage_options: dict[str, Any] | None = None, *,
                older_than: float = 0.0) -> list[str]:
        """Abort every multipart upload in progress under the table at ``url`` started at
        least ``older_than`` seconds ago (S3; elsewhere there are none): the uploads of
        jobs that will never complete them. A running job whose upload is aborted fails
        its commit and rolls back. Job manifests are not read. Returns the paths whose
        uploads were aborted; raises :class:`StorageError` where the store cannot list
        uploads."""
        return recovery.cleanup(url, storage_options, older_than=older_than)

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
        that breaks a rule of :func:`~listing.write.manifest.check_manifest`, and a staging
        directory that is no job's (its name no job id, or a link out of the table), are
        never acted on: left in place, logged as a warning naming the file and the rule,
        and reported as ``"refused: <rule>"``. Ages are the store's (its files'
        modification times), never a writer's clock. The overwrite lock is released when
        no running job holds it: by an explicit recovery (``orphans``) whatever its age
        when ``older_than`` is 0, else once the lock file is ``older_than`` seconds old.

        Returns ``(job id, "forward" | "back" | "staging removed" | "uploads aborted" |
        "lock released: …" | "running" | "refused: …")`` per job found. Run it with no
        write to that table in progress, or with ``older_than`` beyond the longest
        commit."""
        return recovery.recover(url, storage_options, older_than=older_than, orphans=orphans)
