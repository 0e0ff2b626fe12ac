"""Hive path encoding and Spark's partition type inference (pure functions)."""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from listing.errors import PartitionValueError
from listing.hive import (
    DEFAULT_PARTITION_NAME,
    cast_text,
    escape_path_name,
    infer_column_type,
    infer_type,
    parse_segment,
    parse_value,
    partition_path,
    partition_segment,
    spell_value,
    unescape_path_name,
    value_text,
    widen,
)


@given(st.text())
def test_escape_round_trips(value: str) -> None:
    assert unescape_path_name(escape_path_name(value)) == value


@pytest.mark.parametrize(("value", "spelled"), [
    ("a/b", "a%2Fb"), ("x:y", "x%3Ay"), ("k=v", "k%3Dv"), ("100%", "100%25"),
    ("New York", "New York"), ("plain", "plain"), ("tab\there", "tab%09here"),
])
def test_escape_matches_spark(value: str, spelled: str) -> None:
    assert escape_path_name(value) == spelled


def test_unescape_leaves_malformed_percent_alone() -> None:
    assert unescape_path_name("50%zz%4") == "50%zz%4"


@pytest.mark.parametrize(("raw", "value"), [
    # other engines (pyarrow, Polars, DuckDB, pandas) escape UTF-8: read as they meant it
    ("z%C3%BCrich", "zürich"), ("%E6%9D%B1%E4%BA%AC", "東京"), ("%e6%9d%b1%e4%ba%ac", "東京"),
    ("a%20b", "a b"), ("%41%C3%BC%2F", "Aü/"), ("%F0%9F%98%80!", "😀!"),
    # not UTF-8: one character per escape, as Spark's unescapePathName
    ("%E9t%E9", "été"), ("%C3", "Ã"), ("%C3%28", "Ã("), ("%ED%A0%80", "\xed\xa0\x80"),
    # runs are decoded one by one
    ("%C3%BC-%E9", "ü-é"),
])
def test_unescape_reads_escaped_utf8_as_utf8(raw: str, value: str) -> None:
    assert unescape_path_name(raw) == value


@given(st.text())
def test_unescape_agrees_with_spark_on_every_name_spark_writes(value: str) -> None:
    """Spark escapes only ASCII characters, so decoding its names per escape (its rule)
    and as UTF-8 (ours) agree."""
    spelled = escape_path_name(value)
    spark = re.sub(r"%([0-9A-Fa-f]{2})", lambda m: chr(int(m.group(1), 16)), spelled)
    assert unescape_path_name(spelled) == spark == value


@pytest.mark.parametrize(("raw", "expected"), [
    ("7", pa.int32()), ("07", pa.int32()), ("-3", pa.int32()), ("3000000000", pa.int64()),
    ("123456789012345678901234", pa.decimal128(24, 0)), ("1.5", pa.float64()),
    ("1e3", pa.decimal128(4, 0)), ("1.5e-1", pa.float64()), ("1.5e1", pa.decimal128(2, 0)),
    ("2026-03-01", pa.date32()),
    ("2026-03-01 10%3A00%3A00", pa.timestamp("us", tz="UTC")), ("us", pa.string()),
    ("2026-13-01", pa.string()), (DEFAULT_PARTITION_NAME, None),
    # Spark 4.1+: HH:mm:ss[.SSSSSS], once unescaped, fields in range
    ("10%3A11%3A12", pa.time64("us")), ("10%3A11%3A12.001000", pa.time64("us")),
    ("00%3A00%3A00.5", pa.time64("us")), ("10%3A11%3A12.1234567", pa.string()),
    ("1%3A11%3A12", pa.string()), ("24%3A00%3A00", pa.string()), ("23%3A59%3A60", pa.string()),
    ("10%3A11", pa.string()), ("10%3A11%3A12.", pa.string()),
])
def test_infer_type_follows_spark(raw: str, expected: pa.DataType | None) -> None:
    assert infer_type(raw) == expected


@pytest.mark.parametrize(("a", "b", "wider"), [
    (pa.int32(), pa.int64(), pa.int64()),
    (pa.int32(), pa.float64(), pa.float64()),
    (pa.int64(), pa.float64(), pa.string()),  # Spark refuses long+double: string
    (pa.date32(), pa.timestamp("us", tz="UTC"), pa.timestamp("us", tz="UTC")),
    (pa.date32(), pa.int32(), pa.string()),
    (None, pa.date32(), pa.date32()),
    (pa.time64("us"), pa.timestamp("us", tz="UTC"), pa.string()),
    (pa.time64("us"), pa.date32(), pa.string()),
    (pa.time64("us"), pa.int32(), pa.string()),
    (None, pa.time64("us"), pa.time64("us")),
])
def test_widen_follows_spark(a: pa.DataType, b: pa.DataType, wider: pa.DataType) -> None:
    assert widen(a, b) == wider
    assert widen(b, a) == wider


