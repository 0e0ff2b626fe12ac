"""A Firehose-shaped lake (option ``layout``) read through Spark on both engines: the
same rows as the Python API, the same single LIST for a day and an hour."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import uuid

import pytest
from test_native_engine import engine_of

from listing import ListingTable

LAYOUT = "{date:yyyy/MM/dd}/{hour:HH}"
WHERE = "date = '2026-11-26' AND hour = 13"


@pytest.fixture(scope="module")
def firehose(s3_server):
    """``fh/yyyy/MM/dd/HH/stream-1-…-<uuid>.gz`` as Firehose names its gzipped NDJSON
    objects, and beside each an uncompressed one with no extension: two days, three
    hours."""
    with s3_server.temporary_buckets("layout-spark") as (bucket,):
        client = s3_server.client()
        for day in (26, 27):
            for hour in (12, 13, 14):
                at = dt.datetime(2026, 11, day, hour)
                for suffix in (".gz", ""):
                    body = "".join(json.dumps({"id": f"{day}-{hour}-{i}{suffix}", "n": i})
                                   + "\n" for i in range(3)).encode()
                    client.put_object(
                        Bucket=bucket, Body=gzip.compress(body) if suffix else body,
                        Key=f"fh/{at:%Y/%m/%d/%H}/stream-1-{at:%Y-%m-%d-%H-%M-%S}-"
                            f"{uuid.uuid4()}{suffix}")
        yield f"s3://{bucket}/fh/"


@pytest.mark.parametrize("engine", ["python", "native"])
def test_spark_reads_a_layout_as_the_python_api(spark, s3_server, firehose, engine):
    table = ListingTable.open(firehose, format="json", layout=LAYOUT,
                              storage_options=s3_server.storage_options)
    want = sorted((r["id"], r["n"], r["date"], r["hour"])
                  for r in table.to_arrow(where=WHERE).to_pylist())
    assert len(want) == 6 and {w[0] for w in want} >= {"26-13-0.gz", "26-13-0"}
    df = (spark.read.format("listing").option("format", "json").option("engine", engine)
          .option("layout", LAYOUT)
          .option("storage_options", json.dumps(s3_server.storage_options))
          .load(firehose).where(WHERE))
    with s3_server.log.capture() as cap:
        got = sorted((r["id"], r["n"], r["date"], r["hour"]) for r in df.collect())
    assert got == want
    assert engine_of(df) == engine
    lists = [e.query.get("prefix") for e in cap.entries() if e.kind == "LIST"]
    assert lists == ["fh/2026/11/26/13/"]  # one LIST, of the day's hour


def test_sql_options_and_to_spark_carry_the_layout(spark, s3_server, firehose):
    table = ListingTable.open(firehose, format="json", layout=LAYOUT,
                              storage_options=s3_server.storage_options)
    want = sorted(r["id"] for r in table.to_arrow(where=WHERE).to_pylist())
    name = f"layout_{uuid.uuid4().hex[:8]}"
    options = json.dumps(s3_server.storage_options).replace("'", "\\'")
    spark.sql(f"CREATE TABLE {name} USING listing OPTIONS (path '{firehose}', "
              f"format 'json', layout '{LAYOUT}', storage_options '{options}')")
    try:
        got = sorted(r.id for r in spark.sql(f"SELECT id FROM {name} WHERE {WHERE}").collect())
    finally:
        spark.sql(f"DROP TABLE {name}")
    assert got == want
    df = table.to_spark(spark, columns=["id"], where=WHERE)
    assert sorted(r.id for r in df.collect()) == want
