"""Runs in its own process (a Spark Connect server cannot share the test session's JVM):
starts a local Spark Connect server with the toolkit's extension configured server-side,
then uses the ``listing`` source from the Connect client. Prints one JSON line of results.

    python tests/jobs/connect_job.py ROOT STORAGE_OPTIONS_JSON DAY
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import warnings


def main(root: str, storage_json: str, day: str) -> dict:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    import listing
    from listing import ListingTable
    from listing.spark.extension import build_extension_jar, extension_conf

    builder = SparkSession.builder.remote("local[2]")
    confs = {**extension_conf(build_extension_jar()),
             "spark.sql.python.filterPushdown.enabled": "true"}
    for key, value in confs.items():  # static confs: they reach the server as it starts
        builder = builder.config(key, value)
    with warnings.catch_warnings():  # the client then fails to re-set them: harmless
        warnings.simplefilter("ignore")
        spark = builder.getOrCreate()
    out: dict = {"session": type(spark).__module__}
    registration = listing.register(spark)
    out["pruning"] = registration.prunes_with_spark_filters
    df = (spark.read.format("listing").option("storage_options", storage_json).load(root))
    out["day_count"] = df.where(f"date = '{day}'").count()
    out["all_count"] = df.count()  # after a filtered one: the stale-pushdown case
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        df.select("amount").explain()
    out["explain"] = text.getvalue()
    table = ListingTable.open(root, storage_options=json.loads(storage_json))
    by_day = listing.to_spark(table, spark, columns=["id"], where=f"date = '{day}'")
    out["to_spark_ids"] = sorted(r.id for r in by_day.collect())
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW connect_events USING listing OPTIONS ("
              f"path '{root}', storage_options '{storage_json}')")
    out["sql_count"] = spark.sql(
        f"SELECT count(*) AS n FROM connect_events WHERE date = '{day}'").collect()[0].n
    spark.stop()
    return out


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(*sys.argv[1:4])))
