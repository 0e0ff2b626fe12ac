"""The listing planner: list only the keys that can match a partition filter.

Object stores answer LIST with at most 1000 keys a page and charge per request. The
planner turns the partition filter into the cheapest requests it can justify:

- **enumerate**: ``date = X``, ``IN``, ``OR`` of ``=``, short date ranges become exact
  prefixes ``date=X/`` when the value has one on-disk spelling;
- **narrow**: a range on strings or ISO dates lists only the common prefix of its bounds,
  and for dates starts after the lower bound and stops past the upper one;
- **walk**: list one level with a delimiter and decide each child directory;
- **flat**: list everything below a prefix, 1000 keys a page.

A plan that lists one prefix lists a subset of the table, so it is taken at once. Any
other choice depends on the table's size, which nobody knows before listing: the scan
then starts the flat listing itself and uses its first page as a fresh sample. A walk
that is cheaper per directory wins whatever the size; an enumeration of several prefixes
gets a budget (ski rental): the flat listing goes on while it has cost less than the
enumeration would, and only then does the scan switch to the enumeration, for the keys
after the last one listed. A small table therefore costs exactly one flat listing, and no
key is listed twice. Whatever was listed, every key is checked against the filter on its
parsed partition values, so an estimate can only cost requests, never correctness.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from listing.errors import PartitionLayoutError
from listing.expr import (
    And,
    Compare,
    Expr,
    In,
    IsNull,
    Like,
    Or,
    conjuncts,
    is_true,
    knowns,
    may_be_true,
)
from listing.hive import (
    escape_path_name,
    is_hidden,
    is_safe_spelling,
    parse_segment,
    parse_value,
    spell_value,
)
from listing.storage import PAGE_SIZE, Lister, ObjectMeta, Page

MAX_ENUMERATED = 4096  # prefixes one query may enumerate before listing is cheaper anyway
MAX_DATE_RANGE = 1000  # days a date range may span to be enumerated day by day
_END = "\U0010ffff"


@dataclass
class TableProfile:
    """The table's shape as seen in one listed page, for estimating request counts."""

    complete: bool = True  # the page held every key, so one request lists the table
    keys: int = 0
    keys_per_dir: list[float] = field(default_factory=list)  # keys under one depth-d+1 dir
    sample_values: list[list[str]] = field(default_factory=list, repr=False)  # raw, per level

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

    def fanout(self, depth: int) -> float:
        return self.keys_under(depth) / max(self.keys_under(depth + 1), 1.0)


class ProfileBuilder:
    """Accumulates a profile over consecutive pages of one flat listing (key order), so
    the planner's view of the tree sharpens with every page it reads anyway."""

    def __init__(self, root: str, k: int) -> None:
        self.root, self.k = root, k
        self.counts: list[dict[str, int]] = [{} for _ in range(k)]
        self.values: list[list[str]] = [[] for _ in range(k)]
        self.keys = 0
        self.truncated = True

    def add(self, page: Page) -> None:
        self.keys += len(page.files)
        self.truncated = page.truncated
        for meta in page.files:
            rel = meta.path[len(self.root):].split("/")
            for d in range(min(self.k, len(rel) - 1)):
                key = "/".join(rel[: d + 1])
                counts = self.counts[d]
                if key not in counts:
                    counts[key] = 0
                    parsed = parse_segment(rel[d])
                    if parsed:
                        self.values[d].append(parsed[1])
                counts[key] += 1

    def profile(self) -> TableProfile:
        keys_per_dir = []
        for counts in self.counts:
            sizes = list(counts.values())
            if self.truncated and len(sizes) > 1:
                sizes = sizes[:-1]  # the last directory may go on in the next page
            keys_per_dir.append(sum(sizes) / max(len(sizes), 1))
        return TableProfile(not self.truncated, self.keys, keys_per_dir,
                            [list(v) for v in self.values])


def pages(keys: float) -> float:
    return max(1, math.ceil(keys / PAGE_SIZE)) if keys != math.inf else math.inf


# --- plan nodes ---------------------------------------------------------------------------

@dataclass
class Flat:
    prefix: str
    depth: int
    known: dict[str, Any]
    est: float
    start_after: str | None = None
    stop_after: str | None = None

    def describe(self) -> str:
        bounds = ""
        if self.start_after or self.stop_after:
            lo = (self.start_after or "").rsplit("/", 1)[-1]
            hi = (self.stop_after or "").rstrip(_END).rstrip("/").rsplit("/", 1)[-1]
            bounds = f" from {lo or '…'} to {hi or '…'}"
        return f"list {self.prefix!r}{bounds}"


@dataclass
class Enumerate:
    children: list[Node]
    est: float

    def describe(self) -> str:
        return f"enumerate {len(self.children)} prefixes"


