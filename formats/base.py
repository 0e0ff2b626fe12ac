"""FileFormat, FileSource and FileOpener: how a format plans and reads its files.

- :class:`FileFormat` runs at planning time: which files are its own, their schema and
  statistics, which filters it can use, and how to split a file across tasks.
- :class:`FileSource` is what travels to executors: plain metadata (schema, projection,
  predicate, batch size, options, storage spec), picklable, no open handles.
- :class:`FileOpener` runs inside a Spark task: opens one file through the storage factory
  only when iterated, and streams record batches.
- :class:`FileSink` is the write side (``FileFormat.sink``): the file extension and a
  :class:`FileWriter` that streams batches of one fixed schema into one output stream.
  ``listing.write`` decides where files go and when they become visible; a sink only
  encodes.

Subclass the first three for a custom format (and :class:`FileSink` to write it);
``formats.register`` makes it available by name.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pyarrow as pa

from listing.errors import CorruptFileError, FileChangedError, MissingFileError, OptionError
from listing.expressions import Expr, to_arrow
from listing.files import PartitionedFile
from listing.formats.conform import conform_batch
from listing.metrics import Counters, declare
from listing.options import registry
from listing.pushdown import Pushdown
from listing.storage.errors import raise_as, read_failure
from listing.storage.reading import check_unchanged, counting, current_version
from listing.storage.spec import StorageSpec

__all__ = ["CorruptFileError", "FileFormat", "FileOpener", "FileSink", "FileSource", "FileWriter",
           "MissingFileError"]

log = logging.getLogger("listing")

DEFAULT_BATCH_SIZE = 65_536
#: a name's compression suffix and the codec text formats decode it with: Hadoop's codecs
#: as Spark's readers pick them by suffix (``.deflate`` a zlib stream, ``.snappy`` and
#: ``.lz4`` Hadoop's block framing), plus ``.zstd`` and ``.xz``
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd", ".zstd": "zstd", ".xz": "xz",
                ".deflate": "deflate", ".snappy": "hadoop-snappy", ".lz4": "hadoop-lz4"}
#: compression suffixes no reader here decodes: such a file is an error naming it, never
#: read as plain text (Spark would parse the compressed bytes)
UNREADABLE_COMPRESSIONS = {".zip": "zip", ".lzo": "lzo", ".lzo_deflate": "lzo", ".br": "brotli"}


@functools.lru_cache(maxsize=64)
def _suffixes(extensions: tuple[str, ...], compressions: tuple[str, ...]) -> tuple[str, ...]:
    """Every name ending of a format's files (``.csv``, ``.csv.gz``, ...): one ``endswith``
    per listed key, the planner's most frequent call."""
    endings = tuple(ext + c for ext in extensions for c in ("", *compressions))
    bad = [e for e in endings if "/" in e]
    if bad:  # a name's ending: matches() tests it against the whole path
        raise ValueError(f"a file extension holds no '/': {', '.join(bad)}")
    return endings


@dataclass(frozen=True)
class Inferred:
    """What opening a table learns from the sampled file(s): the data schema, and where the
    format's metadata tells it (Parquet's footer), each column's compressed bytes, which
    task packing uses to tell how much of a file a projection reads (DataFusion's
    ``ColumnStatistics::byte_size``)."""

    schema: pa.Schema
    column_bytes: dict[str, int] | None = None


