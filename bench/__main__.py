"""``python -m bench``: the benchmarks against the peers, written to ``bench/results/``.

    python -m bench                     # full: an hour or more on 2 cores (bench/README.md)
    python -m bench --quick             # small sizes
    python -m bench --only listing      # one section: listing | throughput | memory | write
                                        #   | streaming | s3a | planning | planning-s3 | client
                                        #   | layouts
                                        #   | latency (listing's latency-model table
                                        #   alone, ours and the peers: ~5 min)
    python -m bench --runs 5 --out /tmp/results

Sections: (1) listing and planning on a moto S3 server, ours against pyarrow.dataset,
Polars and DataFusion; (2) scan throughput into Spark against Spark's own readers, with
a profile of where our time goes; (3) peak memory of one task, from ``bench.memory``;
(4) partitioned writes against Spark's native writer, one task's peak memory, and Spark's
writes to S3 against S3A's default and magic committers, from ``bench.write``; (5)
streaming discovery per trigger against a full listing and Spark's file stream source,
from ``bench.streaming``; (6) S3 tables read through Spark, ours (handed off and on the
Python engine) against Spark's own S3A reader, from ``bench.s3a``; (7)
planning at scale: plans of local trees of 210k and 1 M files against pyarrow.dataset and
Polars, and of a synthetic 10 M-key table, from ``bench.planning``, and that table served
over HTTP as S3 and planned through Spark, from ``bench.planning_s3``; (8) the client's CPU
per key: the measurements behind the code's per-key choices, from ``bench.client_cpu``;
(9) one hour of a Firehose-shaped lake through Spark with a ``layout`` against Spark
reading the hour's folder by hand and listing the lake whole, from ``bench.layouts``.
Prints the tables and writes ``latest.json`` and ``latest.md`` to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import re
import shlex
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from bench import report

SECTIONS = ("listing", "throughput", "memory", "write", "streaming", "s3a", "planning",
            "planning-s3", "client", "layouts")
#: run only when named: the listing section's latency-model table on its own (minutes)
EXTRA_SECTIONS = ("latency",)
ROOT = Path(__file__).resolve().parents[1]


def log(msg: str) -> None:
    print(msg, flush=True)


def _run_module(cmd: list[str], timeout: float) -> subprocess.CompletedProcess[str] | None:
    """A bench module run through its CLI in the repository, or None on timeout."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                              check=False)
    except subprocess.TimeoutExpired:
        return None


def memory_section(size_mb: int, timeout: float) -> dict[str, Any]:
    """Run ``python -m bench.memory`` (someone else's module, used through its CLI) and
    parse its table."""
    cmd = [sys.executable, "-m", "bench.memory", "--size-mb", str(size_mb)]
    t0 = time.perf_counter()
    out = _run_module(cmd, timeout)
    if out is None:
        return {"error": f"timeout after {timeout:.0f} s", "seconds": timeout}
    text = out.stdout
    rows = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 9 and re.fullmatch(r"[\d,.]+", parts[1]) and parts[0] != "format":
            nums = [float(p.replace(",", "")) for p in parts[1:9]]
            rows.append({"format": parts[0], "file_mb": nums[0], "rows": int(nums[1]),
                         "batches": int(nums[2]), "seconds": nums[3], "rows_per_s": nums[4],
                         "mb_per_s": nums[5], "base_mb": nums[6], "peak_mb": nums[7]})
    verdict = next((ln for ln in text.splitlines() if ln.startswith("limit:")), "")
    res: dict[str, Any] = {"command": "python -m bench.memory --size-mb " + str(size_mb),
                           "rows": rows, "verdict": verdict, "exit_code": out.returncode,
                           "output": text, "seconds": time.perf_counter() - t0}
    if not rows:
        res["error"] = f"could not parse bench.memory output (exit {out.returncode}): " + (
            out.stderr[-500:] or text[-500:])
    return res


