"""The planner's answer to the native hand-off's file index (``files_answer``): a plan's
files a directory at a time, read back as ListingFileIndex.java reads them, are exactly
the files of ``plan.files`` (path, size, modification time in milliseconds, partition
values as text), from a local listing's plan and from a listing through fsspec alike, and
from files whose times are kept as listed (missing, naive, in another zone)."""

from __future__ import annotations

import base64
import datetime as dt
import json
import random
from array import array
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from fsspec.implementations.local import LocalFileSystem

from listing import ListingTable
from listing.file_columns import FileColumns
from listing.hive import cast_text, escape_path_name
from listing.spark.file_index import _millis, files_answer
from listing.storage.dir_files import DirFiles

NAMES = ["a,b.parquet", "q'uo\"te.parquet", "new\nline.parquet", "ünï cødé ✓.parquet",
         "100%.parquet", "%41 sp ace.parquet", "h#sh?x.parquet", "x.parquet"]
CITIES = ["a,b", "it's \"q\"", "new\nline", "ünï ✓", "100%", "%41", "x y", "a/b", "c:d=e"]
COLS = [("city", pa.string()), ("n", pa.int32())]
SCHEMA = pa.schema([("id", pa.int64())])


class ThroughFsspec(LocalFileSystem):
    """fsspec's local filesystem, not exactly its type: listed through fsspec."""


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("answer") / "t"
    rng = random.Random(7)
    for city in CITIES:
        for n in (1, 2):
            folder = root / f"city={escape_path_name(city)}" / f"n={n}"
            folder.mkdir(parents=True)
            for name in NAMES:
                (folder / name).write_bytes(b"x" * rng.randrange(1, 50))
    (root / "city=a,b/n=1/sub").mkdir()  # a folder between a directory's files
    (root / "city=a,b/n=1/sub/in.parquet").write_bytes(b"s")
    (root / "city=a,b/n=1/zz.parquet").write_bytes(b"z")
    (root / "city=__HIVE_DEFAULT_PARTITION__/n=3").mkdir(parents=True)
    (root / "city=__HIVE_DEFAULT_PARTITION__/n=3/null.parquet").write_bytes(b"n")
    return root


