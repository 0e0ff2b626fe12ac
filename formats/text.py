"""Line-oriented text files: compression by extension, byte ranges aligned to lines, samples.

Shared by the CSV and NDJSON formats and by custom line formats (see
``examples/fixed_width_format.py``). Two rules make splitting safe:

- a line belongs to the byte range its *first byte* lies in, so a range ``[start, end)``
  that does not start at 0 skips to the byte after the first newline at or after
  ``start - 1``, and reads past ``end`` to the end of the line that straddles it;
- compressed files cannot be entered mid-stream, so they are never split.

Everything streams: a reader holds one chunk of raw bytes (and the decompressor's
window) at a time, never the whole file. Lines are ``\\n``-terminated (``\\r\\n`` works);
a quoted value containing a newline is therefore not supported in split mode; formats
offer a ``multiline`` option that reads such files whole instead.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal

import pyarrow as pa

from listing.errors import FileReadError
from listing.files import PartitionedFile
from listing.formats.base import COMPRESSIONS, UNREADABLE_COMPRESSIONS, FileFormat, FileOpener
from listing.formats.conform import canonical_type, unify_schemas
from listing.storage.errors import raise_as, read_failure
from listing.storage.reading import open_input
from listing.storage.spec import StorageSpec

#: raw bytes fetched per request while inside a range (one GET per chunk on S3)
CHUNK = 4 << 20
#: bytes fetched per request past a range's end, looking for the straddling line's end
TAIL = 64 << 10
BOM = b"\xef\xbb\xbf"
#: how a stream in the snappy framing format starts (its stream identifier chunk)
SNAPPY_FRAMED = b"\xff\x06\x00\x00sNaPpY"


# --- files ----------------------------------------------------------------------------------

def compression_of(path: str, allowed: tuple[str, ...] | None = None) -> str | None:
    """Codec of a compressed path by its suffix, in any case (``x.csv.gz``, ``x.GZ`` ->
    ``gzip``; see :data:`~listing.formats.base.COMPRESSIONS`), else None. A suffix of
    :data:`~listing.formats.base.UNREADABLE_COMPRESSIONS` (``.zip``) raises
    :class:`FileReadError` naming the file and the codec: its bytes are never parsed as
    text."""
    name = path.rsplit("/", 1)[-1].lower()
    for suffix, codec in COMPRESSIONS.items():
        if name.endswith(suffix) and (allowed is None or suffix in allowed):
            return codec
    for suffix, codec in UNREADABLE_COMPRESSIONS.items():
        if name.endswith(suffix):
            raise FileReadError(f"{path}: compressed as {codec} (its name ends in {suffix}), "
                                "which this reader cannot decode; known: "
                                f"{', '.join(sorted(COMPRESSIONS))}. Leave such files out "
                                "with the path_glob_filter option, or recompress them")
    return None


class HadoopBlockStream(io.RawIOBase):
    """Decodes Hadoop's block framing (``BlockCompressorStream``, what Spark's
    ``SnappyCodec`` and ``Lz4Codec`` read and write): blocks of a 4-byte big-endian
    decompressed length, then chunks of a 4-byte big-endian compressed length and the raw
    ``codec`` bytes, until the block's length is reached. Reads one chunk at a time."""

    def __init__(self, raw: Any, codec: Literal["snappy", "lz4_raw"], path: str) -> None:
        super().__init__()
        self._raw, self._codec, self._path = raw, pa.Codec(codec), path
        self._left = 0  # decompressed bytes the current block still owes
        self._data, self._i = b"", 0

    def _exact(self, n: int, what: str) -> bytes | None:
        parts, have = [], 0
        while have < n:
            part = self._raw.read(n - have)
            if not part:
                if have == 0 and what == "block header":
                    return None  # the end of the stream, between blocks
                raise FileReadError(f"{self._path}: truncated {self._codec.name} stream "
                                    f"(Hadoop block framing) in a {what}")
            parts.append(bytes(part))
            have += len(part)
        return b"".join(parts)

    def _next_chunk(self) -> bool:
        while self._left == 0:
            header = self._exact(4, "block header")
            if header is None:
                return False
            if header == SNAPPY_FRAMED[:4] and self._codec.name == "snappy":
                raise FileReadError(
                    f"{self._path}: compressed in the snappy framing format (Firehose's "
                    "'Snappy'), not in Hadoop's snappy block framing that .snappy names "
                    "here and in Spark; deliver with Hadoop-compatible Snappy or gzip")
            self._left = int.from_bytes(header, "big")
        size = int.from_bytes(self._exact(4, "chunk header") or b"", "big")
        if size > 1 << 30:
            raise FileReadError(f"{self._path}: not a Hadoop {self._codec.name} stream (a "
                                f"chunk of {size} bytes)")
        chunk = self._exact(size, "chunk") or b""
        try:
            data = self._codec.decompress(chunk, decompressed_size=self._left, asbytes=True)
        except (pa.ArrowException, OSError) as err:
            raise FileReadError(f"{self._path}: not a Hadoop {self._codec.name} stream: "
                                f"{err}") from None
        if not data and size:
            raise FileReadError(f"{self._path}: not a Hadoop {self._codec.name} stream")
        self._left -= len(data)
        self._data, self._i = data, 0
        return True

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        view = memoryview(b).cast("B")
        while self._i >= len(self._data):
            if not self._next_chunk():
                return 0
        k = min(len(view), len(self._data) - self._i)
        view[:k] = memoryview(self._data)[self._i:self._i + k]
        self._i += k
        return k

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()


