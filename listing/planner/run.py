"""Running a listing plan: send the requests, decode and filter every listed key."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from listing.errors import PartitionLayoutError
from listing.expressions import Expr, is_true, knowns, may_be_true
from listing.hive import HiveLayout, is_hidden
from listing.planner.choose import Chooser
from listing.planner.file_filter import FileFilter
from listing.planner.nodes import Enumerate, Flat, Node, Walk, describe
from listing.planner.profile import ProfileBuilder, TableProfile
from listing.storage import Lister, ObjectMeta


@dataclass
class ListingMetrics:
    files_listed: int = 0
    files_matched: int = 0
    partitions_pruned: int = 0
    files_skipped_hidden: int = 0
    files_skipped_other: int = 0


@dataclass
class ListedFile:
    meta: ObjectMeta
    values: dict[str, Any]


class ListingRun:
    """Lists the keys one scan needs, deciding as pages arrive (see :mod:`listing.planner`)."""

    def __init__(self, lister: Lister, root_prefix: str,
                 partition_cols: list[tuple[str, pa.DataType]], profile: TableProfile | None,
                 predicate: Expr | None, file_filter: FileFilter,
                 start_after: str | None = None) -> None:
        self.lister = lister
        self.root = root_prefix
        self.cols = partition_cols
        self.layout = HiveLayout(root_prefix, tuple(partition_cols))
        self.chooser = Chooser(root_prefix, partition_cols, profile, predicate)
        self.predicate = predicate
        self.file_filter = file_filter
        self.metrics = ListingMetrics()
        self._pruned: set[str] = set()
        self._example: str | None = None
        # keys up to here were listed already (or, given, are not wanted: a stream's frontier)
        self._after: str | None = start_after
        self.steps: list[str] = []  # what was done, for explain()

    @property
    def profile(self) -> TableProfile | None:
        """The profile the run ended with (a fresh sample when it listed flat)."""
        return self.chooser.profile

    def files(self) -> Iterator[ListedFile]:
        """Every listed file that matches, listing as the plan decides (see module doc)."""
        if self.predicate is None or not self.cols:
            yield from self._run_noted(Flat(self.root, 0, {}, math.nan))
            return
        direct = self.chooser.direct()
        if direct is not None:
            yield from self._run_noted(direct)
            return
        if self.chooser.profile is not None and self.chooser.profile.complete:
            yield from self._run_noted(Flat(self.root, 0, {}, 1))  # one page holds it all
            return
        yield from self._adaptive()

    def _run_noted(self, node: Node) -> Iterator[ListedFile]:
        self.steps += describe(node)
        yield from self.run(node)

    def _adaptive(self) -> Iterator[ListedFile]:
        """List the table flat, re-deciding after every page (see module doc)."""
        builder = ProfileBuilder(self.root, len(self.cols))
        spent, last, alt = 0, None, None
        for page in self.lister.pages(self.root, delimiter=False, start_after=self._after):
            spent += 1
            builder.add(page)
            for meta in page.files:
                if (listed := self._check(meta)) is not None:
                    yield listed
            last = max((m.path for m in page.files), default=last)
            self.chooser.profile = builder.profile()
            if not page.truncated or last is None:
                self.steps.append(f"list {self.root!r}: {spent} pages (flat was cheapest)")
                return
            alt, per_dir_cheaper = self.chooser.root_alternative()
            if alt is not None and (per_dir_cheaper or spent >= alt.est):
                break
        assert alt is not None and last is not None
        self.steps.append(f"list {self.root!r}: {spent} pages, then for keys after {last!r}:")
        self.steps += ["  " + line for line in describe(alt)]
        self._after = last
        yield from self.run(alt)

    # --- running --------------------------------------------------------------------------
    def run(self, node: Node) -> Iterator[ListedFile]:
        if isinstance(node, Enumerate):
            for child in node.children:
                yield from self.run(child)
        elif isinstance(node, Walk):
            yield from self._walk(node)
        else:
            skip, start_after = self._clip(node.prefix, node.start_after)
            if skip:
                return
            # a listing of the whole table from its start is a sample the planner lacks
            sample = (self.chooser.profile is None and node.prefix == self.root
                      and start_after is None)
            for page in self.lister.pages(node.prefix, delimiter=False,
                                          start_after=start_after,
                                          stop_after=node.stop_after):
                if sample:
                    self.chooser.profile = TableProfile.from_page(self.root, page,
                                                                  len(self.cols))
                    sample = False
                for meta in page.files:
                    listed = self._check(meta)
                    if listed is not None:
                        yield listed

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

    def _walk(self, node: Walk) -> Iterator[ListedFile]:
        name = self.cols[node.depth][0]
        for page in self.lister.pages(node.prefix, delimiter=True):
            for meta in page.files:  # a file beside partition directories
                self.metrics.files_listed += 1
                if is_hidden(meta.path.rsplit("/", 1)[-1]):
                    self.metrics.files_skipped_hidden += 1
                    continue
                raise PartitionLayoutError(
                    f"file {meta.path} sits where directories {name}=… were expected")
            for d in page.dirs:
                segment = d[len(node.prefix):].rstrip("/")
                if is_hidden(segment) or self._clip(d, None)[0]:
                    continue
                value = self.layout.value(node.depth, segment, d.rstrip("/"), self._example)
                known = {**node.known, name: value}
                if may_be_true(self.predicate, knowns(known)):
                    yield from self.run(self.chooser.best(d, node.depth + 1, known))
                else:
                    self.metrics.partitions_pruned += 1

    def _check(self, meta: ObjectMeta) -> ListedFile | None:
        """Decide one listed key: hidden, pruned, not a data file, or a match."""
        self.metrics.files_listed += 1
        values = self.layout.decode(meta.path, self._example)
        if values is None:
            self.metrics.files_skipped_hidden += 1
            return None
        if self._example is None:
            self._example = meta.path
        if not is_true(self.predicate, values):
            partition = "/".join(meta.path[len(self.root):].split("/")[:len(self.cols)])
            if partition not in self._pruned:
                self._pruned.add(partition)
                self.metrics.partitions_pruned += 1
            return None
        if not self.file_filter.accepts(meta):
            self.metrics.files_skipped_other += 1
            return None
        self.metrics.files_matched += 1
        return ListedFile(meta, values)
