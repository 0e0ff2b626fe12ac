"""Partitioned writes to local files: ours against Spark's native Parquet writer, and the
peak memory of one task writing about 1 GB.

    python -m bench.write                   # 6 M rows, 120 partitions; memory: ~1 GB
    python -m bench.write --quick           # 1 M rows; memory: 64 MB
    python -m bench.write --rows 2000000 --memory-mb 256 --runs 3

Throughput: one Arrow table (id int64, amount double, name string of 16 characters,
date over 30 days, region of 4 values; rows in random partition order, as an unsorted
job writes them) is staged once as a Parquet file; one DataFrame read from it with
``spark.read.parquet`` feeds both Spark writers, so their input cost is the same:

- **native**: ``df.write.partitionBy("date", "region").mode("overwrite").parquet(path)``;
- **source**: ``df.write.format("listing").option("format", "parquet")
  .option("partition_by", "date,region").mode("overwrite").save(path)`` (``listing.session()``);
- **write_table**: ``listing.write.write_table(path, table, partition_by=[...])`` from the
  Arrow table in this process (one task, no Spark; its input is already in memory).

Median of ``--runs`` (3) after a warm-up; every output is checked to hold the same rows
and the same partition directories (and Spark's own reader counts ours). Target: the
source at most 1.5x native's time.

Memory: a fresh child process streams record batches (built chunk by chunk, never more
than one chunk at a time) into ``write_table`` with ``partition_by=["date"]`` (2
partitions) until ``--memory-mb`` of Arrow data went in; its peak RSS (``VmHWM``, as in
``bench.memory``) is reported, next to a child doing the same through one plain
``pyarrow.parquet.ParquetWriter`` as a reference.

Commit (``--only commit``, ``--commit-mb``, 256; quick 32): one overwrite job of 2 date
partitions (``write_task`` then ``commit``, each timed, in a fresh process) to a moto S3
server over HTTP with the zero-copy multipart commit and with the staged-copy commit, and to
local files (staged, renamed); peak RSS over the child's baseline and the server's request
counts per kind.

Peers on S3 (``--only peers``, ``--peer-rows``, 4 800 000; quick 500 000): the same Arrow
table (2 dates, one region) written to the moto server over HTTP by ``write_table``
(``partition_by=["date"]``, an overwrite: the zero-copy multipart commit, manifest and
lock) and by ``pyarrow.dataset.write_dataset`` to s3fs (hive partitioning, pyarrow's
defaults), taking turns, each run in a fresh child process timed from the table in memory
to the committed write, after a small warm-up write there (to another bucket): wall and
CPU seconds (``process_time``, the writer's process only; the server runs in this one),
the server's request counts, the ratios to the peer in the same run (target:
``write_table``'s wall time at most the peer's). Both outputs are read back (rows
counted).

Spark to S3 (``--only spark-s3``, ``--spark-s3-mb``, 1 024 MiB of Arrow; quick 50): ours
(``format("listing")``, the multipart commit) against Spark's default committer and
S3A's magic committer, writing one DataFrame over 4 dates to a moto server through one
``local[2]`` session: :mod:`bench.write_spark_s3` (``--out`` names its JSON, Markdown and
PNG chart).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from bench.write_data import CHUNK_ROWS, DAYS, REGIONS, SCHEMA, chunk

ROOT = Path(__file__).resolve().parents[1]
TARGET = 1.5


# --- data ----------------------------------------------------------------------------------

def generate(rows: int, seed: int = 7) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.Table.from_batches([chunk(rng, s, min(CHUNK_ROWS, rows - s))
                                  for s in range(0, rows, CHUNK_ROWS)], schema=SCHEMA)


def visible(root: Path) -> tuple[int, set[str], int]:
    """(rows, partition directories, files) of the Parquet files a reader sees."""
    rows, parts, files = 0, set(), 0
    for d, dirs, names in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(("_", "."))]
        for name in names:
            if name.startswith(("_", ".")) or not name.endswith(".parquet"):
                continue
            rows += pq.read_metadata(os.path.join(d, name)).num_rows
            parts.add(os.path.relpath(d, root))
            files += 1
    return rows, parts, files


# --- throughput ----------------------------------------------------------------------------

def throughput(rows: int, runs: int, workdir: Path) -> dict[str, Any]:
    from listing import session
    from listing.write import write_table

    t0 = time.perf_counter()
    table = generate(rows)
    staging = workdir / "input.parquet"
    pq.write_table(table, staging, row_group_size=1_000_000)
    print(f"[write] data: {rows:,} rows, {table.nbytes / 2**20:,.0f} MB in Arrow, staged "
          f"{staging.stat().st_size / 2**20:,.0f} MB Parquet ({time.perf_counter() - t0:.1f} s)",
          file=sys.stderr, flush=True)
    spark = session(app_name="listing-bench-write", master="local[2]", ui=False,
                    conf={"spark.sql.shuffle.partitions": "2",
                          "spark.default.parallelism": "2"})
    spark.sparkContext.setLogLevel("ERROR")
    df = spark.read.parquet(str(staging))
    tasks = df.rdd.getNumPartitions()
    out = {name: workdir / name for name in ("native", "source", "write_table")}

    writers: dict[str, Callable[[], None]] = {
        "native": lambda: df.write.partitionBy("date", "region").mode("overwrite")
        .parquet(str(out["native"])),
        "source": lambda: df.write.format("listing").option("format", "parquet")
        .option("partition_by", "date,region").mode("overwrite").save(str(out["source"])),
        "write_table": lambda: write_table(str(out["write_table"]), table,
                                           partition_by=["date", "region"], mode="overwrite"),
    }
    times: dict[str, list[float]] = {}
    try:
        for name, fn in writers.items():
            times[name] = []
            for i in range(runs + 1):
                t0 = time.perf_counter()
                fn()
                seconds = time.perf_counter() - t0
                if i:
                    times[name].append(seconds)
                print(f"[write] {name:<11} {'warm-up' if not i else f'run {i}':<8} "
                      f"{seconds:6.2f} s", file=sys.stderr, flush=True)
        checks = {name: visible(path) for name, path in out.items()}
        spark_count = spark.read.parquet(str(out["source"])).count()
    finally:
        spark.stop()
    seen = {(n, frozenset(p)) for n, p, _ in checks.values()}
    p0 = checks["native"][1]
    if seen != {(rows, frozenset(p0))} or len(p0) != DAYS * len(REGIONS) or \
            spark_count != rows:
        raise SystemExit(f"outputs differ: rows/partitions {[(n, len(p)) for n, p in seen]}, "
                         f"Spark's count of ours {spark_count}, expected {rows}")
    return {"rows": rows, "runs": runs, "spark_tasks": tasks,
            "partitions": len(p0), "files": {k: v[2] for k, v in checks.items()},
            "seconds": {k: statistics.median(v) for k, v in times.items()},
            "times": times, "staged_mb": staging.stat().st_size / 2**20,
            "output_mb": {k: _mb(p) for k, p in out.items()}}


def _mb(root: Path) -> float:
    return sum(f.stat().st_size for f in root.rglob("*.parquet")) / 2**20


# --- memory: one task in a child process -----------------------------------------------------

def memory_child(how: str, target_mb: int, out_dir: str) -> dict[str, Any]:
    from bench.memory import rss_mb
    from listing.write import write_table

    baseline = rss_mb()
    rng = np.random.default_rng(11)
    fed = {"rows": 0, "bytes": 0, "batches": 0}

    def batches() -> Iterator[pa.RecordBatch]:
        while fed["bytes"] < target_mb << 20:
            batch = chunk(rng, fed["rows"], CHUNK_ROWS, days=2, regions=REGIONS[:1])
            fed["rows"] += batch.num_rows
            fed["bytes"] += batch.nbytes
            fed["batches"] += 1
            yield batch

    t0 = time.perf_counter()
    if how == "write_table":
        result = write_table(out_dir, batches(), partition_by=["date"], mode="overwrite")
        files, written = len(result.files), result.metrics["bytes_written"]
    else:  # the reference: one pyarrow ParquetWriter, same batches, no partitioning
        path = os.path.join(out_dir, "one.parquet")
        os.makedirs(out_dir, exist_ok=True)
        with pq.ParquetWriter(path, SCHEMA) as writer:
            for batch in batches():
                writer.write_batch(batch)
        files, written = 1, os.path.getsize(path)
    seconds = time.perf_counter() - t0
    return {"how": how, "rows": fed["rows"], "input_mb": fed["bytes"] / 2**20,
            "batches": fed["batches"], "files": files, "written_mb": written / 2**20,
            "seconds": seconds, "baseline_mb": baseline, "peak_mb": rss_mb()}


def memory(target_mb: int, workdir: Path) -> list[dict[str, Any]]:
    results = []
    for how in ("write_table", "ParquetWriter"):
        out_dir = workdir / f"mem-{how}"
        proc = subprocess.run([sys.executable, "-m", "bench.write", "--memory-child", how,
                               str(target_mb), str(out_dir)], capture_output=True, text=True,
                              check=False, cwd=ROOT)
        if proc.returncode != 0:
            raise SystemExit(f"memory child {how} failed:\n{proc.stderr}")
        results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        shutil.rmtree(out_dir, ignore_errors=True)
        print(f"[write] memory {how}: peak {results[-1]['peak_mb']:.0f} MB", file=sys.stderr,
              flush=True)
    return results


# --- the commit on S3 (moto) and local files: requests, seconds, peak RSS per GB ----------

def s3_child(protocol: str, target_mb: int, url: str, options: str) -> dict[str, Any]:
    """One job (2 date partitions) written the way a Spark task and its driver would:
    ``write_task`` (timed: encoding and uploads), then ``commit`` (timed)."""
    from bench.memory import rss_mb
    from listing.write import WriteJob

    rng = np.random.default_rng(11)
    fed = {"rows": 0, "bytes": 0}

    def batches() -> Iterator[pa.RecordBatch]:
        while fed["bytes"] < target_mb << 20:
            batch = chunk(rng, fed["rows"], CHUNK_ROWS, days=2, regions=REGIONS[:1])
            fed["rows"] += batch.num_rows
            fed["bytes"] += batch.nbytes
            yield batch

    baseline = rss_mb()
    job = WriteJob(url, SCHEMA, partition_by=["date"], mode="overwrite",
                   storage_options=json.loads(options), commit_protocol=protocol)
    job.setup()
    t0 = time.perf_counter()
    task = job.write_task(batches())
    t1 = time.perf_counter()
    result = job.commit([task])
    t2 = time.perf_counter()
    return {"protocol": protocol, "rows": fed["rows"], "input_mb": fed["bytes"] / 2**20,
            "files": len(result.files), "written_mb": result.metrics["bytes_written"] / 2**20,
            "task_s": t1 - t0, "commit_s": t2 - t1, "baseline_mb": baseline,
            "peak_mb": rss_mb()}


def s3_commit(target_mb: int, workdir: Path) -> list[dict[str, Any]]:
    """The multipart (zero-copy) and staged-copy commits against the moto server over
    HTTP, and the staged commit (renames) on local files; the server's log counts the
    requests of the tasks and of the commit."""
    from listing.testing.s3 import S3Server

    results = []
    with S3Server() as server:
        bucket = server.create_bucket("bench-write")
        for protocol, url in (("multipart", f"s3://{bucket}/mp"),
                              ("copy", f"s3://{bucket}/cp"),
                              ("copy", str(workdir / "local"))):
            with server.log.capture(bucket) as cap:
                proc = subprocess.run(
                    [sys.executable, "-m", "bench.write", "--s3-child", protocol,
                     str(target_mb), url, json.dumps(server.storage_options)],
                    capture_output=True, text=True, check=False, cwd=ROOT)
            if proc.returncode != 0:
                raise SystemExit(f"s3 child {protocol} {url} failed:\n{proc.stderr}")
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            r["store"] = "local" if not url.startswith("s3://") else "S3 (moto)"
            r["requests"] = dict(sorted(cap.counts().items()))
            results.append(r)
            print(f"[write] commit {r['store']} {protocol}: task {r['task_s']:.1f} s, commit "
                  f"{r['commit_s']:.1f} s, peak {r['peak_mb']:.0f} MB", file=sys.stderr,
                  flush=True)
        server.drop_bucket(bucket)
    shutil.rmtree(workdir / "local", ignore_errors=True)
    return results


# --- peers on S3: write_table against pyarrow.dataset.write_dataset to s3fs -----------------

PEERS = ("write_table", "write_dataset")


def date_table(rows: int) -> pa.Table:
    """``rows`` rows of the bench's schema over 2 dates and one region."""
    rng = np.random.default_rng(11)
    return pa.Table.from_batches([chunk(rng, s, min(CHUNK_ROWS, rows - s), days=2,
                                        regions=REGIONS[:1])
                                  for s in range(0, rows, CHUNK_ROWS)], schema=SCHEMA)


