"""The option parsers: one per kind, the same spellings everywhere (pure functions)."""

from __future__ import annotations

import datetime as dt

import pytest

from listing.errors import OptionError
from listing.formats.csv import CsvFormat
from listing.formats.parquet import ParquetFormat
from listing.options import (
    MB,
    ListingOptions,
    parse_bool,
    parse_duration,
    parse_size,
    parse_timestamp,
)


@pytest.mark.parametrize("text,want", [("true", True), ("ON", True), ("yes", True), ("1", True),
                                       ("false", False), ("off", False), ("No", False),
                                       ("0", False), (True, True), (False, False)])
def test_bool_spellings(text, want):
    assert parse_bool(text, "flag") is want


@pytest.mark.parametrize("text", ["maybe", "", "2", "none"])
def test_bad_bool_names_option_and_value(text):
    with pytest.raises(OptionError, match=rf"flag={text!r}"):
        parse_bool(text, "flag")


def test_sizes_durations_timestamps():
    assert parse_size("128m") == 128 * MB and parse_size("4MB") == 4 * MB
    assert parse_size(" 1g ") == 1024 * MB and parse_size("1_000") == 1000
    assert parse_duration("250ms") == 0.25 and parse_duration("5m") == 300
    assert parse_duration(30) == 30 and parse_duration("2h") == 7200
    assert parse_timestamp("2026-03-01T10:00:00") == dt.datetime(2026, 3, 1, 10, tzinfo=dt.UTC)
    for bad, fn in [("12 parsecs", parse_size), ("-5s", parse_duration),
                    ("soon", parse_duration), ("yesterday", parse_timestamp)]:
        with pytest.raises(OptionError, match="opt="):
            fn(bad, "opt")


def test_formats_and_listing_options_share_the_parsers():
    assert ParquetFormat(merge_schema="on").options["merge_schema"] is True
    assert CsvFormat(merge_schema="off", header="yes").options["header"] is True
    opts = ListingOptions.from_dict({"ignore_corrupt_files": "on",
                                     "max_partition_bytes": "64m"})
    assert opts.ignore_corrupt_files is True and opts.max_partition_bytes == 64 * MB
    with pytest.raises(OptionError, match="merge_schema='perhaps'"):
        ParquetFormat(merge_schema="perhaps")
