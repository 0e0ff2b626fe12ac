"""``python -m bench.repeated``: one query repeated in a Spark session, on moto S3.

The hourly table of ``bench.s3a`` (``--days`` x 24 hours x 12 keys; 365 days: 105,120
keys) in a moto server in this process, and one hour of it counted (``date = 2025-03-15
AND hour = 7``: 12 files) by four readers in one session, ``--rounds`` rounds, readers
interleaved: Spark's S3A reader in the careful user's form
(``spark.read.option("basePath", root).parquet(root + "/date=…/hour=07/")``), and
``spark.read.format("listing")`` with ``engine=auto`` (the native hand-off),
``engine=python``, and ``engine=python`` with ``list_cache_ttl=5m``. Per reader: the
requests of its first query and of its last (from the server's log), and the median
seconds of the rounds after the first, to the physical plan and to the end of ``count()``.
What repeats cost is what the session's caches (schema, footers, listings) save.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

READERS = ("spark basePath", "listing native", "listing python", "listing python ttl")
WHERE = "date = DATE '2025-03-15' AND hour = 7"


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


def run(days: int, rounds: int, log: Any = print) -> dict[str, Any]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import listing
    from bench.listing_bench import build, hourly_table
    from bench.s3a import _s3a_conf
    from listing.testing.s3 import S3Server

    table = hourly_table(days)
    spark = listing.session("bench-repeated", ui=False,
                            conf={"spark.sql.shuffle.partitions": "2"})
    got: dict[str, list[dict[str, Any]]] = {r: [] for r in READERS}
    try:
        with S3Server() as server:
            storage = server.storage_options
            build(server, table)
            _s3a_conf(spark, storage, table)
            root = f"s3://{table.bucket}/{table.prefix}".rstrip("/")
            for i in range(rounds):
                for reader in (READERS if i % 2 == 0 else READERS[::-1]):
                    with server.log.capture(table.bucket) as cap:
                        t0 = time.perf_counter()
                        df = _frame(spark, reader, root, storage)
                        df._jdf.queryExecution().executedPlan()  # noqa: SLF001
                        t1 = time.perf_counter()
                        rows = df.count()
                        t2 = time.perf_counter()
                    c = cap.counts()
                    m = {"plan_s": t1 - t0, "total_s": t2 - t0, "rows": rows,
                         **{k: c[k] for k in ("LIST", "HEAD", "GET")}}
                    got[reader].append(m)
                    log(f"[repeated] round {i} {reader}: {m}")
    finally:
        spark.stop()
    out: dict[str, Any] = {"keys": len(table.files), "rounds": rounds,
                           "load": [round(x, 1) for x in os.getloadavg()], "readers": {}}
    for reader, ms in got.items():
        later = ms[1:] or ms
        out["readers"][reader] = {
            "first": {k: ms[0][k] for k in ("LIST", "HEAD", "GET")},
            "repeated": {k: later[-1][k] for k in ("LIST", "HEAD", "GET")},
            "plan_s": statistics.median(m["plan_s"] for m in later),
            "total_s": statistics.median(m["total_s"] for m in later),
            "rows": ms[-1]["rows"]}
    return out


def markdown(res: dict[str, Any], command: str, code: str) -> str:
    base = res["readers"]["spark basePath"]["total_s"]
    lines = [f"**One hour of {res['keys']:,} keys, repeated** ({command}; code {code}; "
             f"medians of rounds 2-{res['rounds']}; load average {res['load']})", "",
             "| reader | first query LIST/HEAD/GET | repeated LIST/HEAD/GET | plan s "
             "| plan + count s | vs S3A |", "|---|---|---|--:|--:|--:|"]
    for reader, r in res["readers"].items():
        f, p = r["first"], r["repeated"]
        lines.append(f"| {reader} | {f['LIST']}/{f['HEAD']}/{f['GET']} | "
                     f"{p['LIST']}/{p['HEAD']}/{p['GET']} | {r['plan_s']:.2f} | "
                     f"{r['total_s']:.2f} | {r['total_s'] / base:.2f}× |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.repeated", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--days", type=int, default=365, help="days of the hourly table (365)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--out", type=Path, help="write OUT.json and OUT.md")
    args = ap.parse_args(argv)
    from bench import report

    res = run(args.days, args.rounds, log=lambda m: print(m, file=sys.stderr, flush=True))
    argv_text = " ".join(argv if argv is not None else sys.argv[1:])
    text = markdown(res, f"python -m bench.repeated {argv_text}".strip(),
                    report.code_revision(Path(__file__).resolve().parents[1]))
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_suffix(".json").write_text(json.dumps(res, indent=1))
        args.out.with_suffix(".md").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
