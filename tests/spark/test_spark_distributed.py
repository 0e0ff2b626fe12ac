"""The toolkit on a real Spark standalone cluster: one master, two workers, on loopback.

Every other Spark test runs ``local[2]``, where tasks are threads of the driver's JVM and a
Python object could leak from planning into reading without anyone noticing. Here planning
happens in the driver and reading in executor JVMs started by the workers, each with its
own Python workers, so the test shows what the issue asks for:

- a partition filter plus a data filter, through ``spark.read.format("listing")`` and
  through ``ListingTable.to_spark``, return exactly the brute-force rows;
- the S3 server saw only the pruned LIST requests (those the same scan sends in-process,
  never a full listing of the table) and GETs only for files the partition filter keeps;
- the tasks ran in two distinct executor JVMs, not in the driver;
- what Spark ships is metadata: the planner's bytes are small, carry neither the table's
  file list nor any S3 client object, and a fresh interpreter given only those bytes reads
  the same rows, building its S3 filesystem from the options inside them.

The cluster, the driver (``tests/jobs/cluster_job.py``) and the fresh interpreter are
subprocesses; the S3 server (moto, real HTTP on 127.0.0.1) runs in this process, so its
request log sees every request from every executor. The whole run happens once per module
and each test checks one claim. A cluster that does not come up fails the tests with the
master's, workers', driver's and executors' log tails; it never skips.
"""

from __future__ import annotations

import datetime as dt
import json
import pickletools
import re
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from listing import ListingTable
from listing.testing import datasets
from listing.testing.s3 import RequestLogEntry, S3Server
from listing.testing.spark_cluster import ClusterError, StandaloneCluster, log_tail, run_bounded

pytestmark = pytest.mark.distributed

JOB = Path(__file__).resolve().parents[1] / "jobs" / "cluster_job.py"
JOB_TIMEOUT = 150.0  # seconds for the driver job; the whole module takes ~1 min
CHECK_TIMEOUT = 60.0
EXECUTORS = 2

DAYS = 730  # 1460 files: listing the whole table takes 2 LIST pages
ROWS_PER_FILE = 20
FIRST, LAST = dt.date(2025, 3, 1), dt.date(2025, 3, 12)
PARTITION_FILTER = f"date >= '{FIRST}' AND date <= '{LAST}' AND region = 'eu'"
DATA_FILTER = "amount > 250"
STORAGE_MODULES = ("s3fs", "aiobotocore", "aiohttp", "botocore", "boto3")

Row = tuple[int, float, str, str]


def keeps_partition(values: dict[str, Any]) -> bool:
    return FIRST <= values["date"] <= LAST and values["region"] == "eu"


def keeps_row(amount: float) -> bool:
    return amount > 250


@dataclass
class ClusterRun:
    """Everything one cluster run produced; ``error`` is set when it could not finish."""

    dataset: datasets.Dataset
    bucket: str
    endpoint: str
    reference_open: list[RequestLogEntry] = field(default_factory=list)
    reference_scan: list[RequestLogEntry] = field(default_factory=list)
    reference_list_requests: int = 0
    requests: list[RequestLogEntry] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)
    payload: bytes = b""
    check: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    error: str | None = None

    def get(self) -> ClusterRun:
        """This run, or a test failure (not an error, not a skip) saying what broke."""
        if self.error is not None:
            pytest.fail(self.error, pytrace=False)
        return self

    @property
    def root_key(self) -> str:
        return self.dataset.root.removeprefix(f"s3://{self.bucket}/") + "/"

    def key(self, url: str) -> str:
        return url.removeprefix(f"s3://{self.bucket}/")

    @property
    def matching_keys(self) -> set[str]:
        return {self.key(f.path) for f in self.dataset.files
                if keeps_partition(f.partition_values)}

    def expected_rows(self) -> set[Row]:
        rows = set()
        for f in self.dataset.files:
            if not keeps_partition(f.partition_values):
                continue
            ids, amounts = f.table.column("id").to_pylist(), f.table.column("amount").to_pylist()
            rows |= {(i, a, f.partition_values["date"].isoformat(), f.partition_values["region"])
                     for i, a in zip(ids, amounts, strict=True) if keeps_row(a)}
        return rows

    def phases(self) -> dict[str, list[RequestLogEntry]]:
        """The request log split at the job's ``_phase/<name>`` markers."""
        out: dict[str, list[RequestLogEntry]] = {"before": []}
        current = "before"
        for entry in self.requests:
            if entry.key is not None and entry.key.startswith("_phase/"):
                current = entry.key.removeprefix("_phase/")
                out[current] = []
            else:
                out[current].append(entry)
        return out


