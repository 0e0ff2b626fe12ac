"""The values that travel between a job's steps: the files a task staged
(:class:`StagedFile`), a task's commit message (:class:`TaskCommit`, what Spark ships from
a task to the driver) and a committed job's :class:`WriteResult`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from listing.metrics import Counters, CountersView

#: the counters a :class:`WriteResult` shows, 0 when not counted (others once counted)
WRITE_METRICS = ("files_written", "rows_written", "bytes_written", "files_committed",
                 "files_deleted", "staged_deleted", "put_requests", "copy_requests",
                 "delete_requests", "list_requests", "get_requests", "post_requests",
                 "renames", "retries", "cleanup_failures", "jobs_recovered",
                 "manifests_refused", "locks_refused")


@dataclass(frozen=True)
class StagedFile:
    """One file a task wrote under the staging prefix, and where commit moves it."""

    staged: str  # fsspec path (no protocol) under <root>/_temporary/<job id>/; "" if uploaded
    final: str  # fsspec path in the table
    partition: str  # "k1=v1/k2=v2/" ("" for an unpartitioned table)
    rows: int
    size: int
    upload_id: str = ""  # a multipart upload to ``final`` the commit completes (zero-copy)
    parts: tuple[tuple[int, str], ...] = ()  # its (part number, ETag)


@dataclass(frozen=True)
class StagedUpload:
    """One finished file a task's engine wrote on local disk (Spark's Parquet writer), to be
    uploaded as the job's file of its partition: the local path, its rows, and its partition
    values (column name, typed value), in the job's ``partition_by`` order."""

    local: str
    rows: int
    values: tuple[tuple[str, Any], ...]


@dataclass(frozen=True)
class TaskCommit:
    """What one task hands to the job commit (Spark's commit message): its staged files
    and what writing them cost."""

    task: int
    attempt: int
    files: tuple[StagedFile, ...]
    metrics: Counters = field(default_factory=Counters)


@dataclass
class WriteResult:
    """A committed job: its files (URLs), the partitions it wrote, rows and metrics.

    ``metrics`` counts files and rows, and the requests sent for them on S3 (``put_requests``
    data files and ``_SUCCESS``, ``copy_requests`` moves, ``delete_requests``
    DeleteObjects batches, ``list_requests`` listing pages, ``retries``); on local files
    ``renames`` and deleted files."""

    url: str
    job_id: str
    mode: str
    files: list[str]
    partitions: list[str]
    rows: int
    metrics: dict[str, int]


def shown(metrics: Counters) -> dict[str, int]:
    """A job's counts as its :class:`WriteResult` holds them: a plain dict of every name of
    :data:`WRITE_METRICS` (0 when not counted) and any other counted."""
    return dict(CountersView(metrics, WRITE_METRICS))
