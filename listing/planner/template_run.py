"""Listing a table laid out by a path template (:class:`~listing.layout.TemplateLayout`).

Level by level from the root, the run does the cheapest of three things:

- **enumerate**: when every column of the level has finitely many values the filter (its
  equalities, lists, short date and hour ranges) or the ``layout_projection`` allows,
  the level's directory names are spelled, not listed (no request). A date spanning
  several levels (``{date:yyyy/MM/dd}``) is enumerated field by field;
- **walk**: else, when the filter decides a column at this level or below, the level is
  listed with a delimiter and each directory decided on what it holds (a ``yyyy``
  directory bounds a date to its year); directories that do not follow the template (a
  ``CloudTrail-Digest/`` beside ``CloudTrail/``) are not listed, and counted
  (``prefixes_skipped_layout``);
- **list**: else everything below is listed flat, and every key decoded; so too where a
  walk would be, when the whole table fit the one page ``open()`` sampled (a flat listing
  of any prefix is then one request, a walk at least one), and such a table is listed
  flat from its root whenever the plan would list more than one prefix.

Below the last level lie the data files: the last prefix is listed flat, and a key deeper
than the template, or one that does not follow it anywhere, is skipped and counted
(``files_skipped_layout``), never an error. Every kept key is checked against the filter
on its decoded values, so the plan can cost requests, never rows. Without a filter on
layout columns the table is listed flat from its root: one listing, as for Hive tables.
With ``max_concurrent_requests`` above 1, the listings of an enumeration's last level
are sent ahead, from a few threads (:class:`~listing.storage.prefetch.Fetcher`), and read
in key order as a sequential run reads them: the same requests, files and counts.
"""

from __future__ import annotations

import itertools
from collections.abc import Generator, Iterator
from typing import Any

from listing.expressions import Expr, conjuncts, is_true, may_be_true
from listing.layout import Components, TemplateLayout
from listing.metrics import Counters
from listing.planner.file_filter import FileFilter
from listing.planner.run import LISTED, ListedFile, ListedRun
from listing.storage.lister import Lister, ObjectMeta, Page
from listing.storage.prefetch import Fetcher, Request

#: what a layout run counts: the Hive run's counts and the keys/prefixes off the template
LAYOUT_LISTED = (*LISTED, "files_skipped_layout", "prefixes_skipped_layout")
#: prefixes one scan may enumerate before it lists the level instead
MAX_ENUMERATED = 4096
#: listings explain() names one by one (the rest are counted)
_SHOWN = 8


