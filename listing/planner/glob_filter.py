"""A glob in the table URL as a partition filter the planner can prune with.

``s3://lake/t/date=2026-03-1*`` reads the directories ``date=2026-03-10`` … ``19``. The
exact test stays the URL glob itself, matched on every listed key (:class:`FileFilter`);
this module derives from its ``col=pattern`` segments a filter on the partition values that
every matching key satisfies (``date >= 2026-03-10 AND date <= 2026-03-19``), so the
planner lists what the equivalent ``where`` lists: a literal value is an equality, ``{a,b}``
of literals an ``IN``, and the literal head before a wildcard (``*``, ``?``, ``[..]``) a range
(ISO dates) or a ``LIKE 'head%'`` (strings). What the filter cannot say (the rest of the
pattern, a head on another type) the URL glob alone decides.
"""

from __future__ import annotations

import calendar
import datetime as dt
import itertools
import re
from typing import Any

import pyarrow as pa

from listing.expressions import (
    And,
    Compare,
    Expr,
    In,
    IsNull,
    Like,
    Or,
    conjunction,
    like_escape,
)
from listing.hive import DEFAULT_PARTITION_NAME, parse_segment, parse_value
from listing.options.registry import GLOB_ESCAPE, GLOB_WILDCARDS
from listing.url import TableUrl

#: where a segment's literal text ends: a wildcard, or an escape (``\\*`` is a literal
#: ``*``, but the text is no longer spelled as it reads)
_NOT_LITERAL = GLOB_WILDCARDS + GLOB_ESCAPE
_ISO = re.compile(r"\d{4}-\d{2}-\d{2}")
MAX_ALTERNATIVES = 4096  # {a,b}… expansions of one segment turned into values


def glob_partition_filter(url: TableUrl, cols: list[tuple[str, pa.DataType]]) -> Expr | None:
    """The filter on partition values that every key the URL glob reads satisfies (None:
    no glob, or none of its segments says anything about a partition column)."""
    segments = url.pattern_segments or ()
    parts: list[Expr] = []
    for segment, (name, type_) in zip(segments, cols, strict=False):
        column, sep, pattern = segment.partition("=")
        if not sep or any(c in column for c in _NOT_LITERAL):
            continue
        parsed = parse_segment(f"{column}=")
        if parsed is None or parsed[0].lower() != name.lower():
            continue  # another column's name at this level: the URL glob matches nothing
        implied = _value_filter(name, type_, pattern)
        if implied is not None:
            parts.append(implied)
    return conjunction(parts)


def folders_partition_filter(url: TableUrl,
                             cols: list[tuple[str, pa.DataType]]) -> Expr | None:
    """The filter on partition values that every key below one of the URL's ``folders``
    satisfies (None: no folders): per folder, its ``col=value`` segments' values (a last
    segment without ``=`` is a file), OR'd over the folders; the folders' key test itself
    stays :meth:`TableUrl.matches_glob`."""
    if url.folders is None:
        return None
    alternatives: list[Expr] = []
    for folder in url.folders:
        parts: list[Expr] = []
        for segment, (name, type_) in zip(folder.split("/") if folder else [], cols,
                                          strict=False):
            parsed = parse_segment(segment)
            if parsed is None or parsed[0].lower() != name.lower():
                break  # a file, or not this level's column: the key test decides
            try:
                value = parse_value(parsed[1], type_, column=name, path=folder)
            except ValueError:
                parts.append(In(name, ()))  # never this column's spelling: no key has it
                break
            parts.append(IsNull(name) if value is None else In(name, (value,)))
        if not parts:
            return None  # a folder the filter cannot bound: the key test alone decides
        alternatives.append(parts[0] if len(parts) == 1 else And(tuple(parts)))
    return alternatives[0] if len(alternatives) == 1 else Or(tuple(alternatives))


