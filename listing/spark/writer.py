"""Writes through the ``listing`` source: ``df.write.format("listing")…save(path)``.

``df.write.format("listing").option("format", "parquet").option("partition_by", "date,region")
.mode("append" | "overwrite").save("s3://lake/events/")``

Spark calls ``ListingDataSource.writer(schema, overwrite)`` once, pickles the
:class:`ListingWriter` to every task and calls ``commit`` or ``abort`` with the tasks' commit
messages. The writer carries a :class:`~listing.write.WriteJob`: tasks stage their files
under ``_temporary/<job id>/`` and return them; ``commit`` publishes them and writes
``_SUCCESS``; ``abort`` restores the old table (see :mod:`listing.write` for what a
concurrent reader sees). An overwrite follows the session's
``spark.sql.sources.partitionOverwriteMode`` in force when the write is planned, unless the
``partitionOverwriteMode`` option says otherwise: Spark's Python workers do not see the
session, so the extension puts the session's mode among the write's options
(``ListingWriteOverwriteMode.java``); without the extension, the mode when the source was
registered is followed (``listing.register(spark)`` again after changing it).
Spark does not hand ``.partitionBy(...)`` columns to Python sources: partitioning is the
``partition_by`` option, and a ``.partitionBy`` is refused by name. Without it, a write to an
existing table partitions by the table's own columns
(:func:`~listing.write.target_partition_by`).

SQL writes to a catalog table (``INSERT INTO t``, ``df.writeTo("t")``) arrive with the
table's stored options, put among the write's options by the extension
(``ListingCatalogOptions.java``), which names them in :data:`CATALOG_OPTIONS`: those that
shape only reads are dropped here, not refused.
"""

from __future__ import annotations

import base64
import dataclasses
import itertools
import json
import logging
import os
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.types import StructType

from listing.errors import OptionError
from listing.formats.parquet import ParquetFormat, ParquetSink
from listing.metrics import Counters
from listing.options import registry
from listing.options.registry import STORAGE_PREFIX
from listing.spark.compat import DataSourceArrowWriter, WriterCommitMessage
from listing.spark.config import CATALOG_OPTIONS
from listing.spark.option_values import json_object, storage_value
from listing.spark.types import arrow_schema
from listing.write import TaskCommit, WriteJob, WriteResult, target_partition_by
from listing.write.results import StagedUpload

log = logging.getLogger("listing.spark")

#: where Spark's DataFrameWriter puts ``.partitionBy`` columns (DataSourceUtils)
SPARK_PARTITION_KEY = "__partition_columns"
#: Spark's session conf for overwrites of partitioned tables (the writer option wins)
PARTITION_OVERWRITE_CONF = "spark.sql.sources.partitionOverwriteMode"
#: the session confs a write follows, captured on the driver when the source is registered
#: (what a session without the extension follows; the extension passes the current value)
SESSION_WRITE_CONFS = (PARTITION_OVERWRITE_CONF,)
#: read options a write refuses, each with the write option to use instead (if any)
READ_ONLY = {o.name: o.instead for o in registry.OPTIONS if o.on_write == "refuse"}


def session_write_conf(spark: Any) -> dict[str, str]:
    """The values of :data:`SESSION_WRITE_CONFS` in ``spark`` (those it sets)."""
    out: dict[str, str] = {}
    for name in SESSION_WRITE_CONFS:
        try:
            value = spark.conf.get(name, None)
        except Exception:  # noqa: BLE001 - a conf the session cannot read is not followed
            value = None
        if value:
            out[name] = str(value)
    return out


