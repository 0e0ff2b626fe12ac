"""Driver program for ``tests/spark/test_spark_distributed.py``; runs in its own interpreter.

One Python process can host one Spark JVM, and the test suite's own session is a
``local[2]`` one, so the cluster query needs a process of its own. Two sub-commands:

``run``
    Connects to a standalone master, waits for the executors, then runs the same pruned
    query twice: through ``spark.read.format("listing")`` (partition filter pushed by
    Spark) and through ``ListingTable.to_spark``. Each task reports, next to its rows, the
    executor JVM it ran in (found by walking up from the Python worker to the
    ``CoarseGrainedExecutorBackend`` process), so the test can see the read happened in
    executors. Before every phase it sends ``HEAD /<bucket>/_phase/<name>`` to the S3
    server: the server's request log is then split per phase by the test. Finally it
    writes the exact bytes Spark's planner ships for this scan (the pickled read function
    with its reader, then each pickled input partition) to ``--payload``.

``check-payload``
    Meant for a fresh interpreter: unpickles such a payload and runs the read function
    the way a Python worker in an executor does, reporting which storage modules and
    filesystem objects exist after unpickling and after reading.

Results are written as JSON to ``--out``; a failure exits non-zero with a traceback.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import io
import json
import os
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

#: top-level modules of live S3 client objects: none may come back from a plan's pickle
STORAGE_MODULES = ("s3fs", "aiobotocore", "aiohttp", "botocore", "boto3")
EXECUTOR_MAIN = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
COLUMNS = ["id", "amount", "date", "region"]


# --- executor side ----------------------------------------------------------------------

def _proc_parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    return int(stat.rsplit(")", 1)[1].split()[1])  # the name may contain spaces or ')'


def _proc_cmdline(pid: int) -> list[str]:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]


def executor_identity() -> dict[str, Any]:
    """The executor JVM above this Python worker: its pid and its own command-line
    ``--executor-id``/``--app-id``/``--hostname``. A task run by the driver (local mode)
    finds no such process and reports None."""
    pid = os.getpid()
    for _ in range(8):
        try:
            pid = _proc_parent(pid)
            if pid <= 1:
                break
            argv = _proc_cmdline(pid)
        except OSError:
            break
        if EXECUTOR_MAIN in argv:
            opts = {argv[i]: argv[i + 1] for i in range(len(argv) - 1) if argv[i][:2] == "--"}
            return {"jvm_pid": pid, "executor_id": opts.get("--executor-id"),
                    "app_id": opts.get("--app-id"), "hostname": opts.get("--hostname")}
    return {"jvm_pid": None, "executor_id": None, "app_id": None, "hostname": None}


def probe(rows: Iterator[Any]) -> Iterator[dict[str, Any]]:
    """One record per task: its rows (already read and filtered in this task) and where
    the task ran. Runs pipelined after the scan, in the same task and executor."""
    import socket

    from pyspark import TaskContext

    out = [[r.id, r.amount, r.date.isoformat(), r.region] for r in rows]
    ctx = TaskContext.get()
    yield {"partition": ctx.partitionId(), "stage": ctx.stageId(),
           "task_attempt_id": ctx.taskAttemptId(), "rows": out, "python_pid": os.getpid(),
           "host": socket.gethostname(), "executor": executor_identity()}


# --- driver side --------------------------------------------------------------------------

class Phases:
    """Marks phase boundaries in the S3 server's request log and times each phase."""

    def __init__(self, endpoint: str, bucket: str) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.bucket = bucket
        self.seconds: dict[str, float] = {}
        self._current: tuple[str, float] | None = None

    def start(self, name: str) -> None:
        self.end()
        request = urllib.request.Request(f"{self.endpoint}/{self.bucket}/_phase/{name}",
                                         method="HEAD")
        try:
            urllib.request.urlopen(request, timeout=10).close()
        except urllib.error.HTTPError:
            pass  # 404/403: the request is in the log, which is all a marker is for
        self._current = (name, time.monotonic())

    def end(self) -> None:
        if self._current is not None:
            name, t0 = self._current
            self.seconds[name] = round(time.monotonic() - t0, 2)
            self._current = None


