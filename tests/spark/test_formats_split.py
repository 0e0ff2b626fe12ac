"""Byte-range splitting of line formats: every row is read exactly once, whatever the cuts.

The property tests write random rows to the moto S3 server and read them back through
arbitrary byte ranges (random cut points, and the planner's own ``split()``); the union of
the ranges must be the file's rows, in order, with nothing lost or read twice. A local,
exhaustive test checks the same at the byte level for every pair of cut points.
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Iterator

import fsspec
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from listing.files import PartitionedFile
from listing.formats.csv import CsvFormat
from listing.formats.json import JsonFormat
from listing.formats.text import LineStream
from listing.storage import StorageSpec
from listing.testing.s3 import S3Server

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
# any text on one line: delimiters, quotes, spaces and non-ASCII included
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"),
               max_size=12)
ROWS = st.lists(st.tuples(st.integers(-(2**53), 2**53), TEXT), max_size=50)


@pytest.fixture(scope="module")
def s3(s3_server: S3Server) -> Iterator[tuple[fsspec.AbstractFileSystem, StorageSpec, str]]:
    bucket = s3_server.create_bucket(f"split-{uuid.uuid4().hex[:12]}")
    options = s3_server.storage_options
    yield fsspec.filesystem("s3", **options), StorageSpec("s3", options), bucket
    s3_server.drop_bucket(bucket)


def csv_bytes(rows: list[tuple[int, str]], eol: str) -> bytes:
    t = pa.table({"id": [r[0] for r in rows], "name": [r[1] for r in rows]}, schema=SCHEMA)
    sink = io.BytesIO()
    pacsv.write_csv(t, sink, pacsv.WriteOptions(eol=eol))
    return sink.getvalue()


def ndjson_bytes(rows: list[tuple[int, str]], eol: str, blank_every: int) -> bytes:
    lines = []
    for i, (id_, name) in enumerate(rows):
        lines.append(json.dumps({"id": id_, "name": name, "extra": [i]}) + eol)
        if blank_every and i % blank_every == 0:
            lines.append(eol)  # blank lines are allowed between records
    return "".join(lines).encode()


def read_pieces(fmt: object, spec: StorageSpec,
                pieces: list[PartitionedFile]) -> list[tuple[int, str | None]]:
    out: list[tuple[int, str | None]] = []
    for piece in pieces:
        source = fmt.file_source(SCHEMA, storage=spec)  # type: ignore[attr-defined]
        for batch in source.create_opener().open(piece):
            out += zip(batch.column("id").to_pylist(), batch.column("name").to_pylist(),
                       strict=True)
    return out


def read_ranges(fmt: object, spec: StorageSpec, file: PartitionedFile,
                bounds: list[int]) -> list[tuple[int, str | None]]:
    return read_pieces(fmt, spec, [file.with_range(start, end)
                                   for start, end in zip(bounds, bounds[1:], strict=False)])


def cuts(data: st.DataObject, size: int) -> list[int]:
    inner = data.draw(st.lists(st.integers(1, max(size - 1, 1)), max_size=10, unique=True))
    return sorted({0, size, *(c for c in inner if 0 < c < size)})


@settings(max_examples=30, deadline=None)
@given(rows=ROWS, data=st.data(), eol=st.sampled_from(["\n", "\r\n"]))
def test_csv_ranges_partition_the_rows(s3, rows, data, eol) -> None:
    fs, spec, bucket = s3
    payload = csv_bytes(rows, eol)
    path = f"{bucket}/{uuid.uuid4().hex}.csv"
    fs.pipe(path, payload)
    file = PartitionedFile(f"s3://{path}", len(payload))
    expected = [(i, name or None) for i, name in rows]  # "" is the default null spelling
    assert read_ranges(CsvFormat(), spec, file, cuts(data, len(payload))) == expected
    target = data.draw(st.integers(max(1, len(payload) // 12), len(payload) + 1))
    assert read_pieces(CsvFormat(), spec, CsvFormat().split(file, target)) == expected


@settings(max_examples=30, deadline=None)
@given(rows=ROWS, data=st.data(), eol=st.sampled_from(["\n", "\r\n"]),
       blank_every=st.integers(0, 4))
def test_ndjson_ranges_partition_the_rows(s3, rows, data, eol, blank_every) -> None:
    fs, spec, bucket = s3
    payload = ndjson_bytes(rows, eol, blank_every)
    path = f"{bucket}/{uuid.uuid4().hex}.ndjson"
    fs.pipe(path, payload)
    file = PartitionedFile(f"s3://{path}", len(payload))
    expected = list(rows)
    assert read_ranges(JsonFormat(), spec, file, cuts(data, len(payload))) == expected


@pytest.mark.parametrize("payload", [
    b"a,b\n1,x\n22,yy\n333,zzz\n",
    b"a,b\r\n1,x\r\n\r\n22,\"y,y\"\r\n333,zzz",  # CRLF, a blank line, no final newline
    b"\n\n\nlonger-line-than-any-range-here\n\n",
    b"x",
    b"\n",
])
@pytest.mark.parametrize("chunk", [1, 2, 7, 1 << 20])
def test_line_stream_every_cut_pair(payload: bytes, chunk: int) -> None:
    """Byte level: for all 0 <= i <= j <= n, ranges [0,i) [i,j) [j,n) concatenate to the
    file (empty ranges allowed), whatever the read chunk size."""

    def owned(start: int, end: int) -> bytes:
        raw = io.BytesIO(payload)
        raw.seek(max(start - 1, 0))
        return LineStream(raw, start, end, chunk=chunk).read()

    n = len(payload)
    for i in range(n + 1):
        for j in range(i, n + 1):
            assert owned(0, i) + owned(i, j) + owned(j, n) == payload, (i, j)


def test_line_stream_reads_little_past_its_end() -> None:
    """A range reads its own bytes in chunks, then the straddling line's end; never far."""
    payload = b"".join(b"%06d\n" % i for i in range(100_000))  # 700 KB of 7-byte lines

    class Counting(io.BytesIO):
        furthest = 0

        def read(self, n: int | None = -1) -> bytes:
            out = super().read(n)
            Counting.furthest = max(Counting.furthest, self.tell())
            return out

    raw = Counting(payload)
    raw.seek(99_999)
    got = LineStream(raw, 100_000, 200_000, chunk=4096).read()
    assert got.startswith(b"%06d\n" % (100_002 // 7)) and got.endswith(b"\n")
    assert Counting.furthest <= 200_000 + 64 * 1024


def test_line_stream_reads_are_full() -> None:
    """A read returns all it asks for until the owned lines end, whatever the raw chunk
    size, so a block-parsing reader never sees a short block in the middle of a range."""
    payload = b"".join(b"%010d\n" % i for i in range(1000))
    raw = io.BytesIO(payload)
    raw.seek(99)
    stream = LineStream(raw, 100, 9000, chunk=5)
    sizes = []
    while piece := stream.read(64):
        sizes.append(len(piece))
    assert sizes[:-1] == [64] * (len(sizes) - 1)
    buf = bytearray(64)
    raw = io.BytesIO(payload)
    assert LineStream(raw, 0, 200, chunk=3).readinto(buf) == 64


def big_csv(lines: int) -> tuple[bytes, int]:
    """A header and ``lines`` 33-byte rows (the issue's repro), and the sum of column a."""
    body = "".join(f"{i:010d},{i * 7:021d}\n" for i in range(lines))
    return ("a,b\n" + body).encode(), lines * (lines - 1) // 2


def test_csv_bigger_than_a_split_reads_every_row_local(tmp_path) -> None:
    """Uncompressed CSV over several byte ranges (600,000 rows, 20 MB, 4 MiB splits): every
    range past 0 used to fail with a false "row is longer than block_size"."""
    from listing import ListingTable

    payload, total = big_csv(600_000)
    (tmp_path / "big.csv").write_bytes(payload)
    table = ListingTable.open(str(tmp_path), format="csv", max_partition_bytes="4m")
    scan = table.scan()
    assert len(scan.file_groups) == 5  # positive control: it is really split
    got = scan.to_arrow()
    assert got.num_rows == 600_000
    assert pa.compute.sum(got.column("a")).as_py() == total
    assert pa.compute.count_distinct(got.column("a")).as_py() == 600_000


def test_csv_bigger_than_a_split_reads_every_row_s3(s3, spark) -> None:
    """The same on S3 (10 MB, three ranges), through ``to_arrow`` and through Spark."""
    from listing import ListingTable

    fs, spec, bucket = s3
    payload, total = big_csv(300_000)
    fs.pipe(f"{bucket}/big/part.csv", payload)
    table = ListingTable.open(f"s3://{bucket}/big", format="csv", max_partition_bytes="4m",
                              storage_options=spec.options)
    scan = table.scan()
    assert len(scan.file_groups) == 3
    got = scan.to_arrow()
    assert got.num_rows == 300_000
    assert pa.compute.sum(got.column("a")).as_py() == total
    df = (spark.read.format("listing").option("format", "csv")
          .option("max_partition_bytes", "4m")
          .option("storage_options", json.dumps(spec.options)).load(f"s3://{bucket}/big"))
    row = df.selectExpr("count(*) AS n", "sum(a) AS s", "count(DISTINCT a) AS d").first()
    assert (row.n, row.s, row.d) == (300_000, total, 300_000)
