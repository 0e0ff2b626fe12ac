"""Spark's spelling of table schemas: Arrow schemas as Spark StructTypes and back."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.types import StructType

from listing.formats.conform import canonical_schema
from listing.spark.compat import from_arrow_schema, to_arrow_schema


def spark_schema(schema: pa.Schema) -> pa.Schema:
    """The Arrow schema Spark's Arrow reader accepts for ``schema``: canonical types
    (string not large_string, timestamp[us, UTC]) and every field nullable."""
    return canonical_schema(schema)


def spark_struct(schema: pa.Schema) -> StructType:
    """The Spark schema for an Arrow schema."""
    return from_arrow_schema(spark_schema(schema))


def arrow_schema(struct: StructType) -> pa.Schema:
    """The Arrow schema of a Spark schema (timestamps in UTC, as Spark's session time)."""
    return to_arrow_schema(struct)
