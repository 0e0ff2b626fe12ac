"""Newline-delimited JSON: pyarrow's streaming JSON reader over line-aligned byte ranges.

One JSON object per line (``.json``, ``.ndjson``, ``.jsonl``, optionally ``.gz``/``.bz2``/
``.zst``). Options (strings accepted): ``sample_bytes`` (1 MiB read for inference),
``merge_schema`` (false), ``block_size`` (1 MiB parsed per batch; must exceed the longest
line). The table schema is handed to the parser as its explicit schema, so values are
parsed straight into the table's types, fields the table does not read are skipped, and
missing ones are null. A multi-line (pretty-printed) JSON document is not NDJSON and is
reported as corrupt.
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from listing.errors import FileReadError
from listing.files import PartitionedFile
from listing.formats.base import CorruptFileError, FileSink, FileSource, FileWriter
from listing.formats.text import (
    TextFormat,
    TextOpener,
    inferred_schema,
    slices,
)


class JsonFormat(TextFormat):
    name = "json"
    extensions = (".json", ".ndjson", ".jsonl")
    option_defaults = {"sample_bytes": 1 << 20, "merge_schema": False, "block_size": 1 << 20}

    def sample_schema(self, data: bytes, file: PartitionedFile) -> pa.Schema:
        if not data.strip():
            return pa.schema([])
        read = pajson.ReadOptions(use_threads=False, block_size=len(data) + 1)
        try:
            table = pajson.read_json(io.BytesIO(data), read_options=read)
        except pa.ArrowInvalid as err:
            for number, offset, problem in _bad_lines(data):
                raise FileReadError(f"{file.path}: line {number} (byte offset {offset}): "
                                    f"{problem}") from None
            raise FileReadError(f"{file.path}: cannot infer a JSON schema from the first "
                                f"{len(data)} bytes: {err}") from None
        return inferred_schema(_refine_temporal(table.schema, data))


_DATE = r"^\d{4}-\d{2}-\d{2}$"
_ZONED = r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?\s*(Z|[+-]\d{2}(:?\d{2})?)$"


def _refine_temporal(schema: pa.Schema, data: bytes) -> pa.Schema:
    """pyarrow infers ISO dates as timestamps and leaves zoned timestamps as strings;
    look at the sampled text of those columns: all dates -> date32, all zoned -> UTC."""
    names = [f.name for f in schema if pa.types.is_timestamp(f.type) or pa.types.is_string(f.type)]
    if not names:
        return schema
    raw = pajson.read_json(io.BytesIO(data), read_options=pajson.ReadOptions(
        use_threads=False, block_size=len(data) + 1), parse_options=pajson.ParseOptions(
        explicit_schema=pa.schema([(n, pa.string()) for n in names]),
        unexpected_field_behavior="ignore"))
    fields = []
    for f in schema:
        values = raw.column(f.name).drop_null() if f.name in names else None
        if values is not None and len(values):
            if pc.all(pc.match_substring_regex(values, _DATE)).as_py():
                f = f.with_type(pa.date32())
            elif pc.all(pc.match_substring_regex(values, _ZONED)).as_py():
                f = f.with_type(pa.timestamp("us", tz="UTC"))
        fields.append(f)
    return pa.schema(fields)


class JsonOpener(TextOpener):
    def read_batches(self, file: PartitionedFile) -> Iterator[pa.RecordBatch]:
        src = self.source
        block_size: int = src.options["block_size"]
        schema = src.read_schema
        # the JSON parser takes dates as day numbers only: parse ISO strings, then cast
        dates = {f.name: f.type for f in schema if pa.types.is_date(f.type)}
        parse_schema = pa.schema([f.with_type(pa.string()) if f.name in dates else f
                                  for f in schema])
        with self.lines(file) as stream:
            if stream.at_end():
                return
            try:
                reader = pajson.open_json(
                    stream,  # type: ignore[arg-type]  # any readable file object will do
                    read_options=pajson.ReadOptions(use_threads=False, block_size=block_size),
                    parse_options=pajson.ParseOptions(explicit_schema=parse_schema,
                                                      unexpected_field_behavior="ignore"))
                for batch in reader:
                    if dates:
                        batch = _cast_dates(batch, dates, file)
                    yield from slices(batch, src.batch_size)
            except pa.ArrowInvalid as err:
                if "Empty JSON" in str(err):
                    return
                if "straddl" in str(err):
                    raise CorruptFileError(f"{file.path}: a line is longer than block_size="
                                           f"{block_size} bytes; raise the 'block_size' "
                                           "option") from None
                located = self.locate(file, lambda line: _line_problem(line, schema))
                if located:
                    raise CorruptFileError(f"{file.path}: {located}") from None
                raise CorruptFileError(f"{file.path}: cannot read as json: {err}") from None


def _cast_dates(batch: pa.RecordBatch, dates: Mapping[str, pa.DataType],
                file: PartitionedFile) -> pa.RecordBatch:
    columns = list(batch.columns)
    for name, target in dates.items():
        i = batch.schema.get_field_index(name)
        try:
            columns[i] = columns[i].cast(target)
        except pa.ArrowInvalid as err:
            raise CorruptFileError(f"{file.path}: column {name!r} cannot be read as "
                                   f"{target}: {err}") from None
    fields = [f.with_type(columns[i].type) for i, f in enumerate(batch.schema)]
    return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))


def _line_problem(line: bytes, schema: pa.Schema) -> str | None:
    """Why one line cannot become a row of ``schema`` (None when it looks fine)."""
    text = line.strip()
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError as err:
        return f"not valid JSON ({err})"
    if not isinstance(value, dict):
        return f"a JSON {type(value).__name__}, not an object"
    for f in schema:
        if f.name in value and not _fits(value[f.name], f.type):
            return (f"column {f.name!r} holds {json.dumps(value[f.name])[:80]}, which cannot "
                    f"be read as {f.type}")
    return None


def _fits(value: Any, t: pa.DataType) -> bool:
    """Whether a decoded JSON value can be parsed as Arrow type ``t`` (a cheap check)."""
    if value is None:
        return True
    if pa.types.is_boolean(t):
        return isinstance(value, bool)
    if pa.types.is_integer(t):
        return isinstance(value, int) and not isinstance(value, bool)
    if pa.types.is_floating(t):
        return isinstance(value, int | float) and not isinstance(value, bool)
    if pa.types.is_decimal(t):
        return isinstance(value, int | float | str) and not isinstance(value, bool)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return isinstance(value, str)
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return isinstance(value, str)
    if pa.types.is_struct(t):
        return isinstance(value, dict) and all(
            _fits(value.get(f.name), f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return isinstance(value, list) and all(_fits(v, t.value_type) for v in value)
    return True


def _bad_lines(data: bytes) -> Iterator[tuple[int, int, str]]:
    offset = 0
    for number, line in enumerate(io.BytesIO(data), start=1):
        problem = _line_problem(line, pa.schema([]))
        if problem:
            yield number, offset, problem
        offset += len(line)


class JsonSource(FileSource):
    opener_class = JsonOpener


JsonFormat.source_class = JsonSource


# --- writing ------------------------------------------------------------------------------

def _json_value(value: Any) -> Any:
    """What ``json`` cannot encode itself, spelled as Spark's JSON writer spells it."""
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dt.date | dt.time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value) if value == value.to_integral_value() and abs(value) < 2**53 \
            else str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    raise TypeError(f"cannot write {type(value).__name__} as JSON")


class NdjsonWriter(FileWriter):
    def __init__(self, sink: JsonSink, out: pa.NativeFile) -> None:
        self.stream = sink.text_stream(out)
        self.out = out

    def write(self, batch: pa.RecordBatch) -> None:
        lines = [json.dumps(row, default=_json_value, ensure_ascii=False,
                            separators=(",", ":"), allow_nan=True)
                 for row in batch.to_pylist()]
        if lines:
            self.stream.write(("\n".join(lines) + "\n").encode("utf-8"))

    def close(self) -> None:
        self.stream.close()
        if not self.out.closed:
            self.out.close()


class JsonSink(FileSink):
    """Newline-delimited JSON, one object per row, nulls written as ``null``; dates and
    timestamps ISO strings; ``compression`` gzip, bz2 or zstd."""

    def open(self, out: pa.NativeFile) -> FileWriter:
        return NdjsonWriter(self, out)


JsonFormat.sink_class = JsonSink
