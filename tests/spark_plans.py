"""Looking into a Spark query through py4j, shared by the Spark tests: the nodes of a plan,
the file source relation's index, the files Spark's scan read, and the per-bucket S3A
settings that let Spark's own S3A reader reach the moto test server (the oracle)."""

from __future__ import annotations

from typing import Any


def nodes(plan: Any) -> list[Any]:
    """``plan`` and every node below it (a JVM plan), depth first."""
    out = [plan]
    children = plan.children()
    for i in range(children.size()):
        out += nodes(children.apply(i))
    return out


def executed(df: Any) -> Any:
    """``df``'s executed physical plan, inside adaptive execution's wrapper when there is one."""
    plan = df._jdf.queryExecution().executedPlan()
    return plan.executedPlan() if plan.nodeName() == "AdaptiveSparkPlan" else plan


def file_index(df: Any) -> Any:
    """The file index of the (one) file source relation in ``df``'s optimized plan."""
    plan = df._jdf.queryExecution().optimizedPlan()
    found = [n for n in nodes(plan) if n.getClass().getSimpleName() == "LogicalRelation"
             and n.relation().getClass().getSimpleName() == "HadoopFsRelation"]
    assert len(found) == 1, plan.toString()
    return found[0].relation().location()


def files_read(df: Any) -> int:
    """The files the (one) file scan of ``df``'s last execution read (its ``numFiles``)."""
    (scan,) = [n for n in nodes(executed(df))
               if "FileSourceScan" in n.getClass().getSimpleName()]
    return int(scan.metrics().apply("numFiles").value())


def s3a_bucket_conf(bucket: str, server: Any) -> dict[str, str]:
    """Hadoop settings for Spark's S3A reader to read ``bucket`` of the moto ``server``."""
    prefix = f"fs.s3a.bucket.{bucket}."
    return {prefix + "endpoint": server.endpoint_url, prefix + "path.style.access": "true",
            prefix + "connection.ssl.enabled": "false",
            prefix + "endpoint.region": "us-east-1", prefix + "access.key": "testing",
            prefix + "secret.key": "testing"}
