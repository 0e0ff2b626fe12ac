"""The :class:`Store` protocol: everything the toolkit does to one storage, counted.

One implementation per kind of store, chosen once by :func:`open_store` from the spec's
protocol (nothing outside this package branches on it):

- :class:`S3Store`: S3's API through the s3fs client (botocore's retries): conditional
  and counted requests, server-side copies, batched deletes, multipart uploads;
- :class:`LocalStore`: this machine's files through the OS (atomic renames, ``O_EXCL``);
- :class:`FsspecStore`: any other fsspec filesystem (memory, gcs, abfs…) through fsspec's
  generic calls.

Paths are fsspec paths (no protocol). Requests sent are added to the store's ``metrics``,
a :class:`~listing.metrics.Counters` (``put_requests``, ``get_requests``,
``copy_requests``, ``delete_requests``, ``list_requests``, ``post_requests``,
``retries``; local files: ``renames``); every
failure leaves as a :class:`~listing.errors.ListingError`
(:mod:`listing.storage.errors`).
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import stat
import threading
import uuid
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar, Protocol, cast

import pyarrow as pa

from listing.errors import StorageError
from listing.files import PartitionedFile
from listing.metrics import Counters
from listing.storage import multipart
from listing.storage.client import s3_call, s3_request, secrets_of, settings_of, sync
from listing.storage.errors import (
    error_code,
    raise_as,
    retry_attempts,
    s3_error_code,
    storage_failure,
)
from listing.storage.lister import Lister, ObjectMeta, entry_mtime
from listing.storage.reading import open_input
from listing.storage.spec import StorageSpec

__all__ = ["COPY_THREADS", "MAX_S3_KEY_BYTES", "Finish", "FsspecStore", "LocalStore",
           "NotAPlainFile", "S3Store", "Store", "open_store", "store_class"]

log = logging.getLogger("listing.storage")

#: server-side copies sent at once by :meth:`S3Store.publish`
COPY_THREADS = 16
#: S3's longest key, in UTF-8 bytes
MAX_S3_KEY_BYTES = 1024
#: the longest name of one file or directory on local files, and the longest path, in
#: bytes (Linux's NAME_MAX and PATH_MAX; most file systems keep no more)
MAX_LOCAL_NAME_BYTES = 255
MAX_LOCAL_PATH_BYTES = 4095

class Finish(Protocol):
    """Finishes a file after its writer closed the stream: ``finish()`` keeps it (sends
    what is left, waits for what is being sent, raises a failure) and returns its size
    and, for a multipart upload left for the commit, the upload; ``finish(keep=False)``
    drops it (a failed task; also before its writer closed): nothing more is sent, and
    nothing is still being sent once it returns."""

    def __call__(self, keep: bool = True) -> tuple[int, multipart.Upload | None]: ...


class NotAPlainFile(StorageError):
    """A path the store will not read or write because it is not a plain file: a symbolic
    link (never followed), a directory, a device or pipe; or a file larger than asked."""


class Store(Protocol):
    """List, read, write, copy and delete files on one storage, counting the requests."""

    spec: StorageSpec
    fs: Any
    metrics: Counters
    #: files can stream as multipart uploads completed later (zero-copy commits)
    supports_multipart: ClassVar[bool]
    #: the longest path below a bucket the store keeps, in UTF-8 bytes (None: no limit)
    max_key_bytes: ClassVar[int | None]

    def open(self, file: PartitionedFile, readahead: int = 0,
             whole_if_small: bool = False) -> Any:
        """``file`` opened for reading as listed (S3: every GET pinned to the listed ETag;
        :func:`listing.storage.reading.open_input`)."""

    def find(self, prefix: str) -> list[ObjectMeta]:
        """Every file under ``prefix`` (a flat listing, counted)."""

    def read(self, path: str, limit: int | None = None) -> bytes | None:
        """The whole file at ``path``, or None when there is none. Raises
        :class:`NotAPlainFile` when it is a link (never followed: local files), a directory
        or another non-regular file, or holds more than ``limit`` bytes (not read past)."""

    def name_problem(self, path: str) -> str | None:
        """Why the store cannot hold a file named ``path`` (no request sent): a name that
        is not Unicode text (a lone surrogate), longer than the store keeps (S3: keys of
        1,024 UTF-8 bytes; local files: 255 bytes a segment, 4,095 a path); None if it
        can."""

    def kind(self, path: str) -> str:
        """What ``path`` is, not following a link: ``absent``, ``file``, ``dir``, ``link``
        or ``other`` (a device, pipe, socket) on local files; ``unknown`` on object stores
        (a key is a file; no request sent)."""

    def set_aside(self, path: str) -> str | None:
        """Rename the entry ``path`` (a link itself, never its target; a directory whole)
        to a hidden name beside it, returning that name; None where the store cannot (on
        object stores a key is always a plain file)."""

    def put(self, path: str, data: bytes) -> None:
        """Write ``data`` as the file ``path`` (local files: a link or non-regular file at
        ``path`` is replaced, never written through)."""

    def put_if_absent(self, path: str, data: bytes) -> bool | None:
        """Create ``path`` only if it does not exist: True if created, False if it existed,
        None where the store cannot tell (no conditional writes)."""

    def put_atomic(self, path: str, data: bytes) -> None:
        """Write ``path`` whole or not at all."""

    def conditional_puts(self, prefix: str) -> bool:
        """Whether :meth:`put_if_absent` really refuses an existing file on the storage
        of ``prefix`` (S3: probed once per bucket and process, under ``prefix``)."""

    def last_modified(self, path: str) -> float | None:
        """When ``path`` was last written, by the store's clock (POSIX seconds), or None
        when there is no such file."""

    def real_path(self, path: str) -> str:
        """``path`` with the links of its directories resolved (local files; elsewhere
        ``path`` itself): where an operation on it really lands."""

    def create(self, path: str) -> tuple[pa.NativeFile, Finish]:
        """An output stream for ``path`` and the function that finishes the file."""

    def publish(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Make each ``src`` the file ``dst`` (a copy, or on local files a rename);
        idempotent: a pair already published is published again or left as it is."""

    def delete(self, paths: Sequence[str]) -> None:
        """Delete the files ``paths`` (a missing one is no error; a link is removed, never
        followed; a directory is refused: :class:`NotAPlainFile`)."""

    def prune_dirs(self, paths: Iterable[str], stop: str) -> None:
        """Remove the directories left empty by deleting ``paths``, up to ``stop``."""

    def remove_dir(self, path: str, parent: str) -> None:
        """Remove the directory ``path`` and what it holds, then ``parent`` if empty."""

    def complete(self, uploads: Sequence[multipart.Upload]) -> None:
        """Complete multipart uploads (idempotent)."""

    def abort_uploads(self, uploads: Iterable[multipart.Upload]) -> None:
        """Abort multipart uploads (those already gone are skipped)."""

    def list_uploads(self, prefix: str) -> list[tuple[str, str, float]]:
        """Multipart uploads in progress under ``prefix``: (path, upload id, age); raises
        :class:`~listing.errors.StorageError` where the store cannot list them."""

    def lists_uploads(self, prefix: str) -> bool:
        """Whether :meth:`list_uploads` works on the storage of ``prefix`` (some
        S3-compatible stores answer ListMultipartUploads with 501 Not Implemented)."""


