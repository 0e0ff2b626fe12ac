"""Spark's pushed filters (pyspark.sql.datasource) to the expression model."""

from __future__ import annotations

from typing import cast

from pyspark.sql import datasource as sds

from listing.expressions import And, Compare, Expr, In, IsNull, Like, Not, like_escape

_COMPARE = {
    sds.EqualTo: "=", sds.GreaterThan: ">", sds.GreaterThanOrEqual: ">=",
    sds.LessThan: "<", sds.LessThanOrEqual: "<=",
}
_Comparison = (sds.EqualTo | sds.GreaterThan | sds.GreaterThanOrEqual | sds.LessThan
               | sds.LessThanOrEqual)


def from_spark(f: sds.Filter) -> Expr | None:
    """The equivalent Expr, or None for filters on nested fields or of unknown kinds."""
    attribute = getattr(f, "attribute", None)
    if isinstance(f, sds.Not):
        child = from_spark(f.child)
        return None if child is None else Not(child)
    if attribute is None or len(attribute) != 1:
        return None
    name = attribute[0]
    if type(f) in _COMPARE:
        return Compare(name, _COMPARE[type(f)], cast(_Comparison, f).value)
    if isinstance(f, sds.EqualNullSafe):
        if f.value is None:
            return IsNull(name)
        # NULL <=> v is FALSE, not NULL: it matters under NOT
        return And((Compare(name, "=", f.value), Not(IsNull(name))))
    if isinstance(f, sds.In):
        return In(name, tuple(f.value))
    if isinstance(f, sds.IsNull):
        return IsNull(name)
    if isinstance(f, sds.IsNotNull):
        return Not(IsNull(name))
    if isinstance(f, sds.StringStartsWith):
        return Like(name, like_escape(f.value) + "%")
    if isinstance(f, sds.StringEndsWith):
        return Like(name, "%" + like_escape(f.value))
    if isinstance(f, sds.StringContains):
        return Like(name, "%" + like_escape(f.value) + "%")
    return None
