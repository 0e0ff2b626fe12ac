"""``python -m bench.soak``: the fault suite's mix, run for minutes against a misbehaving store.

    python -m bench.soak                  # 3 minutes (= make soak)
    python -m bench.soak --minutes 10 --rate 0.2 --seed 7
    python -m bench.soak --minutes 1 --no-spark

A moto S3 server and a fault-injecting proxy (``listing.testing.faults``), both on
127.0.0.1 only. Every LIST and GET through the proxy meets each fault kind (503 SlowDown,
500 InternalError, connection reset, body cut short, slow answer) at ``--rate``/5 each.
Round after round until the time is up, the mix runs: planning a table of 2,500 keys
(three LIST pages), ``to_arrow()`` of a small table in each built-in format, and (unless
``--no-spark``) a Spark ``count()`` through ``spark.read.format("listing")``. Each result
is compared with the truth read without faults:

- ``exact``: the same files, rows or count;
- ``clear error``: a StorageError naming the listing prefix or the file (after the
  client's ``--max-retries`` retries);
- ``WRONG``: anything else (another error, a partial list, other rows).

Prints requests, retries (counted by the plans; Spark tasks only log theirs), faults
injected per kind and the results; exits 1 on any WRONG result. Bounded: every request is
tried at most ``--max-retries`` + 1 times with waits capped at ``--max-backoff`` seconds,
and no round starts after the deadline.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable
from typing import Any

import pyarrow as pa

FORMATS = {"parquet": "parquet", "csv": "csv", "csv.gz": "csv", "ndjson": "json",
           "arrow": "arrow"}
FAULT_KINDS = ("503", "500", "reset", "truncate", "slow")
OUTCOMES = ("exact", "clear error", "WRONG")


def log(msg: str) -> None:
    print(msg, flush=True)


class Soak:
    def __init__(self, args: argparse.Namespace) -> None:
        from listing.testing.faults import FaultProxy
        from listing.testing.s3 import S3Server

        self.args = args
        self.server = S3Server().start()
        self.proxy = FaultProxy(self.server.endpoint_url).start()
        self.results: dict[str, Counter[str]] = {}
        self.wrong: list[str] = []
        self.retries: Counter[str] = Counter()
        self.spark: Any = None

    @property
    def options(self) -> dict[str, Any]:
        return {**self.proxy.storage_options, "max_retries": self.args.max_retries,
                "retry_max_backoff": self.args.max_backoff}

    # --- data and the truth ------------------------------------------------------------
    def build(self) -> None:
        from listing import ListingTable
        from listing.testing import datasets

        bucket = self.server.create_bucket(f"soak-{uuid.uuid4().hex[:8]}")
        payload = datasets.encode(pa.table({"id": [1]}), "parquet")
        keys = [f"big/date=2025-01-{d:02d}/part-{i:03d}.parquet"
                for d in range(1, 26) for i in range(100)]
        self.server.put_objects_fast(bucket, {k: payload for k in keys})
        self.big_root, self.big_keys = f"s3://{bucket}/big", {f"s3://{bucket}/{k}" for k in keys}
        put = datasets.fast_writer(self.server)
        self.tables = {fmt: datasets.daily(f"s3://{bucket}/{fmt}", days=6, format=fmt, put=put)
                       for fmt in FORMATS}
        direct = {**self.server.storage_options}  # the truth: no proxy, no faults
        self.truth = {fmt: ListingTable.open(ds.root, format=FORMATS[fmt],
                                             storage_options=direct).to_arrow().sort_by("id")
                      for fmt, ds in self.tables.items()}
        for fmt, ds in self.tables.items():
            assert self.truth[fmt].num_rows == ds.num_rows, fmt

    def add_rules(self, generation: int = 0) -> None:
        """Every fault kind on LIST and GET at ``rate``/5 each (a rule stops after
        MAX_FAULTS faults, so a long soak renews them: see ``renew_rules``)."""
        each = self.args.rate / len(FAULT_KINDS)
        for op in ("LIST", "GET"):
            for i, kind in enumerate(FAULT_KINDS):
                seed = (self.args.seed * 1000 + generation) * 100 + i
                self.proxy.add_rule(op, kind, rate=each, seed=seed, delay=0.2)

    def renew_rules(self, generation: int) -> None:
        from listing.testing.faults import MAX_FAULTS

        if any(rule.fired >= MAX_FAULTS - 100 for rule in self.proxy.rules):
            self.proxy.clear_rules()  # the proxy's counters keep counting
            self.add_rules(generation)

    # --- the mix -------------------------------------------------------------------------
    def listing(self) -> tuple[str, str]:
        from listing import ListingTable

        table = ListingTable.open(self.big_root, storage_options=self.options,
                                  schema=pa.schema([("id", pa.int64())]),
                                  partition_cols=[("date", "date")])
        plan = table.scan()
        self.retries["list"] += plan.metrics.get("list_retries", 0)
        got = {f.path for f in plan.files}
        if got != self.big_keys:
            return "WRONG", f"listed {len(got)} files, expected {len(self.big_keys)}"
        return "exact", ""

    def read(self, fmt: str) -> tuple[str, str]:
        from listing import ListingTable

        ds = self.tables[fmt]
        plan = ListingTable.open(ds.root, format=FORMATS[fmt],
                                 storage_options=self.options).scan()
        self.retries["list"] += plan.metrics.get("list_retries", 0)
        got, metrics = plan.collect()
        self.retries["read"] += metrics.get("read_retries", 0)
        if not got.sort_by("id").equals(self.truth[fmt]):
            return "WRONG", f"{got.num_rows} rows, expected {self.truth[fmt].num_rows} (or " \
                            "other values)"
        return "exact", ""

    def spark_count(self) -> tuple[str, str]:
        ds = self.tables["parquet"]
        count = (self.spark.read.format("listing").option("format", "parquet")
                 .option("storage_options", json.dumps(self.options))
                 .load(ds.root + "/").count())
        if count != ds.num_rows:
            return "WRONG", f"count {count}, expected {ds.num_rows}"
        return "exact", ""

    def run_one(self, name: str, fn: Callable[[], tuple[str, str]], names: str) -> None:
        from listing.errors import StorageError

        try:
            outcome, detail = fn()
        except StorageError as err:
            clear = names in str(err)
            outcome, detail = ("clear error" if clear else "WRONG"), str(err)
        except Exception as err:  # noqa: BLE001 - judged below
            text = str(err)
            # Spark reports a task's error as text: the StorageError must be in it
            clear = name == "spark count" and "StorageError" in text and names in text
            outcome = "clear error" if clear else "WRONG"
            detail = text if clear else "".join(traceback.format_exception(err))[-3000:]
        self.results.setdefault(name, Counter())[outcome] += 1
        if outcome == "WRONG":
            self.wrong.append(f"{name}: {detail}")
            log(f"WRONG {name}: {detail}")

    def run(self) -> int:
        args = self.args
        log(f"soak: {args.minutes} min, fault rate {args.rate} per LIST/GET "
            f"({', '.join(FAULT_KINDS)}), max_retries={args.max_retries}, "
            f"retry_max_backoff={args.max_backoff}s, seed {args.seed}")
        self.build()
        if not args.no_spark:
            from listing.spark.session import session

            self.spark = session(app_name="listing-soak", ui=False,
                                 conf={"spark.sql.shuffle.partitions": "2"})
            self.spark.sparkContext.setLogLevel("FATAL")  # failed tasks: judged, not logged
        self.add_rules()
        self.proxy.reset_stats()
        start = time.monotonic()
        deadline = start + args.minutes * 60
        rounds = 0
        while time.monotonic() < deadline and rounds < args.max_rounds:
            rounds += 1
            self.renew_rules(rounds)
            self.run_one("listing (3 pages)", self.listing, f"listing {self.big_root}/")
            for fmt in FORMATS:
                if time.monotonic() >= deadline:
                    break
                self.run_one(f"to_arrow {fmt}", lambda fmt=fmt: self.read(fmt),
                             self.tables[fmt].root + "/")
            if self.spark is not None and time.monotonic() < deadline:
                self.run_one("spark count", self.spark_count, self.tables["parquet"].root + "/")
            if rounds % 5 == 0:
                log(f"  round {rounds}: {self.summary_line()}")
        elapsed = time.monotonic() - start
        self.report(rounds, elapsed)
        return 1 if self.wrong else 0

    def summary_line(self) -> str:
        total: Counter[str] = Counter()
        for counts in self.results.values():
            total.update(counts)
        return ", ".join(f"{o} {total[o]}" for o in OUTCOMES)

    def report(self, rounds: int, elapsed: float) -> None:
        stats = self.proxy.stats
        log("")
        log(f"soak finished: {rounds} rounds in {elapsed:.0f} s")
        log(f"requests through the proxy: {stats.requests:,} "
            f"({', '.join(f'{op} {n:,}' for op, n in sorted(stats.forwarded.items()))} "
            f"forwarded; {stats.requests - sum(stats.forwarded.values()):,} answered with a "
            "fault)")
        log(f"retries counted by the plans: {self.retries['list']:,} listing, "
            f"{self.retries['read']:,} reading (Spark tasks log theirs; no driver metric)")
        log("faults injected:")
        for op in ("LIST", "GET"):
            log(f"  {op:<4} " + ", ".join(f"{k} {stats.injected[(op, k)]:,}"
                                         for k in FAULT_KINDS))
        log("results:")
        width = max(len(n) for n in self.results) if self.results else 10
        log(f"  {'':<{width}}  " + "  ".join(f"{o:>11}" for o in OUTCOMES))
        for name, counts in self.results.items():
            log(f"  {name:<{width}}  " + "  ".join(f"{counts[o]:>11}" for o in OUTCOMES))
        log(f"  {'all':<{width}}  {self.summary_line()}")
        if self.wrong:
            log(f"{len(self.wrong)} WRONG result(s); first: {self.wrong[0][:2000]}")
        else:
            log("no wrong result")

    def close(self) -> None:
        if self.spark is not None:
            self.spark.stop()
        self.proxy.stop()
        self.server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=3.0, help="how long (default 3)")
    parser.add_argument("--rate", type=float, default=0.15,
                        help="share of LIST and GET requests given a fault, split evenly over "
                             "the kinds (default 0.15)")
    parser.add_argument("--max-retries", type=int, default=3,
                        help="the max_retries storage option (default 3)")
    parser.add_argument("--max-backoff", type=float, default=0.2,
                        help="the retry_max_backoff storage option, seconds (default 0.2)")
    parser.add_argument("--seed", type=int, default=0, help="fault rules' seed (default 0)")
    parser.add_argument("--max-rounds", type=int, default=100_000,
                        help="stop after this many rounds even before the time is up")
    parser.add_argument("--no-spark", action="store_true", help="leave out the Spark count")
    args = parser.parse_args(argv)
    if not 0 <= args.rate <= 1 or args.minutes <= 0:
        parser.error("--rate must be within [0, 1] and --minutes positive")
    logging.getLogger("listing").setLevel(logging.ERROR)  # skips and retries: counted here
    soak = Soak(args)
    try:
        return soak.run()
    finally:
        soak.close()


if __name__ == "__main__":
    sys.exit(main())