def test_column_type_widens_across_values_and_only_nulls_are_void() -> None:
    assert infer_column_type(["1", "2", "3000000000"]) == pa.int64()
    assert infer_column_type(["1", "x"]) == pa.string()
    assert infer_column_type([DEFAULT_PARTITION_NAME]) == pa.null()  # Spark's void
    assert infer_column_type([DEFAULT_PARTITION_NAME, "5"]) == pa.int32()


def test_parse_value_typed() -> None:
    assert parse_value("07", pa.int32(), column="hour", path="p") == 7
    assert parse_value("2026-03-01", pa.date32(), column="d", path="p") == dt.date(2026, 3, 1)
    assert parse_value("a%2Fb", pa.string(), column="c", path="p") == "a/b"
    assert parse_value(DEFAULT_PARTITION_NAME, pa.int32(), column="c", path="p") is None
    assert parse_value("12", pa.decimal128(5, 0), column="c", path="p") == Decimal(12)
    assert parse_value("10%3A11%3A12.001000", pa.time64("us"), column="t",
                       path="p") == dt.time(10, 11, 12, 1000)
    assert parse_value(DEFAULT_PARTITION_NAME, pa.null(), column="c", path="p") is None


def test_parse_value_error_names_column_value_and_path() -> None:
    with pytest.raises(PartitionValueError) as err:
        parse_value("abc", pa.int32(), column="hour", path="s3://b/t/hour=abc/f.parquet")
    text = str(err.value)
    assert "'abc'" in text and "'hour'" in text and "s3://b/t/hour=abc/f.parquet" in text


def test_only_unambiguous_values_have_a_spelling() -> None:
    assert spell_value("us", pa.string()) == "us"
    assert spell_value(dt.date(2026, 3, 1), pa.date32()) == "2026-03-01"
    assert spell_value(None, pa.string()) == DEFAULT_PARTITION_NAME
    assert spell_value(7, pa.int32()) is None  # hour=07 or hour=7: unknown
    assert spell_value("a/b", pa.string()) is None  # writers escape differently


_TYPED = st.one_of(
    st.tuples(st.just(pa.string()), st.text(min_size=1)),
    st.tuples(st.just(pa.int64()), st.integers(-(2**63), 2**63 - 1)),
    st.tuples(st.just(pa.bool_()), st.booleans()),
    st.tuples(st.just(pa.date32()), st.dates()),
    st.tuples(st.just(pa.timestamp("us", tz="UTC")),
              # years before 1000: strftime does not pad them (left as found, reported)
              st.datetimes(min_value=dt.datetime(1000, 1, 2), timezones=st.just(dt.UTC))),
    st.tuples(st.just(pa.decimal128(20, 4)),
              st.decimals(min_value=-(10**15), max_value=10**15, places=4)),
    st.tuples(st.just(pa.time64("us")), st.times()),
    st.tuples(st.just(pa.string()), st.none()),
)


@given(_TYPED)
def test_a_written_segment_reads_back_as_its_value(typed) -> None:
    """What writes spell (partition_path), key decoding parses back to the same value, for
    every partition type; the null (and "", as Spark writes it) is the Hive default."""
    type_, value = typed
    (segment,) = partition_path([("c/1", value)]).rstrip("/").split("/")
    name, raw = parse_segment(segment)
    assert name == "c/1"
    back = parse_value(raw, type_, column=name, path=segment)
    assert back == (None if value == "" else value)


def test_one_spelling_for_writes_prefixes_and_the_jvm() -> None:
    ts = dt.datetime(2024, 1, 2, 3, 4, 5, 500000, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert value_text(ts) == "2024-01-02 01:04:05.5"  # written in UTC, no offset
    assert cast_text(ts) == "2024-01-02 03:04:05.500000+02:00"  # Cast keeps the instant
    assert value_text("") is None and cast_text("") == ""
    assert value_text(None) is None and cast_text(None) is None
    day = dt.date(2026, 3, 1)
    assert spell_value(day, pa.date32()) == value_text(day) == cast_text(day) == "2026-03-01"
    assert partition_segment("d", day) == "d=2026-03-01"
    assert partition_segment("hour", 7, text=lambda h: f"{h:02d}") == "hour=07"
    assert partition_segment("k", None) == f"k={DEFAULT_PARTITION_NAME}"
    assert value_text(Decimal("1E+2")) == "100" and value_text(True) == "true"
    assert value_text(dt.time(10, 11, 12, 1000)) == cast_text(dt.time(10, 11, 12, 1000)) \
        == "10:11:12.001"
