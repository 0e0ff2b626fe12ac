"""Every format that writes reads back what it wrote: the built-ins (Parquet, CSV, NDJSON,
Arrow IPC), the formats of ``examples/`` (TSV, fixed width) and the TSV format of
docs/formats.md. ``write_table`` writes a table with nulls, non-ASCII text, dates,
timestamps and floats, partitioned by a column holding a non-ASCII and an escaped value;
the Python API and Spark's ``listing`` source (its default engine: Spark's own reader for
local Parquet, CSV and JSON, the Python engine for the others) read it back, rows and types
equal to what was written."""

from __future__ import annotations

import datetime as dt
import re
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from listing import ListingTable, formats, write_table
from listing.errors import OptionError
from listing.formats.csv import CsvFormat

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # examples/ is not an installed package
    sys.path.insert(0, str(ROOT))

from examples.fixed_width_format import FixedWidthFormat  # noqa: E402
from examples.tsv_format import TsvFormat  # noqa: E402

UTC = dt.UTC
DATA = pa.table({
    "id": pa.array([1, 2, 3, 4], pa.int64()),
    "name": ["zürich", None, "東京", "plain"],
    "d": pa.array([dt.date(2026, 1, 1), None, dt.date(1999, 12, 31), dt.date(2026, 3, 1)]),
    "ts": pa.array([dt.datetime(2026, 1, 1, 6, 0, tzinfo=UTC), None,
                    dt.datetime(2026, 3, 1, 12, 30, 1, 123456, tzinfo=UTC),
                    dt.datetime(2000, 1, 1, tzinfo=UTC)], pa.timestamp("us", "UTC")),
    "amount": pa.array([1.5, None, 3.0, -0.25], pa.float64()),
    "region": ["zürich", "a/b", "zürich", None],
})
#: every format that writes; the examples' by the names they register
FORMATS = ["parquet", "csv", "json", "arrow", "tsv", "fixed_width"]


def rows(table: pa.Table) -> list[dict[str, Any]]:
    """Rows by id, columns by name; a timestamp as its instant."""
    return sorted(table.select(sorted(table.column_names)).to_pylist(), key=lambda r: r["id"])


def kinds(table: pa.Table) -> dict[str, str]:
    """Column types, a string and a large string alike, a timestamp's zone as UTC-adjusted
    or not."""
    def kind(t: pa.DataType) -> str:
        if pa.types.is_large_string(t):
            return "string"
        if pa.types.is_timestamp(t):
            return f"timestamp[{'tz' if t.tz else 'ntz'}]"
        return str(t)
    return {f.name: kind(f.type) for f in table.schema}


def test_the_docs_tsv_format_is_the_examples() -> None:
    """docs/formats.md's ``TsvFormat`` (run as the page shows it) has the example's
    options, so the round trip of ``examples/tsv_format.py`` below is the docs' too."""
    page = (ROOT / "docs" / "formats.md").read_text()
    block = re.search(r"^class TsvFormat\(CsvFormat\):\n(?:    .*\n)+", page, re.MULTILINE)
    assert block is not None
    namespace: dict[str, Any] = {"CsvFormat": CsvFormat}
    exec(block.group(0), namespace)  # noqa: S102 - the docs' own code
    docs_format = namespace["TsvFormat"]
    assert docs_format.option_defaults == TsvFormat.option_defaults
    assert docs_format.extensions == TsvFormat.extensions
    assert isinstance(formats.get("fixed_width"), FixedWidthFormat)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("round_trip")
    out = {}
    for name in FORMATS:
        path = str(root / name)
        write_table(path, DATA, format=name, partition_by=["region"])
        out[name] = path
    return out


@pytest.mark.parametrize("name", FORMATS)
def test_python_api_reads_back_what_it_wrote(written: dict[str, str], name: str) -> None:
    table = ListingTable.open(written[name], format=name)
    got = table.to_arrow()
    assert rows(got) == rows(DATA)
    assert kinds(got) == kinds(DATA)
    assert table.to_arrow(where="region = 'zürich'").column("id").to_pylist() in ([1, 3], [3, 1])
    assert table.to_arrow(where="name = 'zürich'").column("id").to_pylist() == [1]


@pytest.mark.parametrize("name", FORMATS)
def test_spark_reads_back_what_it_wrote(spark: Any, written: dict[str, str], name: str) -> None:
    df = spark.read.format("listing").option("format", name).load(written[name])
    got = df.toArrow()
    assert rows(got) == rows(DATA)
    assert kinds(got) == {**kinds(DATA), "ts": "timestamp[tz]"}
    assert sorted(r.id for r in df.where("region = 'zürich' AND name IS NOT NULL")
                  .collect()) == [1, 3]


# --- the CSV writer agrees with the reader's options ----------------------------------------


def test_tsv_header_is_written_unquoted(tmp_path: Path) -> None:
    """The cause of the docs' TSV reading back ``"id"``: the writer quoted the header
    whatever ``quote`` said."""
    write_table(str(tmp_path), pa.table({"id": [1], "a b": ["x"]}), format="tsv")
    (written,) = tmp_path.glob("*.tsv")
    assert written.read_text().splitlines()[0] == "id\ta b"
    assert ListingTable.open(str(tmp_path), format="tsv").to_arrow().column_names == ["id",
                                                                                     "a b"]


def test_csv_header_is_quoted_where_it_must_be(tmp_path: Path) -> None:
    write_table(str(tmp_path), pa.table({"id": [1], "a,b": ["x,y"]}), format="csv")
    assert ListingTable.open(str(tmp_path), format="csv").to_arrow().to_pylist() == [
        {"id": 1, "a,b": "x,y"}]


def test_values_that_cannot_be_written_unquoted_are_refused(tmp_path: Path) -> None:
    with pytest.raises(OptionError, match="quote off"):
        write_table(str(tmp_path / "v"), pa.table({"id": ["a\tb"]}), format="tsv")
    with pytest.raises(OptionError, match="quote off"):
        write_table(str(tmp_path / "h"), pa.table({"a\tb": [1]}), format="tsv")
    with pytest.raises(OptionError, match="quote=\"'\" is not supported"):
        write_table(str(tmp_path / "q"), pa.table({"id": [1]}), format="csv", quote="'")
    assert not any(tmp_path.rglob("*.csv")) and not any(tmp_path.rglob("*.tsv"))


def test_null_is_written_as_the_readers_null(tmp_path: Path) -> None:
    data = pa.table({"id": [1, 2], "s": ["x", None]})
    write_table(str(tmp_path), data, format="csv", null_values=["NA"])
    (written,) = tmp_path.glob("*.csv")
    assert written.read_text().splitlines()[2] == "2,NA"
    got = ListingTable.open(str(tmp_path), format="csv", null_values=["NA"]).to_arrow()
    assert got.sort_by("id").to_pylist() == data.to_pylist()
