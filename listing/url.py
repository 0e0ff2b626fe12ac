"""TableUrl: where a table lives: protocol, root prefix and an optional glob."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from listing.errors import ListingError
from listing.options import compile_glob
from listing.options.registry import GLOB_WILDCARDS
from listing.redact import redact_url

#: protocols fsspec reads files from but cannot list a table under
NOT_LISTABLE = frozenset({"http", "https"})
#: Azure's own URL form (Hadoop's ABFS driver, Spark, Databricks, every Azure guide):
#: ``abfs[s]://container@account.dfs.core.windows.net/path``. The part before ``@`` is the
#: container (3-63 lower-case letters, digits, ``-``), no credential; the host names the
#: storage account (3-24 lower-case letters and digits) and its cloud's endpoint suffix.
AZURE_PROTOCOLS = frozenset({"abfs", "abfss"})
_AZURE_AUTHORITY = re.compile(
    r"(?P<container>[a-z0-9][a-z0-9-]{1,62})@(?P<account>[a-z0-9]{3,24})"
    r"\.(?:dfs|blob)\.(?P<suffix>core\.[a-z0-9.-]+[a-z0-9])")
#: the public cloud's endpoint suffix, adlfs's default (other clouds need ``account_host``)
_AZURE_PUBLIC = "core.windows.net"


def is_glob(url: str) -> bool:
    """Whether ``url`` holds a wildcard (``*``, ``?``, ``[``, ``{``), as Hadoop reads one
    (:data:`~listing.options.registry.GLOB_WILDCARDS`, which the JVM reads too)."""
    return any(c in url for c in GLOB_WILDCARDS)


@dataclass(frozen=True)
class TableUrl:
    """A parsed table location (DataFusion's ``ListingTableUrl``).

    ``root`` is the fsspec path without protocol and without trailing slash
    (``bucket/events``, ``/data/events``); ``glob`` restricts files below it: the URL as
    given, and ``pattern`` the same glob relative to ``root`` (``date=2026-03-1*``), one
    Hadoop glob a path segment, as Spark reads a glob path: a key matches when its first
    segments below the root match them, so a glob that matches a directory takes all of it.
    ``folders``: the paths below ``root`` the table was given as (Spark's several paths
    under ``basePath``, each a folder or a file, as spelled on disk); only keys at or below
    one of them are read, so ``hour=07/`` never reads its sibling ``hour=7/``.
    """

    protocol: str
    root: str
    glob: str | None = None
    pattern: str | None = None
    folders: tuple[str, ...] | None = None
    #: storage options the URL itself names (the Azure account of ``container@account…``)
    url_options: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, url: str, base: str | None = None) -> TableUrl:
        """``base``: the table root when ``url`` is a glob below it (Spark's ``basePath``);
        without it the root is the glob's directory part before its first wildcard."""
        if not isinstance(url, str) or not url.strip():
            raise ListingError(f"table URL must be a non-empty string, got {url!r}")
        text = url.strip()
        if base is not None:
            return cls._below_base(text, base)
        if text.lower().startswith("file:") and not text[5:].startswith("//"):
            text = "file://" + text[5:]  # Hadoop's file:/x, as Spark's catalog writes paths
        if "://" in text and "@" in text.split("://", 1)[1].split("/", 1)[0]:
            return cls._azure(text)
        glob, pattern = None, None
        cut = min((text.find(c) for c in GLOB_WILDCARDS if c in text), default=-1)
        if cut >= 0:
            base = text[: text.rfind("/", 0, cut) + 1]
            glob, text = text, base
            shown = redact_url(glob)
            if glob.endswith("/"):
                raise ListingError(
                    f"table URL glob {shown!r} ends in '/': it is matched against file URLs, "
                    "so it can never match one; drop the '/' or end it with '/*'")
            pattern = glob[len(base):]
            for segment in pattern.split("/"):
                compile_glob(segment, "path (table URL glob)", file_name=True)
        if "://" not in text:
            if ":" in text.split("/")[0] and len(text.split("/")[0]) > 2:
                raise ListingError(f"malformed table URL {url!r}: expected scheme://bucket/prefix")
            path = os.path.abspath(os.path.expanduser(text))
            return cls("file", path.rstrip("/") or "/", _abs_glob(glob), pattern)
        protocol, _, rest = text.partition("://")
        protocol = {"s3a": "s3", "local": "file", "abfss": "abfs"}.get(  # abfss: TLS, as adlfs
            protocol.lower(), protocol.lower())
        if protocol in NOT_LISTABLE:
            raise ListingError(
                f"table URL {redact_url(url)!r}: {protocol}:// cannot be listed (a web server "
                "has no LIST), so it cannot hold a table; use the store's own URL (s3://, "
                "gs://, abfs://, …) or a local path")
        if protocol == "file":
            return cls("file", os.path.abspath(rest).rstrip("/") or "/", _abs_glob(glob),
                       pattern)
        root = rest.strip("/")
        if protocol == "memory":
            root = "/" + root
        elif not root or rest.startswith("/"):
            raise ListingError(f"malformed table URL {url!r}: no bucket after {protocol}://")
        return cls(protocol, root, glob, pattern)

    @classmethod
    def _azure(cls, text: str) -> TableUrl:
        """``abfs[s]://container@account.dfs.core.windows.net/path``: root ``container/path``
        (adlfs's paths), the account (and, outside the public cloud, its blob host) as
        :attr:`url_options`. Any other ``…@`` before the first ``/`` is refused: a
        ``user:password@`` (or token) in a URL would reach logs and plans."""
        protocol, _, rest = text.partition("://")
        authority, _, path = rest.partition("/")
        found = _AZURE_AUTHORITY.fullmatch(authority)
        if protocol.lower() not in AZURE_PROTOCOLS or found is None:
            azure = (" (an Azure URL is abfs[s]://container@account.dfs.core.windows.net/path:"
                     " lower-case container and account names)"
                     if protocol.lower() in AZURE_PROTOCOLS and ":" not in authority else "")
            raise ListingError(f"table URL {redact_url(text)!r} carries credentials; pass "
                               "them as storage options (key/secret/token), never in a URL"
                               + azure)
        table = cls.parse(f"{protocol}://{found['container']}/{path}")
        options = [("account_name", found["account"])]
        if found["suffix"] != _AZURE_PUBLIC:
            options.append(("account_host", f"{found['account']}.blob.{found['suffix']}"))
        return dataclasses.replace(table, url_options=tuple(options))

    def storage_options(self, given: Mapping[str, Any] | None) -> dict[str, Any]:
        """``given`` with the options the URL names (:attr:`url_options`); the same option
        given otherwise is an error naming both, never a silent choice."""
        options = dict(given or {})
        for name, value in self.url_options:
            if options.get(name, value) != value:
                raise ListingError(
                    f"table URL {redact_url(self.to_url(self.root))!r} names {name} "
                    f"{value!r} but storage option {name} is {options[name]!r}; give one")
            options[name] = value
        return options

    @classmethod
    def _below_base(cls, text: str, base: str) -> TableUrl:
        root = cls.parse(base)
        if root.glob is not None:
            raise ListingError(f"basePath {redact_url(base)!r} holds a glob: it must be the "
                               "table's root directory")
        below = cls.parse(text)
        if below.glob is None or below.protocol != root.protocol:
            raise ListingError(f"path {redact_url(text)!r} is not a glob below basePath "
                               f"{redact_url(base)!r}")
        assert below.pattern is not None
        inner = f"{below.root}/{below.pattern}"
        if not inner.startswith(root.prefix):
            raise ListingError(f"path {redact_url(text)!r} is not below basePath "
                               f"{redact_url(base)!r}")
        return cls(root.protocol, root.root, below.glob, inner[len(root.prefix):])

    @property
    def prefix(self) -> str:
        """Key prefix of everything in the table, with a trailing slash."""
        return self.root if self.root.endswith("/") else self.root + "/"

    @property
    def bucket(self) -> str:
        return self.root.split("/", 1)[0]

    def to_url(self, path: str) -> str:
        """Full URL of an fsspec path inside this store."""
        if self.protocol == "file":
            return path
        if self.protocol == "memory":
            return "memory://" + path
        return f"{self.protocol}://{path}"

    @property
    def pattern_segments(self) -> tuple[str, ...] | None:
        """``pattern`` cut at each ``/`` (None: no glob). A ``/`` inside ``{…}`` is cut too,
        which Hadoop would expand first: such a glob is refused at parse."""
        return None if self.pattern is None else tuple(self.pattern.split("/"))

    @property
    def selects_keys(self) -> bool:
        """Whether :meth:`matches_glob` can refuse a key below the root (a glob or
        ``folders``)."""
        return self.glob is not None or self.folders is not None

    def matches_glob(self, path: str) -> bool:
        """Whether the key ``path`` (below the root) is one the glob reads: its first
        segments match the glob's, one by one (a ``*`` stays within its segment); with
        ``folders``, it is one of them or below one."""
        below = path[len(self.prefix):] if path.startswith(self.prefix) else None
        if self.folders is not None and (below is None or not any(
                below == f or below.startswith(f + "/") for f in self.folders)):
            return False
        segments = self.pattern_segments
        if segments is None:
            return True
        parts = below.split("/") if below is not None else []
        if len(parts) < len(segments):
            return False
        return all(compile_glob(g, "path (table URL glob)", file_name=True).match(p) is not None
                   for g, p in zip(segments, parts, strict=False))

    def __str__(self) -> str:
        return self.to_url(self.prefix)


def _abs_glob(glob: str | None) -> str | None:
    if glob is None:
        return None
    return os.path.abspath(os.path.expanduser(glob.removeprefix("file://")))
