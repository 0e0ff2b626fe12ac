"""Opening listed files for reading: no metadata request, and never another version.

Opening a file uses what the listing already knows (size, ETag), so a read costs no
metadata request, and every S3 read is conditional on the listed ETag, so a file
rewritten since listing is never read silently. A response body cut short is
re-requested here within the ``max_retries`` budget (botocore has returned by then).
Reads count their GETs, bytes and retries into the enclosing :func:`counting` block.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import importlib
import logging
import random
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import fsspec
import pyarrow as pa

from listing.errors import FileChangedError, MissingFileError
from listing.files import PartitionedFile
from listing.metrics import Counters
from listing.storage.client import (
    LOCAL_PROTOCOLS,
    acall,
    is_s3,
    s3_call,
    secrets_of,
    settings_of,
    sync,
)
from listing.storage.errors import (
    BodyCut,
    error_code,
    raise_as,
    retry_attempts,
    storage_failure,
)
from listing.storage.lister import entry_mtime
from listing.storage.local_pages import stat_file

log = logging.getLogger("listing.storage")

SMALL_FILE = 8 * 1024 * 1024
#: stores whose files carry no ETag and cost no request to stat (local and in-memory
#: files): a read is checked against the listed size and modification time instead
_STAT_CHECKED = frozenset({*LOCAL_PROTOCOLS, "memory"})


def _is_local(protocols: tuple[str, ...] | list[str]) -> bool:
    return not set(LOCAL_PROTOCOLS).isdisjoint(protocols)


def open_input(fs: Any, file: PartitionedFile, readahead: int = 0,
               whole_if_small: bool = False) -> Any:
    """Open ``file`` for reading without a metadata request.

    No read-ahead by default (readers choose their own read sizes); ``readahead`` bytes for
    readers that issue many small sequential reads (Arrow IPC). ``whole_if_small``: a file
    under 8 MiB is fetched in one GET, for readers that would otherwise make several
    (Parquet: footer, then data).

    A file must still be the listed version: on S3 every GET carries ``If-Match`` with the
    listed ETag (and asks for exactly the listed bytes); local files are compared by size
    and mtime before and after a whole read. A change raises :class:`FileChangedError`,
    a vanished file :class:`MissingFileError`, a failing store :class:`StorageError`.
    Retries of reads are added to the counts of the enclosing :func:`counting` block.
    """
    counts = _COUNTS.get()
    whole = whole_if_small and 0 < file.size <= SMALL_FILE and file.byte_range is None
    if is_s3(fs):
        if whole:
            return pa.BufferReader(_read_s3(fs, file, 0, file.size, counts))  # one GET
        return _ListedS3File(fs, file, "readahead" if readahead else "none",
                             readahead or None, counts)
    check_unchanged(fs, file)
    if whole:
        try:
            data = fs.cat_file(file.fs_path, start=0, end=file.size)
        except FileNotFoundError as err:
            raise MissingFileError(f"{file.path}: file vanished after listing "
                                   f"({err})") from None
        if len(data) != file.size:
            raise FileChangedError(f"{file.path}: changed since listing ({file.size} bytes "
                                   f"listed, {len(data)} read)")
        check_unchanged(fs, file)
        return pa.BufferReader(data)
    if readahead:
        cache: dict[str, Any] = {"cache_type": "readahead", "block_size": readahead}
    else:
        cache = {"cache_type": "none"}
    try:
        handle = fs.open(file.fs_path, "rb", size=file.size or None, **cache)
    except TypeError:  # filesystems whose open() takes no size/cache_type
        handle = fs.open(file.fs_path, "rb")
    except FileNotFoundError as err:
        raise MissingFileError(f"{file.path}: file vanished after listing ({err})") from None
    _known_details(handle, file)
    return handle


def _known_details(handle: Any, file: PartitionedFile) -> None:
    """Tell a buffered fsspec file what the listing already knows, so that it asks for no
    details (a metadata request) on its first read."""
    if not file.size or not isinstance(handle, fsspec.spec.AbstractBufferedFile):
        return
    if getattr(handle, "_details", True) is None:
        details: dict[str, Any] = {"name": file.fs_path, "size": file.size, "type": "file"}
        if file.etag:
            details["ETag"] = f'"{file.etag.strip(chr(34))}"'
        handle.details = details


def check_unchanged(fs: Any, file: PartitionedFile) -> None:
    """Local and in-memory files (no ETag, a stat costs no request): raise
    :class:`FileChangedError` when size or modification time differ from the listing (or,
    local files, the inode change time: :func:`~listing.storage.local_pages.file_times`),
    :class:`MissingFileError` when the file is gone. Other stores: nothing to do (S3
    reads are conditional on the ETag)."""
    protocols = fs.protocol if isinstance(fs.protocol, tuple | list) else (fs.protocol,)
    if not _STAT_CHECKED.intersection(protocols):
        return
    now = _stat(fs, file, protocols)
    if now.size != file.size:
        raise FileChangedError(f"{file.path}: changed since listing ({file.size} bytes "
                               f"listed, {now.size} now)")
    mtime = now.last_modified
    if file.last_modified is not None and mtime is not None and mtime != file.last_modified:
        raise FileChangedError(f"{file.path}: changed since listing (modified "
                               f"{mtime.isoformat()}, listed {file.last_modified.isoformat()})")
    if file.etag is not None and now.etag is not None and now.etag != file.etag:
        raise FileChangedError(f"{file.path}: changed since listing (same size and mtime, "
                               "but its inode changed: rewritten with its mtime put back)")


def _stat(fs: Any, file: PartitionedFile, protocols: tuple[str, ...] | list[str]
          ) -> PartitionedFile:
    """``file`` as a local or in-memory store has it now (a stat, no request); a local
    file's size, time and version as its listing has them
    (:func:`~listing.storage.local_pages.stat_file`). Raises :class:`MissingFileError`."""
    try:
        if _is_local(protocols):
            size, mtime, version = stat_file(file.fs_path)
            return dataclasses.replace(file, size=size, last_modified=mtime, etag=version)
        info = fs.info(file.fs_path)
    except FileNotFoundError:
        raise MissingFileError(f"{file.path}: file vanished after listing") from None
    etag = info.get("ETag") or info.get("etag")
    return dataclasses.replace(file, size=int(info.get("size") or 0),
                               last_modified=entry_mtime(info),
                               etag=str(etag).strip('"') if etag else None)


def current_version(fs: Any, file: PartitionedFile) -> PartitionedFile:
    """``file`` as the store has it now (size, ETag, mtime): one metadata request, made
    only to read a file that changed since listing (``on_file_change=read``)."""
    if is_s3(fs):
        bucket, key, _ = fs.split_path(file.fs_path)
        try:
            head = s3_call(fs, "head_object", Bucket=bucket, Key=key)
        except Exception as err:  # noqa: BLE001 - classified, never swallowed
            raise_as(_read_error(fs, dataclasses.replace(file, etag=None), err), err)
        return dataclasses.replace(file, size=int(head["ContentLength"]),
                                   etag=str(head.get("ETag", "")).strip('"') or None,
                                   last_modified=head.get("LastModified"))
    protocols = fs.protocol if isinstance(fs.protocol, tuple | list) else (fs.protocol,)
    try:
        return _stat(fs, file, protocols)
    except MissingFileError:
        raise
    except OSError as err:
        raise_as(storage_failure("opening", file.path, err, settings_of(fs)), err)


# --- counting what reads cost -------------------------------------------------------------

_COUNTS: ContextVar[Counters | None] = ContextVar("listing_read_counts", default=None)


@contextmanager
def counting(counts: Counters | None) -> Iterator[None]:
    """Within the block, files opened by :func:`open_input` add their retries, GETs and
    bytes to ``counts`` (``read_retries``, ``read_requests``, ``bytes_read``; S3), even when
    read later from other threads."""
    token = _COUNTS.set(counts)
    try:
        yield
    finally:
        _COUNTS.reset(token)



# --- reading S3 objects -------------------------------------------------------------------

class _NotAsListed(Exception):
    """The store served another length than the listing said: the object changed."""


@functools.cache
def _body_errors() -> tuple[type[BaseException], ...]:
    """Errors met while reading a response body: botocore has already returned, so its
    retries do not cover them; ``_get_range`` re-requests within ``max_retries``."""
    import botocore.exceptions as bex

    aiohttp = importlib.import_module("aiohttp")
    return (aiohttp.ClientError, bex.HTTPClientError, bex.IncompleteReadError,
            TimeoutError, asyncio.TimeoutError, ConnectionError)


async def _get_range(fs: Any, bucket: str, key: str, start: int, end: int,
                     etag: str | None) -> tuple[bytes, int]:
    """Bytes ``[start, end)`` of the object, only if it is still the listed version
    (``If-Match``); returns them with the number of retries it took."""
    settings = settings_of(fs)
    kwargs: dict[str, Any] = {"Bucket": bucket, "Key": key, "Range": f"bytes={start}-{end - 1}"}
    if etag:
        kwargs["IfMatch"] = f'"{etag.strip(chr(34))}"'
    attempts = retries = 0
    while True:
        response = await acall(fs, "get_object", kwargs)
        sent = 1 + retry_attempts(response)
        attempts += sent
        retries += sent - 1
        body = response["Body"]
        length = response.get("ContentLength")
        if length is not None and length != end - start:
            body.close()
            raise _NotAsListed(f"{length} bytes served for the {end - start} requested at "
                               f"offset {start}")
        try:
            data = await body.read()
            if len(data) != end - start:
                raise ConnectionError(f"body ended after {len(data)} of {end - start} bytes")
        except _body_errors() as err:
            if attempts > settings.max_retries:
                raise BodyCut(err, attempts) from None
            retries += 1
            await asyncio.sleep(random.random() * min(settings.retry_max_backoff,
                                                      0.05 * 2 ** attempts))
            continue
        finally:
            body.close()
        return data, retries


def _read_s3(fs: Any, file: PartitionedFile, start: int, end: int,
             counts: Counters | None) -> bytes:
    """Bytes ``[start, end)`` of a listed S3 file, classified errors, retries counted."""
    if end <= start:
        return b""
    bucket, key, _ = fs.split_path(file.fs_path)
    try:
        data, retries = sync(fs, _get_range, fs, bucket, key, start, end, file.etag)
    except Exception as err:  # noqa: BLE001 - classified, never swallowed
        raise_as(_read_error(fs, file, err), err)
    if retries:
        log.info("GET %s [%d, %d) took %d retries", file.path, start, end, retries)
    if counts is not None:
        if retries:
            counts.add("read_retries", retries)
        counts.add("read_requests")
        if data:
            counts.add("bytes_read", len(data))
    return data


def _read_error(fs: Any, file: PartitionedFile, err: BaseException) -> BaseException:
    code = error_code(err)
    if code == "PreconditionFailed":
        return FileChangedError(f"{file.path}: changed since listing (its ETag is no longer "
                                f"the listed {file.etag})")
    if code == "InvalidRange" or isinstance(err, _NotAsListed):
        return FileChangedError(f"{file.path}: changed since listing ({file.size} bytes "
                                f"listed; {err if isinstance(err, _NotAsListed) else code})")
    if code in ("NoSuchKey", "404") or isinstance(err, FileNotFoundError):
        return MissingFileError(f"{file.path}: file vanished after listing")
    return storage_failure("reading", file.path, err, settings_of(fs), secrets_of(fs))


class _ListedS3File(fsspec.spec.AbstractBufferedFile):
    """A read-only S3 object of known size and ETag: every ranged GET is conditional
    (``If-Match``), retried and counted by ``_read_s3``; no HEAD request."""

    def __init__(self, fs: Any, file: PartitionedFile, cache_type: str,
                 block_size: int | None, counts: Counters | None) -> None:
        self.listed = file
        self._counts = counts
        super().__init__(fs, file.fs_path, mode="rb", block_size=block_size,
                         cache_type=cache_type, size=file.size)
        self._details = {"name": file.fs_path, "size": file.size, "type": "file",
                         "ETag": file.etag}

    def _fetch_range(self, start: int, end: int) -> bytes:
        return _read_s3(self.fs, self.listed, start, min(end, self.size), self._counts)


