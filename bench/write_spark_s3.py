"""Spark writes to S3: ours against Spark's default committer and S3A's magic committer.

    python -m bench.write --only spark-s3 [--quick] [--spark-s3-mb MB] [--runs N] [--out P]
    python -m bench.write_spark_s3 [--quick] [--mb MB] [--runs N] [--out P]

One moto S3 server (HTTP on loopback, in this process) and one Spark session
(``listing.session()``, ``local[2]``, S3A from ``make s3a``). One Arrow table of the write
bench's schema (``bench.write``: id, amount, name, date, region; rows in random date
order) over :data:`DAYS` dates, ``--mb`` of Arrow data (1 024; quick 50), is staged once
as :data:`STAGED_FILES` local Parquet files; one DataFrame read from them with
``spark.read.parquet`` feeds every writer, so their input cost is the same. Written three
ways, taking turns, median of ``--runs`` (3) after a warm-up round:

- **ours**: ``df.write.format("listing").option("format", "parquet")
  .option("partition_by", "date").mode("overwrite").save("s3://bucket/ours")`` (Spark's
  Parquet writer in the tasks, our upload: the zero-copy multipart commit, manifest,
  publish-then-remove, the conditional lock);
- **default**: ``df.write.partitionBy("date").mode("overwrite").parquet("s3a://bucket/
  default")``: Spark's default commit protocol over Hadoop's FileOutputCommitter (each
  file written under ``_temporary/`` and renamed: copied and deleted, twice);
- **magic**: the same to ``s3a://bucket/magic`` through S3A's magic committer (files
  written as multipart uploads under ``__magic…/`` paths, completed at the final keys by
  the job commit): ``spark-hadoop-cloud``'s PathOutputCommitProtocol and
  BindingParquetOutputCommitter (fetched by Maven from ``bench/magic-committer/pom.xml``
  into ``~/.cache/spark-listing/magic-committer-<pom hash>/`` and put on ``spark.jars``),
  set as SQL confs for the magic writes only, and the S3A committer options as options of
  the write (Spark hands a write's options to its Hadoop job conf).

Every run's requests are counted from the server's log (per kind); the section checks
that the magic writes send ``__magic`` keys and multipart uploads and the default ones
neither. Every output is read back (rows counted by Spark over S3A, ours also through the
listing source). Targets: ours' wall time at most magic's, ours' requests at most the
default committer's. moto is one Python process on the cores Spark's two task threads
and Python workers also use: it serves every byte, so the figures measure it too.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
WRITERS = ("ours", "default", "magic")
#: date partitions of the table
DAYS = 4
#: local Parquet files the input is staged as (Spark packs them into its input tasks)
STAGED_FILES = 8
BUCKET = "bench-write-spark-s3"
MAGIC_POM = Path(__file__).parent / "magic-committer" / "pom.xml"
#: the SQL confs that route a Parquet write through spark-hadoop-cloud's committers
MAGIC_SQL = {
    "spark.sql.sources.commitProtocolClass":
        "org.apache.spark.internal.io.cloud.PathOutputCommitProtocol",
    "spark.sql.parquet.output.committer.class":
        "org.apache.spark.internal.io.cloud.BindingParquetOutputCommitter",
}
#: Spark's own committers, set on the session: with spark-hadoop-cloud on the classpath,
#: Spark makes the magic committer every S3A write's default where these are not set
#: (SparkContext's setDefaultMagicCommitterConfIfNeeded)
DEFAULT_COMMITTERS = {
    "spark.sql.sources.commitProtocolClass":
        "org.apache.spark.sql.execution.datasources.SQLHadoopMapReduceCommitProtocol",
    "spark.sql.parquet.output.committer.class":
        "org.apache.parquet.hadoop.ParquetOutputCommitter",
    "spark.hadoop.fs.s3a.committer.name": "file",
}
#: Hadoop options of the magic writes (a write's options reach its Hadoop job conf)
MAGIC_HADOOP = {
    "mapreduce.outputcommitter.factory.scheme.s3a":
        "org.apache.hadoop.fs.s3a.commit.S3ACommitterFactory",
    "fs.s3a.committer.name": "magic",
    "fs.s3a.committer.magic.enabled": "true",
}


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# --- the magic committer's jar ------------------------------------------------------------

def magic_dir() -> Path:
    from listing.spark.extension import DEFAULT_CACHE_DIR

    key = hashlib.sha256(MAGIC_POM.read_bytes()).hexdigest()[:12]
    return Path(DEFAULT_CACHE_DIR) / f"magic-committer-{key}"


def magic_jars() -> tuple[list[Path], str]:
    """spark-hadoop-cloud's jar (fetched with Maven once), or ``([], why not)``."""
    folder = magic_dir()
    jars = sorted(folder.glob("spark-hadoop-cloud_*.jar"))
    if jars:
        return jars, ""
    mvn = shutil.which("mvn")
    if mvn is None:
        return [], "no `mvn` to fetch spark-hadoop-cloud"
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".magic-", dir=folder.parent) as tmp:
        staged = Path(tmp) / "jars"
        proc = subprocess.run([mvn, "-B", "-q", "-f", str(MAGIC_POM),
                               "dependency:copy-dependencies", "-DincludeScope=runtime",
                               f"-DoutputDirectory={staged}"],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0 or not list(staged.glob("spark-hadoop-cloud_*.jar")):
            return [], ("fetching spark-hadoop-cloud failed: "
                        + (proc.stdout + proc.stderr).strip()[-400:])
        os.replace(staged, folder)
    return sorted(folder.glob("spark-hadoop-cloud_*.jar")), ""


def magic_loads(spark: Any) -> str:
    """``""`` when the JVM loads both committer classes, else why not."""
    jvm = spark._jvm  # noqa: SLF001
    loader = jvm.Thread.currentThread().getContextClassLoader()
    for name in MAGIC_SQL.values():
        try:
            jvm.java.lang.Class.forName(name, True, loader)
        except Exception as err:  # noqa: BLE001 - reported, the section runs without it
            return f"{name} does not load: {str(err).splitlines()[0][:200]}"
    return ""


# --- data ----------------------------------------------------------------------------------

def generate(target_mb: float, seed: int = 13) -> pa.Table:
    """Chunks of ``bench.write``'s schema over :data:`DAYS` dates until ``target_mb`` MiB
    of Arrow data."""
    from bench.write_data import CHUNK_ROWS, SCHEMA, chunk

    rng = np.random.default_rng(seed)
    batches: list[pa.RecordBatch] = []
    size = start = 0
    while size < target_mb * 2**20:
        b = chunk(rng, start, CHUNK_ROWS, days=DAYS)
        batches.append(b)
        size += b.nbytes
        start += b.num_rows
    return pa.Table.from_batches(batches, schema=SCHEMA)


def stage(table: pa.Table, folder: Path) -> int:
    """``table`` as :data:`STAGED_FILES` Parquet files in ``folder``; their bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    step = -(-table.num_rows // STAGED_FILES)
    for i in range(STAGED_FILES):
        pq.write_table(table.slice(i * step, step), folder / f"part-{i}.parquet",
                       row_group_size=1_000_000)
    return sum(p.stat().st_size for p in folder.glob("*.parquet"))


# --- the session and the writers -----------------------------------------------------------

def _writers(spark: Any, df: Any, storage: dict[str, Any]) -> dict[str, Callable[[], None]]:
    def ours() -> None:
        (df.write.format("listing").option("format", "parquet")
         .option("partition_by", "date").option("storage_options", json.dumps(storage))
         .mode("overwrite").save(f"s3://{BUCKET}/ours"))

    def default() -> None:
        df.write.partitionBy("date").mode("overwrite").parquet(f"s3a://{BUCKET}/default")

    def magic() -> None:
        for key, value in MAGIC_SQL.items():
            spark.conf.set(key, value)
        try:
            (df.write.partitionBy("date").mode("overwrite").options(**MAGIC_HADOOP)
             .parquet(f"s3a://{BUCKET}/magic"))
        finally:
            for key in MAGIC_SQL:
                spark.conf.set(key, DEFAULT_COMMITTERS[key])

    return {"ours": ours, "default": default, "magic": magic}


def _stages(spark: Any, group: str) -> dict[str, Any]:
    """The Spark jobs of ``group``: their tasks, their stages' wall (submission to
    completion, summed) and the tasks' executor run and CPU time (summed)."""
    sc = spark.sparkContext
    tracker = sc.statusTracker()
    store = sc._jsc.sc().statusStore()  # noqa: SLF001
    total = {"tasks": 0, "wall_ms": 0, "run_ms": 0, "cpu_ns": 0}
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        for stage in (info.stageIds if info else []):
            data = _stage(store, stage)
            for k in total if data else ():
                total[k] += data[k]  # type: ignore[index]
    return {"tasks": total["tasks"], "stage_wall_s": total["wall_ms"] / 1e3,
            "task_run_s": total["run_ms"] / 1e3, "task_cpu_s": total["cpu_ns"] / 1e9}