@dataclass
class Walk:
    prefix: str
    depth: int
    known: dict[str, Any]
    est: float

    def describe(self) -> str:
        return f"walk {self.prefix!r} level by level"


Node = Flat | Enumerate | Walk


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


class ListingPlanner:
    """Plans and runs the listing for one scan."""

    def __init__(self, lister: Lister, root_prefix: str,
                 partition_cols: list[tuple[str, pa.DataType]], profile: TableProfile | None,
                 predicate: Expr | None, accept: Callable[[ObjectMeta], bool]) -> None:
        self.lister = lister
        self.root = root_prefix
        self.cols = partition_cols
        self.profile = profile
        self.predicate = predicate
        self.accept = accept
        self.metrics = ListingMetrics()
        self._pruned: set[str] = set()
        self._example: str | None = None
        self._after: str | None = None  # keys up to here were listed already
        self.steps: list[str] = []  # what was done, for explain()

    # --- choosing and running -------------------------------------------------------------
    def files(self) -> Iterator[ListedFile]:
        """Every listed file that matches, listing as the plan decides (see module doc)."""
        if self.predicate is None or not self.cols:
            yield from self._run_noted(Flat(self.root, 0, {}, math.nan))
            return
        direct = self._direct()
        if direct is not None:
            yield from self._run_noted(direct)
            return
        if self.profile is not None and self.profile.complete:
            yield from self._run_noted(Flat(self.root, 0, {}, 1))  # one page holds it all
            return
        yield from self._adaptive()

    def _run_noted(self, node: Node) -> Iterator[ListedFile]:
        self.steps += describe(node)
        yield from self.run(node)

    def _direct(self) -> Node | None:
        """The plan when the filter pins the listing to one prefix (or to none): exact
        values down the levels, then a narrowed range. It lists a subset of the table, so
        it needs no estimate of the table's size."""
        prefix, known = self.root, {}
        for depth, (name, type_) in enumerate(self.cols):
            values = self._candidates(depth, known)
            if values == []:
                return Enumerate([], 0)  # contradictory filter: nothing to list
            spelled = spell_value(values[0], type_) if values and len(values) == 1 else None
            if spelled is None:
                if depth == 0:
                    return self._narrow(prefix, depth, known)
                if self.profile is not None:  # deeper levels: the sample knows their size
                    return self._best(prefix, depth, known)
                return self._narrow(prefix, depth, known) or Flat(prefix, depth, known, 1)
            prefix = f"{prefix}{escape_path_name(name)}={spelled}/"
            known = {**known, name: values[0]}
        return Flat(prefix, len(self.cols), known, 1)

    def _adaptive(self) -> Iterator[ListedFile]:
        """List the table flat, re-deciding after every page (see module doc)."""
        builder = ProfileBuilder(self.root, len(self.cols))
        spent, last, alt = 0, None, None
        for page in self.lister.pages(self.root, delimiter=False):
            spent += 1
            builder.add(page)
            for meta in page.files:
                if (listed := self._check(meta)) is not None:
                    yield listed
            last = max((m.path for m in page.files), default=last)
            self.profile = builder.profile()
            if not page.truncated or last is None:
                self.steps.append(f"list {self.root!r}: {spent} pages (flat was cheapest)")
                return
            alt, per_dir_cheaper = self._root_alternative()
            if alt is not None and (per_dir_cheaper or spent >= alt.est):
                break
        assert alt is not None and last is not None
        self.steps.append(f"list {self.root!r}: {spent} pages, then for keys after {last!r}:")
        self.steps += ["  " + line for line in describe(alt)]
        self._after = last
        yield from self.run(alt)

    def _root_alternative(self) -> tuple[Node | None, bool]:
        """The best plan other than listing the whole table, and whether it is cheaper per
        first-level directory (then it wins whatever the table's size)."""
        enumerated = self._enumerate(self.root, 0, {})
        if enumerated is not None:
            return enumerated, False
        if self._prunes_below(0, {}):
            child = self._best(self.root, 1, {})  # for its estimate only
            flat_per_dir = self.profile.keys_per_dir[0] / PAGE_SIZE
            if child.est < flat_per_dir:
                return Walk(self.root, 0, {}, math.nan), True
        return None, False

    def _best(self, prefix: str, depth: int, known: dict[str, Any]) -> Node:
        flat = Flat(prefix, depth, known, pages(self.profile.keys_under(depth)))
        if depth == len(self.cols):
            return flat
        options: list[Node] = []
        enumerated = self._enumerate(prefix, depth, known)
        if enumerated is not None:
            options.append(enumerated)
        narrowed = self._narrow(prefix, depth, known)
        if narrowed is not None:
            options.append(narrowed)
        if self._prunes_below(depth, known):
            child = self._best(prefix, depth + 1, known)  # for its estimate only
            sel = self._selectivity(depth, known)
            fanout = self.profile.fanout(depth)
            options.append(Walk(prefix, depth, known, pages(fanout) + sel * fanout * child.est))
        options.append(flat)
        # ties go to the earlier, more selective option: it never lists more keys
        return min(options, key=lambda n: n.est)

    def _enumerate(self, prefix: str, depth: int, known: dict[str, Any]) -> Enumerate | None:
        """One child plan per value the filter allows at this level, when every value has
        a single on-disk spelling."""
        name, type_ = self.cols[depth]
        values = self._candidates(depth, known)
        if values is None or len(values) > MAX_ENUMERATED:
            return None
        spelled = [spell_value(v, type_) for v in values]
        if any(x is None for x in spelled):
            return None
        children = [self._best(f"{prefix}{escape_path_name(name)}={x}/", depth + 1,
                               {**known, name: v}) for v, x in zip(values, spelled, strict=True)]
        return Enumerate(children, sum(c.est for c in children))

    def _candidates(self, depth: int, known: dict[str, Any]) -> list[Any] | None:
        """Finite values the filter allows for this level's column, or None."""
        name, type_ = self.cols[depth]
        decidable = set(known) | {name}
        sets: list[set] = []
        for c in conjuncts(self.predicate):
            if name in c.columns() and c.columns() <= decidable:
                s = _finite(c, name)
                if s is not None:
                    sets.append(s)
        lo, hi = self._bounds(depth, known)
        if pa.types.is_date(type_) and lo is not None and hi is not None:
            days = (hi - lo).days  # negative: a contradiction, nothing to list
            if days <= MAX_DATE_RANGE:
                sets.append({lo + dt.timedelta(days=i) for i in range(days + 1)})
        if not sets:
            return None
        values = set.intersection(*sets)
        keep = [v for v in values
                if may_be_true(self.predicate, knowns({**known, name: v}))]
        return sorted(keep, key=lambda v: (v is None, v if v is not None else 0))

    def _bounds(self, depth: int, known: dict[str, Any]) -> tuple[Any, Any]:
        """Inclusive [low, high] the filter's range conjuncts allow for this level's column
        (dates made inclusive by a day; other types keep the bound as given)."""
        name, type_ = self.cols[depth]
        lo = hi = None
        for c in conjuncts(self.predicate):
            if not isinstance(c, Compare) or c.column != name or c.value is None:
                continue
            v = c.value
            if pa.types.is_date(type_) and isinstance(v, dt.date):
                if c.op == ">":
                    v = v + dt.timedelta(days=1)
                elif c.op == "<":
                    v = v - dt.timedelta(days=1)
            try:
                if c.op in (">", ">=", "="):
                    lo = v if lo is None else max(lo, v)
                if c.op in ("<", "<=", "="):
                    hi = v if hi is None else min(hi, v)
            except TypeError:
                continue
        return lo, hi

    def _narrow(self, prefix: str, depth: int, known: dict[str, Any]) -> Flat | None:
        """One listing bounded by the common prefix of a range (and key bounds for dates)."""
        name, type_ = self.cols[depth]
        lo, hi = self._bounds(depth, known)
        head = f"{prefix}{escape_path_name(name)}="
        common = ""
        if pa.types.is_string(type_):
            if isinstance(lo, str) and isinstance(hi, str):
                common = _common_prefix(lo, hi)
            for c in conjuncts(self.predicate):
                if isinstance(c, Like) and c.column == name and c.prefix and len(c.prefix) > len(
                        common):
                    common = c.prefix
            common = _safe_head(common)
            if not common:
                return None
            return Flat(head + common, depth, known, pages(self._keys_under(depth) / 2))
        if pa.types.is_date(type_) and (lo is not None or hi is not None):
            if lo is not None and hi is not None:
                if hi < lo:
                    return None  # the enumeration of no dates costs nothing
                common = _common_prefix(lo.isoformat(), hi.isoformat())
                est = pages(((hi - lo).days + 1) * self._keys_under(depth + 1))
            else:
                est = pages(self._keys_under(depth) / 2)
            return Flat(head + common, depth, known, est,
                        start_after=head + lo.isoformat() if lo is not None else None,
                        stop_after=head + hi.isoformat() + "/" + _END if hi is not None else None)
        return None

    def _keys_under(self, depth: int) -> float:
        return self.profile.keys_under(depth) if self.profile is not None else math.inf

    def _prunes_below(self, depth: int, known: dict[str, Any]) -> bool:
        """Whether some conjunct becomes decidable at or below this level."""
        names = {n for n, _ in self.cols[depth:]}
        return any(c.columns() & names and c.columns() <= names | set(known)
                   for c in conjuncts(self.predicate))

    def _selectivity(self, depth: int, known: dict[str, Any]) -> float:
        """Share of a level's children the filter keeps, judged on sampled values.

        The first level's sample covers only its first few values, so it is not trusted.
        """
        sampled = self.profile.sample_values if self.profile is not None else []
        raws = sampled[depth] if depth < len(sampled) else []
        if depth == 0 or len(raws) < 2:
            return 1.0
        name, type_ = self.cols[depth]
        kept = 0
        for raw in raws:
            try:
                value = parse_value(raw, type_, column=name, path=raw)
            except ValueError:
                kept += 1
                continue
            kept += may_be_true(self.predicate, knowns({**known, name: value}))
        return max(kept / len(raws), 1.0 / len(raws))

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
            for page in self.lister.pages(node.prefix, delimiter=False,
                                          start_after=start_after,
                                          stop_after=node.stop_after):
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
        name, type_ = self.cols[node.depth]
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
                parsed = parse_segment(segment)
                path = d.rstrip("/")
                if parsed is None or parsed[0] != name:
                    self._layout_error(path, node.depth, segment)
                value = parse_value(parsed[1], type_, column=name, path=path)
                known = {**node.known, name: value}
                if may_be_true(self.predicate, knowns(known)):
                    yield from self.run(self._best(d, node.depth + 1, known))
                else:
                    self.metrics.partitions_pruned += 1

    def _check(self, meta: ObjectMeta) -> ListedFile | None:
        """Decide one listed key: hidden, pruned, not a data file, or a match."""
        self.metrics.files_listed += 1
        rel = meta.path[len(self.root):]
        segments = rel.split("/")
        if any(is_hidden(s) for s in segments):
            self.metrics.files_skipped_hidden += 1
            return None
        k = len(self.cols)
        if len(segments) <= k:
            raise PartitionLayoutError(
                f"file {meta.path} sits above the partition directories "
                f"({'/'.join(n + '=…' for n, _ in self.cols)}) of {self.root}")
        values: dict[str, Any] = {}
        for depth, (name, type_) in enumerate(self.cols):
            parsed = parse_segment(segments[depth])
            if parsed is None or parsed[0] != name:
                self._layout_error(meta.path, depth, segments[depth])
            values[name] = parse_value(parsed[1], type_, column=name, path=meta.path)
        if self._example is None:
            self._example = meta.path
        if not is_true(self.predicate, values):
            partition = "/".join(segments[:k])
            if partition not in self._pruned:
                self._pruned.add(partition)
                self.metrics.partitions_pruned += 1
            return None
        if not self.accept(meta):
            self.metrics.files_skipped_other += 1
            return None
        self.metrics.files_matched += 1
        return ListedFile(meta, values)

    def _layout_error(self, path: str, depth: int, segment: str) -> None:
        name = self.cols[depth][0]
        other = f"; compare {self._example}" if self._example else ""
        parsed = parse_segment(segment)
        if parsed is None:
            raise PartitionLayoutError(
                f"directory level {depth + 1} under {self.root} mixes k=v and plain names: "
                f"{path} has {segment!r} where {name}=… was expected{other}")
        raise PartitionLayoutError(
            f"paths have different partition column names at level {depth + 1}: {path} has "
            f"{parsed[0]!r} where {name!r} was expected{other}")