class TemplateRun:
    """Lists the keys one scan of a template-laid-out table needs (see module doc)."""

    def __init__(self, lister: Lister, layout: TemplateLayout, predicate: Expr | None,
                 file_filter: FileFilter, start_after: str | None = None, *,
                 max_concurrent_requests: int = 1) -> None:
        self.lister = lister
        self.layout = layout
        self.root = layout.root
        self.predicate = predicate
        self.file_filter = file_filter
        self.start_after = start_after
        self.max_concurrent_requests = max_concurrent_requests
        self._fetcher: Fetcher | None = None
        self.metrics = Counters()
        self.metrics.start(*LAYOUT_LISTED)
        self.steps: list[str] = []
        self.profile = None  # no profile: a layout's levels are decided as listed
        self._listings = 0
        self._enumerated = 0
        self._pruned: set[str] = set()
        names = set(layout.names)
        #: the filter's conjuncts on layout columns only (what a level can decide)
        self._deciding = [c.columns() for c in conjuncts(predicate) if c.columns() <= names]
        self._candidates = ({n: layout.candidates(n, predicate) for n in layout.names}
                            if self._deciding else {})

    def files(self) -> Generator[ListedFile, None, None]:
        """Every listed file that matches, in key order."""
        batches = self.batches()
        try:
            for batch in batches:
                yield from batch.listed()
        finally:
            batches.close()

    def batches(self) -> Generator[ListedRun, None, None]:
        """:meth:`files` a directory's run at a time."""
        self.steps.append(f"layout {self.layout.template.text!r} below {self.root!r}")
        if self.max_concurrent_requests > 1:
            self._fetcher = Fetcher(self.lister, self.max_concurrent_requests)
        try:
            if self.layout.whole and self._prefixes() > 1:
                # the table fit one page: its flat listing is one request, the plan's more
                yield from self._flat(self.root, "list")
            else:
                yield from self._level(0, self.root, {})
        finally:
            if self._fetcher is not None:
                self._fetcher.close()
                self._fetcher = None
        if self._listings > _SHOWN:
            self.steps.append(f"  … {self._listings - _SHOWN} more listings")
        if self._enumerated:
            self.steps.append(f"  {self._enumerated} prefixes enumerated (no request)")

    # --- levels -----------------------------------------------------------------------
    def _level(self, depth: int, prefix: str, found: Components) -> Iterator[ListedRun]:
        if depth == len(self.layout.levels):
            yield from self._flat(prefix, "list")
            return
        children = self._enumerate(depth, found)
        if children is not None:
            self._enumerated += len(children)
            if (self._fetcher is not None and self.start_after is None
                    and depth + 1 == len(self.layout.levels)):  # data folders: send ahead
                self._fetcher.hint([Request(f"{prefix}{segment}/", False)
                                    for segment, _ in children])
            for segment, child in children:
                yield from self._level(depth + 1, f"{prefix}{segment}/", child)
        elif self._decides_below(depth) and not self.layout.whole:
            yield from self._walk(depth, prefix, found)
        else:
            yield from self._flat(prefix, "list")

    def _prefixes(self) -> int:
        """How many prefixes the enumerations from the root end in (sends nothing): each
        costs at least one request."""
        states: list[Components] = [{}]
        for depth in range(len(self.layout.levels)):
            deeper: list[Components] = []
            for found in states:
                children = self._enumerate(depth, found)
                if children is None:
                    return len(states)
                deeper += [child for _, child in children]
            states = deeper
        return len(states)

    def _enumerate(self, depth: int, found: Components
                   ) -> list[tuple[str, Components]] | None:
        """The level's directory names and what each holds, spelled from the candidate
        values (pruned by the filter), in key order; None: the level must be listed."""
        level = self.layout.levels[depth]
        options: list[list[Components]] = []
        for name in sorted(level.columns):
            values = self._candidates.get(name)
            if values is None:
                return None
            keys = [k for p in level.parts if p.kind != "literal" and p.text == name
                    for k in ([(name, p.field)] if p.kind == "field" else [name])]
            known = {k: v for k, v in found.items()
                     if (k[0] if isinstance(k, tuple) else k) == name}
            seen: list[Components] = []
            for value in values:
                if any(value.get(k) != v for k, v in known.items()):
                    continue  # another value than the levels above spelled
                part = {k: value[k] for k in keys}
                if part not in seen:
                    seen.append(part)
            options.append(seen)
        out: list[tuple[str, Components]] = []
        for combo in itertools.product(*options):
            child = dict(found)
            for part in combo:
                child.update(part)
            segment = self.layout.spell(depth, child)
            if segment is None:
                return None
            if not may_be_true(self.predicate, self.layout.domains(child)):
                continue
            out.append((segment, child))
            if self._enumerated + len(out) > MAX_ENUMERATED:
                return None
        return sorted(out, key=lambda sc: sc[0])

    def _decides_below(self, depth: int) -> bool:
        """Whether some conjunct of the filter reads a column of this level or below."""
        below = set().union(*(lv.columns for lv in self.layout.levels[depth:]))
        return any(cols & below for cols in self._deciding)

    def _walk(self, depth: int, prefix: str, found: Components) -> Iterator[ListedRun]:
        self._note(f"walk {prefix!r}")
        for page in self._pages(prefix, True):
            for meta in page.files:  # a file where the template has directories
                self.metrics.add("files_listed")
                self.metrics.add("files_skipped_hidden" if self.layout.hidden(meta.path)
                                 else "files_skipped_layout")
            for d in page.dirs:
                segment = d[len(prefix):].rstrip("/")
                if self.layout.hidden(d.rstrip("/")):
                    continue
                if self.start_after is not None and d < self.start_after[:len(d)]:
                    continue  # wholly listed already
                part = self.layout.match(depth, segment)
                if part is None:
                    self.metrics.add("prefixes_skipped_layout")
                    continue
                child = {**found, **part}
                if may_be_true(self.predicate, self.layout.domains(child, d)):
                    yield from self._level(depth + 1, d, child)
                else:
                    self.metrics.add("partitions_pruned")

    def _pages(self, prefix: str, delimiter: bool, start_after: str | None = None
               ) -> Iterator[Page]:
        """The pages of one listing, from the fetcher when the run has one."""
        if self._fetcher is None:
            return iter(self.lister.pages(prefix, delimiter=delimiter, start_after=start_after))
        return iter(self._fetcher.take(Request(prefix, delimiter, start_after)))

    def _note(self, what: str) -> None:
        self._listings += 1
        if self._listings <= _SHOWN:
            self.steps.append("  " + what)

    # --- keys ---------------------------------------------------------------------------
    def _flat(self, prefix: str, what: str) -> Iterator[ListedRun]:
        """Every key below ``prefix``, decoded and checked; kept files a directory's run
        at a time."""
        after = self.start_after
        if after is not None and prefix < after[:len(prefix)]:
            return
        self._note(f"{what} {prefix!r}")
        start = after if after is not None and after.startswith(prefix) else None
        directory = ""
        values: dict[str, Any] | None = None
        keep = False
        kept: list[ObjectMeta] = []
        for page in self._pages(prefix, False, start):
            for meta in page.files:  # a directory's keys come one after another
                d = meta.path.rsplit("/", 1)[0] + "/"
                if d != directory:
                    yield from self._run(kept, values)
                    directory, kept = d, []
                    values, keep = self._directory(meta.path)
                if self._check(meta, values, keep):
                    kept.append(meta)
        yield from self._run(kept, values)

    def _directory(self, path: str) -> tuple[dict[str, Any] | None, bool]:
        """(values, kept) of the directory of the key ``path``: values None when it does
        not follow the template; kept when the filter keeps them (a pruned directory is
        counted once)."""
        values = self.layout.decode(path)
        if values is None:
            return None, False
        if not is_true(self.predicate, values):
            partition = path.rsplit("/", 1)[0]
            if partition not in self._pruned:
                self._pruned.add(partition)
                self.metrics.add("partitions_pruned")
            return values, False
        return values, True

    def _check(self, meta: ObjectMeta, values: dict[str, Any] | None, keep: bool) -> bool:
        """Whether the key ``meta`` is a data file the scan keeps; what it is counted."""
        m = self.metrics
        m.add("files_listed")
        if self.layout.hidden(meta.path):
            m.add("files_skipped_hidden")
            return False
        if values is None:
            m.add("files_skipped_layout")
            return False
        if not keep:
            return False
        if not self.file_filter.accepts(meta):
            m.add("files_skipped_other")
            return False
        m.add("files_matched")
        return True

    @staticmethod
    def _run(kept: list[ObjectMeta], values: dict[str, Any] | None) -> Iterator[ListedRun]:
        """The kept files of one directory as runs (none when nothing was kept)."""
        if kept and values is not None:
            for files in Page(files=kept).take_runs():
                yield ListedRun(files, values)