def _stage(store: Any, stage: int) -> dict[str, Any] | None:
    try:
        s = store.lastStageAttempt(stage)
    except Exception:  # noqa: BLE001 - a stage the store dropped is left out
        return None
    first, done = s.submissionTime(), s.completionTime()
    wall = (done.get().getTime() - first.get().getTime()) if (
        first.isDefined() and done.isDefined()) else 0
    return {"tasks": s.numCompleteTasks(), "wall_ms": wall, "run_ms": s.executorRunTime(),
            "cpu_ns": s.executorCpuTime()}


def _outputs(server: Any, prefix: str) -> tuple[int, float]:
    """(visible Parquet files, their MiB) under ``prefix`` of the bucket."""
    files, size = 0, 0
    pages = server.client().get_paginator("list_objects_v2").paginate(
        Bucket=BUCKET, Prefix=prefix + "/")
    for page in pages:
        for obj in page.get("Contents", []):
            rel = obj["Key"][len(prefix) + 1:]
            if obj["Key"].endswith(".parquet") and not any(
                    p.startswith(("_", ".")) for p in rel.split("/")):
                files += 1
                size += obj["Size"]
    return files, size / 2**20


def _committer_check(name: str, entries: list[Any]) -> str:
    """What the request log says about the committer a run used ("" when as expected)."""
    magic_keys = sum(1 for e in entries if e.key and "__magic" in e.key)
    posts = sum(1 for e in entries if e.kind == "POST" and e.key
                and e.key.startswith(f"{name}/"))
    if name == "magic" and (not magic_keys or not posts):
        return f"magic run sent {magic_keys} __magic requests and {posts} POSTs"
    if name == "default" and (magic_keys or posts):
        return f"default run sent {magic_keys} __magic requests and {posts} POSTs"
    return ""


