"""A user's Spark job, run by ``spark-submit`` from a virtualenv holding only the wheel.

Run by ``tests/install/test_clean_install.py`` on a standalone cluster, with ``java`` and no
``javac`` on PATH: registers its own format, reads an S3 table with a filter (engine=auto,
in a session without Spark's S3A connector: it stays on the Python engine and says why),
writes a partitioned table, runs one streaming trigger, and prints one JSON line of what
it saw.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile

import pyarrow.parquet as pq

import listing
from listing import formats
from listing.formats.csv import CsvFormat
from listing.spark.extension import extension_jar, is_guard_active
from listing.spark.s3a import connector_jars


class PipeFormat(CsvFormat):
    """The user's own format, defined in this script (workers get it by value)."""

    name = "pipe"
    extensions = (".pipe",)
    option_defaults = {**CsvFormat.option_defaults, "delimiter": "|"}


def main(root: str, storage_json: str, day: str) -> dict[str, object]:
    formats.register("pipe", PipeFormat)
    spark = listing.session(app_name="clean-install-job", ui=False)
    storage = json.loads(storage_json)

    def read(fmt: str, path: str):  # noqa: ANN202 - a DataFrameReader's DataFrame
        return (spark.read.format("listing").option("format", fmt)
                .option("storage_options", storage_json).load(path))

    pipe = read("pipe", f"{root}/pipe").where(f"day = '{day}'").collect()
    events = read("parquet", f"{root}/events")
    picked = events.where(f"date = '{day}' AND region = 'eu'")
    picked_rows = picked.count()
    (why,) = listing.explain(picked, show=False)
    plan = picked._jdf.queryExecution().executedPlan().toString()
    (events.where(f"date <= '{day}'").write.format("listing").option("format", "parquet")
     .option("storage_options", storage_json).option("partition_by", "region")
     .mode("overwrite").save(f"{root}/out"))
    written = read("parquet", f"{root}/out")
    table = listing.ListingTable.open(f"{root}/out", storage_options=storage)
    first = table.first_file()
    assert first is not None
    with table.storage.filesystem().open(first.path, "rb") as file:
        written_by = pq.ParquetFile(file).metadata.created_by.split(" ")[0]
    with tempfile.TemporaryDirectory() as checkpoint:
        stream = (spark.readStream.format("listing").option("format", "parquet")
                  .option("storage_options", storage_json).option("where", "region = 'us'")
                  .load(f"{root}/events"))
        query = (stream.writeStream.format("memory").queryName("streamed")
                 .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
        query.awaitTermination(300)
        streamed = spark.table("streamed").count()
    out = {
        "listing_file": listing.__file__,
        "jar": str(extension_jar()),
        "javac": shutil.which("javac"),
        "guarded": is_guard_active(spark),
        "master": spark.sparkContext.master,
        "ui": spark.conf.get("spark.ui.enabled", "true"),
        "pipe": sorted((r.id, r.note) for r in pipe),
        "picked_rows": picked_rows,
        "picked_explain": "\n".join(why.split("\n")[:2]),
        "picked_plan": "FileScan" if "FileScan " in plan else plan.split("\n")[0],
        "s3a_jars": [str(j) for j in connector_jars()],
        "spark_jars": spark.conf.get("spark.jars", ""),
        "written_rows": written.count(),
        "written_by": written_by,
        "written_regions": sorted(r.region for r in written.select("region").distinct()
                                  .collect()),
        "streamed_rows": streamed,
        "storage_keys": sorted(storage),
    }
    spark.stop()
    return out


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(*sys.argv[1:4])), flush=True)