class FileFormat:
    """Planning-time description of a file format. Options are given at construction."""

    name: ClassVar[str] = ""
    extensions: ClassVar[tuple[str, ...]] = ()
    #: compression suffixes accepted after an extension (``.csv.gz``)
    compressions: ClassVar[tuple[str, ...]] = ()
    #: option names this format accepts, with their defaults
    option_defaults: ClassVar[dict[str, Any]] = {}
    #: the kind (a key of :data:`listing.options.KINDS`) of an option whose default does
    #: not tell it and the option registry does not declare (``"char or off"``)
    option_kinds: ClassVar[dict[str, str]] = {}
    #: a read of no data column costs each file's metadata only (Parquet: its footer's
    #: row counts), whatever the file's size
    rows_from_metadata: ClassVar[bool] = False

    def __init__(self, **options: Any) -> None:
        # typed by the option registry, as every option is, so "on", "yes" and True mean
        # the same to every format and to the table
        self.options: dict[str, Any] = registry.parse_format(
            self.name, self.option_defaults, options, self.option_kinds)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.options!r})"

    # --- files -------------------------------------------------------------------------
    def matches(self, path: str) -> bool:
        """True when ``path``, a data file of a table of this format, is read. Every name
        is (``part-0``, ``x.gz``, ``x.json.gz``), as Spark's own readers read every file of
        a folder whatever its name; hidden and in-progress files are left out before this
        is asked. A subclass may narrow it (the planner then asks for every listed key);
        users narrow a table by name with the ``path_glob_filter`` option."""
        return True

    def has_extension(self, path: str) -> bool:
        """True when ``path`` ends in one of this format's extensions, optionally followed
        by one of its compression suffixes (``.csv``, ``.csv.gz``): how a format is told
        from a name (:func:`listing.formats.for_path`), not which files a table reads."""
        if not self.extensions:
            return False
        return path.lower().endswith(self.extension_endings)  # no ending holds a "/"

    @property
    def extension_endings(self) -> tuple[str, ...]:
        """The lower-case endings :meth:`has_extension` tests (the native hand-off spells
        them as Spark's ``pathGlobFilter``)."""
        return _suffixes(tuple(self.extensions), tuple(self.compressions))

    @property
    def name_endings(self) -> tuple[str, ...] | None:
        """The lower-case endings that alone make a path this format's, when :meth:`matches`
        is that test: ``()`` when every name is (:meth:`matches` not overridden), None when
        a subclass decides otherwise (the planner then asks :meth:`matches` for every
        listed key)."""
        return () if type(self).matches is FileFormat.matches else None

    def is_splittable(self, file: PartitionedFile) -> bool:
        """Whether one file may be read by several tasks as byte ranges."""
        return False

    def split(self, file: PartitionedFile, target_bytes: int) -> list[PartitionedFile]:
        """Byte ranges of about ``target_bytes``; readers align them to records. Packing
        asks only of files bigger than ``target_bytes`` (a smaller one is one piece)."""
        if not self.is_splittable(file) or file.size <= target_bytes:
            return [file]
        return [file.with_range(start, min(start + target_bytes, file.size))
                for start in range(0, file.size, target_bytes)]

    # --- metadata ----------------------------------------------------------------------
    def infer_schema(self, files: list[PartitionedFile], storage: StorageSpec) -> pa.Schema:
        """Schema of the data columns, from the given files (usually one)."""
        raise NotImplementedError

    def infer(self, files: list[PartitionedFile], storage: StorageSpec) -> Inferred:
        """The schema and, where the metadata read for it says so, per-column bytes (same
        requests as :meth:`infer_schema`). Formats without such metadata need not override."""
        return Inferred(self.infer_schema(files, storage))

    def supports_filter(self, expr: Expr) -> Pushdown:
        """INEXACT when the format can skip data with ``expr``, else UNSUPPORTED."""
        return Pushdown.UNSUPPORTED

    # --- reading -----------------------------------------------------------------------
    source_class: ClassVar[type[FileSource]]

    def file_source(self, schema: pa.Schema, projection: list[str] | None = None,
                    predicate: Expr | None = None, options: dict[str, Any] | None = None,
                    storage: StorageSpec | None = None,
                    batch_size: int = DEFAULT_BATCH_SIZE) -> FileSource:
        """What executors need to read this format's files of ``schema``."""
        return self.source_class(format=self, file_schema=schema, projection=projection,
                                 predicate=predicate, options={**self.options, **(options or {})},
                                 storage=storage or StorageSpec("file"), batch_size=batch_size)

    # --- writing -----------------------------------------------------------------------
    #: the sink writing this format's files; None: the format cannot write
    sink_class: ClassVar[type[FileSink] | None] = None

    def sink(self, schema: pa.Schema, compression: str | None = None) -> FileSink:
        """A sink writing files of exactly ``schema`` (the data columns, no partition
        columns) with this format's options. Raises :class:`OptionError` when the format
        cannot write or does not know ``compression``."""
        if self.sink_class is None:
            raise OptionError(f"format {self.name!r} cannot write files (its FileFormat has "
                              "no sink_class)")
        return self.sink_class(self, schema, compression)


@dataclass(frozen=True)
class FileSource:
    """Executor-side read configuration: plain metadata only, so it pickles small."""

    format: FileFormat
    file_schema: pa.Schema
    projection: list[str] | None = None
    predicate: Expr | None = None
    options: dict[str, Any] = field(default_factory=dict)
    storage: StorageSpec = field(default_factory=lambda: StorageSpec("file"))
    batch_size: int = DEFAULT_BATCH_SIZE

    opener_class: ClassVar[type[FileOpener]]

    @property
    def output_schema(self) -> pa.Schema:
        """Data columns each batch carries, in projection order."""
        if self.projection is None:
            return self.file_schema
        return pa.schema([self.file_schema.field(n) for n in self.projection])

    @property
    def read_schema(self) -> pa.Schema:
        """Projected columns plus those the predicate needs."""
        names = list(self.output_schema.names)
        if self.predicate is not None:
            needed = set(self.predicate.columns()).difference(names)
            names += [n for n in self.file_schema.names if n in needed]
        return pa.schema([self.file_schema.field(n) for n in names])

    def create_opener(self) -> FileOpener:
        return self.opener_class(self)