class ZlibStream(io.RawIOBase):
    """A zlib stream (Hadoop's ``DefaultCodec``, the ``.deflate`` suffix), decoded as read."""

    def __init__(self, raw: Any, path: str, chunk: int) -> None:
        super().__init__()
        self._raw, self._path, self._chunk = raw, path, chunk
        self._z = zlib.decompressobj()
        self._data, self._i = b"", 0

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        view = memoryview(b).cast("B")
        while self._i >= len(self._data):
            if self._z.eof:
                return 0
            raw = bytes(self._raw.read(self._chunk) or b"")
            try:
                self._data = self._z.decompress(raw) if raw else self._z.flush()
            except zlib.error as err:
                raise FileReadError(f"{self._path}: not a deflate (zlib) stream: "
                                    f"{err}") from None
            self._i = 0
            if not raw and not self._data:
                if not self._z.eof:
                    raise FileReadError(f"{self._path}: truncated deflate (zlib) stream")
                return 0
        k = min(len(view), len(self._data) - self._i)
        view[:k] = memoryview(self._data)[self._i:self._i + k]
        self._i += k
        return k

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()


def decompressing(raw: Any, compression: str, path: str, chunk: int) -> Any:
    """A readable stream of ``raw``'s decompressed bytes (``compression`` a codec of
    :data:`~listing.formats.base.COMPRESSIONS`)."""
    if compression == "deflate":
        return ZlibStream(raw, path, chunk)
    if compression.startswith("hadoop-"):
        codec: Literal["snappy", "lz4_raw"] = (
            "snappy" if compression == "hadoop-snappy" else "lz4_raw")
        return HadoopBlockStream(io.BufferedReader(_Reader(raw), chunk), codec, path)
    buffered = pa.BufferedInputStream(pa.PythonFile(raw, mode="r"), chunk)
    # pyarrow-stubs want a Literal codec name; this one comes from COMPRESSIONS
    return pa.CompressedInputStream(buffered, compression)  # type: ignore[arg-type]


class _Reader(io.RawIOBase):
    """Any object with ``read(n)`` as a raw stream ``io.BufferedReader`` takes."""

    def __init__(self, raw: Any) -> None:
        super().__init__()
        self._raw = raw

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        data = self._raw.read(len(b))
        n = len(data)
        memoryview(b).cast("B")[:n] = data
        return n

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()