def open_store(spec: StorageSpec, metrics: Counters | dict[str, int] | None = None,
               part_size: int | None = None) -> Store:
    """The store for ``spec``, counting into ``metrics`` (a plain dict: the counts are
    kept in it). ``part_size``: S3 only, files made by :meth:`Store.create` stream as
    multipart uploads of parts this size."""
    if spec.is_s3:
        return S3Store(spec, metrics, part_size)
    return store_class(spec)(spec, metrics)


def store_class(spec: StorageSpec) -> type[S3Store | LocalStore | FsspecStore]:
    """The :class:`Store` implementation serving ``spec`` (its class attributes tell what
    the store can do before one is opened)."""
    if spec.is_s3:
        return S3Store
    return LocalStore if spec.is_local else FsspecStore


class StoreBase:
    """What every store shares: its filesystem, its metrics, reading and listing."""

    supports_multipart: ClassVar[bool] = False
    max_key_bytes: ClassVar[int | None] = None
    #: whether listing requests are added to ``metrics`` (local listings cost none)
    _counts_listing: ClassVar[bool] = True

    def __init__(self, spec: StorageSpec, metrics: Counters | dict[str, int] | None = None
                 ) -> None:
        self.spec = spec
        #: the requests it sent (a plain dict given: the counts are kept in it)
        self.metrics = metrics if isinstance(metrics, Counters) else Counters(metrics)
        self.fs = spec.filesystem()

    def open(self, file: PartitionedFile, readahead: int = 0,
             whole_if_small: bool = False) -> Any:
        return open_input(self.fs, file, readahead, whole_if_small)

    def find(self, prefix: str) -> list[ObjectMeta]:
        lister = Lister(self.spec)
        try:
            return [f for page in lister.pages(prefix, delimiter=False) for f in page.files]
        finally:
            if self._counts_listing:  # the store's retries: of every request it sent
                self.metrics.add("list_requests", lister.counters["list_requests"])
                self.metrics.add("retries", lister.counters["list_retries"])

    def put(self, path: str, data: bytes) -> None:
        raise NotImplementedError

    def name_problem(self, path: str) -> str | None:
        try:
            size = len(path.encode())
        except UnicodeEncodeError:
            return "is not Unicode text (it holds a lone surrogate)"
        limit = self.max_key_bytes
        if limit is not None and size - len(path.partition("/")[0]) - 1 > limit:
            return f"makes a key longer than the store keeps ({limit} bytes)"
        return None

    def kind(self, path: str) -> str:
        return "unknown"

    def set_aside(self, path: str) -> str | None:
        return None

    def create(self, path: str) -> tuple[pa.NativeFile, Finish]:
        """A buffer, put as the file ``path`` in one request when finished."""
        buffer = pa.BufferOutputStream()

        def finish(keep: bool = True) -> tuple[int, multipart.Upload | None]:
            if not keep:
                return 0, None
            data = buffer.getvalue().to_pybytes()
            self.put(path, data)
            return len(data), None
        return buffer, finish

    def put_atomic(self, path: str, data: bytes) -> None:
        self.put(path, data)  # object stores: a PUT is atomic

    def prune_dirs(self, paths: Iterable[str], stop: str) -> None:
        """Object stores have no directories."""

    def remove_dir(self, path: str, parent: str) -> None:
        """Object stores have no directories."""

    def complete(self, uploads: Sequence[multipart.Upload]) -> None:
        if uploads:
            raise StorageError(f"{self.spec.protocol}:// has no multipart uploads to complete")

    def abort_uploads(self, uploads: Iterable[multipart.Upload]) -> None:
        if list(uploads):
            raise StorageError(f"{self.spec.protocol}:// has no multipart uploads to abort")

    def list_uploads(self, prefix: str) -> list[tuple[str, str, float]]:
        return []

    def lists_uploads(self, prefix: str) -> bool:
        return True

    def conditional_puts(self, prefix: str) -> bool:
        return False

    def real_path(self, path: str) -> str:
        return path

    def last_modified(self, path: str) -> float | None:
        try:
            info = self.fs.info(path)
        except FileNotFoundError:
            return None
        stamp = entry_mtime(info)
        return None if stamp is None else stamp.timestamp()


