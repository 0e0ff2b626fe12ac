"""Installed and run as a user does: the wheel, a fresh virtualenv, a JRE, ``spark-submit``.

Builds the wheel from a copy of the repository, installs it with a plain ``pip install``
(its declared dependencies, no extras) into a new virtualenv, and runs
``tests/jobs/clean_install_job.py`` with that virtualenv's ``spark-submit`` on a standalone
cluster (master and worker from the wheel's ``listing.testing.spark_cluster``), with a PATH
that has ``java`` and no ``javac`` (nor any other JDK tool) and no JAVA_HOME. The job
registers its own format, reads an S3 table (moto, served by this process) with a filter,
writes a partitioned table (Spark's Parquet writer in the tasks) and runs one streaming
trigger. Nothing comes from the repository or the development virtualenv: the job file is
copied to a folder of its own.
The user never fetched Spark's S3A connector (an empty connector cache): the S3 table
stays on the Python engine and ``listing.explain`` says why.

Then the same virtualenv gets the ``connect`` extra, starts a Spark Connect server with the
documentation's command (docs/spark.md), run as written from a shell where the virtualenv
is not on PATH (the
server's Python workers then need the ``PYSPARK_PYTHON`` the command sets), and a Connect
client reads the S3 table through it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from listing.testing import datasets

pytestmark = pytest.mark.clean_install

ROOT = Path(__file__).resolve().parents[2]
JOB = Path(__file__).resolve().parents[1] / "jobs" / "clean_install_job.py"
DAY = "2025-01-03"
INSTALL_TIMEOUT = 400.0
JOB_TIMEOUT = 420.0  # cluster start-up and the job on a busy 2-core machine

#: run by the new virtualenv's python: a cluster, then the job through spark-submit
ORCHESTRATE = """
import sys
from pathlib import Path

from listing.testing.spark_cluster import JVM_OPTS, StandaloneCluster, log_tail, run_bounded

work, job, timeout, args = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4:]
submit = str(Path(sys.executable).parent / "spark-submit")
with StandaloneCluster(work / "cluster", workers=1, cores_per_worker=2,
                       python=sys.executable) as cluster:
    code = run_bounded(
        [submit, "--master", cluster.master_url,
         "--conf", f"spark.driver.extraJavaOptions={JVM_OPTS}",
         "--conf", f"spark.executor.extraJavaOptions={JVM_OPTS}",
         "--conf", "spark.executor.memory=1g", job, *args],
        env=cluster.driver_env(), timeout=timeout, log=work / "driver.log", cwd=work)
    print("MASTER", cluster.master_url)
    if code != 0:
        print(f"spark-submit exited with {code}\\n--- driver ---\\n"
              f"{log_tail(work / 'driver.log', 80)}\\n{cluster.diagnostics(30)}")
    sys.exit(code)
"""

CONNECT_TIMEOUT = 240.0

#: a Spark Connect client in the new virtualenv: retries until the server answers
CONNECT_CLIENT = """
import json, sys, time
from pyspark.sql import SparkSession
import listing

url, root, storage, day = sys.argv[1:5]
deadline = time.monotonic() + float(sys.argv[5])
while True:
    try:
        spark = SparkSession.builder.remote(url).getOrCreate()
        spark.range(1).collect()
        break
    except Exception:
        if time.monotonic() > deadline:
            raise
        time.sleep(2)
listing.register(spark)
df = (spark.read.format("listing").option("format", "parquet")
      .option("storage_options", storage).load(root))
out = {"session": type(spark).__module__, "day_count": df.where(f"date = '{day}'").count(),
       "all_count": df.count()}
