"""Expressions as JSON-able data, so a filter can travel as an option string.

Only node kinds and typed literals are encoded; decoding builds model nodes and nothing
else, so a crafted string can at worst be a malformed filter, never code.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from listing.errors import FilterError
from listing.expressions.model import (
    And,
    Compare,
    Const,
    Expr,
    ExprVisitor,
    In,
    IsNull,
    Like,
    Not,
    Or,
)

_OPS = {"=", "!=", "<", "<=", ">", ">="}


def _literal(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return {"float": repr(value)}
    if isinstance(value, Decimal):
        return {"decimal": str(value)}
    if isinstance(value, dt.datetime):
        return {"timestamp": value.isoformat()}
    if isinstance(value, dt.date):
        return {"date": value.isoformat()}
    raise FilterError(f"literal {value!r} of type {type(value).__name__} cannot be encoded")


def _value(data: Any) -> Any:
    if data is None or isinstance(data, bool | int | str):
        return data
    if isinstance(data, dict) and len(data) == 1:
        (kind, text), = data.items()
        decoders: dict[str, Callable[[str], Any]] = {
            "float": float, "decimal": Decimal, "timestamp": dt.datetime.fromisoformat,
            "date": dt.date.fromisoformat}
        decode = decoders.get(kind)
        if decode is not None and isinstance(text, str):
            return decode(text)
    raise ValueError(f"not a literal: {data!r}")


class _Encoder(ExprVisitor[dict]):
    def visit_const(self, e: Const) -> dict:
        return {"const": e.value}

    def visit_compare(self, e: Compare) -> dict:
        return {"compare": [e.column, e.op, _literal(e.value)]}

    def visit_in(self, e: In) -> dict:
        return {"in": [e.column, [_literal(v) for v in e.values]]}

    def visit_isnull(self, e: IsNull) -> dict:
        return {"is_null": e.column}

    def visit_like(self, e: Like) -> dict:
        return {"like": [e.column, e.pattern]}

    def visit_not(self, e: Not) -> dict:
        return {"not": self.visit(e.child)}

    def visit_and(self, e: And) -> dict:
        return {"and": [self.visit(c) for c in e.children]}

    def visit_or(self, e: Or) -> dict:
        return {"or": [self.visit(c) for c in e.children]}


def to_json(expr: Expr) -> dict:
    """A JSON-able dict for ``expr``."""
    return _Encoder().visit(expr)


def from_json(data: Any) -> Expr:
    """The expression ``data`` encodes; a malformed one raises :class:`FilterError`."""
    try:
        return _decode(data)
    except (ValueError, TypeError, KeyError) as err:
        raise FilterError(f"malformed encoded filter {data!r}: {err}") from None
    except RecursionError:
        raise FilterError("encoded filter is too deeply nested") from None


def _decode(data: Any) -> Expr:
    if not isinstance(data, dict) or len(data) != 1:
        raise ValueError("expected one node")
    (kind, arg), = data.items()
    if kind == "const" and isinstance(arg, bool):
        return Const(arg)
    if kind == "compare" and arg[1] in _OPS:
        return Compare(str(arg[0]), arg[1], _value(arg[2]))
    if kind == "in":
        return In(str(arg[0]), tuple(_value(v) for v in arg[1]))
    if kind == "is_null":
        return IsNull(str(arg))
    if kind == "like":
        return Like(str(arg[0]), str(arg[1]))
    if kind == "not":
        return Not(_decode(arg))
    if kind in ("and", "or") and isinstance(arg, list) and arg:
        children = tuple(_decode(c) for c in arg)
        return And(children) if kind == "and" else Or(children)
    raise ValueError(f"unknown node {kind!r}")
