"""The Spark readers of ``bench.planning``: planning a query of a local tree in Spark's driver.

One measurement per fresh process (``python -m bench.planning --child READER ROOT QUERY``),
the session started before the clock (the JVM's start is no planning). Readers:

- ``spark index``: ``spark.read.schema(s).option("basePath", root).parquet(root)`` and the
  filter: Spark's own ``InMemoryFileIndex`` lists the whole root, then prunes;
- ``spark listing``: ``spark.read.format("listing")`` with ``engine=python``: our planner
  in a Python planning worker, the plan's file groups shipped to the JVM;
- ``spark native``: the same with ``engine=native``: our planner in the driver's Python,
  the files handed to Spark's Parquet scan through ``ListingFileIndex``.

Every reader is given the schema with the partition columns' types (no file is opened).
``seconds`` runs from ``spark.read`` to the physical plan with its files chosen (Spark's
file scans: ``inputRDD``, whose file listing fills the scan's ``numFiles``; ours: the
planned partitions, which the extension asks for at optimization). ``jvm_bytes``: the
driver JVM's used heap after a full GC with the plan still referenced, over the same
figure before ``spark.read`` (what Spark's driver holds for the query's files);
``peak_bytes``: the driver Python's peak RSS growth (our planner, for ``spark native``).
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from bench.rss import reset_peak, vm

SPARK_READERS = ("spark index", "spark listing", "spark native")


def _heap(spark: Any) -> int:
    jvm = spark.sparkContext._jvm  # noqa: SLF001
    runtime = jvm.java.lang.Runtime.getRuntime()
    for _ in range(2):
        jvm.java.lang.System.gc()
        time.sleep(0.2)
    return int(runtime.totalMemory() - runtime.freeMemory())


def _leaves(plan: Any) -> list[Any]:
    seq = plan.collectLeaves()
    return [seq.apply(i) for i in range(seq.size())]


def _planned(spark: Any, reader: str, root: str, where: str | None,
             options: dict[str, str] | None = None) -> tuple[Any, dict]:
    """The executed plan of ``reader``'s query, with its files chosen, and what it says;
    ``options`` go to our source (``storage_options`` for an S3 table)."""
    ddl = "id BIGINT, date DATE, hour INT"
    if reader == "spark index":
        df = spark.read.schema(ddl).option("basePath", root).parquet(root)
    else:
        df = (spark.read.format("listing").schema(ddl).options(**(options or {}))
              .option("format", "parquet")
              .option("partition_cols", "date:date,hour:int")
              .option("engine", "python" if reader == "spark listing" else "native")
              .load(root))
    if where:
        df = df.where(where)
    plan = df._jdf.queryExecution().executedPlan()  # noqa: SLF001
    out: dict[str, Any] = {}
    for leaf in _leaves(plan):
        name = leaf.getClass().getSimpleName()
        if name.startswith("FileSourceScanExec"):
            leaf.inputRDD()  # lists (Spark's index) or asks our planner (ListingFileIndex)
            out["files"] = int(leaf.metrics().apply("numFiles").value())
        elif name.startswith("BatchScanExec"):
            out["groups"] = int(leaf.inputPartitions().size())
            found = re.search(r"Files: (\d+) in", leaf.toString() + str(
                leaf.scan().description()))
            out["files"] = int(found.group(1)) if found else None
    return plan, out


def warm_tree(root: str) -> str:
    """A two-file tree beside ``root`` whose query starts the JVM's and Python workers'
    code paths before the clock (what a session's first query pays once)."""
    warm = os.path.join(os.path.dirname(root.rstrip("/")), "planning-warmup")
    for h in (0, 1):
        d = os.path.join(warm, "date=2020-01-01", f"hour={h}")
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, "part-0.parquet")
        if not os.path.exists(path):
            with open(path, "wb") as f:
                f.write(b"x")
    return warm


def child(reader: str, root: str, where: str | None, options: dict[str, str] | None = None,
          warm: str | None = None,
          requests: Callable[[], Counter[str]] | None = None) -> dict[str, Any]:
    """One measurement; ``warm``: the warm-up table (default :func:`warm_tree` beside a
    local ``root``); ``requests``: the store's request counts so far (then the timed
    query's LIST count is ``list_requests``)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from listing.spark.session import session

    spark = session(app_name="bench-planning", ui=False, conf={
        "spark.driver.memory": os.environ.get("BENCH_SPARK_DRIVER_MEMORY", "4g"),
        "spark.sql.shuffle.partitions": "2"})
    _planned(spark, reader, warm or warm_tree(root), "hour = 1", options)  # not timed
    base = _heap(spark)
    before = requests() if requests is not None else None
    reset_peak()
    rss = vm("VmRSS")
    t0 = time.perf_counter()
    plan, out = _planned(spark, reader, root, where, options)
    out["seconds"] = time.perf_counter() - t0
    if requests is not None and before is not None:
        sent = requests() - before
        out["list_requests"] = sent["LIST"]
        out["requests"] = dict(sent)
    out["peak_bytes"] = vm("VmHWM") - rss
    out["jvm_bytes"] = _heap(spark) - base
    del plan
    spark.stop()
    return out