def peer_child(how: str, rows: int, url: str, options: str) -> dict[str, Any]:
    """One write of :func:`date_table` to ``url`` by ``how``, timed (wall and this
    process's CPU) from the table in memory to the committed files, after a warm-up write
    of 1,000 rows to ``url``'s bucket with ``-warm`` appended (imports and the S3 client
    made: what a long-lived process has)."""
    import pyarrow.dataset as ds

    from listing.write import write_table

    opts = json.loads(options)
    table = date_table(rows)
    fs = None
    if how == "write_dataset":
        import s3fs
        fs = s3fs.S3FileSystem(**opts, skip_instance_cache=True)

    def write(data: pa.Table, to: str) -> None:
        if how == "write_table":
            write_table(to, data, partition_by=["date"], mode="overwrite",
                        storage_options=opts)
        else:
            ds.write_dataset(data, to.removeprefix("s3://"), format="parquet",
                             partitioning=["date"], partitioning_flavor="hive",
                             filesystem=fs, existing_data_behavior="delete_matching")

    bucket, _, key = url.removeprefix("s3://").partition("/")
    write(table.slice(0, 1000), f"s3://{bucket}-warm/{key}")
    c0, t0 = time.process_time(), time.perf_counter()
    write(table, url)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"how": how, "wall": wall, "cpu": cpu, "input_mb": table.nbytes / 2**20}


