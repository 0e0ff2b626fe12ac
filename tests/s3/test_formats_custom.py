"""Custom formats (``examples/``) and every format end to end through ``ListingTable`` on S3.

The examples register themselves on import, exactly as a user's module would; the tables
are then opened by format *name*, partition-filtered, and compared with ground truth.
"""

from __future__ import annotations

import datetime as dt
import gzip
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pyarrow as pa
import pytest

from listing import ListingTable, formats
from listing.errors import OptionError
from listing.files import PartitionedFile
from listing.formats.base import CorruptFileError
from listing.spark.types import spark_schema
from listing.storage import StorageSpec
from listing.testing import datasets
from listing.testing.s3 import S3Server

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # examples/ is not an installed package
    sys.path.insert(0, str(ROOT))

from examples.fixed_width_format import FixedWidthFormat, layout_from_header  # noqa: E402
from examples.tsv_format import TsvFormat  # noqa: E402

FWF = (
    "id    name      amount  day\n"
    "1     alice      12.50  2026-03-01\n"
    "2     bob         7.00  2026-03-02\n"
    "3     Zoë               2026-03-03\n"
    "\n"
    "4     dave      -1.25   \n"
)
FWF_SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64()),
                        ("day", pa.date32())])
FWF_ROWS = [
    {"id": 1, "name": "alice", "amount": 12.5, "day": dt.date(2026, 3, 1)},
    {"id": 2, "name": "bob", "amount": 7.0, "day": dt.date(2026, 3, 2)},
    {"id": 3, "name": "Zoë", "amount": None, "day": dt.date(2026, 3, 3)},
    {"id": 4, "name": "dave", "amount": -1.25, "day": None},
]


@pytest.fixture(scope="module")
def bucket(s3_server: S3Server) -> Iterator[str]:
    name = s3_server.create_bucket(f"custom-{uuid.uuid4().hex[:12]}")
    yield name
    s3_server.drop_bucket(name)


@pytest.fixture
def root(bucket: str) -> str:
    return f"s3://{bucket}/{uuid.uuid4().hex[:8]}"


@pytest.fixture
def fs(s3_server: S3Server) -> fsspec.AbstractFileSystem:
    return fsspec.filesystem("s3", **s3_server.storage_options)


def put(fs: fsspec.AbstractFileSystem, url: str, data: bytes) -> PartitionedFile:
    fs.pipe(url.removeprefix("s3://"), data)
    return PartitionedFile(url, len(data))


def read(fmt: formats.FileFormat, file: PartitionedFile, spec: StorageSpec,
         schema: pa.Schema, **kwargs: object) -> pa.Table:
    source = fmt.file_source(schema, storage=spec, **kwargs)  # type: ignore[arg-type]
    return pa.Table.from_batches(list(source.create_opener().open(file)),
                                 schema=source.output_schema)


# --- the examples as formats -------------------------------------------------------------------

def test_examples_register_by_name() -> None:
    assert isinstance(formats.get("tsv"), TsvFormat)
    assert isinstance(formats.get("fixed_width"), FixedWidthFormat)
    assert isinstance(formats.for_path("s3://b/t/x.tsv.gz"), TsvFormat)


def test_tsv(fs, root, s3_server: S3Server) -> None:
    spec = StorageSpec("s3", s3_server.storage_options)
    file = put(fs, f"{root}/a.tsv", b'id\tnote\tv\n1\tsays "hi", ok\t1.5\n2\t\t\n')
    fmt = formats.get("tsv")
    schema = fmt.infer_schema([file], spec)
    assert schema == pa.schema([("id", pa.int64()), ("note", pa.string()), ("v", pa.float64())])
    assert read(fmt, file, spec, schema).to_pylist() == [
        {"id": 1, "note": 'says "hi", ok', "v": 1.5}, {"id": 2, "note": None, "v": None}]


def test_fixed_width_layout_from_header() -> None:
    assert layout_from_header("id    name      amount  day") == [
        ("id", 0, 6), ("name", 6, 16), ("amount", 16, 24), ("day", 24, None)]


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_fixed_width_infers_and_reads(fs, root, s3_server: S3Server, suffix: str) -> None:
    spec = StorageSpec("s3", s3_server.storage_options)
    data = FWF.encode()
    file = put(fs, f"{root}/a.fwf{suffix}", gzip.compress(data) if suffix else data)
    fmt = FixedWidthFormat()
    schema = fmt.infer_schema([file], spec)
    assert schema == FWF_SCHEMA
    assert read(fmt, file, spec, schema).to_pylist() == FWF_ROWS
    assert read(fmt, file, spec, schema, projection=["day", "id"]).column("id").to_pylist() == [
        1, 2, 3, 4]
    counted = read(fmt, file, spec, schema, projection=[])
    assert counted.num_rows == 4
    got = read(fmt, file, spec, spark_schema(schema), batch_size=3)
    assert got.schema == spark_schema(schema)


