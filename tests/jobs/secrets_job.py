"""Every Spark text that carries a listing table's options, from one session of its own (the
event log is a start-up setting): written as JSON for tests/spark/test_spark_secrets.py.

    python tests/jobs/secrets_job.py OUT.json WORKDIR CATALOG ENDPOINT ROOT LOCAL_ROOT SECRETS_JSON

CATALOG is ``hive`` (a Derby metastore under WORKDIR) or ``in-memory``. Each text is stored
under a label with the result of a query proving its command ran (``counts``).
"""

from __future__ import annotations

import contextlib
import glob
import io
import json
import os
import sys
from typing import Any


def main(out: str, work: str, catalog: str, endpoint: str, root: str, local_root: str,
         secrets_json: str) -> None:
    import listing

    s = json.loads(secrets_json)
    events = os.path.join(work, "events")
    conf = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": events,
            "spark.eventLog.compress": "false", "spark.sql.catalogImplementation": catalog,
            "spark.sql.warehouse.dir": os.path.join(work, "warehouse")}
    if catalog == "hive":
        conf["spark.hadoop.javax.jdo.option.ConnectionURL"] = (
            f"jdbc:derby:;databaseName={work}/metastore_db;create=true")
    os.makedirs(events, exist_ok=True)
    spark = listing.session(app_name="secrets", ui=False, conf=conf)
    texts: dict[str, str] = {}
    counts: dict[str, Any] = {}

    def sql(label: str, query: str) -> None:
        texts[label] = "\n".join(str(v) for row in spark.sql(query).collect() for v in row)

    def count(label: str, query: str) -> None:
        counts[label] = spark.sql(query).collect()[0][0]

    region = json.dumps({"region_name": "us-east-1"})
    sse = json.dumps({"SSECustomerKey": s["sse_c"]})
    s3 = (f"path '{root}', format 'parquet', engine 'python', "
          f"`storage.endpoint_url` '{endpoint}', `storage.key` '{s['key']}', "
          f"`storage.secret` '{s['secret']}', `storage.token` '{s['token']}', "
          f"`storage.s3_additional_kwargs` '{sse}', `storage.client_kwargs` '{region}'")
    as_json = json.dumps({"endpoint_url": endpoint, "key": s["json_key"],
                          "secret": s["json_secret"],
                          "client_kwargs": {"region_name": "us-east-1",
                                            "aws_session_token": s["json_token"]}})
    azure = (f"path 'abfs://container/t', `storage.account_name` 'visibleaccount', "
             f"`storage.account_key` '{s['account_key']}', `storage.sas_token` "
             f"'{s['sas_token']}', `storage.client_secret` '{s['client_secret']}', "
             f"`storage.connection_string` 'DefaultEndpointsProtocol=https;AccountName=a;"
             f"AccountKey={s['connection']};EndpointSuffix=core.windows.net'")

    sql("create_table", f"CREATE TABLE t USING listing OPTIONS ({s3})")
    count("create_table", "SELECT count(*) FROM t")
    sql("explain_create_table", f"EXPLAIN EXTENDED CREATE TABLE t2 USING listing OPTIONS ({s3})")
    sql("explain_create_azure",
        f"EXPLAIN EXTENDED CREATE TABLE az USING listing OPTIONS ({azure})")
    sql("create_table_json", f"CREATE TABLE tj USING listing OPTIONS (path '{root}', "
        f"engine 'python', storage_options '{as_json}')")
    count("create_table_json", "SELECT count(*) FROM tj")
    sql("explain_create_json", f"EXPLAIN EXTENDED CREATE TABLE tj2 USING listing OPTIONS "
        f"(path '{root}', storage_options '{as_json}')")
    sql("create_local", f"CREATE TABLE tl USING listing OPTIONS (path '{local_root}', "
        f"engine 'auto', `storage.max_retries` '3')")  # Spark's reader (hand-off) reads it
    count("create_local", "SELECT count(*) FROM tl")
    sql("describe", "DESCRIBE TABLE EXTENDED t")
    sql("show_create", "SHOW CREATE TABLE t")
    sql("temp_view", f"CREATE TEMPORARY VIEW v USING listing OPTIONS ({s3})")
    count("temp_view", "SELECT count(*) FROM v")
    sql("explain_temp_view",
        f"EXPLAIN EXTENDED CREATE TEMPORARY VIEW v2 USING listing OPTIONS ({s3})")
    sql("view", "CREATE VIEW pv AS SELECT * FROM t")
    count("view", "SELECT count(*) FROM pv")
    sql("cache_table", "CACHE TABLE c AS SELECT * FROM v")
    count("cache_table", "SELECT count(*) FROM c")
    sql("explain_cache", "EXPLAIN EXTENDED CACHE TABLE c2 AS SELECT * FROM v")
    with_options = (f"'path' = '{root}', 'partition_by' = 'p', "
                    f"`storage.endpoint_url` = '{endpoint}', `storage.key` = '{s['key']}', "
                    f"`storage.secret` = '{s['secret']}', "
                    f"`storage.s3_additional_kwargs` = '{sse}', "
                    f"`storage.client_kwargs` = '{region}'")
    sql("insert", f"INSERT INTO t WITH ({with_options}) SELECT 100 AS id, 'z' AS p")
    count("insert", "SELECT count(*) FROM t")
    sql("explain_insert",
        f"EXPLAIN EXTENDED INSERT INTO t WITH ({with_options}) SELECT 101 AS id, 'z' AS p")
    reader = (spark.read.format("listing").option("engine", "python")
              .option("storage.endpoint_url", endpoint).option("storage.key", s["key"])
              .option("storage.secret", s["secret"]).option("storage.token", s["token"])
              .option("storage.s3_additional_kwargs", sse)
              .option("storage.client_kwargs", region))
    df = reader.load(root)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        df.where("p = 'a'").explain(True)
    texts["read_explain"] = buf.getvalue()
    counts["read_explain"] = df.count()
    written = root.rstrip("/") + "_copy"
    (df.write.format("listing").option("partition_by", "p")
     .option("storage.endpoint_url", endpoint).option("storage.key", s["key"])
     .option("storage.secret", s["secret"]).option("storage.token", s["token"])
     .option("storage.s3_additional_kwargs", sse).option("storage.client_kwargs", region)
     .mode("overwrite").save(written))
    counts["write"] = reader.load(written).count()
    store = spark._jsparkSession.sharedState().statusStore()
    plans, graphs = [], []
    executions = store.executionsList().iterator()
    while executions.hasNext():
        e = executions.next()
        plans.append(e.description() + "\n" + e.physicalPlanDescription())
        graphs.append(store.planGraph(e.executionId()).makeDotFile(
            store.executionMetrics(e.executionId())))
    texts["status_store_plans"] = "\n".join(plans)
    texts["status_store_graphs"] = "\n".join(graphs)
    spark.stop()
    logs = [f for f in glob.glob(os.path.join(events, "**"), recursive=True)
            if os.path.isfile(f)]
    texts["event_log"] = "".join(open(f, encoding="utf-8").read() for f in logs)
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"texts": texts, "counts": counts}, f)


if __name__ == "__main__":
    main(*sys.argv[1:8])