def write_section(quick: bool, timeout: float, results: Path | None = None) -> dict[str, Any]:
    """Run ``python -m bench.write`` (its own process: it starts its own Spark sessions) and
    keep the tables it prints; its Spark-to-S3 section's JSON, Markdown and chart go to
    ``results``.json/.md/.png."""
    cmd = [sys.executable, "-m", "bench.write"] + (["--quick"] if quick else []) + (
        ["--out", str(results)] if results is not None else [])
    t0 = time.perf_counter()
    out = _run_module(cmd, timeout)
    if out is None:
        return {"error": f"timeout after {timeout:.0f} s", "seconds": timeout}
    tables = [ln for ln in out.stdout.splitlines() if not ln.startswith("[write]")]
    res: dict[str, Any] = {"command": "python " + shlex.join(cmd[1:]),
                           "output": "\n".join(tables).strip(), "exit_code": out.returncode,
                           "seconds": time.perf_counter() - t0}
    if out.returncode != 0 or "| writer |" not in out.stdout:
        res["error"] = f"bench.write failed (exit {out.returncode}): " + (
            out.stderr[-500:] or out.stdout[-500:])
    return res


def streaming_section(quick: bool, runs: int, timeout: float) -> dict[str, Any]:
    """Run ``python -m bench.streaming`` (its own S3 server and Spark session) and keep
    the tables it prints."""
    cmd = [sys.executable, "-m", "bench.streaming", "--runs", str(runs)] + (
        ["--quick"] if quick else [])
    t0 = time.perf_counter()
    out = _run_module(cmd, timeout)
    if out is None:
        return {"error": f"timeout after {timeout:.0f} s", "seconds": timeout}
    res: dict[str, Any] = {"command": "python " + shlex.join(cmd[1:]),
                           "output": out.stdout.strip(), "exit_code": out.returncode,
                           "seconds": time.perf_counter() - t0}
    if out.returncode != 0 or "| quiet trigger |" not in out.stdout:
        res["error"] = f"bench.streaming failed (exit {out.returncode}): " + (
            out.stderr[-500:] or out.stdout[-500:])
    return res


def _module_section(module: str, cmd: list[str], timeout: float) -> dict[str, Any]:
    """Run ``cmd`` (``python -m <module> ...``) and keep the tables it prints from its first
    ``**``; an error names the module, its exit code and the end of its output."""
    t0 = time.perf_counter()
    done = _run_module(cmd, timeout)
    if done is None:
        return {"error": f"timeout after {timeout:.0f} s", "seconds": timeout}
    tables = done.stdout[done.stdout.find("**"):] if "**" in done.stdout else ""
    res: dict[str, Any] = {"command": shlex.join(["python", *cmd[1:]]), "output": tables,
                           "exit_code": done.returncode, "seconds": time.perf_counter() - t0}
    if done.returncode != 0 or not tables:
        res["error"] = f"{module} failed (exit {done.returncode}): " + (
            done.stderr[-800:] or done.stdout[-800:])
    return res


def s3a_section(quick: bool, runs: int, timeout: float, out: Path) -> dict[str, Any]:
    """Run ``python -m bench.s3a`` (its own Spark session) and keep its tables; its JSON,
    Markdown and charts go to ``out``.json/.md/-*.png."""
    cmd = [sys.executable, "-m", "bench.s3a", "--runs", str(runs), "--out", str(out)] + (
        ["--quick"] if quick else [])
    return _module_section("bench.s3a", cmd, timeout)


