"""The ``listing`` read and write tasks as Spark jobs of ``mapInArrow``, on every Spark line.

Spark 3.5 has no Python data source API (:data:`~listing.spark.compat.HAS_DATA_SOURCE_API`)
but has ``DataFrame.mapInArrow``: a Python function over Arrow batches, run in Spark tasks.
The tasks it runs here are those of the Python source, so each line reads and writes
through one task code:

- :func:`to_spark_by_tasks` (``to_spark`` on 3.5): the driver plans the scan with the
  source's reader (:class:`~listing.spark.reader.PlainListingReader`: the filters, columns
  and limit given to ``to_spark`` prune the plan); each planned partition, pickled, is one
  row of a small DataFrame of one row per Spark partition; ``mapInArrow`` reads each with the
  reader's ``read``. ``mapInArrow`` is opaque to Spark's optimizer: filters and projections
  applied to the DataFrame later run in Spark on the rows read, nothing is pushed into it.
- :func:`write_spark` (every line): the driver builds the source's
  :class:`~listing.spark.writer.ListingWriter` (the write's options parsed as
  ``df.write.format("listing")`` parses them; its job set up: recovery, mode checks, lock),
  each ``mapInArrow`` task runs ``ListingWriter.write`` over its batches and yields its commit
  message, pickled, as one binary row; the driver collects them and commits, or aborts on
  any failure: the same staging, manifest, publish-then-remove, recovery and lock as
  ``df.write.format("listing")``.

Pickled payloads are made by the driver for its own tasks (cloudpickle, the format classes
the workers cannot import by value, as the source class ships them); no option names code.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import pickle
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

import pyarrow as pa
from pyspark import cloudpickle
from pyspark.sql.types import BinaryType, StructField, StructType

from listing.errors import OptionError, SparkSetupError
from listing.spark.dataframe import ship_by_value
from listing.spark.reader import PlainListingReader
from listing.spark.skips import accumulator as skips_accumulator
from listing.spark.types import spark_struct
from listing.spark.writer import ListingWriter, session_write_conf
from listing.table import ListingTable, Where
from listing.write import WriteResult

log = logging.getLogger("listing.spark")

#: the one column of a job's task rows: a pickled partition to read, or a commit message
PAYLOAD = StructType([StructField("payload", BinaryType(), nullable=False)])
#: the write modes :func:`write_spark` takes (those of ``df.write.format("listing")``)
WRITE_MODES = ("append", "overwrite")


def to_spark_by_tasks(table: ListingTable, spark: Any, columns: Sequence[str] | None = None,
                      where: Where = None, limit: int | None = None) -> Any:
    """A DataFrame reading only ``columns`` of ``table``'s files matching ``where`` (at most
    ``limit`` rows), planned now on the driver, read by one ``mapInArrow`` task per file
    group. Later DataFrame filters are not pushed into the plan."""
    require_pandas("to_spark on Spark 3.5")
    projection = [table.schema.field(n) for n in table.projection(columns)]
    struct = spark_struct(pa.schema(projection), table.partition_names)
    ship_formats(table.format)
    reader = PlainListingReader(table, struct, table.bind(where), limit,
                                default_parallelism(spark), skips_accumulator(spark))
    payloads = [cloudpickle.dumps(p) for p in reader.partitions()]

    def read(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for payload in batch.column(0).to_pylist():  # bytes: the column is not nullable
                yield from reader.read(pickle.loads(cast(bytes, payload)))  # noqa: S301 - ours

    df = task_rows(spark, payloads).mapInArrow(read, struct)
    return df.limit(limit) if limit is not None else df


def write_spark(df: Any, path: str, *, partition_by: str | Sequence[str] | None = None,
                mode: str = "append", format: str | None = None,  # noqa: A002 - the option's name
                **options: Any) -> WriteResult:
    """Write ``df`` to the table at ``path`` as ``df.write.format("listing")`` does, on any
    Spark line (3.5 included): the same options (``partition_by``, ``format``, storage and
    format options, ``partitionOverwriteMode``…), modes ``append`` and ``overwrite``, commit
    protocol and guarantees. Returns the committed job's :class:`~listing.write.WriteResult`.

    Option values are given as to ``DataFrameWriter.option``: text, numbers, booleans;
    ``storage_options`` may be a dict, ``partition_by`` a list of names.
    """
    if mode not in WRITE_MODES:
        raise OptionError(f"write_spark mode must be one of {', '.join(WRITE_MODES)}, "
                          f"got {mode!r}")
    require_pandas("listing.write_spark")  # before the job is set up
    given = {"path": path, "format": format, "partition_by": partition_by, **options}
    texts = {k: option_text(v) for k, v in given.items() if v is not None}
    spark = df.sparkSession
    writer = ListingWriter(texts, df.schema, mode == "overwrite", session_write_conf(spark))
    ship_formats(writer.job.format)

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        message = writer.write(batches)
        yield pa.record_batch([pa.array([cloudpickle.dumps(message)], pa.binary())],
                              names=["payload"])

    group = f"listing-write-{uuid.uuid4().hex}"
    context = _context(spark)
    try:
        with _job_group(context, group):
            rows = df.mapInArrow(write, PAYLOAD).collect()
        messages = [pickle.loads(r.payload) for r in rows]  # noqa: S301 - our tasks' own
        writer.commit(messages)
    except BaseException:
        # what the tasks staged goes with the job: before its commit point the old table
        # is restored exactly (listing.write's abort); the failure is what is raised. The
        # job's other tasks may still be writing when its first failure is raised: they
        # end first, so that nothing is staged after the abort
        try:
            _end_tasks(context, group)
            writer.abort([])
        except Exception:  # noqa: BLE001 - logged; the write's own error matters more
            log.warning("abort of listing write %s failed", writer.job.url, exc_info=True)
        raise
    assert writer.result is not None  # set by commit
    return writer.result


#: how long a failed write waits for its job's other tasks to end before it aborts
TASKS_END_TIMEOUT = 60.0


def _context(spark: Any) -> Any:
    """The session's SparkContext, or None (a Spark Connect client has none)."""
    try:
        return spark.sparkContext
    except Exception:  # noqa: BLE001 - Connect raises its own "not supported" error
        return None


