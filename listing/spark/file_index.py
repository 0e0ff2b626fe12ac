"""The listing planner Spark's own file readers ask for their files (ListingFileIndex.java).

With ``engine=auto|native`` the extension hands a local Parquet/CSV/JSON scan to Spark's file
source (ListingNativeEngine.java). Left to itself, Spark would build an ``InMemoryFileIndex``
that lists the table root again and discovers and prunes partitions by its own rules. When
this planner is registered, the hand-off builds the relation over ``ListingFileIndex``
instead: at query time Spark gives that index its partition filters, the index asks this
planner (on the driver, through PySpark's py4j callback server), and the planner answers
with our scan's files: path, size, modification time and partition values. Spark lists
nothing; our listing planner decides which folders to list, as it does for the Python engine.

The files cross as directories (:func:`files_answer`): per directory its URL, its partition
values once and its files' names joined by ``/`` (which no name holds), and every file's
size and modification time as one base64 array each, read straight from a plan's
columns (:class:`~listing.file_columns.FileColumns`) without a Python object per file.
A plan crosses in chunks (:func:`answer_chunks`) of at most :data:`CHUNK_FILES` files and
:data:`CHUNK_CHARS` characters: the first in the answer to ``plan``, the others one per
``more`` call, so that no string and no callback grows with the table (Spark's Jackson
refuses a string past 20,000,000 characters, a table of 1.9 M files' sizes as one).

Only the driver's classic session has a py4j gateway: Spark Connect servers and sessions
without the callback keep Spark's own file index (the fallback in ListingNativeEngine).
Options are data: they open a :class:`~listing.table.ListingTable` exactly as the ``listing``
source does (:func:`~listing.spark.source.open_table`), never naming code.
"""

from __future__ import annotations

import base64
import datetime as dt
import itertools
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql.types import StructType

from listing.file_columns import FileColumns, run_micros
from listing.formats.csv import CsvFormat
from listing.hive import cast_text
from listing.pushdown import Pushdown
from listing.scan import ScanPlan
from listing.spark.config import SourceConfig
from listing.spark.filters import from_json
from listing.spark.source import open_table, session_case_sensitive, with_session_case
from listing.spark.types import spark_struct
from listing.storage.dir_files import DirFiles
from listing.table import ListingTable

log = logging.getLogger("listing.spark")

#: the JVM class holding the registered planner (ListingFileIndex.register)
FILE_INDEX_CLASS = "io.github.listing.ListingFileIndex"
#: tables kept open between calls (each holds its sampled layout profile, no file list)
_MAX_TABLES = 32
#: files one chunk of a plan's answer holds at most (its sizes and times: 8 bytes each,
#: as base64 about 1.07 M characters a string at this bound)
CHUNK_FILES = 100_000
#: characters of URLs, values and names one chunk holds at most, bounding its longest
#: string (a directory's names joined) far below Jackson's 20,000,000 (``\uXXXX``
#: escapes lengthen the JSON text, not the strings the JVM reads)
CHUNK_CHARS = 4_000_000
#: answers of more than one chunk kept for ``more`` at once (the oldest go first)
_MAX_PENDING = 8