def test_fixed_width_every_split_reads_each_row_once(fs, root, s3_server: S3Server) -> None:
    spec = StorageSpec("s3", s3_server.storage_options)
    file = put(fs, f"{root}/a.fwf", FWF.encode())
    fmt = FixedWidthFormat()
    assert fmt.is_splittable(file)
    for at in range(1, file.size, 3):
        rows = (read(fmt, file.with_range(0, at), spec, FWF_SCHEMA).to_pylist()
                + read(fmt, file.with_range(at, file.size), spec, FWF_SCHEMA).to_pylist())
        assert rows == FWF_ROWS, at


def test_fixed_width_explicit_columns(fs, root, s3_server: S3Server) -> None:
    spec = StorageSpec("s3", s3_server.storage_options)
    file = put(fs, f"{root}/raw.txt", b"0001X  3.5\n0002Y 10.0\n")
    fmt = formats.get("fixed_width", columns="id:4,code:1,v:5", header="false")
    schema = fmt.infer_schema([file], spec)
    assert schema == pa.schema([("id", pa.int64()), ("code", pa.string()), ("v", pa.float64())])
    assert read(fmt, file, spec, schema).to_pylist() == [
        {"id": 1, "code": "X", "v": 3.5}, {"id": 2, "code": "Y", "v": 10.0}]
    with pytest.raises(OptionError, match="fixed_width needs a header line or the 'columns' "
                                          "option"):
        FixedWidthFormat(header=False)


def test_fixed_width_bad_value_names_file_and_column(fs, root, s3_server: S3Server) -> None:
    spec = StorageSpec("s3", s3_server.storage_options)
    file = put(fs, f"{root}/bad.fwf", FWF.replace("-1.25 ", "n/a   ").encode())
    with pytest.raises(CorruptFileError, match=r"bad\.fwf.*column 'amount'"):
        read(FixedWidthFormat(), file, spec, FWF_SCHEMA)


# --- end to end: ListingTable on S3 -----------------------------------------------------------

def partitioned(fs, root: str, ext: str, encode) -> list[dict]:
    """region=us|eu / day=1..3 / part-0.<ext>; returns the rows written (with partitions)."""
    rows = []
    for region in ("us", "eu"):
        for day in (1, 2, 3):
            ids = [day * 100 + i + (0 if region == "us" else 50) for i in range(4)]
            put(fs, f"{root}/region={region}/day={day}/part-0.{ext}", encode(ids))
            rows += [{"id": i, "name": f"n{i}", "region": region, "day": day} for i in ids]
    fs.pipe(f"{root.removeprefix('s3://')}/_SUCCESS", b"")
    return rows


def test_gzip_csv_table_with_partition_filter(fs, root, s3_server: S3Server) -> None:
    opts = s3_server.storage_options
    ds = datasets.daily(root, opts, format="csv.gz", days=5, put=datasets.fast_writer(s3_server))
    table = ListingTable.open(root + "/", format="csv", storage_options=opts)
    assert table.file_schema == ds.schema
    plan = table.scan(where="date >= '2025-01-03' AND region = 'eu' AND amount > 100")
    assert plan.metrics["files_matched"] == 3
    got = plan.to_arrow()
    expected = [r for r in ds.to_table().to_pylist()
                if r["date"] >= dt.date(2025, 1, 3) and r["region"] == "eu" and r["amount"] > 100]
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == expected
    assert got.schema == table.schema


@pytest.mark.parametrize("fmt", ["ndjson", "arrow"])
def test_other_builtin_tables(fs, root, s3_server: S3Server, fmt: str) -> None:
    opts = s3_server.storage_options
    ds = datasets.daily(root, opts, format=fmt, days=3, put=datasets.fast_writer(s3_server))
    table = ListingTable.open(root + "/", format=fmt, storage_options=opts)
    got = table.scan(columns=["id", "region"], where="region = 'us'").to_arrow()
    expected = [{"id": r["id"], "region": "us"} for r in ds.to_table().to_pylist()
                if r["region"] == "us"]
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == expected


def test_tsv_table(fs, root, s3_server: S3Server) -> None:
    rows = partitioned(fs, root, "tsv", lambda ids: (
        "id\tname\n" + "".join(f"{i}\tn{i}\n" for i in ids)).encode())
    table = ListingTable.open(root + "/", format="tsv",
                              storage_options=s3_server.storage_options)
    assert table.schema.names == ["id", "name", "region", "day"]
    plan = table.scan(where="region = 'eu' AND day >= 2")
    assert plan.metrics["files_matched"] == 2
    got = sorted(plan.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got == [r for r in rows if r["region"] == "eu" and r["day"] >= 2]


def test_fixed_width_table(fs, root, s3_server: S3Server) -> None:
    rows = partitioned(fs, root, "fwf", lambda ids: (
        "id      name\n" + "".join(f"{i:<8d}n{i}\n" for i in ids)).encode())
    table = ListingTable.open(root + "/", format="fixed_width",
                              storage_options=s3_server.storage_options,
                              max_partition_bytes=16, open_cost_in_bytes=0)
    plan = table.scan(where="day = 3 AND id > 351")
    assert plan.metrics["files_matched"] == 2
    assert any(f.byte_range for g in plan.file_groups for f in g.files)  # really split
    got = sorted(plan.to_arrow().to_pylist(), key=lambda r: r["id"])
    assert got == [r for r in rows if r["day"] == 3 and r["id"] > 351]
