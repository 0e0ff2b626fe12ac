"""The native hand-off's answer in bounded chunks (``answer_chunks``, ``ListingPlanner.more``
and ListingFileIndex.ask): a plan of any size crosses to the JVM as chunks of at most
``CHUNK_FILES`` files and ``CHUNK_CHARS`` characters, never one string that grows with the
table (Spark's Jackson refuses a string past 20,000,000 characters: 1.9 M files' sizes as
one base64 string). Lowered limits make a small table cross in many chunks, a directory's
files cut between them; Spark then reads exactly the files it reads from one chunk. An
answer the JVM cannot read fails with a short error that keeps the parser's exception."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors.exceptions.captured import CapturedException

from listing import ListingTable
from listing.file_columns import FileColumns
from listing.spark import file_index
from listing.spark.file_index import ListingPlanner, answer_chunks, files_answer
from listing.testing import datasets

NAMES = ["a,b.parquet", "ünï cødé ✓.parquet", "x.parquet", "100%.parquet", "y.parquet"]


def _files(answer: dict[str, Any]) -> list[tuple[str, list[Any], int, int]]:
    """(path, values, size, mtime) of each file of one answer (or chunk), as the JVM reads it
    after a JSON round trip."""
    answer = json.loads(json.dumps(answer))
    sizes = np.frombuffer(base64.b64decode(answer["sizes"]), "<i8").tolist()
    mtimes = np.frombuffer(base64.b64decode(answer["mtimes"]), "<i8").tolist()
    out = [(url + name, values) for url, values, names in answer["dirs"]
           for name in names.split("/")]
    assert len(out) == len(sizes) == len(mtimes)
    return [(p, v, s, m) for (p, v), s, m in zip(out, sizes, mtimes, strict=True)]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("chunks") / "t"
    for k in range(4):
        for name in NAMES[: 2 + k]:  # directories of 2 to 5 files
            folder = root / f"k={k}"
            folder.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.table({"id": list(range(k + 1))}), folder / name)
    return root


@pytest.mark.parametrize(("max_files", "max_chars"), [(1, 10**9), (3, 10**9), (100, 40),
                                                      (4, 60), (100, 1)])
def test_chunks_hold_every_file_once_within_their_bounds(tree, max_files, max_chars):
    for filesystem in (None, "fsspec"):  # a local listing's plan, a listing through fsspec
        from fsspec.implementations.local import LocalFileSystem

        table = ListingTable.open(str(tree), partition_cols=[("k", "int")],
                                  filesystem=None if filesystem is None else LocalFileSystem())
        plan = table.scan()
        chunks = list(answer_chunks(plan.planned, ["k"], max_files, max_chars))
        got = [f for chunk in chunks for f in _files(chunk)]
        assert got == _files(files_answer(plan.planned, ["k"]))  # the one-chunk answer
        assert sorted(p for p, *_ in got) == sorted(f.path for f in plan.files)
        assert len(got) == 14
        for chunk in chunks:
            n = len(_files(chunk))
            chars = sum(len(url) + len(names) + 1 + sum(len(v) for v in values if v)
                        for url, values, names in chunk["dirs"])
            assert 1 <= n <= max_files
            assert chars <= max_chars or n == 1  # a file longer than the bound comes alone
        if max_files == 3:  # a directory of 5 files is cut between chunks
            assert len(chunks) >= 5
            assert any(c["dirs"][-1][0] == d["dirs"][0][0]
                       for c, d in zip(chunks, chunks[1:], strict=False))
    assert list(answer_chunks(FileColumns(), ["k"], 3, 10)) == \
        [{"dirs": [], "sizes": "", "mtimes": ""}]


def test_the_planner_hands_the_rest_out_chunk_by_chunk(tree, monkeypatch):
    monkeypatch.setattr(file_index, "CHUNK_FILES", 4)
    planner = ListingPlanner()
    options = json.dumps({"path": str(tree), "partition_cols": "k:int"})
    schema = ('{"type":"struct","fields":[{"name":"k","type":"integer","nullable":true,'
              '"metadata":{}}]}')
    answer = json.loads(planner.plan(options, schema, "[]"))
    got, chunks = _files(answer), 1
    while answer["more"] is not None:
        answer = json.loads(planner.more(answer["more"]))
        got += _files(answer)
        chunks += 1
    assert chunks == 4 and len(got) == 14  # 4 + 4 + 4 + 2
    assert planner._pending == {}  # noqa: SLF001 - the last chunk forgets the answer
    first = json.loads(planner.plan(options, schema, "[]"))
    planner.release(first["more"])
    assert "no longer kept" in json.loads(planner.more(first["more"]))["error"]


@pytest.fixture(scope="module")
def events(tmp_path_factory):
    root = tmp_path_factory.mktemp("native-chunks") / "events"
    return datasets.daily(str(root), days=6, files_per_partition=3, rows_per_file=4)


def _native(spark, ds):
    return (spark.read.format("listing").option("engine", "native").load(ds.root))


def test_a_plan_in_many_chunks_is_the_files_spark_reads(spark, events, monkeypatch):
    monkeypatch.setattr(file_index, "CHUNK_FILES", 5)  # 36 files: 8 chunks, runs cut
    planner = file_index._PLANNER  # noqa: SLF001 - the driver's registered planner
    asked = []
    more = planner.more
    monkeypatch.setattr(planner, "more", lambda i: asked.append(i) or more(i))
    df = _native(spark, events)
    got = sorted(tuple(r) for r in df.select("id", "amount", "date", "region").collect())
    spark_own = spark.read.parquet(events.root)
    assert got == sorted(tuple(r) for r in
                         spark_own.select("id", "amount", "date", "region").collect())
    assert len(asked) == 7
    assert set(df.inputFiles()) == {"file:" + f.path for f in events.files}
    day = df.where("date = '2025-01-03'")
    asked.clear()
    sizes = {r.file_path: r.file_size for r in day.select("_metadata.*").collect()}
    assert sizes == {"file:" + f.path: Path(f.path).stat().st_size for f in events.files
                     if str(f.partition_values["date"]) == "2025-01-03"}
    assert len(asked) == 1  # 6 files: two chunks
    assert planner._pending == {}  # noqa: SLF001


class _Garbled(ListingPlanner):
    """A planner whose file answers the JVM cannot read: JSON cut short, 100,000
    characters long (a string past Jackson's 20,000,000 characters, as the one sizes
    string of 2.1 M files was, fails the same way: as the parser's exception)."""

    TEXT = '{"dirs": [' + '["file:/x/", [], "a"], ' * 4000 + "oops"

    def plan(self, options_json: str, schema_json: str, filters_json: str) -> str:
        return self.TEXT


def test_an_answer_the_jvm_cannot_read_fails_short_with_its_cause(spark, events):
    garbled = _Garbled()
    garbled.case_sensitive = file_index._PLANNER.case_sensitive  # noqa: SLF001
    index = spark.sparkContext._jvm.io.github.listing.ListingFileIndex  # noqa: SLF001
    index.register(garbled)
    try:
        df = _native(spark, events)
        with pytest.raises((Py4JJavaError, CapturedException)) as raised:
            df.count()
    finally:
        assert file_index.register_planner(spark)
    err = raised.value
    java = err.java_exception if isinstance(err, Py4JJavaError) else err._origin  # noqa: SLF001
    while java is not None and "IllegalStateException" not in java.getClass().getName():
        java = java.getCause()
    assert java is not None, str(err)[:2000]
    message = str(java.getMessage())
    assert message.startswith("listing planner: its answer is not JSON (")
    assert len(message) < 700  # the answer quoted, cut, its length said
    assert f"{_Garbled.TEXT[:200]}… ({len(_Garbled.TEXT)} characters)" in message
    cause = java.getCause()
    assert cause is not None and "JsonParseException" in cause.getClass().getName()
    assert "oops" in str(cause.getMessage())
    assert _native(spark, events).count() == events.num_rows  # the real planner again
