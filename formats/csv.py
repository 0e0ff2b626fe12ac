"""CSV: pyarrow's streaming reader over line-aligned byte ranges, optionally compressed.

Options (strings accepted, since Spark passes every option as a string):

- ``header`` (true): the first line names the columns; without it columns are ``_c0, _c1..``
  at inference and the table schema's names, by position, when reading;
- ``delimiter`` (``,``; ``\\t`` or ``tab`` spell a tab), ``quote`` (``"``; empty/none
  disables quoting), ``escape`` (none);
- ``null_values`` (``[""]``): list, or comma-separated string, of spellings of null;
- ``sample_bytes`` (1 MiB): how much of a file schema inference reads;
- ``infer_schema`` (true; Spark's ``inferSchema``): column types from the sample; false
  reads every column as a string, as Spark's CSV reader does by default;
- ``merge_schema`` (false): infer the union schema over every given file (a column whose
  files disagree is a string: what Spark's ``inferSchema``, which reads every file, infers);
- ``multiline`` (false): allow quoted values containing newlines; such files cannot be
  split into byte ranges, so this reads each file whole (still streaming);
- ``block_size`` (1 MiB): bytes pyarrow parses per batch, the unit of memory.

Each range reads only its own lines (see ``listing.formats.text``); the header belongs to offset 0,
and other ranges fetch the file's first line to learn the column names. Column types come
from the table schema, so a file is parsed straight into them.
"""

from __future__ import annotations

import csv as pycsv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from listing.errors import FileReadError, OptionError
from listing.files import PartitionedFile
from listing.formats.base import (
    CorruptFileError,
    FileFormat,
    FileSink,
    FileSource,
    FileWriter,
)
from listing.formats.conform import can_widen
from listing.formats.text import (
    TextFormat,
    TextOpener,
    first_line,
    inferred_schema,
    slices,
    strip_line,
)
from listing.storage.spec import StorageSpec

_COLUMN_ERROR = re.compile(r"In CSV column #(\d+): (.*)", re.DOTALL)
_BAD_VALUE = re.compile(r"invalid value '(.*)'")
_FIELD_COUNT = re.compile(r"Expected (\d+) columns, got (\d+)")
_ZONE_SUFFIX = r"\d:\d\d(?::\d\d(?:\.\d+)?)?\s*(?:Z|[+-]\d\d(?::?\d\d)?)$"


@dataclass(frozen=True)
class CsvOptions:
    """Parsed CSV options; built from the raw option dict on driver and executors alike."""

    header: bool
    delimiter: str
    quote: str | None
    escape: str | None
    null_values: tuple[str, ...]
    multiline: bool
    block_size: int
    infer_schema: bool = True

    @classmethod
    def parse(cls, options: dict[str, Any]) -> CsvOptions:
        """From a :class:`CsvFormat`'s options (typed by the option registry)."""
        return cls(header=options["header"], delimiter=options["delimiter"],
                   quote=options["quote"] or None, escape=options["escape"] or None,
                   null_values=tuple(options["null_values"]), multiline=options["multiline"],
                   block_size=options["block_size"], infer_schema=options["infer_schema"])

    def parse_options(self, **extra: Any) -> pacsv.ParseOptions:
        return pacsv.ParseOptions(delimiter=self.delimiter, quote_char=self.quote or False,
                                  escape_char=self.escape or False,
                                  newlines_in_values=self.multiline, **extra)

    def convert_options(self, **extra: Any) -> pacsv.ConvertOptions:
        return pacsv.ConvertOptions(null_values=list(self.null_values), strings_can_be_null=True,
                                    quoted_strings_can_be_null=True, **extra)

    def split_fields(self, line: bytes) -> list[str]:
        """Fields of one line, the way the reader would see them (for names and errors)."""
        text = line.decode("utf-8", "replace").rstrip("\r\n")
        reader = pycsv.reader([text], delimiter=self.delimiter, quotechar=self.quote or '"',
                              escapechar=self.escape,
                              quoting=pycsv.QUOTE_NONE if self.quote is None
                              else pycsv.QUOTE_MINIMAL, doublequote=True, strict=False)
        return next(reader, [])


