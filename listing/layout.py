"""Tables laid out by a path template (the ``layout`` option), not as ``k=v`` directories.

:class:`TemplateLayout` is the one place a key of such a table is decoded into partition
values, a level's directory name into what it tells of them (a whole value, or some
fields of a date: ``2026/`` bounds ``date`` to that year), and values spelled back into
directory names for the planner's prefixes. The grammar is
:mod:`listing.options.templates`'; docs/layouts.md describes both.

Components: what the levels decoded so far hold, keyed by column (a value column: its raw
text) or by ``(column, field)`` (a date/time field: an int).
"""

from __future__ import annotations

import calendar
import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from listing.errors import OptionError, PartitionValueError
from listing.expressions import (
    Domain,
    Expr,
    Known,
    ValueRange,
    conjuncts,
    finite_values,
    may_be_true,
    range_bounds,
)
from listing.hive import (
    DEFAULT_PARTITION_NAME,
    escape_path_name,
    infer_column_type,
    is_hidden,
    parse_value,
    partition_type,
    spell_value,
    value_text,
)
from listing.options import zone_info
from listing.options.templates import (
    FIELDS,
    NOW,
    ORDER,
    Part,
    Projected,
    Template,
    TemplateColumn,
    parse_layout,
    parse_projection,
)

Components = dict[Any, Any]
_NO_DATE = object()  # fields of a day that does not exist (2026/02/30)
#: values one column may be enumerated over at most (more: its level is listed)
MAX_VALUES = 4096

_PATTERN_TYPES: dict[str, pa.DataType] = {"int": pa.int32(), "date": pa.date32(),
                  "timestamp": pa.timestamp("us", tz="UTC")}


@dataclass(frozen=True)
class _Level:
    parts: tuple[Part, ...]
    regex: re.Pattern[str]
    keys: tuple[Any, ...]  # per group of the regex: a column or (column, field)
    columns: frozenset[str]


def _level(parts: tuple[Part, ...]) -> _Level:
    pattern: list[str] = []
    keys: list[Any] = []
    for i, p in enumerate(parts):
        if p.kind == "literal":
            pattern.append(re.escape(p.text))
        elif p.kind == "field":
            pattern.append(f"(\\d{{{FIELDS[p.field][0]}}})")
            keys.append((p.text, p.field))
        else:
            last = i == len(parts) - 1
            pattern.append("([^/]+)" if last else "([^/]+?)")
            keys.append(p.text)
    return _Level(parts, re.compile("".join(pattern)), tuple(keys),
                  frozenset(p.text for p in parts if p.kind != "literal"))


