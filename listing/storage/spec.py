"""StorageSpec: how to build a filesystem, as plain picklable metadata."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

import fsspec

from listing.errors import StorageConfigError
from listing.options import storage_options
from listing.redact import redact
from listing.storage import client
from listing.storage.settings import SETTING_NAMES, StorageSettings


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
        """The filesystem for these options (:func:`listing.storage.client.filesystem`:
        S3 filesystems cached per process and options, with the settings attached).
        Raises :class:`StorageConfigError` for an option the client refuses, before any
        request."""
        if self.filesystem_factory is not None:
            return client.given_filesystem(self.filesystem_factory)
        settings, fs_options = self.resolve()
        return client.filesystem(self.protocol, self.options, settings, fs_options)

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
        return self.protocol in client.S3_PROTOCOLS

    @property
    def is_local(self) -> bool:
        """Files of this machine's file system (written with the OS's own calls)."""
        return self.protocol in client.LOCAL_PROTOCOLS


def version_key(spec: StorageSpec, path: str, size: int, etag: str | None,
                last_modified: dt.datetime | None) -> tuple[str, ...] | None:
    """What identifies one version of the file at ``path`` on the store ``spec`` names, as
    its listing gave it: the store (protocol and options), the path, and the ETag, else
    the size and modification time; None when the listing gave neither (such a file has
    no version a per-process cache may key)."""
    if etag is not None:
        version = "etag:" + etag
    elif last_modified is not None:
        version = f"size:{size}:mtime:{last_modified.isoformat()}"
    else:
        return None
    return (spec.protocol, json.dumps(spec.options, sort_keys=True, default=str), path,
            version)
