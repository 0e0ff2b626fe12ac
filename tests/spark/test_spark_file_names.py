"""Which files of a folder a given format reads, and how it decodes them, against Spark's
own JSON reader (the oracle): every visible name, compression by the name's suffix."""

from __future__ import annotations

import bz2
import gzip
import json
import zlib
from pathlib import Path

import pyarrow as pa
import pytest

from listing.table import ListingTable
from listing.testing.datasets import hadoop_snappy

SCHEMA = pa.schema([("f", pa.string()), ("i", pa.int64())])
DDL = "f string, i long"


def _rows(tag: str) -> bytes:
    return "".join(json.dumps({"f": tag, "i": i}) + "\n" for i in range(3)).encode()


def _hadoop_lz4(data: bytes) -> bytes:
    packed = pa.Codec("lz4_raw").compress(data, asbytes=True)
    return len(data).to_bytes(4, "big") + len(packed).to_bytes(4, "big") + packed


def _zstd(data: bytes) -> bytes:
    return pa.Codec("zstd").compress(data, asbytes=True)


#: name -> bytes: what services and writers put in a folder. Data files whatever their
#: name, decoded by suffix (in any case); the hidden ones Spark and we skip alike
FILES = {
    "events-1-2026-11-27-13-00-00-0f0e": _rows("none"),  # Firehose, uncompressed
    "events-1-2026-11-27-13-05-00-1a2b.gz": gzip.compress(_rows("gz")),
    "a_CloudTrail_us-east-1_20261127T1300Z_X.json.gz": gzip.compress(_rows("json.gz")),
    "upper.GZ": gzip.compress(_rows("GZ")),
    "b.bz2": bz2.compress(_rows("bz2")),
    "c.deflate": zlib.compress(_rows("deflate")),
    "d.zst": _zstd(_rows("zst")),
    "e.snappy": hadoop_snappy(_rows("snappy")),
    "f.lz4": _hadoop_lz4(_rows("lz4")),
    "notes.txt": _rows("txt"),
    "plain.json": _rows("json"),
    "_SUCCESS": b"",
    ".part-9.crc": b"\x00crc",
    "_temporary": _rows("hidden"),
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("names")
    for name, data in FILES.items():
        (root / name).write_bytes(data)
    return root


def _sorted(rows: list[tuple[str, int]]) -> list[tuple[str, int]]:
    return sorted(rows)


def test_a_given_format_reads_every_name_as_spark_does(spark, folder):
    expected = _sorted([(r.f, r.i) for r in
                        spark.read.schema(DDL).option("mode", "FAILFAST").json(str(folder))
                        .collect()])
    # positive control: Spark read every data file, decoded, and none of the hidden ones
    assert {f for f, _ in expected} == {"none", "gz", "json.gz", "GZ", "bz2", "deflate", "zst",
                                        "snappy", "lz4", "txt", "json"}
    ours = ListingTable.open(str(folder), format="json", schema=SCHEMA).to_arrow()
    assert _sorted(list(zip(ours["f"].to_pylist(), ours["i"].to_pylist(),
                            strict=True))) == expected
    for engine in ("python", "native"):  # native: Spark's reader over our file list
        through_spark = (spark.read.format("listing").option("format", "json")
                         .option("engine", engine).schema(DDL).load(str(folder)).collect())
        assert _sorted([(r.f, r.i) for r in through_spark]) == expected, engine


def test_path_glob_filter_narrows_by_suffix_as_spark_does(spark, folder):
    spark_rows = (spark.read.schema(DDL).option("pathGlobFilter", "*.gz").json(str(folder))
                  .collect())
    expected = _sorted([(r.f, r.i) for r in spark_rows])
    assert {f for f, _ in expected} == {"gz", "json.gz"}  # Hadoop's glob is case-sensitive
    ours = ListingTable.open(str(folder), format="json", schema=SCHEMA,
                             path_glob_filter="*.gz").to_arrow()
    assert _sorted(list(zip(ours["f"].to_pylist(), ours["i"].to_pylist(),
                            strict=True))) == expected
