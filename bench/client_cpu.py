"""The client's CPU per key: the measurements behind the per-key choices in the code.

    python -m bench.client_cpu            # ~1 min on 2 cores
    python -m bench.client_cpu --quick    # smaller tables, fewer repeats

Each row times one choice against what it replaced, in this process, median of repeats:

- a 1,000-key ListObjectsV2 page parsed by botocore's parser, by ours
  (``listing.storage.s3_pages``) as dicts and as columns, in S3's own form and
  pretty-printed, and the ElementTree parse botocore's check for an embedded error costs;
- an S3 time parsed by botocore's default (dateutil) and by ``fast_timestamp``
  (``listing.storage.client``);
- a listed key made as ``ObjectMeta(...)``, by ``tuple.__new__``, and as a frozen dataclass
  (``listing.storage.lister``); a ``PartitionedFile`` by its ``__init__`` and by
  ``whole_file`` (``listing.files``);
- a plan of a local table with the collector paused, as ``ListingTable.scan``
  does, and running (``listing.gc_pause``), beside a heap of other objects as a Spark
  driver's;
- a CSV file's rows counted converting every column and the first as text
  (``formats/csv.py``);
- a streaming offset's remembered keys as plain JSON and packed (``listing.discovery``).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import gc
import io
import json
import statistics
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import Any
from unittest import mock

PAGE_KEYS = 1000
_HEAD = ('<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult '
         'xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>bucket</Name><Prefix>t/'
         '</Prefix><KeyCount>1000</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>true'
         '</IsTruncated><NextContinuationToken>next</NextContinuationToken>')


def per_call(fn: Callable[[], Any], repeats: int, number: int = 1) -> float:
    """Median seconds of one ``fn()`` over ``repeats`` timings of ``number`` calls."""
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def list_page(pretty: bool) -> bytes:
    """A 1,000-key page as S3 writes it (no whitespace, ETags in escaped quotes), or
    pretty-printed."""
    w = "\n  " if pretty else ""
    items = [f"{w}<Contents>{w}<Key>t/date=2026-03-{1 + i // 100:02d}/hour={i % 24:02d}/"
             f"part-{i:05d}.parquet</Key>{w}<LastModified>2026-03-01T10:00:0{i % 10}.000Z"
             f"</LastModified>{w}<ETag>&quot;{i:032x}&quot;</ETag>{w}<Size>{1000 + i}</Size>"
             f"{w}<StorageClass>STANDARD</StorageClass>{w}</Contents>" for i in range(PAGE_KEYS)]
    return (_HEAD + "".join(items) + "</ListBucketResult>").encode()


def page_rows(repeats: int) -> list[tuple[str, float, str]]:
    import botocore.session
    from botocore.parsers import create_parser

    from listing.storage.s3_pages import parse_list_page

    shape = (botocore.session.get_session().get_service_model("s3")
             .operation_model("ListObjectsV2").output_shape)
    parser = create_parser("rest-xml")
    own, pretty = list_page(False), list_page(True)
    assert parse_list_page(own, columns=True) and parse_list_page(pretty, columns=True)
    return [
        ("botocore's parser", per_call(lambda: parser.parse(
            {"status_code": 200, "headers": {}, "body": own}, shape), repeats), "ms"),
        ("ElementTree parse (botocore's embedded-error check)",
         per_call(lambda: ET.fromstring(own), repeats), "ms"),
        ("ours, as dicts", per_call(lambda: parse_list_page(own), repeats), "ms"),
        ("ours, as columns (S3's own form)",
         per_call(lambda: parse_list_page(own, columns=True), repeats), "ms"),
        ("ours, as columns (pretty-printed)",
         per_call(lambda: parse_list_page(pretty, columns=True), repeats), "ms"),
    ]


def time_rows(repeats: int) -> list[tuple[str, float, str]]:
    from botocore.utils import parse_timestamp

    from listing.storage.client import fast_timestamp

    iso, http = "2026-03-01T10:00:00.000Z", "Sun, 01 Mar 2026 10:00:00 GMT"
    return [(f"{name}, {form}", per_call(lambda f=fn, v=value: f(v), repeats, 200), "µs")
            for form, value in (("ISO 8601", iso), ("HTTP date", http))
            for name, fn in (("botocore's default", parse_timestamp),
                             ("fast_timestamp", fast_timestamp))]


@dataclasses.dataclass(frozen=True, slots=True)
class _FrozenMeta:
    path: str
    size: int
    last_modified: dt.datetime | None = None
    etag: str | None = None


def record_rows(repeats: int, planned: bool) -> list[tuple[str, float, str]]:
    """A listed key (``ObjectMeta``), or a planned file (``PartitionedFile``), made."""
    from listing.files import PartitionedFile, whole_file
    from listing.storage import ObjectMeta

    when = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    values = {"date": dt.date(2026, 3, 1)}
    new = tuple.__new__
    args = ("bucket/t/date=2026-03-01/part-0.parquet", 1000, when, "etag")
    if planned:
        makers: dict[str, Callable[[], Any]] = {
            "PartitionedFile(...)": lambda: PartitionedFile(args[0], 1000, values, None, when,
                                                            "etag"),
            "whole_file(...)": lambda: whole_file(args[0], 1000, values, when, "etag")}
    else:
        makers = {"ObjectMeta(...)": lambda: ObjectMeta(*args),
                  "tuple.__new__(ObjectMeta, ...)": lambda: new(ObjectMeta, args),
                  "a frozen dataclass of the same fields": lambda: _FrozenMeta(*args)}
    return [(name, per_call(fn, repeats, 2000), "µs") for name, fn in makers.items()]


def gc_rows(keys: int, heap: int, repeats: int) -> list[tuple[str, float, str]]:
    """Plan a local table of ``keys`` files, collector paused and running."""
    import pyarrow as pa

    from listing import ListingTable

    with tempfile.TemporaryDirectory(prefix="client-cpu-") as root:
        for i in range(keys):
            folder = Path(root, f"date=2026-03-{1 + i // 2400 % 28:02d}", f"hour={i % 24:02d}")
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"part-{i}.parquet").write_bytes(b"x")

        def plan() -> None:
            table = ListingTable.open(root, schema=pa.schema([("id", pa.int64())]),
                                      partition_cols=[("date", pa.string()),
                                                      ("hour", pa.int32())])
            assert len(table.scan().files) == keys

        others = [{"n": i} for i in range(heap)]  # long-lived objects, as a driver's heap
        rows = [(f"collector paused (as scan does), {keys:,} keys, {heap:,} other objects",
                 per_call(plan, repeats), "s")]
        with mock.patch("listing.table.gc_paused", nullcontext):
            rows.append((f"collector running, {keys:,} keys, {heap:,} other objects",
                         per_call(plan, repeats), "s"))
        del others
    gc.collect()
    return rows


def csv_rows(rows: int, repeats: int) -> list[tuple[str, float, str]]:
    import pyarrow as pa
    import pyarrow.csv as pacsv

    data = io.StringIO()
    data.write("id,amount,name,day,ts\n")
    for i in range(rows):
        data.write(f"{i},{i * 0.5},name-{i % 97},2026-03-{1 + i % 28:02d},"
                   f"2026-03-01T10:00:{i % 60:02d}\n")
    body = data.getvalue().encode()
    types = {"id": pa.int64(), "amount": pa.float64(), "name": pa.string(), "day": pa.date32(),
             "ts": pa.timestamp("us")}

    def count(include: list[str], column_types: dict[str, Any]) -> int:
        convert = pacsv.ConvertOptions(column_types=column_types, include_columns=include)
        return pacsv.read_csv(pa.BufferReader(body), convert_options=convert).num_rows

    return [(f"{rows:,} rows: every column converted",
             per_call(lambda: count(list(types), types), repeats), "ms"),
            (f"{rows:,} rows: the first column as text",
             per_call(lambda: count(["id"], {"id": pa.string()}), repeats), "ms")]


def offset_rows(keys: int) -> list[tuple[str, float, str]]:
    from listing.discovery import pack_seen

    seen = {f"date=2026-03-{1 + i // 4000 % 28:02d}/hour={i % 24:02d}/"
            f"part-{i:05d}-8f2c1d9e-4b7a-4c1e-9d3f-{i:012d}.c000.snappy.parquet":
            1_772_358_000_000_000 + i for i in range(keys)}
    return [(f"{keys:,} remembered keys as JSON", len(json.dumps(seen)) / 2**20, "MB"),
            (f"{keys:,} remembered keys packed", len(pack_seen(seen)) / 2**20, "MB")]


_SCALE = {"ms": 1e3, "µs": 1e6, "s": 1.0, "MB": 1.0}


def table(title: str, rows: list[tuple[str, float, str]]) -> str:
    """A Markdown table: each row's figure, and its ratio to the first row's."""
    first = rows[0][1]
    lines = [f"**{title}**", "", "| | figure | / first row |", "| :-- | --: | --: |"]
    lines += [f"| {name} | {value * _SCALE[unit]:,.3g} {unit} | {value / first:.2f} |"
              for name, value, unit in rows]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.client_cpu", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller tables, fewer repeats")
    args = ap.parse_args(argv)
    repeats = 5 if args.quick else 15
    keys = 20_000 if args.quick else 100_000
    sections = [
        (f"A {PAGE_KEYS:,}-key LIST page, parsed (per page)", page_rows(repeats)),
        ("An S3 time, parsed (per value)", time_rows(repeats)),
        ("A listed key, made (per key)", record_rows(repeats, planned=False)),
        ("A planned file, made (per file)", record_rows(repeats, planned=True)),
        ("A plan of a local table (per plan)",
         gc_rows(keys, 10 * keys, 3 if args.quick else 5)),
        ("A CSV file's rows counted (per file)", csv_rows(keys, repeats)),
        ("A streaming offset's remembered keys (size)", offset_rows(keys)),
    ]
    print("\n".join(table(title, rows) for title, rows in sections))
    return 0


if __name__ == "__main__":
    sys.exit(main())
