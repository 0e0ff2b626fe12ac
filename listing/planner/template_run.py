"""Listing a table laid out by a path template (:class:`~listing.layout.TemplateLayout`).

**Bound**: a scan sends at most F + 1 LIST requests, F being the requests of one flat
listing of the table (from its root, after ``start_after`` when given). How:

- **enumerate**: when every level's columns have finitely many values the filter (its
  equalities, lists, short date and hour ranges) or the ``layout_projection`` allows, the
  data folders are spelled, not listed (a date spanning several levels,
  ``{date:yyyy/MM/dd}``, is spelled field by field). Up to :data:`MAX_SPELLED` (2) of
  them are listed one by one, their listings sent ahead with ``max_concurrent_requests``
  above 1: one folder costs what its keys cost flat (at most F), two at most F + 1;
- **seek**: otherwise, with a filter on layout columns, one flat listing that jumps. Each
  request lists, below the longest prefix holding every key the filter may still want
  (:meth:`TemplateRun._target`), the keys after the first such key: past a folder the
  keys listed show pruned (a ``yyyy`` or ``MM`` folder bounds a date), to the next spelled
  folder. Its i-th request starts no earlier in key order than the flat listing's i-th,
  and returns a full page or every key still wanted: by induction, at most F requests;
- **walk one level** (before a seek, at most once, one request: the ``+ 1``): when the
  levels above spell a single folder and the filter spells the level below but not this
  one (the accounts of ``AWSLogs/{account}/CloudTrail/{region}/…``), the level is listed
  with a delimiter so the seek jumps to spelled folders (a ``CloudTrail-Digest/`` beside
  ``CloudTrail/`` is never listed as a prefix; a request that jumps over it between two
  accounts may pass its keys, skipped and counted). Folders of the level that do not
  follow the template are counted (``prefixes_skipped_layout``). A truncated walk is not
  used;
- **list**: without a filter on layout columns, flat from the root (F), as for Hive
  tables; and flat from the root whenever the whole table fit the one page ``open()``
  sampled (F = 1) and the plan would send more.

Below the last level lie the data files. A key deeper than the template, or one that does
not follow it anywhere, is skipped and counted (``files_skipped_layout``), never an error.
Every kept key is checked against the filter on its decoded values, so the plan can cost
requests, never rows; a jump only skips keys the filter rules out (or that do not follow
the template). Pages are counted of ``PAGE_SIZE`` keys, as the store returns them.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Generator, Iterator
from typing import Any

from listing.expressions import Expr, conjuncts, is_true, may_be_true
from listing.layout import Components, TemplateLayout
from listing.metrics import Counters
from listing.planner.file_filter import FileFilter
from listing.planner.run import LISTED, ListedFile, ListedRun, files_of
from listing.storage.lister import Lister, ObjectMeta, Page
from listing.storage.prefetch import Fetcher, Request, close_pages

#: what a layout run counts: the Hive run's counts and the keys/prefixes off the template
LAYOUT_LISTED = (*LISTED, "files_skipped_layout", "prefixes_skipped_layout")
#: prefixes one scan may enumerate before it lists the level instead
MAX_ENUMERATED = 4096
#: spelled prefixes listed one by one at most (more: one listing that jumps between them)
MAX_SPELLED = 2
#: after every key that starts with a prefix: ``prefix + _END`` (the greatest code point)
_END = "\U0010ffff"
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
        #: a seek's directories by prefix: spelled, listed by its one walk, or None (any)
        self._children: dict[str, list[tuple[str, Components]] | None] = {}
        self._last = self.root
        names = set(layout.names)
        #: the filter's conjuncts on layout columns only (what a level can decide)
        self._deciding = [c.columns() for c in conjuncts(predicate) if c.columns() <= names]
        self._candidates = ({n: layout.candidates(n, predicate) for n in layout.names}
                            if self._deciding else {})

    def files(self) -> Generator[ListedFile, None, None]:
        """Every listed file that matches, in key order."""
        return files_of(self.batches())

    def batches(self) -> Generator[ListedRun, None, None]:
        """:meth:`files` a directory's run at a time."""
        self.steps.append(f"layout {self.layout.template.text!r} below {self.root!r}")
        if self.max_concurrent_requests > 1:
            self._fetcher = Fetcher(self.lister, self.max_concurrent_requests)
        try:
            spelled = self._spelled()
            if self.layout.whole and (spelled is None or len(spelled) > 1):
                # the table fit one page: its flat listing is one request, the plan's more
                yield from self._flat(self.root, "list")
            elif not self._deciding or (spelled is not None and len(spelled) <= MAX_SPELLED):
                yield from self._level(0, self.root, {})
            else:
                yield from self._seek()
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
        """Enumerate the levels from ``depth``, as far as they are spelled, then list the
        rest flat (no walk: the filter decides nothing below, or every level is spelled)."""
        if depth == len(self.layout.levels):
            yield from self._flat(prefix, "list")
            return
        children = self._enumerate(depth, found)
        if children is None:
            yield from self._flat(prefix, "list")
            return
        self._enumerated += len(children)
        if (self._fetcher is not None and self.start_after is None
                and depth + 1 == len(self.layout.levels)):  # data folders: send ahead
            self._fetcher.hint([Request(f"{prefix}{segment}/", False)
                                for segment, _ in children])
        for segment, child in children:
            yield from self._level(depth + 1, f"{prefix}{segment}/", child)

    def _spelled(self) -> list[str] | None:
        """The data-folder prefixes the enumerations from the root spell when every level
        is spelled (sends nothing), else None."""
        states: list[tuple[str, Components]] = [(self.root, {})]
        for depth in range(len(self.layout.levels)):
            deeper: list[tuple[str, Components]] = []
            for prefix, found in states:
                children = self._enumerate(depth, found)
                if children is None:
                    return None
                deeper += [(f"{prefix}{segment}/", child) for segment, child in children]
                if len(deeper) > MAX_ENUMERATED:
                    return None
            states = deeper
        return [prefix for prefix, _ in states]

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
            if len(out) > MAX_ENUMERATED:
                return None
        return sorted(out, key=lambda sc: sc[0])

    # --- seeking ------------------------------------------------------------------------
    def _seek(self) -> Iterator[ListedRun]:
        """One flat listing that jumps: each request lists, below the longest prefix that
        holds every key still wanted, the keys after the first one that may be wanted
        (see module doc: never more requests than a flat listing of the table)."""
        self._walk_once()
        self._last = self._last_prefix()
        state = _Keys(self)
        cursor = self.start_after
        target = self._target(cursor)
        while target is not None:
            after, prefix = target
            self._note(f"list {prefix!r}" + (
                "" if after is None else f" past {after[:-1]!r}" if after.endswith(_END)
                else f" after {after!r}"))
            # page by page from the store (a fetcher would list on past a jump)
            pages = self.lister.pages(prefix, delimiter=False, start_after=after)
            target = None
            try:
                for page in pages:
                    last = page.last_key()
                    yield from state.page(page)
                    if not page.truncated or last is None:
                        break  # every key still wanted lay below prefix: all listed
                    cursor = last
                    target = self._target(cursor)
                    if target != (cursor, prefix):
                        break  # a jump (or nothing left): a new request
                    target = None  # the listing goes on from its last key
            finally:
                close_pages(pages)
        yield from state.done()
        self._enumerated = sum(len(c) for c in self._children.values() if c)

    def _kids(self, depth: int, prefix: str, found: Components
              ) -> list[tuple[str, Components]] | None:
        """The directories of ``prefix`` (level ``depth``) a wanted key may lie in, as the
        filter spells them or the walk listed them; None: any."""
        if prefix not in self._children:
            self._children[prefix] = self._enumerate(depth, found)
        return self._children[prefix]

    def _walk_once(self) -> None:
        """List, with a delimiter, the one level whose names the template cannot spell
        when the levels above spell a single prefix and the level below is spelled (the
        accounts of ``AWSLogs/{account}/CloudTrail/…``): one request, so the listing then
        jumps to spelled prefixes (``CloudTrail-Digest/`` siblings are never listed). At
        most one such request per scan; a truncated one is not used."""
        prefix = self.root
        found: Components = {}
        levels = self.layout.levels
        for depth in range(len(levels) - 1):
            kids = self._kids(depth, prefix, found)
            if kids is not None:
                if len(kids) != 1:
                    return
                segment, found = kids[0]
                prefix = f"{prefix}{segment}/"
                continue
            if any(self._candidates.get(n) is None for n in levels[depth + 1].columns):
                return  # the names would not let the listing jump any further
            self._note(f"walk {prefix!r}")
            pages = self.lister.pages(prefix, delimiter=True)
            try:
                page = next(pages, None)
            finally:
                close_pages(pages)
            if page is None or page.truncated:
                return
            kept: list[tuple[str, Components]] = []
            for d in page.dirs:
                segment = d[len(prefix):].rstrip("/")
                if self.layout.hidden(d.rstrip("/")):
                    continue
                part = self.layout.match(depth, segment)
                if part is None:
                    self.metrics.add("prefixes_skipped_layout")
                    continue
                child = {**found, **part}
                if may_be_true(self.predicate, self.layout.domains(child, d)):
                    kept.append((segment, child))
                else:
                    self.metrics.add("partitions_pruned")
            self._children[prefix] = kept
            return

    def _last_prefix(self) -> str:
        """The deepest prefix the last keys the scan may want lie below."""
        prefix = self.root
        found: Components = {}
        for depth in range(len(self.layout.levels)):
            kids = self._kids(depth, prefix, found)
            if not kids:
                break
            segment, found = kids[-1]
            prefix = f"{prefix}{segment}/"
        return prefix

    def _target(self, cursor: str | None) -> tuple[str | None, str] | None:
        """(start_after, prefix) of the next request once every key up to ``cursor`` is
        listed: ``prefix`` holds every key the scan may still want, none lies between
        ``cursor`` and ``start_after`` (None: from the prefix's first key); None: no key
        after ``cursor`` may be wanted."""
        found = self._next(0, self.root, {}, cursor)
        if found is None:
            return None
        after, first = found
        common = os.path.commonprefix([first, self._last])
        prefix = common[:common.rfind("/") + 1]
        if after is None and prefix != first:
            after = first[:-1]  # first's keys follow its name without the slash
        if cursor is not None and cursor.startswith(prefix):
            after = cursor if after is None else max(after, cursor)
        if after is not None and after < prefix:
            after = None
        return after, prefix

    def _next(self, depth: int, prefix: str, found: Components, cursor: str | None
              ) -> tuple[str | None, str] | None:
        """(start_after, first) of the first key after ``cursor`` below ``prefix`` the
        scan may want: it lies below ``first``, none between ``cursor`` and
        ``start_after`` (None: from first's first key); None: there is none."""
        inside = cursor is not None and cursor.startswith(prefix)
        if cursor is not None and not inside and cursor > prefix:
            return None  # every key below prefix is listed already
        if depth == len(self.layout.levels):
            return (cursor if inside else None), prefix
        kids = self._kids(depth, prefix, found)
        if kids is not None:
            for segment, child in kids:
                got = self._next(depth + 1, f"{prefix}{segment}/", child, cursor)
                if got is not None:
                    return got
            return None
        if not inside:
            return None, prefix
        assert cursor is not None
        segment, slash, _ = cursor[len(prefix):].partition("/")
        if not slash:
            return cursor, prefix  # a key where directories are expected
        d = f"{prefix}{segment}/"
        part = None if self.layout.hidden(d.rstrip("/")) else self.layout.match(depth, segment)
        if part is not None:
            child = {**found, **part}
            if may_be_true(self.predicate, self.layout.domains(child, d)):
                got = self._next(depth + 1, d, child, cursor)
                if got is not None:
                    after, first = got
                    return (after if after is not None else first[:-1]), prefix
        return d + _END, prefix  # nothing more below d: past its keys

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
        state = _Keys(self)
        for page in self._pages(prefix, False, start):
            yield from state.page(page)
        yield from state.done()

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


class _Keys:
    """Listed keys decoded and checked, a directory at a time, across the pages and the
    requests of one run (a directory's keys come one after another)."""

    def __init__(self, run: TemplateRun) -> None:
        self.run = run
        self.directory = ""
        self.values: dict[str, Any] | None = None
        self.keep = False
        self.kept: list[ObjectMeta] = []

    def page(self, page: Page) -> Iterator[ListedRun]:
        run = self.run
        for meta in page.files:
            d = meta.path.rsplit("/", 1)[0] + "/"
            if d != self.directory:
                yield from run._run(self.kept, self.values)
                self.directory, self.kept = d, []
                self.values, self.keep = run._directory(meta.path)
            if run._check(meta, self.values, self.keep):
                self.kept.append(meta)

    def done(self) -> Iterator[ListedRun]:
        yield from self.run._run(self.kept, self.values)
        self.kept = []