def _read_back(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """The files of an answer as ListingFileIndex.ask reads them, after a JSON round trip."""
    answer = json.loads(json.dumps(answer))
    sizes = np.frombuffer(base64.b64decode(answer["sizes"]), "<i8").tolist()
    mtimes = np.frombuffer(base64.b64decode(answer["mtimes"]), "<i8").tolist()
    out: list[dict[str, Any]] = []
    for url, values, names in answer["dirs"]:
        for name in names.split("/"):
            i = len(out)
            out.append({"path": url + name, "size": sizes[i], "mtime": mtimes[i],
                        "values": values})
    assert len(out) == len(sizes) == len(mtimes)
    return out


def _want(files: list[Any], names: list[str]) -> list[dict[str, Any]]:
    """What the planner answered per file before its answer came a directory at a time."""
    return [{"path": f.path, "size": f.size, "mtime": _millis(f.last_modified),
             "values": [cast_text(f.partition_values.get(n)) for n in names]}
            for f in files]


@pytest.mark.parametrize("where", [None, "n = 2", "city = 'a,b'", "city IS NULL"])
def test_the_answer_holds_every_planned_file_as_it_is(tree: Path, where: str | None) -> None:
    local = ListingTable.open(str(tree), partition_cols=COLS, schema=SCHEMA)
    fsspec = ListingTable.open(str(tree), partition_cols=COLS, schema=SCHEMA,
                               filesystem=ThroughFsspec())
    columns_plan, rows_plan = local.scan(where=where), fsspec.scan(where=where)
    names = local.partition_names
    from_columns = _read_back(files_answer(columns_plan.planned, names))
    assert columns_plan.planned._list is None  # answered without a PartitionedFile a file
    want = _want(columns_plan.files, names)
    assert from_columns == want and len(want) > 0
    assert _read_back(files_answer(rows_plan.planned, names)) == want
    if where is None:
        paths = {f["path"] for f in want}
        assert f"{tree}/city=a,b/n=1/sub/in.parquet" in paths
        assert {f"{tree}/city={escape_path_name(CITIES[2])}/n=1/{n}" for n in NAMES} <= paths
        assert [None, "3"] in [f["values"] for f in want]


def test_a_directory_comes_once_with_its_values() -> None:
    """A run's values and URL cross once, its names joined; a name holding a slash (none
    a local listing makes) crosses with what precedes it in its directory's URL."""
    run = DirFiles("/t/k=1/", ["a", "b", "c"], array("q", [1, 2, 3]),
                   array("q", [1_500_000, 2_000_000, 10**15 + 400]),
                   array("d", [0.0] * 3)).compact()
    odd = DirFiles("/t/k=2/", ["x/y", "z"], array("q", [4, 5]), array("q", [0, -1_250_000]),
                   array("d", [0.0] * 2))
    cols = FileColumns([("/t/k=1/", run, {"k": 1}), ("/t/k=2/", odd, {"k": 2})])
    answer = files_answer(cols, ["k"])
    assert answer["dirs"] == [["/t/k=1/", ["1"], "a/b/c"], ["/t/k=2/x/", ["2"], "y"],
                              ["/t/k=2/", ["2"], "z"]]
    assert _read_back(answer) == _want(cols.files(), ["k"])
    assert files_answer(FileColumns(), ["k"]) == {"dirs": [], "sizes": "", "mtimes": ""}


def test_milliseconds_are_floored_as_java_floors_them() -> None:
    """A time's milliseconds are floored, before the epoch too (Java's
    ``File.lastModified``: seconds times 1000 plus the nanoseconds' whole milliseconds),
    from a run's microseconds and from a datetime alike."""
    micros = [1_700_000_000_078_999, 1_700_000_000_079_000, -1, -999, -1000, -1001, 0]
    run = DirFiles("/t/", [str(i) for i in range(len(micros))], array("q", [1] * len(micros)),
                   array("q", micros), array("d", [0.0] * len(micros))).compact()
    got = _read_back(files_answer(FileColumns([("/t/", run, {})]), []))
    floored = [1_700_000_000_078, 1_700_000_000_079, -1, -1, -1, -2, 0]
    assert [f["mtime"] for f in got] == floored
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    assert [_millis(epoch + dt.timedelta(microseconds=m)) for m in micros] == floored


def test_an_s3_listing_s_columns_answer_as_its_rows() -> None:
    """An S3 listing's runs hold their times as microseconds in the zone it gave them:
    the answer's milliseconds are those of the files' datetimes all the same."""
    from listing.storage.dir_files import micros_of, runs_of

    when = [dt.datetime(2026, 3, 1, 12, 0, 0, 123_456, dt.UTC),
            dt.datetime(1969, 12, 31, 23, 59, 59, 999_500, dt.UTC),
            dt.datetime(2026, 3, 2, tzinfo=dt.UTC)]
    micros, tz = micros_of(when)
    keys = ["k=1/a.parquet", "k=1/b.parquet", "k=2/c.parquet"]
    runs = runs_of("s3://b/t/", keys, [10, 20, 30], micros, ["e1", "e2", "e3"], tz)
    cols = FileColumns([(r.directory, r, {"k": i + 1}) for i, r in enumerate(runs)])
    got = _read_back(files_answer(cols, ["k"]))
    assert got == _want(cols.files(), ["k"])
    assert [f["mtime"] for f in got] == [_millis(t) for t in when]


def test_times_kept_as_listed_answer_as_their_datetimes() -> None:
    """Files whose times are no microseconds in one zero-offset zone (a stream's batch, a
    store listing naive times or none) keep them as listed: the answer holds each one's
    milliseconds (0: none), as ``int(t.timestamp() * 1000)``."""
    from dateutil.tz import tzoffset

    from listing.files import PartitionedFile

    when = [None, dt.datetime(2026, 3, 1, 12, 0, 0, 123_456),  # noqa: DTZ001 - naive
            dt.datetime(2026, 3, 1, 12, tzinfo=tzoffset(None, 3600)),
            dt.datetime(2026, 3, 2, tzinfo=dt.UTC)]
    values = {"k": 1}
    files = [PartitionedFile(f"s3://b/t/k=1/{i}.parquet", 10 + i, values, None, t, None)
             for i, t in enumerate(when)]
    cols = FileColumns.of_files(files)
    assert [r.in_datetimes for r in cols.runs] == [True]  # positive: kept as listed
    assert cols.files() == files
    got = _read_back(files_answer(cols, ["k"]))
    assert got == _want(files, ["k"])
    assert [f["mtime"] for f in got] == [0, *(_millis(t) for t in when[1:])]
