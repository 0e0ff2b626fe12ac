"""A task's rows for partitions beyond its open files, held on local disk until those files
are closed, then read back a partition at a time.

A task keeps at most ``MAX_OPEN_FILES`` files open (each holds a part or a row group in
memory). Rows of any further partition go to one Arrow IPC file in a local temporary folder
(``SPARK_LOCAL_DIRS``' first folder in a Spark worker, else the system's), in arrival order;
once the open files are closed, each spilled partition's rows are read back, memory-mapped,
and written to its own file. So a partition gets one file per task however its rows are
interleaved, as with Spark's own writer, which sorts a task's rows by partition. Invariant:
every row added is read back exactly once, in the order added within its partition.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pyarrow as pa

__all__ = ["PartitionSpill", "local_dir"]


def local_dir() -> str | None:
    """Where a spill goes: the first of Spark's local folders when this is a Spark worker
    (``SPARK_LOCAL_DIRS``), else None (the system's temporary folder)."""
    first = os.environ.get("SPARK_LOCAL_DIRS", "").split(",")[0]
    return first if first and os.path.isdir(first) else None


class PartitionSpill:
    """Rows by partition, appended to one local IPC file; nothing on disk until the first
    :meth:`add`. Use as a context manager: the folder goes on leaving."""

    def __init__(self) -> None:
        self._folder: str | None = None
        self._sink: pa.NativeFile | None = None
        self._writer: pa.ipc.RecordBatchFileWriter | None = None
        self._batches: dict[str, list[int]] = {}  # partition -> its batches, in order
        self._count = 0
        self.rows = 0

    def __contains__(self, partition: object) -> bool:
        return partition in self._batches

    def __bool__(self) -> bool:
        return bool(self._batches)

    def add(self, partition: str, rows: pa.RecordBatch) -> None:
        """Keep ``rows`` of ``partition`` (after those added before)."""
        if self._writer is None:
            self._folder = tempfile.mkdtemp(prefix="listing-spill-", dir=local_dir())
            self._sink = pa.OSFile(os.path.join(self._folder, "rows.arrow"), "wb")
            self._writer = pa.ipc.new_file(self._sink, rows.schema)
        self._writer.write_batch(rows)
        self._batches.setdefault(partition, []).append(self._count)
        self._count += 1
        self.rows += rows.num_rows

    def partitions(self) -> Iterator[tuple[str, Iterator[pa.RecordBatch]]]:
        """Each spilled partition and its rows, in the order partitions were first added
        (no more :meth:`add`)."""
        if self._writer is None or self._folder is None:
            return
        self._close_writer()
        with pa.memory_map(os.path.join(self._folder, "rows.arrow")) as source:
            reader = pa.ipc.open_file(source)
            for partition, ids in self._batches.items():
                yield partition, (reader.get_batch(i) for i in ids)

    def _close_writer(self) -> None:
        if self._writer is not None:
            writer, self._writer = self._writer, None
            writer.close()
        if self._sink is not None:
            sink, self._sink = self._sink, None
            sink.close()

    def close(self) -> None:
        """Remove what was spilled."""
        try:
            self._close_writer()
        finally:
            if self._folder is not None:
                shutil.rmtree(self._folder, ignore_errors=True)
                self._folder = None

    def __enter__(self) -> PartitionSpill:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
