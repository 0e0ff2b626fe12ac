"""Zero-copy commits on S3: each file streams as a multipart upload to its final key.

A task opens a multipart upload at the file's final key and sends a part each time
``part_size`` bytes are buffered (memory per open file: at most one part being filled
plus the one being sent), and does not complete it: an upload in progress is no object,
so readers see nothing. The job commit completes the uploads (each object appears whole
when completed; this is how Hadoop's S3A "magic" committer avoids copying every byte);
a rollback aborts them. Uploads left by killed jobs are found by listing the table's
multipart uploads (``listing cleanup URL``). Files may exceed 5 GB (10,000 parts).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterable, Sequence
from typing import Any

from listing.errors import StorageError
from listing.metrics import Counters
from listing.storage.client import s3_request
from listing.storage.errors import s3_error_code

__all__ = ["MIN_PART_SIZE", "PART_SIZE", "MultipartFile", "Upload", "abort", "complete",
           "list_uploads"]

#: bytes per part (S3: at least 5 MiB except the last, at most 10,000 parts)
PART_SIZE = 16 * 1024 * 1024
MIN_PART_SIZE = 5 * 1024 * 1024

#: one upload a task left for the commit: (final path, upload id, [(part number, ETag)])
Upload = tuple[str, str, list[tuple[int, str]]]


def _split(path: str) -> tuple[str, str]:
    bucket, _, key = path.partition("/")
    return bucket, key


class MultipartFile:
    """A write-only file (for ``pyarrow.PythonFile``) that streams to a multipart upload
    of ``path`` and leaves it open for the commit: :meth:`close` sends the last part."""

    def __init__(self, fs: Any, path: str, part_size: int = PART_SIZE,
                 metrics: Counters | None = None) -> None:
        self.fs, self.path, self.part_size = fs, path, part_size
        self.metrics = Counters() if metrics is None else metrics
        self.bucket, self.key = _split(path)
        resp = s3_request(fs, "writing", f"s3://{path}", "create_multipart_upload",
                          Bucket=self.bucket, Key=self.key)
        self.metrics.add("post_requests")
        self.upload_id: str = resp["UploadId"]
        self.parts: list[tuple[int, str]] = []
        self.size = 0
        self.closed = False
        self._buffer = bytearray()

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
        self._buffer += view
        self.size += len(view)
        while len(self._buffer) >= self.part_size:
            with memoryview(self._buffer) as whole:  # one copy of the part, not two
                chunk = bytes(whole[:self.part_size])
            del self._buffer[:self.part_size]
            self._send(chunk)
        return len(view)

    def _send(self, chunk: bytes) -> None:
        number = len(self.parts) + 1
        resp = s3_request(self.fs, "writing", f"s3://{self.path}", "upload_part",
                          Bucket=self.bucket, Key=self.key, UploadId=self.upload_id,
                          PartNumber=number, Body=chunk)
        self.metrics.add("put_requests")
        self.metrics.add("retries", int(resp.get("ResponseMetadata", {}).get("RetryAttempts", 0)))
        self.parts.append((number, resp["ETag"]))

    def close(self) -> None:
        if self.closed:
            return
        if self._buffer or not self.parts:  # the last part (an empty file: one empty part)
            chunk = bytes(self._buffer)
            self._buffer = bytearray()
            self._send(chunk)
        self.closed = True

    def discard(self) -> None:
        """Abort the upload (a task failing before it hands the file to the commit)."""
        self.closed = True
        self._buffer = bytearray()
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
