"""Listing local and other fsspec tables: only the folders a filter can match are read,
and the ``os.scandir`` lister gives exactly what fsspec's ``LocalFileSystem`` gives.

Directory reads are counted where they happen: ``os.scandir`` calls below the table for
the local lister, ``ls``/``find`` calls of a filesystem given as ``filesystem=`` for the
fsspec one (a subclass of fsspec's local filesystem, listed through fsspec)."""

from __future__ import annotations

import datetime as dt
import os
import pickle
from pathlib import Path

import pyarrow as pa
import pytest
from fsspec.implementations.local import LocalFileSystem

from listing import ListingTable
from listing.files import FileGroup, PartitionedFile, whole_file
from listing.planner.run import LISTED
from listing.storage.lister import Lister
from listing.storage.spec import StorageSpec

COLS = [("date", pa.date32()), ("hour", pa.int32())]
SCHEMA = pa.schema([("id", pa.int64())])
DAYS, HOURS = 62, 3  # January and February 2020
MARCH = "date BETWEEN DATE '2020-02-14' AND DATE '2020-02-15'"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("local") / "t"
    for i in range(DAYS):
        day = dt.date(2020, 1, 1) + dt.timedelta(days=i)
        for h in range(HOURS):
            d = root / f"date={day}" / f"hour={h}"
            d.mkdir(parents=True)
            (d / "part-0.parquet").write_bytes(b"x")
    return root