def wait_for_executors(spark: Any, n: int, timeout: float) -> list[str]:
    """Block until ``n`` executors registered, so tasks are spread over all of them."""
    jsc = spark.sparkContext._jsc.sc()
    deadline = time.monotonic() + timeout
    while True:
        ids = [str(i) for i in jsc.getExecutorIds().mkString(",").split(",") if i]
        if len(ids) >= n:
            return ids
        if time.monotonic() > deadline:
            raise TimeoutError(f"only executors {ids} registered within {timeout:.0f} s "
                               f"(wanted {n})")
        time.sleep(0.25)


def run_tasks(df: Any) -> dict[str, Any]:
    """Run ``df`` as one job with :func:`probe` in every task."""
    selected = df.select(*COLUMNS)
    rdd = selected.rdd
    partitions = rdd.getNumPartitions()
    records = rdd.mapPartitions(probe).collect()
    # the plan that ran (a lazy val of the same QueryExecution: no second planning)
    plan = selected._jdf.queryExecution().executedPlan().toString()
    return {"num_partitions": partitions, "tasks": records, "plan": plan}


def spark_payload(spark: Any, options: dict[str, str]) -> tuple[bytes, dict[str, Any]]:
    """The bytes Spark's planner hands the JVM for a ``listing`` scan with ``options``.

    The data source class is the one the session registered (captured by re-running the
    toolkit's ``register``), and the bytes come from pyspark's own planner function, so
    they are what executors receive: the pickled read function (closing over the
    DataSource and its reader) and one pickled InputPartition per task.
    """
    from pyspark import cloudpickle
    from pyspark.sql.datasource import DataSourceRegistration
    from pyspark.sql.worker.plan_data_source_read import write_read_func_and_partitions

    from listing.spark.input_partition import GroupPartition
    from listing.spark.session import register

    captured: list[type] = []
    original = DataSourceRegistration.register

    def capture(self: Any, data_source: type) -> None:
        captured.append(data_source)
        original(self, data_source)

    DataSourceRegistration.register = capture  # type: ignore[method-assign]
    try:
        register(spark)
    finally:
        DataSourceRegistration.register = original  # type: ignore[method-assign]
    source = captured[-1](options)
    schema = source.schema()
    reader = source.reader(schema)
    buffer = io.BytesIO()
    write_read_func_and_partitions(buffer, reader=reader, data_source=source, schema=schema,
                                   max_arrow_batch_size=10_000, binary_as_bytes=True)
    plan = reader.plan()
    groups = [p for p in reader.partitions() if isinstance(p, GroupPartition)]
    sizes = {
        "scan_plan_bytes": len(cloudpickle.dumps(plan)),
        "scan_plan_files": len(plan.files),
        "group_partition_bytes": [len(cloudpickle.dumps(g)) for g in groups],
        "payload_bytes": buffer.tell(),
    }
    return buffer.getvalue(), sizes


def run(args: argparse.Namespace) -> dict[str, Any]:
    import listing
    from listing import ListingTable
    from listing.spark.session import session
    from listing.testing.spark_cluster import JVM_OPTS

    storage = {"endpoint_url": args.endpoint, "key": "testing", "secret": "testing",
               "client_kwargs": {"region_name": "us-east-1"}}
    where = f"({args.partition_filter}) AND ({args.data_filter})"
    phases = Phases(args.endpoint, args.bucket)
    t0 = time.monotonic()
    spark = session(app_name="listing-distributed", master=args.master, ui=False, conf={
        "spark.executor.cores": "1",
        "spark.cores.max": str(args.executors),
        "spark.executor.memory": "512m",
        "spark.driver.memory": "768m",
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "4",  # the source's minimum number of file groups
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "90s",
        "spark.driver.extraJavaOptions": JVM_OPTS,
        "spark.executor.extraJavaOptions": JVM_OPTS,
    })
    t_session = time.monotonic()
    try:
        spark.sparkContext.setLogLevel("WARN")
        executors = wait_for_executors(spark, args.executors, timeout=90)
        sc = spark.sparkContext
        driver = {"python_pid": os.getpid(), "app_id": sc.applicationId, "executors": executors,
                  "jvm_pid": int(sc._jvm.java.lang.ProcessHandle.current().pid()),
                  "master": sc.master, "session_seconds": round(t_session - t0, 2),
                  "executors_seconds": round(time.monotonic() - t_session, 2)}

        phases.start("source-load")
        # the listing reader's distribution is what this job shows (S3 tables go to Spark's
        # own reader by default when the session has the S3A connector: engine=auto)
        df = (spark.read.format("listing").option("engine", "python")
              .option("storage.endpoint_url", args.endpoint)
              .option("storage.key", "testing").option("storage.secret", "testing")
              .option("storage.client_kwargs", json.dumps(storage["client_kwargs"]))
              .load(args.root))
        phases.start("source-query")
        query = df.where(args.partition_filter).where(args.data_filter)
        source = run_tasks(query)

        phases.start("table-open")
        # no min_partitions: to_spark must spread the 12 small files over the executors
        # by itself, from the session's default parallelism
        table = ListingTable.open(args.root, storage_options=storage)
        phases.start("table-query")
        table_result = run_tasks(listing.to_spark(table, spark, columns=COLUMNS, where=where))

        phases.start("payload")
        options = {"path": args.root, "where": where, "storage.endpoint_url": args.endpoint,
                   "storage.key": "testing", "storage.secret": "testing",
                   "storage.client_kwargs": json.dumps(storage["client_kwargs"])}
        payload, sizes = spark_payload(spark, options)
        Path(args.payload).write_bytes(payload)
        phases.start("done")
        phases.end()
        return {"driver": driver, "source": source, "table": table_result, "pickle": sizes,
                "phase_seconds": phases.seconds}
    finally:
        spark.stop()


