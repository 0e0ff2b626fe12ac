"""Statistics with a precision, so the planner knows which numbers it may trust."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class Precision(enum.Enum):
    EXACT = "exact"      # read from metadata that describes the data exactly
    INEXACT = "inexact"  # an estimate or a bound (sampled, or after a lossy filter)
    ABSENT = "absent"    # unknown


@dataclass(frozen=True)
class Stat:
    value: Any = None
    precision: Precision = Precision.ABSENT

    @classmethod
    def exact(cls, value: Any) -> Stat:
        return cls(value, Precision.EXACT)

    @classmethod
    def inexact(cls, value: Any) -> Stat:
        return cls(value, Precision.INEXACT)

    def to_inexact(self) -> Stat:
        return self if self.precision is Precision.ABSENT else Stat(self.value, Precision.INEXACT)

    def __str__(self) -> str:
        if self.precision is Precision.ABSENT:
            return "?"
        return f"{self.value}" if self.precision is Precision.EXACT else f"~{self.value}"


@dataclass(frozen=True)
class ColumnStatistics:
    min_value: Stat = Stat()
    max_value: Stat = Stat()
    null_count: Stat = Stat()


@dataclass(frozen=True)
class Statistics:
    num_rows: Stat = Stat()
    total_byte_size: Stat = Stat()
    columns: dict[str, ColumnStatistics] = field(default_factory=dict)

    @classmethod
    def unknown(cls) -> Statistics:
        return cls()
