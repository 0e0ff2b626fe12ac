"""A job's manifest: its intent, written under its staging prefix before the table changes,
and the rules a manifest read back must meet before anyone follows it.

A manifest read back is untrusted (anyone who writes the table can write one): it is
followed only if this table's writer could have made it (:func:`check_manifest`: every
path under the table's root, names carrying the job id), else left in place and reported
(:class:`ManifestRefusedError`). Its size is bounded both ways: a job that would write a larger
one is refused before its commit, and a larger one is never read.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

from listing.errors import CommitError
from listing.hive import is_hidden_below
from listing.storage import multipart
from listing.storage.store import NotAPlainFile, Store
from listing.write.options import MODES
from listing.write.paths import (
    JOB_ID,
    STAGING_DIR,
    SUCCESS_FILE,
    job_of,
    not_plain,
    outside,
    short,
)

PUBLISHING, PUBLISHED = "publishing", "published"
#: the largest manifest read, in bytes, and the most entries (files to publish and to
#: remove, uploads, partitions) it may hold: a larger one is refused unread (recovery's
#: work is bounded), and a job that would write one is refused before its commit
MAX_MANIFEST_BYTES = 256 * 2**20
MAX_MANIFEST_ENTRIES = 1_000_000


class ManifestRefusedError(CommitError):
    """A job manifest that breaks a rule of :func:`check_manifest`: never followed, left
    in place for a person to look at. The message names the rule."""


@dataclass
class Manifest:
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
    def parse(cls, data: bytes) -> Manifest:
        """The manifest ``data`` holds; :class:`ManifestRefusedError` when it is not one (not
        JSON, nested too deep, the wrong types, over :data:`MAX_MANIFEST_BYTES` or
        :data:`MAX_MANIFEST_ENTRIES`)."""
        if len(data) > MAX_MANIFEST_BYTES:
            raise ManifestRefusedError(f"it holds more than {MAX_MANIFEST_BYTES} bytes")
        try:
            raw = json.loads(data)
            if not isinstance(raw, dict):
                raise TypeError("not a JSON object")
            for name in cls.LISTS:
                if not isinstance(raw.get(name, []), list):
                    raise TypeError(f"its {name} is not a list")
            if sum(len(raw.get(name, [])) for name in cls.LISTS) > MAX_MANIFEST_ENTRIES:
                raise ManifestRefusedError(f"it holds more than {MAX_MANIFEST_ENTRIES} entries")
            raw["publish"] = [(src, dst) for src, dst in raw["publish"]]
            raw["uploads"] = [(path, upload_id, [(n, etag) for n, etag in parts])
                              for path, upload_id, parts in raw.get("uploads", [])]
            manifest = cls(**raw)
        except (ValueError, TypeError, KeyError, RecursionError, MemoryError) as err:
            why = "nested too deep" if isinstance(err, RecursionError) else short(str(err))
            raise ManifestRefusedError(f"it is unreadable ({why})") from None
        kinds: dict[str, tuple[type, ...]] = {
            "job_id": (str,), "mode": (str,), "partition_overwrite_mode": (str,),
            "state": (str,), "had_success": (bool,), "created": (int, float),
            "partitions": (list,), "remove": (list,)}
        for name, kind in kinds.items():
            if not isinstance(getattr(manifest, name), kind):
                raise ManifestRefusedError(f"its {name} is not a {kind[0].__name__}")
        if manifest.state not in (PUBLISHING, PUBLISHED) or manifest.mode not in MODES:
            raise ManifestRefusedError(f"its state {manifest.state!r} or mode {manifest.mode!r} "
                                  "is not one a job writes")
        for _, upload_id, parts in manifest.uploads:
            if not isinstance(upload_id, str) or not all(
                    isinstance(n, int) and isinstance(e, str) for n, e in parts):
                raise ManifestRefusedError("its uploads are not (path, upload id, parts)")
        return manifest


def read_manifest(store: Store, path: str, prefix: str, job_id: str) -> Manifest | None:
    """The manifest at ``path`` of job ``job_id`` in the table at ``prefix``, checked
    (:func:`check_manifest`; raises :class:`ManifestRefusedError`, also when it is a link, a
    directory or larger than :data:`MAX_MANIFEST_BYTES`: never read through a link nor past
    the limit), or None when there is none."""
    try:
        data = store.read(path, limit=MAX_MANIFEST_BYTES)
    except NotAPlainFile as err:
        raise ManifestRefusedError(str(err)) from None
    if data is None:
        return None
    manifest = Manifest.parse(data)
    check_manifest(store, manifest, prefix, job_id)
    return manifest


def check_manifest(store: Store, manifest: Manifest, prefix: str, job_dir: str) -> None:
    """Raise :class:`ManifestRefusedError` unless ``manifest`` (found in
    ``<prefix>_temporary/<job_dir>/``) is one this table's writer could have made: its job
    id matches :data:`JOB_ID` and is ``job_dir``; every path lies under the table's root on
    the same store and bucket (:func:`outside`); each publish source is under the job's
    staging prefix; each publish destination and upload is a visible file of the table
    whose name carries the job id; each removed file is a visible file of the table."""
    job_id = manifest.job_id
    if not JOB_ID.fullmatch(job_id):
        raise ManifestRefusedError(f"its job id {short(job_id)} is not a job id (letters, digits, "
                              "'_', '-')")
    if job_id != job_dir:
        raise ManifestRefusedError(f"its job id {short(job_id)} is not its directory's name "
                              f"{short(job_dir)}")
    staging = f"{prefix}{STAGING_DIR}/{job_id}/"
    if manifest.uploads and not store.supports_multipart:
        raise ManifestRefusedError("it names multipart uploads, and this store has none")

    for i, partition in enumerate(manifest.partitions):
        if not isinstance(partition, str):
            raise ManifestRefusedError(f"partitions[{i}] {short(partition)} is not a string")
    cache: dict[str, str] = {}
    checks_kinds = store.kind(prefix) != "unknown"  # local files: one lstat a file

    def check(field_name: str, path: object, under: str, own: bool) -> None:
        why = outside(store, path, under, cache)
        if why is None and is_hidden_below(prefix, str(path)) and under == prefix:
            why = "is not a visible data file of the table"
        if why is None and own and job_of(str(path)) != job_id:
            why = f"is not named for job {job_id}"
        if why is None and checks_kinds:
            why = not_plain(store, str(path))
        if why is not None:
            raise ManifestRefusedError(f"{field_name} {short(path)} {why}")

    for i, (src, dst) in enumerate(manifest.publish):
        check(f"publish[{i}] source", src, staging, own=False)
        check(f"publish[{i}] destination", dst, prefix, own=True)
    for i, (path, _, _) in enumerate(manifest.uploads):
        check(f"uploads[{i}]", path, prefix, own=True)
    for i, path in enumerate(manifest.remove):
        check(f"remove[{i}]", path, prefix, own=False)
    why = not_plain(store, f"{prefix}{SUCCESS_FILE}")
    if why is not None:  # finishing or undoing the job writes it
        raise ManifestRefusedError(f"the table's {SUCCESS_FILE} {why}")
