"""The ``listing`` Spark data source (PySpark's Python Data Source API).

``spark.read.format("listing").option("format", "parquet").load("s3://lake/events/")``

Planning runs in a Python worker: ``schema()`` opens the table (one sampled listing page,
one footer unless a schema is given), ``pushFilters`` keeps partition filters for exact
pruning and data filters for row-group pruning, ``partitions()`` plans the scan. Each
``InputPartition`` carries a file group *and* the plan's read settings, because Spark
pickles the reader before ``partitions()`` runs. ``read()`` then streams Arrow batches
shaped exactly as Spark's Arrow reader wants them.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import logging
import os
import sys
import sysconfig
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import pyarrow as pa
from pyspark import cloudpickle
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.types import StructType

from listing import formats
from listing.errors import ListingError, OptionError
from listing.expressions import Bound, Compare, Expr, IsNull, Or, bind, conjunction
from listing.files import FileGroup
from listing.formats.conform import conform_batch
from listing.hive import DEFAULT_PARTITION_NAME, unescape_path_name
from listing.options import ListingOptions
from listing.pushdown import Pushdown
from listing.scan import ScanPlan
from listing.spark.dataframe import TableSpec
from listing.spark.filters import from_spark
from listing.spark.option_values import SPARK_FORMAT_NAMES, json_object, storage_value
from listing.spark.progress import ListingProgress
from listing.spark.skips import accumulator as skips_accumulator
from listing.spark.types import arrow_schema, spark_schema, spark_struct
from listing.storage import redact
from listing.stream import ReadSpec, read_group
from listing.table import ListingTable
from listing.url import is_glob

log = logging.getLogger("listing.spark")

#: Spark's camel-case option names, as they arrive (lower-cased), mapped to ours.
SPARK_NAMES = {
    "pathglobfilter": "path_glob_filter", "modifiedbefore": "modified_before",
    "modifiedafter": "modified_after", "ignoremissingfiles": "ignore_missing_files",
    "ignorecorruptfiles": "ignore_corrupt_files", "maxpartitionbytes": "max_partition_bytes",
    "opencostinbytes": "open_cost_in_bytes", "minpartitions": "min_partitions",
}
#: table properties Spark's catalog adds when it calls the source for CREATE TABLE
CATALOG_KEYS = {"location", "owner", "provider", "comment", "external", "is_managed_location",
                "collation"}
SOURCE_OPTIONS = {"path", "paths", "format", "partition_cols", "storage_options", "where",
                  "limit", "table_spec", "basepath", "engine"}
#: options only ``spark.readStream`` takes (listing.spark.stream_reader), Spark's names too
STREAM_OPTIONS = {"max_files_per_trigger": "max_files_per_trigger",
                  "maxfilespertrigger": "max_files_per_trigger",
                  "max_bytes_per_trigger": "max_bytes_per_trigger",
                  "maxbytespertrigger": "max_bytes_per_trigger",
                  "lookback": "lookback", "reconcile_every": "reconcile_every",
                  "starting": "starting", "max_file_age": "max_file_age",
                  "maxfileage": "max_file_age"}
#: who reads the files: Spark's own readers where its JVM can (native), ours (python)
ENGINES = ("auto", "python", "native")
#: options only a write takes (listing.spark.writer): the source's reading config ignores them
WRITE_ONLY = {"partition_by", "partitionby", "partition_overwrite_mode",
              "partitionoverwritemode", "max_records_per_file", "maxrecordsperfile",
              "compression", "__partition_columns"}


@dataclasses.dataclass(repr=False)
class SourceConfig:
    """Validated options of one ``spark.read.format("listing")`` call."""

    url: str
    format: str  # a registry name: options never name code
    storage_options: dict[str, Any]
    partition_cols: list[tuple[str, Any]] | None
    listing_options: dict[str, Any]
    format_options: dict[str, Any]
    where: list[Any] | None = None
    limit: int | None = None
    table_schema: pa.Schema | None = None
    engine: str = "auto"
    stream_options: dict[str, str] = dataclasses.field(default_factory=dict)
    column_bytes: dict[str, int] | None = None  # to_spark's: the driver's sampled footer
    filesystem: str | None = None  # to_spark's: a token of the source class's filesystems
    base_path: str | None = None  # basePath, when ``url`` is a glob below it

    def __repr__(self) -> str:
        return (f"SourceConfig(url={self.url!r}, format={self.format!r}, "
                f"storage_options={redact(self.storage_options)!r}, "
                f"partition_cols={self.partition_cols!r}, "
                f"listing_options={self.listing_options!r}, "
                f"format_options={redact(self.format_options)!r})")

    @classmethod
    def parse(cls, options: dict[str, str]) -> SourceConfig:
        opts = {k.lower(): v for k, v in options.items()}
        for key in [k for k in opts if k.startswith("option.")]:  # catalog copies of options
            opts.setdefault(key[len("option."):], opts.pop(key))
        if not opts.get("path") and opts.get("location"):
            opts["path"] = opts["location"]
        for key in CATALOG_KEYS:
            opts.pop(key, None)
        several = _json_list("paths", opts["paths"]) if opts.get("paths") else []
        if len(several) > 1 and not opts.get("basepath"):
            raise OptionError(
                f"the listing source reads one table root, got several paths {several}; give "
                "basePath when they are partition folders of one table, load their common "
                "root (with a 'where' on its partition columns), or union one DataFrame per "
                "root")
        if len(several) > 1:  # partition folders of one table: its root, and their union
            opts["path"] = opts["basepath"]
        if opts.get("recursivefilelookup", "false").strip().lower() not in ("false", "0"):
            raise OptionError("recursiveFileLookup is not supported: the listing source "
                              "reads Hive-partitioned tables and infers their partitions")
        opts.pop("recursivefilelookup", None)
        url = opts.get("path")
        if not url:
            raise OptionError("the listing source needs a path: .load('s3://bucket/prefix/') or "
                              ".option('path', …)")
        where: list[Any] = [opts["where"]] if opts.get("where") else []
        base_path = None
        if len(several) > 1:
            where.append(_union_under_base_path(several, opts["basepath"]))
        elif opts.get("basepath") and is_glob(url):  # the glob's partition filter, below it
            base_path = opts["basepath"]
        elif opts.get("basepath"):  # Spark's basePath: a partition folder read as the table
            url, implied = _under_base_path(url, opts["basepath"])
            where += implied
        storage: dict[str, Any] = {}
        if "storage_options" in opts:
            storage.update(json_object("storage_options", opts["storage_options"]))
        listing: dict[str, Any] = {}
        fmt_opts: dict[str, Any] = {}
        stream: dict[str, str] = {}
        for key, value in opts.items():
            if key in STREAM_OPTIONS:
                stream[STREAM_OPTIONS[key]] = value
            elif key.startswith("storage."):
                storage[key[len("storage."):]] = storage_value(value)
            elif key in SOURCE_OPTIONS or key in WRITE_ONLY:
                continue
            elif SPARK_NAMES.get(key, key) in ListingOptions.names():
                listing[SPARK_NAMES.get(key, key)] = value
            else:
                fmt_opts[SPARK_FORMAT_NAMES.get(key, key)] = value
        fmt = opts.get("format", "parquet")
        cols: list[Any] | None = _partition_cols(opts.get("partition_cols"))
        schema, sizes, filesystem = None, None, None
        if "table_spec" in opts:  # written by ListingTable.to_spark: data, never code
            spec = TableSpec.parse(opts["table_spec"])
            fmt, cols, schema = spec.format, list(spec.partition_cols), spec.schema
            sizes, filesystem = spec.column_bytes, spec.filesystem
            fmt_opts = {**spec.format_options, **fmt_opts}
            where += spec.where
        limit = None
        if opts.get("limit"):
            try:
                limit = int(opts["limit"])
            except ValueError:
                raise OptionError(f"option limit={opts['limit']!r} is not an integer") from None
        _check_format_options(fmt, fmt_opts)
        engine = opts.get("engine", "auto").strip().lower()
        if engine not in ENGINES:
            raise OptionError(f"option engine={opts['engine']!r}: expected one of "
                              f"{', '.join(ENGINES)}")
        return cls(url, fmt, storage, cols, listing, fmt_opts, where or None, limit, schema,
                   engine, stream, sizes, filesystem, base_path)

    def open(self, data_schema: pa.Schema | None = None,
             filesystems: dict[str, Any] | None = None) -> ListingTable:
        """The table these options name; ``filesystems``: the callers' own filesystems a
        ``to_spark`` spec may name by token (shipped on the source class)."""
        factory = None
        if self.filesystem is not None:
            factory = (filesystems or {}).get(self.filesystem)
            if factory is None:
                raise OptionError("option table_spec names a filesystem this session's "
                                  "listing_table source does not carry")
        table = ListingTable.open(self.url, format=self.format,
                                  storage_options=self.storage_options, filesystem=factory,
                                  partition_cols=self.partition_cols,
                                  base_path=self.base_path,
                                  schema=data_schema if data_schema is not None
                                  else self.table_schema,
                                  **self.listing_options, **self.format_options)
        if table.column_bytes is None:
            table.column_bytes = self.column_bytes
        return table


def _check_format_options(fmt: str, given: dict[str, Any]) -> None:
    """Unknown option names fail here, listing every name the source and the format take
    (the format's own check knows only its names)."""
    known = set(formats.get(fmt).option_defaults)
    unknown = sorted(set(given) - known)
    if unknown:
        source = sorted(SOURCE_OPTIONS - {"table_spec", "paths", "basepath"}
                        | {"basePath", "storage.<name>"}
                        | {v for v in STREAM_OPTIONS.values()})
        listing = sorted(ListingOptions.names())
        spark = sorted({*SPARK_NAMES, *SPARK_FORMAT_NAMES})
        raise OptionError(
            f"unknown option(s) {', '.join(unknown)} for the listing source with format "
            f"{fmt!r}. Source options: {', '.join(source)}; listing options: "
            f"{', '.join(listing)} (Spark's names too: {', '.join(spark)}); {fmt} options: "
            f"{', '.join(sorted(known)) or 'none'}")


def _json_list(name: str, value: str) -> list[Any]:
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        return [value]
    return parsed if isinstance(parsed, list) else [parsed]


def _under_base_path(path: str, base: str) -> tuple[str, list[Expr]]:
    """``(base, filters)`` for a partition folder ``path`` below ``base``: its ``k=v``
    segments become equality filters, so the folder's columns stay in the table (as with
    Spark's basePath) and the listing reads only that folder."""
    root, below = base.rstrip("/"), path.rstrip("/")
    if below != root and not below.startswith(root + "/"):
        raise OptionError(f"path {path!r} is not below basePath {base!r}")
    filters: list[Expr] = []
    for segment in below[len(root):].strip("/").split("/") if below != root else []:
        name, sep, raw = segment.partition("=")
        if not sep or not name:
            raise OptionError(f"path {path!r} below basePath {base!r} must be partition "
                              f"folders (name=value), not {segment!r}")
        column = unescape_path_name(name)
        filters.append(IsNull(column) if raw == DEFAULT_PARTITION_NAME
                       else Compare(column, "=", unescape_path_name(raw)))
    return base, filters


def _union_under_base_path(paths: list[str], base: str) -> Expr:
    """The filter that reads exactly the partition folders ``paths`` below ``base`` (each
    as :func:`_under_base_path`): the OR of their equalities, which the planner lists as
    one prefix per folder. The same folder twice, or one inside another, is an error
    (Spark would read its files twice)."""
    folders = [p.rstrip("/") for p in paths]
    for i, a in enumerate(folders):
        for b in folders[i + 1:]:
            if a == b or a.startswith(b + "/") or b.startswith(a + "/"):
                raise OptionError(f"paths {a!r} and {b!r} overlap: each file would be read "
                                  "twice; give each partition folder once")
    parts = [conjunction(_under_base_path(p, base)[1]) for p in folders]
    if any(part is None for part in parts):  # the base itself: the whole table
        raise OptionError(f"paths include basePath {base!r} itself, which holds the others: "
                          "give the partition folders, or only the base")
    return Or(tuple(part for part in parts if part is not None))


def _partition_cols(value: str | None) -> list[tuple[str, str | None]] | None:
    """``"date:date, region:string"`` or ``"date,region"`` (types inferred)."""
    if not value:
        return None
    out: list[tuple[str, str | None]] = []
    for item in value.split(","):
        name, _, type_ = item.strip().partition(":")
        if not name:
            raise OptionError(f"option partition_cols={value!r}: empty column name")
        out.append((name.strip(), type_.strip() or None))
    return out


def ship_by_value(cls: type) -> None:
    """Make cloudpickle send the modules of ``cls`` and its base classes by value when
    Spark's Python workers could not import them (a user's script or project folder on the
    driver's ``sys.path`` only). Installed packages (and this toolkit) travel by reference."""
    installed = {sysconfig.get_paths()[k] for k in ("purelib", "platlib", "stdlib")}
    for klass in cls.__mro__:  # a user's format may subclass another of the user's
        module = sys.modules.get(klass.__module__)
        path = getattr(module, "__file__", None)
        if module is None or path is None or klass.__module__ == "__main__":
            continue  # __main__ is pickled by value already
        if klass.__module__.split(".")[0] in ("listing", "builtins"):
            continue
        if not any(os.path.abspath(path).startswith(os.path.abspath(p) + os.sep)
                   for p in installed):
            cloudpickle.register_pickle_by_value(module)


# --- the data source ----------------------------------------------------------------------

class ListingDataSource(DataSource):
    """Reads a ListingTable; prunes with pushed filters (needs the stale-pushdown guard)."""

    #: users' formats registered in the driver, shipped to workers with the class
    user_formats: ClassVar[dict[str, Any]] = {}
    #: Spark's default parallelism, the minimum number of file groups (set by register)
    default_parallelism: ClassVar[int | None] = None
    #: the session's accumulator of skipped files (listing.spark.skips), set by register
    skips: ClassVar[Any] = None
    #: Python callers' own filesystems by token (to_spark), shipped with the class
    filesystems: ClassVar[dict[str, Any]] = {}
    #: the session confs writes follow (Spark's Python workers do not see the session),
    #: read when the source is registered (listing.spark.writer.SESSION_WRITE_CONFS)
    session_write_conf: ClassVar[dict[str, str]] = {}

    @classmethod
    def name(cls) -> str:
        return "listing"

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        # Spark builds the source in a fresh Python worker as often as in a reused one: the
        # driver's formats travel on the class and must be known before an option names one
        self.register_user_formats()
        self.config = SourceConfig.parse(dict(options))
        self._table: ListingTable | None = None

    @classmethod
    def register_user_formats(cls) -> None:
        """Register the formats the driver shipped with this class in this process."""
        for fmt_name, factory in cls.user_formats.items():
            formats.register(fmt_name, factory)

    def __repr__(self) -> str:
        storage = redact(self.config.storage_options)
        return f"ListingDataSource({self.config.url}, storage={storage})"

    def _open(self, data_schema: pa.Schema | None) -> ListingTable:
        # Spark may unpickle this source in another worker than the one that built it
        self.register_user_formats()
        return self.config.open(data_schema, self.filesystems)

    def table(self, data_schema: pa.Schema | None = None) -> ListingTable:
        if self._table is None:
            self._table = self._open(data_schema)
        return self._table

    def schema(self) -> StructType:
        return spark_struct(self.table().schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """``df.write.format("listing")``: stage in tasks, commit on the driver
        (:mod:`listing.spark.writer`)."""
        from listing.spark.writer import ListingWriter

        self.register_user_formats()
        return ListingWriter(dict(self.options), schema, overwrite, self.session_write_conf)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802
        """``spark.readStream.format("listing")`` (:mod:`listing.spark.stream_reader`)."""
        from listing.spark.stream_reader import ListingStreamReader

        return ListingStreamReader(self._table_for(schema), schema, self.config.where,
                                   self.config.stream_options, self.default_parallelism,
                                   self.skips)

    def reader(self, schema: StructType) -> DataSourceReader:
        self._check_python_engine()
        schema, counts = split_row_counts(schema)
        return ListingReader(self._table_for(schema), schema, self.config,
                             self.default_parallelism, self.skips, row_counts=counts)

    def _check_python_engine(self) -> None:
        """A batch read reaching this reader runs on the Python engine: had the extension
        been installed, its hand-off rule would have taken an ``engine=native`` scan."""
        if self.config.engine == "native":
            raise OptionError("engine=native needs the listing Spark extension "
                              "(listing.spark.session), which hands the scan to Spark's own "
                              "reader; this session reads with the Python engine: use "
                              "engine=auto or engine=python")

    def _table_for(self, schema: StructType) -> ListingTable:
        """With a user schema, open the table with it: no data file is read to plan."""
        if self._table is not None:
            return self._table
        requested = arrow_schema(schema)
        parts = {n.lower() for n, _ in (self.config.partition_cols or [])}
        data = pa.schema([f for f in requested if f.name.lower() not in parts])
        table = self._open(self.config.table_schema or data)
        known = set(table.schema.names)
        missing = [n for n in schema.fieldNames() if n not in known]
        if missing:
            raise OptionError(f"schema columns {missing} are neither data nor partition columns "
                              f"of {self.config.url} (partition columns: "
                              f"{', '.join(table.partition_names) or 'none'})")
        # Spark types partition columns as the user's schema says (a value that does not
        # parse as that type is a PartitionValueError naming it and its path, at scan)
        by_lower = {f.name.lower(): f.type for f in requested}
        wanted = [(n, by_lower.get(n.lower(), t)) for n, t in table.partition_cols]
        if any(spark_schema(pa.schema([(n, w)])) != spark_schema(pa.schema([(n, t)]))
               for (n, w), (_, t) in zip(wanted, table.partition_cols, strict=True)):
            # the same table with those types: no request (its sampled profile is kept)
            table = ListingTable(table.url, table.storage, table.format, wanted,
                                 table.file_schema, table.profile, table.options,
                                 table.open_metrics, table.column_bytes)
        self._table = table
        return table


class UnguardedListingDataSource(ListingDataSource):
    """Registered when the stale-pushdown guard is not installed: no ``pushFilters``, so
    Spark can never replay a pruned plan for an unfiltered query. Filters given through
    ``where``/``to_spark`` still prune (they are part of the relation, not pushed)."""

    def reader(self, schema: StructType) -> DataSourceReader:
        self._check_python_engine()
        schema, counts = split_row_counts(schema)
        return PlainListingReader(self._table_for(schema), schema, self.config,
                                  self.default_parallelism, self.skips, row_counts=counts)


class TableSource(UnguardedListingDataSource):
    """The source behind ``ListingTable.to_spark``: everything it prunes with arrives as
    options, so it needs no pushdown and no guard, and never clashes with ``listing``."""

    @classmethod
    def name(cls) -> str:
        return "listing_table"


def register_table_source(spark: Any, filesystems: dict[str, Any] | None = None) -> None:
    """Register ``listing_table`` with the session's current default parallelism (read
    now, not at session start: on a cluster, executors register after the session) and
    the callers' own ``filesystems`` by token."""
    spark.dataSource.register(with_formats(TableSource, spark,
                                           filesystems=dict(filesystems or {})))


def with_formats(base: type, spark: Any, **attrs: Any) -> type:
    """``base`` carrying the driver's registered formats to the Python workers (classes
    the workers cannot import are pickled by value with the source class)."""
    for factory in formats.registered().values():
        if isinstance(factory, type):
            ship_by_value(factory)
    from listing.spark.writer import session_write_conf

    return with_parallelism(base, spark, user_formats=formats.registered(),
                            skips=skips_accumulator(spark),
                            session_write_conf=session_write_conf(spark), **attrs)


def with_parallelism(base: type, spark: Any, **attrs: Any) -> type:
    """A subclass of ``base`` carrying the session's default parallelism (Spark's minimum
    number of file groups), since planning workers cannot ask the SparkContext."""
    try:
        parallelism = spark.sparkContext.defaultParallelism
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
        parallelism = None
    return type(base.__name__, (base,), {
        "default_parallelism": parallelism, "__module__": base.__module__,
        "__qualname__": base.__qualname__ + "_registered", **attrs})


@dataclasses.dataclass
class GroupPartition(InputPartition):
    """One Spark task: its file group and the plan's read settings (files excluded)."""

    spec: ReadSpec
    group: FileGroup
    #: on the first partition: the plan's summary for the scan's description in Spark's
    #: plan (read by DescribedPythonTable.java from the pickled bytes, between the marks)
    summary: str
    #: under a key-grouped plan: the group's partition value, between the marks
    #: (read by KeyGroupedScans.java); "" otherwise
    key: str

    def __init__(self, spec: ReadSpec, group: FileGroup, summary: str = "",
                 key: str = "") -> None:
        super().__init__(group.index)
        self.spec = spec
        self.group = group
        self.summary = summary
        self.key = key


#: the marks around a scan's summary in its first pickled partition (DescribedPythonTable)
SUMMARY_MARK, SUMMARY_END = "\x1elisting-scan:", "\x1e"
#: the mark before a partition's key in its pickled bytes (KeyGroupedScans.java)
KEY_MARK = "\x1elisting-key:"


def key_marker(group: FileGroup) -> str:
    """The partition value every file of ``group`` holds, marked for KeyGroupedScans.java
    (JSON, ASCII-escaped so the end mark cannot occur inside); "" when a value is of a type
    that class does not read (only strings, integers, booleans, dates and nulls)."""
    values = group.files[0].partition_values
    out: list[Any] = []
    for v in values.values():
        if isinstance(v, dt.datetime) or not (v is None or isinstance(v, (str, int, dt.date))):
            return ""
        out.append(v.isoformat() if isinstance(v, dt.date) else v)
    return KEY_MARK + json.dumps({"names": list(values), "values": out}) + SUMMARY_END


class PlainListingReader(DataSourceReader):
    """Plans from the relation's own options only (path, where, limit, schema)."""

    def __init__(self, table: ListingTable, schema: StructType, config: SourceConfig,
                 min_partitions: int | None = None, skips: Any = None, *,
                 row_counts: bool = False) -> None:
        self.table = table
        self.row_counts = row_counts
        self.config = config
        self.columns = resolve_columns(table, schema.fieldNames())
        self.target = arrow_schema(schema)
        self.pushed: list[Bound] = []
        self.min_partitions = min_partitions
        self.skips = skips

    def plan(self) -> ScanPlan:
        where: list[Any] = list(self.pushed) + list(self.config.where or [])
        progress = ListingProgress(str(self.table.url))  # a long listing, in the driver log
        plan = self.table.scan(columns=self.columns, where=where or None,
                               limit=self.config.limit, min_partitions=self.min_partitions,
                               progress=progress)
        progress.done()
        return plan

    def partitions(self) -> list[InputPartition]:
        plan = self.plan()
        log.info("%s", plan.explain())
        summary = SUMMARY_MARK + plan.summary().replace(SUMMARY_END, " ") + SUMMARY_END
        return [GroupPartition(plan.read, group, summary if i == 0 else "",
                               key_marker(group) if plan.key_grouped else "")
                for i, group in enumerate(plan.file_groups)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        batches = read_partition(partition, self.target, self.skips)
        if not self.row_counts:
            yield from batches
            return
        per_file = {n.lower() for n in self.table.partition_names}
        yield from counted(batches, all(n.lower() in per_file for n in self.target.names))


#: the column ListingCountPushdown.java adds to a scan under ``count(*)``: it asks for the
#: number of rows each distinct row of a batch stands for, instead of the rows
ROW_COUNT_COLUMN = "__listing_rows"


def split_row_counts(schema: StructType) -> tuple[StructType, bool]:
    """The schema to read, and whether Spark asked for row counts (the last column)."""
    names = schema.fieldNames()
    if names and names[-1] == ROW_COUNT_COLUMN:
        return StructType(schema.fields[:-1]), True
    return schema, False


def counted(batches: Iterator[pa.RecordBatch],
            per_file: bool = False) -> Iterator[pa.RecordBatch]:
    """Each batch as its distinct rows with how many rows each stands for: a count(*) above
    sums them (exact under any row-wise filter on those columns). ``per_file``: every
    column holds one value per file (partition columns), and a batch never spans files,
    so a batch is its first row (count() by date); a batch of no rows sends nothing."""
    rows_field = pa.field(ROW_COUNT_COLUMN, pa.int64(), nullable=False)
    for batch in batches:
        if not batch.num_rows:
            continue
        if per_file or not batch.num_columns:
            yield batch.slice(0, 1).append_column(
                rows_field, pa.array([batch.num_rows], pa.int64()))
            continue
        keys = [f"k{i}" for i in range(batch.num_columns)]  # no name can clash with the count
        grouped = (pa.Table.from_batches([batch.rename_columns(keys)])
                   .group_by(keys, use_threads=False).aggregate([([], "count_all")]))
        rows = grouped.column("count_all").cast(pa.int64())
        table = pa.table([*(grouped.column(k) for k in keys), rows],
                         schema=batch.schema.append(rows_field))
        yield from table.to_batches()


def read_partition(partition: InputPartition, target: pa.Schema,
                   skips: Any = None) -> Iterator[pa.RecordBatch]:
    """One Spark task: its group's batches shaped as ``target``; skips go to ``skips``."""
    if not isinstance(partition, GroupPartition):  # no files matched: Spark's empty task
        return
    counts: dict[str, int] = {}
    paths: list[str] = []
    try:
        for batch in read_group(partition.spec, partition.group, counts, skipped_paths=paths):
            yield conform_batch(batch.rename_columns(target.names), target,
                                partition.group.files[0].path)
    finally:  # the driver sums these (listing.skipped_files)
        if paths and skips is not None:
            skips.add({**{k: v for k, v in counts.items() if k.startswith("files_skipped_")},
                       "paths": paths})


class ListingReader(PlainListingReader):
    """Adds ``pushFilters``: partition filters prune exactly; data filters prune row groups
    and go back to Spark to be re-checked; the rest go back untouched."""

    def pushFilters(self, filters: list[Any]) -> Iterator[Any]:  # noqa: N802 - Spark's name
        for f in filters:
            expr = from_spark(f)
            if expr is None:
                yield f
                continue
            try:
                bound = bind(expr, self.table.schema)  # once: classify and scan take it as is
            except ListingError:
                yield f
                continue
            kind = self.table.classify([bound])[0]
            if kind is Pushdown.UNSUPPORTED:
                yield f
                continue
            self.pushed.append(bound)
            if kind is Pushdown.INEXACT:
                yield f


def resolve_columns(table: ListingTable, names: Sequence[str]) -> list[str]:
    """The table's spelling of each of ``names`` (Spark's names are case-insensitive);
    one pass over the table's columns, whatever the number of names."""
    spelling: dict[str, str] = {}
    for n in table.schema.names:
        spelling.setdefault(n.lower(), n)
    out = []
    for name in names:
        found = spelling.get(name.lower())
        if found is None:
            raise OptionError(f"column {name!r} is not in table {table.url}")
        out.append(found)
    return out
