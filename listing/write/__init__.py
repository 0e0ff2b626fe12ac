"""Hive-partitioned writes with a commit protocol (DataFusion's ``insert_into`` + demux).

``write_table(url, data, partition_by=[...], mode=...)`` writes a pyarrow Table or an
iterable of RecordBatches as ``<root>/k1=v1/k2=v2/part-<task>-<job id>-c<n>.<ext>``,
spelled exactly as the reader (:mod:`listing.hive`) and Spark read it back: names and values
escaped by :func:`listing.hive.escape_path_name`, null and the empty string as
``__HIVE_DEFAULT_PARTITION__``, dates ``YYYY-MM-DD``, timestamps ``YYYY-MM-DD HH:MM:SS[.f]``
(UTC for zoned values), booleans ``true``/``false``. Partition columns are not stored in
the files; every file of a job has the same schema (the data columns, in input order).

A job runs in three steps (:class:`WriteJob`; Spark runs them as driver, tasks, driver):

1. ``setup()``: finishes or undoes the table's half-done jobs (:meth:`WriteJob.recover`),
   then checks ``mode`` (``error``/``ignore`` look for visible files: one LIST).
2. ``write_task(batches, task)``: every file goes under the hidden staging prefix
   ``<root>/_temporary/<job id>/task-<task>-<attempt>/…``, which readers skip (a ``_``
   segment); returns a :class:`TaskCommit` naming the staged files. Partition values
   are checked first (column names readers hide, NUL bytes, S3 keys over 1,024 bytes).
3. ``commit(tasks)``: publish, then remove, never the reverse. The job's manifest
   (``_temporary/<job id>/_manifest.json``: mode, partitions, the files to publish and
   the old files an overwrite removes) is written before anything visible changes;
   ``_SUCCESS`` is removed; every new file is published under a name no other job's file
   has (the job id is in it); the manifest is marked ``published`` (the commit point);
   the old files are removed; ``_SUCCESS`` is written; the staging prefix is deleted.

Invariants: the table holds exactly the old files, or the old files plus part of the new
ones (before the commit point; a rollback deletes them), or all the new ones plus part of
the old ones (after it; a roll forward removes them). ``abort()``, a failed commit and
``recover`` on a job before its commit point restore the old table (new files deleted,
old files never touched); a job past it cannot be undone and is finished. A failure
after the commit point to write ``_SUCCESS`` or clean the staging prefix is logged and
counted (``cleanup_failures``), never raised: a visible job is a successful one, and a
re-run of its commit changes nothing. ``_SUCCESS`` is present exactly when no job is
between its first visible change and its end.

What a concurrent reader can see, per storage:

- **before the commit** (staging, or an aborted job): nothing of the job, anywhere.
- **during the commit**, on every storage: the old files plus a growing part of the new
  ones, then all the new ones plus a shrinking part of the old ones. Each file appears
  whole (local ``os.replace``; an S3 COPY or PUT is atomic per object), the set does not.
  Readers that must never see a partial job wait for ``_SUCCESS``.
- **a killed job**: the same mix, frozen, with its manifest under ``_temporary/``:
  ``recover`` (or the next write) finishes it.

A manifest read back is untrusted (anyone who writes the table can write one): it is
followed only if this table's writer could have made it (:func:`~listing.write.manifest.
check_manifest`: every
path under the table's root, names carrying the job id), else left in place and reported.
An overwrite relies on the store refusing a second create of its lock: where the store
does not (probed once per bucket), it is refused unless ``overwrite_without_lock``.

``mode="error"``/``"ignore"`` check for existing files at ``setup()``, not atomically with
the commit. Files are encoded by the format's :class:`~listing.formats.base.FileSink`. On
S3 each file streams as a multipart upload to its final key, its parts sent in the
background while the task goes on encoding (memory: a part per open file, plus at most
:data:`~listing.storage.multipart.UPLOAD_PARTS` parts per process being sent); with
``commit_protocol="copy"`` it is built in memory and sent with one PUT (bounded by
``max_records_per_file``); local files are written in place under the staging prefix.

The package, top to bottom (each module imports only from those below it):

- :mod:`~listing.write.api`: :func:`write_table`, :func:`target_partition_by`;
- :mod:`~listing.write.job`: :class:`WriteJob`: its options, ``setup()``, the tasks and
  their partition demux;
- :mod:`~listing.write.recovery`: ``recover`` and ``cleanup`` of a table's half-done jobs;
- :mod:`~listing.write.commit`: the commit protocol of one job (publish, roll forward, roll
  back, abort);
- :mod:`~listing.write.manifest` (a job's manifest and the rules it must meet) and
  :mod:`~listing.write.lock` (the overwrite lock);
- :mod:`~listing.write.paths` (the hidden layout, partition folders, path checks),
  :mod:`~listing.write.results` (the values that travel) and :mod:`~listing.write.options`
  (the write options as the registry types them, partition_by checked against the data).
"""

from __future__ import annotations

from listing.hive import partition_path
from listing.write.api import target_partition_by, write_table
from listing.write.job import WriteJob
from listing.write.lock import LOCK_FILE as LOCK_FILE  # for `listing recover`'s report
from listing.write.manifest import MAX_MANIFEST_BYTES as MAX_MANIFEST_BYTES
from listing.write.manifest import ManifestRefusedError
from listing.write.options import MODES, PARTITION_OVERWRITE_MODES
from listing.write.results import StagedFile, TaskCommit, WriteResult

__all__ = ["MODES", "PARTITION_OVERWRITE_MODES", "ManifestRefusedError", "StagedFile", "TaskCommit",
           "WriteJob", "WriteResult", "partition_path", "target_partition_by", "write_table"]