class FileOpener:
    """Streams one file's batches, lazily. Subclasses implement :meth:`read_batches`."""

    #: the format's own counters (name: what it counts), declared when an opener is made
    #: (in the process that reads): :meth:`count` adds to these or to the toolkit's
    counters: ClassVar[Mapping[str, str]] = {}

    def __init__(self, source: FileSource) -> None:
        self.source = source
        self._fs: Any = None
        for name, meaning in self.counters.items():
            declare(name, meaning)
        #: what reading its files did (``read_retries``, ``files_changed``…)
        self.metrics = Counters()

    @property
    def fs(self) -> Any:
        if self._fs is None:
            self._fs = self.source.storage.filesystem()
        return self._fs

    def open(self, file: PartitionedFile) -> Iterator[pa.RecordBatch]:
        """Batches of ``source.output_schema`` with the predicate applied to rows. A
        zero-byte file has no rows (Spark skips empty files): nothing is read, it is counted
        as ``files_skipped_empty``."""
        if file.size == 0:
            self.count("files_skipped_empty")
            return iter(())
        return self._stream(file)

    def read_batches(self, file: PartitionedFile) -> Iterator[pa.RecordBatch]:
        """Raw batches holding (at least) the ``read_schema`` columns present in the file."""
        raise NotImplementedError

    def count(self, name: str, n: int = 1) -> None:
        """Add ``n`` to the counter ``name``: one of :data:`listing.metrics.COUNTERS`, or
        one of the format's own :attr:`counters`."""
        self.metrics.add(name, n)

    def _stream(self, file: PartitionedFile) -> Iterator[pa.RecordBatch]:
        """Batches of one file; storage retries counted in ``metrics`` (``read_retries``).

        A file rewritten since listing raises :class:`FileChangedError`, or with the
        storage option ``on_file_change=read`` is read again as it is now (counted as
        ``files_changed``), provided no batch of it was handed out yet and it is read whole
        (byte ranges were planned on the listed size)."""
        src = self.source
        read_schema, out_names = src.read_schema, src.output_schema.names
        arrow_filter = to_arrow(src.predicate) if src.predicate is not None else None
        reread = src.storage.settings.on_file_change == "read" and file.byte_range is None
        yielded = False
        batches = self.read_batches(file)
        while True:
            try:
                with counting(self.metrics):
                    batch = next(batches, None)
                    if batch is None:
                        check_unchanged(self.fs, file)  # local files: after reading, too
                        return
            except Exception as err:  # noqa: BLE001 - classified, never swallowed
                failure = read_failure(file.path, err, f"cannot read as {src.format.name}")
                if isinstance(failure, FileChangedError) and reread and not yielded:
                    reread = False  # once: a file that keeps changing is an error
                    with counting(self.metrics):
                        file = current_version(self.fs, file)
                    log.warning("%s changed since listing; reading it as it is now "
                                "(on_file_change=read)", file.path)
                    self.count("files_changed")
                    batches = self.read_batches(file)
                    continue
                raise_as(failure, err)
            batch = conform_batch(batch, read_schema, file.path)
            if arrow_filter is not None:
                batch = batch.filter(arrow_filter)
            if batch.num_rows:
                yielded = True
                yield batch.select(out_names) if batch.schema.names != out_names else batch


# --- writing ------------------------------------------------------------------------------

#: compression names accepted by text sinks, with the suffix added to the file name
TEXT_COMPRESSIONS = {"gzip": ".gz", "gz": ".gz", "bz2": ".bz2", "zstd": ".zst"}


class FileWriter:
    """Writes batches of the sink's schema into one output stream; ``close()`` finishes the
    file (footer, compression trailer) and closes the stream."""

    def write(self, batch: pa.RecordBatch) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class FileSink:
    """How one format writes files of one fixed schema. Plain metadata, picklable: built on
    the driver, used in tasks. Subclasses set :meth:`open` and, if they compress with
    something else than a stream codec, :meth:`check_compression`."""

    #: accepted ``compression`` names; ``None`` and ``"none"`` always mean uncompressed
    compressions: ClassVar[dict[str, str]] = TEXT_COMPRESSIONS

    def __init__(self, format: FileFormat, schema: pa.Schema,  # noqa: A002
                 compression: str | None = None) -> None:
        self.format = format
        self.schema = schema
        codec = None if compression is None else str(compression).strip().lower()
        self.compression = None if codec in (None, "", "none", "uncompressed") else codec
        if self.compression is not None and self.compression not in self.compressions:
            raise OptionError(f"compression {compression!r} is not supported by format "
                              f"{format.name!r}; known: "
                              f"{', '.join(sorted(self.compressions)) or 'none'}")

    @property
    def extension(self) -> str:
        """File name suffix: the format's first extension, then the compression's."""
        ext = self.format.extensions[0] if self.format.extensions else ""
        if self.compression is not None and self.compressions is TEXT_COMPRESSIONS:
            ext += TEXT_COMPRESSIONS[self.compression]
        return ext

    def open(self, out: pa.NativeFile) -> FileWriter:
        raise NotImplementedError

    def text_stream(self, out: pa.NativeFile) -> pa.NativeFile:
        """``out``, wrapped in the compression codec when there is one (text formats)."""
        if self.compression is None:
            return out
        codec: Any = {"gz": "gzip"}.get(self.compression, self.compression)
        return pa.CompressedOutputStream(out, codec)
