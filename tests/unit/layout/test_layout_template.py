"""The ``layout`` grammar (listing.options.templates) and its keys (listing.layout):
every malformed template one error naming the option and the character at fault;
decoding and spelling are each other's inverse."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from listing.errors import OptionError
from listing.expressions import ValueRange, may_be_true, parse_predicate
from listing.expressions import bind as bind_expr
from listing.layout import TemplateLayout
from listing.options import registry
from listing.options.templates import parse_layout, parse_projection


@pytest.mark.parametrize(("template", "position", "what"), [
    ("{date:yyyy/MM/dd/{hour:HH}", 1, "unclosed '{'"),
    ("logs/{region", 6, "unclosed '{'"),
    ("logs/region}", 12, "'}' without '{'"),
    ("{}/x", 2, "without a name"),
    ("{:yyyy}", 2, "without a name"),
    ("{a-b}", 2, "not a plain name"),
    ("{date:yyyy/MM/dd}/{DATE}", 20, "appears twice"),
    ("{date:yyyy/MM/dd}/{hour:hh}", 25, "'hh'"),
    ("{date:yyyy/MM/dd}/{hour:H}", 25, "'H'"),
    ("{date:yyyy/MM/dd}/{hour:}", 25, "empty pattern"),
    ("{d:yyyy/MM/dd/yyyy}", 15, "twice"),
    ("{d:MM/yyyy/dd}", 4, "must hold yyyy, MM, dd"),
    ("{d:yyyy/MM}", 4, "must hold yyyy, MM and dd"),
    ("{d:yyyy//MM/dd}", 9, "empty segment"),
    ("a//b", 3, "empty segment"),
    ("/a", 1, "empty segment"),
    ("{region}{account}", 9, "no literal text between"),
    ("{region}{date:yyyy-MM-dd}", 15, "no literal text between"),
    ("{d:yyyy-MM-dd}{region}", 15, "no literal text between"),
    ("{d:yyyy-MM-'dd'}", 12, "inside the pattern"),
    ("{d:---}", 4, "has no field"),
])
def test_every_malformed_template_is_one_line_naming_layout_and_position(
        template: str, position: int, what: str) -> None:
    with pytest.raises(OptionError) as err:
        registry.option("layout").parse(template)
    text = str(err.value)
    assert "\n" not in text
    assert text.startswith(f"option layout={template!r}")
    assert f"at character {position}" in text, text
    assert what in text


def test_an_empty_template_is_refused() -> None:
    with pytest.raises(OptionError, match="option layout='/': an empty template"):
        registry.option("layout").parse("/")


@pytest.mark.parametrize(("template", "kinds"), [
    ("{date:yyyy/MM/dd}/{hour:HH}", {"date": "date", "hour": "int"}),
    ("{ts:yyyy/MM/dd/HH}", {"ts": "timestamp"}),
    ("dt={day}/hr={hour}", {"day": "value", "hour": "value"}),
    ("{year}-{month}/x", {"year": "value", "month": "value"}),
    ("{d:yyyyMMdd}{h:HH}/", {"d": "date", "h": "int"}),  # fixed widths need no separator
    ("AWSLogs/{account}/CloudTrail/{region}/{date:yyyy/MM/dd}",
     {"account": "value", "region": "value", "date": "date"}),
])
def test_good_templates_and_their_columns(template: str, kinds: dict[str, str]) -> None:
    parsed = parse_layout(template)
    assert {c.name: c.kind for c in parsed.columns} == kinds


def _layout(template: str, **more) -> TemplateLayout:
    return TemplateLayout.build("b/t/", template, **more)


def test_a_date_spanning_levels_decodes_and_spells_back() -> None:
    layout = _layout("{date:yyyy/MM/dd}/{hour:HH}")
    path = "b/t/2026/11/27/13/stream-1-2026-11-27-13-00-00-abc.gz"
    values = layout.decode(path)
    assert values == {"date": dt.date(2026, 11, 27), "hour": 13}
    found = {**layout.fields_of("date", values["date"]), **layout.fields_of("hour", 13)}
    assert [layout.spell(d, found) for d in range(4)] == ["2026", "11", "27", "13"]


@pytest.mark.parametrize("path", [
    "b/t/2026/11/27/stray.gz",  # above the last level
    "b/t/2026/11/27/13/errors/x.gz",  # below it
    "b/t/2026/13/27/13/x.gz",  # no month 13
    "b/t/2026/02/30/13/x.gz",  # no such day
    "b/t/2026/11/27/7/x.gz",  # one digit where HH has two
    "b/t/CloudTrail-Digest/x.gz",
])
def test_keys_off_the_template_decode_to_none(path: str) -> None:
    assert _layout("{date:yyyy/MM/dd}/{hour:HH}").decode(path) is None


def test_a_partial_date_bounds_the_column() -> None:
    layout = _layout("{date:yyyy/MM/dd}")
    year = layout.domains(layout.match(0, "2026"))
    assert year["date"] == ValueRange(dt.date(2026, 1, 1), dt.date(2026, 12, 31),
                                      may_be_null=False)
    month = layout.domains({**layout.match(0, "2024"), **layout.match(1, "02")})
    assert month["date"] == ValueRange(dt.date(2024, 2, 1), dt.date(2024, 2, 29),
                                       may_be_null=False)
    schema = pa.schema([("date", pa.date32())])
    pred = bind_expr(parse_predicate("date >= '2026-03-01'"), schema).expr
    assert may_be_true(pred, year) and not may_be_true(pred, month)


def test_timestamps_are_read_in_the_time_zone() -> None:
    layout = _layout("{ts:yyyy/MM/dd/HH}", time_zone="America/New_York")
    assert layout.columns == (("ts", pa.timestamp("us", tz="America/New_York")),)
    ts = layout.decode("b/t/2026/11/27/13/x")["ts"]
    assert ts == dt.datetime(2026, 11, 27, 18, tzinfo=dt.UTC)  # 13:00 EST
    assert [layout.spell(d, layout.fields_of("ts", ts)) for d in range(4)] == [
        "2026", "11", "27", "13"]


def test_plain_columns_are_inferred_or_declared() -> None:
    template = "dt={day}/hr={hour}"
    sample = ["b/t/dt=2026-11-27/hr=07/a.json", "b/t/dt=2026-11-28/hr=13/b.json",
              "b/t/other/x.json"]
    layout = _layout(template, sample=sample)
    assert dict(layout.columns) == {"day": pa.date32(), "hour": pa.int32()}
    assert layout.decode(sample[0]) == {"day": dt.date(2026, 11, 27), "hour": 7}
    declared = _layout(template, sample=sample, declared=[("hour", "string"), ("day", None)])
    assert declared.decode(sample[0])["hour"] == "07"
    with pytest.raises(OptionError, match="'region', which the layout"):
        _layout(template, declared=[("region", None)])
    with pytest.raises(OptionError, match="its pattern in the layout makes it a date32"):
        _layout("{d:yyyy/MM/dd}", declared=[("d", "string")])
    assert _layout("{d:yyyy/MM/dd}", declared=[("d", "date")]).columns == (
        ("d", pa.date32()),)


def test_projection_grammar_and_values() -> None:
    spec = parse_projection("date=2026-11-25..2026-11-27; region=us-east-1|eu-west-1")
    layout = _layout("{region}/{date:yyyy/MM/dd}", projection=spec)
    assert [f["region"] for f in layout.projected_values("region")] == ["us-east-1",
                                                                         "eu-west-1"]
    days = layout.projected_values("date")
    assert [(f[("date", "yyyy")], f[("date", "MM")], f[("date", "dd")]) for f in days] == [
        (2026, 11, 25), (2026, 11, 26), (2026, 11, 27)]
    now = _layout("{date:yyyy/MM/dd}", projection="date=2026-11-01..NOW")
    assert len(now.projected_values("date", dt.datetime(2026, 11, 10, tzinfo=dt.UTC))) == 10


@pytest.mark.parametrize(("projection", "what"), [
    ("date", "is not column=low..high"),
    ("date=", "is not column=low..high"),
    ("date=2026-01-01..", "needs low..high"),
    ("date=a|", "an empty value"),
    ("date=1..2;date=3..4", "projected twice"),
    (";", "no column projected"),
])
def test_malformed_projections_name_the_option(projection: str, what: str) -> None:
    with pytest.raises(OptionError) as err:
        registry.option("layout_projection").parse(projection)
    assert str(err.value).startswith("option layout_projection=") and what in str(err.value)


@pytest.mark.parametrize(("projection", "what"), [
    ("region=a|b", "'region', which the layout"),
    ("date=2026-02-30..NOW", "is not a date32"),
    ("date=x|y", "is not a date32"),
    ("hour=0..NOW", "NOW is for dates"),
    ("hour=a..b", "is not a int32"),
])
def test_projections_are_checked_against_the_columns(projection: str, what: str) -> None:
    with pytest.raises(OptionError, match="layout_projection") as err:
        _layout("{date:yyyy/MM/dd}/{hour:HH}", projection=projection)
    assert what in str(err.value)


@pytest.mark.parametrize(("template", "chronological"), [
    ("{date:yyyy/MM/dd}/{hour:HH}", True),
    ("AWSLogs/x/{ts:yyyy/MM/dd/HH}", True),
    ("dt={date:yyyy-MM-dd}/hr={hour:HH}", True),
    ("{date:yyyy/MM/dd}", True),
    ("{region}/{date:yyyy/MM/dd}", False),  # a new day in region a sorts before region b
    ("{date:yyyy/MM/dd}/{region}", False),
    ("{hour:HH}/{date:yyyy/MM/dd}", False),  # least significant first
    ("{date:yyyy/MM/dd}/{minute:mm}", False),  # a gap: no HH
    ("dt={day}/hr={hour}", False),  # value columns: their spelling is unknown
])
def test_chronological_templates_sort_keys_by_time(template: str, chronological: bool) -> None:
    """Streaming's frontier needs new keys to sort after old ones (listing.discovery)."""
    assert TemplateLayout.build("t/", template).chronological is chronological
