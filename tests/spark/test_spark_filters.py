"""One converter of Spark's data source filters, for both the forms Spark hands them in.

``pushFilters`` receives pyspark's ``pyspark.sql.datasource`` objects; ``listing.explain``
gets the JVM's ``org.apache.spark.sql.sources`` filters from Spark's own translation. The
same filter, built here in both forms (the JVM's through the session's py4j gateway), must
become the same expression.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import datasource as sds

from listing.expressions import And, Compare, IsNull, Like, Not, Or, bind
from listing.spark.filters import from_jvm, from_spark

SCHEMA = pa.schema([("n", pa.int64()), ("s", pa.string()), ("d", pa.date32()),
                    ("a.b", pa.int64())])


@pytest.fixture(scope="module")
def jvm_filter(spark: Any) -> Any:
    """``(kind, column, value)`` -> a JVM ``org.apache.spark.sql.sources`` filter."""
    jvm = spark.sparkContext._jvm  # noqa: SLF001
    gateway = spark.sparkContext._gateway  # noqa: SLF001
    sources = jvm.org.apache.spark.sql.sources

    def make(kind: str, column: str, value: Any = None) -> Any:
        cls = getattr(sources, kind)
        if kind in ("IsNull", "IsNotNull"):
            return cls(column)
        if kind == "In":
            values = gateway.new_array(jvm.java.lang.Object, len(value))
            for i, v in enumerate(value):
                values[i] = v
            return cls(column, values)
        if isinstance(value, dt.date):
            value = jvm.java.time.LocalDate.parse(value.isoformat())
        return cls(column, value)
    return make


LEAVES = [
    ("EqualTo", "n", 3), ("GreaterThan", "n", 3), ("GreaterThanOrEqual", "s", "b"),
    ("LessThan", "n", -1), ("LessThanOrEqual", "s", "q"), ("EqualNullSafe", "n", 3),
    ("EqualNullSafe", "n", None), ("In", "n", (1, 2, 3)), ("In", "s", ("x", "y")),
    ("IsNull", "s", None), ("IsNotNull", "n", None), ("StringStartsWith", "s", "a%b"),
    ("StringEndsWith", "s", "_z"), ("StringContains", "s", "mid"),
]


def python_filter(kind: str, column: str, value: Any = None) -> sds.Filter:
    cls = getattr(sds, kind)
    if kind in ("IsNull", "IsNotNull"):
        return cls((column,))
    return cls((column,), value)


@pytest.mark.parametrize(("kind", "column", "value"), LEAVES)
def test_a_filter_becomes_the_same_expression_in_both_forms(jvm_filter, kind, column, value):
    expected = from_spark(python_filter(kind, column, value))
    assert expected is not None
    assert from_jvm(jvm_filter(kind, column, value)) == expected
    bind(expected, SCHEMA)  # an expression the planner takes


def test_not_and_or_combine_the_converted_sides(spark, jvm_filter):
    sources = spark.sparkContext._jvm.org.apache.spark.sql.sources  # noqa: SLF001
    eq, like = jvm_filter("EqualTo", "n", 3), jvm_filter("StringEndsWith", "s", "z")
    py_eq, py_like = python_filter("EqualTo", "n", 3), python_filter("StringEndsWith", "s", "z")
    assert from_jvm(sources.Not(eq)) == from_spark(sds.Not(py_eq)) == Not(Compare("n", "=", 3))
    assert from_jvm(sources.And(eq, like)) == And((from_spark(py_eq), from_spark(py_like)))
    assert from_jvm(sources.Or(eq, sources.Not(like))) == Or(
        (Compare("n", "=", 3), Not(Like("s", "%z"))))
    # a side without an expression: the whole filter has none (Spark evaluates it)
    assert from_jvm(sources.Or(eq, sources.AlwaysTrue())) is None
    assert from_jvm(sources.AlwaysTrue()) is None


def test_literals_the_jvm_sends_as_objects_bind_to_the_same_value(jvm_filter):
    """A date arrives from the JVM as its text; bound to the column, it is the same date."""
    day = dt.date(2026, 3, 1)
    python = from_spark(python_filter("GreaterThanOrEqual", "d", day))
    jvm = from_jvm(jvm_filter("GreaterThanOrEqual", "d", day))
    assert jvm == Compare("d", ">=", "2026-03-01")
    assert bind(jvm, SCHEMA) == bind(python, SCHEMA)


def test_column_paths_are_spark_s_own_parse(jvm_filter):
    """A nested field has no expression in either form; a quoted name holding a dot is one
    column (the JVM's attribute text is ``a.b`` for the first, a backquoted name for the
    second, and Spark splits it)."""
    assert from_jvm(jvm_filter("EqualTo", "a.b", 1)) is None
    assert from_spark(sds.EqualTo(("a", "b"), 1)) is None
    assert from_jvm(jvm_filter("EqualTo", "`a.b`", 1)) == Compare("a.b", "=", 1)
    assert from_jvm(jvm_filter("IsNull", "`a.b`")) == IsNull("a.b")
