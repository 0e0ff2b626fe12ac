"""A custom format from scratch: fixed-width text, where columns sit at fixed positions.

    id    name      amount  day
    1     alice      12.50  2026-03-01
    2     bob         7.00  2026-03-02

It shows the three classes a format needs to read, and the two it needs to write:

- :class:`FixedWidthFormat` (planning): which files are ours, how to split them, and the
  schema, inferred from the header (column names *and* positions) and a sample of lines;
- :class:`FixedWidthSource`: the picklable metadata a Spark task receives;
- :class:`FixedWidthOpener` (executor): streams one file or byte range as record batches,
  slicing columns out of many lines at once with pyarrow compute, not per row in Python;
- :class:`FixedWidthSink` (``FileFormat.sink_class``) and :class:`FixedWidthWriter`: encode
  batches of one schema into one output stream, so ``listing.write.write_table(url, data,
  format="fixed_width", partition_by=[...])`` (and ``df.write.format("listing")``, where
  the executors import this module) writes the format; where files go and when they become
  visible is ``listing.write``'s business, not the sink's.

Writing: a header (unless ``header=false``), then one line per row, each column padded to
its width (numbers right-aligned). Widths come from ``columns`` when given (a longer value
is an error), else from each file's first batch (the longest value or name, plus one
space); a later value that does not fit raises and names ``columns`` as the fix. Nulls and
empty strings are blanks (read back as null), values lose leading and trailing blanks, a
value holding a line break is refused; floats keep their ``.0`` so a file of whole amounts
still infers as float. ``compression`` gzip, bz2 or zstd (``.fwf.gz``, …).

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
from listing.formats.base import (
    CorruptFileError,
    FileFormat,
    FileOpener,
    FileSink,
    FileSource,
    FileWriter,
)
from listing.formats.text import (
    CHUNK,
    compression_of,
    first_line,
    open_lines,
    read_sample,
    strip_line,
)
from listing.options import parse_int
from listing.storage import StorageSpec

#: (name, first character, end character or None for "to the end of the line")
Layout = list[tuple[str, int, int | None]]

#: types tried, most specific first, when inferring a column from its sampled values (a
#: timestamp with a zone, as the writer spells a zoned one, ``…06:00:00.000000Z``, is UTC)
_CANDIDATES = (pa.int64(), pa.float64(), pa.date32(), pa.timestamp("us"),
               pa.timestamp("us", "UTC"), pa.bool_())


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
        self.header: bool = self.options["header"]  # options arrive typed by their defaults
        if self.layout is None and not self.header:
            raise OptionError("fixed_width needs a header line or the 'columns' option")

    def is_splittable(self, file: PartitionedFile) -> bool:
        return compression_of(file.path, self.compressions) is None

    def infer_schema(self, files: list[PartitionedFile], storage: StorageSpec) -> pa.Schema:
        file = files[0]
        data = read_sample(storage.filesystem(), file,
                           self.options["sample_bytes"],
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
            if options.get("header", True):
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


# --- writing ---------------------------------------------------------------------------------

def value_text(values: pa.Array) -> pa.Array:
    """One column as text: nulls as ``""``, floats with their ``.0`` (``3`` would infer as an
    integer column), dates and timestamps ISO, booleans ``true``/``false``."""
    text: Any = pc.cast(values, pa.string())
    if pa.types.is_floating(values.type):
        whole = pc.match_substring_regex(text, r"^-?\d+$")
        text = pc.if_else(whole, pc.binary_join_element_wise(text, ".0", ""), text)
    return pc.fill_null(text, "")


class FixedWidthWriter(FileWriter):
    """Streams batches as padded lines; the widths are fixed by ``columns`` or by the first
    batch, then every line of the file uses them."""

    def __init__(self, sink: FixedWidthSink, out: pa.NativeFile) -> None:
        self.sink, self.out = sink, out
        self.stream = sink.text_stream(out)
        self.widths: list[int] | None = None
        self.gap = 1  # widths from the data keep one blank between columns
        layout = sink.format.layout
        if layout is not None:
            given = {name: end - start for name, start, end in layout if end is not None}
            missing = [n for n in sink.schema.names if n not in given]
            if missing:
                raise OptionError(f"fixed_width columns={sink.format.options['columns']!r} "
                                  f"gives no width for {missing}")
            self.widths = [given[n] for n in sink.schema.names]
            self.gap = 0  # the given layout, exactly
            self._header()

    def _header(self) -> None:
        if not self.sink.format.header:
            return
        names = self.sink.schema.names
        assert self.widths is not None
        cells = [n.ljust(w) for n, w in zip(names[:-1], self.widths, strict=False)]
        self.stream.write(("".join(cells) + names[-1] + "\n").encode("utf-8"))

    def write(self, batch: pa.RecordBatch) -> None:
        texts = [value_text(column) for column in batch.columns]
        if self.widths is None:  # no columns option: this file's first batch decides
            self.widths = [max(len(f.name), pc.max(pc.utf8_length(t)).as_py() or 0) + 1
                           for f, t in zip(batch.schema, texts, strict=True)]
            self._header()
        if not batch.num_rows:
            return
        cells = []
        last = len(texts) - 1
        for i, (f, text, width) in enumerate(zip(batch.schema, texts, self.widths,
                                                 strict=True)):
            longest = pc.max(pc.utf8_length(text)).as_py() or 0
            if longest > width - self.gap:
                raise OptionError(f"fixed_width: a value of column {f.name!r} has {longest} "
                                  f"characters, the column {width - self.gap}; give wider "
                                  "'columns' (e.g. columns='id:12,name:40,...')")
            if pc.any(pc.match_substring_regex(text, r"[\r\n]")).as_py():
                raise OptionError(f"fixed_width: column {f.name!r} holds a line break, "
                                  "which a line-based format cannot store")
            numeric = pa.types.is_integer(f.type) or pa.types.is_floating(f.type)
            if i < last or numeric:
                text = (pc.utf8_lpad if numeric else pc.utf8_rpad)(text, width - self.gap)
            if i < last and self.gap:
                text = pc.binary_join_element_wise(text, " " * self.gap, "")
            cells.append(text)
        lines = pc.binary_join_element_wise(*cells, "")
        # every line at once: one list of all lines, joined with newlines, no Python loop
        one = pa.ListArray.from_arrays(pa.array([0, len(lines)], pa.int32()), lines)
        self.stream.write((pc.binary_join(one, "\n")[0].as_py() + "\n").encode("utf-8"))

    def close(self) -> None:
        if self.widths is None:  # no batch at all: the header still gives the schema
            self.widths = [len(n) + 1 for n in self.sink.schema.names]
            self._header()
        self.stream.close()  # a compressed stream closes ``out`` too
        if not self.out.closed:
            self.out.close()


class FixedWidthSink(FileSink):
    """Fixed-width text files of one schema; ``compression`` gzip, bz2 or zstd."""

    format: FixedWidthFormat

    def open(self, out: pa.NativeFile) -> FileWriter:
        return FixedWidthWriter(self, out)


FixedWidthFormat.sink_class = FixedWidthSink
formats.register("fixed_width", FixedWidthFormat)