def write_options(options: dict[str, str]) -> dict[str, Any]:
    """The WriteJob arguments for one ``df.write.format("listing")`` call."""
    opts = {k.lower(): v for k, v in options.items()}
    if opts.get(SPARK_PARTITION_KEY):
        try:
            cols = json.loads(opts[SPARK_PARTITION_KEY])
        except json.JSONDecodeError:
            cols = opts[SPARK_PARTITION_KEY]
        names = ",".join(cols) if isinstance(cols, list) else str(cols)
        raise OptionError(
            f"the listing source does not take Spark's .partitionBy({names!r}): Spark does "
            "not pass it to Python data sources. Drop .partitionBy and give "
            f".option('partition_by', {names!r})")
    for key in _read_options_stored(opts):
        del opts[key]
    for key, instead in READ_ONLY.items():
        if key in opts:
            hint = f"; use option {instead!r}" if instead else ""
            raise OptionError(f"option {key!r} is for reads, not writes{hint}")
    url = opts.pop("path", None) or opts.pop("location", None)
    if not url:
        raise OptionError("a listing write needs a path: .save('s3://bucket/prefix/'); in "
                          "SQL, the table's OPTIONS (path '…'), which reach its writes "
                          "through the listing extension (listing.session())")
    kwargs: dict[str, Any] = {"url": url,
                              "format": opts.pop("format", registry.option("format").default)}
    storage: dict[str, Any] = {}
    if "storage_options" in opts:
        storage.update(json_object("storage_options", opts.pop("storage_options")))
    fmt_opts: dict[str, Any] = {}
    for key, value in opts.items():
        option = registry.lookup(key)
        if key.startswith(STORAGE_PREFIX):
            storage[key[len(STORAGE_PREFIX):]] = storage_value(value)
        elif option is not None and option.on_write == "take":
            kwargs[option.name] = value
        elif option is not None and option.on_write == "ignore":
            continue
        else:  # a format's option (or a name no one takes, which the format refuses)
            fmt_opts[option.name if option is not None and option.scope == "format"
                     else key] = value
    kwargs["storage_options"] = storage
    kwargs["format_options"] = fmt_opts
    return kwargs


def _read_options_stored(opts: dict[str, str]) -> list[str]:
    """The options of ``opts`` (lower-cased; its :data:`CATALOG_OPTIONS` entry removed) that
    a catalog table stored for its reads: ``CREATE TABLE … OPTIONS (where …, engine …)``
    shapes its reads, not an ``INSERT`` into it. Storage, format and write options apply."""
    stored = {k.lower() for k in registry.kind_value("column names",
                                                     opts.pop(CATALOG_OPTIONS, ""),
                                                     CATALOG_OPTIONS)}
    out = []
    for key in sorted(stored & set(opts)):
        option = registry.lookup(key)
        if (option is not None and option.on_write != "take" and option.scope != "format"
                and key not in ("storage_options", "location")):
            out.append(key)
    return out


@dataclasses.dataclass
class ListingCommitMessage(WriterCommitMessage):
    """One task's staged files, sent back to the driver."""

    task: TaskCommit


class ListingWriter(DataSourceArrowWriter):
    """Stages each task's files; the job commit moves them into place."""

    def __init__(self, options: dict[str, str], schema: StructType, overwrite: bool,
                 session_conf: dict[str, str] | None = None) -> None:
        self.job = write_job(options, schema, overwrite, session_conf)
        self.job.setup()
        self.result: WriteResult | None = None

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:  # type: ignore[override]  # Arrow writer: batches
        ctx = TaskContext.get()
        task = ctx.partitionId() if ctx is not None else 0
        attempt = ctx.attemptNumber() if ctx is not None else 0
        first = next(iterator, None)
        batches = iterator if first is None else itertools.chain([first], iterator)
        if first is not None and is_staged(first.schema, self.job):
            return ListingCommitMessage(self.job.upload_task(
                staged_files(batches, self.job), task, attempt))
        return ListingCommitMessage(self.job.write_task(batches, task, attempt))

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        tasks = [m.task for m in messages if isinstance(m, ListingCommitMessage)]
        self.result = self.job.commit(tasks)
        log.info("listing write %s: %d files, %d rows, metrics %s", self.job.url,
                 len(self.result.files), self.result.rows, self.result.metrics)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self.job.abort([m.task for m in messages if isinstance(m, ListingCommitMessage)])


