"""Key-grouped scans (the ``key_grouped`` option): a GROUP BY and a join on the partition
column with and without the declared partitioning, beside Spark's own Parquet reader.

Data: the throughput section's Parquet tree (:func:`bench.throughput.generate`: 20 dates
× 3 files, 12 M rows; ``--quick``: 1 M), kept in ``--data-dir`` between runs. One
``local[2]`` session from ``listing.session()``, ``spark.sql.shuffle.partitions=2``,
broadcast joins off (``spark.sql.autoBroadcastJoinThreshold=-1``: the join is a sort-merge
join on every reader, so the figures compare shuffles, not join strategies) and
``spark.sql.requireAllClusterKeysForCoPartition=false`` (the join's keys, ``(date, id)``,
hold more than the scans' key, ``date``; without it Spark shuffles the keyed scans too).

Readers: ``native`` = ``spark.read.parquet``; ``python`` = ``spark.read.format("listing")``
with ``engine=python``; ``keyed`` = the same with ``key_grouped=true`` (no ``Exchange``:
counted in each reader's first plan). Queries: ``GROUP BY date: sum(amount), count(*)``
(Spark shuffles partial aggregates only: a few rows), ``GROUP BY date: count(DISTINCT id)``
(it shuffles every distinct id) and a self-join on ``(date, id)``, summed. Each reader runs
a query once to warm up, then the readers take turns, one timed run each a round; a figure
is the median of ``--runs`` rounds. Results are compared with the native reader's.

    python -m bench.key_grouped [--quick] [--runs 3] [--out bench/results/key_grouped]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.throughput import DATES, FILES_PER_DATE, generate, table_rows

READERS = ("native", "python", "keyed")


def _queries() -> dict[str, tuple[str, Any]]:
    from pyspark.sql import functions as F  # noqa: N812 - Spark's convention

    def group(df: Any) -> Any:
        return df.groupBy("date").agg(F.sum("amount"), F.count("*"))

    def join(a: Any, b: Any) -> Any:
        return (a.select("date", "id", "amount").join(b.select("date", "id", "qty"),
                                                      ["date", "id"])
                .agg(F.sum("amount"), F.sum("qty"), F.count("*")))

    def distinct(df: Any) -> Any:
        return df.groupBy("date").agg(F.countDistinct("id"), F.sum("amount"))

    return {"group": ("GROUP BY date: sum(amount), count(*)", group),
            "distinct": ("GROUP BY date: count(DISTINCT id), sum(amount)", distinct),
            "join": ("self-join ON (date, id): sum, sum, count", join)}


def _frame(spark: Any, reader: str, root: Path) -> Any:
    if reader == "native":
        return spark.read.parquet(str(root))
    r = spark.read.format("listing").option("engine", "python")
    if reader == "keyed":
        r = r.option("key_grouped", "true")
    return r.load(str(root))


def _time(spark: Any, reader: str, root: Path, name: str) -> tuple[float, list[Any], str]:
    _, make = _queries()[name]
    t0 = time.perf_counter()
    frames = [_frame(spark, reader, root) for _ in range(2 if name == "join" else 1)]
    df = make(*frames)
    rows = df.collect()
    seconds = time.perf_counter() - t0
    return seconds, rows, df._jdf.queryExecution().executedPlan().toString()


def _norm(rows: list[Any]) -> list[Any]:
    return sorted((tuple(round(v, 2) if isinstance(v, float) else v for v in r) for r in rows),
                  key=str)


def run(quick: bool, runs: int, data_dir: Path, log: Any = print) -> dict[str, Any]:
    from listing.spark.session import session

    rows = 1_000_000 if quick else 12_000_000
    root = generate(data_dir, rows)["parquet"]
    spark = session(app_name="listing-bench-keyed", master="local[2]",
                    conf={"spark.sql.shuffle.partitions": "2",
                          "spark.default.parallelism": "2",
                          "spark.sql.autoBroadcastJoinThreshold": "-1",
                          # the join's keys (date, id) hold more than the scans' key (date)
                          "spark.sql.requireAllClusterKeysForCoPartition": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    section: dict[str, Any] = {"rows": table_rows(data_dir, rows),
                               "files": DATES * FILES_PER_DATE, "runs": runs, "queries": {}}
    try:
        for name, (label, _) in _queries().items():
            results, exchanges, packing = {}, {}, {}
            for reader in READERS:
                _, results[reader], plan = _time(spark, reader, root, name)
                final = plan.split("== Initial Plan ==")[0]
                exchanges[reader] = final.count("Exchange hashpartitioning")
                packing[reader] = "; ".join(sorted(set(
                    re.findall(r"packing: (by [^)]*\))", final))))
            times: dict[str, list[float]] = {r: [] for r in READERS}
            for _ in range(runs):
                for reader in READERS:
                    times[reader].append(_time(spark, reader, root, name)[0])
            ref = _norm(results["native"])
            q: dict[str, Any] = {"label": label, "readers": {}}
            for reader in READERS:
                med = statistics.median(times[reader])
                q["readers"][reader] = {"seconds": med, "times": times[reader],
                                        "exchanges": exchanges[reader],
                                        "packing": packing[reader],
                                        "agree": _norm(results[reader]) == ref}
                log(f"[key_grouped] {name:<5} {reader:<6} {med:6.2f} s "
                    f"exchanges={exchanges[reader]} agree={q['readers'][reader]['agree']}")
            section["queries"][name] = q
    finally:
        spark.stop()
    return section


def markdown(section: dict[str, Any]) -> str:
    lines = [f"{section['rows']:,} rows in {section['files']} Parquet files (20 dates), "
             f"`local[2]`, median of {section['runs']} rounds, broadcast joins off.",
             "",
             "| query | native s | python s | keyed s | keyed / python | keyed / native "
             "| Exchanges (native, python, keyed) | results agree | keyed packing |",
             "| :-- | --: | --: | --: | --: | --: | :-: | :-: | :-- |"]
    for q in section["queries"].values():
        r = q["readers"]
        s = {k: r[k]["seconds"] for k in READERS}
        lines.append(
            f"| {q['label']} | {s['native']:.2f} | {s['python']:.2f} | {s['keyed']:.2f} "
            f"| {s['keyed'] / s['python']:.2f}x | {s['keyed'] / s['native']:.2f}x "
            f"| {r['native']['exchanges']}, {r['python']['exchanges']}, "
            f"{r['keyed']['exchanges']} "
            f"| {'yes' if all(v['agree'] for v in r.values()) else 'NO'} "
            f"| {r['keyed']['packing']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1 M rows instead of 12 M")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--data-dir", type=Path,
                    default=Path(tempfile.gettempdir()) / "listing-bench-data")
    ap.add_argument("--out", type=Path, default=Path("bench/results/key_grouped"))
    args = ap.parse_args(argv)
    section = run(args.quick, args.runs, args.data_dir)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "latest.json").write_text(json.dumps(section, indent=2) + "\n")
    md = markdown(section)
    (args.out / "latest.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
