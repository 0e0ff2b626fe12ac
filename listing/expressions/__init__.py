"""Filters: the expression model, its visitors, and the SQL front end.

>>> from listing.expressions import col, bind, to_arrow
>>> bound = bind((col("date") >= "2026-03-01") & col("region").isin(["us"]), schema)
"""

from listing.expressions.model import (
    UNKNOWN,
    And,
    Bound,
    Column,
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
    col,
    conjunction,
    conjuncts,
    like_escape,
    split_by_columns,
)
from listing.expressions.visitors import (
    ANY,
    bind,
    coerce_literal,
    finite_values,
    is_true,
    knowns,
    like_prefix,
    may_be_true,
    outcomes,
    range_bounds,
    to_arrow,
)


def parse_predicate(text: str) -> Expr:
    """A SQL predicate as an :class:`Expr` (:func:`listing.expressions.sql.parse_predicate`).

    sqlglot, its parser, is imported at the first call: a fresh Spark worker opening a
    table whose filters arrive as Spark's (no SQL text) never pays its import."""
    from listing.expressions.sql import parse_predicate as parse

    return parse(text)


__all__ = [
    "ANY", "UNKNOWN", "And", "Bound", "Column", "Compare", "Const", "Domain", "Expr",
    "ExprVisitor", "In", "IsNull", "Known", "Like", "Not", "Or", "ValueRange", "bind",
    "coerce_literal",
    "col", "conjunction", "conjuncts", "finite_values", "is_true", "knowns", "like_escape",
    "like_prefix", "may_be_true", "outcomes", "parse_predicate", "range_bounds",
    "split_by_columns", "to_arrow",
]
