"""The commit protocol of one job: publish, then remove, never the reverse.

:meth:`JobCommit.commit` writes the job's manifest (``_temporary/<job id>/_manifest.json``:
mode, partitions, the files to publish and the old files an overwrite removes) before
anything visible changes; removes ``_SUCCESS``; publishes every new file under a name no
other job's file has (the job id is in it); marks the manifest ``published`` (the commit
point); removes the old files; writes ``_SUCCESS``; deletes the staging prefix. Before
the commit point a failure rolls the job back (:meth:`JobCommit.roll_back`: the old table,
exactly); after it the job can only be finished (:meth:`JobCommit.roll_forward`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence

from listing.errors import CommitError, ConcurrentWriteError
from listing.metrics import Counters
from listing.storage.spec import StorageSpec
from listing.storage.store import NotAPlainFile, Store, open_store
from listing.url import TableUrl
from listing.write.lock import lock_path, release_lock, release_lock_quietly, take_lock
from listing.write.manifest import (
    PUBLISHED,
    PUBLISHING,
    Manifest,
    ManifestRefusedError,
    read_manifest,
)
from listing.write.paths import (
    JOB_ID,
    KINDS,
    MANIFEST_FILE,
    STAGING_DIR,
    SUCCESS_FILE,
    invalidate_listings,
    job_of,
    list_files,
    list_uploads,
    outside,
    short,
)
from listing.write.results import StagedFile, TaskCommit, WriteResult, shown

log = logging.getLogger("listing.write")


class JobCommit:
    """One job's side of the commit protocol on its table: where it stages, its manifest,
    and the steps that publish, finish or undo it. Known by its id alone, it can finish or
    undo the job from its manifest (recovery); :class:`~listing.write.job.WriteJob` adds
    the job's data and options (the commit settings below, here at their defaults)."""

    mode: str = "append"
    partition_overwrite_mode: str = "static"
    partition_by: Sequence[str] = ()
    overwrite_without_lock: bool = False
    #: the job's setup found its store isolating overwrites (a property of the store; set
    #: on the driver, it travels with the job to a commit run in another process, which
    #: then does not probe the store again)
    isolation_checked: bool = False

    def __init__(self, url: TableUrl, storage: StorageSpec, job_id: str) -> None:
        self.url, self.storage, self.job_id = url, storage, job_id
        self.prefix = url.prefix
        self.staging = f"{self.prefix}{STAGING_DIR}/{job_id}/"
        #: ``mode`` ``ignore`` on a table with files: the job writes and commits nothing
        self.skip = False
        #: what :meth:`~listing.write.job.WriteJob.setup` cost, and what it found
        self.setup_metrics = Counters()

    @property
    def manifest_path(self) -> str:
        """Where the job records its intent before the table changes."""
        return f"{self.staging}{MANIFEST_FILE}"

    @property
    def lock_path(self) -> str:
        """The table's overwrite lock: held by the one overwrite committing."""
        return lock_path(self.url)

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
                               shown(metrics))
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
                    take_lock(store, self.url, self.job_id, self.overwrite_without_lock,
                              checked=self.isolation_checked)
                manifest = self._plan(store, staged, partitions)
                store.put_atomic(self.manifest_path, manifest.dumps())
        except ConcurrentWriteError:
            raise
        except Exception as err:
            if self.mode == "overwrite":
                release_lock_quietly(store, self.url, self.job_id)
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
                           sum(f.rows for f in staged), shown(metrics))

    def _plan(self, store: Store, staged: Sequence[StagedFile],
              partitions: Sequence[str]) -> Manifest:
        """The job's manifest: its new files, and the old files an overwrite removes."""
        new = {f.final for f in staged}
        old: list[str] = []
        if self.mode == "overwrite":
            if self.partition_overwrite_mode == "dynamic" and self.partition_by:
                for partition in partitions:
                    old += list_files(store, self.prefix + partition, visible_below=self.prefix)
            else:
                old = list_files(store, self.prefix, visible_below=self.prefix)
        success = self.prefix + SUCCESS_FILE
        kind = store.kind(success)
        had_success = (store.read(success) is not None if kind == "unknown"
                       else kind != "absent")
        return Manifest(self.job_id, self.mode, self.partition_overwrite_mode,
                        list(partitions),
                        [(f.staged, f.final) for f in staged if not f.upload_id],
                        sorted(set(old) - new), had_success, PUBLISHING, time.time(),
                        [(f.final, f.upload_id, list(f.parts))
                         for f in staged if f.upload_id])

    def _roll_forward(self, store: Store, manifest: Manifest) -> None:
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
        invalidate_listings(self.storage, self.prefix)
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

    def _roll_back(self, store: Store, manifest: Manifest) -> None:
        """Undo an unpublished job: delete the new files it published (never an old one:
        every new name holds the job id), restore ``_SUCCESS`` if the table had one, clean
        the staging prefix."""
        store.abort_uploads(manifest.uploads)
        new = [dst for dst in [d for _, d in manifest.publish] + [u[0] for u in manifest.uploads]
               if manifest.job_id and job_of(dst) == manifest.job_id]
        store.delete(new)
        store.prune_dirs(new, self.prefix)
        if manifest.had_success:
            store.put(self.prefix + SUCCESS_FILE, b"")
        invalidate_listings(self.storage, self.prefix)
        self._clean_staging(store, lock=manifest.mode == "overwrite")

    def _clean_staging(self, store: Store, manifest: bool = True, lock: bool = False) -> None:
        """Delete everything under the job's staging prefix and abort the job's multipart
        uploads still in progress (failed task attempts), its manifest (if it has one)
        last."""
        self._check_staging(store)
        cache: dict[str, str] = {}  # a file reached through a link is not the job's
        paths = [p for p in list_files(store, self.staging) if p != self.manifest_path
                 and outside(store, p, self.staging, cache) is None]
        store.delete(paths)
        store.abort_uploads((path, upload_id, [])  # where listed: failed task attempts'
                            for path, upload_id, _ in list_uploads(store, self.prefix) or []
                            if job_of(path) == self.job_id)
        store.metrics.add("staged_deleted", len(paths))
        if lock:
            release_lock(store, self.url, self.job_id)
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
        except ManifestRefusedError as refused:
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

    def _read_manifest(self, store: Store) -> Manifest | None:
        """The job's manifest, checked (:func:`~listing.write.manifest.read_manifest`), or
        None when it has none."""
        return read_manifest(store, self.manifest_path, self.prefix, self.job_id)

    def _check_staging(self, store: Store) -> None:
        """Raise :class:`ManifestRefusedError` unless the job's staging directory is a job's
        (its name a job id) and lies in the table: no link leads out of it, and neither it
        nor ``_temporary`` is a link or a file (local files)."""
        if not JOB_ID.fullmatch(self.job_id):
            raise ManifestRefusedError(f"the directory name {short(self.job_id)} is not a job id")
        why = outside(store, f"{self.staging}x", self.prefix)
        for directory in (f"{self.prefix}{STAGING_DIR}", self.staging.rstrip("/")):
            kind = store.kind(directory) if why is None else "dir"
            if kind not in ("absent", "dir", "unknown"):
                why = f"is not a directory ({directory} is {KINDS.get(kind, 'a file')})"
        if why is not None:
            raise ManifestRefusedError(f"the staging directory {short(self.staging)} {why}")

