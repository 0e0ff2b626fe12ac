"""All storage access: the filesystem factory, the counting lister, opening files.

Filesystems are rebuilt from ``(protocol, options)`` wherever they are needed, driver
or executor, and never pickled live (DataFusion's object-store registry). Listing is
done page by page by us rather than by fsspec's helpers, because the planner needs
requests that fsspec does not expose (a partial-key prefix, ``StartAfter``, an early
stop) and because every page sent must be counted. Opening a file uses what the listing
already knows (size, ETag), so a read costs no metadata request, and every S3 read is
conditional on the listed ETag, so a file rewritten since listing is never read silently.

Retries: a few storage options are ours (:class:`StorageSettings`); on S3 they become
botocore's retry configuration, s3fs's own retry loop is switched off so that it cannot
multiply botocore's attempts, and response bodies cut short are re-requested here within
the same budget. Retries are counted (listing: :class:`RequestCounter`; reads: the
``counting`` block of the opener). Every failure leaves this module as a
:class:`~listing.errors.ListingError` naming the URL or file, the operation and the cause.
The s3fs and botocore details all this needs live here and nowhere else.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import email.utils
import functools
import importlib
import logging
import os
import random
import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any, NamedTuple
from urllib.parse import unquote_plus

import fsspec
import pyarrow as pa

from listing.errors import (
    CorruptFileError,
    FileChangedError,
    ListingError,
    MissingFileError,
    OptionError,
    StorageConfigError,
    StorageError,
    TableNotFoundError,
)
from listing.files import PartitionedFile
from listing.options import parse_duration, parse_int, storage_options
from listing.redact import redact, redact_url
from listing.s3_pages import columns_of, listing_columns, use_fast_list_pages

log = logging.getLogger("listing.storage")

PAGE_SIZE = 1000

# --- settings: storage options the toolkit interprets itself -------------------------------

RETRY_MODES = ("standard", "adaptive")
ON_FILE_CHANGE = ("error", "read")
RETRY_OPTIONS = frozenset({"max_retries", "retry_mode", "retry_max_backoff"})
SETTING_NAMES = RETRY_OPTIONS | {"on_file_change"}


@dataclass(frozen=True)
class StorageSettings:
    """Retries and change handling, given as storage options next to fsspec's.

    ``max_retries``: retries after the first attempt of any request (botocore's
    ``total_max_attempts`` is ``max_retries + 1``; s3fs's own retry loop is switched off so
    it cannot multiply them; a body cut short mid-transfer is re-requested within the same
    budget). ``retry_mode``: botocore's ``standard`` or ``adaptive`` (client-side rate
    limiting on throttling). ``retry_max_backoff``: the longest wait between two attempts,
    seconds. ``on_file_change``: ``error`` (a file rewritten since listing fails the read
    with :class:`FileChangedError`) or ``read`` (read its current content, counted as
    ``files_changed``).
    """

    max_retries: int = 4
    retry_mode: str = "standard"
    retry_max_backoff: float = 20.0
    on_file_change: str = "error"

    @classmethod
    def parse(cls, values: dict[str, Any]) -> StorageSettings:
        kwargs: dict[str, Any] = {}
        try:
            if values.get("max_retries") is not None:
                kwargs["max_retries"] = parse_int(values["max_retries"], "max_retries",
                                                  minimum=0)
            if values.get("retry_max_backoff") is not None:
                kwargs["retry_max_backoff"] = parse_duration(values["retry_max_backoff"],
                                                             "retry_max_backoff")
        except OptionError as err:
            raise StorageConfigError(f"storage {err}") from None
        for name, allowed in (("retry_mode", RETRY_MODES), ("on_file_change", ON_FILE_CHANGE)):
            if values.get(name) is not None:
                value = str(values[name]).strip().lower()
                if value not in allowed:
                    raise StorageConfigError(f"storage option {name}={values[name]!r} must be "
                                             f"one of {', '.join(allowed)}")
                kwargs[name] = value
        return cls(**kwargs)


@dataclass(frozen=True)
class StorageSpec:
    """How to build a filesystem: plain picklable metadata, secrets hidden from repr.

    ``options`` are checked against the allowlist of ``protocol``
    (:mod:`listing.options.storage_options`) when the spec is made, and kept converted to their
    kinds. ``filesystem_factory`` is the trusted Python caller's own filesystem (an fsspec
    filesystem, or a callable returning one): no option string can set it.
    """

    protocol: str
    options: dict = field(default_factory=dict, hash=False, compare=False)
    filesystem_factory: Any = field(default=None, hash=False, compare=False)

    def __post_init__(self) -> None:
        checked = storage_options.check(self.protocol, self.options)
        if self.filesystem_factory is not None:
            own = sorted(set(checked) - SETTING_NAMES)
            if own:
                raise StorageConfigError(
                    f"storage option(s) {', '.join(own)} configure a filesystem, and one was "
                    "given (filesystem=…): configure it there")
        object.__setattr__(self, "options", checked)

    def filesystem(self) -> fsspec.AbstractFileSystem:
        """The filesystem for these options. Raises :class:`StorageConfigError` for an
        option the client refuses, before any request.

        S3 filesystems are cached here, once per process and set of options (ours
        included), with the settings attached: s3fs instances are cached by fsspec on their
        constructor arguments, and ``retry_max_backoff`` is not one of them. Other
        protocols use fsspec's own instance cache.
        """
        if self.filesystem_factory is not None:
            return _given_filesystem(self.filesystem_factory, self.protocol)
        settings, fs_options = self.resolve()
        cls = _filesystem_class(self.protocol)
        key = fsspec.utils.tokenize(self.protocol, os.getpid(), self.options) \
            if self.is_s3 else None
        if key is not None:
            with _FS_LOCK:
                cached = _FS_CACHE.get(key)
            if cached is not None:
                return cached
            _check_s3_config(fs_options)
            fs_options = {**fs_options, "skip_instance_cache": True}
        try:
            fs = cls(**fs_options)
        except TypeError as err:
            raise StorageConfigError(f"storage options for {self.protocol}:// not accepted: "
                                     f"{_scrub(str(err), self.options)}") from None
        except (ValueError, KeyError) as err:
            raise StorageConfigError(f"storage options for {self.protocol}:// are invalid: "
                                     f"{_scrub(str(err), self.options)}") from None
        if key is None:
            return fs
        fs.retries = 1  # s3fs's own loop (5 by default, a class attribute): off
        fs._listing_settings = settings
        fs._listing_secrets = _secret_values(self.options)
        with _FS_LOCK:
            return _FS_CACHE.setdefault(key, fs)

    @property
    def settings(self) -> StorageSettings:
        return self.resolve()[0]

    def resolve(self) -> tuple[StorageSettings, dict[str, Any]]:
        """Our settings, and the options fsspec gets (for s3, the retry settings mapped
        to botocore's ``config_kwargs``)."""
        opts = dict(self.options)
        given = {k: opts.pop(k) for k in list(opts) if k in SETTING_NAMES}
        settings = StorageSettings.parse(given)
        if not self.is_s3:
            return settings, opts
        config = dict(opts.get("config_kwargs") or {})
        user_retries = config.get("retries")
        if user_retries is not None:
            if given.keys() & {"max_retries", "retry_mode"}:
                raise StorageConfigError("give the storage options max_retries/retry_mode or "
                                         "config_kwargs['retries'], not both")
            if not isinstance(user_retries, dict):
                raise StorageConfigError("storage option config_kwargs['retries'] must be a "
                                         "dict")
            total = user_retries.get("total_max_attempts")
            retries = (total - 1 if isinstance(total, int) else
                       user_retries.get("max_attempts", settings.max_retries))
            settings = dataclasses.replace(settings, max_retries=int(retries),
                                           retry_mode=str(user_retries.get("mode", "legacy")))
        else:
            config["retries"] = {"mode": settings.retry_mode,
                                 "total_max_attempts": settings.max_retries + 1}
        opts["config_kwargs"] = config
        return settings, opts

    def __repr__(self) -> str:
        return f"StorageSpec(protocol={self.protocol!r}, options={redact(self.options)!r})"

    @property
    def is_s3(self) -> bool:
        return self.protocol in ("s3", "s3a")

    @property
    def is_local(self) -> bool:
        return self.protocol in ("file", "local", "memory")


_FS_CACHE: dict[str, Any] = {}  # S3 filesystems by process and options
_FS_LOCK = threading.Lock()


def settings_of(fs: Any) -> StorageSettings:
    """The settings ``fs`` was built with (defaults for a filesystem built elsewhere)."""
    settings = getattr(fs, "_listing_settings", None)
    return settings if isinstance(settings, StorageSettings) else StorageSettings()


def _filesystem_class(protocol: str) -> type:
    try:
        return fsspec.get_filesystem_class(protocol)
    except ValueError:
        known = sorted(fsspec.available_protocols())
        raise StorageConfigError(f"unknown storage protocol {protocol!r} (fsspec knows "
                                 f"{len(known)}: {', '.join(known[:12])}, …)") from None
    except ImportError as err:
        raise StorageConfigError(f"storage protocol {protocol!r} needs a package that is not "
                                 f"installed: {err}") from None


def _given_filesystem(factory: Any, protocol: str) -> fsspec.AbstractFileSystem:
    """The caller's filesystem: ``factory`` itself, or what calling it returns."""
    fs = factory if isinstance(factory, fsspec.AbstractFileSystem) else factory()
    if not isinstance(fs, fsspec.AbstractFileSystem):
        raise StorageConfigError(f"filesystem= must be an fsspec filesystem or a callable "
                                 f"returning one, got {type(fs).__name__}")
    return fs


def _check_s3_config(options: dict[str, Any]) -> None:
    """botocore's own check of ``config_kwargs`` (allowlisted keys, checked kinds), so that a
    value it refuses fails here, not inside the first request."""
    config = importlib.import_module("aiobotocore.config")
    try:
        config.AioConfig(**(options.get("config_kwargs") or {}))
    except Exception as err:  # noqa: BLE001 - botocore validates with several error types
        raise StorageConfigError(f"storage option config_kwargs is invalid: "
                                 f"{' '.join(str(err).split())}") from None


def _secret_values(options: Any) -> tuple[str, ...]:
    """Values of the secret-looking options (as :func:`redact` decides), to scrub from
    messages that quote a client's error text."""
    found: list[str] = []

    def walk(value: Any, hidden: Any) -> None:
        if isinstance(value, dict) and isinstance(hidden, dict):
            for k, v in value.items():
                walk(v, hidden.get(k))
        elif hidden == "***" and value is not None and value != "***" and len(str(value)) >= 4:
            found.append(str(value))

    walk(options, redact(options))
    return tuple(found)


def _scrub(text: str, secrets: Any = ()) -> str:
    """One line, with URL credentials and the given secret values (or those of an options
    dict) replaced."""
    values = _secret_values(secrets) if isinstance(secrets, dict) else tuple(secrets)
    text = redact_url(" ".join(str(text).split()))
    for value in values:
        text = text.replace(value, "***")
    return text


# --- S3 requests --------------------------------------------------------------------------

def _is_s3(fs: Any) -> bool:
    protocol = fs.protocol if isinstance(fs.protocol, tuple | list) else (fs.protocol,)
    return "s3" in protocol and hasattr(fs, "_call_s3")


def _is_local(fs: Any) -> bool:
    protocol = fs.protocol if isinstance(fs.protocol, tuple | list) else (fs.protocol,)
    return bool({"file", "local", "memory"} & set(protocol))


def _cap_backoff(client: Any, cap: float) -> None:
    """Bound botocore's wait between attempts (standard and adaptive modes cap it at 20 s,
    with no setting): the retry handler's backoff is reached through the client's events."""
    events = client.meta.events
    emitter = getattr(events, "_emitter", events)
    try:
        handler = emitter._unique_id_handlers["retry-config-s3"]["handler"]
        backoff = handler.__self__._retry_policy._retry_backoff
    except (AttributeError, KeyError, TypeError):
        return  # legacy mode, or a botocore laid out differently: its own cap applies
    if getattr(backoff, "_max_backoff", None) != cap:
        backoff._max_backoff = cap


def _fast_timestamp(value: Any) -> Any:
    """S3's times parsed by the standard library: ISO 8601 in listings
    (``2026-03-01T10:00:00.000Z``) and HTTP dates in headers (``Last-Modified: Sun, 01 Mar
    2026 10:00:00 GMT``, in every GET's response). botocore's default goes through dateutil
    at 40-70 µs a value: three quarters of the client's CPU for a 1 000-key LIST page, and
    a few percent of a small file's GET. Anything else goes to botocore's own parser."""
    if isinstance(value, str):
        try:
            if len(value) > 19 and value[10] == "T" and value[-1] == "Z":
                return dt.datetime.fromisoformat(value)
            if value.endswith(" GMT"):  # RFC 9110's IMF-fixdate
                return email.utils.parsedate_to_datetime(value)
        except ValueError:
            pass
    return importlib.import_module("botocore.utils").parse_timestamp(value)


def _use_fast_timestamps(client: Any) -> None:
    """Have the client's response parsers use :func:`_fast_timestamp` (the parser factory
    belongs to this filesystem's own botocore session)."""
    factory: Any = getattr(getattr(client, "_endpoint", None), "_response_parser_factory", None)
    defaults = getattr(factory, "_defaults", None)
    if defaults is not None and defaults.get("timestamp_parser") is not _fast_timestamp:
        factory.set_parser_defaults(timestamp_parser=_fast_timestamp)


async def _acall(fs: Any, method: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    client = await fs.set_session()
    _cap_backoff(client, settings_of(fs).retry_max_backoff)
    _use_fast_timestamps(client)
    use_fast_list_pages(client)
    with listing_columns():  # our LIST pages as columns (listing.s3_pages)
        result: dict[str, Any] = await fs._call_s3(method, **kwargs)
    return result


def _sync(fs: Any, coroutine: Callable[..., Any], *args: Any) -> Any:
    """Run ``coroutine(*args)`` on the filesystem's event loop, from a caller's thread."""
    return importlib.import_module("fsspec.asyn").sync(fs.loop, coroutine, *args)


def _s3_call(fs: Any, method: str, **kwargs: Any) -> dict[str, Any]:
    """One S3 API call with botocore's retries (s3fs's loop is off, see ``filesystem``)."""
    result: dict[str, Any] = _sync(fs, _acall, fs, method, kwargs)
    return result


def _retry_attempts(response: dict[str, Any]) -> int:
    return int(response.get("ResponseMetadata", {}).get("RetryAttempts", 0) or 0)


def _client_error(err: BaseException | None) -> Any:
    """The botocore ClientError behind ``err`` (s3fs raises an OSError caused by it)."""
    for _ in range(4):
        if err is None:
            return None
        response = getattr(err, "response", None)
        if isinstance(response, dict) and "Error" in response:
            return err
        err = err.__cause__
    return None


def _error_code(err: BaseException) -> str | None:
    client_error = _client_error(err)
    if client_error is None:
        return None
    return str(client_error.response["Error"].get("Code") or "") or None


def _cause(err: BaseException) -> str:
    """What failed, in one line: the S3 error code, HTTP status and message, or the
    exception's type and text."""
    client_error = _client_error(err)
    if client_error is not None:
        error = client_error.response.get("Error", {})
        status = client_error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        text = f"{error.get('Code') or 'error'}{f' (HTTP {status})' if status else ''}"
        if error.get("Message"):
            text += f": {error['Message']}"
        return text
    if isinstance(err, _BodyCut):
        err = err.error
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


def _attempts_text(err: BaseException, settings: StorageSettings) -> str:
    client_error = _client_error(err)
    attempts = None
    if isinstance(err, _BodyCut):
        attempts = err.attempts
    elif client_error is not None:
        attempts = _retry_attempts(client_error.response) + 1
    if attempts is not None:
        return f" after {attempts} attempt{'s' if attempts != 1 else ''} " \
               f"(max_retries={settings.max_retries})"
    return f" (max_retries={settings.max_retries})"


#: packages whose exceptions mean "the store or the network failed", not "bad content"
_STORAGE_MODULES = ("botocore", "aiobotocore", "aiohttp", "s3fs", "fsspec", "urllib3",
                    "requests", "gcsfs", "adlfs")
#: botocore errors about the request or the configuration, not the store's health
_CONFIG_ERRORS = ("ParamValidationError", "ValidationError", "UnknownParameterError",
                  "NoCredentialsError", "PartialCredentialsError", "NoRegionError",
                  "InvalidRegionError", "UnknownSignatureVersionError", "InvalidConfigError",
                  "ProfileNotFound", "InvalidEndpointConfigurationError")


def _from_store(err: BaseException) -> bool:
    return (type(err).__module__.split(".")[0] in _STORAGE_MODULES
            or isinstance(err, TimeoutError | asyncio.TimeoutError | ConnectionError)
            or (isinstance(err, OSError) and err.errno is not None))


def storage_failure(operation: str, url: str, err: BaseException,
                    settings: StorageSettings, secrets: Any = ()) -> BaseException:
    """The :class:`ListingError` for ``err``, raised by the client while ``operation``
    (``listing``, ``reading``, ``opening``) ``url``: a missing bucket is
    :class:`TableNotFoundError`, a request the client refuses to send or missing
    credentials :class:`StorageConfigError`, anything the store or the network did
    (after the retries) :class:`StorageError`. Other errors (a bug) are returned as
    they are."""
    if isinstance(err, ListingError):
        return err
    code = _error_code(err)
    cause = _scrub(_cause(err), secrets)
    if code == "NoSuchBucket":
        bucket = url.split("://", 1)[-1].split("/", 1)[0]
        return TableNotFoundError(f"bucket {bucket!r} does not exist ({operation} {url}): "
                                  f"{cause}")
    if type(err).__name__ in _CONFIG_ERRORS:
        return StorageConfigError(f"{operation} {url} failed: the client refused the request "
                                  f"or its configuration: {cause}")
    if code is not None or isinstance(err, _BodyCut) or _from_store(err):
        return StorageError(f"{operation} {url} failed{_attempts_text(err, settings)}: "
                            f"{cause}")
    return err


# --- reading S3 objects -------------------------------------------------------------------

class _BodyCut(Exception):
    """A response body ended early, on every attempt the budget allowed."""

    def __init__(self, error: BaseException, attempts: int) -> None:
        super().__init__(str(error))
        self.error = error
        self.attempts = attempts


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
        response = await _acall(fs, "get_object", kwargs)
        sent = 1 + _retry_attempts(response)
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
                raise _BodyCut(err, attempts) from None
            retries += 1
            await asyncio.sleep(random.random() * min(settings.retry_max_backoff,
                                                      0.05 * 2 ** attempts))
            continue
        finally:
            body.close()
        return data, retries


def _read_s3(fs: Any, file: PartitionedFile, start: int, end: int,
             counts: dict[str, int] | None) -> bytes:
    """Bytes ``[start, end)`` of a listed S3 file, classified errors, retries counted."""
    if end <= start:
        return b""
    bucket, key, _ = fs.split_path(file.fs_path)
    try:
        data, retries = _sync(fs, _get_range, fs, bucket, key, start, end, file.etag)
    except Exception as err:  # noqa: BLE001 - classified, never swallowed
        failure = _read_error(fs, file, err)
        if failure is err:
            raise
        raise failure from None
    if retries:
        _add(counts, "read_retries", retries)
        log.info("GET %s [%d, %d) took %d retries", file.path, start, end, retries)
    _add(counts, "read_requests", 1)
    _add(counts, "bytes_read", len(data))
    return data


def _read_error(fs: Any, file: PartitionedFile, err: BaseException) -> BaseException:
    code = _error_code(err)
    if code == "PreconditionFailed":
        return FileChangedError(f"{file.path}: changed since listing (its ETag is no longer "
                                f"the listed {file.etag})")
    if code == "InvalidRange" or isinstance(err, _NotAsListed):
        return FileChangedError(f"{file.path}: changed since listing ({file.size} bytes "
                                f"listed; {err if isinstance(err, _NotAsListed) else code})")
    if code in ("NoSuchKey", "404") or isinstance(err, FileNotFoundError):
        return MissingFileError(f"{file.path}: file vanished after listing")
    return storage_failure("reading", file.path, err, settings_of(fs),
                           getattr(fs, "_listing_secrets", ()))


class _ListedS3File(fsspec.spec.AbstractBufferedFile):
    """A read-only S3 object of known size and ETag: every ranged GET is conditional
    (``If-Match``), retried and counted by ``_read_s3``; no HEAD request."""

    def __init__(self, fs: Any, file: PartitionedFile, cache_type: str,
                 block_size: int | None, counts: dict[str, int] | None) -> None:
        self.listed = file
        self._counts = counts
        super().__init__(fs, file.fs_path, mode="rb", block_size=block_size,
                         cache_type=cache_type, size=file.size)
        self._details = {"name": file.fs_path, "size": file.size, "type": "file",
                         "ETag": file.etag}

    def _fetch_range(self, start: int, end: int) -> bytes:
        return _read_s3(self.fs, self.listed, start, min(end, self.size), self._counts)


# --- counting what reads cost -------------------------------------------------------------

_COUNTS: ContextVar[dict[str, int] | None] = ContextVar("listing_read_counts", default=None)
_COUNT_LOCK = threading.Lock()


@contextmanager
def counting(counts: dict[str, int] | None) -> Iterator[None]:
    """Within the block, files opened by :func:`open_input` add their retries, GETs and
    bytes to ``counts`` (``read_retries``, ``read_requests``, ``bytes_read``; S3), even when
    read later from other threads."""
    token = _COUNTS.set(counts)
    try:
        yield
    finally:
        _COUNTS.reset(token)


def _add(counts: dict[str, int] | None, name: str, n: int) -> None:
    if counts is None or not n:
        return
    with _COUNT_LOCK:
        counts[name] = counts.get(name, 0) + n


class ObjectMeta(NamedTuple):
    """One listed object: fsspec path (no protocol), size, and what identifies its version.
    (A tuple: a long listing makes one per key, at a third of a frozen dataclass's cost.)"""

    path: str
    size: int
    last_modified: dt.datetime | None = None
    etag: str | None = None


_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")


def decode_keys(keys: list[str]) -> list[str]:
    """S3's URL-encoded keys decoded as botocore decodes each (``unquote_plus``), a page at
    a time: a page's escapes are few and plain (``%3D`` in every Hive key), so each is
    replaced throughout the page at once. A page with any other escape (non-ASCII, ``%25``,
    a line break) or a ``%`` that starts none is decoded key by key."""
    joined = "\n".join(keys)
    percent = joined.count("%")
    if not percent:
        return joined.replace("+", " ").split("\n") if "+" in joined else keys
    # the escapes of the first key that has any are usually all the page holds (``%3D``):
    # counted, not collected; else every escape of the page
    first = next(key for key in keys if "%" in key)
    escapes = set(_ESCAPE.findall(first))
    if sum(joined.count(e) for e in escapes) != percent:
        found = _ESCAPE.findall(joined)
        escapes = set(found) if len(found) == percent else set()
    chars = {e: chr(int(e[1:], 16)) for e in escapes}
    # with every "%" starting an escape and none decoding to "%", no replacement can
    # make a new escape, so the order of the replacements does not matter
    if not chars or any(c > "\x7f" or c in "%\n" for c in chars.values()):
        return [unquote_plus(key) for key in keys]
    joined = joined.replace("+", " ")  # before the escapes, as unquote_plus does
    for escape, char in chars.items():
        joined = joined.replace(escape, char)
    return joined.split("\n")


@dataclass
class Page:
    files: list[ObjectMeta]
    dirs: list[str]  # common prefixes, with trailing slash
    truncated: bool = False  # more pages follow


@dataclass
class RequestCounter:
    """Requests this process sent for one operation (a scan, an open), and the retries
    the client needed for them."""

    list: int = 0
    get: int = 0
    retries: int = 0


class Lister:
    """Lists keys under a (possibly partial) key prefix, one counted request per page.

    A page that fails after the client's retries ends the listing with an error (never a
    partial list): :class:`StorageError` naming the prefix, :class:`TableNotFoundError`
    for a missing bucket, :class:`StorageConfigError` for a request the client refuses.
    """

    def __init__(self, spec: StorageSpec, counter: RequestCounter | None = None,
                 progress: Callable[[int, int], None] | None = None) -> None:
        self.spec = spec
        self.fs = spec.filesystem()
        self.counter = counter or RequestCounter()
        self.progress = progress  # called with (requests, keys) after every page
        self.keys = 0
        # the planner may list several prefixes at once from its threads: counts, keys and
        # progress calls are updated under this lock (s3fs runs every request on its own
        # event loop thread; our threads only wait for them)
        self._lock = threading.Lock()

    @property
    def splits_ranges(self) -> bool:
        """Whether one flat listing may be sent as several key ranges at once: the store
        lists in key order from ``StartAfter`` (S3), so a range costs its own pages; other
        stores list everything in one request and filter. A subclass that answers or keeps
        whole listings (the listing cache) says no."""
        return self.spec.is_s3

    def _count(self, requests: int = 0, retries: int = 0) -> None:
        with self._lock:
            self.counter.list += requests
            self.counter.retries += retries

    def pages(self, prefix: str, *, delimiter: bool, start_after: str | None = None,
              stop_after: str | None = None) -> Iterator[Page]:
        """Pages of objects whose path starts with ``prefix``.

        ``start_after``/``stop_after`` bound the key range (exclusive/inclusive); stores
        that list in key order use them to skip pages, others filter.
        """
        pages = (self._s3_pages if self.spec.is_s3 else self._fs_pages)(
            prefix, delimiter, start_after, stop_after)
        for page in pages:
            with self._lock:
                self.keys += len(page.files) + len(page.dirs)
                if self.progress is not None:
                    self.progress(self.counter.list, self.keys)
            yield page

    def _s3_pages(self, prefix: str, delimiter: bool, start_after: str | None,
                  stop_after: str | None) -> Iterator[Page]:
        bucket, _, key_prefix = prefix.partition("/")
        # URL-encoded keys (any key then fits in XML), decoded here and not by botocore:
        # its decoding key by key was a tenth of a page's CPU (see decode_keys)
        kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": key_prefix, "MaxKeys": PAGE_SIZE,
                                  "EncodingType": "url"}
        if delimiter:
            kwargs["Delimiter"] = "/"
        if start_after and start_after.startswith(bucket + "/"):
            kwargs["StartAfter"] = start_after[len(bucket) + 1:]
        while True:
            self._count(requests=1)
            try:
                resp = _s3_call(self.fs, "list_objects_v2", **kwargs)
            except Exception as err:  # noqa: BLE001 - classified, never swallowed
                failure = storage_failure("listing", f"s3://{prefix}", err, self.spec.settings,
                                          self.spec.options)
                if failure is err:
                    raise
                raise failure from None
            retries = _retry_attempts(resp)
            if retries:
                self._count(retries=retries)
                log.info("LIST s3://%s took %d retries", prefix, retries)
            keys, times, etags, sizes = columns_of(resp)
            dirs = [p["Prefix"] for p in resp.get("CommonPrefixes", [])]
            if resp.get("EncodingType") == "url":
                keys, dirs = decode_keys(keys), decode_keys(dirs)
            head = bucket + "/"
            paths = [head + key for key in keys]
            # tuples made as ObjectMeta by tuple.__new__ (its own __new__ is a Python
            # function: a third of the cost, a page a thousand times)
            files = list(map(tuple.__new__, repeat(ObjectMeta),
                             zip(paths, sizes, times, etags, strict=True)))
            dirs = [head + d for d in dirs]
            last = max(paths + dirs, default=None)
            if any(key.endswith("/") for key in keys):  # zero-byte folder markers: no files
                files = [f for f in files if not f.path.endswith("/")]
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
        self._count(requests=1)
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

    A file must still be the listed version: on S3 every GET carries ``If-Match`` with the
    listed ETag (and asks for exactly the listed bytes); local files are compared by size
    and mtime before and after a whole read. A change raises :class:`FileChangedError`,
    a vanished file :class:`MissingFileError`, a failing store :class:`StorageError`.
    Retries of reads are added to the counts of the enclosing :func:`counting` block.
    """
    counts = _COUNTS.get()
    whole = whole_if_small and 0 < file.size <= SMALL_FILE and file.byte_range is None
    if _is_s3(fs):
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
    :class:`FileChangedError` when size or modification time differ from the listing,
    :class:`MissingFileError` when the file is gone. Other stores: nothing to do (S3
    reads are conditional on the ETag)."""
    if not _is_local(fs):
        return
    try:
        info = fs.info(file.fs_path)
    except FileNotFoundError:
        raise MissingFileError(f"{file.path}: file vanished after listing") from None
    size, mtime = info.get("size"), _mtime(info)
    if size is not None and size != file.size:
        raise FileChangedError(f"{file.path}: changed since listing ({file.size} bytes "
                               f"listed, {size} now)")
    if file.last_modified is not None and mtime is not None and mtime != file.last_modified:
        raise FileChangedError(f"{file.path}: changed since listing (modified "
                               f"{mtime.isoformat()}, listed {file.last_modified.isoformat()})")


def current_version(fs: Any, file: PartitionedFile) -> PartitionedFile:
    """``file`` as the store has it now (size, ETag, mtime): one metadata request, made
    only to read a file that changed since listing (``on_file_change=read``)."""
    if _is_s3(fs):
        bucket, key, _ = fs.split_path(file.fs_path)
        try:
            head = _s3_call(fs, "head_object", Bucket=bucket, Key=key)
        except Exception as err:  # noqa: BLE001 - classified, never swallowed
            failure = _read_error(fs, dataclasses.replace(file, etag=None), err)
            if failure is err:
                raise
            raise failure from None
        return dataclasses.replace(file, size=int(head["ContentLength"]),
                                   etag=str(head.get("ETag", "")).strip('"') or None,
                                   last_modified=head.get("LastModified"))
    try:
        info = fs.info(file.fs_path)
    except FileNotFoundError:
        raise MissingFileError(f"{file.path}: file vanished after listing") from None
    except OSError as err:
        raise storage_failure("opening", file.path, err, settings_of(fs)) from None
    etag = info.get("ETag") or info.get("etag")
    return dataclasses.replace(file, size=int(info.get("size") or 0), last_modified=_mtime(info),
                               etag=str(etag).strip('"') if etag else None)


def is_changed_error(err: BaseException) -> bool:
    """s3fs' ``FileExpired``: the listed version was replaced while being read."""
    return type(err).__name__ == "FileExpired"


def read_failure(path: str, err: BaseException, what: str) -> BaseException:
    """The error to raise for ``err``, met while reading ``path``: only content that does
    not decode is corrupt (``what`` says as what it failed to decode); a vanished file is
    missing, a rewritten one changed, and anything the store or network raised (after
    the client's retries) is a :class:`StorageError`, which no ``ignore_*`` option skips.
    Errors of other kinds (a bug) are returned as they are."""
    if isinstance(err, ListingError):
        return err
    if is_changed_error(err) or _error_code(err) == "PreconditionFailed":
        return FileChangedError(f"{path}: changed since listing ({_scrub(str(err))})")
    if isinstance(err, FileNotFoundError):
        return MissingFileError(f"{path}: file vanished after listing ({err})")
    # pyarrow reports undecodable bytes as ArrowInvalid/ValueError/EOFError, or as an
    # OSError without an errno ("Truncated compressed stream"); stores and the OS set one
    if _from_store(err) or _error_code(err) is not None:
        return StorageError(f"reading {path} failed (a storage error, not bad content; "
                            f"after the client's retries): {_scrub(_cause(err))}")
    if isinstance(err, pa.ArrowException | ValueError | EOFError | OSError):
        return CorruptFileError(f"{path}: {what}: {err}")
    return err


# --- writing objects (used by listing.write) ------------------------------------------------

def _s3_write_call(fs: Any, operation: str, url: str, method: str, **kwargs: Any) -> int:
    """One S3 write request (botocore's retries); returns the retries it took. Failures
    leave as :class:`ListingError` naming ``operation`` and ``url``."""
    return _retry_attempts(s3_request(fs, operation, url, method, **kwargs))


def s3_put(fs: Any, path: str, data: bytes) -> int:
    """PUT ``data`` as the object ``bucket/key`` (one request); returns retries."""
    bucket, _, key = path.partition("/")
    return _s3_write_call(fs, "writing", f"s3://{path}", "put_object", Bucket=bucket, Key=key,
                          Body=data)


def s3_copy(fs: Any, src: str, dst: str) -> int:
    """Server-side copy of one object up to 5 GB (one request); returns retries."""
    bucket, _, key = dst.partition("/")
    src_bucket, _, src_key = src.partition("/")
    return _s3_write_call(fs, "copying to", f"s3://{dst}", "copy_object", Bucket=bucket,
                          Key=key, CopySource={"Bucket": src_bucket, "Key": src_key})


def s3_delete(fs: Any, paths: list[str]) -> tuple[int, int]:
    """Delete objects, 1000 per DeleteObjects request; returns (requests, retries). A key
    the store refuses to delete is an error naming it."""
    requests = retries = 0
    by_bucket: dict[str, list[str]] = {}
    for path in paths:
        bucket, _, key = path.partition("/")
        by_bucket.setdefault(bucket, []).append(key)
    for bucket, keys in by_bucket.items():
        for i in range(0, len(keys), 1000):
            chunk = keys[i:i + 1000]
            requests += 1
            try:
                resp = _s3_call(fs, "delete_objects", Bucket=bucket,
                                Delete={"Objects": [{"Key": k} for k in chunk], "Quiet": True})
            except Exception as err:  # noqa: BLE001 - classified, never swallowed
                failure = storage_failure("deleting", f"s3://{bucket}/{chunk[0]}", err,
                                          settings_of(fs), getattr(fs, "_listing_secrets", ()))
                if failure is err:
                    raise
                raise failure from None
            retries += _retry_attempts(resp)
            errors = resp.get("Errors") or []
            if errors:
                first = errors[0]
                raise StorageError(f"deleting s3://{bucket}/{first.get('Key')} failed: "
                                   f"{first.get('Code')}: {first.get('Message')} "
                                   f"({len(errors)} keys not deleted)")
    return requests, retries


def s3_get(fs: Any, path: str) -> bytes | None:
    """The whole object ``bucket/key`` (one GET), or None when it does not exist."""
    bucket, _, key = path.partition("/")
    try:
        resp = _s3_call(fs, "get_object", Bucket=bucket, Key=key)
        return bytes(_sync(fs, resp["Body"].read))
    except Exception as err:  # noqa: BLE001 - classified, never swallowed
        if _error_code(err) in ("NoSuchKey", "404"):
            return None
        failure = storage_failure("reading", f"s3://{path}", err, settings_of(fs),
                                  getattr(fs, "_listing_secrets", ()))
        if failure is err:
            raise
        raise failure from None


def s3_request(fs: Any, operation: str, url: str, method: str,
               **kwargs: Any) -> dict[str, Any]:
    """One S3 request (botocore's retries) and its response; failures leave as
    :class:`ListingError` naming ``operation`` and ``url`` (multipart uploads use it)."""
    try:
        return _s3_call(fs, method, **kwargs)
    except Exception as err:  # noqa: BLE001 - classified, never swallowed
        failure = storage_failure(operation, url, err, settings_of(fs),
                                  getattr(fs, "_listing_secrets", ()))
        if failure is err:
            raise
        raise failure from None


def s3_error_code(err: BaseException) -> str | None:
    """The S3 error code behind ``err`` (``NoSuchUpload``...), or None."""
    while err is not None:
        code = _error_code(err)
        if code is not None:
            return code
        err = err.__cause__ or err.__context__  # type: ignore[assignment]
    return None
