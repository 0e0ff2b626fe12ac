"""A model of S3 latency, used only by bench/: ListObjectsV2 over loopback with a fixed delay.

moto spends about 0.25 s of CPU per 1 000-key page in one process, so on 2 cores it shows
what a listing costs in CPU, not what waiting on a store costs, and concurrent requests
cannot overlap there. This responder answers ``GET /<bucket>?list-type=2`` (``prefix``,
``delimiter``, ``start-after``, ``continuation-token``, ``max-keys`` up to 1000,
``encoding-type=url``) from a sorted in-memory key index, after sleeping ``delay`` seconds
(30 ms by default, the order of a LIST round trip to S3 from the same region); each
request is served on its own thread, so concurrent requests wait concurrently, as on S3.
Nothing else is implemented (no GET of objects, no signatures checked): it is enough for
planning, not for reading. Point s3fs at it with ``storage_options()``.

It also measures (``python -m bench.latency measure``, one JSON line per plan, used by
:mod:`bench.listing_bench`): our planning of a few queries, in this process, against a
given endpoint, for each ``max_concurrent_requests``.
"""

from __future__ import annotations

import argparse
import base64
import bisect
import json
import statistics
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from xml.sax.saxutils import escape

LABEL = "a model of S3 latency, used only by bench/"
MAX_KEYS = 1000


class KeyIndex:
    """Sorted keys per bucket, with their sizes, and each key's ``<Contents>`` block
    rendered once (plain and URL-encoded): the responder shares the benchmark's cores, so
    its own CPU per page is kept small, as S3's costs the client nothing."""

    def __init__(self) -> None:
        self.keys: dict[str, list[str]] = {}
        self.sizes: dict[str, dict[str, int]] = {}
        self._blocks: dict[tuple[str, bool], list[str]] = {}

    def put(self, bucket: str, items: dict[str, int]) -> None:
        sizes = self.sizes.setdefault(bucket, {})
        sizes.update(items)
        self.keys[bucket] = sorted(sizes)
        for url in (False, True):
            self._blocks[bucket, url] = [_contents(k, sizes[k], url) for k in self.keys[bucket]]

    def blocks(self, bucket: str, url: bool, files: range | list[int]) -> str:
        """The rendered ``<Contents>`` blocks of the keys at ``files`` of ``bucket``."""
        rendered = self._blocks.get((bucket, url), [])
        if isinstance(files, range):
            return "".join(rendered[files.start:files.stop])
        return "".join(rendered[i] for i in files)

    def list(self, bucket: str, prefix: str, delimiter: str, after: str,
             max_keys: int) -> tuple[range | list[int], list[str], bool, str]:
        """(the page's keys as positions in the bucket's sorted keys, common prefixes,
        truncated, last entry)."""
        keys = self.keys.get(bucket, [])
        i = max(bisect.bisect_left(keys, prefix), bisect.bisect_right(keys, after))
        if not delimiter:  # the keys under a prefix are consecutive
            end = (bisect.bisect_left(keys, prefix[:-1] + chr(ord(prefix[-1]) + 1))
                   if prefix else len(keys))
            page = range(i, max(i, min(end, i + max_keys)))
            return page, [], page.stop < end, keys[page.stop - 1] if page else ""
        files: list[int] = []
        dirs: list[str] = []
        last = ""
        while i < len(keys) and keys[i].startswith(prefix):
            if len(files) + len(dirs) >= max_keys:
                return files, dirs, True, last
            key = keys[i]
            cut = key.find(delimiter, len(prefix))
            if cut >= 0:
                common = key[:cut + len(delimiter)]
                dirs.append(common)
                last = common
                # past every key below this common prefix
                i = bisect.bisect_left(keys, common[:-1] + chr(ord(common[-1]) + 1))
            else:
                files.append(i)
                last = key
                i += 1
        return files, dirs, False, last


def _contents(key: str, size: int, url: bool) -> str:
    shown = escape(urllib.parse.quote(key, safe="/") if url else key)
    return (f"<Contents><Key>{shown}</Key>"
            "<LastModified>2025-01-01T00:00:00.000Z</LastModified>"
            f"<ETag>&quot;{abs(hash(key)):032x}&quot;</ETag>"
            f"<Size>{size}</Size><StorageClass>STANDARD</StorageClass></Contents>")


class LatencyServer:
    """The responder on a free loopback port; ``requests`` counts what it answered."""

    def __init__(self, delay: float = 0.030) -> None:
        self.delay = delay
        self.index = KeyIndex()
        self.requests = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def __enter__(self) -> LatencyServer:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self._server = server
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def endpoint_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def storage_options(self) -> dict[str, Any]:
        """s3fs options for this responder (dummy credentials: nothing is checked)."""
        return {"endpoint_url": self.endpoint_url, "key": "latency", "secret": "model-secret",
                "client_kwargs": {"region_name": "us-east-1"}}

    def count(self) -> int:
        with self._lock:
            self.requests += 1
            return self.requests


