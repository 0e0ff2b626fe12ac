"""Read a gzip CSV table and a custom-format table from a local S3 server, and write one.

    .venv/bin/python examples/formats_tour.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # to import examples.*

import examples.fixed_width_format  # noqa: E402, F401  (registers format "fixed_width")
from examples.tsv_format import TsvFormat  # noqa: E402  (registers format "tsv")
from listing import ListingTable  # noqa: E402
from listing.testing import datasets  # noqa: E402
from listing.testing.s3 import S3Server  # noqa: E402
from listing.write import write_table  # noqa: E402

with S3Server() as server:
    server.create_bucket("lake")
    opts = server.storage_options

    # 1. gzip CSV, date-partitioned: compression comes from the .csv.gz extension
    datasets.daily("s3://lake/csv", opts, days=30, format="csv.gz")
    table = ListingTable.open("s3://lake/csv/", format="csv", storage_options=opts)
    rows = table.scan(where="date = '2025-01-15' AND amount > 100").to_arrow()
    print("csv.gz:", table.schema.names, rows.num_rows, "rows")

    # 2. a user's format: TsvFormat wraps CsvFormat (tab delimiter, .tsv extension)
    server.put_objects_fast("lake", {
        f"tsv/day={d}/part-0.tsv": f"id\tnote\n1\tday {d}\n2\tagain\n".encode()
        for d in ("2026-03-01", "2026-03-02")})
    tsv = ListingTable.open("s3://lake/tsv/", format="tsv", storage_options=opts)
    plan = tsv.scan(where="day = '2026-03-02'")
    print("tsv:", isinstance(tsv.format, TsvFormat), plan.to_arrow().to_pylist())

    # 3. writing a user's format: FixedWidthFormat has a FileSink, so write_table writes it
    result = write_table("s3://lake/fwf/", rows.slice(0, 4), format="fixed_width",
                         partition_by=["region"], storage_options=opts)
    fwf = ListingTable.open("s3://lake/fwf/", format="fixed_width", storage_options=opts)
    print("fixed_width:", len(result.files), "files,", fwf.scan().to_arrow().num_rows, "rows")
