"""One Spark task of a ``listing`` scan: :class:`GroupPartition`, the bytes the JVM reads.

Spark hands the JVM only pickled partitions. Two extension classes read marked text out of
those bytes, so the marks and their contents are a format shared with Java:
``DescribedPythonTable.java`` the scan's summary (``SUMMARY_MARK`` … ``SUMMARY_END``, on the
first partition), ``KeyGroupedScans.java`` a key-grouped partition's value (``KEY_MARK`` …
``SUMMARY_END``, JSON with ASCII escapes so the end mark cannot occur inside). The marks are
:data:`listing.options.registry.PARTITION_MARKS`, which the JVM reads from the registry JSON.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from typing import Any

from listing.file_stream import ReadSpec
from listing.files import FileGroup
from listing.hive import cast_text
from listing.options.registry import PARTITION_MARKS
from listing.spark.compat import InputPartition


@dataclasses.dataclass
class GroupPartition(InputPartition):
    """One Spark task: its file group and the plan's read settings (files excluded)."""

    spec: ReadSpec
    group: FileGroup
    #: on the first partition: the plan's summary for the scan's description in Spark's
    #: plan (read by DescribedPythonTable.java from the pickled bytes, between the marks)
    summary: str
    #: under a key-grouped plan: the group's partition value, between the marks
    #: (read by KeyGroupedScans.java); "" otherwise
    key: str

    def __init__(self, spec: ReadSpec, group: FileGroup, summary: str = "",
                 key: str = "") -> None:
        super().__init__(group.index)
        self.spec = spec
        self.group = group
        self.summary = summary
        self.key = key


#: the marks around a scan's summary in its first pickled partition (DescribedPythonTable)
SUMMARY_MARK, SUMMARY_END = PARTITION_MARKS["summary"], PARTITION_MARKS["end"]
#: the mark before a partition's key in its pickled bytes (KeyGroupedScans.java)
KEY_MARK = PARTITION_MARKS["key"]


def key_marker(group: FileGroup) -> str:
    """The partition value every file of ``group`` holds, marked for KeyGroupedScans.java
    (JSON, ASCII-escaped so the end mark cannot occur inside); "" when a value is of a type
    that class does not read (only strings, integers, booleans, dates and nulls). Strings,
    integers, booleans and nulls are JSON's own; a date is the text :func:`cast_text`
    spells for the JVM (``2024-01-31``, which Java's ``LocalDate.parse`` reads)."""
    values = group.first(1)[0].partition_values
    out: list[Any] = []
    for v in values.values():
        if isinstance(v, dt.datetime) or not (v is None or isinstance(v, (str, int, dt.date))):
            return ""
        out.append(cast_text(v) if isinstance(v, dt.date) else v)
    return KEY_MARK + json.dumps({"names": list(values), "values": out}) + SUMMARY_END


