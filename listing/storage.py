"""All storage access: the filesystem factory, the counting lister, opening files.

Filesystems are rebuilt from ``(protocol, options)`` wherever they are needed, driver
or executor, and never pickled live (DataFusion's object-store registry). Listing is
done page by page by us rather than by fsspec's helpers, because the planner needs
requests that fsspec does not expose (a partial-key prefix, ``StartAfter``, an early
stop) and because every page sent must be counted. Opening a file uses what the listing
already knows (size, ETag), so a read costs no metadata request; the s3fs details that
this needs live here and nowhere else.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import fsspec
import pyarrow as pa

from listing.errors import (
    CorruptFileError,
    FileChangedError,
    FileReadError,
    ListingError,
    MissingFileError,
    StorageError,
    TableNotFoundError,
)
from listing.files import PartitionedFile
from listing.redact import redact, redact_url  # noqa: F401 - re-exported for callers

PAGE_SIZE = 1000


@dataclass(frozen=True)
class StorageSpec:
    """How to build a filesystem: plain picklable metadata, secrets hidden from repr."""

    protocol: str
    options: dict = field(default_factory=dict, hash=False, compare=False)

    def filesystem(self) -> fsspec.AbstractFileSystem:
        return fsspec.filesystem(self.protocol, **self.options)

    def __repr__(self) -> str:
        return f"StorageSpec(protocol={self.protocol!r}, options={redact(self.options)!r})"

    @property
    def is_s3(self) -> bool:
        return self.protocol in ("s3", "s3a")


@dataclass(frozen=True)
class ObjectMeta:
    """One listed object: fsspec path (no protocol), size, and what identifies its version."""

    path: str
    size: int
    last_modified: dt.datetime | None = None
    etag: str | None = None


@dataclass
class Page:
    files: list[ObjectMeta]
    dirs: list[str]  # common prefixes, with trailing slash
    truncated: bool = False  # more pages follow


@dataclass
class RequestCounter:
    """Requests this process sent for one operation (a scan, an open)."""

    list: int = 0
    get: int = 0


class Lister:
    """Lists keys under a (possibly partial) key prefix, one counted request per page."""

    def __init__(self, spec: StorageSpec, counter: RequestCounter | None = None,
                 progress: Callable[[int, int], None] | None = None) -> None:
        self.spec = spec
        self.fs = spec.filesystem()
        self.counter = counter or RequestCounter()
        self.progress = progress  # called with (requests, keys) after every page
        self.keys = 0

    def pages(self, prefix: str, *, delimiter: bool, start_after: str | None = None,
              stop_after: str | None = None) -> Iterator[Page]:
        """Pages of objects whose path starts with ``prefix``.

        ``start_after``/``stop_after`` bound the key range (exclusive/inclusive); stores
        that list in key order use them to skip pages, others filter.
        """
        pages = (self._s3_pages if self.spec.is_s3 else self._fs_pages)(
            prefix, delimiter, start_after, stop_after)
        for page in pages:
            self.keys += len(page.files) + len(page.dirs)
            if self.progress is not None:
                self.progress(self.counter.list, self.keys)
            yield page

    def _s3_pages(self, prefix: str, delimiter: bool, start_after: str | None,
                  stop_after: str | None) -> Iterator[Page]:
        bucket, _, key_prefix = prefix.partition("/")
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": key_prefix, "MaxKeys": PAGE_SIZE}
        if delimiter:
            kwargs["Delimiter"] = "/"
        if start_after and start_after.startswith(bucket + "/"):
            kwargs["StartAfter"] = start_after[len(bucket) + 1:]
        while True:
            self.counter.list += 1
            try:
                resp = self.fs.call_s3("list_objects_v2", **kwargs)
            except FileNotFoundError as err:
                raise TableNotFoundError(f"bucket {bucket!r} does not exist "
                                         f"(listing s3://{prefix}): {err}") from None
            except (OSError, ValueError) as err:
                raise StorageError(f"listing s3://{prefix} failed: {err}") from None
            files = [ObjectMeta(f"{bucket}/{o['Key']}", int(o["Size"]), o.get("LastModified"),
                                o.get("ETag", "").strip('"') or None)
                     for o in resp.get("Contents", [])]
            dirs = [f"{bucket}/{p['Prefix']}" for p in resp.get("CommonPrefixes", [])]
            last = max([f.path for f in files] + dirs, default=None)
            done = stop_after is not None and last is not None and last > stop_after
            if stop_after is not None:
                files = [f for f in files if f.path <= stop_after]
                dirs = [d for d in dirs if d <= stop_after]
            more = bool(resp.get("IsTruncated")) and not done
            yield Page(files, dirs, more)
            if not more:
                return
            kwargs["ContinuationToken"] = resp["NextContinuationToken"]
            kwargs.pop("StartAfter", None)

    def _fs_pages(self, prefix: str, delimiter: bool, start_after: str | None,
                  stop_after: str | None) -> Iterator[Page]:
        parent, _, name_prefix = prefix.rpartition("/")
        parent = parent or "/"
        self.counter.list += 1
        try:
            if delimiter:
                entries = self.fs.ls(parent, detail=True)
            else:
                found = self.fs.find(parent, detail=True, withdirs=False)
                entries = list(found.values())
        except FileNotFoundError:
            return
        except OSError as err:
            raise StorageError(f"listing {self.spec.protocol}://{prefix} failed: {err}") from None
        files, dirs = [], []
        for e in entries:
            path = self.fs._strip_protocol(e["name"])
            if not path.startswith(prefix) and not (path + "/").startswith(prefix):
                continue
            if start_after is not None and path <= start_after:
                continue
            if stop_after is not None and path > stop_after:
                continue
            if e.get("type") == "directory":
                dirs.append(path.rstrip("/") + "/")
            else:
                files.append(ObjectMeta(path, int(e.get("size") or 0), _mtime(e),
                                        e.get("ETag") or e.get("etag")))
        files.sort(key=lambda f: f.path)
        dirs.sort()
        yield Page(files, dirs)


def _mtime(entry: dict) -> dt.datetime | None:
    value = entry.get("LastModified") or entry.get("mtime") or entry.get("created")
    if isinstance(value, int | float):
        return dt.datetime.fromtimestamp(value, tz=dt.UTC)
    return value if isinstance(value, dt.datetime) else None


# --- opening files ----------------------------------------------------------------------------

SMALL_FILE = 8 * 1024 * 1024


def open_input(fs: Any, file: PartitionedFile, readahead: int = 0,
               whole_if_small: bool = False) -> Any:
    """Open ``file`` for reading without a metadata request.

    No read-ahead by default (readers choose their own read sizes); ``readahead`` bytes for
    readers that issue many small sequential reads (Arrow IPC). ``whole_if_small``: a file
    under 8 MiB is fetched in one GET, for readers that would otherwise make several
    (Parquet: footer, then data).
    """
    if whole_if_small and 0 < file.size <= SMALL_FILE and file.byte_range is None:
        try:
            data = fs.cat_file(file.fs_path, start=0, end=file.size)  # one ranged GET
        except FileNotFoundError as err:
            raise MissingFileError(f"{file.path}: file vanished after listing "
                                   f"({err})") from None
        if len(data) != file.size:
            raise FileReadError(f"{file.path}: changed since listing ({file.size} bytes "
                                f"listed, {len(data)} read)")
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
    """Tell a buffered fsspec file what the listing already knows.

    s3fs asks for the object's details (a HEAD request) on its first read, only to compare
    ETags; the listed ETag serves the same purpose and makes each ranged GET conditional
    (``If-Match``), so a file rewritten after listing fails loudly instead of mixing two
    versions.
    """
    if not file.size or not isinstance(handle, fsspec.spec.AbstractBufferedFile):
        return
    if getattr(handle, "_details", True) is None:
        details: dict[str, Any] = {"name": file.fs_path, "size": file.size, "type": "file"}
        if file.etag:
            details["ETag"] = f'"{file.etag.strip(chr(34))}"'
            read_kw = getattr(handle, "read_kw", None)
            if isinstance(read_kw, dict) and not getattr(handle.fs, "local_expiry_check", 1):
                handle.read_kw = {**read_kw, "IfMatch": details["ETag"]}  # s3fs: server check
        handle.details = details


def is_changed_error(err: BaseException) -> bool:
    """s3fs' ``FileExpired``: the listed version was replaced while being read."""
    return type(err).__name__ == "FileExpired"


