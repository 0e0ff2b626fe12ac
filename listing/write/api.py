"""The Python entry points of a write: :func:`write_table` runs a whole job in this process;
:func:`target_partition_by` resolves the partition columns a write must use against the
table's layout (also for Spark's writer, before its job starts)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa

from listing.errors import OptionError, PartitionLayoutError
from listing.formats.base import FileFormat
from listing.hive import discover_columns, is_hidden_below
from listing.metrics import Counters
from listing.storage.lister import Lister
from listing.storage.spec import StorageSpec
from listing.url import TableUrl
from listing.write.job import WriteJob, check_write_options
from listing.write.options import checked_partition_by, layout_partition_by, write_mode
from listing.write.paths import write_layout
from listing.write.results import WriteResult

log = logging.getLogger("listing.write")


def write_table(url: str, data: pa.Table | pa.RecordBatch | Iterable[pa.RecordBatch], *,
                format: str | FileFormat = "parquet",  # noqa: A002
                partition_by: Sequence[str] = (), mode: str = "append",
                partition_overwrite_mode: str = "static",
                storage_options: dict[str, Any] | None = None,
                max_records_per_file: int | None = None, compression: str | None = None,
                layout: str | None = None, **format_options: Any) -> WriteResult:
    """Write ``data`` to the table at ``url``, Hive-partitioned by ``partition_by`` (by
    default, an existing table's own partition columns: :func:`target_partition_by`).

    ``mode``: ``append`` (default), ``overwrite`` (``partition_overwrite_mode`` ``static``:
    the whole table; ``dynamic``: only the partitions written), ``error`` (fail if the table
    has files), ``ignore`` (do nothing if it has). ``format_options`` are the format's own
    (CSV ``header``, ``delimiter``). ``layout``: a path template (docs/layouts.md) the
    partition folders are spelled with instead of Hive's ``k=v``; its columns are the
    partition columns. Nothing is visible before the commit; any failure before it
    deletes the staged files and leaves the table as it was.

    :param url: the table's root (``s3://bucket/prefix/``, a local path, any allowlisted
        store).
    :param data: a pyarrow Table, a RecordBatch, a RecordBatchReader or an iterable of
        RecordBatches (one schema).
    :param format: a registered format's name or a :class:`~listing.formats.base.FileFormat`.
    :param partition_by: the partition columns, in folder order; default: an existing
        table's own.
    :param mode: ``append``, ``overwrite``, ``error`` or ``ignore``.
    :param partition_overwrite_mode: ``static`` (an overwrite replaces the table) or
        ``dynamic`` (only the partitions written).
    :param storage_options: the store's options, checked against the allowlist.
    :param max_records_per_file: rows per written file (Spark's ``maxRecordsPerFile``).
    :param compression: the written files' compression (the format's codec names).
    :param layout: a path template for the partition folders instead of ``k=v``.
    :param format_options: the format's own options (CSV ``header``, ``delimiter``, ...)
        and the job's other keywords: ``commit_protocol`` (``auto``, ``multipart``,
        ``copy``), ``part_size`` (bytes per multipart part), ``overwrite_without_lock``
        (overwrite where the store has no conditional PUT; the caller serialises
        overwrites), ``time_zone`` (the zone timestamp partition folders are spelled in),
        ``job_id``. An unknown name is an :class:`~listing.errors.OptionError` naming it.
    :returns: the committed job's :class:`~listing.write.WriteResult` (files, partitions,
        rows, metrics).
    :raises OptionError: an unknown or bad option, before any request.
    :raises TableExistsError: ``mode="error"`` and the table has files.
    :raises CommitError: the commit failed or was refused; nothing of the job is visible.
    """
    check_write_options(format, format_options, "for write_table", write_table)
    schema, batches = _schema_and_batches(data)
    looked = Counters()
    partition_by = target_partition_by(url, schema, partition_by, mode=mode,
                                       partition_overwrite_mode=partition_overwrite_mode,
                                       storage_options=storage_options, counters=looked,
                                       layout=layout)
    job = WriteJob(url, schema, format=format, partition_by=partition_by, mode=mode,
                   layout=layout,
                   partition_overwrite_mode=partition_overwrite_mode,
                   storage_options=storage_options, max_records_per_file=max_records_per_file,
                   compression=compression, **format_options)
    job.setup_metrics.add_all(looked)
    job.setup()
    try:
        task = job.write_task(batches)
    except BaseException:
        try:
            job.abort()
        except Exception as err:  # noqa: BLE001 - the write's own error is the one to raise
            log.warning("could not delete the staged files of job %s: %s", job.job_id, err)
        raise
    try:
        return job.commit([task])
    except BaseException:  # a refused or failed commit leaves no staged file or upload
        try:
            job.abort([task])
        except Exception as err:  # noqa: BLE001 - the commit's own error is the one to raise
            log.warning("could not delete the staged files of job %s: %s", job.job_id, err)
        raise


def _schema_and_batches(data: Any) -> tuple[pa.Schema, Iterable[pa.RecordBatch]]:
    if isinstance(data, pa.Table):
        return data.schema, data.to_batches()
    if isinstance(data, pa.RecordBatch):
        return data.schema, [data]
    if isinstance(data, pa.RecordBatchReader):
        return data.schema, data
    iterator = iter(data)
    first = next(iterator, None)
    if first is None:
        raise OptionError("write_table got no batches: give a pyarrow Table (its schema is "
                          "kept even when empty) or at least one RecordBatch")
    if not isinstance(first, pa.RecordBatch):
        raise OptionError(f"write_table takes a pyarrow Table or RecordBatches, got "
                          f"{type(first).__name__}")

    def chained() -> Iterator[pa.RecordBatch]:
        yield first
        yield from iterator
    return first.schema, chained()


# --- the target's layout, before a job starts ------------------------------------------------

def target_partition_by(url: str, schema: pa.Schema, partition_by: Sequence[str] | str = (),
                        *, mode: str = "append", partition_overwrite_mode: str = "static",
                        storage_options: dict[str, Any] | None = None,
                        counters: Counters | None = None, layout: Any = None) -> list[str]:
    """The partition columns a write of ``schema`` to ``url`` must use, so that reads see
    every row it writes and every row the table held (Spark's ``insertInto``).

    The table's layout is discovered as reads discover it (:func:`listing.hive.
    discover_columns` on the first page of the flat listing: one LIST, counted in
    ``counters``); only ``append`` and ``overwrite`` look (``error``/``ignore`` write to an
    empty table or not at all). Invariants, where the table holds visible files:

    - partitioned by ``P``: no ``partition_by`` means ``P`` (an append would otherwise put
      its files at the root, which reads skip beside partition directories); one other
      than ``P`` is an :class:`OptionError` naming both, as is data without a column of
      ``P``; except a static overwrite, which replaces every file (the layout given wins);
    - not partitioned (files at its root): a ``partition_by`` is refused unless the write
      is a static overwrite, since its directories would hide the root files from reads;
    - a layout reads cannot determine (:class:`PartitionLayoutError`) refuses the write;
    - with a ``layout`` template: its columns are the partition columns (a different
      ``partition_by`` is an :class:`OptionError` naming both options), and a table whose
      first page holds visible files the template does not describe is refused, except
      by a static overwrite (reads with the layout would skip them, Hive reads the new
      folders).
    """
    template = None
    if layout not in (None, ""):
        template = write_layout(TableUrl.parse(url).prefix, layout, schema)
        given = layout_partition_by(template.names, partition_by, schema)
    else:
        given = checked_partition_by(partition_by, schema)
    mode = write_mode(mode)
    if mode not in ("append", "overwrite"):
        return given
    replaces_all = mode == "overwrite" and str(partition_overwrite_mode).lower() != "dynamic"
    table = TableUrl.parse(url)
    if table.glob is not None:
        return given  # WriteJob refuses it, naming the glob
    lister = Lister(StorageSpec(table.protocol, dict(storage_options or {})), counters)
    page = next(iter(lister.pages(table.prefix, delimiter=False)), None)
    paths = [m.path for m in page.files] if page is not None else []
    visible = [p for p in paths if not is_hidden_below(table.prefix, p)]
    if not visible:
        return given  # a new or empty table takes the layout given
    if template is not None:
        stray = [p for p in visible if template.components(p) is None]
        if stray and not replaces_all:
            raise OptionError(
                f"{table} holds files the option layout={template.template.text!r} does "
                f"not describe ({table.to_url(stray[0])}, {len(stray)} on its first page): "
                "reads with the layout skip them and Hive reads would not see the new "
                "folders; write with the table's own layout, or overwrite the whole table "
                "(mode='overwrite', partition_overwrite_mode='static')")
        return given
    try:
        existing = [n for n, _ in discover_columns(table.prefix, visible, None, table.to_url)]
    except PartitionLayoutError as err:
        raise OptionError(f"cannot write to {table}: its partition layout cannot be "
                          f"determined ({err}); nothing was written") from None
    if replaces_all and (given or not all(n in schema.names for n in existing)):
        return given  # every old file goes: nothing the write leaves is hidden
    if not existing:
        if given and not replaces_all:
            raise OptionError(
                f"{table} is not partitioned (its files sit at its root) but the write has "
                f"partition_by={given}: reads would skip its root files beside the new "
                "partition directories; write without partition_by, or overwrite the whole "
                "table (mode='overwrite', partition_overwrite_mode='static')")
        return given
    if not given:
        missing = [n for n in existing if n not in schema.names]
        if missing:
            raise OptionError(
                f"{table} is partitioned by {existing} but the data has no column "
                f"{', '.join(map(repr, missing))} (columns: {', '.join(schema.names)}); "
                "files written without them would sit where reads skip them")
        return checked_partition_by(existing, schema)
    if given != existing:
        raise OptionError(
            f"partition_by={given} disagrees with the partition columns of {table}, "
            f"{existing}: reads would skip one of the two layouts; give "
            f"partition_by={existing} (or none)")
    return given
