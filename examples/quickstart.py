"""Plan a pruned scan of a date-partitioned table on a real (local) S3 server.

    .venv/bin/python examples/quickstart.py
"""

from __future__ import annotations

from listing import ListingTable, col
from listing.testing import datasets
from listing.testing.s3 import S3Server

with S3Server() as server:  # moto over HTTP on 127.0.0.1, a free port
    server.create_bucket("lake")
    datasets.daily("s3://lake/events", server.storage_options, days=730,
                   put=datasets.fast_writer(server))

    table = ListingTable.open("s3://lake/events/", format="parquet",
                              storage_options=server.storage_options)
    print(table.schema)
    print(table.partition_cols)

    plan = table.scan(columns=["id", "amount", "date", "region"],
                      where="date BETWEEN '2026-03-01' AND '2026-03-07' AND region = 'us'")
    print(plan.explain())
    print(plan.to_arrow().num_rows, "rows")

    # the same filter, built in Python
    plan = table.scan(where=(col("date") == "2026-03-01") & (col("amount") > 500))
    print(plan.metrics)
