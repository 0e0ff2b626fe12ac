"""PartitionedFile and FileGroup: the unit of work a scan plan hands to Spark tasks."""

from __future__ import annotations

import datetime as dt
import pickle
import zlib
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pyarrow as pa

#: Spark's ``_metadata`` column: where each row came from (opt-in, ``include_file_metadata``)
FILE_METADATA = "_metadata"
FILE_METADATA_FIELD = pa.field(FILE_METADATA, pa.struct([
    ("file_path", pa.string()), ("file_name", pa.string()), ("file_size", pa.int64()),
    ("file_block_start", pa.int64()), ("file_block_length", pa.int64()),
    ("file_modification_time", pa.timestamp("us", tz="UTC")),
]))


@dataclass(frozen=True, slots=True)  # slots: a long listing makes one per key
class PartitionedFile:
    """One file (or byte range of one) with the partition values its path encodes.

    ``path`` is the full URL (``s3://bucket/key``); ``byte_range`` is ``(start, end)``
    with ``end`` exclusive when a splittable file is read by several tasks.
    """

    path: str
    size: int
    partition_values: Mapping[str, Any] = field(default_factory=dict)
    byte_range: tuple[int, int] | None = None
    last_modified: dt.datetime | None = None
    etag: str | None = None

    @property
    def fs_path(self) -> str:
        """Path as fsspec wants it (no protocol)."""
        return self.path.split("://", 1)[1] if "://" in self.path else self.path

    @property
    def length(self) -> int:
        """Bytes this piece covers."""
        if self.byte_range is None:
            return self.size
        return self.byte_range[1] - self.byte_range[0]

    def file_metadata(self) -> dict[str, Any]:
        """This piece's ``_metadata`` values, as Spark fills them for its own files."""
        start = self.byte_range[0] if self.byte_range is not None else 0
        return {"file_path": self.path, "file_name": self.path.rsplit("/", 1)[-1],
                "file_size": self.size, "file_block_start": start,
                "file_block_length": self.length,
                "file_modification_time": _to_millis(self.last_modified)}

    def with_range(self, start: int, end: int) -> PartitionedFile:
        return PartitionedFile(self.path, self.size, self.partition_values, (start, end),
                               self.last_modified, self.etag)


def _to_millis(when: dt.datetime | None) -> dt.datetime | None:
    """``when`` floored to the millisecond, as Spark's file index has a file's time."""
    return None if when is None else when - dt.timedelta(microseconds=when.microsecond % 1000)


class GroupSource(Protocol):
    """A file group's files held as columns (:class:`~listing.file_columns.GroupColumns`)."""

    @property
    def bytes(self) -> int: ...

    def __len__(self) -> int: ...

    def files(self, n: int | None = None) -> tuple[PartitionedFile, ...]:
        """The first ``n`` files (None: all), in the group's order."""

    def pickled(self) -> tuple[Any, ...]:
        """What :func:`group_columns` makes of :meth:`files`."""


class FileGroup:
    """Files read one after another by one Spark task: made from a plan's columns
    (:meth:`of_columns`: what planning makes), its files then made on first access of
    ``files``, or ``FileGroup(index, files)`` (what a task unpickles). A value: equal
    when index and files are, immutable.

    Pickled as columns (what Spark ships to the task): each directory, and each
    partition-values mapping its files share, once; names joined into one string; sizes,
    times and byte ranges as packed integers. Unpickled, the files are equal to the
    originals, in their order, files of one directory sharing one mapping as before. A
    group made from columns pickles to the same bytes without making its files."""

    __slots__ = ("index", "_files", "_source")
    index: int
    _files: tuple[PartitionedFile, ...] | None
    _source: GroupSource | None

    def __init__(self, index: int, files: tuple[PartitionedFile, ...]) -> None:
        _set(self, "index", index)
        _set(self, "_files", files)
        _set(self, "_source", None)

    @classmethod
    def of_columns(cls, index: int, source: GroupSource) -> FileGroup:
        group: FileGroup = object.__new__(cls)
        _set(group, "index", index)
        _set(group, "_files", None)
        _set(group, "_source", source)
        return group

    @property
    def files(self) -> tuple[PartitionedFile, ...]:
        if self._files is None:
            assert self._source is not None
            _set(self, "_files", self._source.files())
        assert self._files is not None
        return self._files

    @property
    def file_count(self) -> int:
        """``len(files)``, without making them."""
        return len(self._source) if self._files is None and self._source else len(self.files)

    def first(self, n: int) -> tuple[PartitionedFile, ...]:
        """``files[:n]``, making only those."""
        if self._files is None and self._source is not None:
            return self._source.files(n)
        return self.files[:n]

    @property
    def bytes(self) -> int:
        if self._files is None and self._source is not None:
            return self._source.bytes
        return sum(f.length for f in self.files)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, FileGroup)
        return (self.index, self.files) == (other.index, other.files)

    def __hash__(self) -> int:
        return hash((self.index, self.files))

    def __repr__(self) -> str:
        return f"{type(self).__qualname__}(index={self.index!r}, files={self.files!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        if self._files is None and self._source is not None:
            return (_group_from_columns, (self.index, *self._source.pickled()))
        columns = group_columns(self.files)
        if columns is None:  # files of a subclass: pickled as they are
            return (FileGroup, (self.index, self.files))
        return (_group_from_columns, (self.index, *columns))


