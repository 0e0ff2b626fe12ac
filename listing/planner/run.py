"""Running a listing plan: send the requests, decode and filter every listed key.

With ``max_concurrent_requests`` above 1, requests are sent ahead of need from a few
threads (:class:`Fetcher`), while this run still reads every page itself, in key order,
exactly as a sequential run would: the files, their order, the metrics and any error are
the same, and so are the requests, except for the split of a long flat listing below.

- The prefixes of an enumeration, and the directories a walk keeps from each page it
  lists, are known before any of them is read: they are sent at once, in the order the
  run will read them, at most ``2 × max_concurrent_requests`` listings ahead.
- A flat listing that runs on (past :data:`SEQUENTIAL_PAGES` pages, the keys sit in
  several directories of more than :data:`PAGES_PER_RANGE` + 1 keys each, and the rest is
  not known to be short) may be split: one delimiter page, sent while the next flat page
  is fetched, names the directories after the last key listed; after that next page,
  the rest is listed as up to ``max_concurrent_requests`` key ranges (``StartAfter`` a
  directory, up to the next range's start) at once, when it is long enough. The ranges
  cover the rest without gap or overlap, so the keys and their order are those of the
  flat listing; the adaptive run still sees them in pages of 1000 and decides as it
  would have. The cost: the delimiter page (also when the rest proves too short to
  split: its answer then costs no time, as it came beside a flat page), and at most one
  partial page per range.

s3fs runs every request on its own event-loop thread (our threads only wait), and the
:class:`~listing.storage.lister.Lister` counts under a lock, so the counts stay exact.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterator, Sequence
from enum import Enum
from typing import Any, NamedTuple

import pyarrow as pa

from listing.errors import PartitionLayoutError
from listing.expressions import Expr, is_true, knowns, may_be_true
from listing.hive import COPYING_SUFFIX, HIDDEN_PREFIXES, HiveLayout, is_hidden
from listing.metrics import Counters
from listing.planner.choose import Chooser
from listing.planner.file_filter import FileFilter
from listing.planner.nodes import Enumerate, Flat, Node, Walk, describe
from listing.planner.profile import ProfileBuilder, TableProfile
from listing.storage.lister import PAGE_SIZE, Lister, ObjectMeta, Page

#: what a run counts of the keys it lists (its :attr:`PlanRun.metrics`)
LISTED = ("files_listed", "files_matched", "partitions_pruned", "files_skipped_hidden",
          "files_skipped_other")
#: pages a flat listing reads before it sends the delimiter page that may split the rest
#: into key ranges (a table of one page costs exactly its flat listing; two pages, that
#: page more, sent beside the second: no time, on a store that serves requests at once)
SEQUENTIAL_PAGES = 1
#: least estimated pages per key range: fewer ranges than that are not worth their
#: partial last pages
PAGES_PER_RANGE = 2


class ListedFile(NamedTuple):
    """A key the scan keeps, with its partition values (shared by the files of one
    directory: read them, never change them)."""

    meta: ObjectMeta
    values: dict[str, Any]


class Request(NamedTuple):
    """One listing: every page of ``prefix`` within the key bounds (``first_page``: its
    first page only)."""

    prefix: str
    delimiter: bool
    start_after: str | None = None
    stop_after: str | None = None
    first_page: bool = False


class _Job:
    def __init__(self, request: Request, wanted: bool) -> None:
        self.request = request
        self.wanted = wanted  # the run waits for it: it goes first, whatever the window
        self.started = False
        self.done = threading.Event()
        self.pages: list[Page] = []
        self.error: Exception | None = None


class Fetcher:
    """Sends listings from ``workers`` threads ahead of need, and hands their pages back
    in the order the run asks for them.

    ``hint`` announces the listings the run will read next, in order; ``take`` waits for
    one (sending it first when it was not hinted). At most ``workers`` requests are in
    flight and at most ``window`` hinted listings are listed before the run asks for them.
    A listing that fails raises its error when the run takes it, so errors come in the
    order a sequential run meets them. ``close`` drops what was not started and waits for
    the requests in flight. (A listing is handed over whole: handing its pages over as
    they come made the run slower, its decisions then competing for the interpreter
    with the threads that send and parse requests.)
    """

    def __init__(self, lister: Lister, workers: int, window: int | None = None) -> None:
        self.lister = lister
        self.workers = workers
        self.window = window or 2 * workers
        self._cv = threading.Condition()
        self._todo: deque[_Job] = deque()  # not started, in the order they are needed
        self._hinted: dict[Request, deque[_Job]] = {}
        self._ahead = 0  # started, not yet asked for
        self._threads: list[threading.Thread] = []
        self._closed = False

    def hint(self, requests: Sequence[Request]) -> None:
        """Listings the run reads next, in this order: before anything hinted earlier
        (which belongs to later parts of the plan)."""
        if not requests:
            return
        jobs = [_Job(r, False) for r in requests]
        with self._cv:
            for job in jobs:
                self._hinted.setdefault(job.request, deque()).append(job)
            self._todo.extendleft(reversed(jobs))
            self._start()
            self._cv.notify_all()

    def take(self, request: Request) -> list[Page]:
        """Every page of ``request``, once listed; its error if it failed."""
        with self._cv:
            queue = self._hinted.get(request)
            job = queue.popleft() if queue else None
            if queue is not None and not queue:
                del self._hinted[request]
            if job is None:
                job = _Job(request, True)
                self._todo.appendleft(job)
            elif job.started:
                self._ahead -= 1
            else:
                self._todo.remove(job)
                self._todo.appendleft(job)
            job.wanted = True
            self._start()
            self._cv.notify_all()
        job.done.wait()
        if job.error is not None:
            raise job.error
        return job.pages

    def forget(self, requests: Sequence[Request]) -> int:
        """Hinted listings the run will not read after all: those not started are
        dropped (those started still count their requests); returns how many were."""
        started = 0
        with self._cv:
            for request in requests:
                for job in self._hinted.pop(request, ()):
                    if job.started:
                        self._ahead -= 1
                        started += 1
                    else:
                        self._todo.remove(job)
            self._cv.notify_all()
        return started

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._todo.clear()
            self._hinted.clear()
            self._cv.notify_all()
        for thread in self._threads:
            thread.join()

    def _start(self) -> None:
        while len(self._threads) < self.workers:
            thread = threading.Thread(target=self._work, name="listing-fetch", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _ready(self) -> bool:
        return bool(self._todo) and (self._todo[0].wanted or self._ahead < self.window)

    def _work(self) -> None:
        while True:
            with self._cv:
                while not self._closed and not self._ready():
                    self._cv.wait()
                if self._closed:
                    return
                job = self._todo.popleft()
                job.started = True
                if not job.wanted:
                    self._ahead += 1
            r = job.request
            try:
                pages = self.lister.pages(r.prefix, delimiter=r.delimiter,
                                          start_after=r.start_after, stop_after=r.stop_after)
                try:
                    job.pages = list(itertools.islice(pages, 1) if r.first_page else pages)
                finally:
                    _close(pages)
            except Exception as err:  # noqa: BLE001 - raised where the run takes it
                job.error = err
            finally:
                job.done.set()


class _Choice(Enum):
    SKIP = "skip"  # hidden, or wholly listed already
    PRUNED = "pruned"
    AGAIN = "again"  # deciding failed: decide again at its turn, raising there


class PlanRun:
    """Lists the keys one scan needs, deciding as pages arrive (see :mod:`listing.planner`)."""

    def __init__(self, lister: Lister, root_prefix: str,
                 partition_cols: list[tuple[str, pa.DataType]], profile: TableProfile | None,
                 predicate: Expr | None, file_filter: FileFilter,
                 start_after: str | None = None, *, max_concurrent_requests: int = 1,
                 case_sensitive: bool = False) -> None:
        self.lister = lister
        self.root = root_prefix
        self.cols = partition_cols
        self.layout = HiveLayout(root_prefix, tuple(partition_cols), case_sensitive)
        self.chooser = Chooser(root_prefix, partition_cols, profile, predicate)
        self.predicate = predicate
        self.file_filter = file_filter
        #: what the run did with the keys listed (its requests: ``lister.counters``)
        self.metrics = Counters()
        self.metrics.start(*LISTED)
        self._pruned: set[str] = set()
        self._example: str | None = None
        # the directory decided last, as (directory with its slash, values or None when
        # hidden, kept): keys arrive in order, so a directory's files come one after
        # another ("\0" at first: no path starts with it)
        self._last_dir: tuple[str, dict[str, Any] | None, bool] = ("\0", None, False)
        # keys up to here were listed already (or, given, are not wanted: a stream's frontier)
        self._after: str | None = start_after
        self.steps: list[str] = []  # what was done, for explain()
        self.max_concurrent_requests = max_concurrent_requests
        self._fetcher: Fetcher | None = None

    @property
    def profile(self) -> TableProfile | None:
        """The profile the run ended with (a fresh sample when it listed flat)."""
        return self.chooser.profile

    def files(self) -> Generator[ListedFile, None, None]:
        """Every listed file that matches, in key order, listing as the plan decides (see
        module doc)."""
        batches = self.batches()
        try:
            for batch in batches:
                yield from batch
        finally:
            batches.close()

    def batches(self) -> Generator[list[ListedFile], None, None]:
        """:meth:`files` a listed page at a time (a long listing's keys then pass through
        one loop each, not through a generator per plan node)."""
        if self.max_concurrent_requests > 1:
            self._fetcher = Fetcher(self.lister, self.max_concurrent_requests)
        try:
            yield from self._files()
        finally:
            if self._fetcher is not None:
                self._fetcher.close()
                self._fetcher = None

    def _files(self) -> Iterator[list[ListedFile]]:
        if self.predicate is None or not self.cols:
            yield from self._run_noted(Flat(self.root, 0, {}, math.nan))
            return
        direct = self.chooser.direct()
        if direct is not None:
            yield from self._run_noted(direct)
            return
        profile = self.chooser.profile
        if profile is not None and profile.complete:
            # an earlier scan saw every key: the table's size is known, no page need probe
            # it (one page holding them all is the flat listing's single request)
            yield from self._run_noted(Flat(self.root, 0, {}, 1) if profile.keys <= PAGE_SIZE
                                       else self.chooser.best(self.root, 0, {}))
            return
        yield from self._adaptive()

    def _run_noted(self, node: Node) -> Iterator[list[ListedFile]]:
        self.steps += describe(node)
        yield from self.run(node)

    def _adaptive(self) -> Iterator[list[ListedFile]]:
        """List the table flat, re-deciding after every page (see module doc)."""
        builder = ProfileBuilder(self.root, len(self.cols))
        spent, last, alt = 0, None, None
        # split into key ranges only while no other plan is in view: one that may win
        # later needs the flat listing to stop at the page where it does
        pages = self._flat(self.root, self._after, None, may_split=lambda: alt is None,
                           paged=True)
        try:
            for page in pages:
                spent += 1
                builder.add(page)
                yield from self._checked(page.files)
                last = max((m.path for m in page.files), default=last)
                self.chooser.profile = builder.profile()
                if not page.truncated or last is None:
                    self.steps.append(f"list {self.root!r}: {spent} pages (flat was cheapest)")
                    return
                alt, per_dir_cheaper = self.chooser.root_alternative()
                if alt is None:
                    continue
                if (isinstance(alt, Enumerate)  # the sample tells how far the dates lie
                        and (ahead := self.chooser.flat_to_last_value(last)) is not None):
                    alt = _ahead_of(alt, last)
                    # a tie goes to the enumeration: as many requests, but sent at once
                    # and each returning only wanted keys, where flat pages come one
                    # after the other, full
                    alt = ahead if ahead.est < alt.est else alt
                    break
                if per_dir_cheaper or spent >= alt.est:
                    break
        finally:
            _close(pages)
        assert alt is not None and last is not None
        self.steps.append(f"list {self.root!r}: {spent} pages, then for keys after {last!r}:")
        self.steps += ["  " + line for line in describe(alt)]
        self._after = last
        yield from self.run(alt)

    # --- running --------------------------------------------------------------------------
    def run(self, node: Node, *, hinted: bool = False) -> Iterator[list[ListedFile]]:
        """The matching files of ``node``'s listings; ``hinted``: its listings were
        announced to the fetcher already (as part of an enumeration or a walk)."""
        if isinstance(node, Enumerate):
            if not hinted:
                self._hint(self._requests(node))
            for child in node.children:
                yield from self.run(child, hinted=True)
        elif isinstance(node, Walk):
            yield from self._walk(node)
        else:
            skip, start_after = self._clip(node.prefix, node.start_after)
            if skip:
                return
            # a listing of the whole table from its start is a sample the planner lacks
            sample = (self.chooser.profile is None and node.prefix == self.root
                      and start_after is None)
            pages = (self._take(Request(node.prefix, False, start_after, node.stop_after))
                     if hinted else self._flat(node.prefix, start_after, node.stop_after,
                                               node=node))
            for page in pages:
                if sample:
                    self.chooser.profile = TableProfile.from_page(self.root, page,
                                                                  len(self.cols))
                    sample = False
                yield from self._checked(page.files)

    def _clip(self, prefix: str, start_after: str | None) -> tuple[bool, str | None]:
        """(skip, start_after) for listing ``prefix`` once the keys up to ``_after`` are
        done: skip prefixes wholly before it, start inside the one that holds it."""
        after = self._after
        if after is None:
            return False, start_after
        head = after[: len(prefix)]
        if prefix < head:
            return True, None
        if prefix == head:
            return False, after if start_after is None else max(start_after, after)
        return False, start_after

    def _walk(self, node: Walk) -> Iterator[list[ListedFile]]:
        name = self.cols[node.depth][0]
        for page in self._take(Request(node.prefix, True)):
            for meta in page.files:  # a file beside partition directories
                self.metrics.add("files_listed")
                if is_hidden(meta.path.rsplit("/", 1)[-1]):
                    self.metrics.add("files_skipped_hidden")
                    continue
                raise PartitionLayoutError(
                    f"file {meta.path} sits where directories {name}=… were expected")
            # every directory of the page is decided first (deciding sends nothing), so
            # the listings of those kept can be sent at once
            choices = [self._try_decide(node, d) for d in page.dirs]
            if self._fetcher is not None:
                self._hint([r for c in choices if not isinstance(c, _Choice)
                            for r in self._requests(c)])
            for d, choice in zip(page.dirs, choices, strict=True):
                if choice is _Choice.AGAIN:
                    choice = self._decide(node, d)  # raises as a sequential run would, here
                if choice is _Choice.PRUNED:
                    self.metrics.add("partitions_pruned")
                elif not isinstance(choice, _Choice):
                    yield from self.run(choice, hinted=True)

    def _decide(self, node: Walk, d: str) -> Node | _Choice:
        """What to do with directory ``d`` found by walking ``node``."""
        segment = d[len(node.prefix):].rstrip("/")
        if is_hidden(segment, directory=True) or self._clip(d, None)[0]:
            return _Choice.SKIP
        name = self.cols[node.depth][0]
        value = self.layout.value(node.depth, segment, d.rstrip("/"), self._example)
        known = {**node.known, name: value}
        if may_be_true(self.predicate, knowns(known)):
            return self.chooser.best(d, node.depth + 1, known)
        return _Choice.PRUNED

    def _try_decide(self, node: Walk, d: str) -> Node | _Choice:
        try:
            return self._decide(node, d)
        except Exception:  # noqa: BLE001 - decided again, and raised, at its turn
            return _Choice.AGAIN

    # --- sending requests -----------------------------------------------------------------
    def _requests(self, node: Node) -> list[Request]:
        """The listings ``run(node)`` starts with, in the order it sends them (a walk's
        deeper listings depend on what its own listing finds)."""
        if isinstance(node, Enumerate):
            return [r for child in node.children for r in self._requests(child)]
        if isinstance(node, Walk):
            return [Request(node.prefix, True)]
        skip, start_after = self._clip(node.prefix, node.start_after)
        return [] if skip else [Request(node.prefix, False, start_after, node.stop_after)]

    def _hint(self, requests: Sequence[Request]) -> None:
        if self._fetcher is not None:
            self._fetcher.hint(requests)

    def _take(self, r: Request) -> Iterator[Page]:
        if self._fetcher is None:
            return self.lister.pages(r.prefix, delimiter=r.delimiter,
                                     start_after=r.start_after, stop_after=r.stop_after)
        return iter(self._fetcher.take(r))

    def _flat(self, prefix: str, start_after: str | None, stop_after: str | None, *,
              node: Flat | None = None, may_split: Callable[[], bool] = lambda: True,
              paged: bool = False) -> Iterator[Page]:
        """Pages of one flat listing, in key order: page by page, then, when it runs on
        and ``may_split()``, the rest as key ranges listed at once (see module doc).
        ``node``: the plan's listing, when it has one: its estimate of its pages, and its
        rest estimated again from the pages read (a listing estimated too short to split
        is not split); ``paged``: in pages of 1000 keys as the flat listing has them."""
        pages = self.lister.pages(prefix, delimiter=False, start_after=start_after,
                                  stop_after=stop_after)
        if self._fetcher is None or not self.lister.splits_ranges:
            yield from pages
            return
        fetcher = self._fetcher  # (this generator may be closed after the run's end)
        spent, keys, last, answer_at = 0, 0, None, 0
        probe: Request | None = None  # the delimiter page, once sent (one at most)
        dirs: set[str] = set()
        try:
            for page in pages:
                spent += 1
                keys += len(page.files)
                for meta in page.files:
                    rest = meta.path[len(prefix):]
                    if "/" in rest:
                        dirs.add(rest.split("/", 1)[0])
                last = max((m.path for m in page.files), default=last)
                yield page
                if not page.truncated or last is None or not may_split():
                    continue
                if probe is None:
                    if (spent >= SEQUENTIAL_PAGES and len(dirs) >= 2
                            and self._worth_probing(keys / len(dirs), spent, node, last)):
                        # sent now, answered while the next flat page is fetched here
                        probe = Request(prefix, True, last, stop_after, first_page=True)
                        self._hint([probe])
                        answer_at = spent + 1
                    continue
                if spent == answer_at:  # the page fetched while the probe was answered
                    ranges = self._ranges(probe, last, keys / len(dirs))
                    if ranges is None:
                        continue
                    _close(pages)
                    tail = self._ranged(ranges)
                    try:
                        yield from _in_pages(tail) if paged else tail
                    finally:
                        _close(tail)
                    return
        finally:
            _close(pages)
            if probe is not None and fetcher.forget([probe]):
                self.steps.append(f"list {prefix!r} after {probe.start_after!r}: 1 delimiter "
                                  "page sent to split the rest, unused (the listing ended "
                                  "or changed course)")

    def _worth_probing(self, keys_per_dir: float, spent: int, node: Flat | None,
                       last: str) -> bool:
        """Whether the delimiter page could find a rest worth splitting into ranges (at
        least ``2 × PAGES_PER_RANGE`` pages after ``last``, the next page included), once
        ``spent`` pages of ``node`` (None: a listing the plan has no estimate for) are read.
        Invariant: the page is sent only where a split is possible. It names at most a
        page of directories, ``keys_per_dir`` pages of keys, and the page fetched beside
        it lists one of those, so directories of at most ``PAGES_PER_RANGE`` + 1 keys can
        never leave enough keys to split; a listing that stops at a date has a rest the
        pages read bound (:meth:`Chooser.pages_after`)."""
        if keys_per_dir - 1 <= PAGES_PER_RANGE:
            return False
        if node is None:
            return True
        rest, after = node.est - spent, self.chooser.pages_after(node, last, keys_per_dir)
        if not math.isnan(after):
            rest = after if math.isnan(rest) else min(rest, after)
        return not rest < 2 * PAGES_PER_RANGE

    def _ranges(self, probe: Request, last: str, keys_per_dir: float) -> list[Request] | None:
        """Key ranges covering the keys of the probe's prefix after ``last`` (up to its
        ``stop_after``), split at the directories the probe's delimiter page names there;
        None when the rest looks too short to split."""
        assert self._fetcher is not None
        prefix, stop_after = probe.prefix, probe.stop_after
        page = next(iter(self._fetcher.take(probe)), None)
        dirs = [d for d in (page.dirs if page is not None else []) if d[:-1] > last]
        est_pages = len(dirs) * keys_per_dir / PAGE_SIZE
        n = min(self.max_concurrent_requests, len(dirs),
                math.ceil(est_pages / PAGES_PER_RANGE))
        if n < 2:
            self.steps.append(f"list {prefix!r} after {last!r}: {len(dirs)} directories "
                              "there (1 delimiter page), too few keys to split into ranges")
            return None
        bounds = [last] + [dirs[round(i * len(dirs) / n)][:-1] for i in range(1, n)]
        ends: list[str | None] = [*bounds[1:], stop_after]
        self.steps.append(f"list {prefix!r} after {last!r} as {n} key ranges at once "
                          f"(split at {len(dirs)} directories)")
        return [Request(prefix, False, lo, hi) for lo, hi in zip(bounds, ends, strict=True)]

    def _ranged(self, ranges: list[Request]) -> Iterator[Page]:
        fetcher = self._fetcher  # (this generator may be closed after the run's end)
        assert fetcher is not None
        fetcher.hint(ranges)
        try:
            for r in ranges:
                yield from fetcher.take(r)
        finally:
            fetcher.forget(ranges)  # those not taken, when the run stops early

    def _checked(self, metas: list[ObjectMeta]) -> Iterator[list[ListedFile]]:
        """:meth:`_check_page` of a page, a thousand keys at a time (a local store lists
        a table in one page: its kept files then reach the plan a batch at a time)."""
        if len(metas) <= PAGE_SIZE:
            yield self._check_page(metas)
            return
        for start in range(0, len(metas), PAGE_SIZE):
            yield self._check_page(metas[start:start + PAGE_SIZE])

    def _check_page(self, metas: list[ObjectMeta]) -> list[ListedFile]:
        """Decide each listed key of a page: hidden, pruned, not a data file, or a match.
        One loop with the common case inline: a long listing spends its time here."""
        hidden = other = 0
        accepts = self.file_filter.accepts
        endings = self.file_filter.endings  # the common case: a key's ending decides
        out: list[ListedFile] = []
        append = out.append
        new = tuple.__new__  # a ListedFile without its Python-level __new__
        directory, values, keep = self._last_dir
        for meta in metas:
            path = meta.path
            name = path.rfind("/") + 1
            if (path.startswith(HIDDEN_PREFIXES, name) or path.endswith(COPYING_SUFFIX)) \
                    and is_hidden(path[name:]):
                # before deciding the directory: that is decided once, from its first file
                hidden += 1
                continue
            if name != len(directory) or not path.startswith(directory):
                # decided once per directory: its files share their partition values
                self._last_dir = directory, values, keep = self._directory(path, name)
            if values is None:
                hidden += 1
            elif not keep:
                continue
            elif (path.endswith(endings) or path.lower().endswith(endings)  # lower: rarely
                  if endings is not None else accepts(meta)):
                append(new(ListedFile, (meta, values)))
            else:
                other += 1
        m = self.metrics
        m.add("files_listed", len(metas))
        m.add("files_skipped_hidden", hidden)
        m.add("files_skipped_other", other)
        m.add("files_matched", len(out))
        return out

    def _directory(self, path: str, name: int) -> tuple[str, dict[str, Any] | None, bool]:
        """(directory, its partition values or None when hidden, kept) for the directory
        of the listed key ``path`` (its name starts at ``name``)."""
        values = self.layout.decode(path, self._example)
        keep = values is not None and is_true(self.predicate, values)
        if values is not None:
            if self._example is None:
                self._example = path
            if not keep:
                partition = "/".join(path[len(self.root):].split("/")[:len(self.cols)])
                if partition not in self._pruned:
                    self._pruned.add(partition)
                    self.metrics.add("partitions_pruned")
        return path[:name], values, keep


def _ahead_of(node: Enumerate, last: str) -> Enumerate:
    """The enumeration without its prefixes wholly behind ``last`` (listed already: running
    it would skip them), so that its cost compares with listing on from ``last``."""
    prefixes: list[str] = [p for child in node.children
                           if isinstance(p := getattr(child, "prefix", None), str)]
    if len(prefixes) != len(node.children):
        return node
    kept = [child for child, p in zip(node.children, prefixes, strict=True)
            if not p < last[:len(p)]]
    return Enumerate(kept, sum(child.est for child in kept))


def _in_pages(pages: Iterator[Page]) -> Iterator[Page]:
    """The files of consecutive pages as the flat listing pages them: 1000 keys a page,
    each truncated but the last."""
    held: list[ObjectMeta] = []
    for page in pages:
        held += page.files
        while len(held) > PAGE_SIZE:
            yield Page(held[:PAGE_SIZE], [], True)
            held = held[PAGE_SIZE:]
    yield Page(held, [], False)


def _close(pages: Iterator[Page]) -> None:
    """Stop a listing generator: it sends no further request."""
    close = getattr(pages, "close", None)
    if close is not None:
        close()