#: packages whose exceptions mean "the store or the network failed", not "bad content"
_STORAGE_MODULES = ("botocore", "aiobotocore", "aiohttp", "s3fs", "fsspec", "urllib3",
                    "requests", "gcsfs", "adlfs")


def read_failure(path: str, err: BaseException, what: str) -> BaseException:
    """The error to raise for ``err``, met while reading ``path``: only content that does
    not decode is corrupt (``what`` says as what it failed to decode); a vanished file is
    missing, a rewritten one changed, and anything the store or network raised (after
    the client's retries) is a :class:`StorageError`, which no ``ignore_*`` option skips.
    Errors of other kinds (a bug) are returned as they are."""
    if isinstance(err, ListingError):
        return err
    if is_changed_error(err):
        return FileChangedError(f"{path}: changed since listing ({err})")
    if isinstance(err, FileNotFoundError):
        return MissingFileError(f"{path}: file vanished after listing ({err})")
    # pyarrow reports undecodable bytes as ArrowInvalid/ValueError/EOFError, or as an
    # OSError without an errno ("Truncated compressed stream"); stores and the OS set one
    from_store = (type(err).__module__.split(".")[0] in _STORAGE_MODULES
                  or isinstance(err, TimeoutError)
                  or (isinstance(err, OSError) and err.errno is not None))
    if from_store:
        return StorageError(f"reading {path} failed (a storage error, not bad content; "
                            f"after the client's retries): {type(err).__name__}: {err}")
    if isinstance(err, pa.ArrowException | ValueError | EOFError | OSError):
        return CorruptFileError(f"{path}: {what}: {err}")
    return err
