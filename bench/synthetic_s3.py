"""A synthetic S3 endpoint on loopback: ``bench.planning``'s synthetic table over HTTP.

    python -m bench.synthetic_s3 --keys 10512000          # prints "READY <endpoint>"

Serves, path-style, one bucket (``--bucket``, default ``bench-planning``) holding two
tables of ``date=…/hour=…/part-K.parquet`` keys, generated as they are listed
(:class:`bench.planning.SyntheticStore`'s key names and order, so the server holds no
key): ``t/`` with ``--keys`` keys and ``warm/`` with one key an hour (8,760), for a
warm-up query that opens none of the measured table's code paths twice.

What it speaks, enough for our lister, s3fs and Spark's S3A connector:

- ListObjectsV2 (``list-type=2``): ``prefix``, ``delimiter`` (``/`` only), ``max-keys``
  (at most 1000, as S3), ``start-after``, ``continuation-token`` (opaque: the last entry
  returned), ``encoding-type=url``; S3's own XML (objects then common prefixes, each
  object as ``Key``, ``LastModified``, ``ETag`` in ``&quot;``, ``Size``, ``StorageClass``);
- HeadBucket, GetBucketLocation, HeadObject and GetObject (``Range`` honoured): every
  key's body is the same small Parquet file of the bench's data schema (``id BIGINT``),
  so schema inference and sampling read a real footer.

Every request is counted by kind (:func:`fixtures.s3.classify`: LIST, GET, HEAD, OTHER);
``GET /_synthetic/counts`` answers the counts as JSON (not an S3 request, not counted).
Threads per connection (``ThreadingHTTPServer``), in its own process (:func:`serve`).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bench.planning import DAY0, DAYS, HOURS, SyntheticStore
from fixtures.s3 import classify

BUCKET = "bench-planning"
TABLE = "t/"
WARM = "warm/"
MODIFIED = "2020-01-01T00:00:00.000Z"
MAX_KEYS = 1000
_NS = "http://s3.amazonaws.com/doc/2006-03-01/"
_KEY = re.compile(r"(?P<root>[a-z]+/)date=(?P<date>\d{4}-\d\d-\d\d)/hour=(?P<hour>\d+)/"
                  r"part-(?P<part>\d+)\.parquet")


def parquet_body() -> bytes:
    """A one-row Parquet file of the bench's data schema (``id`` int64)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = io.BytesIO()
    pq.write_table(pa.table({"id": pa.array([0], pa.int64())}), out)
    return out.getvalue()


class SyntheticBucket:
    """The bucket's keys, generated in key order from the tables' ``SyntheticStore``s."""

    def __init__(self, keys: int) -> None:
        from bench.planning import per_hour

        self.tables = {WARM: SyntheticStore(WARM, 1), TABLE: SyntheticStore(TABLE, per_hour(keys))}
        self.per_hour = {WARM: 1, TABLE: per_hour(keys)}
        self.days = {(DAY0.toordinal() + i) for i in range(DAYS)}

    def exists(self, key: str) -> bool:
        import datetime as dt

        m = _KEY.fullmatch(key)
        if m is None or m["root"] not in self.tables:
            return False
        try:
            day = dt.date.fromisoformat(m["date"]).toordinal()
        except ValueError:
            return False
        return (day in self.days and str(int(m["hour"])) == m["hour"]
                and int(m["hour"]) < HOURS and str(int(m["part"])) == m["part"]
                and int(m["part"]) < self.per_hour[m["root"]])

    def entries(self, prefix: str, delimiter: bool, after: str | None) -> Iterator[str]:
        """Keys and common prefixes (ending in "/") listed after ``after``, in key order.

        A common prefix is listed when a key below it may come after ``after`` (S3 lists
        one holding keys past ``start-after``), except when ``after`` is that prefix (a
        continuation after it)."""
        def keep(common: str) -> bool:
            return after is None or common > after or (after.startswith(common)
                                                         and after != common)

        for root in sorted(self.tables):
            if delimiter and root.startswith(prefix) and len(prefix) < len(root):
                rest = root[len(prefix):]  # the table's root rolls up below the prefix
                common = prefix + rest[:rest.index("/") + 1]
                if keep(common):
                    yield common
                continue
            for entry in self.tables[root].entries(prefix, delimiter, after):
                if entry[-1] != "/" or keep(entry):
                    yield entry