class LineStream(io.RawIOBase):
    """The bytes of the lines owned by one range of a stream, as a file pyarrow can read.

    ``start`` and ``end`` are positions in ``raw`` (``end`` None: to the end). ``raw`` must
    be positioned at ``max(start - 1, 0)``. Tracks the absolute offset of what it has
    handed out, so errors can name a byte offset.
    """

    def __init__(self, raw: Any, start: int = 0, end: int | None = None,
                 chunk: int = CHUNK) -> None:
        super().__init__()
        self._raw = raw
        self._end = end
        self._chunk = chunk
        self._pos = max(start - 1, 0)  # position in raw of the next byte read from it
        # the current chunk, its absolute position, and how much of it was handed out
        # (an index rather than re-slicing, so a chunk is never copied piece by piece)
        self._data = b""
        self._base = self._pos
        self._i = 0
        self._done = False
        if start > 0:
            self._skip_partial_line()
        if end is not None and self.offset >= end:
            self._done, self._data, self._i = True, b"", 0

    @property
    def offset(self) -> int:
        """Absolute position of the next byte this stream hands out."""
        return self._base + self._i

    # - raw reading -
    def _read_raw(self) -> bytes:
        if self._end is None or self._pos < self._end:
            size = self._chunk if self._end is None else min(self._chunk, self._end - self._pos)
        else:
            size = TAIL
        # a FileChangedError (the listed version was replaced: S3 reads are conditional on
        # its ETag) or a StorageError propagates to the opener as it is
        data = bytes(self._raw.read(size) or b"")
        self._pos += len(data)
        return data

    def _load(self, data: bytes, skip: int = 0) -> None:
        """Make ``data`` (the bytes just read) the current chunk, handing out from
        ``skip``; cut it after the line that straddles ``end`` (the first newline at or
        after ``end - 1``), which ends the stream."""
        self._base, self._data, self._i = self._pos - len(data), data, skip
        if self._end is None or self._base + len(data) < self._end:
            return
        j = data.find(b"\n", max(skip, self._end - 1 - self._base))
        if j >= 0:
            self._data = data[:j + 1]
            self._done = True

    def _skip_partial_line(self) -> None:
        while True:
            data = self._read_raw()
            if not data:
                self._done = True
                self._base, self._data, self._i = self._pos, b"", 0
                return
            j = data.find(b"\n")
            if j >= 0:
                self._load(data, j + 1)
                return

    def _fill(self) -> bool:
        """Load the next chunk when the current one is used up; False at the end of the
        owned lines."""
        while self._i >= len(self._data) and not self._done:
            data = self._read_raw()
            if not data:
                self._done = True
                break
            self._load(data)
        return self._i < len(self._data)

    # - io.RawIOBase -
    def readable(self) -> bool:
        return True

    # Reads are full: they return ``size`` bytes unless the owned lines end first. A reader
    # that parses in blocks (pyarrow's CSV chunker lets a row span at most two blocks)
    # would otherwise get a short block wherever a raw chunk ends, e.g. the last bytes
    # before ``end``, and see a 33-byte row "straddle" three blocks.
    def readinto(self, b: Any) -> int:
        view = memoryview(b).cast("B")
        n = 0
        while n < len(view) and self._fill():
            k = min(len(view) - n, len(self._data) - self._i)
            view[n:n + k] = memoryview(self._data)[self._i:self._i + k]
            self._i += k
            n += k
        return n

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            return self.readall()
        parts: list[bytes] = []
        have = 0
        while have < size and self._fill():
            part = self._data[self._i:self._i + size - have]
            self._i += len(part)
            have += len(part)
            parts.append(part)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def readline(self, size: int | None = -1) -> bytes:
        parts = []
        while self._fill():
            j = self._data.find(b"\n", self._i)
            stop = len(self._data) if j < 0 else j + 1
            parts.append(self._data[self._i:stop])
            self._i = stop
            if j >= 0:
                break
        return b"".join(parts)

    def at_end(self) -> bool:
        """True when no owned byte is left (reads ahead one chunk if needed)."""
        return not self._fill()

    def close(self) -> None:
        try:
            self._raw.close()
        finally:
            super().close()


def slices(batch: pa.RecordBatch, size: int) -> Iterator[pa.RecordBatch]:
    """``batch`` in pieces of at most ``size`` rows; an empty batch passes through once
    (a zero-column batch still carries its row count)."""
    for start in range(0, max(batch.num_rows, 1), size):
        yield batch.slice(start, size)


def open_lines(fs: Any, file: PartitionedFile, *, compression: str | None = None,
               chunk: int = CHUNK) -> LineStream:
    """A :class:`LineStream` over ``file``'s byte range, decompressing when needed."""
    raw = open_input(fs, file)
    try:
        if compression is not None:
            if file.byte_range is not None and file.byte_range[0] > 0:
                raise FileReadError(f"{file.path}: a compressed file cannot be read from byte "
                                    f"{file.byte_range[0]}; it is not splittable")
            return LineStream(decompressing(raw, compression, file.path, chunk), chunk=chunk)
        if file.byte_range is None:
            return LineStream(raw, chunk=chunk)
        start, end = file.byte_range
        if start > 0:
            raw.seek(start - 1)
        return LineStream(raw, start, end, chunk=chunk)
    except BaseException:
        raw.close()
        raise


def first_line(fs: Any, file: PartitionedFile, compression: str | None = None) -> bytes:
    """The file's first line (a header), without its line ending or a UTF-8 BOM."""
    whole = PartitionedFile(file.path, file.size, file.partition_values)
    with open_lines(fs, whole, compression=compression, chunk=TAIL) as stream:
        return strip_line(stream.readline(), first=True)


def strip_line(line: bytes, first: bool = False) -> bytes:
    if first and line.startswith(BOM):
        line = line[len(BOM):]
    return line.rstrip(b"\r\n")


def read_sample(fs: Any, file: PartitionedFile, nbytes: int,
                compression: str | None = None) -> bytes:
    """Up to ``nbytes`` of complete lines from the start of ``file`` (decompressed)."""
    whole = PartitionedFile(file.path, file.size, file.partition_values)
    with open_lines(fs, whole, compression=compression, chunk=min(nbytes, CHUNK)) as stream:
        parts, have = [], 0
        while have < nbytes:
            part = stream.read(nbytes - have)
            if not part:
                break
            parts.append(part)
            have += len(part)
        data = b"".join(parts)
        if have >= nbytes and not stream.at_end():
            cut = data.rfind(b"\n")
            data = data[:cut + 1] if cut >= 0 else data + stream.readline()
    if data.startswith(BOM):
        data = data[len(BOM):]
    return data