class LocalStore(StoreBase):
    """This machine's files, written with the OS's own calls: renames publish, ``O_EXCL``
    creates only if absent, a temporary file renamed writes atomically."""

    _counts_listing = False

    def read(self, path: str, limit: int | None = None) -> bytes | None:
        """One ``open`` with ``O_NOFOLLOW`` (and ``O_NONBLOCK``: a pipe never blocks), then
        the opened file checked to be a regular one before a byte is read."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            return None
        except OSError as err:
            raise _refused(path, err) from None
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or (limit is not None and info.st_size > limit):
            os.close(fd)
            if stat.S_ISREG(info.st_mode):
                raise NotAPlainFile(f"{path} holds more than {limit} bytes; not read")
            kind = "a directory" if os.path.isdir(path) else "not a regular file"
            raise NotAPlainFile(f"{path} is {kind}; not read")
        with os.fdopen(fd, "rb") as f:
            data = f.read() if limit is None else f.read(limit + 1)
        if limit is not None and len(data) > limit:
            raise NotAPlainFile(f"{path} holds more than {limit} bytes; not read past them")
        return data

    def name_problem(self, path: str) -> str | None:
        """As the OS encodes it (``os.fsencode``: a name listed with undecodable bytes
        comes back as the same bytes; any other lone surrogate cannot be encoded)."""
        try:
            raw = os.fsencode(path)
        except UnicodeEncodeError:
            return "is not Unicode text (it holds a lone surrogate)"
        if len(raw) > MAX_LOCAL_PATH_BYTES:
            return f"is longer than a local path can be ({MAX_LOCAL_PATH_BYTES} bytes)"
        if len(max(raw.split(b"/"), key=len)) > MAX_LOCAL_NAME_BYTES:
            return f"has a name longer than a local file's can be ({MAX_LOCAL_NAME_BYTES} bytes)"
        return None

    def kind(self, path: str) -> str:
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return "absent"
        except OSError:  # a segment is a file, a name too long: nothing there to act on
            return "absent"
        if stat.S_ISLNK(mode):
            return "link"
        if stat.S_ISREG(mode):
            return "file"
        return "dir" if stat.S_ISDIR(mode) else "other"

    def set_aside(self, path: str) -> str | None:
        """``rename`` within ``path``'s own directory (no other directory is entered, no
        link followed) to ``<name>.refused-<random>``, hidden as ``path`` is."""
        aside = f"{path}.refused-{uuid.uuid4().hex[:12]}"
        try:
            os.rename(path, aside)
        except OSError as err:
            raise _refused(path, err) from None
        return aside

    def put(self, path: str, data: bytes) -> None:
        """Atomic (:meth:`put_atomic`): whatever is at ``path`` (a link among them) is
        replaced by the rename, never written through; a directory there is refused."""
        self.put_atomic(path, data)

    def put_if_absent(self, path: str, data: bytes) -> bool | None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return True

    def conditional_puts(self, prefix: str) -> bool:
        return True  # O_EXCL

    def last_modified(self, path: str) -> float | None:
        """The file's own time (``lstat``: a link's, never its target's)."""
        try:
            return os.lstat(path).st_mtime
        except FileNotFoundError:
            return None

    def real_path(self, path: str) -> str:
        head, _, name = path.rstrip("/").rpartition("/")
        return f"{os.path.realpath(head or '/').rstrip('/')}/{name}"

    def put_atomic(self, path: str, data: bytes) -> None:
        """A new file beside ``path`` (``O_EXCL``: no link followed), renamed onto it: the
        name is replaced, whatever it was (a link's target is never touched)."""
        if self.kind(path) == "dir":
            raise NotAPlainFile(f"{path} is a directory; not replaced")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{uuid.uuid4().hex}.tmp"
        fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o666)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.remove(tmp)
            except OSError:
                pass
            raise

    def create(self, path: str) -> tuple[pa.NativeFile, Finish]:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return pa.OSFile(path, "wb"), lambda keep=True: (
            os.path.getsize(path) if keep else 0, None)

    def publish(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Renames; a source or destination that is a link, directory or other
        non-regular file is refused (:class:`NotAPlainFile`) before any is renamed."""
        kinds = {path: self.kind(path) for pair in pairs for path in pair}
        odd = next((p for p, k in kinds.items() if k not in ("absent", "file")), None)
        if odd is not None:
            raise NotAPlainFile(f"{odd} is a {_KIND_NAMES[kinds[odd]]}; nothing published")
        for src, dst in pairs:
            if kinds[src] == "absent" and kinds[dst] != "absent":
                continue  # moved by an earlier run of this commit
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            os.replace(src, dst)
            self.metrics.add("renames")

    def delete(self, paths: Sequence[str]) -> None:
        """``unlink`` each (a link is removed, its target untouched); a directory, or a
        name the OS refuses, is a :class:`NotAPlainFile` naming it."""
        for path in paths:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            except OSError as err:
                raise _refused(path, err) from None

    def prune_dirs(self, paths: Iterable[str], stop: str) -> None:
        """Remove the directories left empty by deleting ``paths``, up to ``stop``
        (exclusive)."""
        stop = stop.rstrip("/")
        for d in sorted({os.path.dirname(p) for p in paths}, key=len, reverse=True):
            while d.startswith(stop + "/"):
                try:
                    os.rmdir(d)
                except OSError:
                    break
                d = os.path.dirname(d)

    def remove_dir(self, path: str, parent: str) -> None:
        shutil.rmtree(path, ignore_errors=True)
        try:
            os.rmdir(parent)  # only when nothing else is in it
        except OSError:
            pass


def _within(path: str, data: bytes, limit: int | None) -> bytes:
    if limit is not None and len(data) > limit:
        raise NotAPlainFile(f"{path} holds more than {limit} bytes; not read past them")
    return data


_KIND_NAMES = {"link": "symbolic link", "dir": "directory",
               "other": "non-regular file (a device, pipe or socket)"}


def _refused(path: str, err: OSError) -> NotAPlainFile:
    """The OS's refusal to open or remove ``path`` as one line naming it."""
    if err.errno == errno.ELOOP:
        why = "is a symbolic link, never followed"
    elif err.errno in (errno.EISDIR, errno.EPERM) and os.path.isdir(path):
        why = "is a directory"
    else:
        why = f"could not be used: {err.strerror or err}"
    return NotAPlainFile(f"{path} {why}")


class FsspecStore(StoreBase):
    """Any other fsspec filesystem, through its generic calls (one request each, as far as
    the filesystem tells); no conditional writes."""

    def read(self, path: str, limit: int | None = None) -> bytes | None:
        try:
            data: bytes = self.fs.cat_file(path, start=0,
                                           end=None if limit is None else limit + 1)
        except FileNotFoundError:
            return None
        return _within(path, data, limit)

    def put(self, path: str, data: bytes) -> None:
        self.metrics.add("put_requests")
        self.fs.pipe_file(path, data)

    def put_if_absent(self, path: str, data: bytes) -> bool | None:
        return None

    def publish(self, pairs: Sequence[tuple[str, str]]) -> None:
        for src, dst in pairs:
            self.fs.copy(src, dst)
            self.metrics.add("copy_requests")

    def delete(self, paths: Sequence[str]) -> None:
        """One batch; when a path is missing (the batch fails on it), path by path."""
        if not paths:
            return
        self.metrics.add("delete_requests")
        try:
            self.fs.rm(list(paths))
        except FileNotFoundError:
            for path in paths:
                self.metrics.add("delete_requests")
                try:
                    self.fs.rm_file(path)
                except FileNotFoundError:
                    pass


class S3Store(StoreBase):
    """S3 through the s3fs client, one botocore request at a time (its retries, counted):
    ``If-None-Match`` creates only if absent, server-side copies publish, DeleteObjects
    deletes 1000 keys a request; with a ``part_size``, files stream as multipart uploads
    the commit completes."""

    supports_multipart: ClassVar[bool] = True
    max_key_bytes: ClassVar[int | None] = MAX_S3_KEY_BYTES

    def __init__(self, spec: StorageSpec, metrics: Counters | dict[str, int] | None = None,
                 part_size: int | None = None) -> None:
        super().__init__(spec, metrics)
        self.part_size = part_size

    def _request(self, operation: str, path: str, method: str, **kwargs: Any) -> dict[str, Any]:
        """One request to ``bucket/key`` ``path``; its retries counted."""
        resp = s3_request(self.fs, operation, f"s3://{path}", method, **kwargs)
        self.metrics.add("retries", retry_attempts(resp))
        return resp

    def read(self, path: str, limit: int | None = None) -> bytes | None:
        """The whole object (one GET; with ``limit``, of its first ``limit + 1`` bytes),
        or None when it does not exist."""
        self.metrics.add("get_requests")
        bucket, _, key = path.partition("/")
        ranged = {} if limit is None else {"Range": f"bytes=0-{limit}"}
        try:
            resp = s3_call(self.fs, "get_object", Bucket=bucket, Key=key, **ranged)
            total = str(resp.get("ContentRange") or "").rpartition("/")[2]
            if limit is not None and total.isdigit() and int(total) > limit:
                resp["Body"].close()  # the object's size: refused before its body is read
                raise NotAPlainFile(f"s3://{path} holds more than {limit} bytes; not read")
            data = bytes(sync(self.fs, resp["Body"].read))
        except NotAPlainFile:
            raise
        except Exception as err:  # noqa: BLE001 - classified, never swallowed
            if error_code(err) in ("NoSuchKey", "404"):
                return None
            if ranged and error_code(err) in ("InvalidRange", "416"):
                return b""  # an empty object: no byte in the range
            raise_as(storage_failure("reading", f"s3://{path}", err, settings_of(self.fs),
                                     secrets_of(self.fs)), err)
        return _within(path, data, limit)

    def put(self, path: str, data: bytes) -> None:
        bucket, _, key = path.partition("/")
        self.metrics.add("put_requests")
        self._request("writing", path, "put_object", Bucket=bucket, Key=key, Body=data)

    def last_modified(self, path: str) -> float | None:
        """The object's ``LastModified`` (one HEAD), or None when it does not exist."""
        bucket, _, key = path.partition("/")
        self.metrics.add("head_requests")
        try:
            resp = s3_call(self.fs, "head_object", Bucket=bucket, Key=key)
        except Exception as err:  # noqa: BLE001 - classified, never swallowed
            if error_code(err) in ("NoSuchKey", "404", "NotFound"):
                return None
            raise_as(storage_failure("checking", f"s3://{path}", err, settings_of(self.fs),
                                     secrets_of(self.fs)), err)
        stamp = resp.get("LastModified")
        return stamp.timestamp() if stamp is not None else None

    def put_if_absent(self, path: str, data: bytes) -> bool | None:
        """``If-None-Match: *``."""
        bucket, _, key = path.partition("/")
        self.metrics.add("put_requests")
        try:
            s3_request(self.fs, "writing", f"s3://{path}", "put_object", Bucket=bucket,
                       Key=key, Body=data, IfNoneMatch="*")
        except StorageError as err:
            if s3_error_code(err) in ("PreconditionFailed", "412",
                                      "ConditionalRequestConflict"):
                return False
            raise
        return True

    def create(self, path: str) -> tuple[pa.NativeFile, Finish]:
        if self.part_size is None:
            return super().create(path)
        upload = multipart.MultipartFile(self.fs, path, self.part_size, self.metrics)

        def done(keep: bool = True) -> tuple[int, multipart.Upload | None]:
            if not keep:
                upload.drop()
                return 0, None
            upload.close()
            return upload.size, (path, upload.upload_id, upload.wait())
        return pa.PythonFile(cast(Any, upload), mode="w"), done

    def _copy(self, src: str, dst: str) -> int:
        """Server-side copy of one object up to 5 GB (one request); returns retries."""
        bucket, _, key = dst.partition("/")
        src_bucket, _, src_key = src.partition("/")
        resp = s3_request(self.fs, "copying to", f"s3://{dst}", "copy_object", Bucket=bucket,
                          Key=key, CopySource={"Bucket": src_bucket, "Key": src_key})
        return retry_attempts(resp)

    def publish(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Server-side copies, :data:`COPY_THREADS` at once; the staged objects stay."""
        with ThreadPoolExecutor(COPY_THREADS) as pool:
            retries = list(pool.map(lambda p: self._copy(p[0], p[1]), pairs))
        self.metrics.add("copy_requests", len(pairs))
        self.metrics.add("retries", sum(retries))

    def delete(self, paths: Sequence[str]) -> None:
        """1000 keys per DeleteObjects request; a key the store refuses to delete is an
        error naming it."""
        by_bucket: dict[str, list[str]] = {}
        for path in paths:
            bucket, _, key = path.partition("/")
            by_bucket.setdefault(bucket, []).append(key)
        for bucket, keys in by_bucket.items():
            for i in range(0, len(keys), 1000):
                chunk = keys[i:i + 1000]
                self.metrics.add("delete_requests")
                resp = self._request("deleting", f"{bucket}/{chunk[0]}", "delete_objects",
                                     Bucket=bucket, Delete={"Objects": [{"Key": k}
                                                                        for k in chunk],
                                                            "Quiet": True})
                errors = resp.get("Errors") or []
                if errors:
                    first = errors[0]
                    raise StorageError(f"deleting s3://{bucket}/{first.get('Key')} failed: "
                                       f"{first.get('Code')}: {first.get('Message')} "
                                       f"({len(errors)} keys not deleted)")

    def complete(self, uploads: Sequence[multipart.Upload]) -> None:
        if uploads:
            self.metrics.add("post_requests", multipart.complete(self.fs, uploads))

    def abort_uploads(self, uploads: Iterable[multipart.Upload]) -> None:
        uploads = list(uploads)
        if uploads:
            self.metrics.add("delete_requests", multipart.abort(self.fs, uploads))
            self.metrics.add("uploads_aborted", len(uploads))

    def list_uploads(self, prefix: str) -> list[tuple[str, str, float]]:
        self.metrics.add("list_requests")
        try:
            return multipart.list_uploads(self.fs, prefix)
        except StorageError as err:
            if _not_implemented(err):
                with _PROBE_LOCK:
                    _NO_UPLOAD_LISTING.add(self._bucket_key(prefix))
            raise

    def lists_uploads(self, prefix: str) -> bool:
        return self._bucket_key(prefix) not in _NO_UPLOAD_LISTING

    def _bucket_key(self, path: str) -> tuple[str, str]:
        """The endpoint and bucket ``path`` is on: what a probe's answer holds for."""
        options = self.spec.options
        endpoint = options.get("endpoint_url") or (options.get("client_kwargs") or {}).get(
            "endpoint_url") or ""
        return str(endpoint), path.partition("/")[0]

    def conditional_puts(self, prefix: str) -> bool:
        """Probe once per bucket (and process): a PUT of a new object under ``prefix``,
        then a PUT of the same key with ``If-None-Match: *``, which must be refused;
        the object is deleted. Some S3-compatible stores ignore the header (the second
        PUT succeeds) or refuse it (an error): neither honours it."""
        key = self._bucket_key(prefix)
        with _PROBE_LOCK:
            known = _CONDITIONAL_PUTS.get(key)
        if known is not None:
            return known
        probe = f"{prefix}{PROBE_DIR}/{uuid.uuid4().hex}/_probe"
        self.put(probe, b"")
        try:
            honoured = self.put_if_absent(probe, b"") is False
        except StorageError as err:
            log.info("s3://%s refused a conditional PUT (%s): not honoured", probe, err)
            honoured = False
        finally:
            self.delete([probe])
        if not honoured:
            log.warning("the store of s3://%s does not honour If-None-Match on PUT: "
                        "overwrites cannot be isolated there", key[1])
        with _PROBE_LOCK:
            _CONDITIONAL_PUTS[key] = honoured
        return honoured


#: where a probe's object goes, under the table (hidden; ``listing recover`` removes one
#: left by a killed process as the staging of a job that never committed)
PROBE_DIR = "_temporary"
_PROBE_LOCK = threading.Lock()
#: (endpoint, bucket) -> whether the store honours ``If-None-Match: *`` on PUT
_CONDITIONAL_PUTS: dict[tuple[str, str], bool] = {}
#: (endpoint, bucket) of stores that answered ListMultipartUploads with 501
_NO_UPLOAD_LISTING: set[tuple[str, str]] = set()


def _not_implemented(err: BaseException) -> bool:
    """Whether the store answered 501 Not Implemented."""
    return s3_error_code(err) in ("NotImplemented", "501") or "HTTP 501" in str(err)
