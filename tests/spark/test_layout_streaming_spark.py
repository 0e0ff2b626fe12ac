"""``spark.readStream.format("listing").option("layout", …)``: a Firehose-shaped prefix
read by a real ``writeStream`` (Trigger.AvailableNow, checkpoint on local disk), then a
new hour folder read by the restarted query, every row once with its layout columns."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from pathlib import Path

from listing import ListingTable

LAYOUT = "{date:yyyy/MM/dd}/{hour:HH}"
SCHEMA = "id string, n long, date date, hour int"


def _put_hour(server, bucket: str, day: int, hour: int) -> list[tuple]:
    """Two Firehose objects in ``fh/2026/11/<day>/<hour>/``; returns their rows."""
    rows, items = [], {}
    for k in range(2):
        at = dt.datetime(2026, 11, day, hour, k)
        got = [{"id": f"{day}-{hour}-{k}-{i}", "n": i} for i in range(2)]
        rows += [(r["id"], r["n"], at.date(), hour) for r in got]
        items[f"fh/{at:%Y/%m/%d/%H}/stream-1-{at:%Y-%m-%d-%H-%M-%S}-{uuid.uuid4()}.json"] = \
            "".join(json.dumps(r) + "\n" for r in got).encode()
    server.put_objects_fast(bucket, items)
    return rows


def _run(spark, server, url: str, out: Path) -> list[int]:
    df = (spark.readStream.format("listing").schema(SCHEMA).option("format", "json")
          .option("layout", LAYOUT)
          .option("storage_options", json.dumps(server.storage_options)).load(url))
    q = (df.writeStream.format("parquet").option("path", str(out / "data"))
         .option("checkpointLocation", str(out / "cp")).trigger(availableNow=True).start())
    try:
        assert q.awaitTermination(180), "the stream did not finish"
    finally:
        q.stop()
    return [p["numInputRows"] for p in q.recentProgress if p["numInputRows"]]


def _rows(spark, out: Path) -> list[tuple]:
    return sorted((r.id, r.n, r.date, r.hour)
                  for r in spark.read.parquet(str(out / "data")).collect())


def test_a_stream_reads_a_layout_table_and_its_new_hour(spark, s3_server, s3_bucket,
                                                       tmp_path):
    url = f"s3://{s3_bucket}/fh/"
    want = _put_hour(s3_server, s3_bucket, 26, 12) + _put_hour(s3_server, s3_bucket, 26, 13)
    assert _run(spark, s3_server, url, tmp_path) == [8]
    assert _rows(spark, tmp_path) == sorted(want)

    new = _put_hour(s3_server, s3_bucket, 26, 14)
    assert _run(spark, s3_server, url, tmp_path) == [4]  # the new hour only, once
    assert _rows(spark, tmp_path) == sorted(want + new)
    # the Python API's batch read of the same table: the same rows
    table = ListingTable.open(url, format="json", layout=LAYOUT,
                              storage_options=s3_server.storage_options)
    assert sorted(tuple(r.values()) for r in table.to_arrow(
        columns=["id", "n", "date", "hour"]).to_pylist()) == sorted(want + new)