@dataclass(frozen=True)
class TemplateLayout:
    """Keys below ``root`` (ending in ``/``) laid out as ``template`` says, data files
    directly under its last segment; ``columns`` typed (pattern columns by their pattern,
    timestamps in ``time_zone``); ``projection``: declared values per column; ``whole``:
    the keys ``open()`` sampled were all the table's (one listing page), so listing any
    prefix of it flat costs one request."""

    root: str
    template: Template
    columns: tuple[tuple[str, pa.DataType], ...]
    time_zone: str = "UTC"
    projection: Mapping[str, Projected] = field(default_factory=dict)
    whole: bool = False
    levels: tuple[_Level, ...] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "levels", tuple(_level(p) for p in self.template.levels))

    # --- building --------------------------------------------------------------------
    @classmethod
    def build(cls, root: str, layout: Any, declared: Sequence[tuple[str, Any]] | None = None,
              sample: Sequence[str] = (), time_zone: str = "UTC",
              projection: Any = None, whole: bool = False) -> TemplateLayout:
        """The layout of ``layout`` (text or a parsed template): value columns typed as
        ``declared`` (``partition_cols``) says, else inferred from the ``sample`` keys that
        match as Hive values are; projection checked against the columns."""
        template = parse_layout(layout)
        by_name = {c.name.lower(): c for c in template.columns}
        types: dict[str, pa.DataType] = {}
        for name, type_ in declared or ():
            column = by_name.get(name.lower())
            if column is None:
                raise OptionError(f"partition_cols names {name!r}, which the layout "
                                  f"{template.text!r} does not hold")
            if type_ is not None:
                declared_type = partition_type(type_, name)
                if column.fields and not _same_kind(declared_type,
                                                    _PATTERN_TYPES[column.kind]):
                    raise OptionError(f"partition_cols declares {name!r} a {declared_type}, "
                                      f"but its pattern in the layout makes it a "
                                      f"{_PATTERN_TYPES[column.kind]}")
                types[column.name] = declared_type
        draft = cls(root, template, tuple((c.name, _PATTERN_TYPES.get(c.kind) or pa.string())
                                          for c in template.columns), time_zone)
        raws: dict[str, list[str]] = {c.name: [] for c in template.columns}
        for path in sample:
            found = draft.components(path)
            for key, raw in (found or {}).items():
                if isinstance(key, str):
                    raws[key].append(raw)
        cols = []
        for c in template.columns:
            if c.fields:
                type_ = _PATTERN_TYPES[c.kind]
                if c.kind == "timestamp":
                    type_ = pa.timestamp("us", tz=time_zone)
            else:
                type_ = types.get(c.name) or (infer_column_type(raws[c.name]) if raws[c.name]
                                              else pa.string())
                if pa.types.is_null(type_):
                    type_ = pa.string()
            cols.append((c.name, type_))
        projected = parse_projection(projection) if projection is not None else {}
        layout = cls(root, template, tuple(cols), time_zone, projected, whole)
        for name in projected:
            if name not in dict(cols):
                raise OptionError(f"option layout_projection names {name!r}, which the layout "
                                  f"{template.text!r} does not hold")
            layout.projected_values(name)  # checks the values parse
        return layout

    @property
    def chronological(self) -> bool:
        """Whether keys sort by time: every placeholder is a date/time field and they run
        most significant first from ``yyyy`` (``{date:yyyy/MM/dd}/{hour:HH}``). Fields are
        fixed-width digits and literals constant, so such keys sort as their instants do,
        and a new hour's keys sort after every older one (what streaming's frontier needs).
        A value placeholder (``{region}/…``, ``dt={day}``) makes the order unknown."""
        placeholders = [p for level in self.template.levels for p in level
                        if p.kind != "literal"]
        fields = [p.field if p.kind == "field" else "" for p in placeholders]
        return bool(fields) and tuple(fields) == ORDER[:len(fields)]

    @property
    def projection_text(self) -> str:
        """The projection as the option ``layout_projection`` spells it."""
        return ";".join(str(p) for p in self.projection.values())

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.columns]

    def column(self, name: str) -> TemplateColumn:
        return next(c for c in self.template.columns if c.name == name)

    # --- decoding --------------------------------------------------------------------
    def match(self, depth: int, segment: str) -> Components | None:
        """What directory name ``segment`` at level ``depth`` holds; None: not this
        level's (a literal differs, a field is out of range)."""
        level = self.levels[depth]
        m = level.regex.fullmatch(segment)
        if m is None:
            return None
        out: Components = {}
        for key, text in zip(level.keys, m.groups(), strict=True):
            if isinstance(key, tuple):
                _, low, high = FIELDS[key[1]]
                n = int(text)
                if not low <= n <= high:
                    return None
                out[key] = n
            else:
                out[key] = text
        return out

    def components(self, path: str) -> Components | None:
        """Every level's components of a data file's key, or None when the key does not
        follow the template (deeper or shallower than it, a level that does not match)."""
        segments = path[len(self.root):].split("/")
        if len(segments) != len(self.levels) + 1:
            return None
        out: Components = {}
        for depth, segment in enumerate(segments[:-1]):
            found = self.match(depth, segment)
            if found is None:
                return None
            out.update(found)
        return out

    def hidden(self, path: str) -> bool:
        """Whether a directory on the way or the name is hidden (Spark's rule)."""
        *dirs, name = path[len(self.root):].split("/")
        return is_hidden(name) or any(is_hidden(d, directory=True) for d in dirs)

    def values(self, found: Components, path: str = "") -> dict[str, Any] | None:
        """Typed partition values of complete components; None when a date does not exist
        (``2026/02/30``). A value that breaks a declared type raises, naming it."""
        out: dict[str, Any] = {}
        for name, type_ in self.columns:
            value = self._value(name, type_, found, path)
            if value is _NO_DATE:
                return None
            out[name] = value
        return out

    def _value(self, name: str, type_: pa.DataType, found: Components, path: str) -> Any:
        """Column ``name``'s typed value from complete components (``_NO_DATE``: a day
        that does not exist)."""
        column = self.column(name)
        if not column.fields:
            return parse_value(found[name], type_, column=name, path=path)
        parts = {f: found[(name, f)] for f in column.fields}
        if column.kind == "int":
            return parts[column.fields[0]]
        try:
            day = dt.date(parts["yyyy"], parts["MM"], parts["dd"])
        except ValueError:
            return _NO_DATE
        if column.kind == "date":
            return day
        text = (f"{day.isoformat()} {parts.get('HH', 0):02d}:{parts.get('mm', 0):02d}:"
                f"{parts.get('ss', 0):02d}")
        return parse_value(text, type_, column=name, path=path)

    def decode(self, path: str) -> dict[str, Any] | None:
        """Typed partition values of a data file's key; None: it does not follow the
        template (the run counts it as skipped)."""
        found = self.components(path)
        return None if found is None else self.values(found, path)

    def domains(self, found: Components, path: str = "") -> dict[str, Domain]:
        """What components of the levels decoded so far tell of each column: its value
        when complete, the range a date's leading fields bound it to (``2026/`` is the
        year 2026), nothing otherwise (the column is left out). A value that does not
        parse as its column's type raises, naming ``path``."""
        out: dict[str, Domain] = {}
        for name, type_ in self.columns:
            column = self.column(name)
            if not column.fields:
                if name in found:
                    out[name] = Known(parse_value(found[name], type_, column=name, path=path))
                continue
            have = [f for f in column.fields if (name, f) in found]
            if len(have) == len(column.fields):
                value = self._value(name, type_, found, path)
                # a day that does not exist holds no value: no filter can be true there
                out[name] = (ValueRange(None, None, may_be_null=False, all_null=True)
                             if value is _NO_DATE else Known(value))
                continue
            if column.kind in ("date", "timestamp") and "yyyy" in have:
                span = self._span(name, type_, {f: found[(name, f)] for f in have})
                if span is not None:
                    out[name] = ValueRange(span[0], span[1], may_be_null=False)
        return out

    def _span(self, name: str, type_: pa.DataType, parts: dict[str, int]
              ) -> tuple[Any, Any] | None:
        """[first, last] value of a date/timestamp whose leading fields ``parts`` holds
        (only a run of leading fields bounds it)."""
        lead = []
        for f in ORDER:
            if f not in parts:
                break
            lead.append(f)
        if not lead:
            return None
        y = parts["yyyy"]
        m = parts.get("MM") if "MM" in lead else None
        d = parts.get("dd") if "dd" in lead else None
        try:
            if m is None:
                first, last = dt.date(y, 1, 1), dt.date(y, 12, 31)
            elif d is None:
                first = dt.date(y, m, 1)
                last = dt.date(y, m, calendar.monthrange(y, m)[1])
            else:
                first = last = dt.date(y, m, d)
        except ValueError:
            return None
        if pa.types.is_date(type_):
            return first, last
        zone = zone_info(self.time_zone)
        h = parts.get("HH") if "HH" in lead else None
        start = dt.datetime.combine(first, dt.time(h or 0))
        end = (dt.datetime.combine(last, dt.time(h)) + dt.timedelta(hours=1) if h is not None
               else dt.datetime.combine(last, dt.time()) + dt.timedelta(days=1))
        # a day's or an hour's instants, an hour wider each side for zone shifts
        pad = dt.timedelta(hours=1)
        return ((start.replace(tzinfo=zone) - pad).astimezone(dt.UTC),
                (end.replace(tzinfo=zone) + pad).astimezone(dt.UTC))

    # --- spelling ----------------------------------------------------------------------
    def spell(self, depth: int, found: Components) -> str | None:
        """Level ``depth``'s directory name for components that fill it; None when one
        is missing."""
        out = []
        for p in self.levels[depth].parts:
            if p.kind == "literal":
                out.append(p.text)
                continue
            key = (p.text, p.field) if p.kind == "field" else p.text
            if key not in found:
                return None
            value = found[key]
            out.append(f"{value:0{FIELDS[p.field][0]}d}" if p.kind == "field" else value)
        return "".join(out)

    def fields_of(self, name: str, value: Any) -> Components | None:
        """The components a typed value of column ``name`` spells (None: a value column
        whose value has no single spelling: its level is listed)."""
        column = self.column(name)
        type_ = dict(self.columns)[name]
        if not column.fields:
            raw = spell_value(value, type_)
            if raw is None and isinstance(value, int) and not isinstance(value, bool):
                return None  # 7 may be spelled 07: listed
            return None if raw is None else {name: raw}
        if column.kind == "int":
            return {(name, column.fields[0]): value}
        if isinstance(value, dt.datetime):
            local = value.astimezone(zone_info(self.time_zone)) if value.tzinfo else value
            parts = {"yyyy": local.year, "MM": local.month, "dd": local.day,
                     "HH": local.hour, "mm": local.minute, "ss": local.second}
        else:
            parts = {"yyyy": value.year, "MM": value.month, "dd": value.day}
        return {(name, f): parts[f] for f in column.fields}

    def write_dir(self, values: Mapping[str, Any]) -> str:
        """The folder (below the root, ending in ``/``) a write puts rows of partition
        ``values`` in, one typed value per column: a plain value spelled as Hive spells
        it (escaped, the Hive null ``__HIVE_DEFAULT_PARTITION__``), a date/time in its
        pattern, a timestamp in the table's time zone. A value the template cannot spell
        so that :meth:`decode` reads it back (a null date, an hour of 25, 13:30 in a
        ``HH`` pattern, a value holding the literal text that follows it) is a
        :class:`PartitionValueError` naming the column and the template."""
        found: Components = {}
        for name in self.names:
            value = values[name]
            column = self.column(name)
            if not column.fields:
                raw = value_text(value, self.time_zone)
                found[name] = DEFAULT_PARTITION_NAME if raw is None else escape_path_name(raw)
            elif value is None:
                raise PartitionValueError(
                    f"partition column {name!r} holds a null, which the layout "
                    f"{self.template.text!r} cannot spell (its pattern has no null); "
                    "nothing was written")
            else:
                found.update(self.fields_of(name, value) or {})
        folders = [self.spell(depth, found) for depth in range(len(self.levels))]
        path = "".join(f"{folder}/" for folder in folders if folder is not None)
        back = self.decode(f"{self.root}{path}x") if None not in folders else None
        if back is None or any(not _same_value(values[n], back[n], self.time_zone)
                               for n in self.names):
            shown = {n: values[n] for n in self.names}
            raise PartitionValueError(
                f"partition values {shown!r} cannot be written with the layout "
                f"{self.template.text!r}: the folder {path!r} does not read back as them "
                "(a value its pattern cannot spell, or one holding the template's literal "
                "text); nothing was written")
        return path

    # --- candidates ----------------------------------------------------------------------
    def projected_values(self, name: str, today: dt.datetime | None = None
                         ) -> list[Components] | None:
        """Components of every value the projection declares for ``name`` (None: not
        projected); a value that does not parse as the column's type is an OptionError."""
        spec = self.projection.get(name)
        if spec is None:
            return None
        column = self.column(name)
        type_ = dict(self.columns)[name]
        where = f"option layout_projection: column {name!r}"
        if spec.values:
            out = []
            for text in spec.values:
                if not column.fields:
                    try:
                        parse_value(text, type_, column=name, path="layout_projection")
                    except PartitionValueError as err:
                        raise OptionError(f"{where}: {err}") from None
                    out.append({name: text})
                else:
                    value = self._bound(text, column, type_, where, today)
                    found = self.fields_of(name, value)
                    assert found is not None
                    out.append(found)
            return out
        assert spec.low is not None and spec.high is not None
        low = self._bound(spec.low, column, type_, where, today)
        high = self._bound(spec.high, column, type_, where, today)
        values = _steps(low, high, column, where)
        out = []
        for value in values:
            found = self.fields_of(name, value)
            if found is None:  # an int value column: spelled as written, no padding
                found = {name: str(value)}
            out.append(found)
        return out

    def _bound(self, text: str, column: TemplateColumn, type_: pa.DataType, where: str,
               today: dt.datetime | None) -> Any:
        now = today or dt.datetime.now(dt.UTC)
        if text.upper() == NOW:
            if pa.types.is_date(type_):
                return now.astimezone(zone_info(self.time_zone)).date()
            if pa.types.is_timestamp(type_):
                return now.replace(minute=0, second=0, microsecond=0)
            if column.kind == "int":
                raise OptionError(f"{where}: NOW is for dates and timestamps")
        try:
            if column.kind == "int" or pa.types.is_integer(type_):
                return int(text)
            if pa.types.is_date(type_):
                return dt.date.fromisoformat(text)
            if pa.types.is_timestamp(type_):
                return parse_value(text.replace("T", " "), type_, column=column.name,
                                   path="layout_projection")
        except (ValueError, PartitionValueError):
            pass
        else:
            raise OptionError(f"{where}: a range is for dates, timestamps and integers; "
                              "list the values instead (a|b|c)")
        raise OptionError(f"{where}: {text!r} is not a {type_} (or NOW)")

    def candidates(self, name: str, predicate: Expr | None) -> list[Components] | None:
        """Components of the values of ``name`` a scan with ``predicate`` may need to list,
        when they are finitely many (the filter's equalities, lists and short ranges, the
        projection's values); None: the column's levels are listed."""
        type_ = dict(self.columns)[name]
        column = self.column(name)
        sets: list[set] = []
        for c in conjuncts(predicate):
            if c.columns() == {name}:
                finite = finite_values(c, name)
                if finite is not None:
                    sets.append(finite)
        lo, hi = range_bounds(predicate, name, type_)
        if lo is not None and hi is not None and column.fields:
            try:
                sets.append(set(_steps(lo, hi, column, "", limit=MAX_VALUES)))
            except (OptionError, TypeError):
                pass
        projected = self.projected_values(name)
        out: list[Components] = []
        if projected is not None:  # the declared values, those the filter may keep
            out = [f for f in projected if may_be_true(predicate, self.domains(f))]
        elif not sets:
            return None
        else:
            values = set.intersection(*sets)
            for v in sorted(values, key=lambda v: (v is None, v if v is not None else 0)):
                found = self.fields_of(name, v) if v is not None else None
                if found is None:
                    return None  # a value without one spelling (or null): listed
                out.append(found)
        return out if len(out) <= MAX_VALUES else None


