"""Planning at scale on S3: ``bench.planning``'s synthetic table served over HTTP
(``bench.synthetic_s3``), planned on the Python API and through
``spark.read.format("listing")`` on both engines.

    python -m bench.planning_s3                  # 10,512,000 keys
    python -m bench.planning_s3 --quick          # 1,051,200 keys
    python -m bench.planning_s3 --keys 10512000 --runs 1 --query "one day" --reader listing

The server runs in its own process for the whole run; every measurement is a fresh process
(``--child``; ``bench.planning``'s runner: readers interleaved, medians), timed from nothing to
the plan with its files chosen. Readers:

- ``listing``: ``ListingTable.open`` on the ``s3://`` URL with the endpoint's storage
  options, and ``scan``; peak RSS growth of that process;
- ``spark listing`` / ``spark native``: ``spark.read.format("listing")`` with
  ``engine=python`` / ``engine=native`` (a driver of ``spark.driver.memory=4g``; see
  ``bench.planning_spark``): from ``spark.read`` to the physical plan with its files chosen;
  ``JVM B/file``, the driver's heap after a full GC held per planned file; ``peak``, the
  driver Python's RSS growth (our planner runs there for ``spark native``). With
  ``engine=native`` our planner lists the table in the driver's Python and Spark's Parquet
  scan gets the files through ``ListingFileIndex``, reading them with S3A (which sends
  nothing at planning).

``LIST``: the requests the server counted during the timed query (all its readers'). Each
session first plans one file of the server's small ``warm/`` table (not timed).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from bench import planning
from bench.synthetic_s3 import serve

#: ``--child``'s WHERE for the server's table: this prefix, then the endpoint URL
PREFIX = "synthetic-s3:"
READERS = ("listing", "spark listing", "spark native")
QUICK_KEYS, KEYS = 1_051_200, 10_512_000


def _endpoint(where: str) -> Any:
    from bench.synthetic_s3 import BUCKET, Endpoint

    return Endpoint(None, where.removeprefix(PREFIX), BUCKET)


def _cap_memory() -> None:
    """At most ``BENCH_MAX_VM_GB`` (default 12) of address space for this process and those
    it starts (Spark's JVM, its Python workers), each: a plan that does not fit fails with
    its own out-of-memory error instead of pressing on the machine's other jobs."""
    import os
    import resource

    limit = int(float(os.environ.get("BENCH_MAX_VM_GB", "12")) * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def child(reader: str, where: str, query: str) -> dict[str, Any]:
    """Plan ``query`` with ``reader`` on the server ``where`` names (``PREFIX`` + URL)."""
    from bench import peers
    from bench.rss import reset_peak, vm

    _cap_memory()
    ep = _endpoint(where)
    sql = peers.to_sql(planning.QUERIES[query])
    if reader.startswith("spark "):
        from bench import planning_spark

        options = {"storage_options": json.dumps(ep.storage_options)}
        return planning_spark.child(reader, ep.table, sql, options, warm=ep.warm,
                                    requests=ep.counts)
    import time

    import pyarrow as pa

    from listing import ListingTable

    cols = [("date", pa.date32()), ("hour", pa.int32())]
    schema = pa.schema([("id", pa.int64())])
    before = ep.counts()
    reset_peak()
    base = vm("VmRSS")
    t0 = time.perf_counter()
    table = ListingTable.open(ep.table, storage_options=ep.storage_options,
                              partition_cols=cols, schema=schema)
    plan = table.scan(where=sql)
    out: dict[str, Any] = {"seconds": time.perf_counter() - t0,
                           "peak_bytes": vm("VmHWM") - base, "files": plan.file_count}
    sent = ep.counts() - before
    out["list_requests"] = sent["LIST"]
    out["requests"] = dict(sent)
    out["plan_bytes"] = planning._plan_bytes(plan)  # noqa: SLF001
    out["groups"] = len(plan.file_groups)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.planning_s3", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help=f"{QUICK_KEYS:,} keys")
    ap.add_argument("--keys", type=int, help=f"the table's keys ({KEYS:,})")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=3600,
                    help="seconds one measurement may take")
    ap.add_argument("--query", action="append", choices=list(planning.QUERIES),
                    help="only these queries (repeatable; default all)")
    ap.add_argument("--reader", action="append", choices=READERS,
                    help="only these readers (repeatable; default all)")
    ap.add_argument("--out", type=Path, help="write OUT.json and OUT.md")
    ap.add_argument("--child", nargs=3, metavar=("READER", "WHERE", "QUERY"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    from bench import report

    keys = args.keys or (QUICK_KEYS if args.quick else KEYS)
    argv_text = " ".join(argv if argv is not None else sys.argv[1:])
    res: dict[str, Any] = {"command": f"python -m bench.planning_s3 {argv_text}".strip(),
                           "code": report.code_revision(Path(__file__).resolve().parents[1]),
                           "machine": report.machine(), "runs": args.runs, "tables": {}}
    queries = args.query or list(planning.QUERIES)
    readers = tuple(args.reader or READERS)
    with serve(keys) as ep:
        planning.log(f"[planning-s3] {keys:,} keys at {ep.url}")
        table = planning.table_runs(PREFIX + ep.url, keys, readers, args.runs, args.timeout,
                                    module="bench.planning_s3", queries=queries)
        table["server_requests"] = dict(ep.counts())
    res["tables"][f"synthetic S3 {keys:,}"] = table
    text = planning.markdown(res)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(res, indent=1, default=str))
        args.out.with_suffix(".md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
