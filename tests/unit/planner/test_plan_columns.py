"""Every source of files plans as columns (:mod:`listing.file_columns`): a local listing
(scandir) and a listing through fsspec of the same tree plan the same files, groups, byte
ranges, pickled bytes, ``explain()`` and metrics, under every packing; each group pickles
as the group of its files as rows; files are made only when asked for."""

from __future__ import annotations

import datetime as dt
import pickle
from array import array
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from fsspec.implementations.local import LocalFileSystem
from plan_equality import assert_plans_alike

from listing import ListingTable
from listing.file_columns import FileColumns
from listing.files import FileGroup, PartitionedFile
from listing.planner.run import LISTED
from listing.scan import ScanPlan
from listing.storage.dir_files import DirFiles

COLS = [("date", pa.date32()), ("hour", pa.int32())]
SCHEMA = pa.schema([("id", pa.int64())])


class ThroughFsspec(LocalFileSystem):
    """fsspec's local filesystem, not exactly its type: listed through fsspec (its files
    given as one ObjectMeta a key, then made runs)."""


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("columns") / "t"
    sizes = iter(range(1, 10_000))
    for d in range(1, 5):
        for h in range(3):
            folder = root / f"date=2020-01-0{d}" / f"hour={h}"
            folder.mkdir(parents=True)
            for k in range(4):
                (folder / f"part-{k}.parquet").write_bytes(b"x" * (next(sizes) * 7 % 61 + 1))
    # a folder below the partitions between two files (a directory's files in two runs),
    # a hidden file and a file of another name (a data file: every name is, as in Spark)
    (root / "date=2020-01-02/hour=1/a.parquet").write_bytes(b"a" * 20)
    (root / "date=2020-01-02/hour=1/m").mkdir()
    (root / "date=2020-01-02/hour=1/m/x.parquet").write_bytes(b"y" * 40)
    (root / "date=2020-01-02/hour=1/z.parquet").write_bytes(b"z" * 90)
    (root / "date=2020-01-02/hour=1/_SUCCESS").write_bytes(b"")
    (root / "date=2020-01-03/hour=0/notes.txt").write_bytes(b"n")
    return root


def _plans(root: Path, where: str | None = None, columns: list[str] | None = None,
           min_partitions: int | None = None, **options: Any) -> tuple[ScanPlan, ScanPlan]:
    local = ListingTable.open(str(root), partition_cols=COLS, schema=SCHEMA, **options)
    fsspec = ListingTable.open(str(root), partition_cols=COLS, schema=SCHEMA,
                               filesystem=ThroughFsspec(), **options)
    return (local.scan(columns, where, min_partitions=min_partitions),
            fsspec.scan(columns, where, min_partitions=min_partitions))


CASES = [
    {},
    {"where": "hour = 1"},
    {"min_partitions": 3},
    # files bigger than a split: byte ranges
    {"max_partition_bytes": 16, "open_cost_in_bytes": 4, "min_partitions": 2},
    # one group per partition value
    {"key_grouped": True, "open_cost_in_bytes": 1, "min_partitions": 2},
    {"key_grouped": True, "open_cost_in_bytes": 1, "max_partition_bytes": 30,
     "min_partitions": 2},
    # a read of footers only (partition columns alone): whole files in key order
    {"columns": ["date"], "min_partitions": 2},
]


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_a_local_and_an_fsspec_listing_plan_alike(tree, case):
    local, fsspec = _plans(tree, **case)
    assert_plans_alike(local, fsspec, ("bytes", "file_groups", *LISTED))
    assert local.file_groups == fsspec.file_groups and local.planned == fsspec.planned
    for g, r in zip(local.file_groups, fsspec.file_groups, strict=True):
        back = pickle.loads(pickle.dumps(g))
        assert back == g and back.files == g.files
        # files share their values objects alike
        assert _sharing(g.files) == _sharing(r.files)
    assert _sharing(local.files) == _sharing(fsspec.files)


def _sharing(files: Any) -> list[int]:
    """For each file, the position of the first file holding the same values object."""
    first: dict[int, int] = {}
    return [first.setdefault(id(f.partition_values), i) for i, f in enumerate(files)]


def test_the_cases_cover_splits_key_groups_and_footer_reads(tree):
    """Positive controls: the cases above plan what they are named for."""
    split, _ = _plans(tree, **CASES[3])
    assert any(f.byte_range for g in split.file_groups for f in g.files)
    keyed, _ = _plans(tree, **CASES[4])
    assert keyed.key_grouped
    whole, _ = _plans(tree)
    assert not any(f.byte_range for g in whole.file_groups for f in g.files)
    # two runs of one directory: its files before and after its subfolder
    runs = [r.directory.rsplit("/", 3)[-3:] for r in whole.planned.runs]
    assert runs.count(["date=2020-01-02", "hour=1", ""]) == 2


def test_a_compacted_run_reads_as_its_names():
    names = ["a.parquet", "b", "é-ü.parquet", "part-00001.parquet", "z" * 300]
    run = DirFiles("/t/x=1/")
    for i, name in enumerate(names):
        run.append(name, i, i, float(i))
    assert run.compact() is run
    assert run.names == names and [run.name(i) for i in range(len(names))] == names
    assert list(run.paths()) == ["/t/x=1/" + n for n in names] and len(run) == len(names)
    kept = run.taken([1, 4])
    assert kept.names == ["b", "z" * 300] and list(kept.sizes) == [1, 4]
    # a name holding the separator keeps its run as a list; an empty run stays empty
    odd = DirFiles("/t/", ["a\0b"], array("q", [1]), array("q", [0]), array("d", [0.0]))
    assert odd.compact().names == ["a\0b"] and odd.name(0) == "a\0b"
    assert DirFiles("/t/").compact().names == []