print("RESULT " + json.dumps(out), flush=True)
"""


def run(cmd: list[str | Path], cwd: Path, env: dict[str, str],
        timeout: float) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        pytest.fail(f"{' '.join(map(str, cmd))} exited with {proc.returncode}\n--- stdout ---\n"
                    f"{proc.stdout[-8000:]}\n--- stderr ---\n{proc.stderr[-4000:]}",
                    pytrace=False)
    return proc


def jre_only_path(folder: Path) -> str:
    """A PATH of one folder linking every program of this PATH but the JDK's tools: the
    JDK's bin folder contributes ``java`` only."""
    java = shutil.which("java")
    assert java, "the test needs java"
    jdk_bin = Path(java).resolve().parent
    folder.mkdir()
    for entry in os.environ.get("PATH", os.defpath).split(os.pathsep):
        if not entry or not Path(entry).is_dir():
            continue
        for program in Path(entry).iterdir():
            target = program.resolve()
            if (folder / program.name).exists() or not os.access(target, os.X_OK):
                continue
            if target.parent == jdk_bin and program.name != "java":
                continue
            (folder / program.name).symlink_to(target)
    return str(folder)


def user_env(venv: Path, tools: str) -> dict[str, str]:
    drop = ("PYTHON", "PYSPARK", "SPARK_", "JAVA_HOME", "VIRTUAL_ENV", "AWS_", "PYTEST_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{tools}", PYTHONDONTWRITEBYTECODE="1",
               AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing",
               AWS_DEFAULT_REGION="us-east-1", AWS_EC2_METADATA_DISABLED="true")
    return env


def test_wheel_in_a_fresh_venv_runs_a_spark_submit_job_with_java_only(s3_server, tmp_path,
                                                                      built_wheel):
    base = getattr(sys, "_base_executable", sys.executable)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    wheel = built_wheel.wheel
    venv = tmp_path / "venv"
    run([base, "-m", "venv", venv], tmp_path, env, 120)
    run([venv / "bin" / "python", "-m", "pip", "install", "-q", wheel], tmp_path, env,
        INSTALL_TIMEOUT)

    bucket = s3_server.create_bucket(f"clean-{uuid.uuid4().hex[:8]}")
    root = f"s3://{bucket}"
    ds = datasets.daily(f"{root}/events", s3_server.storage_options, days=4,
                        put=datasets.fast_writer(s3_server))
    s3_server.put_objects_fast(bucket, {
        f"pipe/day={d}/part-0.pipe": f"id|note\n1|{d} a\n2|{d} b\n".encode()
        for d in ("2025-01-02", DAY)})

    work = tmp_path / "user"  # the user's own folder: the job and nothing of the repository
    work.mkdir()
    job = work / "job.py"
    shutil.copy(JOB, job)
    uenv = user_env(venv, jre_only_path(tmp_path / "tools"))
    uenv["LISTING_S3A_CACHE"] = str(tmp_path / "no-s3a-connector")  # never fetched
    storage = json.dumps(s3_server.storage_options)
    proc = run([venv / "bin" / "python", "-c", ORCHESTRATE, work, job, str(JOB_TIMEOUT),
                root, storage, DAY], work, uenv, JOB_TIMEOUT + 120)
    log = (work / "driver.log").read_text(errors="replace")
    lines = [line for line in log.splitlines() if line.startswith("RESULT ")]
    assert lines, f"no RESULT line in the driver log:\n{log[-6000:]}"
    got = json.loads(lines[-1].removeprefix("RESULT "))

    site = venv / "lib"
    assert got["javac"] is None  # positive control for the PATH: java only
    assert got["listing_file"].startswith(str(site)) and got["jar"].startswith(str(site))
    assert got["guarded"] is True  # the wheel's jar, loaded by a driver spark-submit started
    master = next(ln for ln in proc.stdout.splitlines() if ln.startswith("MASTER "))
    assert got["master"] == master.removeprefix("MASTER ")
    assert got["pipe"] == [[1, f"{DAY} a"], [2, f"{DAY} b"]]

    def rows(keep) -> int:
        return sum(f.table.num_rows for f in ds.files if keep(f.partition_values))

    assert got["picked_rows"] == rows(lambda v: str(v["date"]) == DAY and v["region"] == "eu")
    assert got["written_rows"] == rows(lambda v: str(v["date"]) <= DAY)
    assert got["written_by"] == "parquet-mr"  # Spark's Parquet writer, in the cluster's tasks
    assert got["written_regions"] == ["eu", "us"]
    assert got["streamed_rows"] == rows(lambda v: v["region"] == "us")
    # no S3A connector in this session: the S3 table stayed on our reader, and says why
    assert got["s3a_jars"] == [] and "hadoop-aws" not in got["spark_jars"]
    assert got["picked_plan"] != "FileScan", got["picked_plan"]
    explained = got["picked_explain"]
    assert explained.startswith("engine: python"), explained
    assert "no S3A connector" in explained and "python -m listing.spark.s3a" in explained

    connect_server(venv, wheel, uenv, tmp_path, ds)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def readme_connect_command(venv: Path, port: int) -> str:
    """The docs' command that starts a Connect server, for ``venv``, on ``port``."""
    section = (ROOT / "docs" / "spark.md").read_text().split("## Spark Connect\n", 1)[1]
    blocks = re.findall(r"```bash\n(.*?)```", section.split("\n## ", 1)[0], re.S)
    assert len(blocks) == 1, blocks
    assert "/path/to/venv/bin/python" in blocks[0]
    lines = [re.sub(r"\s+#.*$", "", line) for line in blocks[0].splitlines()]
    lines = [line for line in lines if line.strip() and not line.lstrip().startswith("#")]
    lines[-1] += (f" --conf spark.connect.grpc.binding.port={port}"
                  " --conf spark.ui.enabled=false --master local[2]")
    return "\n".join(lines).replace("/path/to/venv", str(venv)) + "\n"


