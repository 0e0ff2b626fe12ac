"""A cache of listings, so an interactive session's scans of one table list it once.

Only listings a scan made anyway are kept (a flat listing of a prefix read to its last
page): filling the cache never costs a request. A later request for that prefix, or for
any key range or directory below it, is answered from the kept keys, so a pruned query
reuses what a wider one listed (DataFusion's list cache lists the whole table to fill
itself). Entries expire after the table's ``list_cache_ttl``; ``ListingTable.refresh()``
drops them sooner, and so does every commit, rollback or recovery of a
:mod:`listing.write` job run in this process (for the table's prefix). A write by another
process (a Spark job's commit runs in a planning worker, other writers elsewhere) is seen
only once the entry expires. The cache lives in this process: Spark's planning workers
start without it.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from listing.metrics import Counters
from listing.storage.lister import Lister, ObjectMeta, Page
from listing.storage.spec import StorageSpec

#: keys the whole process keeps at most; the oldest listings go first
MAX_CACHED_KEYS = 2_000_000


@dataclass(frozen=True)
class _Entry:
    at: float
    files: tuple[ObjectMeta, ...]


def _store_key(spec: StorageSpec) -> str:
    return spec.protocol + "\0" + json.dumps(spec.options, sort_keys=True, default=str)


class ListingCache:
    """Complete flat listings by (store, prefix), bounded by :data:`MAX_CACHED_KEYS`."""

    def __init__(self, max_keys: int = MAX_CACHED_KEYS) -> None:
        self.max_keys = max_keys
        self._entries: OrderedDict[tuple[str, str], _Entry] = OrderedDict()
        self._keys = 0
        self._lock = threading.Lock()

    def lookup(self, spec: StorageSpec, prefix: str, ttl: float) -> _Entry | None:
        """A fresh entry whose prefix covers ``prefix``, or None."""
        store, now = _store_key(spec), time.monotonic()
        with self._lock:
            for (s, p), entry in reversed(self._entries.items()):
                if s == store and prefix.startswith(p) and now - entry.at < ttl:
                    return entry
        return None

    def store(self, spec: StorageSpec, prefix: str, files: list[ObjectMeta]) -> None:
        with self._lock:
            old = self._entries.pop((_store_key(spec), prefix), None)
            self._keys -= len(old.files) if old else 0
            self._entries[(_store_key(spec), prefix)] = _Entry(time.monotonic(), tuple(files))
            self._keys += len(files)
            while self._keys > self.max_keys and self._entries:
                _, dropped = self._entries.popitem(last=False)
                self._keys -= len(dropped.files)

    def invalidate(self, spec: StorageSpec, prefix: str) -> None:
        """Drop every listing that overlaps ``prefix`` (covers it or lies below it)."""
        store = _store_key(spec)
        with self._lock:
            for key in [k for k in self._entries
                        if k[0] == store and (k[1].startswith(prefix) or prefix.startswith(k[1]))]:
                self._keys -= len(self._entries.pop(key).files)


#: the process's cache, shared by every table (invalidated by this process's commits)
CACHE = ListingCache()


def answer(entry: _Entry, prefix: str, delimiter: bool, start_after: str | None,
           stop_after: str | None) -> Page:
    """The one page a listing request would have returned, from cached keys."""
    files = [f for f in entry.files if f.path.startswith(prefix)
             and (start_after is None or f.path > start_after)
             and (stop_after is None or f.path <= stop_after)]
    if not delimiter:
        return Page(files, [])
    base = prefix[:prefix.rfind("/") + 1]  # a delimiter listing groups below the last "/"
    here, dirs = [], set()
    for f in files:
        rest = f.path[len(base):]
        if "/" in rest:
            dirs.add(base + rest.split("/", 1)[0] + "/")
        else:
            here.append(f)
    return Page(here, sorted(dirs))


class CachedLister(Lister):
    """A :class:`Lister` that answers from :data:`CACHE` when it can and keeps the complete
    flat listings it makes; ``list_cache_hits`` counts the requests the cache answered."""

    def __init__(self, spec: StorageSpec, counters: Counters | None = None,
                 progress: Callable[[int, int], None] | None = None, *, ttl: float,
                 cache: ListingCache = CACHE) -> None:
        super().__init__(spec, counters, progress)
        self.ttl, self.cache = ttl, cache
        self.counters.start("list_cache_hits")

    @property
    def splits_ranges(self) -> bool:
        """Never: the cache keeps (and answers from) whole flat listings only."""
        return False

    def pages(self, prefix: str, *, delimiter: bool, start_after: str | None = None,
              stop_after: str | None = None) -> Iterator[Page]:
        entry = self.cache.lookup(self.spec, prefix, self.ttl)
        if entry is not None:
            self.counters.add("list_cache_hits")
            yield answer(entry, prefix, delimiter, start_after, stop_after)
            return
        keep = not delimiter and start_after is None and stop_after is None
        listed: list[ObjectMeta] = []
        for page in super().pages(prefix, delimiter=delimiter, start_after=start_after,
                                  stop_after=stop_after):
            if keep:
                listed += page.files
            yield page
            if keep and not page.truncated:  # the last page: the listing is complete
                self.cache.store(self.spec, prefix, listed)
