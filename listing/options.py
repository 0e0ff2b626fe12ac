"""ListingOptions: everything about a table that is not the format's own business."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, fields
from typing import Any

from listing.errors import OptionError

MB = 1024 * 1024


@dataclass(frozen=True)
class ListingOptions:
    """File selection and task packing (DataFusion's ``ListingOptions`` + Spark's knobs)."""

    path_glob_filter: str | None = None
    modified_before: dt.datetime | None = None
    modified_after: dt.datetime | None = None
    ignore_missing_files: bool = False
    ignore_corrupt_files: bool = False
    max_partition_bytes: int = 128 * MB
    open_cost_in_bytes: int = 4 * MB
    min_partitions: int | None = None
    batch_size: int = 65_536

    @classmethod
    def names(cls) -> set[str]:
        return {f.name for f in fields(cls)}

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> ListingOptions:
        """Build from Python values or the strings Spark passes; names the bad option."""
        unknown = set(values) - cls.names()
        if unknown:
            raise OptionError(f"unknown listing option(s): {', '.join(sorted(unknown))}")
        parsed: dict[str, Any] = {}
        for f in fields(cls):
            if f.name not in values or values[f.name] is None:
                continue
            raw = values[f.name]
            kind = f.type if isinstance(f.type, str) else str(f.type)
            try:
                if "bool" in kind:
                    parsed[f.name] = _bool(raw)
                elif "int" in kind:
                    parsed[f.name] = _size(raw)
                elif "datetime" in kind:
                    parsed[f.name] = _timestamp(raw)
                else:
                    parsed[f.name] = str(raw)
            except (ValueError, TypeError):
                raise OptionError(f"option {f.name}={raw!r} is not a valid {kind}") from None
        opts = cls(**parsed)
        if opts.max_partition_bytes <= 0 or opts.open_cost_in_bytes < 0 or opts.batch_size <= 0:
            raise OptionError("max_partition_bytes and batch_size must be positive, "
                              "open_cost_in_bytes not negative")
        return opts


def _bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise ValueError(raw)


_UNITS = {"b": 1, "k": 1024, "kb": 1024, "m": MB, "mb": MB, "g": 1024 * MB, "gb": 1024 * MB}


def _size(raw: Any) -> int:
    """An int, or a size such as ``128m`` / ``4MB`` as Spark accepts them."""
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    text = str(raw).strip().lower()
    for unit in sorted(_UNITS, key=len, reverse=True):
        if text.endswith(unit) and text[: -len(unit)].strip().isdigit():
            return int(text[: -len(unit)]) * _UNITS[unit]
    return int(text)


def _timestamp(raw: Any) -> dt.datetime:
    """Spark's ``modifiedBefore`` format (``2026-03-01T10:00:00``), read as UTC."""
    value = raw if isinstance(raw, dt.datetime) else dt.datetime.fromisoformat(str(raw).strip())
    return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
