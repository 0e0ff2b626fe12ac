"""What a storage failure is, and the one way it leaves the storage layer.

Every failure met while listing, reading or writing is classified into a
:class:`~listing.errors.ListingError` naming the URL or file, the operation and the cause:
a missing bucket is :class:`TableNotFoundError`, a request the client refuses
:class:`StorageConfigError`, whatever the store or the network did (after the client's
retries) :class:`StorageError`; while reading, content that does not decode is
:class:`CorruptFileError`. Errors of any other kind (a bug) pass unchanged.
:func:`raise_as` raises the classification in place of the error (the only spelling of
that idiom); messages quote the client's text with secrets scrubbed.
"""

from __future__ import annotations

import asyncio
from typing import Any, NoReturn

import pyarrow as pa

from listing.errors import (
    CorruptFileError,
    FileChangedError,
    ListingError,
    MissingFileError,
    StorageConfigError,
    StorageError,
    TableNotFoundError,
)
from listing.redact import scrub
from listing.storage.settings import StorageSettings


def raise_as(failure: BaseException, err: BaseException) -> NoReturn:
    """Raise ``failure``, the classification of ``err`` (which it replaces: its chain may
    quote secrets and says nothing the message does not), or ``err`` itself when it is
    its own classification (a :class:`ListingError` already, or a bug)."""
    if failure is err:
        raise err
    raise failure from None


class BodyCut(Exception):
    """A response body ended early, on every attempt the budget allowed."""

    def __init__(self, error: BaseException, attempts: int) -> None:
        super().__init__(str(error))
        self.error = error
        self.attempts = attempts


def retry_attempts(response: dict[str, Any]) -> int:
    """The retries botocore made for ``response`` (a failed request's error response too)."""
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


def error_code(err: BaseException) -> str | None:
    """The S3 error code of the ClientError behind ``err`` (``NoSuchKey``...), or None."""
    client_error = _client_error(err)
    if client_error is None:
        return None
    return str(client_error.response["Error"].get("Code") or "") or None


def s3_error_code(err: BaseException) -> str | None:
    """The S3 error code behind ``err`` or any error it was raised from (a
    :class:`ListingError` made by :func:`raise_as` included: ``NoSuchUpload``...), or None."""
    while err is not None:
        code = error_code(err)
        if code is not None:
            return code
        err = err.__cause__ or err.__context__  # type: ignore[assignment]
    return None


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
    if isinstance(err, BodyCut):
        err = err.error
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__


def _attempts_text(err: BaseException, settings: StorageSettings) -> str:
    client_error = _client_error(err)
    attempts = None
    if isinstance(err, BodyCut):
        attempts = err.attempts
    elif client_error is not None:
        attempts = retry_attempts(client_error.response) + 1
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
    code = error_code(err)
    cause = scrub(_cause(err), secrets)
    if code == "NoSuchBucket":
        bucket = url.split("://", 1)[-1].split("/", 1)[0]
        return TableNotFoundError(f"bucket {bucket!r} does not exist ({operation} {url}): "
                                  f"{cause}")
    if type(err).__name__ in _CONFIG_ERRORS:
        return StorageConfigError(f"{operation} {url} failed: the client refused the request "
                                  f"or its configuration: {cause}")
    if code is not None or isinstance(err, BodyCut) or _from_store(err):
        return StorageError(f"{operation} {url} failed{_attempts_text(err, settings)}: "
                            f"{cause}")
    return err


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
    if is_changed_error(err) or error_code(err) == "PreconditionFailed":
        return FileChangedError(f"{path}: changed since listing ({scrub(str(err))})")
    if isinstance(err, FileNotFoundError):
        return MissingFileError(f"{path}: file vanished after listing ({err})")
    # pyarrow reports undecodable bytes as ArrowInvalid/ValueError/EOFError, or as an
    # OSError without an errno ("Truncated compressed stream"); stores and the OS set one
    if _from_store(err) or error_code(err) is not None:
        return StorageError(f"reading {path} failed (a storage error, not bad content; "
                            f"after the client's retries): {scrub(_cause(err))}")
    if isinstance(err, pa.ArrowException | ValueError | EOFError | OSError):
        return CorruptFileError(f"{path}: {what}: {err}")
    return err