@contextlib.contextmanager
def _job_group(context: Any, group: str) -> Iterator[None]:
    """The jobs run inside in job group ``group`` (tasks interrupted when cancelled); the
    thread's own group, description and interrupt setting back afterwards."""
    if context is None:
        yield
        return
    keys = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")
    before = {k: context.getLocalProperty(k) for k in keys}
    context.setJobGroup(group, "listing.write_spark", interruptOnCancel=True)
    try:
        yield
    finally:
        for key, value in before.items():
            context.setLocalProperty(key, value)


def _end_tasks(context: Any, group: str) -> None:
    """Cancel job group ``group`` and wait, up to :data:`TASKS_END_TIMEOUT`, until none of
    its stages has a task running."""
    if context is None:
        return
    context.cancelJobGroup(group)
    tracker = context.statusTracker()
    stages = [stage for job in tracker.getJobIdsForGroup(group)
              if (info := tracker.getJobInfo(job)) is not None for stage in info.stageIds]
    deadline = time.monotonic() + TASKS_END_TIMEOUT
    while time.monotonic() < deadline:
        running = [info for stage in stages
                   if (info := tracker.getStageInfo(stage)) is not None and info.numActiveTasks]
        if not running:
            return
        time.sleep(0.05)
    log.warning("listing write: tasks of %s still running after %.0f s; aborting anyway",
                group, TASKS_END_TIMEOUT)


def require_pandas(caller: str) -> None:
    """Raise :class:`~listing.errors.SparkSetupError` naming the fix when pandas is missing:
    pyspark builds every ``mapInArrow`` function with ``pandas_udf``, which refuses to run
    without pandas (on every Spark line), though no batch ever becomes a pandas frame."""
    if importlib.util.find_spec("pandas") is None:  # pandas is no dependency of ours
        raise SparkSetupError(f"{caller} runs its tasks in Spark's mapInArrow, and pyspark "
                              "refuses mapInArrow without pandas installed: pip install "
                              "pandas")


def option_text(value: Any) -> str:
    """An option value as ``DataFrameWriter.option`` passes it: text; a boolean as
    ``true``/``false``; a mapping as JSON (``storage_options``); a list comma-separated."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Mapping):
        return json.dumps(dict(value))
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def task_rows(spark: Any, payloads: Sequence[bytes]) -> Any:
    """A DataFrame of one row per Spark partition, each holding one of ``payloads``."""
    rows = [(p,) for p in payloads]
    rdd = spark.sparkContext.parallelize(rows, max(1, len(rows)))
    return spark.createDataFrame(rdd, PAYLOAD)


def ship_formats(fmt: Any) -> None:
    """Send ``fmt``'s class by value to workers that cannot import it (a user's script)."""
    ship_by_value(type(fmt))


def default_parallelism(spark: Any) -> int | None:
    """Spark's default parallelism (the minimum number of file groups), None without one."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # noqa: BLE001 - Spark Connect has no SparkContext
        return None
