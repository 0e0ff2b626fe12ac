"""What the running pyspark's Python Data Source API offers, asked by feature, not version.

The one place that knows the differences between the supported lines (4.0 to 4.3), so the
source gives the same rows and types on each:

- :data:`HAS_FILTER_PUSHDOWN`: ``DataSourceReader.pushFilters`` and the filter classes
  (Spark 4.1 and later). Without them Spark never hands a Python source its filters; the
  filter classes are then this module's own, of the same names and fields, for the filters
  :func:`listing.explain` and the extension's pruning rule translate.
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
from typing import Any

import pyarrow as pa
from pyspark.sql import datasource as _datasource
from pyspark.sql.pandas import types as _pandas_types
from pyspark.sql.types import StructType

__all__ = [
    "HAS_ADMISSION_CONTROL",
    "HAS_FILTER_PUSHDOWN",
    "filters",
    "from_arrow_schema",
    "to_arrow_schema",
]

HAS_FILTER_PUSHDOWN = hasattr(_datasource.DataSourceReader, "pushFilters")
"""Spark hands the source's reader its filters (``pushFilters``)."""

HAS_ADMISSION_CONTROL = importlib.util.find_spec("pyspark.sql.streaming.datasource") is not None
"""Spark asks the stream reader for its read limit and passes it to ``latestOffset``."""


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

filters: Any = _datasource if hasattr(_datasource, "EqualTo") else _OWN
"""The data source filter classes: pyspark's where it has them (``EqualTo``, ``Not``, ...)."""

_TO_ARROW = inspect.signature(_pandas_types.to_arrow_schema).parameters


def to_arrow_schema(struct: StructType) -> pa.Schema:
    """The Arrow schema of a Spark schema, timestamps in UTC (Spark's session time)."""
    convert: Any = _pandas_types.to_arrow_schema  # its arguments differ between lines
    if "timezone" in _TO_ARROW:  # 4.2 and later
        return convert(struct, timezone="UTC")
    return convert(struct, timestamp_utc=True)


def from_arrow_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of an Arrow schema; a timestamp without a time zone is
    ``TIMESTAMP_NTZ`` on every line (the default differs between them)."""
    return _pandas_types.from_arrow_schema(schema, prefer_timestamp_ntz=True)