def write_job(options: dict[str, str], schema: StructType, overwrite: bool,
              session_conf: dict[str, str] | None = None, *, resolve: bool = True) -> WriteJob:
    """The :class:`WriteJob` of one ``df.write.format("listing")`` call, before its
    ``setup()``. ``resolve``: an existing table's own partition columns when the options
    give none (one LIST, :func:`target_partition_by`); without it, no request is sent and
    the options' columns are taken as they are."""
    kwargs = write_options(options)
    session_mode = (session_conf or {}).get(PARTITION_OVERWRITE_CONF, "static")
    mode = "overwrite" if overwrite else "append"
    overwrite_mode = kwargs.get("partition_overwrite_mode", session_mode)
    data = arrow_schema(schema)
    looked = Counters()
    partition_by = kwargs.get("partition_by") or ()
    if resolve:  # insertInto's: the table's own columns when none are given
        partition_by = target_partition_by(
            kwargs["url"], data, partition_by, mode=mode,
            partition_overwrite_mode=overwrite_mode,
            storage_options=kwargs["storage_options"], counters=looked,
            layout=kwargs.get("layout"))
    job = WriteJob(kwargs["url"], data, format=kwargs["format"],
                   partition_by=partition_by, mode=mode,
                   partition_overwrite_mode=overwrite_mode,
                   storage_options=kwargs["storage_options"],
                   max_records_per_file=kwargs.get("max_records_per_file"),
                   compression=kwargs.get("compression"),
                   commit_protocol=kwargs.get("commit_protocol", "auto"),
                   part_size=kwargs.get("part_size"),
                   overwrite_without_lock=kwargs.get("overwrite_without_lock", False),
                   time_zone=kwargs.get("time_zone", "UTC"),
                   layout=kwargs.get("layout"),
                   **kwargs["format_options"])
    job.setup_metrics.add_all(looked)
    return job


# --- staged Parquet writes: Spark's own Parquet writer in the task, our upload and commit ---
#: the columns of a staged task's rows, after its partition columns: one row per local
#: Parquet file Spark's writer wrote in the task (StagedParquetWriter.java)
STAGED_FILE = "_listing_staged_file"
STAGED_ROWS = "_listing_staged_rows"
#: our Parquet codecs Spark's Parquet writer writes alike (None: uncompressed)
STAGED_CODECS = {None: "uncompressed", "snappy": "snappy", "gzip": "gzip", "zstd": "zstd"}


def staged_shape(job: WriteJob) -> dict[str, Any]:
    """What Spark's Parquet writer needs to write ``job``'s files in its tasks: ``{"partition_by",
    "compression", "max_records_per_file"}`` (0: no limit), or ``{"not_staged": why}`` for
    a job only our Python writer writes (another format, format options, a codec Spark's
    writer spells otherwise). The JVM checks the column types itself."""
    if type(job.format) is not ParquetFormat or type(job.sink) is not ParquetSink:
        return {"not_staged": f"format {job.format.name!r} is not our parquet"}
    if job.format.options != ParquetFormat().options:
        return {"not_staged": "parquet format options"}
    if job.sink.compression not in STAGED_CODECS:
        return {"not_staged": f"compression {job.sink.compression!r}"}
    if {STAGED_FILE, STAGED_ROWS} & set(job.schema.names):
        return {"not_staged": f"a column named {STAGED_FILE!r} or {STAGED_ROWS!r}"}
    return {"partition_by": list(job.partition_by),
            "compression": STAGED_CODECS[job.sink.compression],
            "max_records_per_file": job.max_records_per_file or 0}


def staged_order(options_json: str, schema_json: str, overwrite: bool) -> dict[str, Any]:
    """:func:`staged_shape` of a write from its options alone (no request): the columns the
    planner sorts its rows by. The job the write's writer resolves is checked again by
    :func:`staged_setup` before a task runs."""
    options = json.loads(options_json)
    schema = StructType.fromJson(json.loads(schema_json))
    return staged_shape(write_job(options, schema, overwrite, resolve=False))