class CountingFS(LocalFileSystem):
    """fsspec's local filesystem, listed through fsspec (not exactly its type), counting
    the directories each ``ls``/``find`` reads."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[tuple[str, str]] = []

    def ls(self, path, detail=False, **kwargs):  # noqa: ANN001, ANN201 - fsspec's signature
        self.calls.append(("ls", self._strip_protocol(path)))
        return super().ls(path, detail=detail, **kwargs)

    def find(self, path, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN201
        self.calls.append(("find", self._strip_protocol(path)))
        return super().find(path, *args, **kwargs)


def _open(root: Path, **kwargs: object) -> ListingTable:
    return ListingTable.open(str(root), partition_cols=COLS, schema=SCHEMA, **kwargs)


def _scandirs(monkeypatch: pytest.MonkeyPatch, root: Path) -> list[str]:
    """Every directory below ``root`` that ``os.scandir`` reads from now on."""
    read: list[str] = []
    scandir = os.scandir

    def counting(path: str = ".") -> object:
        if str(path).startswith(str(root)):
            read.append(str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", counting)
    return read


def test_a_range_lists_only_its_folders_on_a_local_table(tree, monkeypatch):
    table = _open(tree)
    read = _scandirs(monkeypatch, tree)
    plan = table.scan(where=MARCH)
    assert len(plan.files) == 2 * HOURS
    # the root (for the names starting "date=2020-02-1"), the two days within the range
    # and their hours: never the rest
    assert "list '" + str(tree) + "/date=2020-02-1'" in plan.listing_plan[0]
    days = [d for d in read if Path(d).name.startswith("date=")]
    assert sorted(Path(d).name for d in days) == ["date=2020-02-14", "date=2020-02-15"]
    assert len(read) == 1 + 2 + 2 * HOURS
    # positive control: no filter reads every directory of the tree
    read.clear()
    assert len(table.scan().files) == DAYS * HOURS
    assert len(read) == 1 + DAYS + DAYS * HOURS


def test_a_level_fixed_under_an_open_one_reads_only_its_folders(tree, monkeypatch):
    table = _open(tree)
    every = table.scan().files
    read = _scandirs(monkeypatch, tree)
    plan = table.scan(where="hour = 1")
    # the same files a filter of the whole table keeps, in key order
    assert [f.path for f in plan.files] == [f.path for f in every
                                            if f.partition_values["hour"] == 1]
    assert len(plan.files) == DAYS
    assert plan.listing_plan[0].startswith(f"walk '{tree}/' level by level")
    # the root and each day for their names, then only each day's hour=1: never the
    # other hours' folders
    hours = [Path(d).name for d in read if Path(d).name.startswith("hour=")]
    assert hours == ["hour=1"] * DAYS
    assert len(read) == 1 + DAYS + DAYS
    # positive control: a filter on the first level alone lists the day, all its hours
    read.clear()
    assert len(table.scan(where="date = DATE '2020-01-05'").files) == HOURS
    assert sorted(Path(d).name for d in read) == ["date=2020-01-05"] + [
        f"hour={h}" for h in range(HOURS)]


def test_a_walked_local_table_skips_a_file_at_its_root(tmp_path):
    for h in range(2):
        (tmp_path / "date=2020-01-01" / f"hour={h}").mkdir(parents=True)
        (tmp_path / "date=2020-01-01" / f"hour={h}" / "part-0.parquet").write_bytes(b"x")
    (tmp_path / "notes.txt").write_bytes(b"not data")
    table = _open(tmp_path)
    walked = table.scan(where="hour = 1")
    assert walked.listing_plan[0].startswith("walk")
    assert [Path(f.path).parent.name for f in walked.files] == ["hour=1"]
    # control: the flat listing of the same table skips it too
    flat = table.scan()
    assert flat.listing_plan[0].startswith("list")
    assert len(flat.files) == 2


def test_a_range_lists_only_its_folders_through_fsspec(tree):
    fs = CountingFS()
    table = _open(tree, filesystem=fs)
    fs.calls.clear()
    plan = table.scan(where=MARCH)
    assert len(plan.files) == 2 * HOURS
    root = str(tree)
    assert fs.calls[0] == ("ls", root)
    finds = [p for op, p in fs.calls if op == "find"]
    assert sorted(Path(p).name for p in finds) == ["date=2020-02-14", "date=2020-02-15"]
    assert ("find", root) not in fs.calls
    # positive control: no filter finds below the root
    fs.calls.clear()
    assert len(table.scan().files) == DAYS * HOURS
    assert ("find", root) in fs.calls


def _awkward_tree(root: Path) -> None:
    """Names that sort around "/", hidden and zero-byte files, links, non-ASCII names."""
    files = {"a-b.parquet": b"xx", "a/x.parquet": b"x", "a/b/c.parquet": b"xyz",
             "a.parquet": b"", "a0/y.parquet": b"y", "_SUCCESS": b"", ".hidden/z": b"z",
             "date=2020-01-01/é.parquet": b"e", "date=2020-01-01/_tmp": b"",
             "date=2020-01-0/zz": b"z", "date=2020-01-011/k": b"k", "b c/%3D.parquet": b"q"}
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    os.utime(root / "a/x.parquet", (0, 0))  # a time of 0: the change time is taken
    (root / "empty_dir").mkdir()
    os.symlink(root / "a-b.parquet", root / "link.parquet")
    os.symlink(root / "nowhere", root / "dangling.parquet")
    os.symlink(root / "a", root / "dirlink")


PREFIXES = ["", "a", "a/", "a-", "date=2020-01-0", "date=2020-01-01/", "b c/", "nothing",
            "nothing/", "a/b/c.parquet"]


@pytest.mark.parametrize("delimiter", [False, True])
def test_the_scandir_lister_lists_as_fsspec_does(tmp_path, delimiter):
    _awkward_tree(tmp_path)
    root = str(tmp_path) + "/"
    spec = StorageSpec("file")
    bounds = [(None, None), (root + "a/", None), (None, root + "a0/"),
              (root + "a/b/c.parquet", root + "date=2020-01-01/é.parquet")]
    for prefix in PREFIXES:
        for start_after, stop_after in bounds:
            pages = {}
            for local in (True, False):
                lister = Lister(spec)
                lister._local = local
                pages[local] = [(p.files, p.dirs, p.truncated) for p in lister.pages(
                    root + prefix, delimiter=delimiter, start_after=start_after,
                    stop_after=stop_after)]
                assert lister.counters["list_requests"] == 1
            assert pages[True] == pages[False], (prefix, start_after, stop_after)
    whole = next(Lister(spec).pages(root, delimiter=False)).files
    assert [f.path for f in whole] == sorted(f.path for f in whole)
    assert len(whole) == 15  # every file, hidden, empty and linked ones included


def test_a_local_page_of_columns_is_decided_as_a_page_of_rows(tmp_path):
    # hidden files and folders, a file being copied, a file of another name (read, as
    # Spark reads every name), a folder
    # below the partitions between two files (a directory's files in two runs)
    for name in ["date=2020-01-01/hour=0/a.parquet", "date=2020-01-01/hour=0/_SUCCESS",
                 "date=2020-01-01/hour=0/.a.parquet.crc", "date=2020-01-01/hour=0/b.csv",
                 "date=2020-01-01/hour=0/c.parquet._COPYING_",
                 "date=2020-01-01/hour=1/a.parquet", "date=2020-01-01/hour=1/m/x.parquet",
                 "date=2020-01-01/hour=1/z.parquet", "date=2020-01-02/hour=1/a.parquet",
                 "date=2020-01-02/_tmp/hour=1/a.parquet", "date=2020-01-02/hour=0/.hidden",
                 "_SUCCESS"]:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    local, through_fsspec = _open(tmp_path), _open(tmp_path, filesystem=CountingFS())
    assert Lister(local.storage)._local and not Lister(through_fsspec.storage)._local
    for where in [None, "hour = 1", "date = DATE '2020-01-01'", "hour = 5"]:
        plans = [t.scan(where=where) for t in (local, through_fsspec)]
        assert [(f.path, f.size, f.partition_values, f.last_modified, f.etag)
                for f in plans[0].files] == [(f.path, f.size, f.partition_values,
                                              f.last_modified, f.etag) for f in plans[1].files]
        listed = [{k: p.metrics.get(k) for k in LISTED} for p in plans]
        assert listed[0] == listed[1] and listed[0]["files_listed"], where
        assert plans[0].listing_plan == plans[1].listing_plan
    # positive control: the files a filter keeps differ from the whole table's
    assert len(local.scan(where="hour = 1").files) == 4 < len(local.scan().files) == 6


def test_the_local_lister_is_used_for_local_tables(tree):
    assert Lister(StorageSpec("file"))._local
    assert not Lister(StorageSpec("file", filesystem_factory=CountingFS()))._local


class Own(PartitionedFile):
    """A caller's own kind of file: pickled as it is."""

    __slots__ = ()


