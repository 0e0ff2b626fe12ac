"""``python -m bench.repeated``: one query repeated in a Spark session, on moto S3.

The hourly table of ``bench.s3a`` (``--days`` x 24 hours x 12 keys; 365 days: 105,120
keys) in a moto server in a process of its own, and one hour of it counted (``date =
2025-03-15 AND hour = 7``: 12 files) by four readers in one session, ``--rounds`` rounds,
readers interleaved: Spark's S3A reader in the careful user's form
(``spark.read.option("basePath", root).parquet(root + "/date=…/hour=07/")``), and
``spark.read.format("listing")`` with ``engine=auto`` (the native hand-off),
``engine=python``, and ``engine=python`` with ``list_cache_ttl=5m``. Per reader: the
requests of its first query and of its last (from the server's log), and the median
seconds of the rounds after the first, to the physical plan and to the end of ``count()``.
What repeats cost is what the session's caches (schema, footers, listings) save.

CPU seconds per query, split by process kind (``/proc/<pid>/stat``, user + system): the
driver's Python process (the server runs elsewhere, so none of its CPU is counted here),
Spark's JVM (its own threads) and Spark's Python workers (every process below the JVM,
live ones' own and reaped children's time, plus the JVM's reaped children: workers that
exit in the query count too); the server's own CPU is shown apart. On a loaded machine
CPU seconds are what the wait for a core multiplies, so a reader that plans with CPU
(ours) loses to one that waits on requests (S3A) there first.

``--load N[,M...]``: one pass per number, each with that many busy-loop processes (at this
process's niceness) running through it; ``--load 0,8`` measures the quiet and the loaded
case in one session. The first pass is the result's top level (``readers``), every pass
is under ``passes``. With ``--out``, a PNG chart (bench.charts) goes beside the Markdown.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

READERS = ("spark basePath", "listing native", "listing python", "listing python ttl")
WHERE = "date = DATE '2025-03-15' AND hour = 7"
KINDS = ("driver", "jvm", "workers")
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _frame(spark: Any, reader: str, root: str, storage: dict[str, Any]) -> Any:
    s3a = "s3a" + root[2:]
    if reader == "spark basePath":
        return (spark.read.option("basePath", s3a).parquet(f"{s3a}/date=2025-03-15/hour=07/")
                .where(WHERE))
    r = (spark.read.format("listing").option("storage_options", json.dumps(storage))
         .option("engine", "auto" if reader.endswith("native") else "python"))
    if reader.endswith("ttl"):
        r = r.option("list_cache_ttl", "5m")
    return r.load(root).where(WHERE)


# --- the server, in its own process ------------------------------------------------------

def _serve(conn: Any, days: int) -> None:
    """The server process: build the table, then answer ``mark`` / ``counts`` / ``stop``."""
    from bench.listing_bench import build, hourly_table
    from listing.testing.s3 import S3Server

    table = hourly_table(days)
    with S3Server() as server:
        build(server, table)
        conn.send({"storage": server.storage_options, "bucket": table.bucket,
                   "prefix": table.prefix, "keys": len(table.files)})
        mark = 0
        while True:
            cmd = conn.recv()
            if cmd == "mark":
                mark = len(server.log.entries(table.bucket))
                conn.send(None)
            elif cmd == "counts":
                got = Counter(str(e.kind) for e in server.log.entries(table.bucket)[mark:])
                conn.send(dict(got))
            else:
                conn.send(None)
                return


class RemoteServer:
    """moto S3 holding the hourly table, served by a spawned process: its CPU is not the
    readers' (in this process it would be the driver's), and requests are counted there."""

    def __init__(self, days: int) -> None:
        ctx = mp.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child, days), daemon=True,
                                   name="bench-repeated-s3")
        self.process.start()
        self.info: dict[str, Any] = self._conn.recv()

    def _ask(self, cmd: str) -> Any:
        self._conn.send(cmd)
        return self._conn.recv()

    @contextmanager
    def capture(self) -> Iterator[dict[str, int]]:
        """The requests of the block (LIST/HEAD/GET), filled in on exit."""
        got: dict[str, int] = {}
        self._ask("mark")
        yield got
        c = self._ask("counts")
        got.update({k: c.get(k, 0) for k in ("LIST", "HEAD", "GET")})

    def close(self) -> None:
        try:
            self._ask("stop")
        finally:
            self.process.join(10)
            if self.process.is_alive():
                self.process.kill()


# --- CPU by process kind -----------------------------------------------------------------

def _stat(pid: int) -> tuple[int, float, float] | None:
    """``(ppid, own CPU s, reaped children's CPU s)`` of ``pid``; None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = text[text.rindex(")") + 2:].split()
    own = (int(rest[11]) + int(rest[12])) / _TICK
    return int(rest[1]), own, (int(rest[13]) + int(rest[14])) / _TICK


def _module(pid: int) -> str:
    """What a Python process below the JVM runs: a daemon's or worker's module argument
    (``create_data_source`` for ``pyspark.sql.worker.create_data_source``, ``worker``)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    args = [a for a in raw.decode(errors="replace").split("\0") if a]
    return args[-1].rsplit(".", 1)[-1] if len(args) > 1 else "?"


def _children(pid: int) -> list[int]:
    """The live children of ``pid`` (``/proc/<pid>/task/*/children``)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            out += [int(c) for c in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
        except OSError:
            continue
    return out


class CpuMeter:
    """CPU seconds of the driver (this process), the JVM and the JVM's process tree
    (Spark's Python workers: the daemons, their workers, planning workers) over a block.

    pyspark's daemon ignores SIGCHLD, so a worker that exits leaves no time in its parent's
    reaped children's: the tree is sampled (:data:`SAMPLE_S`) while the block runs, and a
    worker that exits counts with its last sample (losing at most that interval's time).
    The sampling thread's own CPU is taken off the driver's."""

    SAMPLE_S = 0.05

    def __init__(self, jvm_pid: int, server_pid: int | None = None) -> None:
        self.jvm_pid = jvm_pid
        self.server_pid = server_pid
        self._modules: dict[int, str] = {}
        self._jvm_children: list[int] = []

    def _tree(self, jvm_children: bool = True) -> dict[int, tuple[int, float, str]]:
        """Every live process below the JVM: pid -> (ppid, own + reaped children's CPU s,
        its module). The JVM's own children (its daemons: reading its hundred threads'
        lists is the costly part) are looked up again only if ``jvm_children``."""
        if jvm_children or not self._jvm_children:
            self._jvm_children = _children(self.jvm_pid)
        below: dict[int, tuple[int, float, str]] = {}
        frontier = [self.jvm_pid]
        while frontier:
            parent = frontier.pop()
            for pid in self._jvm_children if parent == self.jvm_pid else _children(parent):
                st = _stat(pid)
                if st is None or pid in below:
                    continue
                if pid not in self._modules:
                    self._modules[pid] = _module(pid)
                below[pid] = (st[0], st[1] + st[2], self._modules[pid])
                frontier.append(pid)
        return below

    def _totals(self) -> dict[str, float]:
        me = _stat(os.getpid())
        jvm = _stat(self.jvm_pid)
        server = _stat(self.server_pid) if self.server_pid else None
        return {"driver": me[1] if me else 0.0, "jvm": jvm[1] if jvm else 0.0,
                "jvm_children": jvm[2] if jvm else 0.0, "server": server[1] if server else 0.0}

    @contextmanager
    def measure(self) -> Iterator[dict[str, Any]]:
        """CPU seconds of the block, filled in on exit: per kind, ``total`` (driver + JVM +
        workers), the workers' by module (``by_module``) and ``new_workers`` (processes
        below the JVM seen in the block that were not there at its start)."""
        import threading

        out: dict[str, Any] = {}
        start = self._totals()
        base = self._tree()
        seen = dict(base)
        stop = threading.Event()
        spent = [0.0]

        def sample() -> None:
            t0 = time.thread_time()
            n = 0
            while not stop.wait(self.SAMPLE_S):
                n += 1
                seen.update(self._tree(jvm_children=n % 10 == 0))
            spent[0] = time.thread_time() - t0

        thread = threading.Thread(target=sample, name="cpu-meter", daemon=True)
        thread.start()
        try:
            yield out
        finally:
            stop.set()
            thread.join()
            end = self._tree()
            seen.update(end)
            after = self._totals()
        out.update({k: round(max(after[k] - start[k], 0.0), 3)
                    for k in ("driver", "jvm", "server")})
        out["driver"] = round(max(out["driver"] - spent[0], 0.0), 3)
        by_module: dict[str, float] = defaultdict(float)
        for pid, (ppid, cpu, module) in seen.items():
            if pid not in end and ppid == self.jvm_pid:  # reaped by the JVM: whole, below
                by_module[module] -= base[pid][1] if pid in base else 0.0
            else:
                by_module[module] += cpu - (base[pid][1] if pid in base else 0.0)
        by_module["jvm-reaped"] += after["jvm_children"] - start["jvm_children"]
        out["by_module"] = {k: round(v, 3) for k, v in by_module.items() if round(v, 3)}
        out["workers"] = round(max(sum(by_module.values()), 0.0), 3)
        out["total"] = round(out["driver"] + out["jvm"] + out["workers"], 3)
        out["new_workers"] = len(set(seen) - set(base))


def jvm_pid(spark: Any) -> int:
    """The pid of the session's JVM: the py4j gateway's process (``spark-submit``, which
    execs java), else this process's java child."""
    gateway = spark.sparkContext._gateway  # noqa: SLF001
    proc = getattr(gateway, "proc", None) or getattr(gateway, "java_process", None)
    candidates = [int(proc.pid)] if proc is not None else []
    candidates += [int(e) for e in os.listdir("/proc") if e.isdigit()
                   and (_stat(int(e)) or (0,))[0] in (os.getpid(), *candidates)]
    for pid in candidates:
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "java":
                return pid
        except OSError:
            continue
    raise RuntimeError("no local JVM process for this session (a remote gateway?)")


@contextmanager
def busy_load(n: int) -> Iterator[list[int]]:
    """``n`` busy-loop processes (this process's niceness) for the block; their pids."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
             for _ in range(n)]
    try:
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.kill()
        for p in procs:
            p.wait()


# --- the run -----------------------------------------------------------------------------

def _pass(spark: Any, server: RemoteServer, meter: CpuMeter, root: str, rounds: int,
          log: Callable[[str], Any], load: int) -> dict[str, Any]:
    storage = server.info["storage"]
    got: dict[str, list[dict[str, Any]]] = {r: [] for r in READERS}
    with busy_load(load):
        time.sleep(2 if load else 0)  # let the load average feel it
        load_start = [round(x, 1) for x in os.getloadavg()]
        for i in range(rounds):
            for reader in (READERS if i % 2 == 0 else READERS[::-1]):
                with server.capture() as c, meter.measure() as cpu:
                    t0 = time.perf_counter()
                    df = _frame(spark, reader, root, storage)
                    df._jdf.queryExecution().executedPlan()  # noqa: SLF001
                    t1 = time.perf_counter()
                    rows = df.count()
                    t2 = time.perf_counter()
                m = {"plan_s": t1 - t0, "total_s": t2 - t0, "rows": rows, **c, "cpu": cpu}
                got[reader].append(m)
                log(f"[repeated] load {load} round {i} {reader}: {m}")
        load_end = [round(x, 1) for x in os.getloadavg()]
    out: dict[str, Any] = {"load_procs": load, "load_start": load_start,
                           "load_end": load_end, "readers": {}}
    for reader, ms in got.items():
        later = ms[1:] or ms
        out["readers"][reader] = {
            "first": {k: ms[0][k] for k in ("LIST", "HEAD", "GET")},
            "repeated": {k: later[-1][k] for k in ("LIST", "HEAD", "GET")},
            "plan_s": statistics.median(m["plan_s"] for m in later),
            "total_s": statistics.median(m["total_s"] for m in later),
            "rows": ms[-1]["rows"],
            "cpu_s": {k: round(statistics.median(m["cpu"][k] for m in later), 3)
                      for k in (*KINDS, "total", "server")},
            "new_workers": max(m["cpu"]["new_workers"] for m in later),
            "workers_by_module": _median_modules([m["cpu"]["by_module"] for m in later]),
            "first_cpu_s": ms[0]["cpu"]["total"]}
    base = out["readers"]["spark basePath"]
    for r in out["readers"].values():
        r["vs_s3a_wall"] = round(r["total_s"] / base["total_s"], 3)
        r["vs_s3a_cpu"] = round(r["cpu_s"]["total"] / max(base["cpu_s"]["total"], 1e-9), 3)
    return out


def _median_modules(rows: list[dict[str, float]]) -> dict[str, float]:
    names = sorted({k for r in rows for k in r})
    return {k: round(statistics.median(r.get(k, 0.0) for r in rows), 3) for k in names}


def run(days: int, rounds: int, log: Any = print, loads: tuple[int, ...] = (0,)
        ) -> dict[str, Any]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import listing
    from bench.listing_bench import TableDef
    from bench.s3a import _s3a_conf

    server = RemoteServer(days)
    try:
        spark = listing.session("bench-repeated", ui=False,
                                conf={"spark.sql.shuffle.partitions": "2"})
        try:
            info = server.info
            _s3a_conf(spark, info["storage"],
                      TableDef("hourly", info["bucket"], info["prefix"], []))
            root = f"s3://{info['bucket']}/{info['prefix']}".rstrip("/")
            meter = CpuMeter(jvm_pid(spark), server.process.pid)
            passes = [_pass(spark, server, meter, root, rounds, log, n) for n in loads]
        finally:
            spark.stop()
    finally:
        server.close()
    first = passes[0]
    return {"keys": info["keys"], "rounds": rounds, "cores": os.cpu_count(),
            "nice": os.nice(0), "load": first["load_end"], "readers": first["readers"],
            "passes": {str(p["load_procs"]): p for p in passes}}


def _pass_markdown(p: dict[str, Any]) -> list[str]:
    base = p["readers"]["spark basePath"]["total_s"]
    lines = [f"*{p['load_procs']} busy-loop processes; load average {p['load_start']} → "
             f"{p['load_end']}*", "",
             "| reader | first query LIST/HEAD/GET | repeated LIST/HEAD/GET | plan s "
             "| plan + count s | vs S3A | CPU s: driver / JVM / workers | CPU s total "
             "| CPU vs S3A | new workers |",
             "|---|---|---|--:|--:|--:|--:|--:|--:|--:|"]
    for reader, r in p["readers"].items():
        f, q, c = r["first"], r["repeated"], r["cpu_s"]
        lines.append(f"| {reader} | {f['LIST']}/{f['HEAD']}/{f['GET']} | "
                     f"{q['LIST']}/{q['HEAD']}/{q['GET']} | {r['plan_s']:.2f} | "
                     f"{r['total_s']:.2f} | {r['total_s'] / base:.2f}× | "
                     f"{c['driver']:.2f} / {c['jvm']:.2f} / {c['workers']:.2f} | "
                     f"{c['total']:.2f} | {r['vs_s3a_cpu']:.2f}× | {r['new_workers']} |")
    return lines


def markdown(res: dict[str, Any], command: str, code: str) -> str:
    lines = [f"**One hour of {res['keys']:,} keys, repeated** ({command}; code {code}; "
             f"medians of rounds 2-{res['rounds']}; {res['cores']} cores; load average "
             f"{res['load']})", ""]
    for p in res.get("passes", {}).values() or [{"load_procs": 0, **res}]:
        lines += [*_pass_markdown(p), ""]
    lines.append("CPU s: user + system seconds of the query, per process kind (the driver's "
                 "Python process, Spark's JVM, Spark's Python workers below it), medians; "
                 "the moto server runs in its own process and is not counted. New workers: "
                 "Python processes below the JVM seen during a query that were not there "
                 "at its start (most in a round after the first).")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.repeated", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=int, default=365, help="days of the hourly table (365)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--load", default="0",
                    help="busy-loop processes per pass, comma-separated (0; e.g. 0,8)")
    ap.add_argument("--out", type=Path, help="write OUT.json, OUT.md and OUT.png")
    args = ap.parse_args(argv)
    from bench import report

    loads = tuple(int(n) for n in str(args.load).split(","))
    res = run(args.days, args.rounds, log=lambda m: print(m, file=sys.stderr, flush=True),
              loads=loads)
    argv_text = " ".join(argv if argv is not None else sys.argv[1:])
    command = f"python -m bench.repeated {argv_text}".strip()
    code = report.code_revision(Path(__file__).resolve().parents[1])
    res.update(command=command, code=code)
    text = markdown(res, command, code)
    if args.out is not None:
        from bench.charts import repeated_charts

        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(res, indent=1))
        chart = repeated_charts(res, args.out.with_suffix(".png"))
        text += f"\n\n![wall and CPU seconds per query]({chart.name})"
        args.out.with_suffix(".md").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
