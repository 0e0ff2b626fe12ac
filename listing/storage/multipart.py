"""Zero-copy commits on S3: each file streams as a multipart upload to its final key.

A task opens a multipart upload at the file's final key and sends a part each time
``part_size`` bytes are buffered, and does not complete it: an upload in progress is no
object, so readers see nothing. The job commit completes the uploads (each object appears
whole when completed; this is how Hadoop's S3A "magic" committer avoids copying every
byte); a rollback aborts them. Uploads left by killed jobs are found by listing the table's
multipart uploads (``listing cleanup URL``). Files may exceed 5 GB (10,000 parts).

Parts are sent in the background, on the filesystem's event loop, while the task goes on
encoding (pyarrow encodes without the GIL): the upload of a file is overlapped with the
encoding of the next row groups and with the uploads of the task's other files. Memory
is bounded: each open file fills one part, and at most :data:`UPLOAD_PARTS` filled parts
per process are held for sending (queued or in flight; a writer filling one more waits
for a slot). A part that fails fails its file's :meth:`MultipartFile.wait`, which first
lets every part of the file in flight end, so nothing of a failed write is still being
sent once the error is raised.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from typing import Any

from listing.errors import StorageError
from listing.metrics import Counters
from listing.storage.client import s3_request, s3_request_future
from listing.storage.errors import retry_attempts, s3_error_code

__all__ = ["MIN_PART_SIZE", "PART_SIZE", "UPLOAD_PARTS", "MultipartFile", "Upload", "abort",
           "complete", "list_uploads"]

#: bytes per part (S3: at least 5 MiB except the last, at most 10,000 parts)
PART_SIZE = 16 * 1024 * 1024
MIN_PART_SIZE = 5 * 1024 * 1024
#: filled parts a process holds for sending at once, every file's (queued or in flight)
UPLOAD_PARTS = 4

#: one upload a task left for the commit: (final path, upload id, [(part number, ETag)])
Upload = tuple[str, str, list[tuple[int, str]]]

_SLOTS: dict[tuple[int, int], threading.BoundedSemaphore] = {}  # by (process, bound)
_SLOTS_LOCK = threading.Lock()


def upload_slots() -> threading.BoundedSemaphore:
    """This process's slots for parts being sent (:data:`UPLOAD_PARTS` of them; a forked
    child gets its own)."""
    key = (os.getpid(), UPLOAD_PARTS)
    with _SLOTS_LOCK:
        slots = _SLOTS.get(key)
        if slots is None:
            slots = _SLOTS[key] = threading.BoundedSemaphore(UPLOAD_PARTS)
        return slots


def _split(path: str) -> tuple[str, str]:
    bucket, _, key = path.partition("/")
    return bucket, key


class MultipartFile:
    """A write-only file (for ``pyarrow.PythonFile``) that streams to a multipart upload
    of ``path`` and leaves it open for the commit: :meth:`close` sends the last part,
    :meth:`wait` waits for every part and raises the first failure."""

    def __init__(self, fs: Any, path: str, part_size: int = PART_SIZE,
                 metrics: Counters | None = None) -> None:
        self.fs, self.path, self.part_size = fs, path, part_size
        self.metrics = Counters() if metrics is None else metrics
        self.bucket, self.key = _split(path)
        self._created = s3_request_future(fs, "writing", f"s3://{path}",
                                          "create_multipart_upload",
                                          Bucket=self.bucket, Key=self.key)
        self.metrics.add("post_requests")
        self.parts: list[tuple[int, str]] = []
        self._sending: list[tuple[int, Future[dict[str, Any]]]] = []
        self._sent = 0  # parts handed to the event loop
        self.size = 0
        self.closed = False
        self._dropped = False  # the file is dropped: nothing more is sent
        self._buffer = bytearray()

    @property
    def upload_id(self) -> str:
        """The upload's id (waits for its creation; raises if it failed)."""
        upload_id: str = self._created.result()["UploadId"]
        return upload_id

    def writable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def tell(self) -> int:
        return self.size

    def flush(self) -> None:
        """Parts are sent as they fill; nothing else to flush."""

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        if self._dropped:
            return len(view)
        self._buffer += view
        self.size += len(view)
        while len(self._buffer) >= self.part_size:
            chunk = self._buffer  # handed over whole: only the bytes past the part copied
            with memoryview(chunk) as whole:
                self._buffer = bytearray(whole[self.part_size:])
            del chunk[self.part_size:]
            self._send(chunk)
        return len(view)

    def _send(self, chunk: bytearray) -> None:
        """Hand ``chunk`` to the event loop as the next part, once a slot is free; a
        failure of an earlier part of this file is raised here."""
        self._reap()
        upload_id = self.upload_id
        slots = upload_slots()
        slots.acquire()
        self._sent += 1
        try:
            future = s3_request_future(self.fs, "writing", f"s3://{self.path}",
                                       "upload_part", Bucket=self.bucket, Key=self.key,
                                       UploadId=upload_id, PartNumber=self._sent, Body=chunk)
        except BaseException:
            slots.release()
            raise
        future.add_done_callback(lambda _: slots.release())
        self.metrics.add("put_requests")
        self._sending.append((self._sent, future))

    def _reap(self, block: bool = False) -> None:
        """Record the parts sent (in order, up to the first still in flight; with
        ``block``, all of them); raise the first failure."""
        while self._sending and (block or self._sending[0][1].done()):
            number, future = self._sending.pop(0)
            resp = future.result()
            self.metrics.add("retries", retry_attempts(resp))
            self.parts.append((number, resp["ETag"]))

    def close(self) -> None:
        """Send the last part (an empty file: one empty part); does not wait for it."""
        if self.closed:
            return
        self.closed = True
        if self._buffer or not self._sent:
            chunk, self._buffer = self._buffer, bytearray()
            self._send(chunk)

    def wait(self) -> list[tuple[int, str]]:
        """Wait for every part sent; the parts ``(number, ETag)``, or the first failure
        raised once no part of the file is in flight."""
        try:
            self._reap(block=True)
        except BaseException:
            self.drain()
            raise
        return list(self.parts)

    def drop(self) -> None:
        """Send nothing more, and wait until no part of this file is in flight (a failed
        task: its upload is aborted by the job)."""
        self.closed = self._dropped = True
        self._buffer = bytearray()
        self.drain()

    def drain(self) -> None:
        """Wait until no request of this file is in flight, its creation included (so that
        a listing of the table's uploads finds it; failures ignored)."""
        for future in [self._created, *(f for _, f in self._sending)]:
            try:
                future.result()
            except Exception:  # noqa: BLE001, S110 - dropped with the file
                pass
        self._sending.clear()

    def discard(self) -> None:
        """Abort the upload (a task failing before it hands the file to the commit)."""
        self.drop()
        abort(self.fs, [(self.path, self.upload_id, [])])