def s3_peers(rows: int, runs: int) -> dict[str, Any]:
    """``write_table`` and ``write_dataset`` taking turns (a warm-up each, then ``runs``),
    each in a fresh child; the server's log counts each run's requests."""
    import pyarrow.dataset as ds
    import s3fs

    from listing.testing.s3 import S3Server

    out: dict[str, Any] = {"rows": rows, "runs": runs, "writers": {}}
    with S3Server() as server:
        bucket = server.create_bucket("bench-write-peers")
        server.create_bucket(f"{bucket}-warm")  # each child's warm-up write: not counted
        options = json.dumps(server.storage_options)
        runs_of: dict[str, list[dict[str, Any]]] = {how: [] for how in PEERS}
        for i in range(runs + 1):
            for how in PEERS:
                url = f"s3://{bucket}/{how}"
                with server.log.capture(bucket) as cap:
                    proc = subprocess.run([sys.executable, "-m", "bench.write", "--peer-child",
                                           how, str(rows), url, options],
                                          capture_output=True, text=True, check=False, cwd=ROOT)
                if proc.returncode != 0:
                    raise SystemExit(f"peer child {how} failed:\n{proc.stderr}")
                r = json.loads(proc.stdout.strip().splitlines()[-1])
                r["requests"] = {str(k): v for k, v in sorted(cap.counts().items())}
                out["input_mb"] = r["input_mb"]
                print(f"[write] peers {how:<13} {'warm-up' if not i else f'run {i}':<8} "
                      f"wall {r['wall']:5.2f} s  CPU {r['cpu']:5.2f} s  requests "
                      f"{sum(r['requests'].values())}", file=sys.stderr, flush=True)
                if i:
                    runs_of[how].append(r)
        fs = s3fs.S3FileSystem(**server.storage_options, skip_instance_cache=True)
        for how, done in runs_of.items():
            read = ds.dataset(f"{bucket}/{how}", filesystem=fs, format="parquet",
                              partitioning="hive").count_rows()
            if read != rows:
                raise SystemExit(f"{how} wrote {read} rows, expected {rows}")
            files = [f for f in fs.find(f"{bucket}/{how}") if f.endswith(".parquet")]
            out["writers"][how] = {
                "wall": statistics.median(r["wall"] for r in done),
                "cpu": statistics.median(r["cpu"] for r in done),
                "walls": [r["wall"] for r in done], "cpus": [r["cpu"] for r in done],
                "requests": done[-1]["requests"], "files": len(files),
                "output_mb": sum(fs.size(f) for f in files) / 2**20}
        server.drop_bucket(bucket)
        server.drop_bucket(f"{bucket}-warm")
    return out


