"""``df.write.format("listing")`` with a ``layout`` template: rows land in the folders the
template spells and read back through Spark with the same layout (docs/layouts.md)."""

from __future__ import annotations

import datetime as dt
import os

LAYOUT = "{date:yyyy/MM/dd}/{hour:HH}"


def test_a_spark_write_with_a_layout_reads_back_through_spark(spark, tmp_path):
    rows = [(f"{h}-{i}", i, dt.date(2026, 11, 27), h) for h in (9, 13) for i in range(3)]
    df = spark.createDataFrame(rows, "id string, n long, date date, hour int")
    root = str(tmp_path / "fh") + "/"
    (df.write.format("listing").option("format", "parquet").option("layout", LAYOUT)
     .mode("append").save(root))
    folders = sorted(os.path.relpath(d, root) for d, _, files in os.walk(root)
                     if any(f.endswith(".parquet") for f in files))
    assert folders == ["2026/11/27/09", "2026/11/27/13"]
    back = (spark.read.format("listing").option("format", "parquet").option("layout", LAYOUT)
            .load(root))
    assert sorted(back.columns) == ["date", "hour", "id", "n"]
    got = sorted((r["id"], r["n"], r["date"], r["hour"]) for r in back.collect())
    assert got == sorted(rows)
