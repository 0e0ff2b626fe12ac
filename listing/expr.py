"""The filter expression model: column-versus-literal predicates joined by AND/OR/NOT.

One model serves every consumer: the listing planner evaluates it on partial partition
values, the Parquet reader on row-group statistics, readers turn it into a pyarrow
compute expression for rows, and ``explain()`` prints it. Evaluation is three-valued
(SQL TRUE / FALSE / NULL) over *what a value may be*, so "this directory cannot match"
and "this row group cannot match" are the same question.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from listing.errors import FilterError

TRUE, FALSE, NULL = True, False, None
Outcomes = frozenset  # subset of {True, False, None}
ANY: frozenset = frozenset({TRUE, FALSE, NULL})


# --- what a column's value may be ---------------------------------------------------------

@dataclass(frozen=True)
class Known:
    """The value is exactly this (None is SQL NULL)."""

    value: Any


@dataclass(frozen=True)
class Bounds:
    """Some value in [low, high] (either side may be None = unbounded), maybe null."""

    low: Any = None
    high: Any = None
    may_be_null: bool = True
    all_null: bool = False


UNKNOWN = Bounds()
Domain = Known | Bounds


# --- expressions --------------------------------------------------------------------------

class Expr:
    """Base of every predicate. Combine with ``&``, ``|`` and ``~``."""

    def __and__(self, other: Expr) -> Expr:
        return And((self, other))

    def __or__(self, other: Expr) -> Expr:
        return Or((self, other))

    def __invert__(self) -> Expr:
        return Not(self)

    def __bool__(self) -> bool:
        raise TypeError("use & | ~ to combine filters, not and/or/not")

    def columns(self) -> frozenset[str]:
        raise NotImplementedError

    def outcomes(self, domains: Mapping[str, Domain]) -> frozenset:
        """Which SQL truth values the predicate may take; absent columns are unknown."""
        raise NotImplementedError

    def to_arrow(self) -> pc.Expression:
        raise NotImplementedError

    def map_leaves(self, fn: Any) -> Expr:
        return fn(self)


@dataclass(frozen=True, eq=True)
class Const(Expr):
    value: bool

    def columns(self) -> frozenset[str]:
        return frozenset()

    def outcomes(self, domains: Mapping[str, Domain]) -> frozenset:
        return frozenset({self.value})

    def to_arrow(self) -> pc.Expression:
        return pc.scalar(self.value)

    def __str__(self) -> str:
        return "TRUE" if self.value else "FALSE"


@dataclass(frozen=True, eq=True)
class Compare(Expr):
    column: str
    op: str  # one of = != < <= > >=
    value: Any

    def columns(self) -> frozenset[str]:
        return frozenset({self.column})

    def outcomes(self, domains: Mapping[str, Domain]) -> frozenset:
        d = domains.get(self.column, UNKNOWN)
        if self.value is None:
            return frozenset({NULL})
        if isinstance(d, Known):
            return frozenset({NULL if d.value is None else _OPS[self.op](d.value, self.value)})
        return _compare_bounds(self.op, self.value, d)

    def to_arrow(self) -> pc.Expression:
        return _ARROW_OPS[self.op](pc.field(self.column), _scalar(self.value))

    def __str__(self) -> str:
        return f"{self.column} {self.op} {_sql(self.value)}"


@dataclass(frozen=True, eq=True)
class In(Expr):
    column: str
    values: tuple

    def columns(self) -> frozenset[str]:
        return frozenset({self.column})

    def outcomes(self, domains: Mapping[str, Domain]) -> frozenset:
        non_null = [v for v in self.values if v is not None]
        miss = NULL if len(non_null) < len(self.values) else FALSE
        d = domains.get(self.column, UNKNOWN)
        if isinstance(d, Known):
            if d.value is None:
                return frozenset({NULL})
            return frozenset({TRUE if d.value in non_null else miss})
        out: set = {miss, NULL} if d.may_be_null else {miss}
        if d.all_null:
            return frozenset({NULL})
        if any(_within(v, d) for v in non_null):
            out.add(TRUE)
        return frozenset(out)

    def to_arrow(self) -> pc.Expression:
        values = [v for v in self.values if v is not None]
        return pc.field(self.column).isin(pa.array(values) if values else pa.array([], pa.null()))

    def __str__(self) -> str:
        return f"{self.column} IN ({', '.join(_sql(v) for v in self.values)})"


@dataclass(frozen=True, eq=True)
class IsNull(Expr):
    column: str

    def columns(self) -> frozenset[str]:
        return frozenset({self.column})

    def outcomes(self, domains: Mapping[str, Domain]) -> frozenset:
        d = domains.get(self.column, UNKNOWN)
        if isinstance(d, Known):
            return frozenset({d.value is None})
        if d.all_null:
            return frozenset({TRUE})
        return frozenset({TRUE, FALSE}) if d.may_be_null else frozenset({FALSE})

    def to_arrow(self) -> pc.Expression:
        return pc.field(self.column).is_null()

    def __str__(self) -> str:
        return f"{self.column} IS NULL"


@dataclass(frozen=True, eq=True)
class Like(Expr):
    """SQL LIKE with ``%`` and ``_``; a pattern ``'abc%'`` is a prefix test the planner uses."""

    column: str
    pattern: str

    def columns(self) -> frozenset[str]:
        return frozenset({self.column})

    @property
    def prefix(self) -> str | None:
        """The literal prefix when the pattern is ``prefix%`` with no other wildcard."""
        m = re.fullmatch(r"([^%_\\]*)%", self.pattern)
        return m.group(1) if m else None

    def outcomes(self, domains: Mapping[str, Domain]) -> frozenset:
        d = domains.get(self.column, UNKNOWN)
        if isinstance(d, Known):
            if d.value is None:
                return frozenset({NULL})
            return frozenset({bool(_like_regex(self.pattern).fullmatch(str(d.value)))})
        if d.all_null:
            return frozenset({NULL})
        out: set = {TRUE, FALSE}
        prefix = self.prefix
        if prefix and isinstance(d.low, str) and isinstance(d.high, str):
            # every value in [low, high] shares their common prefix; disjoint prefixes fail
            common = _common_prefix(d.low, d.high)
            if not (common.startswith(prefix) or prefix.startswith(common)):
                out.discard(TRUE)
        if d.may_be_null:
            out.add(NULL)
        return frozenset(out)

    def to_arrow(self) -> pc.Expression:
        return pc.match_like(pc.field(self.column), self.pattern)

    def __str__(self) -> str:
        return f"{self.column} LIKE {_sql(self.pattern)}"


@dataclass(frozen=True, eq=True)
class Not(Expr):
    child: Expr

    def columns(self) -> frozenset[str]:
        return self.child.columns()

    def outcomes(self, domains: Mapping[str, Domain]) -> frozenset:
        return frozenset(None if o is None else not o for o in self.child.outcomes(domains))

    def to_arrow(self) -> pc.Expression:
        return ~self.child.to_arrow()

    def map_leaves(self, fn: Any) -> Expr:
        return Not(self.child.map_leaves(fn))

    def __str__(self) -> str:
        return f"NOT ({self.child})"


@dataclass(frozen=True, eq=True)
class And(Expr):
    children: tuple[Expr, ...]

    def columns(self) -> frozenset[str]:
        return frozenset().union(*(c.columns() for c in self.children))

    def outcomes(self, domains: Mapping[str, Domain]) -> frozenset:
        result = frozenset({TRUE})
        for child in self.children:
            result = _combine(result, child.outcomes(domains), _and3)
        return result

    def to_arrow(self) -> pc.Expression:
        out = self.children[0].to_arrow()
        for c in self.children[1:]:
            out = out & c.to_arrow()
        return out

    def map_leaves(self, fn: Any) -> Expr:
        return And(tuple(c.map_leaves(fn) for c in self.children))

    def __str__(self) -> str:
        return " AND ".join(_paren(c) for c in self.children)


@dataclass(frozen=True, eq=True)
class Or(Expr):
    children: tuple[Expr, ...]

    def columns(self) -> frozenset[str]:
        return frozenset().union(*(c.columns() for c in self.children))

    def outcomes(self, domains: Mapping[str, Domain]) -> frozenset:
        result = frozenset({FALSE})
        for child in self.children:
            result = _combine(result, child.outcomes(domains), _or3)
        return result

    def to_arrow(self) -> pc.Expression:
        out = self.children[0].to_arrow()
        for c in self.children[1:]:
            out = out | c.to_arrow()
        return out

    def map_leaves(self, fn: Any) -> Expr:
        return Or(tuple(c.map_leaves(fn) for c in self.children))

    def __str__(self) -> str:
        return " OR ".join(_paren(c) for c in self.children)


# --- the col() builder --------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class Column:
    """``col("date") >= "2026-03-01"`` builds predicates without writing SQL."""

    name: str

    def __eq__(self, other: Any) -> Expr:  # type: ignore[override]
        return IsNull(self.name) if other is None else Compare(self.name, "=", other)

    def __ne__(self, other: Any) -> Expr:  # type: ignore[override]
        return Not(IsNull(self.name)) if other is None else Compare(self.name, "!=", other)

    def __lt__(self, other: Any) -> Expr:
        return Compare(self.name, "<", other)

    def __le__(self, other: Any) -> Expr:
        return Compare(self.name, "<=", other)

    def __gt__(self, other: Any) -> Expr:
        return Compare(self.name, ">", other)

    def __ge__(self, other: Any) -> Expr:
        return Compare(self.name, ">=", other)

    def __hash__(self) -> int:
        return hash(self.name)

    def isin(self, values: Iterable[Any]) -> Expr:
        return In(self.name, tuple(values))

    def between(self, low: Any, high: Any) -> Expr:
        return And((Compare(self.name, ">=", low), Compare(self.name, "<=", high)))

    def is_null(self) -> Expr:
        return IsNull(self.name)

    def is_not_null(self) -> Expr:
        return Not(IsNull(self.name))

    def like(self, pattern: str) -> Expr:
        return Like(self.name, pattern)

    def startswith(self, prefix: str) -> Expr:
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        return Like(self.name, escaped + "%")


def col(name: str) -> Column:
    return Column(name)


# --- structure helpers --------------------------------------------------------------------

def conjuncts(expr: Expr | None) -> list[Expr]:
    """Top-level AND split into its parts (nested ANDs flattened)."""
    if expr is None:
        return []
    if isinstance(expr, And):
        return [p for c in expr.children for p in conjuncts(c)]
    return [expr]


def conjunction(parts: Iterable[Expr]) -> Expr | None:
    parts = list(parts)
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else And(tuple(parts))


def split_by_columns(expr: Expr | None, columns: Iterable[str]) -> tuple[Expr | None, Expr | None]:
    """(conjuncts that touch only ``columns``, the rest): partition vs residual filters."""
    cols = set(columns)
    inside = [c for c in conjuncts(expr) if c.columns() <= cols]
    rest = [c for c in conjuncts(expr) if not c.columns() <= cols]
    return conjunction(inside), conjunction(rest)


def knowns(values: Mapping[str, Any]) -> dict[str, Known]:
    """Domains for fully known values (None is SQL NULL)."""
    return {k: Known(v) for k, v in values.items()}


def may_be_true(expr: Expr | None, domains: Mapping[str, Domain]) -> bool:
    """False only when no assignment consistent with ``domains`` makes ``expr`` TRUE."""
    return expr is None or TRUE in expr.outcomes(domains)


def is_true(expr: Expr | None, values: Mapping[str, Any]) -> bool:
    """SQL WHERE semantics on fully known values: NULL and FALSE both reject."""
    if expr is None:
        return True
    return expr.outcomes(knowns(values)) == frozenset({TRUE})


# --- binding names and literals to a schema ----------------------------------------------

def bind(expr: Expr, schema: pa.Schema) -> Expr:
    """Resolve column names (case-insensitively, as Spark does) and coerce literals to each
    column's type, so evaluation compares like with like. Unknown names are errors."""
    by_lower: dict[str, pa.Field] = {}
    for f in schema:
        by_lower.setdefault(f.name.lower(), f)

    def resolve(name: str) -> pa.Field:
        f = by_lower.get(name.lower())
        if f is None:
            close = difflib.get_close_matches(name, schema.names, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise FilterError(f"unknown column {name!r} in filter (columns: "
                              f"{', '.join(schema.names)}){hint}")
        return f

    def leaf(e: Expr) -> Expr:
        if isinstance(e, Compare):
            f = resolve(e.column)
            return Compare(f.name, e.op, coerce_literal(e.value, f))
        if isinstance(e, In):
            f = resolve(e.column)
            return In(f.name, tuple(coerce_literal(v, f) for v in e.values))
        if isinstance(e, IsNull):
            return IsNull(resolve(e.column).name)
        if isinstance(e, Like):
            f = resolve(e.column)
            if not pa.types.is_string(f.type) and not pa.types.is_large_string(f.type):
                raise FilterError(f"LIKE needs a string column; {f.name!r} is {f.type}")
            return Like(f.name, e.pattern)
        return e

    return expr.map_leaves(leaf)


def coerce_literal(value: Any, field: pa.Field) -> Any:
    """Convert a literal to the Python type of ``field`` or raise naming both."""
    t = field.type
    if value is None:
        return None
    try:
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            if isinstance(value, bool):
                return str(value).lower()
            return value.isoformat() if isinstance(value, dt.date) else str(value)
        if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
            if isinstance(value, bool):
                raise ValueError
            if isinstance(value, str):
                return _number(value.strip())
            if isinstance(value, int | float | Decimal):
                return value
            raise ValueError
        if pa.types.is_date(t):
            if isinstance(value, dt.datetime):
                if value.time() != dt.time(0):
                    raise ValueError
                return value.date()
            if isinstance(value, dt.date):
                return value
            text = str(value).strip()
            if not _DATEISH.fullmatch(text):
                raise ValueError
            return dt.date.fromisoformat(text[:10])
        if pa.types.is_timestamp(t):
            if isinstance(value, dt.datetime):
                ts = value
            elif isinstance(value, dt.date):
                ts = dt.datetime(value.year, value.month, value.day)
            else:
                ts = dt.datetime.fromisoformat(str(value).strip().replace(" ", "T"))
            if t.tz is not None and ts.tzinfo is None:
                ts = ts.replace(tzinfo=dt.UTC)
            if t.tz is None and ts.tzinfo is not None:
                ts = ts.astimezone(dt.UTC).replace(tzinfo=None)
            return ts
        if pa.types.is_boolean(t):
            if isinstance(value, bool):
                return value
            if str(value).lower() in ("true", "false"):
                return str(value).lower() == "true"
            raise ValueError
    except (ValueError, TypeError, ArithmeticError):
        pass
    else:
        return value
    raise FilterError(f"literal {value!r} does not fit column {field.name!r} of type {t}")


_DATEISH = re.compile(r"\d{4}-\d{2}-\d{2}( 00:00(:00(\.0+)?)?)?")


def _number(text: str) -> int | float | Decimal:
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    return float(text)


# --- internals ----------------------------------------------------------------------------

def _and3(a: Any, b: Any) -> Any:
    if a is FALSE or b is FALSE:
        return FALSE
    if a is NULL or b is NULL:
        return NULL
    return TRUE


def _or3(a: Any, b: Any) -> Any:
    if a is TRUE or b is TRUE:
        return TRUE
    if a is NULL or b is NULL:
        return NULL
    return FALSE


def _combine(xs: frozenset, ys: frozenset, op: Any) -> frozenset:
    return frozenset(op(x, y) for x in xs for y in ys)


_OPS = {
    "=": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}
_ARROW_OPS = {
    "=": lambda f, v: f == v,
    "!=": lambda f, v: f != v,
    "<": lambda f, v: f < v,
    "<=": lambda f, v: f <= v,
    ">": lambda f, v: f > v,
    ">=": lambda f, v: f >= v,
}


def _within(v: Any, d: Bounds) -> bool:
    return (d.low is None or d.low <= v) and (d.high is None or v <= d.high)


def _compare_bounds(op: str, v: Any, d: Bounds) -> frozenset:
    """Outcomes of ``x op v`` for some x in [low, high]; unbounded sides are open."""
    if d.all_null:
        return frozenset({NULL})
    lo, hi = d.low, d.high
    out: set = {NULL} if d.may_be_null else set()
    try:
        can_true = {
            "=": _within(v, d),
            "!=": not (lo is not None and lo == hi == v),
            "<": lo is None or lo < v,
            "<=": lo is None or lo <= v,
            ">": hi is None or hi > v,
            ">=": hi is None or hi >= v,
        }[op]
        can_false = {
            "=": not (lo is not None and lo == hi == v),
            "!=": _within(v, d),
            "<": hi is None or hi >= v,
            "<=": hi is None or hi > v,
            ">": lo is None or lo <= v,
            ">=": lo is None or lo < v,
        }[op]
    except TypeError:  # statistics of another type than the literal: know nothing
        return ANY
    if can_true:
        out.add(TRUE)
    if can_false:
        out.add(FALSE)
    return frozenset(out)


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def _like_regex(pattern: str) -> re.Pattern:
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def _scalar(value: Any) -> pc.Expression:
    return pc.scalar(value)


def _sql(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    return str(value)


def _paren(e: Expr) -> str:
    return f"({e})" if isinstance(e, Or | And) else str(e)
