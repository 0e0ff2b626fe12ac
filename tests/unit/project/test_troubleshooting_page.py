"""docs/troubleshooting.md quotes the messages the code raises: each quoted one is produced
here and found on the page, so a reworded error cannot leave the page showing another."""

from __future__ import annotations

from pathlib import Path

import pytest

from listing import ListingTable
from listing.errors import OptionError, StorageConfigError
from listing.options import storage_options
from listing.spark.java_runtime import JavaMissingError, require_java

PAGE = (Path(__file__).resolve().parents[3] / "docs" / "troubleshooting.md").read_text()


def shown(err: BaseException, upto: str | None = None) -> str:
    """The page's spelling: ``Class: message``, cut before ``upto`` (where it elides)."""
    text = f"{type(err).__name__}: {err}"
    return text if upto is None else text[:text.index(upto) + len(upto)]


def test_the_java_message_is_the_one_raised(tmp_path: Path) -> None:
    with pytest.raises(JavaMissingError) as err:
        require_java({"PATH": str(tmp_path)})
    assert shown(err.value) in PAGE


def test_the_unknown_option_message_is_the_one_raised(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    with pytest.raises(OptionError) as err:
        ListingTable.open(str(tmp_path / "t"), partiton_cols=["day"])
    assert shown(err.value, "keywords: base_path, cache_schema, ") in PAGE
    assert str(err.value).endswith("; parquet options: merge_schema")
    assert "; parquet options: merge_schema\n" in PAGE


def test_the_profile_refusal_is_the_one_raised() -> None:
    with pytest.raises(StorageConfigError) as err:
        storage_options.check("s3", {"profile": "analytics"})
    assert str(err.value) in PAGE