@pytest.fixture(scope="module")
def cluster_run(s3_server: S3Server, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[ClusterRun]:
    """Write the dataset, record the in-process reference requests, then run the job on a
    fresh cluster and the payload check in a fresh interpreter. Failures are recorded,
    not raised, so every test reports them as a failure with the logs."""
    bucket = s3_server.create_bucket(f"distributed-{uuid.uuid4().hex[:12]}")
    workdir = tmp_path_factory.mktemp("spark-cluster")
    try:
        dataset = datasets.daily(f"s3://{bucket}/daily", s3_server.storage_options, days=DAYS,
                                 rows_per_file=ROWS_PER_FILE,
                                 put=datasets.fast_writer(s3_server))
        run = ClusterRun(dataset, bucket, s3_server.endpoint_url)
        with s3_server.log.capture(bucket) as cap:
            table = ListingTable.open(dataset.root, storage_options=dataset.storage_options)
        run.reference_open = cap.entries()
        with s3_server.log.capture(bucket) as cap:
            plan = table.scan(where=[PARTITION_FILTER, DATA_FILTER])
        run.reference_scan = cap.entries()
        run.reference_list_requests = plan.metrics["list_requests"]
        _run_on_cluster(run, s3_server, workdir)
        if run.error is None:
            _check_payload(run, workdir)
        yield run
    finally:
        s3_server.drop_bucket(bucket)


def _run_on_cluster(run: ClusterRun, server: S3Server, workdir: Path) -> None:
    t0 = time.monotonic()
    cluster = StandaloneCluster(workdir, workers=EXECUTORS)
    try:
        with cluster:
            run.seconds["cluster_start"] = round(time.monotonic() - t0, 1)
            out, payload = workdir / "result.json", workdir / "payload.bin"
            cmd = [sys.executable, str(JOB), "run", "--master", cluster.master_url,
                   "--executors", str(EXECUTORS), "--endpoint", server.endpoint_url,
                   "--bucket", run.bucket, "--root", run.dataset.root,
                   "--partition-filter", PARTITION_FILTER, "--data-filter", DATA_FILTER,
                   "--payload", str(payload), "--out", str(out)]
            t1 = time.monotonic()
            with server.log.capture(run.bucket) as cap:
                try:
                    code = run_bounded(cmd, env=cluster.driver_env(), timeout=JOB_TIMEOUT,
                                       log=workdir / "driver.log")
                except subprocess.TimeoutExpired:
                    code = None
            run.seconds["job"] = round(time.monotonic() - t1, 1)
            run.requests = cap.entries()
            if code != 0:
                what = "timed out" if code is None else f"exited with code {code}"
                run.error = (f"the cluster job {what} after {run.seconds['job']} s "
                             f"(limit {JOB_TIMEOUT:.0f} s)\n{cluster.diagnostics(60)}")
                return
            run.result = json.loads(out.read_text())
            run.payload = payload.read_bytes()
    except ClusterError as err:
        run.error = f"the Spark standalone cluster did not come up: {err}"
    finally:
        run.seconds["cluster_total"] = round(time.monotonic() - t0, 1)


def _check_payload(run: ClusterRun, workdir: Path) -> None:
    """Read the shipped bytes in an interpreter that never saw the driver's objects."""
    out, log = workdir / "check.json", workdir / "check.log"
    cmd = [sys.executable, str(JOB), "check-payload", "--payload", str(workdir / "payload.bin"),
           "--out", str(out)]
    t0 = time.monotonic()
    try:
        with log.open("wb") as handle:
            code = subprocess.run(cmd, stdout=handle, stderr=subprocess.STDOUT,
                                  timeout=CHECK_TIMEOUT, check=False).returncode
    except subprocess.TimeoutExpired:
        code = None
    run.seconds["payload_check"] = round(time.monotonic() - t0, 1)
    if code != 0:
        run.error = f"the payload check failed ({code=}):\n{log_tail(log, 60)}"
        return
    run.check = json.loads(out.read_text())


def _rows(records: list[list[Any]]) -> list[Row]:
    return [(int(i), float(a), str(d), str(r)) for i, a, d, r in records]


def _task_rows(result: dict[str, Any]) -> list[Row]:
    return [row for task in result["tasks"] for row in _rows(task["rows"])]


def _list_signature(entry: RequestLogEntry) -> tuple[Any, ...]:
    q = entry.query
    return (q.get("prefix"), q.get("delimiter"), q.get("start-after"),
            "continuation-token" in q)


def _lists(entries: list[RequestLogEntry]) -> Counter[tuple[Any, ...]]:
    return Counter(_list_signature(e) for e in entries if e.kind == "LIST")


def _get_keys(entries: list[RequestLogEntry]) -> set[str | None]:
    return {e.key for e in entries if e.kind == "GET"}


# --- the claims -----------------------------------------------------------------------------

def test_results_match_brute_force(cluster_run: ClusterRun) -> None:
    run = cluster_run.get()
    expected = run.expected_rows()
    in_partitions = sum(f.num_rows for f in run.dataset.files
                        if keeps_partition(f.partition_values))
    assert 0 < len(expected) < in_partitions  # both filters really remove rows
    for path in ("source", "table"):
        rows = _task_rows(run.result[path])
        assert len(rows) == len(set(rows)), f"{path}: duplicate rows"
        assert set(rows) == expected, path
        assert sum(r[1] for r in rows) == pytest.approx(sum(r[1] for r in expected))


def test_tasks_ran_in_two_executor_jvms(cluster_run: ClusterRun) -> None:
    run = cluster_run.get()
    driver = run.result["driver"]
    assert driver["master"].startswith("spark://127.0.0.1:")
    assert len(driver["executors"]) == EXECUTORS
    for path in ("source", "table"):
        tasks = run.result[path]["tasks"]
        assert len(tasks) == run.result[path]["num_partitions"] >= EXECUTORS
        executors = [t["executor"] for t in tasks]
        assert all(e["jvm_pid"] is not None for e in executors), (path, executors)
        assert {e["app_id"] for e in executors} == {driver["app_id"]}
        assert {e["executor_id"] for e in executors} <= set(driver["executors"])
        jvms = {e["jvm_pid"] for e in executors}
        assert driver["jvm_pid"] not in jvms
        assert driver["python_pid"] not in {t["python_pid"] for t in tasks}
        assert len(jvms) >= EXECUTORS, f"{path}: all tasks ran in one executor: {executors}"
        assert len({e["executor_id"] for e in executors}) >= EXECUTORS


def test_s3_saw_only_pruned_lists_and_matching_gets(cluster_run: ClusterRun) -> None:
    run = cluster_run.get()
    phases = run.phases()
    assert list(phases) == ["before", "source-load", "source-query", "table-open",
                            "table-query", "payload", "done"]
    assert phases["before"] == [] and phases["done"] == []
    root = run.root_key
    full_listing_pages = -(-len(run.dataset.files) // 1000)
    assert full_listing_pages >= 2
    # the reference scan in this process: pruned, one request on a narrowed prefix
    assert _get_keys(run.reference_scan) == set()
    scan_lists = _lists(run.reference_scan)
    assert sum(scan_lists.values()) == run.reference_list_requests < full_listing_pages
    assert all(prefix != root and prefix.startswith(root) for prefix, *_ in scan_lists)
    open_lists, open_gets = _lists(run.reference_open), _get_keys(run.reference_open)

    for phase in phases.values():  # nothing ever pages through the whole table
        assert not any(sig[3] for sig in _lists(phase)), "a LIST asked for a second page"
        assert {e.kind for e in phase} <= {"LIST", "GET"}, Counter(e.kind for e in phase)
    # opening the table (Spark's schema() or ListingTable.open) samples one page
    for name in ("source-load", "table-open"):
        assert _lists(phases[name]) == open_lists, name
        assert _get_keys(phases[name]) == open_gets, name
    # the queries: Spark's pushed filters and to_spark's options list what the in-process
    # scan lists, and GET exactly the files the partition filter keeps
    assert _lists(phases["source-query"]) == scan_lists
    plan = run.result["source"]["plan"]
    spark_filter = [ln for ln in plan.splitlines() if re.search(r"\bFilter \(", ln)]
    assert len(spark_filter) == 1 and "amount" in spark_filter[0]  # inexact: re-checked
    assert "date" not in spark_filter[0] and "region" not in spark_filter[0]  # exact: pruned
    # to_spark ships partition types and schema: the worker opens the table without a request
    assert _lists(phases["table-query"]) == scan_lists
    for name in ("source-query", "table-query"):
        assert _get_keys(phases[name]) == run.matching_keys, name


def test_spark_ships_metadata_only(cluster_run: ClusterRun) -> None:
    run = cluster_run.get()
    sizes = run.result["pickle"]
    assert sizes["scan_plan_files"] == len(run.matching_keys)
    assert sizes["scan_plan_bytes"] < 16_000, sizes
    assert sizes["group_partition_bytes"] and max(sizes["group_partition_bytes"]) < 8_000, sizes
    assert len(run.payload) == sizes["payload_bytes"] < 64_000, sizes
    # the file list of the table never travels, only the files of each task (file groups
    # pickle as compressed columns: their files are read back from the shipped partitions)
    other = next(f for f in run.dataset.files if not keeps_partition(f.partition_values))
    shipped = _shipped_keys(run)
    assert run.key(other.path) not in shipped
    assert shipped == run.matching_keys
    # no S3 client object inside: no global of an S3/HTTP client module is referenced
    assert not [m for m in _pickled_modules(run.payload) if m.split(".")[0] in STORAGE_MODULES]

    check = run.check
    assert check["storage_modules_after_unpickle"] == check["storage_modules_before"] == []
    assert check["filesystems_after_unpickle"] == []
    assert check["filesystems_after_read"], "the read built no S3 filesystem"
    assert {(fs["endpoint_url"], fs["key"]) for fs in check["filesystems_after_read"]} == {
        (run.endpoint, "testing")}
    assert check["python_pid"] not in {run.result["driver"]["python_pid"]}
    rows = _rows(check["rows"])
    assert len(rows) == len(set(rows)) and set(rows) == run.expected_rows()


def _frames(payload: bytes) -> list[bytes]:
    """The pickle frames of a planner payload: the read function, then each partition."""
    import io

    from pyspark.serializers import read_int

    stream = io.BytesIO(payload)
    frames = [stream.read(read_int(stream))]
    frames += [stream.read(read_int(stream)) for _ in range(read_int(stream))]
    return frames


def _shipped_keys(run: ClusterRun) -> set[str]:
    """The keys of the files in the partitions the payload ships, unpickled."""
    from pyspark import cloudpickle

    partitions = [cloudpickle.loads(frame) for frame in _frames(run.payload)[1:]]
    assert partitions and all(hasattr(p, "group") for p in partitions), partitions
    return {run.key(f.path) for p in partitions for f in p.group.files}


def _pickled_modules(payload: bytes) -> set[str]:
    """Module names referenced by any pickle frame in a planner payload (GLOBAL opcodes,
    and the module strings STACK_GLOBAL pops, approximated by every pushed string that
    names an importable-looking module)."""
    import io

    from pyspark.serializers import read_int

    stream = io.BytesIO(payload)
    frames = [stream.read(read_int(stream))]
    frames += [stream.read(read_int(stream)) for _ in range(read_int(stream))]
    names: set[str] = set()
    for frame in frames:
        for op, arg, _pos in pickletools.genops(frame):
            if op.name == "GLOBAL":
                names.add(str(arg).split(" ", 1)[0])
            elif isinstance(arg, str) and arg.replace(".", "").replace("_", "").isalnum():
                names.add(arg)
    return names