# --- report --------------------------------------------------------------------------------

def report(tp: dict[str, Any] | None, mem: list[dict[str, Any]] | None,
           s3: list[dict[str, Any]] | None = None,
           peers: dict[str, Any] | None = None) -> str:
    lines: list[str] = []
    if peers is not None:
        peer = peers["writers"]["write_dataset"]
        lines += [f"S3 (moto over HTTP): {peers['rows']:,} rows, "
                  f"{peers['input_mb']:,.0f} MiB of Arrow, 2 dates; median of "
                  f"{peers['runs']} after a warm-up, writers taking turns, each in a fresh "
                  "child (CPU: the writer's process)", "",
                  "| writer | wall s | CPU s | wall vs peer | CPU vs peer | files | output MB "
                  "| requests | target | met |",
                  "| :-- | --: | --: | --: | --: | --: | --: | :-- | :-: | :-: |"]
        labels = {"write_table": "**ours** `write_table` (multipart commit)",
                  "write_dataset": "`pyarrow.dataset.write_dataset` to s3fs"}
        for how, label in labels.items():
            r = peers["writers"][how]
            requests = ", ".join(f"{k} {v}" for k, v in r["requests"].items())
            ours = how == "write_table"
            ratio = r["wall"] / peer["wall"]
            lines.append(f"| {label} | {r['wall']:.2f} | {r['cpu']:.2f} | {ratio:.2f}× | "
                         f"{r['cpu'] / peer['cpu']:.2f}× | {r['files']} | "
                         f"{r['output_mb']:,.1f} | {sum(r['requests'].values())}: {requests} "
                         f"| {'≤ 1.0×' if ours else ''} "
                         f"| {('yes' if ratio <= 1.0 else '**no**') if ours else ''} |")
        lines += [""]
    if tp is not None:
        native = tp["seconds"]["native"]
        lines += [f"{tp['rows']:,} rows, {tp['partitions']} partitions (date × region), "
                  f"input {tp['staged_mb']:,.0f} MB Parquet in {tp['spark_tasks']} Spark "
                  f"tasks, `local[2]`; median of {tp['runs']} after a warm-up", "",
                  "| writer | seconds | M rows/s | files | output MB | vs native | target | met |",
                  "| :-- | --: | --: | --: | --: | --: | :-: | :-: |"]
        labels = {"native": "Spark native `partitionBy(...).parquet`",
                  "source": "**ours** `format(\"listing\")`",
                  "write_table": "ours `write_table` (Arrow, one task)"}
        for name, label in labels.items():
            s = tp["seconds"][name]
            ratio = s / native
            target = f"≤ {TARGET}×" if name == "source" else ""
            met = ("yes" if ratio <= TARGET else "**no**") if name == "source" else ""
            lines.append(f"| {label} | {s:.2f} | {tp['rows'] / s / 1e6:.2f} | "
                         f"{tp['files'][name]} | {tp['output_mb'][name]:,.0f} | "
                         f"{ratio:.2f}× | {target} | {met} |")
        lines += ["", "All three outputs: same row count and same partition set (checked); "
                  "Spark's reader counts ours."]
    if mem is not None:
        lines += ["", "| one task | input MB (Arrow) | rows | files | written MB | seconds "
                  "| baseline MB | peak RSS MB |",
                  "| :-- | --: | --: | --: | --: | --: | --: | --: |"]
        for r in mem:
            label = ("`write_table`, partition_by date (2 partitions)"
                     if r["how"] == "write_table" else "reference: one `pq.ParquetWriter`")
            lines.append(f"| {label} | {r['input_mb']:,.0f} | {r['rows']:,} | {r['files']} | "
                         f"{r['written_mb']:,.0f} | {r['seconds']:.2f} | "
                         f"{r['baseline_mb']:.0f} | **{r['peak_mb']:.0f}** |")
    if s3 is not None:
        lines += ["", "| commit | store | written MB | files | task s | commit s | s per GB "
                  "| peak RSS − baseline MB | requests (tasks + commit) |",
                  "| :-- | :-- | --: | --: | --: | --: | --: | --: | :-- |"]
        for r in s3:
            gb = r["written_mb"] / 1024
            label = ("**zero-copy** (multipart)" if r["protocol"] == "multipart"
                     else "staged, renamed" if r["store"] == "local" else "staged, COPY")
            requests = ", ".join(f"{k} {v}" for k, v in r["requests"].items()) or "none"
            lines.append(f"| {label} | {r['store']} | {r['written_mb']:,.0f} | {r['files']} | "
                         f"{r['task_s']:.1f} | {r['commit_s']:.2f} | "
                         f"{(r['task_s'] + r['commit_s']) / gb:.1f} | "
                         f"{r['peak_mb'] - r['baseline_mb']:,.0f} | {requests} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.write", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, help="rows of the throughput table (6 000 000; "
                    "quick 1 000 000)")
    ap.add_argument("--memory-mb", type=int, help="Arrow data one task writes (1024; quick 64)")
    ap.add_argument("--runs", type=int, default=3, help="timed runs after a warm-up (3)")
    ap.add_argument("--quick", action="store_true", help="small sizes")
    ap.add_argument("--only", choices=("throughput", "memory", "commit", "peers", "spark-s3"),
                    help="one section")
    ap.add_argument("--peer-rows", type=int, help="rows the S3 peers section writes "
                    "(4 800 000; quick 500 000)")
    ap.add_argument("--commit-mb", type=int, help="Arrow data the commit section writes to "
                    "S3 (moto) and local files per commit protocol (256; quick 32)")
    ap.add_argument("--spark-s3-mb", type=float, help="MiB of Arrow data the Spark-to-S3 "
                    "section writes (1024; quick 50)")
    ap.add_argument("--out", type=Path, help="the Spark-to-S3 section's <out>.json, .md "
                    "and .png")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--memory-child", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--s3-child", nargs=4, help=argparse.SUPPRESS)
    ap.add_argument("--peer-child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.memory_child:
        how, mb, out_dir = args.memory_child
        print(json.dumps(memory_child(how, int(mb), out_dir)))
        return 0
    if args.peer_child:
        how, rows_text, url, options = args.peer_child
        print(json.dumps(peer_child(how, int(rows_text), url, options)))
        return 0
    if args.s3_child:
        protocol, mb, url, options = args.s3_child
        print(json.dumps(s3_child(protocol, int(mb), url, options)))
        return 0
    rows = args.rows or (1_000_000 if args.quick else 6_000_000)
    memory_mb = args.memory_mb or (64 if args.quick else 1024)
    commit_mb = args.commit_mb or (32 if args.quick else 256)
    peer_rows = args.peer_rows or (500_000 if args.quick else 4_800_000)
    workdir = Path(tempfile.mkdtemp(prefix="bench-write-"))
    t0 = time.perf_counter()
    try:
        tp = throughput(rows, args.runs, workdir) if args.only in (None, "throughput") else None
        mem = memory(memory_mb, workdir) if args.only in (None, "memory") else None
        s3 = s3_commit(commit_mb, workdir) if args.only in (None, "commit") else None
        peers = s3_peers(peer_rows, args.runs) if args.only in (None, "peers") else None
        spark_s3 = None
        if args.only in (None, "spark-s3"):
            from bench import write_spark_s3

            spark_s3 = write_spark_s3.run(
                args.spark_s3_mb or (50 if args.quick else 1024), args.runs,
                lambda m: print(m, file=sys.stderr, flush=True))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if args.json:
        from bench import charts

        results = {"throughput": tp, "memory": mem, "commit": s3, "peers": peers,
                   "spark_s3": spark_s3}
        Path(args.json).write_text(json.dumps(results, indent=1))
        charts.write_charts(results, Path(args.json).with_suffix(""))  # PNGs beside it
    print(report(tp, mem, s3, peers))
    if spark_s3 is not None:
        from bench import write_spark_s3

        print("\n" + (write_spark_s3.write_out(spark_s3, args.out) if args.out
                      else write_spark_s3.header(spark_s3) + write_spark_s3.markdown(spark_s3)))
    print(f"\n(total {time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