def staged_setup(source_b64: str, provider: str, options_json: str, schema_json: str,
                 overwrite: bool, return_type_json: str) -> dict[str, Any]:
    """A write's set-up here, in the driver's Python process, as Spark's planning worker
    would do it (pyspark.sql.worker.write_into_data_source): the registered source class
    (pickled, base64), its writer for the options and schema, and the write function its
    tasks run, pickled as that worker pickles them (``{"writer", "command"}``, base64), with
    the job's :func:`staged_shape`. Errors are raised: the JVM then lets Spark's own path
    raise them."""
    from pyspark.serializers import CPickleSerializer
    from pyspark.sql.datasource import CaseInsensitiveDict, DataSource

    pickle = CPickleSerializer()
    source = pickle.loads(base64.b64decode(source_b64))
    if not (isinstance(source, type) and issubclass(source, DataSource)
            and source.name().lower() == provider.lower()):
        raise TypeError(f"the source {provider!r} is {source!r}")
    schema = StructType.fromJson(json.loads(schema_json))
    return_type = StructType.fromJson(json.loads(return_type_json))
    writer = source(options=CaseInsensitiveDict(json.loads(options_json))).writer(
        schema, overwrite)
    if not isinstance(writer, ListingWriter):
        raise TypeError(f"the source {provider!r} wrote with a {type(writer).__name__}")
    shape = ({"not_staged": "the write is skipped (mode ignore)"} if writer.job.skip
             else staged_shape(writer.job))
    return {"writer": base64.b64encode(pickle.dumps(writer)).decode(),
            "command": base64.b64encode(write_command(writer, return_type)).decode(),
            **shape}


def write_command(writer: ListingWriter, return_type: StructType) -> bytes:
    """The pickled ``(function, return type)`` a write's tasks run, as Spark's planning
    worker builds it: the writer's ``write`` over the task's Arrow batches, its commit
    message pickled into the one binary column of ``return_type``."""
    from pyspark.errors import PySparkRuntimeError
    from pyspark.serializers import CPickleSerializer

    pickle = CPickleSerializer()
    column = return_type[0].name

    def data_source_write_func(iterator: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        message = writer.write(iterator)
        if not isinstance(message, WriterCommitMessage):
            raise PySparkRuntimeError(
                errorClass="DATA_SOURCE_TYPE_MISMATCH",
                messageParameters={"expected": "'WriterCommitMessage' as the return type of "
                                               "the `write` method",
                                   "actual": type(message).__name__})
        yield pa.record_batch([pa.array([pickle.dumps(message)])], names=[column])

    # as Spark's worker names it, so that a profiler's worker sees a data source function
    data_source_write_func.__module__ = "pyspark.sql.worker.write_into_data_source"
    return pickle.dumps((data_source_write_func, return_type))


def staged_commit(pickled_writer_b64: str, pickled_messages_b64: list[str | None],
                  abort: bool) -> dict[str, Any]:
    """Commit (or abort) a staged write's job here, in the driver's Python process, as
    Spark's commit worker would: the writer and its tasks' messages, pickled and base64
    (None: a task that sent none)."""
    from pyspark.serializers import CPickleSerializer

    pickle = CPickleSerializer()
    writer = pickle.loads(base64.b64decode(pickled_writer_b64))
    if not isinstance(writer, ListingWriter):
        raise TypeError(f"a staged write's writer is a {type(writer).__name__}")
    messages = [None if m is None else pickle.loads(base64.b64decode(m))
                for m in pickled_messages_b64]
    if abort:
        writer.abort(messages)
    else:
        writer.commit(messages)
    return {}


def is_staged(schema: pa.Schema, job: WriteJob) -> bool:
    """Whether a task's batches are staged files (:data:`STAGED_FILE`), not rows."""
    return (schema.names == [*job.partition_by, STAGED_FILE, STAGED_ROWS]
            and schema.names != job.schema.names)


def staged_files(batches: Iterator[pa.RecordBatch], job: WriteJob) -> list[StagedUpload]:
    """The local files a staged task wrote: path, rows and typed partition values. Each
    must be a file Spark's writer made in this worker's Spark local folders
    (``SPARK_LOCAL_DIRS``), since the upload sends it and then removes it."""
    roots = [os.path.realpath(d) for d in os.environ.get("SPARK_LOCAL_DIRS", "").split(",")
             if d]
    out = []
    for batch in batches:
        for row in batch.to_pylist():
            local = os.path.realpath(str(row[STAGED_FILE]))
            if (not os.path.basename(local).startswith("temp_local_")
                    or not any(local.startswith(root + os.sep) for root in roots)
                    or not os.path.isfile(local)):
                raise OptionError(f"a staged file {row[STAGED_FILE]!r} is not a file Spark's "
                                  f"Parquet writer made in {roots}; nothing was uploaded")
            out.append(StagedUpload(local, int(row[STAGED_ROWS]),
                                    tuple((n, row[n]) for n in job.partition_by)))
    return out