def run(mb: float, runs: int, log: Callable[[str], None] = print) -> dict[str, Any]:
    import listing
    from bench import report
    from listing.spark.s3a import connector_jars
    from listing.testing.s3 import S3Server

    if not connector_jars():
        raise RuntimeError("Spark's S3A connector is not fetched: make s3a")
    began = time.perf_counter()
    out: dict[str, Any] = {
        "command": shlex.join(["python", "-m", *_module_argv()]),
        "code": report.code_revision(ROOT),
        "started": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "mb": mb, "runs": runs, "days": DAYS, "load_start": _load(), "writers": {}}
    jars, why = magic_jars()
    workdir = Path(tempfile.mkdtemp(prefix="bench-write-spark-s3-"))
    try:
        t0 = time.perf_counter()
        table = generate(mb)
        staged_bytes = stage(table, workdir / "input")
        out.update(rows=table.num_rows, arrow_mb=table.nbytes / 2**20,
                   staged_mb=staged_bytes / 2**20)
        del table
        log(f"[spark-s3] data: {out['rows']:,} rows, {out['arrow_mb']:,.0f} MiB of Arrow, "
            f"staged {out['staged_mb']:,.0f} MiB Parquet ({time.perf_counter() - t0:.1f} s)")
        conf = {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
                "spark.driver.memory": "3g"}
        if jars:
            conf["spark.jars"] = ",".join(map(str, jars))
            conf.update(DEFAULT_COMMITTERS)
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        spark = listing.session("bench-write-spark-s3", master="local[2]", ui=False,
                                conf=conf)
        spark.sparkContext.setLogLevel("ERROR")
        if jars:
            why = magic_loads(spark)
        out["magic_jar"] = [j.name for j in jars]
        out["magic_missing"] = why
        names = [w for w in WRITERS if w != "magic" or not why]
        if why:
            log(f"[spark-s3] without the magic committer: {why}")
        from bench.s3a import _s3a_conf  # the per-bucket S3A settings bench.s3a uses

        try:
            with S3Server() as server:
                storage = server.storage_options
                server.create_bucket(BUCKET)
                _s3a_conf(spark, storage, SimpleNamespace(bucket=BUCKET))
                df = spark.read.parquet(str(workdir / "input"))
                out["spark_tasks"] = df.rdd.getNumPartitions()
                writers = _writers(spark, df, storage)
                samples: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
                for i in range(runs + 1):
                    for name in names:
                        group = f"bench-{name}-{uuid.uuid4().hex[:8]}"
                        spark.sparkContext.setJobGroup(group, name)
                        with server.log.capture(BUCKET) as cap:
                            t0 = time.perf_counter()
                            writers[name]()
                            wall = time.perf_counter() - t0
                        spark.sparkContext.setJobGroup("bench-idle", "")
                        entries = cap.entries()
                        bad = _committer_check(name, entries)
                        if bad:
                            raise SystemExit(f"[spark-s3] {bad}")
                        counts = {str(k): v for k, v in sorted(cap.counts().items())}
                        r = {"wall": wall, "requests": counts, **_stages(spark, group)}
                        log(f"[spark-s3] {name:<8} {'warm-up' if not i else f'run {i}':<8} "
                            f"{wall:6.2f} s  requests {sum(counts.values()):>4}  "
                            f"stages {r['stage_wall_s']:5.2f} s  task run "
                            f"{r['task_run_s']:5.2f} s  CPU {r['task_cpu_s']:5.2f} s")
                        if i:
                            samples[name].append(r)
                for name, done in samples.items():
                    path = f"s3a://{BUCKET}/{name}"
                    rows = spark.read.parquet(path).count()
                    if name == "ours":
                        listed = (spark.read.format("listing")
                                  .option("storage_options", json.dumps(storage))
                                  .load(f"s3://{BUCKET}/{name}").count())
                        if listed != rows:
                            raise SystemExit(f"ours: Spark's reader counts {rows} rows, "
                                             f"the listing source {listed}")
                    if rows != out["rows"]:
                        raise SystemExit(f"{name} wrote {rows} rows, expected {out['rows']}")
                    files, size = _outputs(server, name)
                    out["writers"][name] = {
                        "wall": statistics.median(r["wall"] for r in done),
                        "walls": [r["wall"] for r in done],
                        "requests": done[-1]["requests"],
                        "request_totals": [sum(r["requests"].values()) for r in done],
                        "stage_wall_s": statistics.median(r["stage_wall_s"] for r in done),
                        "task_run_s": statistics.median(r["task_run_s"] for r in done),
                        "task_cpu_s": statistics.median(r["task_cpu_s"] for r in done),
                        "tasks": done[-1]["tasks"], "files": files, "output_mb": size,
                        "rows": rows}
                server.drop_bucket(BUCKET)
        finally:
            spark.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    out["load_end"] = _load()
    out["seconds"] = time.perf_counter() - began
    return out