def connect_server(venv: Path, wheel: Path, uenv: dict[str, str], tmp_path: Path,
                   ds: datasets.Dataset) -> None:
    """The docs' Spark Connect command, run as written from a shell where the virtualenv
    is not activated (not on PATH), and a client reading S3 through the server."""
    py = venv / "bin" / "python"
    run([py, "-m", "pip", "install", "-q", f"{wheel}[connect]"], tmp_path, uenv,
        INSTALL_TIMEOUT)
    spark_home = Path(run([py, "-c", "import pyspark, os; print(os.path.dirname("
                               "pyspark.__file__))"], tmp_path, uenv, 60).stdout.strip())
    port = free_port()
    daemon = tmp_path / "connect"
    tools = [p for p in uenv["PATH"].split(os.pathsep) if Path(p) != venv / "bin"]
    env = {**uenv, "PATH": os.pathsep.join(tools), "SPARK_PID_DIR": str(daemon),
           "SPARK_LOG_DIR": str(daemon), "SPARK_IDENT_STRING": f"clean-{port}",
           "SPARK_LOCAL_IP": "127.0.0.1"}
    assert "VIRTUAL_ENV" not in env and not shutil.which("spark-submit", path=env["PATH"])
    script = tmp_path / "start-connect.sh"
    script.write_text(readme_connect_command(venv, port))
    run(["bash", script], tmp_path, env, 120)
    try:
        proc = subprocess.run(
            [str(py), "-c", CONNECT_CLIENT, f"sc://127.0.0.1:{port}", f"{ds.root}",
             json.dumps(ds.storage_options), DAY, str(CONNECT_TIMEOUT)],
            cwd=tmp_path / "user", env=uenv, capture_output=True, text=True,
            timeout=CONNECT_TIMEOUT + 120, check=False)
        logs = "\n".join(p.read_text(errors="replace")[-4000:] for p in daemon.glob("*.out"))
        line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
        assert proc.returncode == 0 and line, (proc.stdout[-2000:] + proc.stderr[-4000:]
                                               + "\n--- server ---\n" + logs)
    finally:
        subprocess.run([str(spark_home / "sbin" / "stop-connect-server.sh")], env=env,
                       capture_output=True, timeout=120, check=False)
        stop_leftover(daemon)
    out = json.loads(line.removeprefix("RESULT "))
    assert out["session"].startswith("pyspark.sql.connect")
    assert out["all_count"] == ds.num_rows
    assert out["day_count"] == sum(f.table.num_rows for f in ds.files
                                   if str(f.partition_values["date"]) == DAY) > 0


def stop_leftover(daemon: Path) -> None:
    """Ends the server this test started if stop-connect-server.sh left it (its pid file)."""
    for pid_file in daemon.glob("*.pid"):
        try:
            pid = int(pid_file.read_text().strip())
        except ValueError:
            continue
        for _ in range(30):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(1)
        else:
            os.kill(pid, 9)
