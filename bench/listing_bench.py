"""Listing and planning at scale: S3 requests and time per query, ours against the peers.

How the trees are built: each table gets its own bucket on one moto S3 server running
(over real HTTP, on loopback) in this process. One tiny but valid Parquet payload
(3 rows of ``listing.testing.datasets.DATA_SCHEMA``: id int64, amount double, name string) is
encoded once and the same bytes are stored under every key with
``S3Server.put_objects_fast`` (moto's in-process backend, ~20 000 keys/s; the
``listing.testing.datasets`` builders encode one random file per key, which is ~100× slower
at this size). Layouts follow ``listing.testing.datasets.hourly`` / ``daily``:

- ``hourly``: ``date=YYYY-MM-DD/hour=HH/part-N.parquet``, hours zero-padded on disk,
  365 days × 24 hours × 12 files = 105 120 keys (``--quick``: 30 days, 8 640 keys);
- ``daily``: ``date=YYYY-MM-DD/region={eu,us}/part-N.parquet``, 730 days × 2 regions ×
  2 files = 2 920 keys (``--quick``: 60 days).

Every reader runs in its own worker process (:mod:`bench.peers`); requests are counted
by the server for each command. Per query a first run warms up; when it took longer than
``long_s`` (a full listing of the big table on moto takes over half a minute) it is kept as
the only sample, otherwise ``runs`` more runs are timed and the median reported.

moto caveat: moto answers every ListObjects by scanning and sorting the whole bucket and
serialises a page slowly (~0.3 s per 1 000-key page on a 100 000-key bucket, against
~0.1-0.3 s on S3, and a narrow LIST still pays for the scan), so absolute times of full
listings are moto's, not S3's. Request counts are exact and do not depend on the server.

The hourly table is also planned sequentially (``max_concurrent_requests=1``) and in
parallel (8) for the full listing, ``hour = 7`` and the point query, against moto and
against :mod:`bench.latency` (a model of S3 latency, used only by bench/: ListObjectsV2
answered after a fixed delay, where concurrent requests really wait concurrently).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.peers import READERS
from listing.options import ListingOptions

DEFAULT_CONCURRENCY = ListingOptions().max_concurrent_requests

ROWS_PER_FILE = 3
PEERS = ("pyarrow", "polars", "datafusion", "datafusion+stats")
KINDS = ("LIST", "GET", "HEAD")
ROOT = Path(__file__).resolve().parents[1]


# --- tables and queries --------------------------------------------------------------------


@dataclass
class TableDef:
    """One bucket's tree: keys with their typed partition values."""

    name: str
    bucket: str
    prefix: str
    partitions: list[tuple[str, str]]  # (column, "date" | "int" | "str"), directory order
    files: list[tuple[str, dict[str, Any]]] = field(default_factory=list, repr=False)
    readers: tuple[str, ...] = READERS

    def spec(self, storage_options: dict[str, Any]) -> dict[str, Any]:
        """What a worker needs to open the table."""
        return {"url": f"s3://{self.bucket}/{self.prefix}", "partitions": self.partitions,
                "data_schema": [("id", "int64"), ("amount", "float64"), ("name", "string")],
                "storage_options": storage_options}


@dataclass
class Query:
    name: str
    label: str
    conjuncts: list[dict[str, Any]]

    def matches(self, values: dict[str, Any]) -> bool:
        for c in self.conjuncts:
            v = values[c["col"]]
            v = v.isoformat() if isinstance(v, dt.date) else v
            vals = c["values"]
            if c["op"] == "=" and v != vals[0]:
                return False
            if c["op"] == "between" and not vals[0] <= v <= vals[1]:
                return False
            if c["op"] == "in" and v not in vals:
                return False
        return True


def _payload() -> bytes:
    import pyarrow as pa

    from listing.testing.datasets import DATA_SCHEMA, encode

    table = pa.table({"id": [1, 2, 3], "amount": [1.5, 2.5, 3.5], "name": ["a", "b", "c"]},
                     schema=DATA_SCHEMA)
    return encode(table, "parquet")


def hourly_table(days: int, files_per_hour: int = 12) -> TableDef:
    start = dt.date(2025, 1, 1)
    t = TableDef("hourly", "bench-hourly", "events/", [("date", "date"), ("hour", "int")],
                 readers=tuple(r for r in READERS if r != "datafusion+stats"))
    for d in range(days):
        day = start + dt.timedelta(days=d)
        for h in range(24):
            for i in range(files_per_hour):
                key = f"{t.prefix}date={day.isoformat()}/hour={h:02d}/part-{i}.parquet"
                t.files.append((key, {"date": day, "hour": h}))
    return t


