"""A local table URL with no files says whether its directory exists (no store to ask)."""

from __future__ import annotations

from pathlib import Path

import pytest

from listing import ListingTable
from listing.errors import TableNotFoundError


def test_a_missing_and_an_empty_directory_are_told_apart(tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError) as err:
        ListingTable.open(str(tmp_path / "missing"))
    assert str(err.value) == f"no objects under {tmp_path}/missing/: no such directory"
    (tmp_path / "empty" / "date=2026-01-01").mkdir(parents=True)
    with pytest.raises(TableNotFoundError) as err:
        ListingTable.open(str(tmp_path / "empty"))
    assert str(err.value) == (f"no objects under {tmp_path}/empty/: the directory exists but "
                              "holds no files")
    (tmp_path / "empty" / "date=2026-01-01" / "a.csv").write_text("id\n1\n")
    assert ListingTable.open(str(tmp_path / "empty"), format="csv", header=True).partition_cols
