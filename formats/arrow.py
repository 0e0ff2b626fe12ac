"""Arrow IPC: the random-access file format (``ARROW1`` magic) and the streaming format.

Both are read record batch by record batch with only the columns the scan needs
(``IpcReadOptions.included_fields``). Which format a file holds is decided by its first
six bytes, not its extension, since ``.arrow`` is used for both in the wild. Options:
``merge_schema`` (false). Files are not split: a task reads whole files.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc

from listing.errors import FileReadError
from listing.files import PartitionedFile
from listing.formats.base import (
    CorruptFileError,
    FileFormat,
    FileOpener,
    FileSink,
    FileSource,
    FileWriter,
    MissingFileError,
)
from listing.formats.conform import unify_schemas
from listing.formats.text import CHUNK
from listing.storage.errors import raise_as, read_failure
from listing.storage.reading import open_input
from listing.storage.spec import StorageSpec

MAGIC = b"ARROW1"


class IpcFile:
    """One IPC file or stream opened for reading; ``batches()`` streams them in order."""

    def __init__(self, fs: Any, file: PartitionedFile,
                 columns: list[str] | None = None) -> None:
        self.path = file.path
        self._fs, self._file = fs, file
        self._handles: list[Any] = []
        self.is_file_format = False
        self.reader = self._open(None)
        self.schema: pa.Schema = self.reader.schema
        if columns is not None:
            indices = [self.schema.get_field_index(n) for n in columns]
            indices = [i for i in indices if i >= 0]
            # reopening costs one small request but spares reading unwanted columns;
            # an empty ``included_fields`` means "all", so keep one column to count rows
            if len(indices) < len(self.schema):
                self.reader = self._open(ipc.IpcReadOptions(included_fields=indices or [0]))
                self._select: list[str] | None = [self.schema.field(i).name for i in indices]
                return
        self._select = None

    def _open(self, options: ipc.IpcReadOptions | None) -> Any:
        raw = open_input(self._fs, self._file, readahead=CHUNK)
        self._handles.append(raw)
        try:
            magic = raw.read(8)
        except FileNotFoundError as err:
            raise MissingFileError(f"{self.path}: file vanished after listing ({err})") from None
        if not magic:
            raise CorruptFileError(f"{self.path}: empty file, not Arrow IPC")
        if not magic.startswith(MAGIC):
            self._check_stream_prefix(magic)
        magic = magic[:len(MAGIC)]
        raw.seek(0)
        try:
            if magic == MAGIC:
                self.is_file_format = True
                return ipc.open_file(raw, options=options)
            return ipc.open_stream(raw, options=options)
        except Exception as err:  # noqa: BLE001 - classified, never swallowed
            kind = "file" if magic == MAGIC else "stream"
            raise_as(read_failure(self.path, err, f"not a readable Arrow IPC {kind}"), err)

    def _check_stream_prefix(self, head: bytes) -> None:
        """Reject garbage before pyarrow trusts its first four bytes as a metadata length
        (and allocates that much: seconds and gigabytes for a text file)."""
        if head[:4] == b"\xff\xff\xff\xff":  # continuation marker, then the length
            length = int.from_bytes(head[4:8], "little", signed=True)
        else:  # pre-1.0 streams start with the length itself
            length = int.from_bytes(head[:4], "little", signed=True)
        limit = self._file.size or 1 << 31
        if len(head) < 8 or not 0 <= length <= limit:
            raise CorruptFileError(f"{self.path}: not an Arrow IPC file or stream (it does not "
                                   f"start with 'ARROW1' or a message header)")

    def batches(self) -> Iterator[pa.RecordBatch]:
        if self.is_file_format:
            source: Any = (self.reader.get_batch(i)
                           for i in range(self.reader.num_record_batches))
        else:
            source = self.reader
        for batch in source:
            yield batch.select(self._select) if self._select is not None else batch

    def close(self) -> None:
        for h in self._handles:
            h.close()

    def __enter__(self) -> IpcFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ArrowFormat(FileFormat):
    name = "arrow"
    extensions = (".arrow", ".feather", ".ipc", ".arrows")
    option_defaults = {"merge_schema": False}

    def infer_schema(self, files: list[PartitionedFile], storage: StorageSpec) -> pa.Schema:
        if not files:
            raise FileReadError("no Arrow IPC files to infer a schema from")
        fs = storage.filesystem()

        def one(f: PartitionedFile) -> tuple[str, pa.Schema]:
            with IpcFile(fs, f) as opened:
                return f.path, opened.schema.remove_metadata()

        if not self.options["merge_schema"] or len(files) == 1:
            return one(files[0])[1]
        with ThreadPoolExecutor(max_workers=16) as pool:
            return unify_schemas(list(pool.map(one, files)))


class ArrowOpener(FileOpener):
    def read_batches(self, file: PartitionedFile) -> Iterator[pa.RecordBatch]:
        with IpcFile(self.fs, file, list(self.source.read_schema.names)) as opened:
            yield from opened.batches()


class ArrowSource(FileSource):
    opener_class = ArrowOpener


ArrowFormat.source_class = ArrowSource


# --- writing ------------------------------------------------------------------------------

class IpcWriter(FileWriter):
    def __init__(self, sink: ArrowSink, out: pa.NativeFile) -> None:
        self.out = out
        codec: Any = sink.compression
        options = ipc.IpcWriteOptions(compression=codec)
        self.writer = ipc.new_file(out, sink.schema, options=options)

    def write(self, batch: pa.RecordBatch) -> None:
        self.writer.write_batch(batch)

    def close(self) -> None:
        self.writer.close()
        self.out.close()


class ArrowSink(FileSink):
    """Arrow IPC files (the random-access file format), buffers optionally compressed."""

    compressions = {"zstd": "zstd", "lz4": "lz4"}

    def open(self, out: pa.NativeFile) -> FileWriter:
        return IpcWriter(self, out)


ArrowFormat.sink_class = ArrowSink