def complete(fs: Any, uploads: Sequence[Upload], threads: int = 16) -> int:
    """Complete each upload (its object appears whole); idempotent: an upload already
    completed, whose object exists, counts as done. Returns the requests sent."""
    from concurrent.futures import ThreadPoolExecutor

    def one(upload: Upload) -> int:
        path, upload_id, parts = upload
        bucket, key = _split(path)
        try:
            s3_request(fs, "committing", f"s3://{path}", "complete_multipart_upload",
                       Bucket=bucket, Key=key, UploadId=upload_id,
                       MultipartUpload={"Parts": [{"PartNumber": n, "ETag": e}
                                                  for n, e in parts]})
            return 1
        except StorageError as err:
            if s3_error_code(err) != "NoSuchUpload" or not _exists(fs, path):
                raise
            return 2

    with ThreadPoolExecutor(threads) as pool:
        return sum(pool.map(one, uploads))


def _exists(fs: Any, path: str) -> bool:
    bucket, key = _split(path)
    try:
        s3_request(fs, "checking", f"s3://{path}", "head_object", Bucket=bucket, Key=key)
    except StorageError as err:
        if s3_error_code(err) in ("404", "NoSuchKey", "NotFound"):
            return False
        raise
    return True


def abort(fs: Any, uploads: Iterable[Upload]) -> int:
    """Abort each upload (an upload already completed or aborted is skipped). Returns the
    requests sent."""
    sent = 0
    for path, upload_id, _ in uploads:
        bucket, key = _split(path)
        sent += 1
        try:
            s3_request(fs, "aborting the upload of", f"s3://{path}",
                       "abort_multipart_upload", Bucket=bucket, Key=key, UploadId=upload_id)
        except StorageError as err:
            if s3_error_code(err) not in ("NoSuchUpload", "404"):
                raise
    return sent


def list_uploads(fs: Any, prefix: str) -> list[tuple[str, str, float]]:
    """The multipart uploads in progress under ``prefix`` (``bucket/key prefix``):
    ``(path, upload id, age in seconds)``."""
    bucket, key = _split(prefix)
    out: list[tuple[str, str, float]] = []
    kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": key}
    now = time.time()
    while True:
        resp = s3_request(fs, "listing the uploads under", f"s3://{prefix}",
                          "list_multipart_uploads", **kwargs)
        for upload in resp.get("Uploads", []) or []:
            started = upload.get("Initiated")
            age = now - started.timestamp() if isinstance(started, dt.datetime) else now
            out.append((f"{bucket}/{upload['Key']}", upload["UploadId"], age))
        if not resp.get("IsTruncated"):
            return out
        kwargs["KeyMarker"] = resp.get("NextKeyMarker")
        kwargs["UploadIdMarker"] = resp.get("NextUploadIdMarker")
