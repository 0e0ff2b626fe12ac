"""A custom format from scratch: fixed-width text, where columns sit at fixed positions.

    id    name      amount  day
    1     alice      12.50  2026-03-01
    2     bob         7.00  2026-03-02

It shows the three classes a format needs and nothing else:

- :class:`FixedWidthFormat` (planning): which files are ours, how to split them, and the
  schema, inferred from the header (column names *and* positions) and a sample of lines;
- :class:`FixedWidthSource`: the picklable metadata a Spark task receives;
- :class:`FixedWidthOpener` (executor): streams one file or byte range as record batches,
  slicing columns out of many lines at once with pyarrow compute, not per row in Python.

Line handling (ranges aligned to whole lines, compression, samples) comes from
``listing.formats.text``, the same helpers the CSV and NDJSON formats use. Options (strings
accepted): ``columns`` (``"id:6,name:10,amount:8,day:10"``, names and widths in order;
without it the header gives them: a column starts where its name starts), ``header``
(true), ``sample_bytes`` (64 KiB read for inference).

Importing this module registers it: ``ListingTable.open(url, format="fixed_width")``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from listing import formats
from listing.errors import OptionError
from listing.files import PartitionedFile
from listing.formats.base import CorruptFileError, FileFormat, FileOpener, FileSource
from listing.formats.text import (
    CHUNK,
    compression_of,
    first_line,
    open_lines,
    read_sample,
    strip_line,
)
from listing.options import parse_bool, parse_int
from listing.storage import StorageSpec

#: (name, first character, end character or None for "to the end of the line")
Layout = list[tuple[str, int, int | None]]

#: types tried, most specific first, when inferring a column from its sampled values
_CANDIDATES = (pa.int64(), pa.float64(), pa.date32(), pa.timestamp("us"), pa.bool_())


def parse_columns(spec: Any) -> Layout | None:
    """``"id:6,name:10"`` or ``[("id", 6), ("name", 10)]`` as a layout; None if unset."""
    if spec is None or spec == "":
        return None
    items = spec.split(",") if isinstance(spec, str) else list(spec)
    layout: Layout = []
    pos = 0
    for item in items:
        name, width = item.rsplit(":", 1) if isinstance(item, str) else item
        width = parse_int(width, f"columns ({name})", minimum=1)
        layout.append((str(name).strip(), pos, pos + width))
        pos += width
    return layout


def layout_from_header(header: str) -> Layout:
    """Column starts are where the names start; the last column runs to the line end."""
    starts = [i for i, ch in enumerate(header)
              if not ch.isspace() and (i == 0 or header[i - 1].isspace())]
    ends: list[int | None] = [*starts[1:], None]
    return [(header[s:e].strip(), s, e) for s, e in zip(starts, ends, strict=True)]


def split_lines(block: bytes) -> pa.Array:
    """Non-empty lines of a block of whole lines, as one string array (no Python loop)."""
    try:
        text = pa.array([block.decode("utf-8")])
    except UnicodeDecodeError as err:
        raise ValueError(f"invalid UTF-8 at byte {err.start} of a block") from None
    lines = pc.utf8_rtrim(pc.split_pattern(text, "\n").flatten(), characters="\r")
    return lines.filter(pc.greater(pc.utf8_length(lines), 0))


def column_values(lines: pa.Array, start: int, end: int | None) -> pa.Array:
    """One column's trimmed text from each line; blanks are null."""
    sliced = pc.utf8_slice_codeunits(lines, start, end if end is not None else 2**31 - 1)
    values = pc.utf8_trim_whitespace(sliced)
    return pc.if_else(pc.equal(values, ""), pa.scalar(None, pa.string()), values)


def guess_type(values: pa.Array) -> pa.DataType:
    present = values.drop_null()
    if len(present) == 0:
        return pa.string()
    for candidate in _CANDIDATES:
        try:
            present.cast(candidate)
            return candidate
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
    return pa.string()


class FixedWidthFormat(FileFormat):
    name = "fixed_width"
    extensions = (".fwf", ".txt")
    compressions = (".gz", ".bz2", ".zst")
    option_defaults = {"columns": None, "header": True, "sample_bytes": 64 << 10}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.layout = parse_columns(self.options["columns"])
        self.header = parse_bool(self.options["header"], "header")
        parse_int(self.options["sample_bytes"], "sample_bytes", minimum=1)
        if self.layout is None and not self.header:
            raise OptionError("fixed_width needs a header line or the 'columns' option")

    def is_splittable(self, file: PartitionedFile) -> bool:
        return compression_of(file.path, self.compressions) is None

    def infer_schema(self, files: list[PartitionedFile], storage: StorageSpec) -> pa.Schema:
        file = files[0]
        data = read_sample(storage.filesystem(), file,
                           parse_int(self.options["sample_bytes"], "sample_bytes", minimum=1),
                           compression_of(file.path, self.compressions))
        lines = data.split(b"\n")
        layout = self.layout
        if self.header:
            head = strip_line(lines.pop(0), first=True).decode("utf-8") if lines else ""
            layout = layout or layout_from_header(head)
        body = split_lines(b"\n".join(lines))
        return pa.schema([pa.field(name, guess_type(column_values(body, start, end)))
                          for name, start, end in layout or []])


class FixedWidthOpener(FileOpener):
    def read_batches(self, file: PartitionedFile) -> Iterator[pa.RecordBatch]:
        options = self.source.options
        compression = compression_of(file.path, FixedWidthFormat.compressions)
        with open_lines(self.fs, file, compression=compression) as stream:
            layout = parse_columns(options.get("columns"))
            if parse_bool(options.get("header", True), "header"):
                if file.byte_range is None or file.byte_range[0] == 0:
                    head = strip_line(stream.readline(), first=True)
                else:  # the header belongs to offset 0; other ranges peek at it
                    head = first_line(self.fs, file, compression)
                layout = layout or layout_from_header(head.decode("utf-8"))
            where = {name: (start, end) for name, start, end in layout or []}
            wanted = [f for f in self.source.read_schema if f.name in where]
            carry = b""
            while True:
                chunk = stream.read(CHUNK)
                block = carry + chunk
                cut = block.rfind(b"\n") if chunk else len(block) - 1
                block, carry = block[:cut + 1], block[cut + 1:]
                if block:
                    yield from self._batches(file, split_lines(block), wanted, where)
                if not chunk:
                    return

    def _batches(self, file: PartitionedFile, lines: pa.Array, wanted: list[pa.Field],
                 where: dict[str, tuple[int, int | None]]) -> Iterator[pa.RecordBatch]:
        columns = []
        for f in wanted:
            values = column_values(lines, *where[f.name])
            try:
                columns.append(values.cast(f.type))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
                raise CorruptFileError(f"{file.path}: column {f.name!r} cannot be read as "
                                       f"{f.type}: {err}") from None
        if not columns:  # only the row count is wanted
            batch = pa.RecordBatch.from_pydict({"n": pa.nulls(len(lines))}).select([])
        else:
            batch = pa.RecordBatch.from_arrays(columns, schema=pa.schema(wanted))
        size = self.source.batch_size
        for start in range(0, batch.num_rows, size):
            yield batch.slice(start, size)


class FixedWidthSource(FileSource):
    opener_class = FixedWidthOpener


FixedWidthFormat.source_class = FixedWidthSource
formats.register("fixed_width", FixedWidthFormat)
