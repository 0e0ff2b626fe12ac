"""Running a listing plan: send the requests, decode and filter every listed key.

With ``max_concurrent_requests`` above 1, requests are sent ahead of need from a few
threads (:class:`~listing.storage.prefetch.Fetcher`), while this run still reads every
page itself, in key order, exactly as a sequential run would: the files, their order, the
metrics and any error are the same, and so are the requests, except for the split of a
long flat listing into key ranges (:mod:`listing.planner.key_ranges`).

The prefixes of an enumeration, and the directories a walk keeps from each page it lists,
are known before any of them is read: they are sent at once, in the order the run will
read them, at most ``2 × max_concurrent_requests`` listings ahead.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Generator, Iterator, Sequence
from enum import Enum
from itertools import repeat
from typing import Any, NamedTuple

import pyarrow as pa

from listing.errors import PartitionLayoutError
from listing.expressions import Expr, is_true, knowns, may_be_true
from listing.hive import COPYING_SUFFIX, HIDDEN_PREFIXES, HiveLayout, is_hidden
from listing.metrics import Counters
from listing.planner.choose import Chooser
from listing.planner.file_filter import FileFilter
from listing.planner.key_ranges import RangeSplitter
from listing.planner.nodes import Enumerate, Flat, Node, Walk, describe
from listing.planner.profile import ProfileBuilder, TableProfile
from listing.planner.profile import pages as pages_for
from listing.storage.dir_files import DirFiles
from listing.storage.lister import PAGE_SIZE, Lister, ObjectMeta, Page
from listing.storage.prefetch import Fetcher, Request, close_pages

#: what a run counts of the keys it lists (its :attr:`PlanRun.metrics`)
LISTED = ("files_listed", "files_matched", "partitions_pruned", "files_skipped_hidden",
          "files_skipped_other")
#: a name in a "\0"-joined list that may be hidden (:func:`~listing.hive.is_hidden`)
_MAY_HIDE = re.compile("\0[_.]|" + re.escape(COPYING_SUFFIX) + "\0")


class ListedFile(NamedTuple):
    """A key the scan keeps, with its partition values (shared by the files of one
    directory: read them, never change them)."""

    meta: ObjectMeta
    values: dict[str, Any]


class ListedRun(NamedTuple):
    """Kept files of one directory as columns, with the partition values they share (read
    them, never change them): what a run hands over of every listing, with no object per
    file."""

    files: DirFiles
    values: dict[str, Any]

    def listed(self) -> list[ListedFile]:
        values = self.values
        return [ListedFile(meta, values) for meta in Page(runs=[self.files]).files]



def files_of(batches: Generator[ListedRun, None, None]) -> Generator[ListedFile, None, None]:
    """The files of a run's ``batches``, one at a time; closing it closes them."""
    try:
        for batch in batches:
            yield from batch.listed()
    finally:
        batches.close()


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
                 case_sensitive: bool = False, expected_keys: int | None = None) -> None:
        self.lister = lister
        self.root = root_prefix
        self.cols = partition_cols
        self.layout = HiveLayout(root_prefix, tuple(partition_cols), case_sensitive)
        # a store whose listing costs the directories it reads (not its requests)
        self._by_directory: bool = getattr(lister, "reads_directories", False)
        self.chooser = Chooser(root_prefix, partition_cols, profile, predicate,
                               by_directory=self._by_directory)
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
        self._splitter: RangeSplitter | None = None  # with a fetcher, on a store that splits
        #: the pages of the table's unfiltered listing, when the caller knows how many keys
        #: it holds (a stream's last full listing): the splitter then sends no delimiter
        #: page where the rest is too short to split (NaN: unknown)
        self._expected_pages = math.nan if expected_keys is None else pages_for(expected_keys)

    @property
    def profile(self) -> TableProfile | None:
        """The profile the run ended with (a fresh sample when it listed flat)."""
        return self.chooser.profile

    def files(self) -> Generator[ListedFile, None, None]:
        """Every listed file that matches, in key order, listing as the plan decides (see
        module doc)."""
        return files_of(self.batches())

    def batches(self) -> Generator[ListedRun, None, None]:
        """:meth:`files` a directory's run at a time, as columns (a long listing's keys
        then pass through one loop each, not through a generator per plan node)."""
        if self.max_concurrent_requests > 1:
            self._fetcher = Fetcher(self.lister, self.max_concurrent_requests)
            if self.lister.splits_ranges:
                self._splitter = RangeSplitter(self.lister, self._fetcher, self.chooser,
                                               self.steps)
        try:
            yield from self._files()
        finally:
            if self._fetcher is not None:
                self._fetcher.close()
                self._fetcher = None
                self._splitter = None

    def _files(self) -> Iterator[ListedRun]:
        if self.predicate is None or not self.cols:
            yield from self._run_noted(Flat(self.root, 0, {}, self._expected_pages))
            return
        direct = self.chooser.direct()
        if direct is not None:
            yield from self._run_noted(direct)
            return
        walk = self.chooser.directory_walk()
        if walk is not None:
            yield from self._run_noted(walk)
            return
        profile = self.chooser.profile
        if profile is not None and profile.complete:
            # an earlier scan saw every key: the table's size is known, no page need probe
            # it (one page holding them all is the flat listing's single request)
            yield from self._run_noted(Flat(self.root, 0, {}, 1) if profile.keys <= PAGE_SIZE
                                       else self.chooser.best(self.root, 0, {}))
            return
        yield from self._adaptive()

    def _run_noted(self, node: Node) -> Iterator[ListedRun]:
        self.steps += describe(node)
        yield from self.run(node)

    def _adaptive(self) -> Iterator[ListedRun]:
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
                last = _last_key(page, last)  # before the check takes a page's runs
                yield from self._checked(page)
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
            close_pages(pages)
        assert alt is not None and last is not None
        self.steps.append(f"list {self.root!r}: {spent} pages, then for keys after {last!r}:")
        self.steps += ["  " + line for line in describe(alt)]
        self._after = last
        yield from self.run(alt)

    # --- running --------------------------------------------------------------------------
    def run(self, node: Node, *, hinted: bool = False) -> Iterator[ListedRun]:
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
                yield from self._checked(page)

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

    def _walk(self, node: Walk) -> Iterator[ListedRun]:
        name = self.cols[node.depth][0]
        for page in self._take(Request(node.prefix, True)):
            for meta in page.files:  # a file beside partition directories
                self.metrics.add("files_listed")
                if is_hidden(meta.path.rsplit("/", 1)[-1]):
                    self.metrics.add("files_skipped_hidden")
                    continue
                if node.depth == 0 and self._by_directory:
                    # at the root, not read, as a flat listing has it (decode warns)
                    if self.layout.decode(meta.path) is None:
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
            return self.chooser.below(d, node.depth + 1, known)
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
        """Pages of one flat listing, in key order; its long rest split into key ranges
        when the run sends requests ahead (:meth:`RangeSplitter.flat`)."""
        if self._splitter is None:
            return self.lister.pages(prefix, delimiter=False, start_after=start_after,
                                     stop_after=stop_after)
        return self._splitter.flat(prefix, start_after, stop_after, node=node,
                                   may_split=may_split, paged=paged)

    def _checked(self, page: Page) -> Iterator[ListedRun]:
        """:meth:`_check_run` of each of a page's runs (the run is the page's last
        reader: it takes them; a local store lists a table in one page: its kept files
        then reach the plan a directory at a time)."""
        for files in page.take_runs():
            kept = self._check_run(files)
            if kept is not None:
                yield kept

    def _check_run(self, files: DirFiles) -> ListedRun | None:
        """Decide each listed key of one directory's files: hidden, pruned, not a data
        file, or a match. The directory is decided once (its files share their partition
        values), each name is looked at, no object is made per file."""
        m = self.metrics
        count = len(files)
        m.add("files_listed", count)
        directory = files.directory
        # one look at all the names first: a hidden one is rare ("\0" is in no name)
        joined = "\0" + files.joined_names + "\0"
        hidden = [i for i, name in enumerate(files.names)
                  if (name.startswith(HIDDEN_PREFIXES) or name.endswith(COPYING_SUFFIX))
                  and is_hidden(name)] if _MAY_HIDE.search(joined) else []
        m.add("files_skipped_hidden", len(hidden))
        if len(hidden) == count:
            return None
        visible: range | list[int] = range(count)
        if hidden:
            skip = set(hidden)
            visible = [i for i in visible if i not in skip]
        if directory != self._last_dir[0]:
            first = directory + files.name(visible[0])
            self._last_dir = self._directory(first, len(directory))
        _, values, keep = self._last_dir
        if values is None:
            m.add("files_skipped_hidden", len(visible))
            return None
        if not keep:
            return None
        rule = self.file_filter
        endings = rule.endings
        kept: range | list[int]
        if rule.every_name:  # the format reads any name (no ending decides then)
            kept = rule.kept(lambda: files.names, joined, visible)
        elif endings is not None:
            names = files.names
            if not hidden and all(map(str.endswith, names, repeat(endings))):
                kept = visible  # the common case, in one pass of C
            else:
                kept = [i for i in visible
                        if names[i].endswith(endings) or names[i].lower().endswith(endings)]
        else:
            accepts = rule.accepts
            metas = Page(runs=[files]).files
            kept = [i for i in visible if accepts(metas[i])]
        m.add("files_skipped_other", len(visible) - len(kept))
        m.add("files_matched", len(kept))
        if not kept:
            return None
        return ListedRun(files if len(kept) == count else files.taken(list(kept)), values)

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


def _last_key(page: Page, last: str | None) -> str | None:
    """The greatest key of ``page``'s files, or ``last`` when it has none."""
    key = page.last_key()
    return last if key is None else key