class ListingPlanner:
    """Implements the JVM's ``ListingFileIndex.Planner``; every answer is a JSON string."""

    class Java:
        implements = [FILE_INDEX_CLASS + "$Planner"]

    def __init__(self) -> None:
        self._tables: OrderedDict[tuple[str, str], tuple[ListingTable, SourceConfig]] = (
            OrderedDict())
        self._lock = threading.Lock()  # callbacks may come from several JVM threads
        #: answers whose later chunks the JVM has still to ask for (``more``)
        self._pending: OrderedDict[int, Iterator[dict[str, Any]]] = OrderedDict()
        self._ids = itertools.count(1)
        #: the registering session's spark.sql.caseSensitive (the source's default too)
        self.case_sensitive: bool | None = None

    def describe(self, options_json: str, schema_json: str) -> str:
        """``{"partition_columns": [...], "not_native": why or None}``: what the relation's
        file index is built with, and why Spark's reader cannot read the files, if so. With
        no ``schema_json`` (Spark 3.5's JVM source, given no schema), also ``"schema"``: the
        relation's schema as the Python source infers it (data and partition columns, our
        types), as Spark's JSON."""
        def build() -> dict[str, Any]:
            table, config = self._opened(options_json, schema_json)
            inferred = None
            if not schema_json:
                inferred = spark_struct(table.schema, table.partition_names).json()
                with self._lock:  # the JVM plans with this text: the same table, no reopening
                    self._tables[(options_json, inferred)] = (table, config)
            relation = schema_json or inferred or ""
            answer = {"partition_columns": table.partition_names,
                      "not_native": (_case_apart(table, relation)
                                     or _not_native(config, relation))}
            return answer if inferred is None else {**answer, "schema": inferred}
        return self._answer(build)

    def sample(self, options_json: str, schema_json: str) -> str:
        """``{"path": ..., "header": [...]}``: the table's first data file (null: none), for
        a check that needs one file, at the cost of one LIST and not a listing; and, for a
        CSV table, the column names its header holds as our CSV format reads them (null:
        none read), which the JVM compares with the relation's columns."""
        def first() -> dict[str, Any]:
            table = self._opened(options_json, schema_json)[0]
            file = table.first_file()
            header = None
            if file is not None and isinstance(table.format, CsvFormat):
                header = table.format.header_names(file, table.storage)
            return {"path": None if file is None else file.path, "header": header}
        return self._answer(first)

    def stagedOrder(self, options_json: str, schema_json: str,  # noqa: N802 - the JVM's name
                    overwrite: bool) -> str:
        """:func:`listing.spark.writer.staged_order`: the columns a write is sorted by."""
        from listing.spark.writer import staged_order

        return self._answer(lambda: staged_order(options_json, schema_json, bool(overwrite)))

    def stagedSetup(self, source: str, provider: str, options_json: str,  # noqa: N802
                    schema_json: str, overwrite: bool, return_type_json: str) -> str:
        """:func:`listing.spark.writer.staged_setup`: a write's set-up in this process."""
        from listing.spark.writer import staged_setup

        return self._answer(lambda: staged_setup(source, provider, options_json, schema_json,
                                                 bool(overwrite), return_type_json))

    def stagedCommit(self, pickled_writer: str, pickled_messages: Any,  # noqa: N802
                     abort: bool) -> str:
        """:func:`listing.spark.writer.staged_commit`: a staged write's job commit."""
        from listing.spark.writer import staged_commit

        return self._answer(lambda: staged_commit(pickled_writer, list(pickled_messages),
                                                  bool(abort)))

    def plan(self, options_json: str, schema_json: str, filters_json: str) -> str:
        """Our scan's files for Spark's partition filters: a JSON list of conjuncts, each a
        Spark data source filter as :func:`~listing.spark.filters.from_json` reads it.

        A conjunct of a kind we do not read, or that is not on partition columns only, is left
        out (the JVM index re-checks every partition filter on the values returned, so
        leaving one out can only cost pruning, never rows). The relation's own ``where``
        and ``basePath`` filters (listing.spark.source.SourceConfig) always apply.
        """
        return self._answer(lambda: self._plan(options_json, schema_json,
                                               json.loads(filters_json or "[]")))

    def more(self, answer_id: int) -> str:
        """The next chunk of answer ``answer_id`` (``plan``'s ``more``): ``{"dirs",
        "sizes", "mtimes", "more"}``, ``more`` null on the last one."""
        return self._answer(lambda: self._next_chunk(int(answer_id)))

    def release(self, answer_id: int) -> None:
        """Forget answer ``answer_id`` before its last chunk (the JVM stopped reading)."""
        with self._lock:
            self._pending.pop(int(answer_id), None)

    def _chunked(self, chunks: Iterator[dict[str, Any]]) -> dict[str, Any]:
        """The first of ``chunks``, with ``more``: the id to ask the rest with (null:
        none); the rest kept for :meth:`more`."""
        first = next(chunks)
        nxt = next(chunks, None)
        if nxt is None:
            return {**first, "more": None}
        with self._lock:
            answer_id = next(self._ids)
            self._pending[answer_id] = itertools.chain([nxt], chunks)
            while len(self._pending) > _MAX_PENDING:
                self._pending.popitem(last=False)
        return {**first, "more": answer_id}

    def _next_chunk(self, answer_id: int) -> dict[str, Any]:
        with self._lock:
            chunks = self._pending.get(answer_id)
        if chunks is None:
            raise LookupError(f"answer {answer_id} is no longer kept (at most "
                              f"{_MAX_PENDING} answers wait for their chunks)")
        chunk = next(chunks)
        last = next(chunks, None)
        with self._lock:
            if last is None:
                self._pending.pop(answer_id, None)
            else:
                self._pending[answer_id] = itertools.chain([last], chunks)
        return {**chunk, "more": None if last is None else answer_id}

    def _plan(self, options_json: str, schema_json: str,
              filters: list[dict[str, Any]]) -> dict[str, Any]:
        table, plan, used = self.scan_plan(options_json, schema_json, filters)
        names = table.partition_names
        return {"partition_columns": names, "used": used,
                "list_requests": plan.metrics.get("list_requests", 0),
                **self._chunked(answer_chunks(plan.planned, names))}

    def scan_plan(self, options_json: str, schema_json: str, filters: list[dict[str, Any]]
                  ) -> tuple[ListingTable, ScanPlan, list[dict[str, Any]]]:
        """The table, the plan :meth:`plan` answers with for ``filters`` (JSON filters as
        the file index sends them) and the filters it pruned with (listing.explain asks
        for it too)."""
        table, config = self._opened(options_json, schema_json)
        used: list[dict[str, Any]] = []
        where: list[Any] = list(config.where or [])
        for item in filters:
            try:
                expr = from_json(item)
                if expr is None or table.classify([expr])[0] is not Pushdown.EXACT:
                    continue
            except Exception as err:  # noqa: BLE001 - the JVM evaluates this one itself
                log.debug("listing file index: not pruning with %r: %s", item, err)
                continue
            where.append(expr)
            used.append(item)
        return table, table.scan(where=where or None), used

    def _opened(self, options_json: str,
                schema_json: str) -> tuple[ListingTable, SourceConfig]:
        """The table and parsed options of a relation, opened once per (options, schema)."""
        key = (options_json, schema_json)
        with self._lock:
            opened = self._tables.get(key)
            if opened is not None:
                self._tables.move_to_end(key)
                return opened
        schema = StructType.fromJson(json.loads(schema_json)) if schema_json else None
        # the source's own opening: same option parsing, same user-schema typing
        config = SourceConfig.parse(with_session_case(json.loads(options_json),
                                                      self.case_sensitive))
        opened = (open_table(config, schema), config)
        with self._lock:
            self._tables[key] = opened
            while len(self._tables) > _MAX_TABLES:
                self._tables.popitem(last=False)
        return opened

    @staticmethod
    def _answer(build: Any) -> str:
        try:
            return json.dumps(build())
        except Exception as err:  # noqa: BLE001 - the JVM raises it with our message
            log.debug("listing file index: planner failed", exc_info=True)
            return json.dumps({"error": f"{type(err).__name__}: {err}"})