@pytest.mark.parametrize("where", [None, "hour = 1"])
def test_partitions_count_runs_of_one_directory_once(tree, where):
    local = ListingTable.open(str(tree), partition_cols=COLS, schema=SCHEMA)
    fsspec = ListingTable.open(str(tree), partition_cols=COLS, schema=SCHEMA,
                               filesystem=ThroughFsspec())
    assert isinstance(local.scan(where=where).planned, FileColumns)
    got = local.partitions(where)
    assert got.equals(fsspec.partitions(where))
    # two runs of one directory count as one partition; counted from the files as rows
    assert got.num_rows == (12 if where is None else 4)
    files = local.scan(where=where).files
    want: dict[tuple[object, ...], list[int]] = {}
    for f in files:
        entry = want.setdefault((f.partition_values["date"], f.partition_values["hour"]),
                                [0, 0])
        entry[0] += 1
        entry[1] += f.size
    assert {(d, h): [n, b] for d, h, n, b in zip(*got.to_pydict().values(), strict=True)} \
        == want


def test_a_scan_answered_by_the_listing_cache_plans_columns(tree):
    """A listing answered from ``list_cache_ttl``'s cache (pages of ObjectMeta) plans as
    columns, the same groups and pickled bytes as the listing it was kept from."""
    ttl = {"list_cache_ttl": 600}
    listed = ListingTable.open(str(tree), partition_cols=COLS, schema=SCHEMA, **ttl).scan(
        min_partitions=3)
    listed.explain()  # nothing made per file by explain, pickling or metrics
    cached = ListingTable.open(str(tree), partition_cols=COLS, schema=SCHEMA, **ttl).scan(
        min_partitions=3)
    assert cached.metrics["list_cache_hits"] >= 1 and cached.metrics["list_requests"] == 0
    assert isinstance(cached.planned, FileColumns)
    pickled = [pickle.dumps(g, pickle.HIGHEST_PROTOCOL) for g in cached.file_groups]
    cached.explain()
    assert cached.planned._list is None
    assert pickled == [pickle.dumps(g, pickle.HIGHEST_PROTOCOL) for g in listed.file_groups]
    assert pickled == [pickle.dumps(FileGroup(g.index, g.files), pickle.HIGHEST_PROTOCOL)
                       for g in cached.file_groups]
    assert cached.files == listed.files and cached.file_count == 52
    for k in ("bytes", "file_groups", *LISTED):
        assert cached.metrics[k] == listed.metrics[k], k


def test_files_chosen_already_become_runs_that_give_them_back():
    """``plan_files``' edge (``FileColumns.of_files``): files of one directory and one
    values object make one run, and come back equal, in order, sharing their values;
    times are microseconds when all are in UTC, else kept as given; a byte range or a
    subclass is refused."""
    a, b = {"k": 1}, {"k": 2}
    when = dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC)
    files = [PartitionedFile("s3://b/t/k=1/x", 1, a, None, when, "e1"),
             PartitionedFile("s3://b/t/k=1/y", 2, a, None, when, None),
             PartitionedFile("s3://b/t/k=2/z", 3, b, None, None, "e3"),
             PartitionedFile("s3://b/t/k=1/w", 4, a, None, when, "e4")]
    cols = FileColumns.of_files(files)
    assert [(h, len(r)) for h, r in zip(cols.heads, cols.runs, strict=True)] == \
        [("s3://b/t/k=1/", 2), ("s3://b/t/k=2/", 1), ("s3://b/t/k=1/", 1)]
    assert [r.in_datetimes for r in cols.runs] == [False, True, False]
    assert cols.files() == files and _sharing(cols.files()) == [0, 0, 2, 0]
    group = FileGroup.of_columns(0, cols.group(np.array([3, 2, 0]), None))
    assert pickle.dumps(group) == pickle.dumps(FileGroup(0, group.files))
    with pytest.raises(ValueError, match="whole"):
        FileColumns.of_files([files[0].with_range(0, 1)])

    class Own(PartitionedFile):
        pass

    with pytest.raises(ValueError, match="whole"):
        FileColumns.of_files([Own("s3://b/t/x", 1)])


def test_a_split_into_pieces_other_than_byte_ranges_is_refused(tree):
    """A format's ``split`` cuts a file into byte ranges of it: other pieces (another
    path) make packing fail, naming the format, rather than plan something else."""
    from listing.errors import ListingError
    from listing.options import ListingOptions
    from listing.packing import pack_file_groups

    cols = ListingTable.open(str(tree), partition_cols=COLS, schema=SCHEMA).scan().planned

    class Elsewhere:
        def split(self, file: PartitionedFile, target_bytes: int) -> list[PartitionedFile]:
            return [PartitionedFile(file.path + ".other", file.size)]

    class Ranges:
        def split(self, file: PartitionedFile, target_bytes: int) -> list[PartitionedFile]:
            return [file.with_range(0, 1), file.with_range(1, file.size)]

    opts = ListingOptions(max_partition_bytes=16, open_cost_in_bytes=4)
    with pytest.raises(ListingError, match="Elsewhere.split cut .* not byte ranges"):
        pack_file_groups(cols, Elsewhere(), opts, 2)
    # positive control: byte ranges of the file are pieces
    groups = pack_file_groups(cols, Ranges(), opts, 2)
    assert any(f.byte_range for g in groups for f in g.files)
