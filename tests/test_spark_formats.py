"""Every format through Spark: listed from the S3 server, pruned, read in Spark tasks.

The custom formats come from ``examples/``, which Spark's Python workers cannot import:
they reach the workers because the toolkit ships users' format classes by value.
"""

from __future__ import annotations

import gzip
import json
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pytest

from listing import ListingTable, formats
from listing.testing import datasets

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # examples/ is a user's project folder, not an installed package
    sys.path.insert(0, str(ROOT))

from examples.fixed_width_format import FixedWidthFormat  # noqa: E402
from examples.tsv_format import TsvFormat  # noqa: E402

DAYS = ("2026-03-01", "2026-03-02", "2026-03-03")


@pytest.fixture(scope="module")
def bucket(s3_server):
    name = s3_server.create_bucket(f"fmt-{uuid.uuid4().hex[:8]}")
    yield name
    s3_server.drop_bucket(name)


def options(spark, server, fmt):
    return (spark.read.format("listing").option("format", fmt)
            .option("storage_options", json.dumps(server.storage_options)))


@pytest.mark.parametrize("fmt", ["csv.gz", "ndjson", "arrow", "parquet"])
def test_builtin_formats_through_spark(spark, s3_server, bucket, fmt):
    ds = datasets.daily(f"s3://{bucket}/{fmt.replace('.', '_')}", s3_server.storage_options,
                        days=5, format=fmt, put=datasets.fast_writer(s3_server))
    name = fmt.split(".")[0]
    df = options(spark, s3_server, name).load(ds.root)
    with s3_server.log.capture() as cap:
        rows = df.where("date = '2025-01-03' AND region = 'eu'").select("id", "amount").collect()
    want = [f for f in ds.files if str(f.partition_values["date"]) == "2025-01-03"
            and f.partition_values["region"] == "eu"]
    assert sorted(r.id for r in rows) == sorted(i for f in want
                                                for i in f.table.column("id").to_pylist())
    assert cap.count("LIST") == 1
    assert df.count() == ds.num_rows


def tsv_bytes(day: str, n: int) -> bytes:
    lines = ["id\tnote\tamount"] + [f"{i}\tday {day} row {i}\t{i * 1.5}" for i in range(n)]
    return ("\n".join(lines) + "\n").encode()


def test_registered_custom_format_by_name(spark, s3_server, bucket):
    assert formats.get("tsv").__class__ is TsvFormat  # registered by importing the example
    s3_server.put_objects_fast(bucket, {
        f"tsv/day={d}/part-0.tsv.gz": gzip.compress(tsv_bytes(d, 4)) for d in DAYS})
    df = options(spark, s3_server, "tsv").load(f"s3://{bucket}/tsv")
    with s3_server.log.capture() as cap:
        rows = df.where("day = '2026-03-02'").collect()
    assert sorted(r.note for r in rows) == [f"day 2026-03-02 row {i}" for i in range(4)]
    assert cap.count("LIST") == 1 and cap.count("GET") == 1


def fixed_width_bytes(day: str, n: int) -> bytes:
    lines = ["id  code amount"] + [f"{i:<4}{'abcd'[i % 4]:<5}{i * 2:>6}" for i in range(n)]
    return ("\n".join(lines) + "\n").encode()


def test_custom_format_instance_through_to_spark(spark, s3_server, bucket):
    s3_server.put_objects_fast(bucket, {
        f"fw/day={d}/part-0.txt": fixed_width_bytes(d, 6) for d in DAYS})
    table = ListingTable.open(f"s3://{bucket}/fw", format=FixedWidthFormat(),
                              storage_options=s3_server.storage_options)
    assert table.schema.names == ["id", "code", "amount", "day"]
    df = table.to_spark(spark, columns=["id", "code", "day"], where="day >= '2026-03-02'")
    rows = df.collect()
    assert len(rows) == 12 and {str(r.day) for r in rows} == {"2026-03-02", "2026-03-03"}
    assert sorted({r.code for r in rows}) == ["a", "b", "c", "d"]


def test_corrupt_file_is_named_or_counted_in_spark(spark, s3_server, bucket):
    good = datasets.encode(pa.table({"id": [1, 2]}), "parquet")
    s3_server.put_objects_fast(bucket, {"bad/k=1/a.parquet": good,
                                        "bad/k=2/b.parquet": b"PAR1 garbage"})
    reader = options(spark, s3_server, "parquet").schema("id long, k int")
    with pytest.raises(Exception, match="k=2/b.parquet"):
        reader.load(f"s3://{bucket}/bad").collect()
    rows = reader.option("ignoreCorruptFiles", "true").load(f"s3://{bucket}/bad").collect()
    assert sorted(r.id for r in rows) == [1, 2]