def _not_native(config: SourceConfig, schema_json: str) -> str | None:
    """Why Spark's Parquet reader cannot read this table's files, or None. Spark 4.3 reads
    no nanosecond timestamps (Parquet INT64 TIMESTAMP(NANOS), which pyarrow writes): with a
    timestamp in the relation, one footer is sampled to see the files' own unit."""
    if config.format != "parquet" or '"timestamp' not in schema_json:
        return None
    table = open_table(config)  # no schema: the sampled footer's own types (one LIST, one GET)
    for field in table.file_schema:
        if _has_nanos(field.type):
            return (f"column {field.name} holds nanosecond timestamps, which Spark's "
                    "Parquet reader does not read")
    return None


def _case_apart(table: ListingTable, schema_json: str) -> str | None:
    """Why the hand-off cannot read a relation whose column differs only in case from a
    partition column while names are case-sensitive (the JVM matches them ignoring case),
    or None."""
    if not table.options.case_sensitive:
        return None
    parts = {n.lower(): n for n in table.partition_names}
    for name in StructType.fromJson(json.loads(schema_json)).fieldNames():
        other = parts.get(name.lower())
        if other is not None and other != name:
            return (f"column {name} differs only in case from partition column {other} and "
                    "names are case-sensitive (spark.sql.caseSensitive)")
    return None