def _value_filter(name: str, type_: pa.DataType, pattern: str) -> Expr | None:
    alternatives = _expand(pattern)
    if alternatives is None:
        return None
    values: list[Any] = []
    ranges: list[Expr] = []
    for alt in alternatives:
        if not any(c in alt for c in _NOT_LITERAL):
            try:
                values.append(parse_value(alt, type_, column=name, path=alt))
            except ValueError:
                continue  # never this column's spelling: no key has it
            continue
        head = alt[:min(alt.find(c) for c in _NOT_LITERAL if c in alt)]
        prefix = _prefix_filter(name, type_, head)
        if prefix is None:
            return None  # an alternative this filter cannot bound: the URL glob decides
        ranges.append(prefix)
    nulls = [IsNull(name)] if None in values else []
    known = tuple(sorted({v for v in values if v is not None}, key=repr))
    options: list[Expr] = [*nulls, *([In(name, known)] if known else []), *ranges]
    if not options:
        return In(name, ())  # no alternative can be a value of the column
    return options[0] if len(options) == 1 else Or(tuple(options))


def _prefix_filter(name: str, type_: pa.DataType, head: str) -> Expr | None:
    """What values spelled ``head…`` satisfy; None when that says nothing."""
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        literal = head.split("%", 1)[0]  # before any escape: spelled as it reads
        if DEFAULT_PARTITION_NAME.startswith(head):
            return None  # may be the null's spelling
        return Like(name, like_escape(literal) + "%") if literal else None
    if pa.types.is_date(type_):
        bounds = _date_bounds(head)
        if bounds is None:
            return None
        low, high = bounds
        return Compare(name, ">=", low) & Compare(name, "<=", high)
    return None


def _date_bounds(head: str) -> tuple[dt.date, dt.date] | None:
    """The first and last ISO date (``yyyy-MM-dd``, the only date spelling) starting with
    ``head``; None when none does or ``head`` says nothing. ISO text sorts as its dates."""
    low_text = head + "0000-00-00"[len(head):]
    high_text = head + "9999-19-39"[len(head):]
    if not head or len(head) > 10 or not (_ISO.fullmatch(low_text) and _ISO.fullmatch(high_text)):
        return None
    y, m, d = (int(x) for x in low_text.split("-"))
    if m > 12:
        return None
    low = _date(y, max(m, 1), 1) if m == 0 or d == 0 else _date(y, m, 1)
    if low is None:
        return None
    if m and d:
        last = calendar.monthrange(y, m)[1]
        low = low.replace(day=d) if d <= last else low + dt.timedelta(days=last)
    y, m, d = (int(x) for x in high_text.split("-"))
    if m == 0:
        return None
    m = min(m, 12)
    high = _date(y, m, min(d, calendar.monthrange(y, m)[1])) if d else None
    if high is None:
        return None
    both = (low, high)
    if not all(x.isoformat().startswith(head) for x in both) or low > high:
        return None
    return both


def _date(y: int, m: int, d: int) -> dt.date | None:
    try:
        return dt.date(y, m, d)
    except ValueError:
        return None


def _expand(pattern: str) -> list[str] | None:
    """``pattern`` with its ``{a,b}`` alternatives spelled out (nesting included); None when
    there are too many or a brace is escaped."""
    if "\\" in pattern:
        return None
    out = [pattern]
    while any("{" in p for p in out):
        nxt: list[str] = []
        for p in out:
            start = p.find("{")
            if start < 0:
                nxt.append(p)
                continue
            depth, end, cuts = 0, -1, []
            for i in range(start, len(p)):
                if p[i] == "{":
                    depth += 1
                elif p[i] == "}":
                    depth -= 1
                    if depth == 0:
                        end = i
                        break
                elif p[i] == "," and depth == 1:
                    cuts.append(i)
            if end < 0:
                return None
            bounds = [start, *cuts, end]
            for a, b in itertools.pairwise(bounds):
                nxt.append(p[:start] + p[a + 1:b] + p[end + 1:])
        out = nxt
        if len(out) > MAX_ALTERNATIVES:
            return None
    return out
