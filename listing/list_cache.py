"""A cache of listings, so an interactive session's scans of one table list it once.

Only listings a scan made anyway are kept: filling the cache never costs a request. A flat
listing of a prefix read to its last page answers a later request for that prefix, or for
any key range or directory below it, so a pruned query reuses what a wider one listed
(DataFusion's list cache lists the whole table to fill itself). A flat listing of a key
range (``StartAfter`` a key, up to another: what a date range's listing sends) read to its
end is kept too, with its bounds, and answers any request whose keys all lie within them
(the same range again, a narrower one, a directory inside it). A directory listing (one
level, read to its last page) answers the same request again, and the first pages of a
flat listing that stopped early (the page an ``open()`` samples, the pages a planner read
before it changed course) answer the start of the same listing again, which goes on from
the last key kept. Entries expire after the
table's ``list_cache_ttl``; ``ListingTable.refresh()`` drops them sooner, and so does every
commit, rollback or recovery of a :mod:`listing.write` job run in this process (for the
table's prefix). A write by another process (a Spark job's commit runs in a planning
worker, other writers elsewhere) is seen only once the entry expires. The cache lives in
this process: a Spark planning worker starts without it and, reused (Spark's default),
keeps it from query to query.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from listing.metrics import Counters
from listing.storage.lister import PAGE_SIZE, Lister, ObjectMeta, Page
from listing.storage.spec import StorageSpec

#: keys the whole process keeps at most; the oldest listings go first
MAX_CACHED_KEYS = 2_000_000
#: directory listings kept at most
MAX_CACHED_PAGES = 4096
#: complete flat listings (of a prefix or a key range) kept at most
MAX_CACHED_LISTINGS = 4096


@dataclass(frozen=True)
class _Entry:
    """Listed keys, made at ``at``: a flat listing's keys in ``(start_after,
    stop_after]`` (None: unbounded), or a head's (its first keys)."""

    at: float
    files: tuple[ObjectMeta, ...]
    start_after: str | None = None
    stop_after: str | None = None


def covers(prefix: str, start_after: str | None, stop_after: str | None, want: str,
           want_after: str | None = None, want_stop: str | None = None) -> bool:
    """Whether every key a flat listing of ``want`` in ``(want_after, want_stop]`` can
    return is a key of a flat listing of ``prefix`` in ``(start_after, stop_after]``.
    A key below ``want`` is at least ``want``, so ``want > start_after`` puts all of them
    past the start; where ``want`` is not a prefix of ``stop_after``, all of them sort on
    one side of it (the side ``want`` is on)."""
    if not want.startswith(prefix):
        return False
    low = (start_after is None or want > start_after
           or (want_after is not None and want_after >= start_after))
    high = (stop_after is None or (want < stop_after and not stop_after.startswith(want))
            or (want_stop is not None and want_stop <= stop_after))
    return low and high


@dataclass(frozen=True)
class _PageEntry:
    """A directory listing's whole answer (every page, one level)."""

    at: float
    page: Page


def _store_key(spec: StorageSpec) -> str:
    return spec.protocol + "\0" + json.dumps(spec.options, sort_keys=True, default=str)