def _handler(model: LatencyServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def do_HEAD(self) -> None:  # noqa: N802 - http.server's naming
            self._send(404, b"")

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            url = urllib.parse.urlsplit(self.path)
            q = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
            bucket = url.path.strip("/").split("/", 1)[0]
            if q.get("list-type") != "2" or "/" in url.path.strip("/"):
                self._send(501, _error("NotImplemented", "only ListObjectsV2 is modelled"))
                return
            model.count()
            time.sleep(model.delay)
            self._send(200, list_response(model.index, bucket, q))

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

    return Handler


def _error(code: str, message: str) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
            f"<Message>{escape(message)}</Message></Error>").encode()


def list_response(index: KeyIndex, bucket: str, q: dict[str, str]) -> bytes:
    """The ListObjectsV2 XML body for query parameters ``q``."""
    prefix, delimiter = q.get("prefix", ""), q.get("delimiter", "")
    max_keys = min(int(q.get("max-keys") or MAX_KEYS), MAX_KEYS)
    after = q.get("start-after", "")
    token = q.get("continuation-token")
    if token:
        after = max(after, base64.urlsafe_b64decode(token.encode()).decode())
    files, dirs, truncated, last = index.list(bucket, prefix, delimiter, after, max_keys)
    url = q.get("encoding-type") == "url"

    def enc(text: str) -> str:
        return escape(urllib.parse.quote(text, safe="/") if url else text)

    parts = ['<?xml version="1.0" encoding="UTF-8"?>',
             '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
             f"<Name>{escape(bucket)}</Name><Prefix>{enc(prefix)}</Prefix>",
             f"<KeyCount>{len(files) + len(dirs)}</KeyCount><MaxKeys>{max_keys}</MaxKeys>",
             f"<IsTruncated>{'true' if truncated else 'false'}</IsTruncated>"]
    if delimiter:
        parts.append(f"<Delimiter>{enc(delimiter)}</Delimiter>")
    if url:
        parts.append("<EncodingType>url</EncodingType>")
    if token:
        parts.append(f"<ContinuationToken>{escape(token)}</ContinuationToken>")
    if q.get("start-after"):
        parts.append(f"<StartAfter>{enc(q['start-after'])}</StartAfter>")
    if truncated:
        # the next page starts after the last entry; past a common prefix, that skips
        # every key below it (an index key > any key below the prefix)
        resume = last[:-1] + chr(ord(last[-1]) + 1) if last in dirs else last
        nxt = base64.urlsafe_b64encode(resume.encode()).decode()
        parts.append(f"<NextContinuationToken>{nxt}</NextContinuationToken>")
    parts.append(index.blocks(bucket, url, files))
    for common in dirs:
        parts.append(f"<CommonPrefixes><Prefix>{enc(common)}</Prefix></CommonPrefixes>")
    parts.append("</ListBucketResult>")
    return "".join(parts).encode()


# --- measuring our planning (run in its own process) ---------------------------------------

def measure(table: dict[str, Any], queries: Iterable[dict[str, Any]], modes: Iterable[int],
            runs: int) -> list[dict[str, Any]]:
    """Per query and ``max_concurrent_requests``: median open()+scan() seconds over
    ``runs`` runs after a warm-up, LIST requests and files planned (checked equal across
    modes by the caller)."""
    from bench.peers import _data_schema, _pa_type, to_sql
    from listing import ListingTable

    out = []
    for q in queries:
        for mode in modes:
            times, plan = [], None
            for i in range(runs + 1):
                t0 = time.perf_counter()
                tab = ListingTable.open(
                    table["url"], storage_options=table["storage_options"],
                    partition_cols=[(n, _pa_type(t)) for n, t in table["partitions"]],
                    schema=_data_schema(table), max_concurrent_requests=mode)
                plan = tab.scan(where=to_sql(q["conjuncts"]))
                if i:
                    times.append(time.perf_counter() - t0)
            assert plan is not None
            out.append({"query": q["name"], "max_concurrent_requests": mode,
                        "plan_s": statistics.median(times),
                        "list_requests": plan.metrics["list_requests"],
                        "files": len(plan.files),
                        "first_files": [f.path for f in plan.files[:3]],
                        "steps": plan.listing_plan})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.latency", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="plan queries given as JSON on stdin; JSON out")
    m.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    if args.cmd == "measure":
        cmd = json.loads(sys.stdin.read())
        rows = measure(cmd["table"], cmd["queries"], cmd["modes"], args.runs)
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