def _module_argv() -> list[str]:
    """This process's command as ``-m module args`` (bench.write or this module)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return [spec.name if spec is not None else "bench.write_spark_s3", *sys.argv[1:]]


def header(sec: dict[str, Any]) -> str:
    """The command, code, start, duration and load averages of a run."""
    return (f"Command: `{sec['command']}`, code {sec['code']}, started {sec['started']}, "
            f"took {sec['seconds'] / 60:.1f} min; load average (1, 5, 15 min) "
            f"{', '.join(map(str, sec['load_start']))} at the start, "
            f"{', '.join(map(str, sec['load_end']))} at the end (2 cores, shared).\n\n")


# --- report --------------------------------------------------------------------------------

LABELS = {"ours": "**ours** `format(\"listing\")` (multipart commit)",
          "default": "Spark default committer (FileOutputCommitter over S3A)",
          "magic": "S3A magic committer (spark-hadoop-cloud)"}


def targets(sec: dict[str, Any]) -> dict[str, bool | None]:
    w = sec["writers"]
    ours = w["ours"]
    return {"wall_vs_magic": ours["wall"] <= w["magic"]["wall"] if "magic" in w else None,
            "requests_vs_default": sum(ours["requests"].values())
            <= sum(w["default"]["requests"].values())}


def markdown(sec: dict[str, Any]) -> str:
    w = sec["writers"]
    lines = [f"S3 through Spark (moto over HTTP, `local[2]`): {sec['rows']:,} rows, "
             f"{sec['arrow_mb']:,.0f} MiB of Arrow over {sec['days']} dates, staged as "
             f"{sec['staged_mb']:,.0f} MiB Parquet read in {sec['spark_tasks']} Spark tasks; "
             f"median of {sec['runs']} after a warm-up, writers taking turns; load average "
             f"{sec['load_start'][0]:.1f} → {sec['load_end'][0]:.1f}", "",
             "| writer | wall s | runs s | vs magic | vs default | stages s | task run s "
             "| task CPU s | files | output MB | requests |",
             "| :-- | --: | :-- | --: | --: | --: | --: | --: | --: | --: | :-- |"]
    for name in WRITERS:
        r = w.get(name)
        if r is None:
            continue
        vs_magic = f"{r['wall'] / w['magic']['wall']:.2f}×" if "magic" in w else "–"
        requests = ", ".join(f"{k} {v}" for k, v in r["requests"].items())
        lines.append(f"| {LABELS[name]} | {r['wall']:.2f} | "
                     f"{', '.join(f'{x:.2f}' for x in r['walls'])} | {vs_magic} | "
                     f"{r['wall'] / w['default']['wall']:.2f}× | {r['stage_wall_s']:.2f} | "
                     f"{r['task_run_s']:.2f} | {r['task_cpu_s']:.2f} | {r['files']} | "
                     f"{r['output_mb']:,.1f} | {sum(r['requests'].values())}: {requests} |")
    met = targets(sec)
    yes = {True: "yes", False: "**no**", None: "– (no magic committer)"}
    lines += ["", f"Targets: ours' wall ≤ magic's: {yes[met['wall_vs_magic']]}; ours' "
              f"requests ≤ the default committer's: {yes[met['requests_vs_default']]}."]
    if sec.get("magic_missing"):
        lines.append(f"Magic committer left out: {sec['magic_missing']}.")
    lines += ["", "Every output read back (rows counted by Spark over S3A; ours also by the "
              "listing source); the magic runs checked to send `__magic` keys and multipart "
              "uploads, the default ones neither. Stages s: the write's Spark stages from "
              "submission to completion (the rest of wall is the driver: planning, "
              "Spark's deletion of the old output, the job commit); task run / CPU s: "
              "summed over the tasks (JVM executor time; Python workers' CPU is not in "
              "it)."]
    return "\n".join(lines)


def chart(sec: dict[str, Any], out: Path) -> Path:
    from bench import charts

    plt = charts._plt()  # noqa: SLF001 - the charts module's own helpers
    names = [n for n in WRITERS if n in sec["writers"]]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    w = sec["writers"]
    left.bar(names, [w[n]["wall"] for n in names], color=["C0", "C1", "C2"][:len(names)])
    left.set_ylabel("wall s (median)")
    left.set_title(f"Spark write to S3 (moto): {sec['arrow_mb']:,.0f} MiB, "
                   f"{sec['days']} dates", fontsize=10)
    right.bar(names, [sum(w[n]["requests"].values()) for n in names],
              color=["C0", "C1", "C2"][:len(names)])
    right.set_ylabel("requests")
    right.set_title("requests per write", fontsize=10)
    for ax in (left, right):
        ax.grid(axis="y", alpha=0.3)
    return charts._save(fig, out.with_suffix(".png"))  # noqa: SLF001


def write_out(sec: dict[str, Any], out: Path) -> str:
    """``out``.json, ``out``.md and ``out``.png; returns the Markdown."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(sec, indent=1))
    text = header(sec) + markdown(sec) + "\n"
    out.with_suffix(".md").write_text(text)
    png = chart(sec, out)
    text += f"\n![{png.stem}]({png.name})\n"
    out.with_suffix(".md").write_text(text)
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.write_spark_s3", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="50 MiB of Arrow data")
    ap.add_argument("--mb", type=float, help="MiB of Arrow data (1024; quick 50)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", type=Path, help="write <out>.json, <out>.md and <out>.png")
    args = ap.parse_args(argv)
    sec = run(args.mb or (50 if args.quick else 1024), args.runs,
              lambda m: print(m, file=sys.stderr, flush=True))
    print(write_out(sec, args.out) if args.out else header(sec) + markdown(sec))
    return 0


if __name__ == "__main__":
    sys.exit(main())
