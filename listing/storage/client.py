"""Storage clients: fsspec filesystems built from ``(protocol, options)``, and the S3
client's adjustments.

S3 filesystems are built and cached here, once per process and set of options, with
s3fs's own retry loop switched off (botocore's retries are the only ones) and our
settings and secrets attached. Their botocore client is adjusted once, on its first
request: the retry backoff capped at ``retry_max_backoff``, timestamps parsed by the
standard library, LIST pages parsed in one pass (:mod:`listing.storage.s3_pages`). These
reach into private attributes of s3fs and botocore; nothing outside this module does.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import email.utils
import importlib
import os
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import fsspec

from listing.errors import StorageConfigError
from listing.redact import scrub, secret_values
from listing.storage.errors import raise_as, storage_failure
from listing.storage.s3_pages import listing_columns, use_fast_list_pages
from listing.storage.settings import StorageSettings

#: protocols served by Amazon S3's API (s3fs)
S3_PROTOCOLS = ("s3", "s3a")
#: protocols of this machine's own files
LOCAL_PROTOCOLS = ("file", "local")

_FS_CACHE: dict[str, Any] = {}  # S3 filesystems by process and options
_FS_LOCK = threading.Lock()


def filesystem(protocol: str, options: dict[str, Any], settings: StorageSettings,
               fs_options: dict[str, Any]) -> fsspec.AbstractFileSystem:
    """The filesystem for ``protocol``, built from ``fs_options`` (``options`` as fsspec
    takes them, ``settings`` the ones we interpret). Raises :class:`StorageConfigError`
    for an option the client refuses, before any request.

    S3 filesystems are cached here, once per process and set of ``options`` (ours
    included), with ``settings`` attached: s3fs instances are cached by fsspec on their
    constructor arguments, and ``retry_max_backoff`` is not one of them. Other protocols
    use fsspec's own instance cache.
    """
    cls = _filesystem_class(protocol)
    key = fsspec.utils.tokenize(protocol, os.getpid(), options) \
        if protocol in S3_PROTOCOLS else None
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
        raise StorageConfigError(f"storage options for {protocol}:// not accepted: "
                                 f"{scrub(str(err), options)}") from None
    except (ValueError, KeyError) as err:
        raise StorageConfigError(f"storage options for {protocol}:// are invalid: "
                                 f"{scrub(str(err), options)}") from None
    if key is None:
        return fs
    fs.retries = 1  # s3fs's own loop (5 by default, a class attribute): off
    fs._listing_settings = settings
    fs._listing_secrets = secret_values(options)
    with _FS_LOCK:
        return _FS_CACHE.setdefault(key, fs)


def settings_of(fs: Any) -> StorageSettings:
    """The settings ``fs`` was built with (defaults for a filesystem built elsewhere)."""
    settings = getattr(fs, "_listing_settings", None)
    return settings if isinstance(settings, StorageSettings) else StorageSettings()


def secrets_of(fs: Any) -> tuple[str, ...]:
    """The secret option values ``fs`` was built with, to scrub from its errors."""
    return tuple(getattr(fs, "_listing_secrets", ()))


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


def given_filesystem(factory: Any) -> fsspec.AbstractFileSystem:
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



# --- the S3 client ------------------------------------------------------------------------

def is_s3(fs: Any) -> bool:
    """Whether ``fs`` is an s3fs filesystem (its requests go through :func:`s3_call`)."""
    protocol = fs.protocol if isinstance(fs.protocol, tuple | list) else (fs.protocol,)
    return "s3" in protocol and hasattr(fs, "_call_s3")


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


def fast_timestamp(value: Any) -> Any:
    """S3's times parsed by the standard library: ISO 8601 in listings
    (``2026-03-01T10:00:00.000Z``) and HTTP dates in headers (``Last-Modified: Sun, 01 Mar
    2026 10:00:00 GMT``, in every GET's response). botocore's default goes through dateutil,
    a large part of the client's CPU for a LIST page and a visible part of a small file's GET
    (``python -m bench.client_cpu`` measures both parsers). Anything else goes to
    botocore's own parser."""
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
    """Have the client's response parsers use :func:`fast_timestamp` (the parser factory
    belongs to this filesystem's own botocore session)."""
    factory: Any = getattr(getattr(client, "_endpoint", None), "_response_parser_factory", None)
    defaults = getattr(factory, "_defaults", None)
    if defaults is not None and defaults.get("timestamp_parser") is not fast_timestamp:
        factory.set_parser_defaults(timestamp_parser=fast_timestamp)


#: the botocore clients adjusted already (each on its first request)
_ADJUSTED: weakref.WeakSet[Any] = weakref.WeakSet()


def _adjust(client: Any, settings: StorageSettings) -> None:
    """Adjust a new botocore client once: capped backoff, fast timestamps and LIST pages."""
    _cap_backoff(client, settings.retry_max_backoff)
    _use_fast_timestamps(client)
    use_fast_list_pages(client)
    _ADJUSTED.add(client)


async def acall(fs: Any, method: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """One S3 API call on the filesystem's event loop (botocore's retries)."""
    client = await fs.set_session()
    if client not in _ADJUSTED:
        _adjust(client, settings_of(fs))
    with listing_columns():  # our LIST pages as columns (listing.storage.s3_pages)
        result: dict[str, Any] = await fs._call_s3(method, **kwargs)
    return result


def sync(fs: Any, coroutine: Callable[..., Any], *args: Any) -> Any:
    """Run ``coroutine(*args)`` on the filesystem's event loop, from a caller's thread."""
    return importlib.import_module("fsspec.asyn").sync(fs.loop, coroutine, *args)


def s3_call(fs: Any, method: str, **kwargs: Any) -> dict[str, Any]:
    """One S3 API call with botocore's retries (s3fs's loop is off, see ``filesystem``)."""
    result: dict[str, Any] = sync(fs, acall, fs, method, kwargs)
    return result


def s3_request(fs: Any, operation: str, url: str, method: str,
               **kwargs: Any) -> dict[str, Any]:
    """One S3 request (botocore's retries) and its response; failures leave as
    :class:`ListingError` naming ``operation`` and ``url``."""
    try:
        return s3_call(fs, method, **kwargs)
    except Exception as err:  # noqa: BLE001 - classified, never swallowed
        raise_as(storage_failure(operation, url, err, settings_of(fs), secrets_of(fs)), err)


def s3_request_future(fs: Any, operation: str, url: str, method: str,
                      **kwargs: Any) -> Future[dict[str, Any]]:
    """:func:`s3_request` started on the filesystem's event loop, not waited for: the
    caller's thread goes on while it runs (botocore's retries); the future holds the
    response, or the failure as :func:`s3_request` raises it."""
    async def call() -> dict[str, Any]:
        try:
            return await acall(fs, method, kwargs)
        except Exception as err:  # noqa: BLE001 - classified, never swallowed
            raise_as(storage_failure(operation, url, err, settings_of(fs), secrets_of(fs)), err)
    return asyncio.run_coroutine_threadsafe(call(), fs.loop)