def daily_table(days: int, files_per_partition: int = 2) -> TableDef:
    start = dt.date(2024, 1, 1)
    t = TableDef("daily", "bench-daily", "sales/", [("date", "date"), ("region", "str")])
    for d in range(days):
        day = start + dt.timedelta(days=d)
        for region in ("eu", "us"):
            for i in range(files_per_partition):
                key = f"{t.prefix}date={day.isoformat()}/region={region}/part-{i}.parquet"
                t.files.append((key, {"date": day, "region": region}))
    return t


def _c(col: str, op: str, kind: str, *values: Any) -> dict[str, Any]:
    vals = [v.isoformat() if isinstance(v, dt.date) else v for v in values]
    return {"col": col, "op": op, "type": kind, "values": vals}


def queries(table: TableDef) -> list[Query]:
    """The six queries, with dates placed inside the table whatever its length."""
    dates = sorted({v["date"] for _, v in table.files})
    n = len(dates)
    mid = dates[n // 5]
    week = (mid - dt.timedelta(days=3), mid + dt.timedelta(days=3))
    three = [dates[n // 10], dates[n // 2], dates[(9 * n) // 10]]
    second, kind, value = table.partitions[1][0], table.partitions[1][1], (
        7 if table.partitions[1][1] == "int" else "eu")
    point_label = "one hour" if second == "hour" else "one day, one region"
    return [
        Query("point", f"{point_label}: date = {mid} AND {second} = {value!r}",
              [_c("date", "=", "date", mid), _c(second, "=", kind, value)]),
        Query("day", f"one day: date = {mid}", [_c("date", "=", "date", mid)]),
        Query("week", f"one week: date BETWEEN {week[0]} AND {week[1]}",
              [_c("date", "between", "date", *week)]),
        Query("in3", f"date IN ({', '.join(str(d) for d in three)})",
              [_c("date", "in", "date", *three)]),
        Query("level2", f"second level only: {second} = {value!r}",
              [_c(second, "=", kind, value)]),
        Query("all", "no filter", []),
    ]


def build(server: Any, table: TableDef) -> float:
    """Create the bucket and fill it in-process; returns seconds taken."""
    t0 = time.perf_counter()
    server.drop_bucket(table.bucket)
    server.create_bucket(table.bucket)
    payload = _payload()
    chunk: dict[str, bytes] = {}
    for key, _ in table.files:
        chunk[key] = payload
        if len(chunk) >= 10_000:
            server.put_objects_fast(table.bucket, chunk)
            chunk = {}
    if chunk:
        server.put_objects_fast(table.bucket, chunk)
    return time.perf_counter() - t0


# --- workers --------------------------------------------------------------------------------


class Timeout(Exception):
    pass


class Worker:
    """One reader's worker process (``python -m bench.peers <reader>``), restarted after a
    timeout. Its stderr goes to a log file so a chatty library cannot block it."""

    def __init__(self, reader: str, log_dir: Path) -> None:
        self.reader = reader
        self.log_path = log_dir / f"worker-{reader.replace('+', '_')}.log"
        self.proc: subprocess.Popen[str] | None = None

    def _start(self) -> subprocess.Popen[str]:
        if self.proc is None or self.proc.poll() is not None:
            log = open(self.log_path, "a")  # noqa: SIM115 - owned by the child process
            env = {**os.environ, "PYTHONUNBUFFERED": "1", "POLARS_VERBOSE": "0"}
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "bench.peers", self.reader], cwd=ROOT, env=env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
                bufsize=1)
            log.close()
        return self.proc

    def call(self, cmd: dict[str, Any], timeout: float) -> dict[str, Any]:
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(cmd) + "\n")
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        if not ready:
            self.stop(kill=True)
            raise Timeout(f"no answer within {timeout:.0f} s")
        line = proc.stdout.readline()
        if not line:
            code = proc.wait()
            self.proc = None
            raise RuntimeError(f"worker exited with code {code}; see {self.log_path}")
        return json.loads(line)

    def stop(self, kill: bool = False) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if kill:
            proc.kill()
        else:
            try:
                assert proc.stdin is not None
                proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
                proc.stdin.flush()
            except (BrokenPipeError, OSError):
                pass
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# --- measuring ------------------------------------------------------------------------------


