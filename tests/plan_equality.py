"""One check shared by the tests of plans held as columns: a plan of columns is, in
everything a caller or Spark sees, the plan of rows of the same listing."""

from __future__ import annotations

import pickle
from collections.abc import Iterable

from listing.file_columns import FileColumns
from listing.scan import ScanPlan


def assert_columns_plan_is_rows_plan(columnar: ScanPlan, rows: ScanPlan,
                                     counters: Iterable[str]) -> None:
    """``columnar`` holds its files as columns and makes none of them for its explain,
    metrics (``counters``), groups and pickled bytes, all equal to those of ``rows``; its
    files, once asked for, are the files of ``rows`` in the same order."""
    assert isinstance(columnar.planned, FileColumns)
    assert isinstance(rows.planned, list)
    assert columnar.file_count == rows.file_count > 0
    # nothing per file made yet: explain, metrics and pickling read the columns
    assert columnar.explain() == rows.explain()
    assert columnar.summary() == rows.summary() and repr(columnar) == repr(rows)
    for k in counters:
        assert columnar.metrics.get(k) == rows.metrics.get(k), k
    assert [pickle.dumps(g, pickle.HIGHEST_PROTOCOL) for g in columnar.file_groups] == \
        [pickle.dumps(g, pickle.HIGHEST_PROTOCOL) for g in rows.file_groups]
    assert [(g.index, g.file_count, g.bytes) for g in columnar.file_groups] == \
        [(g.index, len(g.files), g.bytes) for g in rows.file_groups]
    assert columnar.planned._list is None  # still no PartitionedFile
    assert columnar.key_grouped == rows.key_grouped and columnar.packing == rows.packing
    # then the files, asked for: equal, in the same order
    assert columnar.files == rows.files
    assert [(g.index, g.files) for g in columnar.file_groups] == \
        [(g.index, g.files) for g in rows.file_groups]
