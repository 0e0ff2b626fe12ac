"""What the running pyspark offers, asked by feature, not version.

The one place that knows the differences between the supported lines (3.5 to 4.3), so the
source gives the same rows and types on each:

- :data:`HAS_DATA_SOURCE_API`: ``pyspark.sql.datasource`` (Spark 4.0 and later). Without it
  (3.5) ``listing`` is no Python data source: the base classes the source, readers and
  writer subclass are this module's stand-ins (so every module imports), ``to_spark`` and
  :func:`listing.write_spark` run their tasks in ``mapInArrow``
  (:mod:`listing.spark.arrow_jobs`).
- :data:`HAS_FILTER_PUSHDOWN`: ``DataSourceReader.pushFilters`` and the filter classes
  (Spark 4.1 and later). Without them Spark never hands a Python source its filters; the
  filter classes are then this module's own, of the same names and fields, for the filters
  :func:`listing.explain` and the extension's pruning rule translate.
- :data:`HAS_UDTF_ANALYZE`: ``pyspark.sql.udtf.AnalyzeResult`` (Spark 4.0 and later):
  without it (3.5) ``listing_partitions`` is not registered.
- :data:`HAS_ADMISSION_CONTROL`: ``pyspark.sql.streaming.datasource`` (``ReadLimit``,
  ``SupportsTriggerAvailableNow``, ``latestOffset(start, limit)``; Spark 4.2 and later).
  Without it the stream reader enforces its own per-trigger limits.
- :func:`to_arrow_schema` / :func:`from_arrow_schema`: the Arrow schema helpers with every
  argument whose name or default differs between lines passed explicitly (timestamps in UTC;
  naive timestamps as ``TIMESTAMP_NTZ``).
"""

from __future__ import annotations

import importlib.util
import inspect
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.pandas import types as _pandas_types
from pyspark.sql.types import StructType

HAS_DATA_SOURCE_API = importlib.util.find_spec("pyspark.sql.datasource") is not None
"""pyspark has the Python Data Source API (``spark.dataSource.register``; Spark 4.0 on)."""

if TYPE_CHECKING or HAS_DATA_SOURCE_API:
    from pyspark.sql.datasource import (
        DataSource,
        DataSourceArrowWriter,
        DataSourceReader,
        DataSourceStreamReader,
        DataSourceWriter,
        InputPartition,
        WriterCommitMessage,
    )
else:  # Spark 3.5: stand-ins of the same names and constructors, never registered with Spark

    class DataSource:
        """Stand-in of pyspark's ``DataSource`` (its options)."""

        def __init__(self, options: dict[str, str]) -> None:
            self.options = options

    class DataSourceReader:
        """Stand-in of pyspark's ``DataSourceReader``."""

    class DataSourceStreamReader:
        """Stand-in of pyspark's ``DataSourceStreamReader``."""

    class DataSourceWriter:
        """Stand-in of pyspark's ``DataSourceWriter``."""

    class DataSourceArrowWriter(DataSourceWriter):
        """Stand-in of pyspark's ``DataSourceArrowWriter``."""

    @dataclass
    class InputPartition:
        """Stand-in of pyspark's ``InputPartition`` (its ``value``)."""

        value: Any

    @dataclass
    class WriterCommitMessage:
        """Stand-in of pyspark's ``WriterCommitMessage``."""

__all__ = [
    "HAS_ADMISSION_CONTROL",
    "HAS_DATA_SOURCE_API",
    "HAS_FILTER_PUSHDOWN",
    "HAS_UDTF_ANALYZE",
    "DataSource",
    "DataSourceArrowWriter",
    "DataSourceReader",
    "DataSourceStreamReader",
    "DataSourceWriter",
    "InputPartition",
    "WriterCommitMessage",
    "filters",
    "from_arrow_schema",
    "to_arrow_schema",
]

HAS_FILTER_PUSHDOWN = hasattr(DataSourceReader, "pushFilters")
"""Spark hands the source's reader its filters (``pushFilters``)."""

HAS_ADMISSION_CONTROL = importlib.util.find_spec("pyspark.sql.streaming.datasource") is not None
"""Spark asks the stream reader for its read limit and passes it to ``latestOffset``."""

HAS_UDTF_ANALYZE = hasattr(importlib.import_module("pyspark.sql.udtf"), "AnalyzeResult")
"""Python table functions may answer their schema from their arguments (``analyze``;
Spark 4.0 and later): what ``listing_partitions`` (:mod:`listing.spark.partitions`) needs."""


# The filter classes of pyspark 4.1 (names and fields), for a pyspark without them; at module
# level, so a pickled filter is the same class in every Python worker.
@dataclass(frozen=True)
class Filter:
    """Base of the filters below."""


@dataclass(frozen=True)
class Not(Filter):
    child: Filter


@dataclass(frozen=True)
class _Leaf(Filter):
    attribute: tuple[str, ...]


@dataclass(frozen=True)
class _Valued(_Leaf):
    value: Any


class EqualTo(_Valued): ...
class EqualNullSafe(_Valued): ...
class GreaterThan(_Valued): ...
class GreaterThanOrEqual(_Valued): ...
class LessThan(_Valued): ...
class LessThanOrEqual(_Valued): ...
class In(_Valued): ...
class StringStartsWith(_Valued): ...
class StringEndsWith(_Valued): ...
class StringContains(_Valued): ...
class IsNull(_Leaf): ...
class IsNotNull(_Leaf): ...


_OWN = SimpleNamespace(**{c.__name__: c for c in (
    Filter, Not, EqualTo, EqualNullSafe, GreaterThan, GreaterThanOrEqual, LessThan,
    LessThanOrEqual, In, StringStartsWith, StringEndsWith, StringContains, IsNull, IsNotNull)})

_datasource = importlib.import_module("pyspark.sql.datasource") if HAS_DATA_SOURCE_API else None
filters: Any = _datasource if hasattr(_datasource, "EqualTo") else _OWN
"""The data source filter classes: pyspark's where it has them (``EqualTo``, ``Not``, ...)."""

_TO_ARROW = inspect.signature(_pandas_types.to_arrow_schema).parameters


def to_arrow_schema(struct: StructType) -> pa.Schema:
    """The Arrow schema of a Spark schema, timestamps in UTC (Spark's session time)."""
    convert: Any = _pandas_types.to_arrow_schema  # its arguments differ between lines
    if "timezone" in _TO_ARROW:  # 4.2 and later
        return convert(struct, timezone="UTC")
    if "timestamp_utc" in _TO_ARROW:  # 4.0, 4.1
        return convert(struct, timestamp_utc=True)
    return convert(struct)  # 3.5: always UTC


def from_arrow_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of an Arrow schema; a timestamp without a time zone is
    ``TIMESTAMP_NTZ`` on every line (the default differs between them)."""
    return _pandas_types.from_arrow_schema(schema, prefer_timestamp_ntz=True)
