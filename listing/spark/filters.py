"""Spark's data source filters to the expression model: one converter for both their forms.

Spark hands data source filters over in two forms with the same kinds and field names:
pyspark's ``pyspark.sql.datasource`` objects (what ``pushFilters`` receives, Spark having
split the condition into conjuncts) and the JVM's ``org.apache.spark.sql.sources`` filters
(what :func:`listing.explain` gets from Spark's own translation, through py4j, where ``And``
and ``Or`` occur too). :func:`from_jvm` rebuilds a JVM filter as pyspark's objects, field
for field, so :func:`from_spark` alone decides which kinds become which expressions.
"""

from __future__ import annotations

import json
from typing import Any

from listing.expressions import And, Compare, Expr, In, IsNull, Like, Not, Or, like_escape
from listing.spark.compat import filters as sds

_COMPARE = {
    sds.EqualTo: "=", sds.GreaterThan: ">", sds.GreaterThanOrEqual: ">=",
    sds.LessThan: "<", sds.LessThanOrEqual: "<=",
}


def from_spark(f: Any) -> Expr | None:
    """The equivalent Expr, or None for filters on nested fields or of unknown kinds."""
    attribute = getattr(f, "attribute", None)
    if isinstance(f, sds.Not):
        child = from_spark(f.child)
        return None if child is None else Not(child)
    if attribute is None or len(attribute) != 1:
        return None
    name = attribute[0]
    if type(f) in _COMPARE:
        return Compare(name, _COMPARE[type(f)], f.value)
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


#: JVM filter kinds that pyspark's form has, with a value (the rest take a column only)
_VALUED = {"EqualTo", "EqualNullSafe", "GreaterThan", "GreaterThanOrEqual", "LessThan",
           "LessThanOrEqual", "In", "StringStartsWith", "StringEndsWith", "StringContains"}
_UNARY = {"IsNull", "IsNotNull"}


def from_jvm(f: Any) -> Expr | None:
    """The Expr of a JVM ``org.apache.spark.sql.sources.Filter`` (a py4j object), as
    :func:`from_spark` makes it of the same filter in pyspark's form; ``And``/``Or`` (which
    pushdown never receives) combine their sides' expressions; None where a part has none."""
    kind = f.getClass().getSimpleName()
    if kind in ("And", "Or"):
        left, right = from_jvm(f.left()), from_jvm(f.right())
        if left is None or right is None:
            return None
        return And((left, right)) if kind == "And" else Or((left, right))
    if kind == "Not":
        child = from_jvm(f.child())
        return None if child is None else Not(child)
    python = _python_filter(f, kind)
    return None if python is None else from_spark(python)


def _python_filter(f: Any, kind: str) -> Any:
    """The JVM leaf filter ``f`` in pyspark's form (None: a kind pyspark's form lacks)."""
    if kind not in _VALUED and kind not in _UNARY:
        return None
    # the column path as Spark parses it (a quoted name may hold dots)
    path = tuple(str(part) for part in f.v2references()[0])
    cls = getattr(sds, kind)
    if kind in _UNARY:
        return cls(path)
    value = (tuple(_value(v) for v in f.values()) if kind == "In" else _value(f.value()))
    return cls(path, value)


def _value(v: Any) -> Any:
    """A filter literal from the JVM: py4j converts numbers and strings; dates, timestamps
    and decimals arrive as objects whose text our binding coerces to the column's type (a
    timestamp as its instant in UTC, ``2026-01-01T14:00:00Z``)."""
    if v is None or isinstance(v, bool | int | float | str):
        return v
    if v.getClass().getName() == "java.sql.Timestamp":  # an instant; its text is the JVM zone's
        return str(v.toInstant().toString())
    return str(v.toString())


FILTERS_OPTION = "listing.filters"
"""The relation option in which the extension hands the source the filters written above it
where Spark pushes none (Spark 4.0; java/io/github/listing/ListingFilterOption.java)."""


def decode_filters(text: str | None) -> list[Any]:
    """The filters of :data:`FILTERS_OPTION` in pyspark's form (the compat module's classes
    where pyspark has none): ``[{"kind": "EqualTo", "attribute": "date", "value": ...}]``."""
    if not text:
        return []
    return [f for f in (_decoded(item) for item in json.loads(text)) if f is not None]


def from_json(item: dict[str, Any]) -> Expr | None:
    """The Expr of one filter as the extension writes it (the leaves of
    :func:`decode_filters`, and ``{"kind": "And"|"Or", "left": ..., "right": ...}``; the
    conjuncts ListingFileIndex.java hands the file index's planner), as :func:`from_jvm`
    makes it of the same JVM filter; None where a part has none."""
    kind = item.get("kind")
    if kind in ("And", "Or"):
        left, right = from_json(item["left"]), from_json(item["right"])
        if left is None or right is None:
            return None
        return And((left, right)) if kind == "And" else Or((left, right))
    if kind == "Not":
        child = from_json(item["child"])
        return None if child is None else Not(child)
    python = _decoded(item)
    return None if python is None else from_spark(python)


def _decoded(item: dict[str, Any]) -> Any:
    kind = item.get("kind")
    if kind == "Not":
        child = _decoded(item["child"])
        return None if child is None else sds.Not(child)
    if kind not in _VALUED and kind not in _UNARY:
        return None
    path = (str(item["attribute"]),)
    cls = getattr(sds, kind)
    if kind in _UNARY:
        return cls(path)
    value = item["value"]
    return cls(path, tuple(value) if kind == "In" else value)