def _same_value(written: Any, read: Any, time_zone: str) -> bool:
    """Whether a value read back from a written folder is the value written (``""`` is the
    Hive null; a naive timestamp is local time in ``time_zone``)."""
    if written == "":
        written = None
    if isinstance(written, dt.datetime) and written.tzinfo is None \
            and isinstance(read, dt.datetime) and read.tzinfo is not None:
        written = written.replace(tzinfo=zone_info(time_zone))
    try:
        return bool(written == read)
    except TypeError:
        return False


def _same_kind(a: pa.DataType, b: pa.DataType) -> bool:
    """Equal types, timestamps whatever their zone."""
    return a == b or (pa.types.is_timestamp(a) and pa.types.is_timestamp(b))


def _steps(low: Any, high: Any, column: TemplateColumn, where: str,
           limit: int = 1_000_000) -> list[Any]:
    """Every value from ``low`` to ``high`` inclusive at the pattern's finest field (a
    day for dates, an hour for ``…/HH`` timestamps, 1 for ints)."""
    if isinstance(low, dt.datetime) or isinstance(high, dt.datetime):
        if not (isinstance(low, dt.datetime) and isinstance(high, dt.datetime)):
            raise TypeError("mixed bounds")
        finest = column.fields[-1] if column.fields else "HH"
        step = {"HH": dt.timedelta(hours=1), "dd": dt.timedelta(days=1)}.get(finest)
        if step is None:
            raise OptionError(f"{where}: a timestamp range steps by hours or days")
        if step == dt.timedelta(hours=1):
            start = low.replace(minute=0, second=0, microsecond=0)
        else:
            start = low.replace(hour=0, minute=0, second=0, microsecond=0)
        count = int((high - start) / step) + 1
        if count > limit:
            raise OptionError(f"{where}: the range holds more than {limit} values")
        return [start + i * step for i in range(max(count, 0))]
    if isinstance(low, dt.date):
        days = (high - low).days
        if days + 1 > limit:
            raise OptionError(f"{where}: the range holds more than {limit} values")
        return [low + dt.timedelta(days=i) for i in range(max(days + 1, 0))]
    if isinstance(low, int) and isinstance(high, int):
        if high - low + 1 > limit:
            raise OptionError(f"{where}: the range holds more than {limit} values")
        return list(range(low, high + 1))
    raise TypeError("no steps")