class CsvFormat(TextFormat):
    name = "csv"
    extensions = (".csv",)
    option_defaults = {
        "header": True, "delimiter": ",", "quote": '"', "escape": None, "null_values": ("",),
        "sample_bytes": 1 << 20, "merge_schema": False, "multiline": False,
        "block_size": 1 << 20, "infer_schema": True,
    }
    option_kinds = {"quote": "char or off", "escape": "char or off"}

    def parse_options(self, options: dict[str, Any]) -> CsvOptions:
        return CsvOptions.parse(options)

    def sample_schema(self, data: bytes, file: PartitionedFile) -> pa.Schema:
        opts: CsvOptions = self.parsed
        if not data.strip():
            return pa.schema([])
        read = pacsv.ReadOptions(use_threads=False, block_size=max(len(data), 1 << 16),
                                 autogenerate_column_names=not opts.header)
        for attempt in range(16):
            try:
                table = pacsv.read_csv(io.BytesIO(data), read_options=read,
                                       parse_options=opts.parse_options(),
                                       convert_options=opts.convert_options())
                break
            except pa.ArrowInvalid as err:
                # with multiline values the sample may end inside a quoted value: drop lines
                cut = data.rstrip(b"\r\n").rfind(b"\n")
                if not opts.multiline or cut < 0 or attempt == 15:
                    raise FileReadError(f"{file.path}: cannot infer a CSV schema from the "
                                        f"first {len(data)} bytes: {err}") from None
                data = data[:cut + 1]
        schema = inferred_schema(table.schema)
        if not opts.infer_schema:  # Spark's CSV reader without inferSchema: all text
            schema = pa.schema([f.with_type(pa.string()) for f in schema])
        if not opts.header:
            schema = pa.schema([f.with_name(f"_c{i}") for i, f in enumerate(schema)])
        return schema

    def header_names(self, file: PartitionedFile, storage: StorageSpec) -> list[str] | None:
        """The column names ``file``'s first line holds, as a read splits them (None: this
        format's options read no header). One read of the file's first line; the JVM's
        native hand-off compares them with the relation's columns (ListingNativeEngine)."""
        opts = CsvOptions.parse(self.options)
        if not opts.header:
            return None
        line = first_line(storage.filesystem(), file, self.compression(file.path))
        return opts.split_fields(line) if line else []

    def unify(self, schemas: list[tuple[str, pa.Schema]]) -> pa.Schema:
        """Union of sampled schemas; any text can be read as a string, so a column whose
        samples disagree beyond widening becomes a string instead of an error."""
        fields: dict[str, pa.Field] = {}
        for _, schema in schemas:
            for f in schema:
                have = fields.get(f.name)
                if have is None or can_widen(have.type, f.type):
                    fields[f.name] = f
                elif not can_widen(f.type, have.type):
                    fields[f.name] = pa.field(f.name, pa.string())
        return pa.schema(list(fields.values()))


