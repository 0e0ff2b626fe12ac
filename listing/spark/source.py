"""The ``listing`` Spark data source (PySpark's Python Data Source API).

``spark.read.format("listing").option("format", "parquet").load("s3://lake/events/")``

Planning runs in a Python worker: ``schema()`` opens the table (one sampled listing page,
one footer unless a schema is given); ``reader()`` returns the batch reader
(:mod:`listing.spark.reader`: pushed filters, the planned partitions, the task read path),
``streamReader()`` the stream's (:mod:`listing.spark.stream_reader`), ``writer()`` the
write's (:mod:`listing.spark.writer`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import pyarrow as pa
from pyspark.sql.types import StructType

from listing import formats
from listing.errors import OptionError
from listing.redact import redact
from listing.spark.compat import (
    HAS_DATA_SOURCE_API,
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceWriter,
)
from listing.spark.config import SourceConfig, hand_registry_to_jvm
from listing.spark.dataframe import FILESYSTEMS, ship_by_value, table_options
from listing.spark.reader import ListingReader, PlainListingReader, split_row_counts
from listing.spark.skips import accumulator as skips_accumulator
from listing.spark.stream_reader import ListingStreamReader
from listing.spark.types import arrow_schema, spark_schema, spark_struct
from listing.table import ListingTable, Where


def open_table(config: SourceConfig, schema: StructType | None = None,
               filesystems: dict[str, Any] | None = None) -> ListingTable:
    """The table a relation's options name: the one way the source, the hand-off's file index
    (:mod:`listing.spark.file_index`) and :func:`listing.explain` open one.

    With Spark's ``schema`` (a user's), no data file is read to plan: its data columns are
    the table's, its types those of the partition columns it names; a column that is
    neither is an :class:`OptionError`. ``filesystems``: the callers' own filesystems a
    ``to_spark`` spec names by token (shipped on the source class).
    """
    if schema is None:
        return config.open(None, filesystems)
    requested = arrow_schema(schema)
    parts = {n.lower() for n, _ in (config.partition_cols or [])}
    data = pa.schema([f for f in requested if f.name.lower() not in parts])
    table = config.open(config.table_schema or data, filesystems)
    fold = (lambda n: n) if table.options.case_sensitive else str.lower
    known = {fold(n) for n in table.schema.names}
    missing = [n for n in schema.fieldNames() if fold(n) not in known]
    if missing:
        raise OptionError(f"schema columns {missing} are neither data nor partition columns "
                          f"of {config.url} (partition columns: "
                          f"{', '.join(table.partition_names) or 'none'})")
    # Spark types partition columns as the user's schema says (a value that does not
    # parse as that type is a PartitionValueError naming it and its path, at scan)
    by_lower = {f.name.lower(): f.type for f in requested}
    wanted = [(n, by_lower.get(n.lower(), t)) for n, t in table.partition_cols]
    if any(spark_schema(pa.schema([(n, w)]), [n]) != spark_schema(pa.schema([(n, t)]), [n])
           for (n, w), (_, t) in zip(wanted, table.partition_cols, strict=True)):
        # the same table with those types: no request (its sampled profile is kept)
        table = ListingTable(url=table.url, storage=table.storage, fmt=table.format,
                             partition_cols=wanted, file_schema=table.file_schema,
                             profile=table.profile, options=table.options,
                             open_metrics=table.open_metrics, column_bytes=table.column_bytes)
    return table


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
    #: the session confs writes follow when the extension does not pass them as options
    #: (Spark's Python workers do not see the session), read when the source is registered
    #: (listing.spark.writer.SESSION_WRITE_CONFS)
    session_write_conf: ClassVar[dict[str, str]] = {}
    #: the session's spark.sql.caseSensitive when the source was registered: the default of
    #: option case_sensitive (partition directory names matched ignoring case or not)
    session_case_sensitive: ClassVar[bool | None] = None

    @classmethod
    def name(cls) -> str:
        return "listing"

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        # Spark builds the source in a fresh Python worker as often as in a reused one: the
        # driver's formats travel on the class and must be known before an option names one
        self.register_user_formats()
        self.config = SourceConfig.parse(
            with_session_case(dict(options), self.session_case_sensitive))
        self._table: ListingTable | None = None

    @classmethod
    def register_user_formats(cls) -> None:
        """Register the formats the driver shipped with this class in this process."""
        for fmt_name, factory in cls.user_formats.items():
            formats.register(fmt_name, factory)

    def __repr__(self) -> str:
        storage = redact(self.config.storage_options)
        return f"ListingDataSource({self.config.url}, storage={storage})"

    def table(self, schema: StructType | None = None) -> ListingTable:
        """The relation's table, opened once (:func:`open_table`; with the first caller's
        ``schema``, Spark's: the user's, or the one :meth:`schema` answered)."""
        if self._table is None:
            # Spark may unpickle this source in another worker than the one that built it
            self.register_user_formats()
            self._table = open_table(self.config, schema, self.filesystems)
        return self._table

    def schema(self) -> StructType:
        table = self.table()
        return spark_struct(table.schema, table.partition_names)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        """``df.write.format("listing")``: stage in tasks, commit on the driver
        (:mod:`listing.spark.writer`)."""
        from listing.spark.writer import ListingWriter

        self.register_user_formats()
        return ListingWriter(dict(self.options), schema, overwrite, self.session_write_conf)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:  # noqa: N802
        """``spark.readStream.format("listing")`` (:mod:`listing.spark.stream_reader`)."""
        return ListingStreamReader(self.table(schema), schema, self.config.where,
                                   self.config.stream_options, self.default_parallelism,
                                   self.skips)

    def reader(self, schema: StructType) -> DataSourceReader:
        self._check_python_engine()
        schema, counts = split_row_counts(schema)
        reader = ListingReader(self.table(schema), schema, self.config.where,
                               self.config.limit, self.default_parallelism, self.skips,
                               row_counts=counts)
        # where Spark pushes no filters, the extension hands them over (ListingFilterOption)
        for _ in reader.pushFilters(self.config.spark_filters):  # those it keeps prune
            pass
        return reader

    def _check_python_engine(self) -> None:
        """A batch read reaching this reader runs on the Python engine: had the extension
        been installed, its hand-off rule would have taken an ``engine=native`` scan."""
        if self.config.engine == "native":
            raise OptionError("engine=native needs the listing Spark extension "
                              "(listing.spark.session), which hands the scan to Spark's own "
                              "reader; this session reads with the Python engine: use "
                              "engine=auto or engine=python")


class UnguardedListingDataSource(ListingDataSource):
    """Registered when the stale-pushdown guard is not installed: no ``pushFilters``, so
    Spark can never replay a pruned plan for an unfiltered query. Filters given through
    ``where``/``to_spark`` still prune (they are part of the relation, not pushed)."""

    def reader(self, schema: StructType) -> DataSourceReader:
        self._check_python_engine()
        schema, counts = split_row_counts(schema)
        return PlainListingReader(self.table(schema), schema, self.config.where,
                                  self.config.limit, self.default_parallelism, self.skips,
                                  row_counts=counts)


class TableSource(UnguardedListingDataSource):
    """The source behind :func:`to_spark`: everything it prunes with arrives as
    options, so it needs no pushdown and no guard, and never clashes with ``listing``."""

    @classmethod
    def name(cls) -> str:
        return "listing_table"


def to_spark(table: ListingTable, spark: Any, columns: Sequence[str] | None = None,
             where: Where = None, limit: int | None = None) -> Any:
    """A DataFrame reading only ``columns`` of ``table``'s files matching ``where``
    (``listing.to_spark``: the Spark edge's, so the table knows nothing of Spark).

    The filter and limit travel with the relation (not through pushdown), so they prune
    with or without the stale-pushdown guard. A limit also stops each task early.
    """
    if limit is not None and (not isinstance(limit, int) or limit < 0):
        raise OptionError(f"limit must be a non-negative int, got {limit!r}")
    if not HAS_DATA_SOURCE_API:  # Spark 3.5: no Python source; its tasks run in mapInArrow
        from listing.spark.arrow_jobs import to_spark_by_tasks

        return to_spark_by_tasks(table, spark, columns, where, limit)
    projection = [table.schema.field(n) for n in table.projection(columns)]
    filters = table.bind(where)  # errors surface here, in the driver
    options = table_options(table, filters, limit)  # registers an instance's format class
    register_table_source(spark, FILESYSTEMS)
    reader = spark.read.format("listing_table").options(**options)
    df = reader.schema(spark_struct(pa.schema(projection), table.partition_names)).load()
    return df.limit(limit) if limit is not None else df


def register_table_source(spark: Any, filesystems: dict[str, Any] | None = None) -> None:
    """Register ``listing_table`` with the session's current default parallelism (read
    now, not at session start: on a cluster, executors register after the session) and
    the callers' own ``filesystems`` by token."""
    spark.dataSource.register(with_formats(TableSource, spark,
                                           filesystems=dict(filesystems or {})))
    hand_registry_to_jvm(spark)


