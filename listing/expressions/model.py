"""The filter expression model: column-versus-literal predicates joined by AND/OR/NOT.

Nodes are plain frozen values. What is done *with* them (evaluate, convert to pyarrow,
bind to a schema, find the values a column may take) lives in visitors
(:mod:`listing.expressions.visitors`), one class per conversion, so a new node kind
fails loudly in every visitor that does not know it rather than silently somewhere.

An expression is *unbound* as written (by SQL or ``col()``): names as the user spelt
them, literals as given. :func:`~listing.expressions.visitors.bind` resolves it against a
schema once and returns a :class:`Bound`, which is what planning and reading accept.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import pyarrow as pa

T = TypeVar("T")


# --- what a column's value may be ---------------------------------------------------------

@dataclass(frozen=True)
class Known:
    """The value is exactly this (None is SQL NULL)."""

    value: Any


@dataclass(frozen=True)
class ValueRange:
    """Some value in [low, high] (either side may be None = unbounded), maybe null: what a
    column may hold (row-group statistics, a level not yet listed). Not to be confused
    with :class:`Bound`, a predicate resolved against a schema."""

    low: Any = None
    high: Any = None
    may_be_null: bool = True
    all_null: bool = False


UNKNOWN = ValueRange()
Domain = Known | ValueRange


# --- nodes --------------------------------------------------------------------------------

class Expr:
    """Base of every predicate. Combine with ``&``, ``|`` and ``~``."""

    def __and__(self, other: Expr) -> Expr:
        return And(_spliced(And, (self, other)))

    def __or__(self, other: Expr) -> Expr:
        return Or(_spliced(Or, (self, other)))

    def __invert__(self) -> Expr:
        return Not(self)

    def __bool__(self) -> bool:
        raise TypeError("use & | ~ to combine filters, not and/or/not")

    def columns(self) -> frozenset[str]:
        """Names of the columns the predicate reads."""
        return _COLUMNS.visit(self)

    def __str__(self) -> str:
        return _SQL.visit(self)


@dataclass(frozen=True, eq=True)
class Const(Expr):
    value: bool



@dataclass(frozen=True, eq=True)
class Compare(Expr):
    column: str
    op: str  # one of = != < <= > >=
    value: Any



@dataclass(frozen=True, eq=True)
class In(Expr):
    column: str
    values: tuple



@dataclass(frozen=True, eq=True)
class IsNull(Expr):
    column: str



@dataclass(frozen=True, eq=True)
class Like(Expr):
    """SQL LIKE with ``%`` and ``_``; a pattern ``'abc%'`` is a prefix test the planner uses."""

    column: str
    pattern: str



@dataclass(frozen=True, eq=True)
class Not(Expr):
    child: Expr



@dataclass(frozen=True, eq=True)
class And(Expr):
    children: tuple[Expr, ...]



@dataclass(frozen=True, eq=True)
class Or(Expr):
    children: tuple[Expr, ...]



@dataclass(frozen=True)
class Bound:
    """A predicate resolved against ``schema``: column names as the schema spells them,
    literals of each column's type. Made only by ``bind``; planning and reading take it
    as it is, so a filter is bound once however many layers it crosses."""

    expr: Expr
    schema: pa.Schema

    def __str__(self) -> str:
        return str(self.expr)


# --- visiting -----------------------------------------------------------------------------

class ExprVisitor(Generic[T]):
    """Dispatch on the node's class to ``visit_<class name in lower case>``."""

    def visit(self, e: Expr) -> T:
        method = getattr(self, "visit_" + type(e).__name__.lower(), None)
        if method is None:
            raise TypeError(f"{type(self).__name__} cannot handle {type(e).__name__}: {e!r}")
        return method(e)


class _Columns(ExprVisitor[frozenset[str]]):
    def visit_const(self, e: Const) -> frozenset[str]:
        return frozenset()

    def _leaf(self, e: Compare | In | IsNull | Like) -> frozenset[str]:
        return frozenset({e.column})

    visit_compare = visit_in = visit_isnull = visit_like = _leaf

    def visit_not(self, e: Not) -> frozenset[str]:
        return self.visit(e.child)

    def _many(self, e: And | Or) -> frozenset[str]:
        return frozenset().union(*(self.visit(c) for c in e.children))

    visit_and = visit_or = _many


