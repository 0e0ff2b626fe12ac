"""TemplateLayout.write_dir: the folder a write spells for partition values, read back by
decode (docs/writes.md, "Writes with a layout")."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from listing.errors import PartitionValueError
from listing.layout import TemplateLayout

ROOT = "b/t/"


def _layout(text: str, declared=(), time_zone: str = "UTC") -> TemplateLayout:
    return TemplateLayout.build(ROOT, text, list(declared), time_zone=time_zone)


@pytest.mark.parametrize(("text", "declared", "values", "folder"), [
    ("{date:yyyy/MM/dd}/{hour:HH}", (), {"date": dt.date(2026, 11, 27), "hour": 7},
     "2026/11/27/07/"),
    ("dt={day}/hr={hour}", (("day", pa.date32()), ("hour", pa.int64())),
     {"day": dt.date(2026, 11, 27), "hour": 7}, "dt=2026-11-27/hr=7/"),
    ("{year}-{month}", (("year", pa.int64()), ("month", pa.string())),
     {"year": 2026, "month": "11"}, "2026-11/"),
    ("AWSLogs/{region}/logs", (("region", pa.string()),), {"region": "a/b"},
     "AWSLogs/a%2Fb/logs/"),
    ("{region}", (("region", pa.string()),), {"region": None},
     "__HIVE_DEFAULT_PARTITION__/"),
    ("logs", (), {}, "logs/"),
])
def test_write_dir_spells_a_folder_that_decodes_back(text, declared, values, folder):
    layout = _layout(text, declared)
    assert layout.write_dir(values) == folder
    back = layout.decode(f"{ROOT}{folder}part-0.parquet")
    assert back == values


def test_a_timestamp_is_spelled_in_the_time_zone():
    layout = _layout("{ts:yyyy/MM/dd/HH}", time_zone="Asia/Tokyo")
    at = dt.datetime(2026, 11, 27, 13, tzinfo=dt.UTC)
    assert layout.write_dir({"ts": at}) == "2026/11/27/22/"


@pytest.mark.parametrize(("text", "declared", "values"), [
    ("{date:yyyy/MM/dd}/{hour:HH}", (), {"date": dt.date(2026, 11, 27), "hour": 25}),
    ("{date:yyyy/MM/dd}/{hour:HH}", (), {"date": None, "hour": 1}),
    ("{ts:yyyy/MM/dd/HH}", (), {"ts": dt.datetime(2026, 11, 27, 13, 30, tzinfo=dt.UTC)}),
    ("{a}-{b}", (("a", pa.string()), ("b", pa.string())), {"a": "x-y", "b": "z"}),
])
def test_a_value_that_would_not_read_back_is_refused(text, declared, values):
    with pytest.raises(PartitionValueError, match="layout"):
        _layout(text, declared).write_dir(values)