def _finite(e: Expr, name: str) -> set | None:
    """Values of ``name`` that can make ``e`` true, when that set is finite and known."""
    if isinstance(e, Compare) and e.column == name and e.op == "=":
        return {e.value}
    if isinstance(e, In) and e.column == name:
        return {v for v in e.values if v is not None}
    if isinstance(e, IsNull) and e.column == name:
        return {None}
    if isinstance(e, Or):
        parts = [_finite(c, name) for c in e.children]
        return None if any(p is None for p in parts) else set().union(*parts)
    if isinstance(e, And):
        parts = [p for p in (_finite(c, name) for c in e.children) if p is not None]
        return set.intersection(*parts) if parts else None
    return None


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def _safe_head(text: str) -> str:
    """Longest prefix of ``text`` that every writer spells without escaping."""
    n = 0
    while n < len(text) and is_safe_spelling(text[n]):
        n += 1
    return text[:n]


def describe(node: Node, indent: str = "") -> list[str]:
    """Readable plan tree for explain(); long enumerations are elided."""
    lines = [f"{indent}{node.describe()} (est. {node.est:g} requests)"]
    if isinstance(node, Enumerate):
        for child in node.children[:5]:
            lines += describe(child, indent + "  ")
        if len(node.children) > 5:
            lines.append(f"{indent}  … {len(node.children) - 5} more")
    return lines


__all__ = ["ListingPlanner", "ProfileBuilder", "TableProfile", "describe"]