# --- fresh-interpreter check ----------------------------------------------------------------

def _loaded_storage_modules() -> list[str]:
    return sorted(m for m in sys.modules if m.split(".")[0] in STORAGE_MODULES)


def check_payload(args: argparse.Namespace) -> dict[str, Any]:
    """Act as an executor's Python worker for every partition of a saved payload."""
    import pyarrow as pa
    from pyspark.serializers import read_int
    from pyspark.worker_util import pickleSer

    stream = io.BytesIO(Path(args.payload).read_bytes())
    loaded_before = _loaded_storage_modules()
    func, _return_type = pickleSer.loads(_frame(stream))
    frames = [_frame(stream) for _ in range(read_int(stream))]
    partitions = [pickleSer.loads(frame) for frame in frames]
    after_unpickle = _loaded_storage_modules()
    filesystems_after_unpickle = _s3_filesystems()
    rows: list[list[Any]] = []
    for frame in frames:  # what the JVM hands the read function: one row, the raw bytes
        batch = pa.RecordBatch.from_arrays([pa.array([frame], pa.binary())],
                                           names=["partition"])
        for out in func(iter([batch])):
            for r in out.select(COLUMNS).to_pylist():
                rows.append([r["id"], r["amount"], r["date"].isoformat(), r["region"]])
    return {"python_pid": os.getpid(), "storage_modules_before": loaded_before,
            "storage_modules_after_unpickle": after_unpickle,
            "filesystems_after_unpickle": filesystems_after_unpickle,
            "filesystems_after_read": _s3_filesystems(), "partitions": len(partitions),
            "rows": rows}


def _frame(stream: io.BytesIO) -> bytes:
    """One length-prefixed frame, as pyspark's serializers write them."""
    from pyspark.serializers import read_int

    return stream.read(read_int(stream))


def _s3_filesystems() -> list[dict[str, Any]]:
    """Every live S3FileSystem in this process, with the options it was built from."""
    if "s3fs" not in sys.modules:
        return []
    from s3fs import S3FileSystem

    found = [o for o in gc.get_objects() if isinstance(o, S3FileSystem)]
    return [{"endpoint_url": fs.storage_options.get("endpoint_url"),
             "key": fs.storage_options.get("key")} for fs in found]


# --- entry point ----------------------------------------------------------------------------

def _json_default(value: Any) -> Any:
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    raise TypeError(f"not JSON serializable: {value!r}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run")
    p_run.add_argument("--master", required=True)
    p_run.add_argument("--executors", type=int, default=2)
    p_run.add_argument("--endpoint", required=True)
    p_run.add_argument("--bucket", required=True)
    p_run.add_argument("--root", required=True)
    p_run.add_argument("--partition-filter", required=True)
    p_run.add_argument("--data-filter", required=True)
    p_run.add_argument("--payload", required=True)
    p_run.add_argument("--out", required=True)
    p_check = sub.add_parser("check-payload")
    p_check.add_argument("--payload", required=True)
    p_check.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    result = run(args) if args.command == "run" else check_payload(args)
    Path(args.out).write_text(json.dumps(result, default=_json_default, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
