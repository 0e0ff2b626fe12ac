"""Recovery: finish or undo the half-done jobs of a table, from their manifests.

A job past its commit point is rolled forward, any other job with a manifest is rolled
back, a job without one (killed before its commit) has its staged files and multipart
uploads removed; a stale overwrite lock is released. Each step acts on one job through
:class:`~listing.write.commit.JobCommit`; a manifest, a staging directory or a lock that
is no job's is refused: left in place, logged and reported, never followed.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from dataclasses import dataclass
from typing import Any

from listing.errors import StorageError
from listing.storage import multipart
from listing.storage.lister import ObjectMeta
from listing.storage.spec import StorageSpec
from listing.storage.store import NotAPlainFile, Store, open_store
from listing.url import TableUrl
from listing.write.commit import JobCommit
from listing.write.lock import LOCK_FILE, lock_holder, lock_path
from listing.write.manifest import PUBLISHED, Manifest, ManifestRefused
from listing.write.paths import STAGING_DIR, job_of, list_uploads, outside

log = logging.getLogger("listing.write")

#: what recovery did to one job (or the lock): ``(job id, what)``
Outcome = tuple[str, str]


def recover(url: str, storage_options: dict[str, Any] | None = None, *,
            older_than: float = 0.0, orphans: bool = True) -> list[Outcome]:
    """Finish or undo every half-done job of the table at ``url`` (see
    :meth:`listing.write.WriteJob.recover` for what is done and returned): the jobs staged
    under ``_temporary/`` one by one, then the overwrite lock, then (``orphans``) the
    multipart uploads of jobs without a manifest."""
    table = TableUrl.parse(url)
    spec = StorageSpec(table.protocol, table.storage_options(storage_options))
    store = open_store(spec)
    staging_root = f"{table.prefix}{STAGING_DIR}/"
    if outside(store, staging_root + "x", table.prefix) is not None:
        rule = f"{table.to_url(staging_root)} leads out of the table through a link"
        log.warning("recover %s: refused every job: %s; nothing done", table, rule)
        return [(STAGING_DIR, f"refused: {rule}")]
    jobs = _staged_jobs(store, staging_root)
    run = _Recovery(store, table, spec, older_than, orphans, time.time())
    done = [outcome for job_id, files in sorted(jobs.items())
            if (outcome := run.job(job_id, files)) is not None]
    done += run.lock(live={job_id for job_id, what in done if what == "running"})
    if orphans:
        done += run.orphan_uploads(staged=set(jobs))
    return done


def _staged_jobs(store: Store, staging_root: str) -> dict[str, list[ObjectMeta]]:
    """The files under ``staging_root`` by the job directory they are in."""
    jobs: dict[str, list[ObjectMeta]] = {}
    for meta in store.find(staging_root):
        jobs.setdefault(meta.path[len(staging_root):].partition("/")[0], []).append(meta)
    return jobs


def _stamp(when: dt.datetime | None, default: float) -> float:
    return default if when is None else when.timestamp()


@dataclass(frozen=True)
class _Recovery:
    """One recovery of one table: the steps :func:`recover` takes, in its order."""

    store: Store
    table: TableUrl
    spec: StorageSpec
    older_than: float
    orphans: bool
    now: float  # by this machine's clock, compared with the store's modification times

    def job(self, job_id: str, files: list[ObjectMeta]) -> Outcome | None:
        """Finish or undo the job staged as ``files``, or leave it (None: a job without a
        manifest, not ``orphans``); a refused manifest or staging directory is left."""
        job = JobCommit(self.table, self.spec, job_id)
        listed = next((f for f in files if f.path == job.manifest_path), None)
        try:
            job._check_staging(self.store)
            manifest = job._read_manifest(self.store) if listed is not None else None
        except ManifestRefused as refused:
            log.warning("recover %s: job manifest %s refused, left in place and not "
                        "followed: %s", self.table, self.table.to_url(job.manifest_path),
                        refused)
            return (job_id, f"refused: {refused}")
        try:
            what = self._act(job, manifest, listed, files)
        except NotAPlainFile as err:  # changed since checked: stopped, left in place
            log.warning("recover %s: job %s stopped and left in place: %s", self.table,
                        job_id, err)
            return (job_id, f"refused: {err}")
        if what is not None:
            log.info("recover %s: job %s %s", self.table, job_id, what)
            return (job_id, what)
        return None

    def _act(self, job: JobCommit, manifest: Manifest | None, listed: ObjectMeta | None,
             files: list[ObjectMeta]) -> str | None:
        """Roll ``job`` forward (published), back (its manifest old enough), or remove its
        staged files (no manifest, ``orphans``, unchanged long enough); what was done."""
        if manifest is not None and manifest.state == PUBLISHED:
            job._roll_forward(self.store, manifest)
            return "forward"
        if manifest is not None:
            written = _stamp(listed.last_modified if listed is not None else None, self.now)
            if self.now - written < self.older_than:
                return "running"
            job._roll_back(self.store, manifest)
            return "back"
        if not self.orphans:
            return None
        # a job that never reached its commit: staged files only, invisible
        newest = max((_stamp(f.last_modified, self.now) for f in files), default=self.now)
        if self.now - newest < self.older_than:
            return "running"
        job._clean_staging(self.store, manifest=False)
        return "staging removed"

    def lock(self, live: set[str]) -> list[Outcome]:
        """Release the overwrite lock when no ``live`` job holds it: by an explicit
        recovery (``orphans``) whatever its age when ``older_than`` is 0, else once it is
        ``older_than`` seconds old; a lock that is no plain file is set aside."""
        done: list[Outcome] = []
        lock = lock_path(self.table)
        try:
            holder = lock_holder(self.store, lock)
        except NotAPlainFile as err:
            # no job's lock (ours are small plain files): set aside where the store can,
            # so the next overwrite can take the lock; its content kept for a person
            holder, aside = None, self.store.set_aside(lock)
            kept = (f"set aside as {self.table.to_url(aside)}" if aside else "left in place")
            done.append((LOCK_FILE, f"refused: the overwrite lock {err}; {kept}"))
            log.warning("recover %s: the overwrite lock %s refused, %s: %s",
                        self.table, self.table.to_url(lock), kept, err)
        if holder is not None and holder not in live:
            stamp = self.store.last_modified(lock)
            age = self.now - (self.now if stamp is None else stamp)  # by the store's clock
            if (self.orphans and self.older_than <= 0) or age >= self.older_than:
                self.store.delete([lock])  # its job is gone: a stale lock
                done.append((holder, "lock released: its job has no live manifest"))
                log.warning("recover %s: released the overwrite lock of job %s (written "
                            "%.0f s ago by the store's clock): its job has no live "
                            "manifest", self.table, holder, age)
        return done

    def orphan_uploads(self, staged: set[str]) -> list[Outcome]:
        """Abort the multipart uploads of jobs with nothing ``staged`` (killed before
        their commit), per job once its newest upload is ``older_than`` seconds old."""
        uploads_of: dict[str, list[tuple[str, str, float]]] = {}
        listed_uploads = list_uploads(self.store, self.table.prefix)
        if listed_uploads is None:
            log.warning("recover %s: the store cannot list multipart uploads (501): those "
                        "of jobs without a manifest cannot be found (a lifecycle rule "
                        "aborting incomplete uploads can); those manifests name were "
                        "aborted", self.table)
        for upload in listed_uploads or []:  # jobs killed before their commit
            owner = job_of(upload[0])
            if owner is not None and owner not in staged:
                uploads_of.setdefault(owner, []).append(upload)
        done: list[Outcome] = []
        for job_id, uploads in sorted(uploads_of.items()):
            what = ("uploads aborted" if min(age for _, _, age in uploads) >= self.older_than
                    else "running")
            if what == "uploads aborted":
                self.store.abort_uploads((path, upload_id, [])
                                         for path, upload_id, _ in uploads)
            done.append((job_id, what))
            log.info("recover %s: job %s %s", self.table, job_id, what)
        return done


def cleanup(url: str, storage_options: dict[str, Any] | None = None, *,
            older_than: float = 0.0) -> list[str]:
    """Abort every multipart upload in progress under the table at ``url`` started at
    least ``older_than`` seconds ago (see :meth:`listing.write.WriteJob.cleanup`)."""
    table = TableUrl.parse(url)
    store = open_store(StorageSpec(table.protocol, table.storage_options(storage_options)))
    listed = list_uploads(store, table.prefix)
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
