"""How well a filter can be applied below Spark (DataFusion's TableProviderFilterPushDown)."""

from __future__ import annotations

import enum


class Pushdown(enum.Enum):
    EXACT = "exact"              # applied fully while planning: Spark need not re-check
    INEXACT = "inexact"          # used to skip data (row groups); Spark must re-check rows
    UNSUPPORTED = "unsupported"  # not used below Spark at all

    def __repr__(self) -> str:
        return f"Pushdown.{self.name}"
