"""The table's overwrite lock: ``<root>/_overwrite.lock``, created only if absent
(``If-None-Match: *`` on S3, ``O_EXCL`` on local files) by the one overwrite committing,
and holding its job id. Where the store does not refuse a second create (probed once per
bucket), an overwrite is refused unless ``overwrite_without_lock``: two overwrites would
both take the lock and both survive.
"""

from __future__ import annotations

import json
import logging
import time

from listing.errors import ConcurrentWriteError
from listing.storage.store import NotAPlainFile, Store
from listing.url import TableUrl
from listing.write.paths import JOB_ID

log = logging.getLogger("listing.write")

#: the overwrite lock, hidden at the table's root (created with If-None-Match / O_EXCL)
LOCK_FILE = "_overwrite.lock"
#: the largest overwrite lock read, in bytes (a job id and a time)
MAX_LOCK_BYTES = 4096


def lock_path(table: TableUrl) -> str:
    """Where the table's overwrite lock is."""
    return f"{table.prefix}{LOCK_FILE}"


def lock_holder(store: Store, path: str) -> str | None:
    """The job id in the overwrite lock at ``path`` (``"?"`` when unreadable), or None if
    unlocked; :class:`NotAPlainFile` when the lock is no plain file (a link, a directory)
    or larger than :data:`MAX_LOCK_BYTES`. The lock's age is the store's
    (:meth:`Store.last_modified`), not its writer's clock."""
    data = store.read(path, limit=MAX_LOCK_BYTES)
    if data is None:
        return None
    try:
        job_id = json.loads(data)["job_id"]
    except (ValueError, KeyError, TypeError, RecursionError):
        return "?"  # unreadable: stale once recover sees it
    return job_id if isinstance(job_id, str) and JOB_ID.fullmatch(job_id) else "?"


def check_isolation(store: Store, table: TableUrl, without_lock: bool) -> None:
    """Raise :class:`ConcurrentWriteError` when the store cannot isolate an overwrite
    (its PUTs ignore ``If-None-Match``: two overwrites would both take the lock and
    both survive, the union of their rows), unless ``without_lock``."""
    if without_lock or store.conditional_puts(table.prefix):
        return
    raise ConcurrentWriteError(
        f"refusing to overwrite {table}: its store does not honour conditional "
        "writes (a PUT with If-None-Match: * on an existing key was not refused), so "
        "the table's overwrite lock cannot keep two overwrites apart and both would "
        "survive, the union of their rows. If nothing else overwrites this table at "
        "the same time (you serialise its writers with a lock of your own), pass "
        "overwrite_without_lock=true; otherwise use a store that honours If-None-Match "
        "(AWS S3 does). Nothing was written")


def take_lock(store: Store, table: TableUrl, job_id: str, without_lock: bool,
              checked: bool = False) -> None:
    """Take the table's overwrite lock for ``job_id``, or raise
    :class:`ConcurrentWriteError` naming the job that holds it (two overwrites committing
    at once would both survive). ``checked``: the job's setup found the store isolating
    overwrites (:func:`check_isolation`), which is not probed again."""
    if not checked:
        check_isolation(store, table, without_lock)
    path = lock_path(table)
    body = json.dumps({"job_id": job_id, "created": time.time()}).encode()
    taken = store.put_if_absent(path, body)
    if taken is not False:
        return  # taken (or, with overwrite_without_lock, a store that cannot tell)
    try:
        held_by = lock_holder(store, path)
    except NotAPlainFile as err:
        raise ConcurrentWriteError(
            f"job {job_id} cannot commit its overwrite of {table}: its lock "
            f"{err}, so no overwrite can take it (left in place). Nothing visible "
            "changed; check it, then delete it by hand") from None
    if held_by == job_id:
        return  # ours (a retried request, or a re-run commit)
    raise ConcurrentWriteError(
        f"job {job_id} cannot commit its overwrite of {table}: job "
        f"{held_by or '?'} is committing an overwrite of it (lock "
        f"{table.to_url(path)}). Nothing visible changed; retry once it "
        f"is done, or, if that job was killed, run `listing recover {table}`")


def release_lock(store: Store, table: TableUrl, job_id: str) -> None:
    """Release the overwrite lock if ``job_id`` holds it (a lock that is no plain file
    is no job's: left in place)."""
    path = lock_path(table)
    try:
        held_by = lock_holder(store, path)
    except NotAPlainFile:
        return
    if held_by == job_id:
        store.delete([path])


def release_lock_quietly(store: Store, table: TableUrl, job_id: str) -> None:
    """:func:`release_lock`, a failure logged (the error being raised is the one that matters)."""
    try:
        release_lock(store, table, job_id)
    except Exception as err:  # noqa: BLE001 - the first error is the one to raise
        log.warning("job %s could not release the lock of %s: %s", job_id, table, err)