class _Sql(ExprVisitor[str]):
    """Spark SQL text of a predicate, for explain() and error messages."""

    def visit_const(self, e: Const) -> str:
        return "TRUE" if e.value else "FALSE"

    def visit_compare(self, e: Compare) -> str:
        return f"{e.column} {e.op} {sql_literal(e.value)}"

    def visit_in(self, e: In) -> str:
        return f"{e.column} IN ({', '.join(sql_literal(v) for v in e.values)})"

    def visit_isnull(self, e: IsNull) -> str:
        return f"{e.column} IS NULL"

    def visit_like(self, e: Like) -> str:
        return f"{e.column} LIKE {sql_literal(e.pattern)}"

    def visit_not(self, e: Not) -> str:
        return f"NOT ({self.visit(e.child)})"

    def visit_and(self, e: And) -> str:
        return " AND ".join(self._paren(c) for c in e.children)

    def visit_or(self, e: Or) -> str:
        return " OR ".join(self._paren(c) for c in e.children)

    def _paren(self, e: Expr) -> str:
        return f"({self.visit(e)})" if isinstance(e, Or | And) else self.visit(e)


_COLUMNS = _Columns()
_SQL = _Sql()


def sql_literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    return str(value)


def parse_number(text: str) -> int | float:
    """A number's text as a value: ``int`` when it is digits with an optional sign, else
    ``float`` (``1e3``, ``1.5``, ``nan``); :class:`ValueError` when it is neither. The one
    reading of a number for SQL literals and for literals coerced to a numeric column."""
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    return float(text)


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
        return Like(self.name, like_escape(prefix) + "%")


def col(name: str) -> Column:
    return Column(name)


def like_escape(text: str) -> str:
    """``text`` as a literal inside a LIKE pattern."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


# --- structure ----------------------------------------------------------------------------

def conjuncts(expr: Expr | None) -> list[Expr]:
    """Top-level AND split into its parts (nested ANDs flattened)."""
    if expr is None:
        return []
    out: list[Expr] = []
    stack = [expr]
    while stack:  # iterative: a chain of binary ANDs may be deep
        e = stack.pop()
        if isinstance(e, And):
            stack.extend(reversed(e.children))
        else:
            out.append(e)
    return out


MAX_DEPTH = 200  # nesting levels a filter may have after flattening (visitors recurse)


def _spliced(kind: type[And] | type[Or], items: Iterable[Expr]) -> tuple[Expr, ...]:
    """``items`` with the children of any ``kind`` node among them spliced in: ``a | b | c``
    is one n-ary Or, not a chain as deep as it is long."""
    out: list[Expr] = []
    for item in items:
        if type(item) is kind:
            out.extend(item.children)
        else:
            out.append(item)
    return tuple(out)


def flatten(expr: Expr) -> tuple[Expr, int]:
    """``expr`` with every AND inside an AND (and OR inside an OR) merged into one n-ary
    node, and the nesting depth of the result; iterative, so any depth is fine here."""
    # post-order over an explicit stack: (node, children done?)
    stack: list[tuple[Expr, bool]] = [(expr, False)]
    done: list[tuple[Expr, int]] = []  # rebuilt nodes with their depth
    while stack:
        node, expanded = stack.pop()
        kids: tuple[Expr, ...] = ()
        if isinstance(node, And | Or):
            kids = node.children
        elif isinstance(node, Not):
            kids = (node.child,)
        if not expanded and kids:
            stack.append((node, True))
            stack.extend((k, False) for k in reversed(kids))
            continue
        if not kids:
            done.append((node, 1))
            continue
        rebuilt = done[len(done) - len(kids):]
        del done[len(done) - len(kids):]
        depth = 1 + max(d for _, d in rebuilt)
        if isinstance(node, Not):
            done.append((Not(rebuilt[0][0]), depth))
            continue
        kind = And if isinstance(node, And) else Or
        children: list[Expr] = []
        depth = 1
        for child, d in rebuilt:
            if isinstance(child, kind) and type(child) is kind:  # flat: children move up
                children.extend(child.children)
                depth = max(depth, d)
            else:
                children.append(child)
                depth = max(depth, d + 1)
        done.append((kind(tuple(children)), depth))
    return done[0]


def conjunction(parts: Iterable[Expr]) -> Expr | None:
    items = list(parts)
    if not items:
        return None
    return items[0] if len(items) == 1 else And(tuple(items))


def split_by_columns(expr: Expr | None, columns: Iterable[str]) -> tuple[Expr | None, Expr | None]:
    """(conjuncts that touch only ``columns``, the rest): partition vs residual filters."""
    cols = set(columns)
    inside = [c for c in conjuncts(expr) if c.columns() <= cols]
    rest = [c for c in conjuncts(expr) if not c.columns() <= cols]
    return conjunction(inside), conjunction(rest)
