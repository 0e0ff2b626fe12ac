"""A long flat listing split into key ranges listed at once.

A flat listing that runs on (past :data:`SEQUENTIAL_PAGES` pages, the keys sit in several
directories of more than :data:`PAGES_PER_RANGE` + 1 keys each, and the rest is not known
to be short) may be split: one delimiter page, sent while the next flat page is fetched,
names the directories after the last key listed; after that next page, the rest is listed
as up to ``workers`` key ranges (``StartAfter`` a directory, up to the next range's start)
at once, when it is long enough. The ranges cover the rest without gap or overlap, so the
keys and their order are those of the flat listing; the adaptive run still sees them in
pages of 1000 and decides as it would have. The cost: the delimiter page (also when the
rest proves too short to split: its answer then costs no time, as it came beside a flat
page), and at most one partial page per range.

Only on a store that lists in key order from ``StartAfter``
(:attr:`~listing.storage.lister.Lister.splits_ranges`), and only with a
:class:`~listing.storage.prefetch.Fetcher` to send the ranges.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from listing.planner.choose import Chooser
from listing.planner.nodes import Flat
from listing.storage.dir_files import DirFiles
from listing.storage.lister import PAGE_SIZE, Lister, Page
from listing.storage.prefetch import Fetcher, Request, close_pages

#: pages a flat listing reads before it sends the delimiter page that may split the rest
#: into key ranges (a table of one page costs exactly its flat listing; two pages, that
#: page more, sent beside the second: no time, on a store that serves requests at once)
SEQUENTIAL_PAGES = 1
#: least estimated pages per key range: fewer ranges than that are not worth their
#: partial last pages
PAGES_PER_RANGE = 2


class RangeSplitter:
    """Flat listings of one plan run whose long rests go out as key ranges.

    ``steps`` is the run's account for ``explain()``: what was split, or why not, is
    appended to it."""

    def __init__(self, lister: Lister, fetcher: Fetcher, chooser: Chooser,
                 steps: list[str]) -> None:
        self.lister = lister
        self.fetcher = fetcher
        self.chooser = chooser
        self.steps = steps

    def flat(self, prefix: str, start_after: str | None, stop_after: str | None, *,
             node: Flat | None = None, may_split: Callable[[], bool] = lambda: True,
             paged: bool = False) -> Iterator[Page]:
        """Pages of one flat listing, in key order: page by page, then, when it runs on
        and ``may_split()``, the rest as key ranges listed at once (see module doc).
        ``node``: the plan's listing, when it has one: its estimate of its pages, and its
        rest estimated again from the pages read (a listing estimated too short to split
        is not split); ``paged``: in pages of 1000 keys as the flat listing has them."""
        pages = self.lister.pages(prefix, delimiter=False, start_after=start_after,
                                  stop_after=stop_after)
        fetcher = self.fetcher
        spent, keys, last, answer_at = 0, 0, None, 0
        probe: Request | None = None  # the delimiter page, once sent (one at most)
        dirs: set[str] = set()
        try:
            for page in pages:
                spent += 1
                keys += page.file_count
                # a file's name holds no "/": its directory says where it lies
                for path in [run.directory for run in page.runs or ()]:
                    rest = path[len(prefix):]
                    if "/" in rest:
                        dirs.add(rest.split("/", 1)[0])
                last = page.last_key() or last
                yield page
                if not page.truncated or last is None or not may_split():
                    continue
                if probe is None:
                    if (spent >= SEQUENTIAL_PAGES and len(dirs) >= 2
                            and self._worth_probing(keys / len(dirs), spent, node, last)):
                        # sent now, answered while the next flat page is fetched here
                        probe = Request(prefix, True, last, stop_after, first_page=True)
                        fetcher.hint([probe])
                        answer_at = spent + 1
                    continue
                if spent == answer_at:  # the page fetched while the probe was answered
                    ranges = self._ranges(probe, last, keys / len(dirs))
                    if ranges is None:
                        continue
                    close_pages(pages)
                    tail = self._ranged(ranges)
                    try:
                        yield from in_pages(tail) if paged else tail
                    finally:
                        close_pages(tail)
                    return
        finally:
            close_pages(pages)
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
        prefix, stop_after = probe.prefix, probe.stop_after
        page = next(iter(self.fetcher.take(probe)), None)
        dirs = [d for d in (page.dirs if page is not None else []) if d[:-1] > last]
        est_pages = len(dirs) * keys_per_dir / PAGE_SIZE
        n = min(self.fetcher.workers, len(dirs), math.ceil(est_pages / PAGES_PER_RANGE))
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
        fetcher = self.fetcher
        fetcher.hint(ranges)
        try:
            for r in ranges:
                yield from fetcher.take(r)
        finally:
            fetcher.forget(ranges)  # those not taken, when the run stops early


def in_pages(pages: Iterator[Page]) -> Iterator[Page]:
    """The files of consecutive pages as the flat listing pages them: 1000 keys a page,
    each truncated but the last."""
    runs: list[DirFiles] = []
    for page in pages:
        runs += page.take_runs()
        while sum(map(len, runs)) > PAGE_SIZE:
            head, runs = _cut(runs, PAGE_SIZE)
            yield Page(None, [], True, runs=head)
    yield Page(None, [], False, runs=runs)


def _cut(runs: list[DirFiles], n: int) -> tuple[list[DirFiles], list[DirFiles]]:
    """The first ``n`` files of ``runs`` and the rest, as runs."""
    head: list[DirFiles] = []
    for i, run in enumerate(runs):
        if n >= len(run):
            head.append(run)
            n -= len(run)
            continue
        rest = runs[i + 1:]
        if n:
            head.append(run.taken(range(n)))
            rest.insert(0, run.taken(range(n, len(run))))
        else:
            rest.insert(0, run)
        return head, rest
    return head, []
