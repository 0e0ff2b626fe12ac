"""A DataFusion-style ListingTable for Spark: listing-pruned scans of Hive-partitioned files.

>>> from listing import ListingTable, col
>>> table = ListingTable.open("s3://lake/events/", format="parquet")
>>> plan = table.scan(where="date = '2026-03-01' AND region = 'us'")
>>> print(plan.explain())
"""

from __future__ import annotations

from typing import Any

from listing.errors import (
    CommitError,
    ConcurrentWriteError,
    CorruptFileError,
    FileChangedError,
    FileReadError,
    FilterError,
    ListingError,
    MissingFileError,
    OptionError,
    PartitionLayoutError,
    PartitionValueError,
    SparkSetupError,
    StorageConfigError,
    StorageError,
    TableExistsError,
    TableNotFoundError,
)
from listing.expressions import Expr, col
from listing.files import FileGroup, PartitionedFile
from listing.pushdown import Pushdown
from listing.scan import ScanPlan
from listing.table import ListingTable

__all__ = [
    "CommitError", "ConcurrentWriteError", "CorruptFileError", "Expr", "FileChangedError",
    "FileGroup", "FileReadError", "FilterError", "ListingError", "ListingTable",
    "MissingFileError", "OptionError", "PartitionLayoutError", "PartitionValueError",
    "PartitionedFile", "Pushdown", "ScanPlan", "SparkSetupError", "StorageConfigError",
    "StorageError", "TableExistsError", "TableNotFoundError", "WriteJob", "WriteResult", "col",
    "explain", "register", "session", "skipped_files", "to_spark", "write_spark", "write_table",
]


def __getattr__(name: str) -> Any:
    # Spark is imported only when asked for, so planning-only users never start a JVM.
    if name in ("session", "register"):
        from listing.spark import session as spark_session

        return getattr(spark_session, name)
    if name == "explain":
        from listing.spark.explain import explain

        return explain
    if name == "to_spark":
        from listing.spark.source import to_spark

        return to_spark
    if name == "write_spark":
        from listing.spark.arrow_jobs import write_spark

        return write_spark
    if name in ("write_table", "WriteJob", "WriteResult"):
        from listing import write

        return getattr(write, name)
    if name == "skipped_files":
        from listing.spark.skips import skipped_files

        return skipped_files
    raise AttributeError(name)
