"""``SELECT * FROM listing_partitions('s3://lake/events/', …)``: what ``SHOW PARTITIONS``
would say, from the listing alone (``ListingTable.partitions``), callable from SQL.

A Python table function (UDTF) with ``analyze``: its columns are the table's partition
columns, then ``files`` and ``bytes``, so it opens the table once at analysis (one listing
page) and lists again when it runs. Arguments, by position or name: ``path``, ``format``
(default ``parquet``), ``where`` (SQL on partition columns), ``storage_options`` (a JSON
object, as the ``listing`` source takes it). All are data: nothing names code.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from listing.errors import OptionError
from listing.spark.compat import HAS_UDTF_ANALYZE
from listing.spark.option_values import json_object
from listing.spark.types import spark_struct
from listing.table import ListingTable

if TYPE_CHECKING:
    from pyspark.sql.udtf import AnalyzeArgument, AnalyzeResult

log = logging.getLogger("listing.spark")

NAME = "listing_partitions"


def _constant(arg: AnalyzeArgument | None, name: str, required: bool = False) -> Any:
    if arg is None or (arg.value is None and arg.isConstantExpression):
        if required:
            raise OptionError(f"{NAME}: argument {name} is required")
        return None
    if not arg.isConstantExpression or not isinstance(arg.value, str):
        raise OptionError(f"{NAME}: argument {name} must be a constant string")
    return arg.value


def _open(path: str, format: str | None, storage_options: str | None) -> ListingTable:  # noqa: A002
    options = json_object("storage_options", storage_options) if storage_options else {}
    return ListingTable.open(path, format=format or "parquet", storage_options=options)


class ListingPartitions:
    """The UDTF: one row per partition matching ``where``, with its file count and bytes."""

    @staticmethod
    def analyze(path: AnalyzeArgument, format: AnalyzeArgument | None = None,  # noqa: A002
                where: AnalyzeArgument | None = None,
                storage_options: AnalyzeArgument | None = None) -> AnalyzeResult:
        from pyspark.sql.udtf import AnalyzeResult  # Spark 4.0 and later (HAS_UDTF_ANALYZE)

        table = _open(_constant(path, "path", required=True), _constant(format, "format"),
                      _constant(storage_options, "storage_options"))
        _constant(where, "where")
        fields = [pa.field(n, t) for n, t in table.partition_cols]
        fields += [pa.field("files", pa.int64()), pa.field("bytes", pa.int64())]
        return AnalyzeResult(spark_struct(pa.schema(fields), table.partition_names))

    def eval(self, path: str, format: str | None = None,  # noqa: A002
             where: str | None = None, storage_options: str | None = None
             ) -> Iterator[tuple[Any, ...]]:
        table = _open(path, format, storage_options)
        yield from (tuple(row.values()) for row in table.partitions(where).to_pylist())


def register_partitions_function(spark: Any) -> bool:
    """Make ``listing_partitions(...)`` callable in ``spark``'s SQL; False where pyspark's
    table functions cannot answer their schema from their arguments (Spark 3.5: not
    registered, ``ListingTable.partitions`` answers the same in Python)."""
    if not HAS_UDTF_ANALYZE:
        log.info("%s is not registered: Spark 3.5's Python table functions have no analyze "
                 "(use ListingTable.partitions)", NAME)
        return False
    from pyspark.sql.functions import udtf

    # a few rows per call: plain Python rows. Left to Spark's default (Arrow UDTFs on, in
    # pyspark 4.3), a session without pandas (the wheel installed without the `connect`
    # extra) printed a UserWarning about pandas every time the source was registered
    spark.udtf.register(NAME, udtf(ListingPartitions, useArrow=False))
    return True
