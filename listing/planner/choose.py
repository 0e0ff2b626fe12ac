"""Choosing a listing plan: which prefixes to enumerate, narrow, walk or list flat.

The chooser turns the partition filter and what the profile knows of the table into a
plan (:mod:`.nodes`); it sends no request. See :mod:`listing.planner` for the strategy.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from os.path import commonprefix  # characters, not path segments
from typing import Any

import pyarrow as pa

from listing.expressions import (
    Expr,
    Like,
    conjuncts,
    finite_values,
    knowns,
    like_prefix,
    may_be_true,
    range_bounds,
)
from listing.hive import (
    escape_path_name,
    is_safe_spelling,
    parse_segment,
    parse_value,
    spell_value,
)
from listing.planner.nodes import END, Enumerate, Flat, Node, Walk
from listing.planner.profile import TableProfile, pages
from listing.storage.lister import PAGE_SIZE

MAX_ENUMERATED = 4096  # prefixes one query may enumerate before listing is cheaper anyway
MAX_DATE_RANGE = 1000  # days a date range may span to be enumerated day by day


class Chooser:
    """Plans for one partition filter over one table; ``profile`` sharpens as pages arrive."""

    def __init__(self, root: str, partition_cols: list[tuple[str, pa.DataType]],
                 profile: TableProfile | None, predicate: Expr | None, *,
                 by_directory: bool = False) -> None:
        self.root = root
        self.cols = partition_cols
        self.profile = profile
        self.predicate = predicate
        #: the store reads a directory per listing (see :meth:`directory_walk`)
        self.by_directory = by_directory

    def direct(self, prefix: str | None = None, start: int = 0,
               known: dict[str, Any] | None = None) -> Node | None:
        """The plan when the filter pins the listing to one prefix (or to none): exact
        values down the levels, then a narrowed range. It lists a subset of the table, so
        it needs no estimate of the table's size. ``prefix``, ``start``, ``known``: from
        that directory of level ``start`` whose values above are known (default: the
        root); below the root it is never None."""
        prefix = self.root if prefix is None else prefix
        known = {} if known is None else known
        for depth, (name, type_) in enumerate(self.cols[start:], start):
            values = self.candidates(depth, known)
            if values == []:
                return Enumerate([], 0)  # contradictory filter: nothing to list
            spelled = (spell_value(values[0], type_)
                       if values and len(values) == 1 and self.one_spelling(depth) else None)
            if spelled is None:
                if depth == 0:
                    return self.narrow(prefix, depth, known)
                if self.profile is not None:  # deeper levels: the sample knows their size
                    return self.best(prefix, depth, known)
                return self.narrow(prefix, depth, known) or Flat(prefix, depth, known, 1)
            assert values is not None  # spelled: exactly one value
            prefix = f"{prefix}{escape_path_name(name)}={spelled}/"
            known = {**known, name: values[0]}
        return Flat(prefix, len(self.cols), known, 1)

    def below(self, prefix: str, depth: int, known: dict[str, Any]) -> Node:
        """The plan for a directory of level ``depth`` a walk keeps: the cheapest by the
        profile, else (no profile yet) the exact values and ranges of :meth:`direct`. On
        a store that reads directories, a directory that would be listed whole while the
        filter still decides something below it is walked instead."""
        if self.profile is not None and not self.by_directory:
            return self.best(prefix, depth, known)
        node = self.direct(prefix, depth, known)
        assert node is not None  # below the root, direct() always has a plan
        if (self.by_directory and isinstance(node, Flat) and node.prefix == prefix
                and node.depth < len(self.cols) and node.start_after is None
                and node.stop_after is None and self.prunes_below(depth, known)):
            return Walk(prefix, depth, known, math.nan)
        return node

    def directory_walk(self) -> Walk | None:
        """On a store that reads directories (``by_directory``: a local tree, where a
        listing costs the directories and files it reads, not its requests), a walk from
        the root when the filter leaves the first level open but decides a deeper one
        (``hour = 7``): the first level's directories are read for their names only, and
        of the second level only the kept directories are read (``date=X/hour=7/``), where
        the flat listing reads every directory and every file of the table."""
        if not self.by_directory or len(self.cols) < 2 or not self.prunes_below(1, {}):
            return None
        return Walk(self.root, 0, {}, math.nan)

    def root_alternative(self) -> tuple[Node | None, bool]:
        """The best plan other than listing the whole table, and whether it is cheaper per
        first-level directory (then it wins whatever the table's size)."""
        enumerated = self.enumerate(self.root, 0, {})
        if enumerated is not None:
            return enumerated, False
        if self.prunes_below(0, {}):
            assert self.profile is not None  # asked only once a page has been listed
            child = self.best(self.root, 1, {})  # for its estimate only
            flat_per_dir = self.profile.keys_per_dir[0] / PAGE_SIZE
            # invariant: a walk chosen "whatever the size" never costs more requests than
            # listing on. Per-directory cost says so only once the pages listed have seen
            # two first-level directories: with one, the walk's own root listing may be
            # the request that makes it dearer
            seen_dirs = len(self.profile.sample_values[0]) if self.profile.sample_values else 0
            if child.est < flat_per_dir and seen_dirs >= 2:
                return Walk(self.root, 0, {}, math.nan), True
        return None, False

    def flat_to_last_value(self, last_key: str) -> Node | None:
        """The rest of the root's flat listing, from ``last_key`` up to the last first-level
        date the filter keeps, estimated at the density of dates and the keys per date the
        sample shows; None when that cannot be told (not a date level, fewer than two
        sampled dates, no finite set of dates, or the Hive null among them, which sorts
        after every date). It never lists more than listing on to the end would, and it
        lets the planner compare the enumeration with the flat listing's true rest rather
        than with the whole table: dates a page ahead are listed on, dates a year ahead
        enumerated."""
        name, type_ = self.cols[0]
        if self.profile is None or not pa.types.is_date(type_) or not self.one_spelling(0):
            return None
        values = self.candidates(0, {})
        if not values or None in values:
            return None
        try:
            seen = sorted({parse_value(raw, type_, column=name, path=raw)
                           for raw in self.profile.sample_values[0]} - {None})
        except ValueError:
            return None
        last = self._date_at(last_key, 0)
        if last is None or len(seen) < 2:
            return None
        wanted = max(values)
        if wanted < last:
            return Enumerate([], 0)  # every wanted date lies behind: nothing left to list
        per_day = (len(seen) - 1) / max((seen[-1] - seen[0]).days, 1)
        keys = (wanted - last).days * per_day * self.profile.keys_under(1)
        spelled = spell_value(wanted, type_)
        return Flat(self.root, 0, {}, pages(keys + 1),
                    stop_after=f"{self.root}{escape_path_name(name)}={spelled}/{END}")

    def pages_after(self, node: Flat, last_key: str, keys_per_dir: float) -> float:
        """Pages ``node``'s listing holds at most after ``last_key``, when it stops at a
        date (``keys_per_dir`` keys a day, at most one directory a day); NaN otherwise.
        A bound from the pages read, for a listing without an estimate (a table opened
        without a sample): the delimiter page that looks for key ranges is sent only where
        the days left could be split."""
        if node.stop_after is None or node.depth >= len(self.cols):
            return math.nan
        last, stop = self._date_at(last_key, node.depth), self._date_at(node.stop_after,
                                                                        node.depth)
        if last is None or stop is None:
            return math.nan
        return pages(max((stop - last).days + 1, 0) * keys_per_dir)

    def _date_at(self, key: str, depth: int) -> dt.date | None:
        """The date a key's directory of level ``depth`` names, when that level is a date
        spelled one way; None otherwise."""
        name, type_ = self.cols[depth]
        if not pa.types.is_date(type_) or not self.one_spelling(depth):
            return None
        segments = key[len(self.root):].split("/")
        parsed = parse_segment(segments[depth]) if depth < len(segments) - 1 else None
        if parsed is None:
            return None
        try:
            value = parse_value(parsed[1], type_, column=name, path=key)
        except ValueError:
            return None
        return value if isinstance(value, dt.date) else None

    def best(self, prefix: str, depth: int, known: dict[str, Any]) -> Node:
        # only with a profile: direct() checks, root_alternative() and the walks planned
        # here run after the first page
        assert self.profile is not None
        flat = Flat(prefix, depth, known, pages(self.profile.keys_under(depth)))
        if depth == len(self.cols):
            return flat
        options: list[Node] = []
        enumerated = self.enumerate(prefix, depth, known)
        if enumerated is not None:
            options.append(enumerated)
        narrowed = self.narrow(prefix, depth, known)
        if narrowed is not None:
            options.append(narrowed)
        if self.prunes_below(depth, known):
            child = self.best(prefix, depth + 1, known)  # for its estimate only
            sel = self.selectivity(depth, known)
            fanout = self.profile.fanout(depth)
            options.append(Walk(prefix, depth, known, pages(fanout) + sel * fanout * child.est))
        options.append(flat)
        # ties go to the earlier, more selective option: it never lists more keys
        return min(options, key=lambda n: n.est)

    def enumerate(self, prefix: str, depth: int, known: dict[str, Any]) -> Enumerate | None:
        """One child plan per value the filter allows at this level, when every value has
        a single on-disk spelling."""
        name, type_ = self.cols[depth]
        if not self.one_spelling(depth):
            return None
        values = self.candidates(depth, known)
        if values is None or len(values) > MAX_ENUMERATED:
            return None
        spelled = [spell_value(v, type_) for v in values]
        if any(x is None for x in spelled):
            return None
        children = [self.best(f"{prefix}{escape_path_name(name)}={x}/", depth + 1,
                               {**known, name: v}) for v, x in zip(values, spelled, strict=True)]
        return Enumerate(children, sum(c.est for c in children))

    def candidates(self, depth: int, known: dict[str, Any]) -> list[Any] | None:
        """Finite values the filter allows for this level's column, or None."""
        name, type_ = self.cols[depth]
        decidable = set(known) | {name}
        sets: list[set] = []
        for c in conjuncts(self.predicate):
            if name in c.columns() and c.columns() <= decidable:
                s = finite_values(c, name)
                if s is not None:
                    sets.append(s)
        lo, hi = range_bounds(self.predicate, name, type_)
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

    def narrow(self, prefix: str, depth: int, known: dict[str, Any]) -> Flat | None:
        """One listing bounded by the common prefix of a range (and key bounds for dates)."""
        if not self.one_spelling(depth):
            return None  # key order and prefixes follow spellings, not values
        name, type_ = self.cols[depth]
        lo, hi = range_bounds(self.predicate, name, type_)
        head = f"{prefix}{escape_path_name(name)}="
        common = ""
        if pa.types.is_string(type_):
            if isinstance(lo, str) and isinstance(hi, str):
                common = commonprefix([lo, hi])
            for c in conjuncts(self.predicate):
                pattern_head = like_prefix(c.pattern) if isinstance(c, Like) else None
                if isinstance(c, Like) and c.column == name and pattern_head and len(
                        pattern_head) > len(common):
                    common = pattern_head
            common = _safe_head(common)
            if not common:
                return None
            return Flat(head + common, depth, known, pages(self.keys_under(depth) / 2))
        if pa.types.is_date(type_) and (lo is not None or hi is not None):
            if lo is not None and hi is not None:
                if hi < lo:
                    return None  # the enumeration of no dates costs nothing
                common = commonprefix([lo.isoformat(), hi.isoformat()])
                est = pages(((hi - lo).days + 1) * self.keys_under(depth + 1))
            else:
                est = pages(self.keys_under(depth) / 2)
            return Flat(head + common, depth, known, est,
                        start_after=head + lo.isoformat() if lo is not None else None,
                        stop_after=head + hi.isoformat() + "/" + END if hi is not None else None)
        return None

    def one_spelling(self, depth: int) -> bool:
        """Whether values of this level may be spelled into prefixes: the profile shows
        no respelled directory there. Without a profile (a fully declared table before
        its first sampling scan) Spark's spelling is assumed (see :mod:`listing.planner`)."""
        return self.profile is None or self.profile.one_spelling(depth)

    def keys_under(self, depth: int) -> float:
        return self.profile.keys_under(depth) if self.profile is not None else math.inf

    def prunes_below(self, depth: int, known: dict[str, Any]) -> bool:
        """Whether some conjunct becomes decidable at or below this level."""
        names = {n for n, _ in self.cols[depth:]}
        return any(c.columns() & names and c.columns() <= names | set(known)
                   for c in conjuncts(self.predicate))

    def selectivity(self, depth: int, known: dict[str, Any]) -> float:
        """Share of a level's children the filter keeps, judged on sampled values.

        The first level's sample covers only its first few values, so it is not trusted.
        """
        sampled = self.profile.sample_values if self.profile is not None else []
        raws = sampled[depth] if depth < len(sampled) else []
        if depth == 0 or len(raws) < 2:
            return 1.0
        name, type_ = self.cols[depth]
        kept = 0
        for raw, count in Counter(raws).items():  # a level repeats its few values
            try:
                value = parse_value(raw, type_, column=name, path=raw)
            except ValueError:
                kept += count
                continue
            kept += count * may_be_true(self.predicate, knowns({**known, name: value}))
        return max(kept / len(raws), 1.0 / len(raws))



def _safe_head(text: str) -> str:
    """Longest prefix of ``text`` that every writer spells without escaping."""
    n = 0
    while n < len(text) and is_safe_spelling(text[n]):
        n += 1
    return text[:n]
