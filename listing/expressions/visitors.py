"""What is done with expressions, one visitor per conversion.

- :func:`bind`: resolve names against a schema and coerce literals, once (a :class:`Bound`);
- :func:`outcomes` / :func:`may_be_true` / :func:`is_true`: three-valued evaluation over
  what each column's value may be (:class:`Known` or :class:`ValueRange`), so "this
  directory cannot match" (the listing planner) and "this row group cannot match" (Parquet)
  are the same question;
- :func:`to_arrow`: a pyarrow compute expression for filtering rows;
- :func:`finite_values` / :func:`range_bounds`: the values or the range a filter allows for
  one column, from which the planner builds key prefixes.

Converters *into* the model live with their sources: SQL in :mod:`.sql`, Spark's pushed
filters in ``listing.spark.filters``.
"""

from __future__ import annotations

import datetime as dt
import difflib
import math
import re
from collections.abc import Mapping
from decimal import Decimal
from os.path import commonprefix  # characters, not path segments
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from listing.errors import FilterError
from listing.expressions.model import (
    MAX_DEPTH,
    UNKNOWN,
    And,
    Bound,
    Compare,
    Const,
    Domain,
    Expr,
    ExprVisitor,
    In,
    IsNull,
    Known,
    Like,
    Not,
    Or,
    ValueRange,
    conjuncts,
    flatten,
    parse_number,
)
from listing.options import zone_info

TRUE, FALSE, NULL = True, False, None
ANY: frozenset = frozenset({TRUE, FALSE, NULL})


# --- binding ------------------------------------------------------------------------------