def test_file_groups_pickle_as_columns_and_come_back_equal(tree):

    plan = _open(tree).scan()
    assert sum(len(g.files) for g in plan.file_groups) == DAYS * HOURS
    for group in plan.file_groups:
        back = pickle.loads(pickle.dumps(group))
        assert back == group
        assert [f.path for f in back.files] == [f.path for f in group.files]
        # files of one directory share their values, as the listing made them
        by_dir = {f.path.rsplit("/", 1)[0]: f.partition_values for f in back.files}
        assert all(f.partition_values is by_dir[f.path.rsplit("/", 1)[0]] for f in back.files)
    # a directory of many files: its path and values once, each file a name and numbers
    at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    many = tuple(whole_file(f"s3://lake/events/date=2026-01-0{d}/hour={h}/part-{k:05d}.parquet",
                            1000 + k, values, at + dt.timedelta(seconds=k), None)
                 for d in range(1, 4) for h in range(3) for values in [{"date": d, "hour": h}]
                 for k in range(50))
    group = FileGroup(0, many)
    assert pickle.loads(pickle.dumps(group)) == group
    # positive control: the same files pickled one by one (a tuple) cost over 4 times more
    assert len(pickle.dumps(group)) * 4 < len(pickle.dumps(many))
    # byte ranges, ETags, times that are not UTC or absent, a name holding the separator,
    # an empty group
    when = dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    odd = (PartitionedFile("s3://b/t/x=1/a.parquet", 10, {"x": 1}, (0, 5), None, '"e1"'),
           PartitionedFile("s3://b/t/x=1/a.parquet", 10, {"x": 1}, (5, 10), when, '"e1"'),
           whole_file("s3://b/t/x=2/b\0c", 3, {"x": None}, dt.datetime(1969, 12, 31, 23, 59,
                                                                          59, 1, tzinfo=dt.UTC),
                      None))
    for files in (odd, odd[2:], ()):
        group = FileGroup(3, files)
        assert pickle.loads(pickle.dumps(group)) == group

    own = FileGroup(1, (Own("file:///x/a", 1),))
    back = pickle.loads(pickle.dumps(own))
    assert back == own and type(back.files[0]) is Own


def test_a_cached_schema_is_read_once_per_file_version(s3_server, s3_bucket):
    """On moto: opening a table again with ``cache_schema`` reads no file; the sampled
    file rewritten (a new ETag), it is read again; without ``cache_schema`` every open
    reads it (the Python API's default)."""
    from listing.schema_cache import SCHEMAS
    from listing.testing import datasets

    one = pa.table({"id": pa.array([1], pa.int64())})
    two = pa.table({"id": pa.array([1], pa.int64()), "x": pa.array(["a"])})
    key = "t/date=2026-01-01/p.parquet"
    s3_server.put_objects_fast(s3_bucket, {key: datasets.encode(one, "parquet")})
    url = f"s3://{s3_bucket}/t"
    SCHEMAS.clear()

    def opened(**kwargs: object) -> tuple[ListingTable, int, int]:
        with s3_server.log.capture(s3_bucket) as cap:
            table = ListingTable.open(url, storage_options=s3_server.storage_options,
                                      **kwargs)
        return table, cap.count("GET"), cap.count("LIST")

    first, gets, lists = opened(cache_schema=True)
    assert (gets, lists) == (1, 1)
    again, gets, lists = opened(cache_schema=True)
    assert (gets, lists) == (0, 1) and again.schema == first.schema
    assert again.open_metrics["data_files_opened"] == 0
    # positive controls: the default reads it; a rewritten file is read again
    assert opened()[1] == 1
    s3_server.put_objects_fast(s3_bucket, {key: datasets.encode(two, "parquet")})
    changed, gets, _ = opened(cache_schema=True)
    assert gets == 1 and changed.schema.names == ["id", "x", "date"]
    assert opened(cache_schema=True)[1] == 0