def numbered_lines(fs: Any, file: PartitionedFile,
                   compression: str | None = None) -> Iterator[tuple[int, int, bytes]]:
    """``(line number within the range, absolute byte offset, line)`` for diagnostics."""
    with open_lines(fs, file, compression=compression) as stream:
        number = 0
        while True:
            offset = stream.offset
            line = stream.readline()
            if not line:
                return
            number += 1
            yield number, offset, line


def where(file: PartitionedFile, number: int, offset: int, compressed: bool) -> str:
    """``line N (byte offset B)``, with line numbers only when they count from the top."""
    at = f"{'decompressed ' if compressed else ''}byte offset {offset}"
    if file.byte_range is None or file.byte_range[0] == 0:
        return f"line {number} ({at})"
    return f"line {number} of byte range {file.byte_range[0]}-{file.byte_range[1]} ({at})"


# --- schemas --------------------------------------------------------------------------------

def inferred_type(t: pa.DataType) -> pa.DataType:
    """A sampled type as a table column type: nulls and times become strings (a sample
    cannot tell), timestamps become microseconds, everything spelled canonically."""
    if pa.types.is_null(t) or pa.types.is_time(t):
        return pa.string()
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz="UTC" if t.tz is not None else None)
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, inferred_type(f.type)) for f in t])
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(pa.field(t.value_field.name, inferred_type(t.value_type)))
    return canonical_type(t)


def inferred_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, inferred_type(f.type)) for f in schema])


class TextFormat(FileFormat):
    """Base of line-oriented formats: splittable unless compressed or ``multiline``,
    schema inferred from a bounded sample of the first file (of every file with
    ``merge_schema``), samples read concurrently."""

    #: every suffix of :data:`~listing.formats.base.COMPRESSIONS`: a table of any name
    #: decodes each file by its suffix, as Spark's readers do
    compressions = tuple(COMPRESSIONS)

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.parsed = self.parse_options(self.options)

    def parse_options(self, options: dict[str, Any]) -> Any:
        """The options (typed by the option registry) in the form the readers use."""
        return options

    def compression(self, path: str) -> str | None:
        return compression_of(path, self.compressions)

    def is_splittable(self, file: PartitionedFile) -> bool:
        return self.compression(file.path) is None and not self.options.get("multiline")

    def infer_schema(self, files: list[PartitionedFile], storage: StorageSpec) -> pa.Schema:
        if not files:
            raise FileReadError(f"no {self.name} files to infer a schema from")
        fs = storage.filesystem()
        nbytes: int = self.options.get("sample_bytes", 1 << 20)

        def one(f: PartitionedFile) -> tuple[str, pa.Schema]:
            try:
                data = read_sample(fs, f, nbytes, self.compression(f.path))
            except Exception as err:  # noqa: BLE001 - classified, never swallowed
                raise_as(read_failure(f.path, err, f"cannot sample as {self.name}"), err)
            return f.path, self.sample_schema(data, f)

        if not self.options.get("merge_schema") or len(files) == 1:
            return one(files[0])[1]
        with ThreadPoolExecutor(max_workers=16) as pool:
            return self.unify(list(pool.map(one, files)))

    def sample_schema(self, data: bytes, file: PartitionedFile) -> pa.Schema:
        """Schema of a sample of complete lines (BOM stripped) taken from ``file``."""
        raise NotImplementedError

    def unify(self, schemas: list[tuple[str, pa.Schema]]) -> pa.Schema:
        return unify_schemas(schemas)


class TextOpener(FileOpener):
    """Opener helpers for line formats: the owned lines of a range, decompressed."""

    def compression(self, file: PartitionedFile) -> str | None:
        return compression_of(file.path, self.source.format.compressions)

    def lines(self, file: PartitionedFile) -> LineStream:
        return open_lines(self.fs, file, compression=self.compression(file))

    def locate(self, file: PartitionedFile,
               bad: Callable[[bytes], str | None]) -> str | None:
        """Scan the range's lines for the first one ``bad`` complains about; returns
        ``"line N (byte offset B): complaint"``. Used only after a reader failed."""
        compression = self.compression(file)
        try:
            for number, offset, line in numbered_lines(self.fs, file, compression):
                problem = bad(line)
                if problem:
                    return f"{where(file, number, offset, compression is not None)}: {problem}"
        except (OSError, pa.ArrowException, ValueError, EOFError):
            return None
        return None
