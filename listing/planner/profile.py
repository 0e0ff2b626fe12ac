"""The table's shape as seen in listed pages: what the planner's cost model knows."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from listing.hive import is_canonical_segment, parse_segment
from listing.storage.lister import PAGE_SIZE, Page


@dataclass(frozen=True)
class TableProfile:
    """The table's shape as seen in one listed page, for estimating request counts. A
    value: a run that learns more (:class:`ProfileBuilder`) makes a new one."""

    complete: bool = True  # the page held every key, so one request lists the table
    keys: int = 0
    keys_per_dir: list[float] = field(default_factory=list)  # keys under one depth-d+1 dir
    sample_values: list[list[str]] = field(default_factory=list, repr=False)  # raw, per level
    # per level: some sampled directory is not spelled as Spark spells it (city=%41 for
    # 'A'), so a value there may have several spellings and no prefix can be trusted
    respelled: list[bool] = field(default_factory=list)

    @classmethod
    def from_page(cls, root: str, page: Page, k: int) -> TableProfile:
        builder = ProfileBuilder(root, k)
        builder.add(page)
        return builder.profile()

    def keys_under(self, depth: int) -> float:
        """Keys under one directory of ``depth`` partition levels; the whole table (depth
        0) is unknown unless the page held it all."""
        if depth == 0:
            return float(self.keys) if self.complete else math.inf
        return self.keys_per_dir[depth - 1]

    def one_spelling(self, depth: int) -> bool:
        """Whether every value of level ``depth`` can be taken to have one spelling on disk
        (the sample shows no needless or non-canonical escape there)."""
        return not (depth < len(self.respelled) and self.respelled[depth])

    def fanout(self, depth: int) -> float:
        return self.keys_under(depth) / max(self.keys_under(depth + 1), 1.0)


class ProfileBuilder:
    """Accumulates a profile over consecutive pages of one flat listing (key order), so
    the planner's view of the tree sharpens with every page it reads anyway."""

    def __init__(self, root: str, k: int) -> None:
        self.root, self.k = root, k
        self.counts: list[dict[str, int]] = [{} for _ in range(k)]
        self.values: list[list[str]] = [[] for _ in range(k)]
        self.respelled = [False] * k
        self.keys = 0
        self.truncated = True
        # per directory name met: its raw value (None: no k=v name) and whether it is
        # spelled as Spark spells it (a table names each hour=H under every date)
        self._segments: dict[str, tuple[str | None, bool]] = {}

    def add(self, page: Page) -> None:
        self.keys += page.file_count
        self.truncated = page.truncated
        for run in page.runs or ():  # a directory's files at once
            self._count(run.directory, len(run))

    def _count(self, path: str, n: int) -> None:
        """Count ``n`` keys in the directories of ``path`` (a key, or a directory with
        its slash)."""
        rel = path[len(self.root):].split("/")
        key = ""
        for d in range(min(self.k, len(rel) - 1)):
            segment = rel[d]
            key = f"{key}/{segment}" if d else segment
            counts = self.counts[d]
            count = counts.get(key)
            if count is not None:
                counts[key] = count + n
                continue
            counts[key] = n
            raw, canonical = self._segment(segment)
            if raw is not None:
                self.values[d].append(raw)
                if not canonical:
                    self.respelled[d] = True

    def _segment(self, segment: str) -> tuple[str | None, bool]:
        known = self._segments.get(segment)
        if known is None:
            parsed = parse_segment(segment)
            known = self._segments[segment] = (
                (parsed[1], is_canonical_segment(segment)) if parsed else (None, True))
        return known

    def profile(self) -> TableProfile:
        keys_per_dir = []
        for counts in self.counts:
            sizes = list(counts.values())
            if self.truncated and len(sizes) > 1:
                sizes = sizes[:-1]  # the last directory may go on in the next page
            keys_per_dir.append(sum(sizes) / max(len(sizes), 1))
        return TableProfile(not self.truncated, self.keys, keys_per_dir,
                            [list(v) for v in self.values], list(self.respelled))


def pages(keys: float) -> float:
    """LIST requests needed for ``keys`` keys (1000 a page)."""
    return max(1, math.ceil(keys / PAGE_SIZE)) if keys != math.inf else math.inf
