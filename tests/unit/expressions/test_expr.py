"""The filter model: SQL parsing, binding to a schema, three-valued evaluation."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from listing import col
from listing.errors import FilterError
from listing.expressions import (
    ANY,
    Compare,
    In,
    Known,
    Like,
    Not,
    ValueRange,
    bind,
    conjuncts,
    is_true,
    may_be_true,
    outcomes,
    parse_predicate,
    to_arrow,
)

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("date", pa.date32()),
                    ("hour", pa.int32()), ("ts", pa.timestamp("us", tz="UTC"))])


def parse(text: str):
    return bind(parse_predicate(text), SCHEMA).expr


def test_parses_the_documented_forms() -> None:
    e = parse("date >= '2026-03-01' AND name IN ('us','eu') AND NOT hour = 3")
    assert conjuncts(e) == [Compare("date", ">=", dt.date(2026, 3, 1)), In("name", ("us", "eu")),
                            Not(Compare("hour", "=", 3))]
    assert conjuncts(parse("hour BETWEEN 1 AND 4")) == [Compare("hour", ">=", 1),
                                                        Compare("hour", "<=", 4)]
    assert parse("hour <> 2") == Compare("hour", "!=", 2)
    assert parse("2 < hour") == Compare("hour", ">", 2)
    assert parse("name NOT IN ('a')") == Not(In("name", ("a",)))
    assert parse("name LIKE 'ab%'") == Like("name", "ab%")
    assert parse("name NOT LIKE 'ab%'") == Not(Like("name", "ab%"))
    assert parse("date = DATE '2026-01-02'") == Compare("date", "=", dt.date(2026, 1, 2))
    ts = parse("ts < TIMESTAMP '2026-01-01 10:00:00'")
    assert ts == Compare("ts", "<", dt.datetime(2026, 1, 1, 10, tzinfo=dt.UTC))
    assert parse("(hour = 1 OR hour = 2) AND id IS NOT NULL").columns() == {"hour", "id"}
    assert parse("hour = -5") == Compare("hour", "=", -5)


def test_col_builder_matches_sql() -> None:
    built = bind((col("date") >= "2026-03-01") & col("name").isin(["us", "eu"]), SCHEMA).expr
    assert built == parse("date >= '2026-03-01' AND name IN ('us', 'eu')")


def test_syntax_error_reports_position() -> None:
    with pytest.raises(FilterError, match=r"line 1, column \d+"):
        parse_predicate("date >= AND x")


def test_unknown_column_is_named_with_suggestion() -> None:
    with pytest.raises(FilterError, match=r"unknown column 'dat'.*did you mean date"):
        parse("dat = '2026-01-01'")


def test_bad_literal_names_column_and_type() -> None:
    with pytest.raises(FilterError, match=r"'hour'.*int32"):
        parse("hour = 'seven'")


def test_unsupported_form_is_named() -> None:
    with pytest.raises(FilterError, match="one column and one literal"):
        parse_predicate("hour = id")


def test_names_resolve_case_insensitively() -> None:
    assert parse("HOUR = 3") == Compare("hour", "=", 3)


def test_three_valued_logic_with_nulls() -> None:
    e = parse("hour = 3 OR name = 'x'")
    assert is_true(e, {"hour": 3, "name": None})
    assert not is_true(e, {"hour": None, "name": "y"})  # NULL OR FALSE is NULL: rejected
    assert not is_true(parse("NOT hour = 3"), {"hour": None})  # NOT NULL is NULL
    assert is_true(parse("hour IS NULL"), {"hour": None})


def test_unknown_columns_keep_every_outcome_possible() -> None:
    e = parse("hour = 3 AND name = 'x'")
    assert may_be_true(e, {"hour": Known(3)})
    assert not may_be_true(e, {"hour": Known(4)})
    assert outcomes(parse("hour = 3"), {}) == ANY


def test_bounds_decide_ranges() -> None:
    assert not may_be_true(parse("hour > 10"), {"hour": ValueRange(0, 10, may_be_null=False)})
    assert may_be_true(parse("hour > 9"), {"hour": ValueRange(0, 10, may_be_null=False)})
    assert not may_be_true(parse("hour IS NULL"), {"hour": ValueRange(0, 10, may_be_null=False)})
    assert not may_be_true(parse("hour IN (20, 30)"), {"hour": ValueRange(0, 10)})
    assert not may_be_true(parse("name LIKE 'zz%'"), {"name": ValueRange("aa", "ab")})


def test_arrow_expression_filters_rows() -> None:
    table = pa.table({"hour": [1, 2, 3, None], "name": ["ab", "b", "ac", "a"]})
    e = bind(parse_predicate("hour >= 2 OR name LIKE 'a%'"), table.schema).expr
    assert table.filter(to_arrow(e)).column("name").to_pylist() == ["ab", "b", "ac", "a"]
    e = bind(parse_predicate("hour >= 2 AND name NOT LIKE 'a%'"), table.schema).expr
    assert table.filter(to_arrow(e)).column("name").to_pylist() == ["b"]