class CsvOpener(TextOpener):
    def read_batches(self, file: PartitionedFile) -> Iterator[pa.RecordBatch]:
        src = self.source
        opts = CsvOptions.parse(src.options)
        with self.lines(file) as stream:
            if not opts.header:
                names = list(src.file_schema.names)
            elif file.byte_range is None or file.byte_range[0] == 0:
                names = opts.split_fields(strip_line(stream.readline(), first=True))
            else:
                names = opts.split_fields(first_line(self.fs, file, self.compression(file)))
            if not names or stream.at_end():
                return
            present = set(names)
            wanted = [f for f in src.read_schema if f.name in present]
            post = {f.name: f.type for f in wanted
                    if pa.types.is_timestamp(f.type) and f.type.tz is not None}
            types = {f.name: (pa.string() if f.name in post else f.type) for f in wanted}
            # rows only (a count): Arrow reads every column when none is included, so read
            # the first as text, the cheapest conversion (bench.client_cpu times it against
            # converting all of them)
            include = [f.name for f in wanted]
            if not wanted and names.count(names[0]) == 1:
                include, types = names[:1], {names[0]: pa.string()}
            try:
                reader = pacsv.open_csv(
                    stream,  # type: ignore[arg-type]  # any readable file object will do
                    read_options=pacsv.ReadOptions(column_names=names, use_threads=False,
                                                   block_size=opts.block_size),
                    parse_options=opts.parse_options(),
                    convert_options=opts.convert_options(
                        column_types=types, include_columns=include))
                for batch in reader:
                    if not wanted:
                        batch = batch.select([])
                    if post:
                        batch = _parse_zoned(batch, post, file)
                    yield from slices(batch, src.batch_size)
            except pa.ArrowInvalid as err:
                if "Empty CSV file" in str(err):
                    return
                raise CorruptFileError(self._explain(file, err, names, opts)) from None

    def _explain(self, file: PartitionedFile, err: Exception, names: list[str],
                 opts: CsvOptions) -> str:
        """The reader's error with the column name and, when it can be found, the line."""
        text = str(err)
        if "straddl" in text:
            return (f"{file.path}: a row is longer than block_size={opts.block_size} bytes; "
                    "raise the 'block_size' option")
        column = _COLUMN_ERROR.search(text)
        if column is not None:
            index, detail = int(column.group(1)), column.group(2)
            name = names[index] if index < len(names) else f"#{index}"
            value = _BAD_VALUE.search(detail)
            located = None
            if value is not None:
                wanted = value.group(1)
                located = self.locate(file, lambda line: (
                    f"value {wanted!r}" if _field(opts, line, index) == wanted else None))
            at = f" at {located}" if located else ""
            return f"{file.path}: column {name!r}{at}: {detail}"
        count = _FIELD_COUNT.search(text)
        if count is not None:
            expected = len(names)

            def bad(line: bytes) -> str | None:
                if not line.strip(b"\r\n"):
                    return None
                found = len(opts.split_fields(line))
                return (f"{found} fields, expected {expected}" if found != expected
                        else None)

            located = self.locate(file, bad)
            if located:
                return f"{file.path}: malformed CSV row at {located}"
        return f"{file.path}: cannot read as csv: {text}"


def _field(opts: CsvOptions, line: bytes, index: int) -> str | None:
    fields = opts.split_fields(line)
    return fields[index] if index < len(fields) else None


def _parse_zoned(batch: pa.RecordBatch, types: dict[str, pa.TimestampType],
                 file: PartitionedFile) -> pa.RecordBatch:
    """Timestamps for zoned columns: values with an offset are converted to UTC, values
    without one are taken as UTC (pyarrow's CSV parser rejects those for a zoned type)."""
    columns = list(batch.columns)
    for name, target in types.items():
        i = batch.schema.get_field_index(name)
        arr = columns[i]
        try:
            zoned = pc.match_substring_regex(arr, _ZONE_SUFFIX)
            with_zone = pc.if_else(zoned, arr, None).cast(target)
            naive = pc.if_else(zoned, None, arr).cast(pa.timestamp(target.unit)).cast(target)
            columns[i] = pc.if_else(zoned, with_zone, naive)
        except pa.ArrowInvalid as err:
            raise CorruptFileError(f"{file.path}: column {name!r} cannot be read as "
                                   f"{target}: {err}") from None
    fields = [f.with_type(columns[i].type) for i, f in enumerate(batch.schema)]
    return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))


class CsvSource(FileSource):
    opener_class = CsvOpener


CsvFormat.source_class = CsvSource


# --- writing ------------------------------------------------------------------------------

