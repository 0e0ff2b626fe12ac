"""The write options as a job takes them: each typed by the option registry (the write
``mode`` with Spark's aliases, ``commit_protocol`` a choice, ``partition_by`` column
names), and ``partition_by`` checked against the data's schema
(:func:`checked_partition_by`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from listing.errors import OptionError
from listing.hive import escape_path_name, is_hidden
from listing.options import WRITE_MODES, registry

MODES = WRITE_MODES
PARTITION_OVERWRITE_MODES = registry.option("partition_overwrite_mode").choices

_PARTITION_TYPES = (pa.types.is_string, pa.types.is_large_string, pa.types.is_integer,
                    pa.types.is_date, pa.types.is_boolean, pa.types.is_decimal,
                    pa.types.is_floating, pa.types.is_timestamp, pa.types.is_null)


def write_mode(value: Any) -> str:
    """``value`` as one of :data:`MODES` (the registry's ``write mode`` kind)."""
    result: str = registry.kind_value("write mode", value, "mode")
    return result


def typed_commit_protocol(value: Any) -> str:
    """``value`` as one of the registry's ``commit_protocol`` choices: ``multipart`` (S3:
    zero-copy, files are multipart uploads the commit completes), ``copy`` (staged files
    copied or renamed into place), ``auto`` (multipart on S3, copy elsewhere)."""
    result: str = registry.option("commit_protocol").parse(value)
    return result


def checked_partition_by(columns: Sequence[str] | str, schema: pa.Schema) -> list[str]:
    """The columns ``columns`` names (a list, or Spark's comma-separated text, typed by
    the registry), each a column of ``schema`` that can be a partition value, named once,
    and not all of them."""
    out: list[str] = []
    for name in registry.option("partition_by").parse(columns):
        if name not in schema.names:
            raise OptionError(f"partition_by column {name!r} is not in the data "
                              f"({', '.join(schema.names)})")
        if name in out:
            raise OptionError(f"partition_by names {name!r} twice")
        if not name or is_hidden(f"{escape_path_name(name)}=", directory=True):
            raise OptionError(f"partition_by column {name!r}: a directory name that starts "
                              "with '.' (or is empty) is hidden from readers (Spark's and "
                              "ours), so the rows would read back as none; rename the column")
        type_ = schema.field(name).type
        if not any(check(type_) for check in _PARTITION_TYPES):
            raise OptionError(f"partition_by column {name!r} has type {type_}, which cannot "
                              "be a partition value (strings, numbers, booleans, dates and "
                              "timestamps can)")
        out.append(name)
    if out and len(out) == len(schema.names):
        raise OptionError("partition_by cannot name every column: the files would hold none")
    return out


def layout_partition_by(layout: Sequence[str], partition_by: Sequence[str] | str,
                        schema: pa.Schema) -> list[str]:
    """The partition columns of a write with a ``layout`` whose columns are ``layout`` (in
    template order): those columns, checked as partition columns; a ``partition_by``
    naming other columns is an :class:`OptionError` naming both options."""
    given = registry.option("partition_by").parse(partition_by)
    if given and sorted(given) != sorted(layout):
        raise OptionError(
            f"option partition_by={list(given)} disagrees with option layout, whose columns "
            f"are {list(layout)}: a layout's columns are the partition columns; drop "
            "partition_by (or give the layout's columns)")
    return checked_partition_by(list(layout), schema)
