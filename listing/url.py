"""TableUrl: where a table lives: protocol, root prefix and an optional glob."""

from __future__ import annotations

import os
from dataclasses import dataclass

from listing.errors import ListingError
from listing.options import compile_glob
from listing.redact import redact_url

_GLOB_CHARS = "*?["
#: protocols fsspec reads files from but cannot list a table under
NOT_LISTABLE = frozenset({"http", "https"})


@dataclass(frozen=True)
class TableUrl:
    """A parsed table location (DataFusion's ``ListingTableUrl``).

    ``root`` is the fsspec path without protocol and without trailing slash
    (``bucket/events``, ``/data/events``); ``glob`` restricts files below it.
    """

    protocol: str
    root: str
    glob: str | None = None

    @classmethod
    def parse(cls, url: str) -> TableUrl:
        if not isinstance(url, str) or not url.strip():
            raise ListingError(f"table URL must be a non-empty string, got {url!r}")
        text = url.strip()
        if text.lower().startswith("file:") and not text[5:].startswith("//"):
            text = "file://" + text[5:]  # Hadoop's file:/x, as Spark's catalog writes paths
        if "://" in text and "@" in text.split("://", 1)[1].split("/", 1)[0]:
            raise ListingError(f"table URL {redact_url(text)!r} carries credentials; pass "
                               "them as storage options (key/secret/token), never in a URL")
        glob = None
        cut = min((text.find(c) for c in _GLOB_CHARS if c in text), default=-1)
        if cut >= 0:
            base = text[: text.rfind("/", 0, cut) + 1]
            glob, text = text, base
            shown = redact_url(glob)
            if glob.endswith("/"):
                raise ListingError(
                    f"table URL glob {shown!r} ends in '/': it is matched against file URLs, "
                    "so it can never match one; drop the '/' or end it with '/*'")
            compile_glob(glob, "path (table URL glob)")
        if "://" not in text:
            if ":" in text.split("/")[0] and len(text.split("/")[0]) > 2:
                raise ListingError(f"malformed table URL {url!r}: expected scheme://bucket/prefix")
            path = os.path.abspath(os.path.expanduser(text))
            return cls("file", path.rstrip("/") or "/", _abs_glob(glob))
        protocol, _, rest = text.partition("://")
        protocol = {"s3a": "s3", "local": "file"}.get(protocol.lower(), protocol.lower())
        if protocol in NOT_LISTABLE:
            raise ListingError(
                f"table URL {redact_url(url)!r}: {protocol}:// cannot be listed (a web server "
                "has no LIST), so it cannot hold a table; use the store's own URL (s3://, "
                "gs://, abfs://, …) or a local path")
        if protocol == "file":
            return cls("file", os.path.abspath(rest).rstrip("/") or "/", _abs_glob(glob))
        root = rest.strip("/")
        if protocol == "memory":
            root = "/" + root
        elif not root or rest.startswith("/"):
            raise ListingError(f"malformed table URL {url!r}: no bucket after {protocol}://")
        return cls(protocol, root, glob)

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

    def matches_glob(self, path: str) -> bool:
        return self.glob is None or compile_glob(self.glob).match(self.to_url(path)) is not None

    def __str__(self) -> str:
        return self.to_url(self.prefix)


def _abs_glob(glob: str | None) -> str | None:
    if glob is None:
        return None
    return os.path.abspath(os.path.expanduser(glob.removeprefix("file://")))