class CsvWriter(FileWriter):
    """Writes what :class:`CsvOpener` reads back with the same options: the header spelled
    as :meth:`CsvOptions.split_fields` splits it (quoted only where it must be, never with
    quoting off), values quoted with ``"`` where needed or never (``quote`` off), and null
    as the first of ``null_values``."""

    def __init__(self, sink: CsvSink, out: pa.NativeFile) -> None:
        opts = CsvOptions.parse(sink.format.options)
        self.stream = sink.text_stream(out)
        self.out = out
        null = opts.null_values[0] if opts.null_values else ""
        extra: dict[str, Any] = {"null_string": null} if null else {}
        write = pacsv.WriteOptions(include_header=False, delimiter=opts.delimiter,
                                   quoting_style="none" if opts.quote is None else "needed",
                                   **extra)
        schema = pa.schema([f.with_type(pa.string()) if pa.types.is_floating(f.type) else f
                            for f in sink.schema])
        stream: Any = self.stream
        if opts.header:
            stream.write(_header_line(sink.schema.names, opts))
        self.writer = pacsv.CSVWriter(stream, schema, write_options=write)

    def write(self, batch: pa.RecordBatch) -> None:
        try:
            self.writer.write_batch(_floats_as_floats(batch))
        except pa.ArrowInvalid as err:
            raise OptionError(f"csv: a value cannot be written so that it reads back with "
                              f"quote off (it holds the delimiter, a quote or a line "
                              f"break); write with quote='\"': {err}") from None

    def close(self) -> None:
        self.writer.close()
        self.stream.close()  # a compressed stream closes ``out`` too
        if not self.out.closed:
            self.out.close()


def _floats_as_floats(batch: pa.RecordBatch) -> pa.RecordBatch:
    """pyarrow spells 3.0 as ``3``, which a reader infers as an integer column; keep the
    ``.0`` (as Spark does) so every file of a float column reads back as a float."""
    if not any(pa.types.is_floating(f.type) for f in batch.schema):
        return batch
    columns = []
    for f, column in zip(batch.schema, batch.columns, strict=True):
        if pa.types.is_floating(f.type):
            text: Any = pc.cast(column, pa.string())
            integral = pc.match_substring_regex(text, r"^-?\d+$")
            column = pc.if_else(integral, pc.binary_join_element_wise(text, ".0", ""), text)
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def _header_line(names: list[str], opts: CsvOptions) -> bytes:
    """The header as the reader splits it back into ``names``."""
    buffer = io.StringIO()
    writer = pycsv.writer(buffer, delimiter=opts.delimiter, quotechar='"', lineterminator="\n",
                          quoting=pycsv.QUOTE_NONE if opts.quote is None
                          else pycsv.QUOTE_MINIMAL)
    try:
        writer.writerow(names)
    except pycsv.Error:
        raise OptionError(f"csv: column names {names!r} cannot be written with quote off "
                          "(one holds the delimiter, a quote or a line break)") from None
    return buffer.getvalue().encode()


class CsvSink(FileSink):
    """CSV with the format's ``header`` (default on), ``delimiter`` and ``quote`` (``"`` or
    off: the writer quotes with ``"`` only); null is the first of ``null_values`` (an empty
    field by default); ``compression`` gzip, bz2 or zstd. What it writes reads back with the
    same options."""

    def __init__(self, format: FileFormat, schema: pa.Schema,  # noqa: A002
                 compression: str | None = None) -> None:
        super().__init__(format, schema, compression)
        opts = CsvOptions.parse(format.options)
        if opts.quote not in (None, '"'):
            raise OptionError(f"format {format.name!r}: writing with quote={opts.quote!r} is "
                              "not supported (the writer quotes with '\"'); write with "
                              "quote='\"' or quote off")
        if opts.null_values and opts.null_values[0] and not hasattr(
                pacsv.WriteOptions(), "null_string"):
            raise OptionError(f"format {format.name!r}: writing null as "
                              f"{opts.null_values[0]!r} needs a pyarrow whose CSV writer "
                              "takes null_string")

    def open(self, out: pa.NativeFile) -> FileWriter:
        return CsvWriter(self, out)


CsvFormat.sink_class = CsvSink
