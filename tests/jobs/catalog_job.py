"""One step of the catalog-table test, in its own JVM sharing a Derby-backed Hive metastore:

    python tests/jobs/catalog_job.py create|reopen WAREHOUSE ROOT STORAGE_OPTIONS_JSON DAY
"""

from __future__ import annotations

import json
import sys


def main(step: str, warehouse: str, root: str, storage_json: str, day: str) -> dict:
    import listing

    spark = listing.session(app_name=f"catalog-{step}", ui=False, conf={
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": f"{warehouse}/warehouse",
        "spark.hadoop.javax.jdo.option.ConnectionURL":
            f"jdbc:derby:;databaseName={warehouse}/metastore_db;create=true",
    })
    out: dict = {"catalog": spark.conf.get("spark.sql.catalogImplementation")}
    if step == "create":
        spark.sql(f"CREATE TABLE events USING listing OPTIONS (path '{root}', "
                  f"format 'parquet', storage_options '{storage_json}')")
    if step in ("create", "reopen"):
        out["count"] = spark.sql("SELECT count(*) AS n FROM events").collect()[0].n
        out["day"] = spark.sql(
            f"SELECT count(*) AS n FROM events WHERE date = '{day}'").collect()[0].n
        out["columns"] = spark.table("events").columns
    if step == "reopen":
        spark.sql("DROP TABLE events")
        out["tables"] = [t.name for t in spark.catalog.listTables()]
    spark.stop()
    return out


if __name__ == "__main__":
    print("RESULT " + json.dumps(main(*sys.argv[1:6])))
