"""Option kinds that had two parsers: each edge (the CLI, the Spark source, writes) now
reads the value through the one kind in :mod:`listing.options`."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from listing import cli
from listing.errors import OptionError
from listing.options import parse_column_names, parse_partition_cols, parse_write_mode, registry
from listing.spark.config import SourceConfig

#: the cases where the CLI's and the Spark source's copies differed (spaces around a name or
#: a type, an empty name), and the plain ones
PARTITION_COLS = [
    ("date:date,region", [("date", "date"), ("region", None)]),
    ("date:date, region:string", [("date", "date"), ("region", "string")]),
    (" date : date ,region ", [("date", "date"), ("region", None)]),
    ("date:", [("date", None)]),
    ("", None),
]
EMPTY_NAMES = ["date,,region", "date,", ",date", " : date", ":int"]


def _cli_partition_cols(text: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """What the CLI hands ListingTable.open for ``--partition-cols text``."""
    seen: dict[str, Any] = {}

    def fake_open(url: str, **kwargs: Any) -> None:
        seen.update(kwargs)

    monkeypatch.setattr("listing.ListingTable.open", fake_open)
    cli._open(argparse.Namespace(url="/t", format="parquet", storage_option=[],  # noqa: SLF001
                                 partition_cols=text, layout=None, layout_projection=None))
    return seen["partition_cols"]


@pytest.mark.parametrize(("text", "want"), PARTITION_COLS)
def test_the_cli_and_the_spark_source_read_partition_cols_alike(
        text: str, want: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_partition_cols(text, "partition_cols") == want
    assert _cli_partition_cols(text, monkeypatch) == want
    assert SourceConfig.parse({"path": "/t", "partition_cols": text}).partition_cols == want


@pytest.mark.parametrize("text", EMPTY_NAMES)
def test_an_empty_partition_column_name_is_refused_at_each_edge(
        text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(OptionError, match="partition_cols=.*empty column name"):
        _cli_partition_cols(text, monkeypatch)
    with pytest.raises(OptionError, match="partition_cols=.*empty column name"):
        SourceConfig.parse({"path": "/t", "partition_cols": text})


def test_a_list_of_partition_columns_is_kept_as_given() -> None:
    given = ["date", ("region", "string")]
    assert parse_partition_cols(given) == given


@pytest.mark.parametrize(("value", "want"), [
    ("append", "append"), (" Overwrite ", "overwrite"), ("errorifexists", "error"),
    ("default", "error"), ("IGNORE", "ignore")])
def test_write_modes_and_their_spark_aliases(value: str, want: str) -> None:
    assert parse_write_mode(value) == want


def test_an_unknown_write_mode_is_refused_naming_the_modes() -> None:
    with pytest.raises(OptionError, match="mode='upsert' must be one of append, overwrite"):
        parse_write_mode("upsert")


def test_partition_by_names_from_spark_text_or_a_list() -> None:
    assert parse_column_names(" date, region ,,") == ["date", "region"]
    assert parse_column_names(("date", "region")) == ["date", "region"]
    assert registry.option("partition_by").parse("a,b") == ["a", "b"]


def test_commit_protocol_is_a_choice() -> None:
    assert registry.option("commit_protocol").parse(" Copy ") == "copy"
    with pytest.raises(OptionError, match="commit_protocol='rename' must be one of auto, "
                                          "multipart, copy"):
        registry.option("commit_protocol").parse("rename")


def test_the_spark_source_hands_the_table_its_options_typed(tmp_path: Any) -> None:
    """SourceConfig types the listing options and the format's once; the table takes them
    as they are (no merge into keyword arguments it would sort again)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from listing import ListingTable
    from listing.options import ListingOptions

    (tmp_path / "d=1").mkdir()
    pq.write_table(pa.table({"x": [1, 2]}), tmp_path / "d=1" / "a.parquet")
    config = SourceConfig.parse({"path": str(tmp_path), "maxPartitionBytes": "1k",
                                 "mergeSchema": "yes"})
    assert config.listing_options == ListingOptions(max_partition_bytes=1024)
    assert config.file_format.options["merge_schema"] is True
    table = config.open()
    assert table.options is config.listing_options and table.format is config.file_format
    with pytest.raises(OptionError, match="batch_size given beside listing_options"):
        ListingTable.open(str(tmp_path), listing_options=ListingOptions(), batch_size=5)
