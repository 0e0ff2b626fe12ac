"""A number is read one way (:func:`listing.expressions.model.parse_number`) whether it is a
SQL literal (``where="x = 7"``) or a string coerced to a numeric column (a partition value,
``col("x") == "7"``): digits make an int, anything else float() takes makes a float."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest

from listing.errors import FilterError
from listing.expressions.model import Compare
from listing.expressions.sql import parse_predicate
from listing.expressions.visitors import coerce_literal

CASES = [("7", 7, int), ("0", 0, int), ("12345678901234567890", 12345678901234567890, int),
         ("1e3", 1000.0, float), ("1.5", 1.5, float), ("0.25", 0.25, float)]


@pytest.mark.parametrize(("text", "value", "kind"), CASES)
def test_sql_literal_and_coerced_string_agree(text: str, value: object, kind: type) -> None:
    parsed = parse_predicate(f"x = {text}")
    assert isinstance(parsed, Compare)
    coerced = coerce_literal(text, pa.field("x", pa.float64()))
    assert parsed.value == coerced == value
    assert type(parsed.value) is type(coerced) is kind


def test_a_sign_and_spaces_in_a_string() -> None:
    assert coerce_literal(" -7 ", pa.field("x", pa.int64())) == -7
    assert math.isnan(coerce_literal("nan", pa.field("x", pa.float64())))


def test_not_a_number_is_refused() -> None:
    with pytest.raises(FilterError):
        coerce_literal("seven", pa.field("x", pa.int64()))