def with_formats(base: type, spark: Any, **attrs: Any) -> type:
    """``base`` carrying the driver's registered formats to the Python workers (classes
    the workers cannot import are pickled by value with the source class)."""
    for factory in formats.registered().values():
        if isinstance(factory, type):
            ship_by_value(factory)
    from listing.spark.writer import session_write_conf

    return with_parallelism(base, spark, user_formats=formats.registered(),
                            skips=skips_accumulator(spark),
                            session_write_conf=session_write_conf(spark),
                            session_case_sensitive=session_case_sensitive(spark), **attrs)


#: Spark's session setting the ``case_sensitive`` option defaults to
CASE_SENSITIVE_CONF = "spark.sql.caseSensitive"


def with_session_case(options: dict[str, str], case_sensitive: bool | None) -> dict[str, str]:
    """A relation's ``options`` with the session's case sensitivity where they state none
    (a ``to_spark`` table's spec states its own)."""
    given = {k.lower() for k in options}
    if case_sensitive is None or "case_sensitive" in given or "table_spec" in given:
        return options
    return {**options, "case_sensitive": str(case_sensitive).lower()}


def session_case_sensitive(spark: Any) -> bool:
    """Whether ``spark`` resolves names case-sensitively (``spark.sql.caseSensitive``)."""
    try:
        return str(spark.conf.get(CASE_SENSITIVE_CONF, "false")).strip().lower() == "true"
    except Exception:  # noqa: BLE001 - a session that cannot say keeps Spark's default
        return False


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
