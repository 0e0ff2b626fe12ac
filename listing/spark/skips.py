"""Files Spark tasks skipped (``ignore_missing_files``/``ignore_corrupt_files``), summed
where the driver sees them.

Python data sources have no metrics of their own, but a task's Python worker sends its
accumulator updates back with its results. Each session's ``listing`` source carries one
accumulator; every task adds its skip counts and the skipped paths; the driver reads the
sum with :func:`skipped_files`. Classic sessions only (Spark Connect has no accumulators).
"""

from __future__ import annotations

from typing import Any

from pyspark.accumulators import Accumulator, AccumulatorParam

#: skipped paths kept in the summary at most (counts stay exact beyond it)
MAX_PATHS = 1000
#: the counters of a task's read it sends, those it counted, when it skipped a file or read
#: one as changed (with the ``paths`` skipped)
SKIPS = ("files_skipped_missing", "files_skipped_corrupt", "files_skipped_empty",
         "files_changed")

_BY_CONTEXT: dict[int, Accumulator[dict[str, Any]]] = {}


class SkipsParam(AccumulatorParam[dict[str, Any]]):
    """Adds counts and concatenates the ``paths`` list, bounded by :data:`MAX_PATHS`."""

    def zero(self, value: dict[str, Any]) -> dict[str, Any]:
        return {}

    def addInPlace(self, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        for key, value in b.items():
            if key == "paths":
                a["paths"] = (a.get("paths", []) + list(value))[:MAX_PATHS]
            else:
                a[key] = a.get(key, 0) + value
        return a


def accumulator(spark: Any) -> Accumulator[dict[str, Any]] | None:
    """The session's skip accumulator (created once per SparkContext), or None without one."""
    try:
        sc = spark.sparkContext
    except Exception:  # noqa: BLE001 - Spark Connect: no SparkContext, no accumulators
        return None
    key = id(sc)
    if key not in _BY_CONTEXT:
        _BY_CONTEXT[key] = sc.accumulator({}, SkipsParam())
    return _BY_CONTEXT[key]


def skipped_files(spark: Any, reset: bool = False) -> dict[str, Any]:
    """Files skipped by Spark tasks of ``listing`` scans in this session since it was
    registered (or the last reset): ``files_skipped_missing``, ``files_skipped_corrupt``
    and up to 1000 ``paths``; ``files_changed``, files read as they were when read rather
    than as listed (a stream's default, ``on_file_change=read``: each is logged with its
    path by the task). ``reset`` starts the sums again."""
    acc = accumulator(spark)
    if acc is None:
        return {}
    value = dict(acc.value)
    if reset:
        acc.value = {}
    return value
