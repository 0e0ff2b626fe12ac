"""Inferred schemas kept in this process, so a session's queries of one table read its
sampled file once.

An entry is keyed by the store (protocol and options), the file's path, what identifies
its version (its ETag, else its size and modification time, as the listing gave them),
the format and its options. A rewritten file has another version, so it is read again; a
file whose listing gives neither an ETag nor a time is never kept. Bounded: the oldest
entries go first.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable

from listing.formats.base import FileFormat, Inferred
from listing.storage.lister import ObjectMeta
from listing.storage.spec import StorageSpec, version_key

#: entries the process keeps at most (a schema each: small)
MAX_SCHEMAS = 256


def _key(spec: StorageSpec, meta: ObjectMeta, fmt: FileFormat) -> tuple[str, ...] | None:
    version = version_key(spec, meta.path, meta.size, meta.etag, meta.last_modified)
    if version is None:
        return None
    return (*version, f"{type(fmt).__module__}.{type(fmt).__qualname__}:{fmt.name}",
            json.dumps(fmt.options, sort_keys=True, default=str))


class SchemaCache:
    """Inferred schemas by file version (see the module doc); ``hits`` counts answers."""

    def __init__(self, max_entries: int = MAX_SCHEMAS) -> None:
        self.max_entries = max_entries
        self.hits = 0
        self._entries: OrderedDict[tuple[str, ...], Inferred] = OrderedDict()
        self._lock = threading.Lock()

    def inferred(self, spec: StorageSpec, meta: ObjectMeta, fmt: FileFormat,
                 infer: Callable[[], Inferred]) -> tuple[Inferred, bool]:
        """The schema of the file ``meta`` lists: kept, or ``infer()``'s (then kept);
        and whether it was kept already."""
        key = _key(spec, meta, fmt)
        if key is not None:
            with self._lock:
                found = self._entries.get(key)
                if found is not None:
                    self._entries.move_to_end(key)
                    self.hits += 1
                    return found, True
        inferred = infer()
        if key is not None:
            with self._lock:
                self._entries[key] = inferred
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
        return inferred, False

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


#: the process's cache, used by tables opened with ``cache_schema=True`` (the Spark source)
SCHEMAS = SchemaCache()


def cached(spec: StorageSpec, meta: ObjectMeta, fmt: FileFormat,
           infer: Callable[[], Inferred]) -> tuple[Inferred, bool]:
    """:meth:`SchemaCache.inferred` of :data:`SCHEMAS`."""
    return SCHEMAS.inferred(spec, meta, fmt, infer)

