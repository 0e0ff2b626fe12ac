"""Make every batch match its target schema exactly: the one place types are reconciled.

Files of one table drift (a column added later, int32 written by one job and int64 by
another), and one type has several Arrow spellings (large_string, string_view, dictionary).
Table schemas use one canonical spelling per type (string, timestamp[us], …), which is
also the spelling Spark's Arrow reader accepts. Both problems are solved here, once, for
every format (DataFusion's schema adapter).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

import pyarrow as pa

from listing.errors import FileReadError


def canonical_type(t: pa.DataType) -> pa.DataType:
    """The one Arrow spelling the toolkit (and Spark) uses for values of type ``t``."""
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if (pa.types.is_large_binary(t) or pa.types.is_binary_view(t)
            or pa.types.is_fixed_size_binary(t)):
        return pa.binary()
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz="UTC" if t.tz is not None else None)
    if pa.types.is_date64(t):
        return pa.date32()
    if pa.types.is_dictionary(t):
        return canonical_type(t.value_type)
    if pa.types.is_float16(t):
        return pa.float32()
    if pa.types.is_unsigned_integer(t):
        wider = {8: pa.int16(), 16: pa.int32(), 32: pa.int64()}
        return wider.get(t.bit_width, pa.decimal128(20, 0))
    if pa.types.is_time(t) or pa.types.is_duration(t):
        return pa.int64() if pa.types.is_time(t) else pa.duration("us")
    if pa.types.is_large_list(t) or pa.types.is_list_view(t) or pa.types.is_fixed_size_list(t):
        return pa.list_(canonical_field(t.value_field))
    if pa.types.is_list(t):
        return pa.list_(canonical_field(t.value_field))
    if pa.types.is_struct(t):
        return pa.struct([canonical_field(f) for f in t])
    if pa.types.is_map(t):
        return pa.map_(canonical_type(t.key_type), canonical_type(t.item_type))
    return t


def canonical_field(f: pa.Field) -> pa.Field:
    return pa.field(f.name, canonical_type(f.type), nullable=True)


def canonical_schema(schema: pa.Schema) -> pa.Schema:
    """Schema with every type spelled canonically and every field nullable."""
    return pa.schema([canonical_field(f) for f in schema])


_WIDENING = {
    pa.int8(): (pa.int16(), pa.int32(), pa.int64(), pa.float32(), pa.float64()),
    pa.int16(): (pa.int32(), pa.int64(), pa.float32(), pa.float64()),
    pa.int32(): (pa.int64(), pa.float64()),
    pa.int64(): (pa.float64(),),
    pa.uint8(): (pa.int16(), pa.int32(), pa.int64()),
    pa.uint16(): (pa.int32(), pa.int64()),
    pa.uint32(): (pa.int64(),),
    pa.float16(): (pa.float32(), pa.float64()),
    pa.float32(): (pa.float64(),),
    pa.date32(): (pa.timestamp("us", tz="UTC"),),
    pa.null(): (),
}


def can_widen(source: pa.DataType, target: pa.DataType) -> bool:
    """True when every value of ``source`` converts to ``target`` without loss."""
    if source == target or pa.types.is_null(source):
        return True
    if pa.types.is_dictionary(source):
        return can_widen(source.value_type, target)
    if canonical_type(source) == canonical_type(target):
        return True
    if pa.types.is_decimal(source) and pa.types.is_decimal(target):
        return (target.scale >= source.scale
                and target.precision - target.scale >= source.precision - source.scale)
    if pa.types.is_integer(source) and pa.types.is_decimal(target):
        return target.precision - target.scale >= len(str(2 ** source.bit_width))
    return target in _WIDENING.get(source, ())


def unify_schemas(schemas: list[tuple[str, pa.Schema]]) -> pa.Schema:
    """Union of file schemas (``merge_schema``): columns in first-seen order, types widened;
    an incompatible type names the file and the column."""
    fields: dict[str, pa.Field] = {}
    origin: dict[str, str] = {}
    for path, schema in schemas:
        for f in schema:
            have = fields.get(f.name)
            if have is None:
                fields[f.name], origin[f.name] = f, path
            elif can_widen(have.type, f.type):
                fields[f.name] = f.with_nullable(True)
            elif not can_widen(f.type, have.type):
                raise FileReadError(
                    f"column {f.name!r} is {f.type} in {path} but {have.type} in "
                    f"{origin[f.name]}; the types cannot be reconciled")
    return pa.schema(list(fields.values()))


def conform_batch(batch: pa.RecordBatch, schema: pa.Schema, path: str) -> pa.RecordBatch:
    """``batch`` reshaped to ``schema``: columns in order, missing ones null, types widened.

    An incompatible type is an error naming the file and the column.
    """
    if batch.schema.equals(schema):
        return batch
    if not len(schema):
        return batch.select([])  # keeps the row count, which count(*) needs
    columns = []
    for f in schema:
        idx = batch.schema.get_field_index(f.name)
        if idx < 0:
            columns.append(pa.nulls(batch.num_rows, f.type))
            continue
        arr = batch.column(idx)
        if arr.type != f.type:
            if not can_widen(arr.type, f.type):
                raise FileReadError(f"column {f.name!r} in {path} is {arr.type}, which cannot "
                                    f"be read as the table's {f.type}")
            arr = _cast(arr, f.type, f.name, path)
        columns.append(arr)
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _cast(arr: pa.Array, target: pa.DataType, name: str, path: str) -> pa.Array:
    try:
        if pa.types.is_dictionary(arr.type):
            arr = cast(pa.DictionaryArray, arr).dictionary_decode()
        if pa.types.is_timestamp(arr.type) and pa.types.is_timestamp(target):
            if arr.type.tz is None and target.tz is not None:
                arr = arr.cast(pa.timestamp(arr.type.unit, tz=target.tz))
        return arr.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        raise FileReadError(f"column {name!r} in {path} cannot be cast to {target}: "
                            f"{err}") from None


def partition_arrays(values: Mapping[str, Any], fields: list[pa.Field],
                     num_rows: int) -> list[pa.Array]:
    """Partition values as constant columns of their declared types."""
    return [pa.repeat(pa.scalar(values.get(f.name), f.type), num_rows) for f in fields]


def with_partition_columns(batch: pa.RecordBatch, values: Mapping[str, Any],
                           fields: list[pa.Field], schema: pa.Schema) -> pa.RecordBatch:
    """Append partition columns (constants) and order columns as ``schema`` says."""
    if not len(schema):
        return batch.select([])  # keeps the row count, which count(*) needs
    arrays = dict(zip(batch.schema.names, batch.columns, strict=True))
    arrays.update(zip([f.name for f in fields],
                      partition_arrays(values, fields, batch.num_rows), strict=True))
    return pa.RecordBatch.from_arrays([arrays[n] for n in schema.names], schema=schema)