@dataclass
class Settings:
    runs: int = 3
    long_s: float = 20.0
    timeout: float = 300.0
    max_read_files: int = 3000


def _call_counted(worker: Any, server: Any, bucket: str, command: dict[str, Any],
                  timeout: float) -> tuple[dict[str, Any], dict[str, int]]:
    """One worker command and the requests the server saw for ``bucket`` meanwhile; an
    overrun becomes a failed reply marked ``timeout``."""
    with server.log.capture(bucket) as cap:
        try:
            reply = worker.call(command, timeout)
        except Timeout as err:
            reply = {"ok": False, "error": f"timeout: {err}", "timeout": True}
    return reply, _counts(cap)


def _counts(cap: Any) -> dict[str, int]:
    c: Counter[str] = Counter(str(k) for k in cap.counts().elements())
    return {k: c.get(k, 0) for k in KINDS} | {"OTHER": sum(v for k, v in c.items()
                                                           if k not in KINDS)}


def run_once(server: Any, worker: Worker, table: TableDef, spec: dict[str, Any], q: Query,
             read: bool, timeout: float) -> dict[str, Any]:
    """One plan (and read) of ``q``; requests counted per phase from the server log."""
    out: dict[str, Any] = {}
    reply, out["plan_requests"] = _call_counted(
        worker, server, table.bucket,
        {"op": "plan", "table": spec, "conjuncts": q.conjuncts}, timeout)
    if not reply.get("ok"):
        out["error"] = reply.get("error")
        out["timeout"] = bool(reply.get("timeout"))
        return out
    out.update(plan_s=reply["seconds"], files=reply["files"], extra=reply.get("extra", {}))
    if not read:
        return out
    reply, out["read_requests"] = _call_counted(worker, server, table.bucket, {"op": "read"},
                                                timeout)
    if not reply.get("ok"):
        out["read_error"] = reply.get("error")
        out["timeout"] = bool(reply.get("timeout"))
        return out
    out.update(read_s=reply["seconds"], rows=reply["rows"])
    return out


def summarize(samples: list[dict[str, Any]], expected_files: int, read: bool) -> dict[str, Any]:
    """Medians over the runs, last run's request counts, and a correctness verdict."""
    last = samples[-1]
    res: dict[str, Any] = {"runs": len(samples), "plan_requests": last["plan_requests"],
                           "expected_files": expected_files,
                           "expected_rows": expected_files * ROWS_PER_FILE}
    if "error" in last:
        res["status"] = "timeout" if last.get("timeout") else "error"
        res["error"] = last["error"]
        return res
    res["plan_s"] = statistics.median(s["plan_s"] for s in samples)
    res["files"] = last["files"]
    res["extra"] = last.get("extra", {})
    if "scan_s" in res["extra"]:  # ours: the scan alone, table already open
        res["scan_s"] = statistics.median(s["extra"]["scan_s"] for s in samples)
    if len({json.dumps(s["plan_requests"], sort_keys=True) for s in samples}) > 1:
        res["requests_varied"] = [s["plan_requests"] for s in samples]
    wrong = []
    if last["files"] is not None and last["files"] != expected_files:
        wrong.append(f"planned {last['files']} files, expected {expected_files}")
    if read:
        res["read_requests"] = last.get("read_requests")
        if "read_error" in last:
            res["read_status"] = "timeout" if last.get("timeout") else "error"
            res["read_error"] = last["read_error"]
        else:
            res["read_s"] = statistics.median(s["read_s"] for s in samples)
            res["result_s"] = statistics.median(s["plan_s"] + s["read_s"] for s in samples)
            res["rows"] = last["rows"]
            if last["rows"] != expected_files * ROWS_PER_FILE:
                wrong.append(f"returned {last['rows']} rows, expected "
                             f"{expected_files * ROWS_PER_FILE}")
    res["status"] = "wrong result" if wrong else "ok"
    if wrong:
        res["wrong"] = "; ".join(wrong)
    return res