def _amz_quote(text: str) -> str:
    return urllib.parse.quote(text, safe="/-_.~")


def list_xml(bucket: str, entries: Iterator[str], query: dict[str, str], size: int,
             etag: str) -> tuple[bytes, int]:
    """ListObjectsV2's XML body for the page ``entries`` starts, and its key count."""
    max_keys = min(int(query.get("max-keys", MAX_KEYS)), MAX_KEYS)
    page: list[str] = []
    for entry in entries:
        if len(page) == max_keys:
            truncated = True
            break
        page.append(entry)
    else:
        truncated = False
    url = query.get("encoding-type") == "url"
    # generated keys hold only [a-z0-9=/._-]: "=" is all URL encoding changes in them
    enc = (lambda k: k.replace("=", "%3D")) if url else (lambda k: k)
    files = [e for e in page if e[-1] != "/"]
    dirs = [e for e in page if e[-1] == "/"]
    top = [f"<Name>{bucket}</Name>",
           f"<Prefix>{_amz_quote(query.get('prefix', '')) if url else query.get('prefix', '')}"
           "</Prefix>"]
    if "start-after" in query:
        sa = query["start-after"]
        top.append(f"<StartAfter>{_amz_quote(sa) if url else _xml(sa)}</StartAfter>")
    if "continuation-token" in query:
        top.append(f"<ContinuationToken>{query['continuation-token']}</ContinuationToken>")
    if truncated:
        token = urllib.parse.quote(page[-1].encode().hex())
        top.append(f"<NextContinuationToken>{token}</NextContinuationToken>")
    top.append(f"<KeyCount>{len(page)}</KeyCount><MaxKeys>{max_keys}</MaxKeys>")
    if query.get("delimiter"):
        top.append(f"<Delimiter>{query['delimiter']}</Delimiter>")
    if url:
        top.append("<EncodingType>url</EncodingType>")
    top.append(f"<IsTruncated>{'true' if truncated else 'false'}</IsTruncated>")
    tail = (f"</Key><LastModified>{MODIFIED}</LastModified><ETag>&quot;{etag}&quot;</ETag>"
            f"<Size>{size}</Size><StorageClass>STANDARD</StorageClass></Contents>")
    body = "".join((
        '<?xml version="1.0" encoding="UTF-8"?>\n',
        f'<ListBucketResult xmlns="{_NS}">', *top,
        *(f"<Contents><Key>{enc(k)}{tail}" for k in files),
        *(f"<CommonPrefixes><Prefix>{enc(d)}</Prefix></CommonPrefixes>" for d in dirs),
        "</ListBucketResult>"))
    return body.encode(), len(page)


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: SyntheticServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def _parts(self) -> tuple[str | None, str | None, dict[str, str]]:
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        bucket, _, key = path[1:].partition("/")
        return bucket or None, key or None, query

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None,
              head: bool = False) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if "Content-Length" not in (headers or {}):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _error(self, status: int, code: str, head: bool = False) -> None:
        body = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
                f"<Message>{code}</Message></Error>").encode()
        self._send(status, b"" if head else body, {"Content-Type": "application/xml"},
                   head=head)

    def _drain(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self._serve(head=False)

    def do_HEAD(self) -> None:  # noqa: N802
        self._serve(head=True)

    def do_PUT(self) -> None:  # noqa: N802
        self._drain()
        self._count("PUT", *self._parts())
        self._error(403, "AccessDenied")

    def do_POST(self) -> None:  # noqa: N802
        self._drain()
        self._count("POST", *self._parts())
        self._error(403, "AccessDenied")

    def do_DELETE(self) -> None:  # noqa: N802
        self._count("DELETE", *self._parts())
        self._error(403, "AccessDenied")

    def _count(self, method: str, bucket: str | None, key: str | None,
               query: dict[str, str]) -> str:
        kind = str(classify(method, bucket, key, query))
        with self.server.lock:
            self.server.counts[kind] += 1
        return kind

    def _serve(self, head: bool) -> None:
        bucket, key, query = self._parts()
        if bucket == "_synthetic" and key == "counts":
            with self.server.lock:
                body = json.dumps(dict(self.server.counts)).encode()
            self._send(200, body, {"Content-Type": "application/json"}, head=head)
            return
        kind = self._count("HEAD" if head else "GET", bucket, key, query)
        srv = self.server
        if bucket != srv.bucket:
            self._error(404, "NoSuchBucket", head)
        elif key is None and kind == "LIST":
            if query.get("list-type") != "2" or query.get("delimiter", "") not in ("", "/"):
                self._error(501, "NotImplemented", head)
                return
            after = query.get("start-after") or None
            if "continuation-token" in query:
                after = bytes.fromhex(query["continuation-token"]).decode()
            entries = srv.keys.entries(query.get("prefix", ""), bool(query.get("delimiter")),
                                       after)
            body, _ = list_xml(srv.bucket, entries, query, len(srv.body), srv.etag)
            self._send(200, body, {"Content-Type": "application/xml"}, head=head)
        elif key is None and "location" in query:
            self._send(200, (f'<?xml version="1.0" encoding="UTF-8"?>\n'
                             f'<LocationConstraint xmlns="{_NS}"/>').encode(),
                       {"Content-Type": "application/xml"}, head=head)
        elif key is None:
            self._send(200, b"", {"x-amz-bucket-region": "us-east-1"}, head=head)
        elif not srv.keys.exists(key):
            self._error(404, "NoSuchKey", head)
        else:
            self._object(head)

    def _object(self, head: bool) -> None:
        body = self.server.body
        headers = {"ETag": f'"{self.server.etag}"', "Accept-Ranges": "bytes",
                   "Content-Type": "application/octet-stream",
                   "Last-Modified": formatdate(1577836800, usegmt=True)}
        status, part = 200, body
        rng = self.headers.get("Range")
        if rng:
            m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng.strip())
            if m is None or m[1] == m[2] == "":
                self._error(416, "InvalidRange", head)
                return
            if m[1] == "":
                start, end = max(len(body) - int(m[2]), 0), len(body) - 1
            else:
                start = int(m[1])
                end = min(int(m[2]), len(body) - 1) if m[2] else len(body) - 1
            if start >= len(body):
                self._error(416, "InvalidRange", head)
                return
            status, part = 206, body[start:end + 1]
            headers["Content-Range"] = f"bytes {start}-{end}/{len(body)}"
        headers["Content-Length"] = str(len(part))
        self._send(status, part, headers, head=head)


class SyntheticServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, keys: int, bucket: str = BUCKET, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.bucket = bucket
        self.keys = SyntheticBucket(keys)
        self.body = parquet_body()
        self.etag = hashlib.md5(self.body).hexdigest()  # noqa: S324 - S3's ETag
        self.counts: Counter[str] = Counter()
        self.lock = threading.Lock()


class Endpoint:
    """A running server process: its URL, the table's ``s3://`` URL, request counts."""

    def __init__(self, proc: subprocess.Popen[str] | None, url: str, bucket: str) -> None:
        self.proc, self.url, self.bucket = proc, url, bucket

    @property
    def table(self) -> str:
        return f"s3://{self.bucket}/{TABLE.rstrip('/')}"

    @property
    def warm(self) -> str:
        return f"s3://{self.bucket}/{WARM.rstrip('/')}"

    @property
    def storage_options(self) -> dict[str, Any]:
        from fixtures.s3 import dummy_storage_options

        return dummy_storage_options(self.url)

    def counts(self) -> Counter[str]:
        with urllib.request.urlopen(self.url + "/_synthetic/counts", timeout=30) as r:  # noqa: S310
            return Counter(json.loads(r.read()))


@contextlib.contextmanager
def serve(keys: int, bucket: str = BUCKET) -> Iterator[Endpoint]:
    """The server for a table of ``keys`` keys, in its own process, stopped on exit."""
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen(  # noqa: S603
        [sys.executable, "-m", "bench.synthetic_s3", "--keys", str(keys), "--bucket", bucket],
        stdout=subprocess.PIPE, text=True, cwd=root,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(
            filter(None, [str(root), os.environ.get("PYTHONPATH")]))})
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line.startswith("READY "):
            raise RuntimeError(f"synthetic S3 server did not start: {line!r}")
        yield Endpoint(proc, line.split()[1], bucket)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.synthetic_s3", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=10_512_000, help="keys of the table t/")
    ap.add_argument("--bucket", default=BUCKET)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args(argv)
    server = SyntheticServer(args.keys, args.bucket, args.port)
    print(f"READY http://127.0.0.1:{server.server_port}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