class ListingCache:
    """Flat listings by (store, prefix), complete or their first keys (a head), bounded
    together by :data:`MAX_CACHED_KEYS`; directory listings by (store, prefix)."""

    def __init__(self, max_keys: int = MAX_CACHED_KEYS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_keys = max_keys
        #: seconds, monotonic: an entry's age is measured from when its listing ended
        self.clock = clock
        # (store, prefix, start_after, stop_after) -> its complete flat listing
        self._entries: OrderedDict[tuple[str, str, str | None, str | None], _Entry] = (
            OrderedDict())
        self._keys = 0
        self._lock = threading.Lock()
        # (store, prefix) -> its directory listing (every page, one level)
        self._dirs: OrderedDict[tuple[str, str], _PageEntry] = OrderedDict()
        # (store, prefix) -> the first keys of its flat listing, which goes on after them
        self._heads: OrderedDict[tuple[str, str], _Entry] = OrderedDict()

    def lookup(self, spec: StorageSpec, prefix: str, ttl: float,
               start_after: str | None = None, stop_after: str | None = None
               ) -> _Entry | None:
        """A fresh complete flat listing holding every key a flat listing of ``prefix``
        in ``(start_after, stop_after]`` returns (:func:`covers`), or None."""
        store, now = _store_key(spec), self.clock()
        with self._lock:
            for (s, p, lo, hi), entry in reversed(self._entries.items()):
                if (s == store and now - entry.at < ttl
                        and covers(p, lo, hi, prefix, start_after, stop_after)):
                    return entry
        return None

    def store(self, spec: StorageSpec, prefix: str, files: list[ObjectMeta],
              start_after: str | None = None, stop_after: str | None = None) -> None:
        """Keep the complete flat listing of ``prefix`` in ``(start_after, stop_after]``."""
        key = (_store_key(spec), prefix, start_after, stop_after)
        with self._lock:
            old = self._entries.pop(key, None)
            self._keys -= len(old.files) if old else 0
            self._entries[key] = _Entry(self.clock(), tuple(files), start_after,
                                        stop_after)
            self._keys += len(files)
            if start_after is None and stop_after is None:
                self._drop_head(key[:2])  # the whole listing replaces its head
            while len(self._entries) > MAX_CACHED_LISTINGS:
                _, dropped = self._entries.popitem(last=False)
                self._keys -= len(dropped.files)
            self._evict()

    def head(self, spec: StorageSpec, prefix: str, ttl: float) -> tuple[ObjectMeta, ...]:
        """The first keys of the flat listing of exactly ``prefix`` an earlier request kept
        (more follow them), if fresh; else none."""
        with self._lock:
            entry = self._heads.get((_store_key(spec), prefix))
            if entry is None or self.clock() - entry.at >= ttl:
                return ()
            return entry.files

    def store_head(self, spec: StorageSpec, prefix: str, files: list[ObjectMeta]) -> None:
        """Keep the first keys of a flat listing of ``prefix`` that stopped before its end
        (a longer head replaces a shorter one, never the other way)."""
        key = (_store_key(spec), prefix)
        with self._lock:
            old = self._heads.get(key)
            if old is not None and len(old.files) >= len(files):
                return
            self._drop_head(key)
            self._heads[key] = _Entry(self.clock(), tuple(files))
            self._keys += len(files)
            self._evict()

    def _drop_head(self, key: tuple[str, str]) -> None:
        old = self._heads.pop(key, None)
        self._keys -= len(old.files) if old else 0

    def _evict(self) -> None:
        """The oldest listings go first, heads after whole listings (held under the lock)."""
        while self._keys > self.max_keys and self._entries:
            self._keys -= len(self._entries.popitem(last=False)[1].files)
        while self._keys > self.max_keys and self._heads:
            self._keys -= len(self._heads.popitem(last=False)[1].files)

    def directory(self, spec: StorageSpec, prefix: str, ttl: float) -> Page | None:
        """The kept directory listing of exactly ``prefix`` (one page of it all), if fresh."""
        return self._page(self._dirs, spec, prefix, ttl)

    def store_directory(self, spec: StorageSpec, prefix: str, page: Page) -> None:
        self._keep_page(self._dirs, spec, prefix, page)

    def first_page(self, spec: StorageSpec, prefix: str, ttl: float) -> Page | None:
        """The first page a flat listing of ``prefix`` returns, if known and fresh: from a
        complete listing that covers it or from a kept head, cut to a page as the store
        cuts it."""
        entry = self.lookup(spec, prefix, ttl)
        files = (answer(entry, prefix, False, None, None).files if entry is not None
                 else list(self.head(spec, prefix, ttl)))
        if entry is None and not files:
            return None
        more = entry is None or len(files) > PAGE_SIZE
        return Page(files[:PAGE_SIZE], [], more)

    def _page(self, kept: OrderedDict[tuple[str, str], _PageEntry], spec: StorageSpec,
              prefix: str, ttl: float) -> Page | None:
        with self._lock:
            entry = kept.get((_store_key(spec), prefix))
            if entry is None or self.clock() - entry.at >= ttl:
                return None
            return entry.page

    def _keep_page(self, kept: OrderedDict[tuple[str, str], _PageEntry], spec: StorageSpec,
                   prefix: str, page: Page) -> None:
        with self._lock:
            key = (_store_key(spec), prefix)
            kept.pop(key, None)
            kept[key] = _PageEntry(self.clock(), page)
            while len(kept) > MAX_CACHED_PAGES:
                kept.popitem(last=False)

    def invalidate(self, spec: StorageSpec, prefix: str) -> None:
        """Drop every listing that overlaps ``prefix`` (covers it or lies below it)."""
        store = _store_key(spec)

        def overlaps(k: tuple[str, str]) -> bool:
            return k[0] == store and (k[1].startswith(prefix) or prefix.startswith(k[1]))

        with self._lock:
            for flat in [k for k in self._entries if overlaps(k[:2])]:
                self._keys -= len(self._entries.pop(flat).files)
            for key in [k for k in self._dirs if overlaps(k)]:
                del self._dirs[key]
            for key in [k for k in self._heads if overlaps(k)]:
                self._drop_head(key)


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
        entry = self.cache.lookup(self.spec, prefix, self.ttl, start_after, stop_after)
        if entry is not None:
            self.counters.add("list_cache_hits")
            yield answer(entry, prefix, delimiter, start_after, stop_after)
            return
        whole = start_after is None and stop_after is None
        kept = self.cache.directory(self.spec, prefix, self.ttl) if delimiter and whole else None
        if kept is not None:
            self.counters.add("list_cache_hits")
            # a page of its own: the reader takes its runs (see Page.take_runs)
            yield Page(kept.files, kept.dirs, kept.truncated)
            return
        head = self.cache.head(self.spec, prefix, self.ttl) if whole and not delimiter else ()
        if head:  # the start of this listing, kept: served in pages, then listed on
            self.counters.add("list_cache_hits")
            for start in range(0, len(head), PAGE_SIZE):
                yield Page(list(head[start:start + PAGE_SIZE]), [], True)
            start_after = head[-1].path
        listed: list[ObjectMeta] = list(head)
        dirs: list[str] = []
        complete = False
        # a flat listing is kept with its bounds (a head's continuation: as a whole one)
        bounds = (None, None) if head else (start_after, stop_after)
        kept_here = whole or not delimiter
        try:
            for page in super().pages(prefix, delimiter=delimiter, start_after=start_after,
                                      stop_after=stop_after):
                if kept_here:
                    listed += page.files
                    dirs += page.dirs
                complete = not page.truncated
                if kept_here and complete:  # the last page: the listing is complete
                    if delimiter:
                        self.cache.store_directory(self.spec, prefix, Page(listed, dirs))
                    else:
                        self.cache.store(self.spec, prefix, listed, *bounds)
                yield page
        finally:  # stopped before its end (the planner changed course): its start is kept
            if whole and not delimiter and not complete and len(listed) > len(head):
                self.cache.store_head(self.spec, prefix, listed)

    def first_page(self, prefix: str) -> Page:
        """The first page of a flat listing of ``prefix`` (what ``open()`` samples): kept,
        or listed (then kept as the start of that listing)."""
        kept = self.cache.first_page(self.spec, prefix, self.ttl)
        if kept is not None:
            self.counters.add("list_cache_hits")
            return kept
        pages = super().pages(prefix, delimiter=False)
        try:
            page = next(pages, Page([], []))
        finally:
            close = getattr(pages, "close", None)
            if close is not None:
                close()  # no further page
        if page.truncated:
            self.cache.store_head(self.spec, prefix, page.files)
        elif page.files:
            self.cache.store(self.spec, prefix, page.files)
        return page