def measure(server: Any, worker: Worker, table: TableDef, spec: dict[str, Any], q: Query,
            expected: int, cfg: Settings) -> dict[str, Any]:
    read = expected <= cfg.max_read_files
    first = run_once(server, worker, table, spec, q, read, cfg.timeout)
    if "error" in first or first.get("timeout"):
        return summarize([first], expected, read)
    took = first["plan_s"] + first.get("read_s", 0.0)
    notes = [] if read else [f"planning only: {expected:,} files to read exceeds "
                             f"--max-read-files {cfg.max_read_files:,}"]
    if took > cfg.long_s:
        res = summarize([first], expected, read)
        res["note"] = "; ".join(notes + [f"one run: the first took {took:.0f} s "
                                         f"(> {cfg.long_s:.0f} s)"])
        res["read_skipped"] = not read
        return res
    samples = []
    for _ in range(cfg.runs):
        s = run_once(server, worker, table, spec, q, read, cfg.timeout)
        samples.append(s)
        if "error" in s or s.get("timeout"):
            break
    res = summarize(samples, expected, read)
    if notes:
        res["note"] = "; ".join(notes)
    res["read_skipped"] = not read
    return res


def run(quick: bool, cfg: Settings, log: Any = print, work_dir: Path | None = None
        ) -> dict[str, Any]:
    """The whole section; returns a JSON-able dict."""
    from listing.testing.s3 import S3Server

    tables = [daily_table(60 if quick else 730), hourly_table(30 if quick else 365)]
    log_dir = work_dir or Path(tempfile.mkdtemp(prefix="bench-listing-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    section: dict[str, Any] = {"settings": vars(cfg) | {"quick": quick}, "tables": {}}
    t_start = time.perf_counter()
    with S3Server() as server:
        storage = server.storage_options
        workers = {r: Worker(r, log_dir) for r in READERS}
        try:
            warm = tables[0]
            for t in tables:
                secs = build(server, t)
                log(f"[listing] built {t.name}: {len(t.files):,} keys in s3://{t.bucket}/"
                    f"{t.prefix} ({secs:.1f} s)")
            warm_spec = warm.spec(storage)
            for r, w in workers.items():  # process warm-up: imports, clients, first requests
                q = queries(warm)[0]
                s = run_once(server, w, warm, warm_spec, q, True, cfg.timeout)
                log(f"[listing] warm-up {r}: "
                    + (s.get("error") or f"plan {s['plan_s']:.2f} s, read {s['read_s']:.2f} s"))
            for t in tables:
                spec = t.spec(storage)
                tres: dict[str, Any] = {
                    "keys": len(t.files), "bucket": t.bucket, "prefix": t.prefix,
                    "layout": "/".join(f"{n}=…" for n, _ in t.partitions) + "/part-N.parquet",
                    "queries": {}}
                for q in queries(t):
                    expected = sum(1 for _, v in t.files if q.matches(v))
                    qres: dict[str, Any] = {"label": q.label, "expected_files": expected,
                                            "readers": {}}
                    for r in t.readers:
                        t0 = time.perf_counter()
                        res = measure(server, workers[r], t, spec, q, expected, cfg)
                        qres["readers"][r] = res
                        log(f"[listing] {t.name}/{q.name:<6} {r:<16} {_line(res)} "
                            f"[{time.perf_counter() - t0:.0f} s]")
                    qres["comparison"] = compare(qres["readers"])
                    tres["queries"][q.name] = qres
                section["tables"][t.name] = tres
                if t.name == "hourly":
                    section["concurrency"] = concurrency(server, t, section, cfg, quick, log,
                                                         log_dir)
                server.drop_bucket(t.bucket)
        finally:
            for w in workers.values():
                w.stop()
            for t in tables:
                server.drop_bucket(t.bucket)
    section["targets"] = targets(section)
    section["seconds"] = time.perf_counter() - t_start
    section["worker_logs"] = str(log_dir)
    return section


# --- sequential against parallel listing ----------------------------------------------------

CONCURRENCY_QUERIES = ("all", "level2", "point")
CONCURRENCY_MODES = (1, 8)
CONCURRENCY_PEERS = ("pyarrow", "polars", "datafusion")


def concurrency(server: Any, table: TableDef, section: dict[str, Any], cfg: Settings,
                quick: bool, log: Any = print, log_dir: Path | None = None) -> dict[str, Any]:
    """Our planning with ``max_concurrent_requests`` 1 (one request at a time) and 8, for
    the full listing, ``hour = 7`` and a point query on ``table``, against the latency model
    (:mod:`bench.latency`) and against moto (``server``; None: the model only), in a worker
    process; the peers plan the same queries against the model in their workers (on moto
    their numbers are those measured above)."""
    from bench.latency import LABEL, LatencyServer

    qs = [q for q in queries(table) if q.name in CONCURRENCY_QUERIES]
    cmd = {"queries": [{"name": q.name, "conjuncts": q.conjuncts} for q in qs],
           "modes": list(CONCURRENCY_MODES)}
    out: dict[str, Any] = {"label": LABEL, "servers": {}}
    size = len(_payload())
    with LatencyServer() as model:
        model.index.put(table.bucket, {key: size for key, _ in table.files})
        out["delay_s"] = model.delay
        model_name = f"latency model ({model.delay * 1000:.0f} ms a LIST)"
        out["model"] = model_name
        out["peers_on_model"] = _peers_on_model(model, table, qs, cfg, log, log_dir)
        servers = [(model_name, model.storage_options(), cfg.runs)]
        if server is not None:
            servers.append(("moto", server.storage_options, cfg.runs if quick else 1))
        for name, options, runs in servers:
            t0 = time.perf_counter()
            proc = subprocess.run(
                [sys.executable, "-m", "bench.latency", "measure", "--runs", str(runs)],
                input=json.dumps({**cmd, "table": table.spec(options)}), capture_output=True,
                text=True, cwd=ROOT, timeout=cfg.timeout * 6, check=False)
            if proc.returncode != 0:
                out["servers"][name] = {"error": proc.stderr[-800:]}
                log(f"[listing] concurrency on {name}: FAILED {proc.stderr[-300:]}")
                continue
            rows = json.loads(proc.stdout)
            out["servers"][name] = {"rows": rows, "runs": runs}
            log(f"[listing] concurrency on {name}: {len(rows)} plans "
                f"[{time.perf_counter() - t0:.0f} s]")
    out["table_md"] = concurrency_md(out, section, table, qs)
    for line in out["table_md"]:
        log(line)
    return out


def _peers_on_model(model: Any, table: TableDef, qs: list[Query], cfg: Settings, log: Any,
                    log_dir: Path | None) -> dict[str, dict[str, Any]]:
    """Per query and peer: median planning seconds over ``cfg.runs`` runs after a warm-up
    against the latency model, the requests it answered and the files planned."""
    spec = table.spec(model.storage_options())
    out: dict[str, dict[str, Any]] = {}
    directory = log_dir or Path(tempfile.mkdtemp(prefix="bench-latency-"))
    for peer in CONCURRENCY_PEERS:
        worker = Worker(peer, directory)
        try:
            for q in qs:
                times, res = [], {}
                for i in range(cfg.runs + 1):
                    before = model.requests
                    try:
                        reply = worker.call({"op": "plan", "table": spec,
                                             "conjuncts": q.conjuncts}, cfg.timeout)
                    except Timeout as err:
                        reply = {"ok": False, "error": f"timeout: {err}"}
                    if not reply.get("ok"):
                        res = {"error": reply.get("error")}
                        break
                    res = {"files": reply["files"], "requests": model.requests - before}
                    if i:
                        times.append(reply["seconds"])
                if times:
                    res["plan_s"] = statistics.median(times)
                out.setdefault(q.name, {})[peer] = res
                log(f"[listing] {peer} on the latency model, {q.name}: "
                    + (res.get("error") or f"{res['plan_s']:.2f} s, {res['requests']} LIST"))
        finally:
            worker.stop()
    return out


def concurrency_md(out: dict[str, Any], section: dict[str, Any], table: TableDef,
                   qs: list[Query]) -> list[str]:
    """The section's table: per query, ours sequential and parallel on each server, then
    the peers as measured on moto above; a mismatch between modes is flagged."""
    peers = section["tables"].get(table.name, {}).get("queries", {})
    lines = [f"### Sequential vs parallel listing: `{table.name}`, {len(table.files):,} keys",
             "",
             f"Ours = `open()` + `scan()`, `max_concurrent_requests` 1 (one request at a "
             f"time) vs 8. The latency model is {out['label']} (`bench/latency.py`: "
             f"ListObjectsV2 from a sorted key index after {out.get('delay_s', 0) * 1000:.0f}"
             " ms). Peers: against the same model, in their own worker processes; on moto,"
             " as measured above. Shared 2-core machine (the model's responder is Python"
             " too, on the same cores).", "",
             "| query | reader | server | LIST | plan s | files | notes |",
             "|---|---|---|--:|--:|--:|---|"]
    for q in qs:
        by_mode: dict[tuple[str, int], dict[str, Any]] = {}
        for server_name, res in out["servers"].items():
            for row in res.get("rows", []):
                if row["query"] == q.name:
                    by_mode[(server_name, row["max_concurrent_requests"])] = row
        for (server_name, mode), row in by_mode.items():
            seq = by_mode.get((server_name, 1), row)
            same = (row["files"], row["first_files"]) == (seq["files"], seq["first_files"])
            split = next((ln.split(" as ", 1)[1].split(" (")[0] for ln in row["steps"]
                          if "key ranges at once" in ln), "")
            note = ("" if same else "**files differ from sequential** ") + split
            if mode != 1 and seq["plan_s"]:
                speed = f"{seq['plan_s'] / row['plan_s']:.2f}× the sequential speed"
                note = f"{note}; {speed}" if note else speed
            lines.append(f"| {q.label if mode == 1 else ''} | ours, {mode} at a time | "
                         f"{server_name} | {row['list_requests']} | {row['plan_s']:.3f} | "
                         f"{row['files']:,} | {note} |")
            if server_name == out.get("model") and mode == max(CONCURRENCY_MODES):
                lines += _peer_rows(out, q.name, server_name, row)
        for peer in CONCURRENCY_PEERS:
            res = peers.get(q.name, {}).get("readers", {}).get(peer)
            if not res or res.get("status") not in ("ok", "wrong result"):
                continue
            files = "–" if res.get("files") is None else f"{res['files']:,}"
            lines.append(f"|  | {peer} | moto | {res['plan_requests']['LIST']} | "
                         f"{res['plan_s']:.3f} | {files} | {res.get('status')} |")
    return lines + [""]


def _peer_rows(out: dict[str, Any], query: str, server_name: str,
               ours: dict[str, Any]) -> list[str]:
    """The peers' rows on the latency model, the best one compared with ours at 8."""
    found = out.get("peers_on_model", {}).get(query, {})
    rows, best = [], None
    for peer in CONCURRENCY_PEERS:
        res = found.get(peer, {})
        if "plan_s" not in res:
            rows.append(f"|  | {peer} | {server_name} | – | – | – | {res.get('error', '')} |")
            continue
        files = "–" if res.get("files") is None else f"{res['files']:,}"
        wrong = res.get("files") is not None and res["files"] != ours["files"]
        rows.append(f"|  | {peer} | {server_name} | {res['requests']} | "
                    f"{res['plan_s']:.3f} | {files} | {'**wrong result**' if wrong else ''} |")
        if wrong:
            continue  # never the best peer
        if best is None or res["plan_s"] < found[best]["plan_s"]:
            best = peer
    if best is not None and ours["plan_s"]:
        ratio = found[best]["plan_s"] / ours["plan_s"]
        rows.append(f"|  | *ours (8 at a time) vs best peer* | {server_name} |  |  |  | "
                    f"planning {ratio:.2f}× faster than {best} (target ≥ 4×: "
                    f"{'met' if ratio >= 4 else '**not met**'}) |")
    return rows


def latency_run(quick: bool, cfg: Settings, log: Any = print) -> dict[str, Any]:
    """``--only latency``: the sequential-vs-parallel table against the latency model
    alone, ours and the peers (no moto server: minutes, not the listing section's half
    hour)."""
    table = hourly_table(30 if quick else 365)
    t0 = time.perf_counter()
    out = concurrency(None, table, {"tables": {}}, cfg, quick, log)
    return {"concurrency": out, "keys": len(table.files),
            "seconds": time.perf_counter() - t0}


def total_requests(counts: dict[str, int] | None) -> int:
    return sum((counts or {}).values())


def compare(readers: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Ours against the best correct peer: fewest planning requests, fastest planning."""
    ours = readers.get("listing", {})
    ok = {r: v for r, v in readers.items() if r != "listing" and v.get("status") == "ok"}
    out: dict[str, Any] = {}
    if not ok or ours.get("status") != "ok":
        return out
    best_req = min(ok, key=lambda r: total_requests(ok[r]["plan_requests"]))
    best_time = min(ok, key=lambda r: ok[r]["plan_s"])
    our_req = total_requests(ours["plan_requests"])
    peer_req = total_requests(ok[best_req]["plan_requests"])
    out["best_peer_requests"] = {"reader": best_req, "requests": peer_req}
    out["request_ratio"] = peer_req / max(our_req, 1)
    out["best_peer_plan"] = {"reader": best_time, "plan_s": ok[best_time]["plan_s"]}
    out["plan_speedup"] = ok[best_time]["plan_s"] / ours["plan_s"]
    # a listing split into key ranges may cost one partial page per range and one
    # delimiter page more than a flat listing (issue 10's allowance)
    allowance = DEFAULT_CONCURRENCY + 1
    out["more_requests_than_best_peer"] = our_req > peer_req + allowance
    if "scan_s" in ours:  # a table opened once and scanned many times
        scan_req = ours["extra"]["scan_list"]
        out["request_ratio_scan_only"] = peer_req / max(scan_req, 1)
        out["more_scan_requests_than_allowed"] = scan_req > peer_req + allowance
        out["plan_speedup_scan_only"] = ok[best_time]["plan_s"] / ours["scan_s"]
    with_result = {r: v for r, v in ok.items() if "result_s" in v}
    if "result_s" in ours and with_result:
        best = min(with_result, key=lambda r: with_result[r]["result_s"])
        out["best_peer_result"] = {"reader": best, "result_s": with_result[best]["result_s"]}
        out["result_speedup"] = with_result[best]["result_s"] / ours["result_s"]
    return out


def targets(section: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets, each with measured value and verdict."""
    out: list[dict[str, Any]] = []
    hourly = section["tables"].get("hourly", {}).get("queries", {})
    day = hourly.get("day", {}).get("readers", {}).get("listing", {})
    if day.get("status") == "ok":
        scan_list = day["extra"].get("scan_list")
        total_list = day["plan_requests"]["LIST"]
        out.append({"target": "hourly one-day query plans with <= 2 LIST requests",
                    "value": f"scan(): {scan_list} LIST; open()+scan(): {total_list} LIST "
                             f"(open(): {day['extra'].get('open_list')} LIST)",
                    "met": scan_list is not None and scan_list <= 2,
                    "met_including_open": total_list <= 2})
    for name in ("point", "day", "week", "in3"):
        comp = hourly.get(name, {}).get("comparison", {})
        if not comp:
            continue
        peer = comp["best_peer_requests"]["reader"]
        out.append({"target": f"hourly {name}: >= 50x fewer requests than the best peer",
                    "value": f"open()+scan(): {comp['request_ratio']:.1f}x, scan() alone: "
                             f"{comp.get('request_ratio_scan_only', 0):.1f}x (vs {peer})",
                    "met": comp.get("request_ratio_scan_only", 0) >= 50,
                    "met_including_open": comp["request_ratio"] >= 50})
        peer = comp["best_peer_plan"]["reader"]
        out.append({"target": f"hourly {name}: >= 10x faster planning than the best peer",
                    "value": f"open()+scan(): {comp['plan_speedup']:.1f}x, scan() alone: "
                             f"{comp.get('plan_speedup_scan_only', 0):.1f}x (vs {peer})",
                    "met": comp.get("plan_speedup_scan_only", 0) >= 10,
                    "met_including_open": comp["plan_speedup"] >= 10})
    worse = [f"{t}/{q}" for t, tres in section["tables"].items()
             for q, qres in tres["queries"].items()
             if qres.get("comparison", {}).get("more_requests_than_best_peer")]
    worse_scan = [f"{t}/{q}" for t, tres in section["tables"].items()
                  for q, qres in tres["queries"].items()
                  if qres.get("comparison", {}).get("more_scan_requests_than_allowed")]
    out.append({"target": "no query costs more requests than the best peer's flat listing "
                          f"+ max_concurrent_requests + 1 ({DEFAULT_CONCURRENCY + 1})",
                "value": ("open()+scan() worse on: " + (", ".join(worse) or "none")
                          + "; scan() alone worse on: " + (", ".join(worse_scan) or "none")),
                "met": not worse_scan, "met_including_open": not worse})
    return out


def _line(res: dict[str, Any]) -> str:
    if res.get("status") in ("timeout", "error"):
        return f"{res['status'].upper()}: {res.get('error', '')[:120]}"
    req = res["plan_requests"]
    text = (f"plan {res['plan_s']:.3f} s  LIST {req['LIST']} GET {req['GET']} "
            f"HEAD {req['HEAD']}  files {res['files']}")
    if "result_s" in res:
        text += f"  result {res['result_s']:.3f} s rows {res['rows']}"
    if res.get("status") != "ok":
        text += f"  !! {res.get('wrong') or res.get('read_error')}"
    return text