_set = object.__setattr__


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICROSECOND = dt.timedelta(microseconds=1)
_SEP = "\0"


def group_columns(files: Sequence[PartitionedFile]) -> tuple[Any, ...] | None:
    """``files`` as (directories, their values, directory of each file, names, sizes,
    byte ranges, times, etags): see :class:`FileGroup`; None when one is not exactly a
    :class:`PartitionedFile`."""
    if any(type(f) is not PartitionedFile for f in files):
        return None
    slots: dict[tuple[str, int], int] = {}  # (directory, id of its values) -> its slot
    dirs: list[str] = []
    values: list[Mapping[str, Any]] = []
    slot_of = array("i")
    names: list[str] = []
    for f in files:
        cut = f.path.rfind("/") + 1
        key = (f.path[:cut], id(f.partition_values))
        slot = slots.get(key)
        if slot is None:
            slot = slots[key] = len(dirs)
            dirs.append(key[0])
            values.append(f.partition_values)
        slot_of.append(slot)
        names.append(f.path[cut:])
    names_joined = joined(names)
    sizes = array("q", [f.size for f in files]).tobytes()
    ranges = [f.byte_range for f in files]
    mtimes = [f.last_modified for f in files]
    times: bytes | list[dt.datetime | None] = mtimes
    if all(t is not None and t.tzinfo is dt.UTC for t in mtimes):
        times = packed(array("q", [(t - _EPOCH) // _MICROSECOND for t in mtimes
                                  if t is not None]).tobytes())
    etags = [f.etag for f in files]
    # a group's files come from many directories (packing spreads them), which share
    # their table's prefix and their values' types
    return (joined(dirs), packed(pickle.dumps(values, pickle.HIGHEST_PROTOCOL)),
            packed(slot_of.tobytes()), names_joined, packed(sizes),
            None if all(r is None for r in ranges) else ranges, times,
            None if all(e is None for e in etags) else etags)


def joined(texts: list[str]) -> bytes | list[str]:
    """``texts`` as one compressed string, unless one holds the separator."""
    if any(_SEP in t for t in texts):
        return texts
    return packed(_SEP.join(texts).encode("utf-8", "surrogatepass"))


def _split(texts: bytes | list[str], n: int) -> list[str]:
    if not isinstance(texts, bytes):
        return texts
    return zlib.decompress(texts).decode("utf-8", "surrogatepass").split(_SEP) if n else []


def packed(data: bytes) -> bytes:
    """Columns compressed (names repeat their ends, sizes and times their high bytes)."""
    return zlib.compress(data, 1)


def _group_from_columns(index: int, dirs: bytes | list[str], values: bytes,
                        slot_of: bytes, names: bytes | list[str], sizes: bytes,
                        ranges: list[tuple[int, int] | None] | None,
                        times: bytes | list[dt.datetime | None],
                        etags: list[str | None] | None) -> FileGroup:
    slots = array("i")
    slots.frombytes(zlib.decompress(slot_of))
    size_of = array("q")
    size_of.frombytes(zlib.decompress(sizes))
    n = len(slots)
    name_of = _split(names, n)
    dir_of = _split(dirs, n)
    value_of: list[Mapping[str, Any]] = pickle.loads(zlib.decompress(values))
    if isinstance(times, bytes):
        micros = array("q")
        micros.frombytes(zlib.decompress(times))
        times = [_EPOCH + m * _MICROSECOND for m in micros]
    files = []
    for i in range(n):
        slot = slots[i]
        f = whole_file(dir_of[slot] + name_of[i], size_of[i], value_of[slot], times[i],
                       etags[i] if etags is not None else None)
        if ranges is not None and ranges[i] is not None:
            set_range(f, ranges[i])
        files.append(f)
    return FileGroup(index, tuple(files))


_NEW = object.__new__
_SET_PATH, _SET_SIZE, _SET_VALUES, set_range, _SET_MTIME, _SET_ETAG = (
    getattr(PartitionedFile, f).__set__
    for f in ("path", "size", "partition_values", "byte_range", "last_modified", "etag"))


def whole_file(path: str, size: int, partition_values: Mapping[str, Any],
               last_modified: dt.datetime | None, etag: str | None) -> PartitionedFile:
    """``PartitionedFile(path, size, partition_values, None, last_modified, etag)``, made
    through its slots: a long listing makes one per key, and the frozen dataclass's
    ``__init__`` (a call of ``object.__setattr__`` per field) costs more
    (``python -m bench.client_cpu`` times both)."""
    file: PartitionedFile = _NEW(PartitionedFile)
    _SET_PATH(file, path)
    _SET_SIZE(file, size)
    _SET_VALUES(file, partition_values)
    set_range(file, None)
    _SET_MTIME(file, last_modified)
    _SET_ETAG(file, etag)
    return file
