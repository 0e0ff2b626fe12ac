"""The write options still parsed here rather than in :mod:`listing.options`: the write
``mode`` (with Spark's aliases), ``commit_protocol`` and ``partition_by`` (checked against
the data's schema). One place, so that moving them to the option registry is one change.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from listing.errors import OptionError
from listing.hive import escape_path_name, is_hidden
from listing.options import registry

MODES = ("append", "overwrite", "error", "ignore")
PARTITION_OVERWRITE_MODES = registry.option("partition_overwrite_mode").choices
#: how a job publishes its files: ``multipart`` (S3: zero-copy, files are multipart
#: uploads the commit completes), ``copy`` (staged files copied or renamed into place),
#: ``auto`` (multipart on S3, copy elsewhere)
COMMIT_PROTOCOLS = ("auto", "multipart", "copy")

_PARTITION_TYPES = (pa.types.is_string, pa.types.is_large_string, pa.types.is_integer,
                    pa.types.is_date, pa.types.is_boolean, pa.types.is_decimal,
                    pa.types.is_floating, pa.types.is_timestamp, pa.types.is_null)


def _choice(name: str, value: str, allowed: Sequence[str]) -> str:
    text = str(value).strip().lower()
    text = {"errorifexists": "error", "default": "error"}.get(text, text) \
        if name == "mode" else text
    if text not in allowed:
        raise OptionError(f"{name}={value!r} must be one of {', '.join(allowed)}")
    return text


def _partition_by(columns: Sequence[str] | str, schema: pa.Schema) -> list[str]:
    if isinstance(columns, str):
        columns = [c.strip() for c in columns.split(",") if c.strip()]
    out: list[str] = []
    for name in columns:
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
