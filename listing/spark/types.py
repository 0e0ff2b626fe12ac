"""Spark's spelling of table schemas: Arrow schemas as Spark StructTypes and back."""

from __future__ import annotations

from collections.abc import Collection

import pyarrow as pa
from pyspark.sql.types import StructType

from listing.formats.conform import canonical_schema
from listing.spark.compat import from_arrow_schema, to_arrow_schema


def spark_schema(schema: pa.Schema, partition_names: Collection[str] = ()) -> pa.Schema:
    """The Arrow schema Spark's Arrow reader accepts for ``schema``: canonical types
    (string not large_string, timestamp[us, UTC]) and every field nullable. A partition
    column of times (``partition_names``) stays a time: Spark infers ``time(6)`` for such
    directories, while a file's TIME column is read as its integer (Spark refuses those
    unless ``spark.sql.timeType.enabled``)."""
    canonical = canonical_schema(schema)
    if not any(pa.types.is_time(f.type) for f in schema):
        return canonical
    return pa.schema([pa.field(f.name, pa.time64("us")) if f.name in partition_names
                      and pa.types.is_time(given.type) else f
                      for f, given in zip(canonical, schema, strict=True)])


def spark_struct(schema: pa.Schema, partition_names: Collection[str] = ()) -> StructType:
    """The Spark schema for an Arrow schema (``partition_names``: see :func:`spark_schema`)."""
    return from_arrow_schema(spark_schema(schema, partition_names))


def arrow_schema(struct: StructType) -> pa.Schema:
    """The Arrow schema of a Spark schema (timestamps in UTC, as Spark's session time)."""
    return to_arrow_schema(struct)
