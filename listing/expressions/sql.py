"""Parse a SQL predicate in Spark's dialect into the expression model.

sqlglot does the parsing (it knows Spark's quoting, ``<>``, ``BETWEEN``, ``DATE '…'``
literals); this module only maps its tree onto :mod:`listing.expressions.model` and names what it
cannot map, with the position in the text.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any, cast

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from listing.errors import FilterError
from listing.expressions.model import (
    MAX_DEPTH,
    And,
    Compare,
    Const,
    Expr,
    In,
    IsNull,
    Like,
    Not,
    Or,
    parse_number,
)

_COMPARE: dict[type, str] = {
    exp.EQ: "=", exp.NEQ: "!=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=",
}
_FLIP = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


def parse_predicate(text: str) -> Expr:
    """``"date >= '2026-03-01' AND region IN ('us','eu')"`` → an :class:`Expr`."""
    if not text or not text.strip():
        raise FilterError("empty filter")
    try:
        return _parse(text)
    except RecursionError:
        raise FilterError(f"filter is too deeply nested to parse (at most {MAX_DEPTH} levels "
                          f"of NOT/parentheses): {_short(text)!r}") from None


def _short(text: str) -> str:
    return text if len(text) <= 200 else text[:200] + "…"


def _parse(text: str) -> Expr:
    try:
        tree = sqlglot.parse_one(text, read="spark")
    except ParseError as err:
        first = err.errors[0] if err.errors else {}
        where = f" at line {first.get('line')}, column {first.get('col')}" if first else ""
        near = f" near {first.get('highlight')!r}" if first.get("highlight") else ""
        raise FilterError(f"syntax error in filter {text!r}{where}{near}: "
                          f"{first.get('description', err)}") from None
    except TokenError as err:
        raise FilterError(f"syntax error in filter {text!r}: {err}") from None
    # sqlglot types parse_one's result as its Expr trait; every parsed node is an Expression
    return _Converter(text).convert(cast(exp.Expression, tree))


class _Converter:
    def __init__(self, text: str) -> None:
        self.text = text

    def unsupported(self, node: exp.Expression, why: str = "unsupported expression") -> FilterError:
        sql = node.sql(dialect="spark")
        pos = self.text.find(sql)
        at = f" at position {pos}" if pos >= 0 else ""
        return FilterError(f"{why} {sql!r}{at} in filter {self.text!r}; supported: "
                           "comparisons of a column with a literal, IN, BETWEEN, IS [NOT] NULL, "
                           "LIKE, AND, OR, NOT")

    def convert(self, node: exp.Expression) -> Expr:
        if type(node) in _COMPARE:
            return self.compare(node, _COMPARE[type(node)])
        handler = _HANDLERS.get(type(node))
        if handler is None:
            raise self.unsupported(node)
        return handler(self, node)

    def paren(self, node: exp.Paren) -> Expr:
        return self.convert(node.this)

    def and_(self, node: exp.And) -> Expr:
        return And(tuple(self.convert(c) for c in _chain(node, exp.And)))

    def or_(self, node: exp.Or) -> Expr:
        return Or(tuple(self.convert(c) for c in _chain(node, exp.Or)))

    def not_(self, node: exp.Not) -> Expr:
        return Not(self.convert(node.this))

    def boolean(self, node: exp.Boolean) -> Expr:
        return Const(bool(node.this))

    def in_(self, node: exp.In) -> Expr:
        column = self.column(node.this, node)
        if node.args.get("query") or not node.expressions:
            raise self.unsupported(node, "IN needs a list of literals:")
        return In(column, tuple(self.literal(v) for v in node.expressions))

    def between(self, node: exp.Between) -> Expr:
        column = self.column(node.this, node)
        low, high = self.literal(node.args["low"]), self.literal(node.args["high"])
        return And((Compare(column, ">=", low), Compare(column, "<=", high)))

    def is_(self, node: exp.Is) -> Expr:
        if not isinstance(node.expression, exp.Null):
            raise self.unsupported(node)
        return IsNull(self.column(node.this, node))

    def like(self, node: exp.Like) -> Expr:
        pattern = self.literal(node.expression)
        if not isinstance(pattern, str):
            raise self.unsupported(node, "LIKE needs a string pattern:")
        like = Like(self.column(node.this, node), pattern)
        return Not(like) if node.args.get("negate") else like

    def compare(self, node: exp.Expression, op: str) -> Expr:
        left, right = node.this, node.expression
        if _is_column(left) and not _is_column(right):
            column, value = self.column(left, node), self.literal(right)
        elif _is_column(right) and not _is_column(left):
            column, value, op = self.column(right, node), self.literal(left), _FLIP[op]
        else:
            raise self.unsupported(node, "a comparison needs one column and one literal:")
        return Compare(column, op, value)

    def column(self, node: exp.Expression, parent: exp.Expression) -> str:
        if not _is_column(node):
            raise self.unsupported(parent, "expected a column on one side of")
        return node.name

    def literal(self, node: exp.Expression) -> Any:
        if isinstance(node, exp.Paren):
            return self.literal(node.this)
        if isinstance(node, exp.Null):
            return None
        if isinstance(node, exp.Boolean):
            return bool(node.this)
        if isinstance(node, exp.Neg):
            value = self.literal(node.this)
            if isinstance(value, int | float | Decimal) and not isinstance(value, bool):
                return -value
            raise self.unsupported(node, "cannot negate")
        if isinstance(node, exp.Literal):
            if node.is_string:
                return node.this
            return parse_number(node.this)
        if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal):
            target = node.to.this
            text = node.this.this
            try:
                if target == exp.DataType.Type.DATE:
                    return dt.date.fromisoformat(text.strip())
                if target in (exp.DataType.Type.TIMESTAMP, exp.DataType.Type.TIMESTAMPTZ,
                              exp.DataType.Type.TIMESTAMPNTZ, exp.DataType.Type.DATETIME):
                    return dt.datetime.fromisoformat(text.strip().replace(" ", "T"))
            except ValueError:
                raise self.unsupported(node, "malformed date/time literal") from None
        raise self.unsupported(node, "expected a literal, got")


_HANDLERS: dict[type, Any] = {
    exp.Paren: _Converter.paren, exp.And: _Converter.and_, exp.Or: _Converter.or_,
    exp.Not: _Converter.not_, exp.Boolean: _Converter.boolean, exp.In: _Converter.in_,
    exp.Between: _Converter.between, exp.Is: _Converter.is_, exp.Like: _Converter.like,
}


def _chain(node: exp.Expression, kind: type[exp.Expression]) -> list[exp.Expression]:
    """The operands of a chain of binary ``kind`` nodes (``a OR b OR c`` parses as
    ``(a OR b) OR c``), through parentheses, in order; iterative, so a chain of 1000 ORs
    becomes one n-ary node instead of 1000 nested ones."""
    out: list[exp.Expression] = []
    stack = [node]
    while stack:
        n = stack.pop()
        inner = n
        while isinstance(inner, exp.Paren):
            inner = inner.this
        if type(inner) is kind:
            stack.append(inner.expression)
            stack.append(inner.this)
        else:
            out.append(n)
    return out


def _is_column(node: exp.Expression) -> bool:
    return isinstance(node, exp.Column) and not node.table
