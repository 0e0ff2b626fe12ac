"""CSV, NDJSON and Arrow IPC read through their openers from a real (moto) S3 server.

Every case writes real bytes with s3fs, builds a ``PartitionedFile`` and reads it the way
a Spark task does: ``fmt.file_source(...).create_opener().open(file)``.
"""

from __future__ import annotations

import bz2
import datetime as dt
import gzip
import io
import json
import pickle
import uuid
from collections.abc import Iterator

import fsspec
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

from listing import formats
from listing.errors import FileChangedError, FileReadError, OptionError
from listing.expressions import col
from listing.files import PartitionedFile
from listing.formats.arrow import ArrowFormat
from listing.formats.base import CorruptFileError, MissingFileError
from listing.formats.csv import CsvFormat
from listing.formats.json import JsonFormat
from listing.spark.types import spark_schema
from listing.storage import StorageSpec
from listing.testing.s3 import S3Server

UTC = dt.UTC
SCHEMA = pa.schema([
    ("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64()),
    ("ok", pa.bool_()), ("day", pa.date32()), ("ts", pa.timestamp("us", tz="UTC")),
])
#: case -> format name; the suffix says how the bytes are encoded
CASES = {
    "csv": "csv", "csv.gz": "csv", "csv.bz2": "csv", "csv.zst": "csv",
    "ndjson": "json", "json.gz": "json", "jsonl.bz2": "json", "ndjson.zst": "json",
    "arrow": "arrow", "arrows": "arrow",
}


def table(n: int = 40, start: int = 0) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({
        "id": ids,
        "name": [f'n{i}, "q"' if i % 7 == 0 else f"name{i}" for i in ids],
        "amount": [None if i % 5 == 0 else i * 1.5 for i in ids],
        "ok": [i % 2 == 0 for i in ids],
        "day": [dt.date(2026, 3, 1) + dt.timedelta(days=i % 30) for i in ids],
        "ts": [dt.datetime(2026, 3, 1, tzinfo=UTC) + dt.timedelta(seconds=i * 61.5)
               for i in ids],
    }, schema=SCHEMA)


def compress(data: bytes, suffix: str) -> bytes:
    if suffix == "gz":
        return gzip.compress(data, mtime=0)
    if suffix == "bz2":
        return bz2.compress(data)
    if suffix == "zst":
        sink = pa.BufferOutputStream()
        with pa.CompressedOutputStream(sink, "zstd") as out:
            out.write(data)
        return sink.getvalue().to_pybytes()
    return data


def ndjson(t: pa.Table) -> bytes:
    def plain(v: object) -> object:
        return v.isoformat() if isinstance(v, dt.date) else v

    return "".join(json.dumps({k: plain(v) for k, v in row.items()}) + "\n"
                   for row in t.to_pylist()).encode()


def encode(t: pa.Table, case: str) -> bytes:
    kind, _, suffix = case.partition(".")
    if kind == "csv":
        sink = io.BytesIO()
        pacsv.write_csv(t, sink)
        return compress(sink.getvalue(), suffix)
    if kind in ("ndjson", "json", "jsonl"):
        return compress(ndjson(t), suffix)
    sink = io.BytesIO()
    writer = pa.ipc.new_file if kind == "arrow" else pa.ipc.new_stream
    with writer(sink, t.schema) as w:
        for batch in t.to_batches(max_chunksize=7):  # several batches per file
            w.write_batch(batch)
    return sink.getvalue()


class Store:
    """A fresh key prefix in a bucket on the moto server, written with s3fs."""

    def __init__(self, root: str, options: dict) -> None:
        self.root = root
        self.fs = fsspec.filesystem("s3", **options)
        self.spec = StorageSpec("s3", options)

    def put(self, name: str, data: bytes) -> PartitionedFile:
        path = f"{self.root}/{name}"
        self.fs.pipe(path, data)
        return PartitionedFile(f"s3://{path}", len(data))


@pytest.fixture(scope="module")
def bucket(s3_server: S3Server) -> Iterator[str]:
    """One bucket for the module (creating one per test costs more than the test)."""
    name = s3_server.create_bucket(f"formats-{uuid.uuid4().hex[:12]}")
    yield name
    s3_server.drop_bucket(name)


@pytest.fixture
def store(s3_server: S3Server, bucket: str, request: pytest.FixtureRequest) -> Store:
    return Store(f"{bucket}/{uuid.uuid4().hex[:8]}", s3_server.storage_options)


def read(fmt: formats.FileFormat, file: PartitionedFile, store: Store,
         schema: pa.Schema | None = None, **kwargs: object) -> pa.Table:
    schema = schema if schema is not None else SCHEMA
    source = fmt.file_source(schema, storage=store.spec, **kwargs)  # type: ignore[arg-type]
    batches = list(source.create_opener().open(file))
    return pa.Table.from_batches(batches, schema=source.output_schema)


def put_case(store: Store, case: str, t: pa.Table, name: str = "data") -> PartitionedFile:
    return store.put(f"{name}.{case}", encode(t, case))


# --- round trips ---------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES)
def test_round_trip(store: Store, case: str) -> None:
    t = table()
    file = put_case(store, case, t)
    fmt = formats.get(CASES[case])
    assert fmt.matches(file.path)
    assert read(fmt, file, store).equals(t)


@pytest.mark.parametrize("case", CASES)
def test_projection_and_predicate(store: Store, case: str) -> None:
    t = table()
    file = put_case(store, case, t)
    got = read(formats.get(CASES[case]), file, store, projection=["name", "id"],
               predicate=(col("amount") > 20) & (col("ok") == True))  # noqa: E712
    expected = [{"name": r["name"], "id": r["id"]} for r in t.to_pylist()
                if r["amount"] is not None and r["amount"] > 20 and r["ok"]]
    assert got.schema.names == ["name", "id"]
    assert got.to_pylist() == expected


@pytest.mark.parametrize("case", CASES)
def test_count_only_reads_rows_without_columns(store: Store, case: str) -> None:
    file = put_case(store, case, table(25))
    got = read(formats.get(CASES[case]), file, store, projection=[])
    assert got.num_rows == 25 and got.num_columns == 0


@pytest.mark.parametrize("case", CASES)
def test_missing_column_reads_as_nulls(store: Store, case: str) -> None:
    file = put_case(store, case, table(10))
    schema = pa.schema(list(SCHEMA) + [pa.field("added_later", pa.string())])
    got = read(formats.get(CASES[case]), file, store, schema=schema)
    assert got.column("added_later").null_count == 10
    assert got.column("id").to_pylist() == list(range(10))


@pytest.mark.parametrize("case", CASES)
def test_widening(store: Store, case: str) -> None:
    narrow = pa.table({"id": pa.array([1, 2, 3], pa.int32()), "v": pa.array([1, 2, 3], pa.int8())})
    file = put_case(store, case, narrow)
    wide = pa.schema([("id", pa.int64()), ("v", pa.float64())])
    got = read(formats.get(CASES[case]), file, store, schema=wide)
    assert got.schema == wide
    assert got.to_pylist() == [{"id": i, "v": float(i)} for i in (1, 2, 3)]


@pytest.mark.parametrize("case", CASES)
def test_incompatible_type_names_file_and_column(store: Store, case: str) -> None:
    file = put_case(store, case, pa.table({"id": [1, 2], "code": ["x1", "y2"]}))
    schema = pa.schema([("id", pa.int64()), ("code", pa.int64())])
    with pytest.raises(FileReadError) as err:
        read(formats.get(CASES[case]), file, store, schema=schema)
    assert file.path in str(err.value) and "'code'" in str(err.value)


# --- Spark's Arrow contract -----------------------------------------------------------------

def awkward_table() -> pa.Table:
    """Types Spark does not take as they are: large strings, ns zoned timestamps,
    dictionaries, small and unsigned ints, and nested values."""
    return pa.table({
        "i8": pa.array([1, None, 3], pa.int8()),
        "u16": pa.array([1, 2, 3], pa.uint16()),
        "big": pa.array(["a", "b", None], pa.large_string()),
        "cat": pa.array(["x", "y", "x"]).dictionary_encode(),
        "ts": pa.array([0, 1_000, 2_000_000], pa.timestamp("ns", tz="Europe/Paris")),
        "naive": pa.array([0, 1, 2], pa.timestamp("ms")),
        "day": pa.array([0, 1, 2], pa.date32()),
        "nested": pa.array([{"a": 1, "b": ["p"]}, None, {"a": 2, "b": []}]),
    })


@pytest.mark.parametrize("case", CASES)
def test_spark_arrow_contract(store: Store, case: str) -> None:
    t = awkward_table()
    if not case.startswith("arrow"):
        t = t.drop_columns(["u16", "cat", "naive"])  # text has no such types
        t = t.set_column(t.schema.get_field_index("ts"), "ts",
                         t.column("ts").cast(pa.timestamp("us", tz="UTC")))
        if case.startswith("csv"):
            t = t.drop_columns(["nested"])
    file = put_case(store, case, t)
    fmt = formats.get(CASES[case])
    schema = spark_schema(fmt.infer_schema([file], store.spec))
    for projection in (None, list(reversed(schema.names))[:3]):
        source = fmt.file_source(schema, projection=projection, storage=store.spec)
        batches = list(source.create_opener().open(file))
        assert batches
        expected = spark_schema(source.output_schema)
        for batch in batches:
            assert batch.schema.equals(expected, check_metadata=True), (batch.schema, expected)
            assert all(f.nullable for f in batch.schema)
    assert sum(b.num_rows for b in batches) == 3


# --- schema inference --------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["csv", "csv.gz", "ndjson", "json.gz", "arrow", "arrows"])
def test_infer_schema(store: Store, case: str) -> None:
    file = put_case(store, case, table())
    got = formats.get(CASES[case]).infer_schema([file], store.spec)
    assert got.names == SCHEMA.names
    types = dict(zip(got.names, got.types, strict=True))
    assert types["id"] == pa.int64() and types["name"] == pa.string()
    assert types["amount"] == pa.float64() and types["ok"] == pa.bool_()
    assert got == SCHEMA  # text formats tell dates from timestamps and keep the zone


def test_csv_inference_reads_a_bounded_sample(store: Store) -> None:
    head = b"a,b\n" + b"1,x\n" * 1000
    file = store.put("big.csv", head + b"oops,y\n")  # past the sample: not seen
    fmt = CsvFormat(sample_bytes=1024)
    assert fmt.infer_schema([file], store.spec).field("a").type == pa.int64()
    with pytest.raises(CorruptFileError, match=r"big\.csv.*column 'a'.*line 1002"):
        read(fmt, file, store, schema=pa.schema([("a", pa.int64()), ("b", pa.string())]))


def test_csv_options_as_strings(store: Store) -> None:
    file = store.put("semi.csv", b"1;NA;x\n2;3.5;-\n")
    fmt = CsvFormat(header="false", delimiter=";", null_values="NA,-", merge_schema="false")
    schema = fmt.infer_schema([file], store.spec)
    assert schema.names == ["_c0", "_c1", "_c2"]
    assert schema.types == [pa.int64(), pa.float64(), pa.string()]
    got = read(fmt, file, store, schema=schema)
    assert got.to_pylist() == [{"_c0": 1, "_c1": None, "_c2": "x"},
                               {"_c0": 2, "_c1": 3.5, "_c2": None}]
    tabbed = CsvFormat(delimiter="\\t", quote="", escape="none", header="TRUE")
    assert tabbed.parsed.delimiter == "\t" and tabbed.parsed.quote is None


@pytest.mark.parametrize(("options", "message"), [
    ({"header": "maybe"}, "option header='maybe' must be true or false"),
    ({"delimiter": ";;"}, "option delimiter=';;' must be a single character"),
    ({"sample_bytes": "0"}, "option sample_bytes=0 must be at least 1"),
    ({"nope": 1}, "unknown option(s) nope for format 'csv'; known: block_size, "),
])
def test_csv_bad_options(options: dict, message: str) -> None:
    with pytest.raises(OptionError) as err:
        CsvFormat(**options)
    assert str(err.value).startswith(message)  # the option at fault, by name and value


def test_csv_zoned_and_naive_timestamps(store: Store) -> None:
    file = store.put("ts.csv", b"t\n2026-03-01 10:00:00\n2026-03-01T12:00:00+02:00\n\n")
    got = read(CsvFormat(), file, store, schema=pa.schema([("t", pa.timestamp("us", "UTC"))]))
    assert got.column("t").to_pylist() == [dt.datetime(2026, 3, 1, 10, tzinfo=UTC)] * 2


def test_csv_bom_crlf_and_quoted_header(store: Store) -> None:
    file = store.put("bom.csv", b'\xef\xbb\xbf"my id",name\r\n1,a\r\n2,b\r\n')
    fmt = CsvFormat()
    schema = fmt.infer_schema([file], store.spec)
    assert schema.names == ["my id", "name"]
    assert read(fmt, file, store, schema=schema).to_pylist() == [
        {"my id": 1, "name": "a"}, {"my id": 2, "name": "b"}]
    for start in range(1, file.size):  # every two-way split, header fetched by the tail
        head = read(fmt, file.with_range(0, start), store, schema=schema)
        tail = read(fmt, file.with_range(start, file.size), store, schema=schema)
        assert head.column("my id").to_pylist() + tail.column("my id").to_pylist() == [1, 2]


def test_csv_multiline_values(store: Store) -> None:
    file = store.put("multi.csv", b'id,text\n1,"two\nlines"\n2,plain\n')
    fmt = CsvFormat(multiline="true")
    assert not fmt.is_splittable(file) and fmt.split(file, 4) == [file]
    schema = fmt.infer_schema([file], store.spec)
    assert read(fmt, file, store, schema=schema).column("text").to_pylist() == [
        "two\nlines", "plain"]


def test_csv_multiline_sample_cut_inside_a_value(store: Store) -> None:
    data = b"id,text\n" + b'1,"a\nb"\n' * 200
    file = store.put("cut.csv", data)
    fmt = CsvFormat(multiline=True, sample_bytes=1000 + 3)  # ends between "a\n" and "b"
    assert fmt.infer_schema([file], store.spec).names == ["id", "text"]


@pytest.mark.parametrize("case", ["csv", "ndjson"])
def test_line_longer_than_block_size(store: Store, case: str) -> None:
    t = pa.table({"id": [1, 2], "name": ["x" * 5000, "y"]})
    file = put_case(store, case, t)
    fmt = formats.get(CASES[case], block_size="1024")
    with pytest.raises(CorruptFileError, match=r"longer than block_size=1024"):
        read(fmt, file, store, schema=t.schema)
    assert read(formats.get(CASES[case]), file, store, schema=t.schema).equals(t)


# --- merge_schema ------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["csv", "ndjson", "arrow"])
def test_merge_schema(store: Store, case: str) -> None:
    a = put_case(store, case, pa.table({"id": pa.array([1], pa.int32()), "x": ["p"]}), "a")
    b = put_case(store, case, pa.table({"id": [2.5], "y": [True]}), "b")
    fmt = formats.get(CASES[case], merge_schema="true")
    merged = fmt.infer_schema([a, b], store.spec)
    assert merged.names == ["id", "x", "y"]
    assert merged.field("id").type == pa.float64()
    assert formats.get(CASES[case]).infer_schema([a, b], store.spec).names == ["id", "x"]
    rows = read(fmt, a, store, schema=merged).to_pylist() + \
        read(fmt, b, store, schema=merged).to_pylist()
    assert rows == [{"id": 1.0, "x": "p", "y": None}, {"id": 2.5, "x": None, "y": True}]


def test_merge_schema_conflicts(store: Store) -> None:
    a = store.put("a.csv", b"k\n1\n")
    b = store.put("b.csv", b"k\nabc\n")
    merged = CsvFormat(merge_schema=True).infer_schema([a, b], store.spec)
    assert merged.field("k").type == pa.string()  # text can always be read as text
    ja = store.put("a.json", b'{"k": 1}\n')
    jb = store.put("b.json", b'{"k": "abc"}\n')
    with pytest.raises(FileReadError, match=r"'k'.*b\.json|b\.json.*'k'"):
        JsonFormat(merge_schema=True).infer_schema([ja, jb], store.spec)


# --- errors name the file ----------------------------------------------------------------------

@pytest.mark.parametrize("body, rows", [
    (b'a,b\r\n"x\r\ny",1\r\n\r\n"z",2\r\n3,4', 3),  # CRLF, a quoted line break, blank
    (b"a,a,b\n1,2,3\n4,5,6\n", 2),  # the first name twice
    (b"a,b\n", 0),
], ids=["crlf-quoted-blank", "duplicate-first-name", "header-only"])
def test_csv_count_reads_one_column_and_counts_records(store: Store, body: bytes,
                                                         rows: int) -> None:
    """A rows-only read (a count) parses one column instead of all: records, not lines."""
    file = store.put("count.csv", body)
    fmt = CsvFormat(multiline=True)
    schema = pa.schema([("b", pa.string())])
    got = read(fmt, file, store, schema=schema, projection=[])
    assert got.num_rows == rows and got.num_columns == 0
    assert read(fmt, file, store, schema=schema).num_rows == rows


def test_csv_wrong_field_count_names_line(store: Store) -> None:
    file = store.put("bad.csv", b"a,b\n1,2\n3,4\n5\n6,7\n")
    with pytest.raises(CorruptFileError) as err:
        read(CsvFormat(), file, store, schema=pa.schema([("a", pa.int64()), ("b", pa.int64())]))
    msg = str(err.value)
    assert file.path in msg and "line 4" in msg and "byte offset 12" in msg
    with pytest.raises(CorruptFileError, match=r"bad\.csv.*byte range 6-20.*byte offset 12"):
        read(CsvFormat(), file.with_range(6, 20), store,
             schema=pa.schema([("a", pa.int64()), ("b", pa.int64())]))


def test_json_bad_line_names_line(store: Store) -> None:
    file = store.put("bad.ndjson", b'{"a": 1}\n{"a": 2}\n{"a": 3,,}\n{"a": 4}\n')
    with pytest.raises(CorruptFileError, match=r"bad\.ndjson: line 3 \(byte offset 18\)"):
        read(JsonFormat(), file, store, schema=pa.schema([("a", pa.int64())]))
    with pytest.raises(FileReadError, match=r"bad\.ndjson: line 3"):
        JsonFormat().infer_schema([file], store.spec)


def test_json_value_of_wrong_type_names_line_and_column(store: Store) -> None:
    file = store.put("typed.ndjson", b'{"a": 1}\n{"a": 2.5}\n')
    with pytest.raises(CorruptFileError, match=r"typed\.ndjson: line 2 .*column 'a'"):
        read(JsonFormat(), file, store, schema=pa.schema([("a", pa.int64())]))


@pytest.mark.parametrize("case", ["csv.gz", "csv.bz2", "csv.zst", "json.gz", "arrow", "arrows"])
def test_truncated_file(store: Store, case: str) -> None:
    data = encode(table(400), case)
    file = store.put(f"cut.{case}", data[: len(data) * 2 // 3])
    with pytest.raises(CorruptFileError, match=file.path):
        read(formats.get(CASES[case]), file, store)


@pytest.mark.parametrize("case", ["csv.gz", "ndjson.zst", "arrow", "arrows"])
def test_garbage_file(store: Store, case: str) -> None:
    file = store.put(f"junk.{case}", b"\x00\x01 this is not what it claims to be \xff" * 20)
    with pytest.raises(CorruptFileError, match=file.path):
        read(formats.get(CASES[case]), file, store)


@pytest.mark.parametrize("case", CASES)
def test_vanished_file(store: Store, case: str) -> None:
    file = put_case(store, case, table(5))
    store.fs.rm(file.fs_path)
    with pytest.raises(MissingFileError, match=file.path):
        read(formats.get(CASES[case]), file, store)


@pytest.mark.parametrize("case", CASES)
def test_empty_file(store: Store, case: str) -> None:
    """A zero-byte file has no rows in every format (Spark skips empty files too)."""
    file = store.put(f"empty.{case}", b"")
    fmt = formats.get(CASES[case])
    assert read(fmt, file, store).num_rows == 0


# --- splitting -------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["csv", "ndjson"])
def test_split_ranges_cover_the_file(store: Store, case: str) -> None:
    t = table(300)
    file = put_case(store, case, t)
    fmt = formats.get(CASES[case])
    assert fmt.is_splittable(file)
    pieces = fmt.split(file, 997)
    assert len(pieces) > 5
    ids = [i for p in pieces for i in read(fmt, p, store, projection=["id"]).column("id")
           .to_pylist()]
    assert ids == list(range(300))


@pytest.mark.parametrize("case", ["csv.gz", "jsonl.bz2", "ndjson.zst", "arrow"])
def test_compressed_and_ipc_files_are_not_split(store: Store, case: str) -> None:
    file = put_case(store, case, table(300))
    fmt = formats.get(CASES[case])
    assert not fmt.is_splittable(file)
    assert fmt.split(file, 100) == [file]


# --- plumbing --------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["csv", "ndjson", "arrow"])
def test_source_pickles_without_live_clients(store: Store, case: str) -> None:
    file = put_case(store, case, table(6))
    fmt = formats.get(CASES[case])
    source = fmt.file_source(SCHEMA, projection=["id"], predicate=col("id") >= 3,
                             storage=store.spec)
    clone = pickle.loads(pickle.dumps(source))
    batches = list(clone.create_opener().open(file))
    assert pa.Table.from_batches(batches).column("id").to_pylist() == [3, 4, 5]


def test_registry_names_and_extensions() -> None:
    assert isinstance(formats.get("ndjson"), JsonFormat)
    assert isinstance(formats.get("ipc"), ArrowFormat)
    assert isinstance(formats.for_path("s3://b/x/part-0.csv.zst"), CsvFormat)
    assert isinstance(formats.for_path("s3://b/x/part-0.jsonl.gz"), JsonFormat)
    assert isinstance(formats.for_path("s3://b/x/part-0.feather"), ArrowFormat)
    assert not CsvFormat().has_extension("s3://b/x/part-0.csv.lzma")
    assert not formats.for_path("s3://b/x/events-1-2026-11-27-13-00-00-x.gz")
    # a given format reads every name (Spark's readers do), whatever its extension
    assert CsvFormat().matches("s3://b/x/part-0.csv.lzma") and JsonFormat().matches("s3://b/x/a")


def test_batch_size_bounds_batches(store: Store) -> None:
    file = put_case(store, "csv", table(250))
    source = CsvFormat().file_source(SCHEMA, storage=store.spec, batch_size=64)
    sizes = [b.num_rows for b in source.create_opener().open(file)]
    assert sum(sizes) == 250 and max(sizes) <= 64


@pytest.mark.parametrize(("case", "most"), [
    ("csv", 1), ("csv.gz", 1), ("ndjson", 1), ("arrow", 2), ("arrows", 1),
])
def test_reads_in_few_requests(store: Store, s3_server: S3Server, case: str, most: int) -> None:
    """Whole small files are fetched in one or two GETs, not one per batch or line."""
    file = put_case(store, case, table(2000))
    fmt = formats.get(CASES[case])
    with s3_server.log.capture(bucket=store.root.split("/")[0]) as cap:
        assert read(fmt, file, store).num_rows == 2000
    assert cap.count("HEAD") == 0
    assert 1 <= cap.count("GET") <= most, cap.entries()


def test_a_range_fetches_its_bytes_the_tail_and_the_header(store: Store,
                                                          s3_server: S3Server) -> None:
    file = put_case(store, "csv", table(2000))
    with s3_server.log.capture(bucket=store.root.split("/")[0]) as cap:
        got = read(CsvFormat(), file.with_range(file.size // 3, 2 * file.size // 3), store)
    assert 500 < got.num_rows < 800
    assert cap.count("GET") == 3 and cap.count("HEAD") == 0


def test_file_changed_since_listing_is_an_error(store: Store) -> None:
    file = store.put("changing.csv", b"a\n1\n2\n")
    etag = store.fs.info(file.fs_path)["ETag"].strip('"')
    listed = PartitionedFile(file.path, file.size, etag=etag)
    schema = pa.schema([("a", pa.int64())])
    assert read(CsvFormat(), listed, store, schema=schema).num_rows == 2
    store.fs.pipe(file.fs_path, b"a\n3\n4\n")  # same size, new content
    # neither missing nor corrupt: its own error, which no ignore_* option skips
    with pytest.raises(FileChangedError, match=f"{file.path}.*changed since listing"):
        read(CsvFormat(), listed, store, schema=schema)


def test_parquet_reads_only_the_projected_column_chunks(store: Store, s3_server: S3Server) -> None:
    """A Parquet file over the whole-file threshold (8 MiB) is read in byte ranges: the
    footer, then the projected columns' chunks of each row group (pyarrow's pre-buffer
    coalesces them), never the other columns' bytes."""
    import os

    import pyarrow.parquet as pq

    from listing import ListingTable

    n = 90_000
    wide = pa.array([os.urandom(60).hex() for _ in range(n)])  # 120 incompressible bytes
    data = pa.table({"small": pa.array(range(n), pa.int64()), "wide": wide})
    sink = io.BytesIO()
    pq.write_table(data, sink, row_group_size=30_000, compression="none")
    payload = sink.getvalue()
    assert len(payload) > 8 * 1024 * 1024
    store.put("t/k=1/big.parquet", payload)
    table = ListingTable.open(f"s3://{store.root}/t", storage_options=store.fs.storage_options,
                              schema=pa.schema([("small", pa.int64()), ("wide", pa.string())]))
    narrow = table.scan(columns=["small"])
    got = narrow.collect()
    assert got.table.column("small").to_pylist() == list(range(n))
    assert got.metrics["bytes_read"] < len(payload) // 10  # the int column and footer
    assert got.metrics["read_requests"] <= 3 + 2  # per row group, or coalesced, + footer
    whole = table.scan().collect()
    assert whole.table.column("wide").to_pylist() == wide.to_pylist()
    assert whole.metrics["bytes_read"] >= len(payload) * 9 // 10


def test_parquet_rows_alone_fetch_only_the_footer(store: Store, s3_server: S3Server) -> None:
    """A scan that needs no column of a file (a count, partition columns only) reads row
    counts from the footer: one small GET, even for a file under the 8 MiB threshold that
    a read of its columns fetches whole (the positive control)."""
    import os

    import pyarrow.parquet as pq

    from listing import ListingTable

    n = 20_000
    wide = pa.array([os.urandom(60).hex() for _ in range(n)])  # 120 incompressible bytes
    sink = io.BytesIO()
    pq.write_table(pa.table({"wide": wide}), sink, row_group_size=5_000, compression="none")
    payload = sink.getvalue()
    assert 1024 * 1024 < len(payload) < 8 * 1024 * 1024
    store.put("rows/k=1/small.parquet", payload)
    table = ListingTable.open(f"s3://{store.root}/rows",
                              storage_options=store.fs.storage_options,
                              schema=pa.schema([("wide", pa.string())]))
    counted = table.scan(columns=["k"]).collect()
    assert counted.table.num_rows == n
    assert counted.metrics["read_requests"] == 1
    assert counted.metrics["bytes_read"] < len(payload) // 10
    read = table.scan(columns=["wide"]).collect()
    assert read.table.column("wide").to_pylist() == wide.to_pylist()
    assert read.metrics["read_requests"] == 1
    assert read.metrics["bytes_read"] == len(payload)