def _has_nanos(t: pa.DataType) -> bool:
    if pa.types.is_timestamp(t):
        return t.unit == "ns"
    if pa.types.is_struct(t):
        return any(_has_nanos(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _has_nanos(t.value_type)
    if pa.types.is_map(t):
        return _has_nanos(t.key_type) or _has_nanos(t.item_type)
    return False


def files_answer(planned: FileColumns, names: Sequence[str]) -> dict[str, Any]:
    """A plan's files as ListingFileIndex.java reads them, in plan order: ``dirs``, per
    directory ``[url with its slash, [cast_text of each of partition columns ``names``],
    its files' names joined by "/"]``; ``sizes`` and ``mtimes`` (milliseconds since the
    epoch, 0: unknown), every file's in the order of ``dirs``, as base64 of little-endian
    int64s. A directory holds a run of consecutive files with one URL and one set of
    values (one directory may come as several runs); ``url + name`` is a file's path.
    Unbounded: what crosses to the JVM is this answer in chunks (:func:`answer_chunks`)."""
    return next(answer_chunks(planned, names, 2**62, 2**62))


def answer_chunks(planned: FileColumns, names: Sequence[str],
                  max_files: int | None = None, max_chars: int | None = None
                  ) -> Iterator[dict[str, Any]]:
    """:func:`files_answer` cut into chunks (at least one), in plan order, each an answer
    of that form of its own files: at most ``max_files`` files (default
    :data:`CHUNK_FILES`) and ``max_chars`` characters of URLs, values and names (default
    :data:`CHUNK_CHARS`; a single file longer than that comes alone). A directory's
    files may be cut between two chunks, each then holding a run of that directory.
    Every chunk is made when asked for, from the plan's columns."""
    max_files = CHUNK_FILES if max_files is None else max_files
    max_chars = CHUNK_CHARS if max_chars is None else max_chars
    if max_files < 1 or max_chars < 1:
        raise ValueError("a chunk holds at least one file")
    sizes, millis = _sizes_millis(planned)
    etags = _etags(planned)
    runs: list[list[Any]] = []
    start = files = chars = 0  # the chunk's first file; its files and characters so far
    for url, texts, run_names in _dir_runs(planned, names):
        fixed = len(url) + sum(len(t) for t in texts if t is not None)
        # characters up to and with each name (with its separator)
        ends = np.cumsum(np.fromiter(map(len, run_names), np.int64, len(run_names)) + 1)
        i = 0
        while i < len(run_names):
            before = int(ends[i - 1]) if i else 0
            room = max_chars - chars - fixed
            # names i..j-1 fit the room (at least one, in an empty chunk)
            j = int(np.searchsorted(ends, before + room, "right"))
            j = min(j, i + max_files - files, len(run_names))
            if j <= i:
                if files:  # the chunk is full: the next starts with this name
                    yield _chunk(runs, sizes[start:start + files], millis[start:start + files],
                                 etags and etags[start:start + files])
                    start, files, chars, runs = start + files, 0, 0, []
                    continue
                j = i + 1
            runs.append([url, texts, "/".join(run_names[i:j])])
            chars += fixed + int(ends[j - 1]) - before
            files += j - i
            i = j
    yield _chunk(runs, sizes[start:start + files], millis[start:start + files],
                 etags and etags[start:start + files])


def _chunk(runs: list[list[Any]], sizes: np.ndarray, millis: np.ndarray,
           etags: list[str]) -> dict[str, Any]:
    out = {"dirs": runs, "sizes": _b64(sizes), "mtimes": _b64(millis)}
    if etags:
        out["etags"] = "/".join(etags)
    return out


def _etags(planned: FileColumns) -> list[str]:
    """Every file's listed ETag, unquoted ("": unknown, or one holding the separator
    ``/``), in plan order; empty when no file has one
    (local files, whose versions are change times). The hand-off opens S3 files with them
    (ListedOpens.java), so every read is conditional on the listed version."""
    out: list[str] = []
    for run in planned.runs:
        versions = run.versions
        if isinstance(versions, list):
            out.extend("" if not v or "/" in v else v.strip('"') for v in versions)
        else:
            out.extend([""] * len(run))
    return out if any(out) else []


def _sizes_millis(planned: FileColumns) -> tuple[np.ndarray, np.ndarray]:
    """Every file's size and modification time (milliseconds, 0: unknown), in plan order."""
    millis = [_millis_of(run) for run in planned.runs]
    return planned.sizes, np.concatenate(millis) if millis else np.zeros(0, np.int64)


def _millis_of(run: DirFiles) -> np.ndarray:
    """A run's modification times in milliseconds since the epoch (0: unknown), floored
    as Java floors a file's time to milliseconds (``File.lastModified``)."""
    if run.in_datetimes:  # times as listed (any tzinfo, or none)
        return np.fromiter(map(_millis, run.times()), np.int64, len(run))
    return run_micros(run) // 1000


def _dir_runs(cols: FileColumns, names: Sequence[str]
              ) -> Iterator[tuple[str, list[str | None], list[str]]]:
    """(URL, partition values as text, file names) of each run of consecutive files with
    one parent URL and one set of values, in plan order; no name holds a slash."""
    for head, run, values in zip(cols.heads, cols.runs, cols.values, strict=True):
        if not len(run):
            continue
        texts = [cast_text(values.get(n)) for n in names]
        run_names = run.names
        if "".join(run_names).find("/") < 0:
            yield head, texts, run_names
            continue
        for name in run_names:  # a name holds a slash: what precedes it joins the URL
            cut = name.rfind("/") + 1
            yield head + name[:cut], texts, [name[cut:]]


def _millis(when: dt.datetime | None) -> int:
    """``when`` in milliseconds since the epoch, floored (a naive time: local time, as
    ``datetime.timestamp`` reads it)."""
    if when is None:
        return 0
    return ((when if when.tzinfo else when.astimezone()) - _EPOCH) // _MILLISECOND


def _b64(numbers: np.ndarray) -> str:
    return base64.b64encode(numbers.astype("<i8").tobytes()).decode("ascii")


_PLANNER = ListingPlanner()
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MILLISECOND = dt.timedelta(milliseconds=1)


def _file_index(spark: Any) -> Any:
    return spark.sparkContext._jvm.io.github.listing.ListingFileIndex  # noqa: SLF001


def register_planner(spark: Any) -> bool:
    """Let the extension's file index ask this process's listing planner; False where it
    cannot (Spark Connect, no extension jar, no callback server): Spark lists then."""
    try:
        from pyspark.java_gateway import ensure_callback_server_started

        gateway = spark.sparkContext._gateway  # noqa: SLF001 - classic sessions only
        ensure_callback_server_started(gateway)
        _PLANNER.case_sensitive = session_case_sensitive(spark)
        with _PLANNER._lock:  # noqa: SLF001 - tables opened under the former setting
            _PLANNER._tables.clear()  # noqa: SLF001
        _file_index(spark).register(_PLANNER)
        return True
    except Exception as err:  # noqa: BLE001 - the fallback is Spark's own file index
        log.debug("listing file index: planner not registered: %s", err)
        return False


def unregister_planner(spark: Any) -> None:
    """Back to Spark's own file index for later hand-offs."""
    _file_index(spark).register(None)
