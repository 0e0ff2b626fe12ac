"""One check shared by the tests of plans from several sources of files: every source
(a local scandir, fsspec's listing, S3 pages parsed into columns or given as one
ObjectMeta a key, the listing cache) plans as columns, and two sources of the same files
plan alike, in everything a caller or Spark sees."""

from __future__ import annotations

import pickle
from collections.abc import Iterable

from listing.file_columns import FileColumns
from listing.files import FileGroup
from listing.scan import ScanPlan


def assert_plans_alike(plan: ScanPlan, other: ScanPlan, counters: Iterable[str]) -> None:
    """``plan`` and ``other`` hold their files as columns and make none of them for their
    explain, metrics (``counters``), groups and pickled bytes, all equal; their files,
    once asked for, are equal and in the same order; and every group pickles to the bytes
    of the group of its files as rows (``FileGroup(index, files)``: what an executor
    unpickles)."""
    for p in (plan, other):
        assert isinstance(p.planned, FileColumns)
    assert plan.file_count == other.file_count > 0
    # nothing per file made yet: explain, metrics and pickling read the columns
    assert plan.explain() == other.explain()
    assert plan.summary() == other.summary() and repr(plan) == repr(other)
    for k in counters:
        assert plan.metrics.get(k) == other.metrics.get(k), k
    pickled = [pickle.dumps(g, pickle.HIGHEST_PROTOCOL) for g in plan.file_groups]
    assert pickled == [pickle.dumps(g, pickle.HIGHEST_PROTOCOL) for g in other.file_groups]
    counts = [(g.index, g.file_count, g.bytes) for g in plan.file_groups]
    assert counts == [(g.index, g.file_count, g.bytes) for g in other.file_groups]
    for p in (plan, other):
        assert p.planned._list is None  # still no PartitionedFile
    assert plan.key_grouped == other.key_grouped and plan.packing == other.packing
    # then the files, asked for: equal, in the same order
    assert plan.files == other.files
    assert [(g.index, g.files) for g in plan.file_groups] == \
        [(g.index, g.files) for g in other.file_groups]
    assert counts == [(g.index, len(g.files), sum(f.length for f in g.files))
                      for g in plan.file_groups]
    # a group of columns pickles as the group of its files as rows
    assert pickled == [pickle.dumps(FileGroup(g.index, g.files), pickle.HIGHEST_PROTOCOL)
                       for g in plan.file_groups]