def planning_section(quick: bool, runs: int, timeout: float, out: Path,
                     data_dir: Path) -> dict[str, Any]:
    """Run ``python -m bench.planning`` (a process per measurement) and keep its tables;
    its JSON, Markdown and charts go to ``out``.json/.md/-*.png."""
    cmd = [sys.executable, "-m", "bench.planning", "--runs", str(runs), "--out", str(out),
           "--data-dir", str(data_dir)] + (["--quick"] if quick else [])
    return _module_section("bench.planning", cmd, timeout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes")
    ap.add_argument("--only", choices=SECTIONS + EXTRA_SECTIONS, action="append",
                    help="run only this section (repeatable)")
    ap.add_argument("--runs", type=int, default=3, help="timed runs per figure (3)")
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results",
                    help="where latest.json / latest.md go (bench/results/)")
    ap.add_argument("--timeout", type=float, default=300,
                    help="seconds a peer may take for one plan or read (300)")
    ap.add_argument("--max-read-files", type=int,
                    help="listing: read results only for queries matching at most this "
                         "many files (3000; quick 1000)")
    ap.add_argument("--data-dir", type=Path,
                    default=Path(tempfile.gettempdir()) / "listing-bench-data",
                    help="throughput data, generated once and reused")
    ap.add_argument("--memory-mb", type=int, help="bench.memory file size (1024; quick 64)")
    args = ap.parse_args(argv)
    only = args.only or list(SECTIONS)
    command = "python -m bench" + (" " + shlex.join(argv if argv is not None else sys.argv[1:])
                                   if (argv if argv is not None else sys.argv[1:]) else "")
    started = dt.datetime.now().astimezone().isoformat(timespec="seconds")
    t0 = time.perf_counter()
    results: dict[str, Any] = {"command": command, "started": started,
                               "machine": report.machine(),
                               "code": report.code_revision(ROOT), "quick": args.quick,
                               "sections": {}}
    for name in SECTIONS + EXTRA_SECTIONS:
        if name not in only:
            continue
        log(f"== {name} ==")
        ts = time.perf_counter()
        try:
            if name == "listing":
                from bench import listing_bench

                cfg = listing_bench.Settings(runs=args.runs, timeout=args.timeout,
                                             max_read_files=args.max_read_files
                                             or (1000 if args.quick else 3000))
                sec = listing_bench.run(args.quick, cfg, log)
            elif name == "latency":
                from bench import listing_bench

                sec = listing_bench.latency_run(
                    args.quick, listing_bench.Settings(runs=args.runs, timeout=args.timeout),
                    log)
            elif name == "throughput":
                from bench import throughput

                sec = throughput.run(args.quick, args.runs, args.data_dir, log)
            elif name == "memory":
                size = args.memory_mb or (64 if args.quick else 1024)
                sec = memory_section(size, timeout=max(args.timeout, 1200))
            elif name == "write":
                sec = write_section(args.quick, timeout=max(args.timeout, 3000),
                                    results=args.out / "write-spark-s3"
                                    / ("quick" if args.quick else "latest"))
            elif name == "s3a":
                sec = s3a_section(args.quick, args.runs, timeout=max(args.timeout, 5400),
                                  out=args.out / "s3a" / ("quick" if args.quick else "latest"))
            elif name == "planning":
                sec = planning_section(
                    args.quick, args.runs, timeout=max(args.timeout, 7200),
                    out=args.out / "planning" / ("quick" if args.quick else "latest"),
                    data_dir=args.data_dir)
            elif name == "planning-s3":
                # one run a figure at 10 M keys: a whole-table plan through Spark takes minutes
                out = args.out / "planning" / ("s3-quick" if args.quick else "s3-latest")
                sec = _module_section("bench.planning_s3", [
                    sys.executable, "-m", "bench.planning_s3",
                    "--runs", str(args.runs if args.quick else 1),
                    "--out", str(out), *(["--quick"] if args.quick else [])],
                    timeout=max(args.timeout, 7200))
            elif name == "layouts":
                out = args.out / "layouts" / ("quick" if args.quick else "latest")
                sec = _module_section("bench.layouts", [
                    sys.executable, "-m", "bench.layouts", "--runs", str(args.runs),
                    "--out", str(out), *(["--quick"] if args.quick else [])],
                    timeout=max(args.timeout, 2400))
            elif name == "client":
                sec = _module_section("bench.client_cpu", [
                    sys.executable, "-m", "bench.client_cpu", *(["--quick"] if args.quick
                                                                 else [])],
                    timeout=max(args.timeout, 1200))
            else:
                sec = streaming_section(args.quick, args.runs, timeout=max(args.timeout, 2400))
        except Exception as err:  # noqa: BLE001 - a failed section is reported, not fatal
            traceback.print_exc()
            sec = {"error": f"{type(err).__name__}: {err}"}
        sec.setdefault("seconds", time.perf_counter() - ts)
        results["sections"][name] = sec
        log(f"== {name}: {sec['seconds'] / 60:.1f} min ==")
    results["seconds"] = time.perf_counter() - t0
    js, md = report.write(results, args.out)
    print()
    print(md.read_text())
    log(f"wrote {js} and {md}")
    return 1 if any("error" in s for s in results["sections"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