class _Binder(ExprVisitor[Expr]):
    def __init__(self, schema: pa.Schema, time_zone: str | None = None) -> None:
        self.schema = schema
        self.time_zone = time_zone
        self.by_lower: dict[str, pa.Field] = {}
        for f in schema:
            self.by_lower.setdefault(f.name.lower(), f)

    def resolve(self, name: str) -> pa.Field:
        f = self.by_lower.get(name.lower())
        if f is None:
            close = difflib.get_close_matches(name, self.schema.names, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise FilterError(f"unknown column {name!r} in filter (columns: "
                              f"{', '.join(self.schema.names)}){hint}")
        return f

    def visit_const(self, e: Const) -> Expr:
        return e

    def visit_compare(self, e: Compare) -> Expr:
        f = self.resolve(e.column)
        return Compare(f.name, e.op, coerce_literal(e.value, f, self.time_zone))

    def visit_in(self, e: In) -> Expr:
        f = self.resolve(e.column)
        return In(f.name, tuple(coerce_literal(v, f, self.time_zone) for v in e.values))

    def visit_isnull(self, e: IsNull) -> Expr:
        return IsNull(self.resolve(e.column).name)

    def visit_like(self, e: Like) -> Expr:
        f = self.resolve(e.column)
        if not pa.types.is_string(f.type) and not pa.types.is_large_string(f.type):
            raise FilterError(f"LIKE needs a string column; {f.name!r} is {f.type}")
        return Like(f.name, e.pattern)

    def visit_not(self, e: Not) -> Expr:
        return Not(self.visit(e.child))

    def visit_and(self, e: And) -> Expr:
        return And(tuple(self.visit(c) for c in e.children))

    def visit_or(self, e: Or) -> Expr:
        return Or(tuple(self.visit(c) for c in e.children))


def bind(expr: Expr | Bound, schema: pa.Schema, time_zone: str | None = None) -> Bound:
    """Resolve column names (case-insensitively, as Spark does) and coerce literals to each
    column's type, so evaluation compares like with like. Unknown names are errors. A
    predicate already bound to an equal schema is returned as it is. A timestamp literal
    without a zone, for a column with one, is a local time in ``time_zone`` (Spark's
    session time zone), else in the column's zone."""
    if isinstance(expr, Bound):
        if expr.schema.equals(schema):
            return expr
        expr = expr.expr
    if not isinstance(expr, Expr):
        raise FilterError(f"a filter must be a SQL string or an Expr, got {expr!r}")
    expr, depth = flatten(expr)  # chains of AND/OR become n-ary: visitors recurse shallowly
    if depth > MAX_DEPTH:
        raise too_deep(depth)
    try:
        return Bound(_Binder(schema, time_zone).visit(expr), schema)
    except RecursionError:
        raise too_deep(depth) from None


def too_deep(depth: int | None = None) -> FilterError:
    levels = f" ({depth} levels)" if depth is not None else ""
    return FilterError(f"filter is too deeply nested{levels}: at most {MAX_DEPTH} levels of "
                       "NOT/AND/OR/parentheses after flattening chains of AND and of OR")


def coerce_literal(value: Any, field: pa.Field, time_zone: str | None = None) -> Any:
    """Convert a literal to the Python type of ``field`` or raise naming both (a timestamp
    without a zone, for a column with one: a local time in ``time_zone``, by default the
    column's)."""
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
            number = parse_number(value.strip()) if isinstance(value, str) else value
            if not isinstance(number, int | float | Decimal):
                raise ValueError
            if pa.types.is_integer(t) and isinstance(number, int):
                _check_int_range(number, field)
            if isinstance(number, float) and math.isnan(number):
                return math.nan  # one NaN object: sets of values find it (Spark: NaN = NaN)
            return number
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
            if t.tz is not None and ts.tzinfo is None:  # a local time
                ts = ts.replace(tzinfo=zone_info(time_zone or t.tz)).astimezone(dt.UTC)
            if t.tz is None and ts.tzinfo is not None:
                ts = ts.astimezone(dt.UTC).replace(tzinfo=None)
            return ts
        if pa.types.is_time(t):
            if isinstance(value, dt.time):
                return value
            return dt.time.fromisoformat(str(value).strip())
        if pa.types.is_boolean(t):
            if isinstance(value, bool):
                return value
            if str(value).lower() in ("true", "false"):
                return str(value).lower() == "true"
            raise ValueError
    except FilterError:
        raise
    except (ValueError, TypeError, ArithmeticError):
        pass
    else:
        return value
    raise FilterError(f"literal {value!r} does not fit column {field.name!r} of type {t}")


def _check_int_range(value: int, field: pa.Field) -> None:
    """An integer literal the column's type cannot hold is an error, not an overflow deep
    in pyarrow (or a comparison that silently holds for no row)."""
    bits = field.type.bit_width
    lo, hi = (0, 2**bits - 1) if pa.types.is_unsigned_integer(field.type) else (
        -(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if not lo <= value <= hi:
        raise FilterError(f"literal {value} is out of range for column {field.name!r} of type "
                          f"{field.type} ({lo}..{hi})")


_DATEISH = re.compile(r"\d{4}-\d{2}-\d{2}( 00:00(:00(\.0+)?)?)?")


# --- three-valued evaluation --------------------------------------------------------------

class _Evaluator(ExprVisitor[frozenset]):
    """Which SQL truth values a predicate may take; absent columns are unknown."""

    def __init__(self, domains: Mapping[str, Domain]) -> None:
        self.domains = domains

    def visit_const(self, e: Const) -> frozenset:
        return frozenset({e.value})

    def visit_compare(self, e: Compare) -> frozenset:
        d = self.domains.get(e.column, UNKNOWN)
        if e.value is None:
            return frozenset({NULL})
        if isinstance(d, Known):
            return frozenset({NULL if d.value is None else _OPS[e.op](d.value, e.value)})
        return _compare_bounds(e.op, e.value, d)

    def visit_in(self, e: In) -> frozenset:
        non_null = [v for v in e.values if v is not None]
        miss = NULL if len(non_null) < len(e.values) else FALSE
        d = self.domains.get(e.column, UNKNOWN)
        if isinstance(d, Known):
            if d.value is None:
                return frozenset({NULL})
            hit = any(_OPS["="](d.value, v) for v in non_null)
            return frozenset({TRUE if hit else miss})
        out: set = {miss, NULL} if d.may_be_null else {miss}
        if d.all_null:
            return frozenset({NULL})
        if any(_within(v, d) for v in non_null):
            out.add(TRUE)
        return frozenset(out)

    def visit_isnull(self, e: IsNull) -> frozenset:
        d = self.domains.get(e.column, UNKNOWN)
        if isinstance(d, Known):
            return frozenset({d.value is None})
        if d.all_null:
            return frozenset({TRUE})
        return frozenset({TRUE, FALSE}) if d.may_be_null else frozenset({FALSE})

    def visit_like(self, e: Like) -> frozenset:
        d = self.domains.get(e.column, UNKNOWN)
        if isinstance(d, Known):
            if d.value is None:
                return frozenset({NULL})
            return frozenset({bool(_like_regex(e.pattern).fullmatch(str(d.value)))})
        if d.all_null:
            return frozenset({NULL})
        out: set = {TRUE, FALSE}
        prefix = like_prefix(e.pattern)
        if prefix and isinstance(d.low, str) and isinstance(d.high, str):
            # every value in [low, high] shares their common prefix; disjoint prefixes fail
            common = commonprefix([d.low, d.high])
            if not (common.startswith(prefix) or prefix.startswith(common)):
                out.discard(TRUE)
        if d.may_be_null:
            out.add(NULL)
        return frozenset(out)

    def visit_not(self, e: Not) -> frozenset:
        return frozenset(None if o is None else not o for o in self.visit(e.child))

    def visit_and(self, e: And) -> frozenset:
        result = frozenset({TRUE})
        for child in e.children:
            result = _combine(result, self.visit(child), _and3)
        return result

    def visit_or(self, e: Or) -> frozenset:
        result = frozenset({FALSE})
        for child in e.children:
            result = _combine(result, self.visit(child), _or3)
        return result


def outcomes(expr: Expr, domains: Mapping[str, Domain]) -> frozenset:
    """The SQL truth values ``expr`` may take when columns range over ``domains``."""
    return _Evaluator(domains).visit(expr)


def knowns(values: Mapping[str, Any]) -> dict[str, Domain]:
    """Domains for fully known values (None is SQL NULL)."""
    return {k: Known(v) for k, v in values.items()}


def may_be_true(expr: Expr | None, domains: Mapping[str, Domain]) -> bool:
    """False only when no assignment consistent with ``domains`` makes ``expr`` TRUE."""
    return expr is None or TRUE in outcomes(expr, domains)


def is_true(expr: Expr | None, values: Mapping[str, Any]) -> bool:
    """SQL WHERE semantics on fully known values: NULL and FALSE both reject."""
    if expr is None:
        return True
    return outcomes(expr, knowns(values)) == frozenset({TRUE})


def like_prefix(pattern: str) -> str | None:
    """The literal prefix when a LIKE pattern is ``prefix%`` with no other wildcard."""
    m = re.fullmatch(r"([^%_\\]*)%", pattern)
    return m.group(1) if m else None


# --- to pyarrow ---------------------------------------------------------------------------

class _ToArrow(ExprVisitor[pc.Expression]):
    def visit_const(self, e: Const) -> pc.Expression:
        return pc.scalar(e.value)

    def visit_compare(self, e: Compare) -> pc.Expression:
        return _ARROW_OPS[e.op](pc.field(e.column), pc.scalar(e.value))

    def visit_in(self, e: In) -> pc.Expression:
        values = [v for v in e.values if v is not None]
        return pc.field(e.column).isin(pa.array(values) if values else pa.array([], pa.null()))

    def visit_isnull(self, e: IsNull) -> pc.Expression:
        return pc.field(e.column).is_null()

    def visit_like(self, e: Like) -> pc.Expression:
        return pc.match_like(pc.field(e.column), e.pattern)

    def visit_not(self, e: Not) -> pc.Expression:
        return ~self.visit(e.child)

    def visit_and(self, e: And) -> pc.Expression:
        return _balanced([self.visit(c) for c in e.children], lambda a, b: a & b)

    def visit_or(self, e: Or) -> pc.Expression:
        return _balanced([self.visit(c) for c in e.children], lambda a, b: a | b)


def _balanced(parts: list[pc.Expression], op: Any) -> pc.Expression:
    """Combine pairwise, so 1000 ORs nest 10 deep rather than 1000 in pyarrow too."""
    while len(parts) > 1:
        paired = [op(parts[i], parts[i + 1]) for i in range(0, len(parts) - 1, 2)]
        parts = paired + ([parts[-1]] if len(parts) % 2 else [])
    return parts[0]


_TO_ARROW = _ToArrow()


def to_arrow(expr: Expr) -> pc.Expression:
    """A pyarrow compute expression with SQL's WHERE semantics (NULL rejects the row)."""
    return _TO_ARROW.visit(expr)


# --- what a filter allows for one column (for key prefixes) -------------------------------

class _FiniteValues(ExprVisitor["set | None"]):
    """Values of ``column`` that can make the predicate true, when finite and known."""

    def __init__(self, column: str) -> None:
        self.column = column

    def visit_compare(self, e: Compare) -> set | None:
        return {e.value} if e.column == self.column and e.op == "=" else None

    def visit_in(self, e: In) -> set | None:
        return {v for v in e.values if v is not None} if e.column == self.column else None

    def visit_isnull(self, e: IsNull) -> set | None:
        return {None} if e.column == self.column else None

    def visit_or(self, e: Or) -> set | None:
        parts = [self.visit(c) for c in e.children]
        return None if any(p is None for p in parts) else set().union(*parts)  # type: ignore[arg-type]

    def visit_and(self, e: And) -> set | None:
        parts = [p for p in (self.visit(c) for c in e.children) if p is not None]
        return set.intersection(*parts) if parts else None

    def _none(self, e: Expr) -> set | None:
        return None

    visit_const = visit_like = visit_not = _none


def finite_values(expr: Expr, column: str) -> set | None:
    """The finite set of values of ``column`` that can make ``expr`` true, or None."""
    return _FiniteValues(column).visit(expr)


def range_bounds(expr: Expr | None, column: str, type_: pa.DataType) -> tuple[Any, Any]:
    """Inclusive [low, high] the top-level range conjuncts allow for ``column`` (dates made
    inclusive by a day; other types keep the bound as given); None where unbounded."""
    lo = hi = None
    for c in conjuncts(expr):
        if not isinstance(c, Compare) or c.column != column or c.value is None:
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


def _spark_order(op: Any) -> Any:
    """``op`` as Spark compares: NaN equals NaN and sorts above every other number (IEEE
    comparisons with NaN are all false). ``a != a`` holds only for a NaN."""
    def compare(a: Any, b: Any) -> bool:
        if a != a or b != b:
            return bool(op((a != a, 0.0 if a != a else a), (b != b, 0.0 if b != b else b)))
        return bool(op(a, b))
    return compare


_OPS = {
    "=": _spark_order(lambda a, b: a == b),
    "!=": _spark_order(lambda a, b: a != b),
    "<": _spark_order(lambda a, b: a < b),
    "<=": _spark_order(lambda a, b: a <= b),
    ">": _spark_order(lambda a, b: a > b),
    ">=": _spark_order(lambda a, b: a >= b),
}
_ARROW_OPS: dict[str, Any] = {
    "=": lambda f, v: f == v,
    "!=": lambda f, v: f != v,
    "<": lambda f, v: f < v,
    "<=": lambda f, v: f <= v,
    ">": lambda f, v: f > v,
    ">=": lambda f, v: f >= v,
}


def _within(v: Any, d: ValueRange) -> bool:
    le = _OPS["<="]
    return (d.low is None or le(d.low, v)) and (d.high is None or le(v, d.high))


def _compare_bounds(op: str, v: Any, d: ValueRange) -> frozenset:
    """Outcomes of ``x op v`` for some x in [low, high]; unbounded sides are open."""
    if d.all_null:
        return frozenset({NULL})
    lo, hi = d.low, d.high
    out: set = {NULL} if d.may_be_null else set()
    try:
        eq, lt, le = _OPS["="], _OPS["<"], _OPS["<="]
        single = lo is not None and hi is not None and eq(lo, hi) and eq(hi, v)
        can_true = {
            "=": _within(v, d),
            "!=": not single,
            "<": lo is None or lt(lo, v),
            "<=": lo is None or le(lo, v),
            ">": hi is None or lt(v, hi),
            ">=": hi is None or le(v, hi),
        }[op]
        can_false = {
            "=": not single,
            "!=": _within(v, d),
            "<": hi is None or le(v, hi),
            "<=": hi is None or lt(v, hi),
            ">": lo is None or le(lo, v),
            ">=": lo is None or lt(lo, v),
        }[op]
    except TypeError:  # statistics of another type than the literal: know nothing
        return ANY
    if can_true:
        out.add(TRUE)
    if can_false:
        out.add(FALSE)
    return frozenset(out)



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


