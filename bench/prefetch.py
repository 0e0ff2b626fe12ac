"""One Spark task reading many small files: opening files ahead versus one by one.

    python -m bench.prefetch                       # 240 files, 30 ms per GET, depths 0,1,4,8
    python -m bench.prefetch --files 120 --latency-ms 50

Why: an object store answers every GET after a round trip, and a task of many small
files otherwise waits for them one after another. moto answers from this process in
microseconds of network time, so it cannot show the effect; the fault proxy's ``slow``
rule delays every GET by ``--latency-ms``: a *model* of S3's first-byte latency (tens of
ms), labelled as such in the output. One file group, read in this process with
``listing.file_stream.read_group`` exactly as a Spark task reads it; median of 3 runs after a
warm-up; rows checked equal across depths.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

from listing import ListingTable
from listing.file_stream import read_group
from listing.testing import datasets
from listing.testing.faults import FaultProxy
from listing.testing.s3 import S3Server


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=240, help="files in the group")
    ap.add_argument("--latency-ms", type=float, default=30.0, help="modelled GET latency")
    ap.add_argument("--depths", default="0,1,4,8", help="prefetch depths to compare")
    args = ap.parse_args()
    depths = [int(d) for d in args.depths.split(",")]
    with S3Server() as server:
        bucket = server.create_bucket("prefetch-bench")
        ds = datasets.daily(f"s3://{bucket}/t", server.storage_options,
                            days=max(1, args.files // 4), files_per_partition=2,
                            put=datasets.fast_writer(server))
        with FaultProxy(server.endpoint_url) as proxy:
            proxy.add_rule("GET", "slow", delay=args.latency_ms / 1000)
            table = ListingTable.open(ds.root, storage_options=proxy.storage_options,
                                      max_partition_bytes="1g")
            plan = table.scan()
            (group,) = plan.file_groups
            print(f"{len(group.files)} files ({ds.num_rows} rows) in one group; every GET "
                  f"delayed {args.latency_ms:g} ms by the proxy (a model of S3 latency)")
            times: dict[int, float] = {}
            rows: dict[int, int] = {}
            for depth in depths:
                spec = dataclasses.replace(plan.read, prefetch=depth)
                runs = []
                for i in range(4):
                    t0 = time.perf_counter()
                    n = sum(b.num_rows for b in read_group(spec, group))
                    if i:
                        runs.append(time.perf_counter() - t0)
                times[depth], rows[depth] = statistics.median(runs), n
            assert len(set(rows.values())) == 1, rows
            base = times[depths[0]]
            print("| prefetch depth | seconds | files/s | vs depth " f"{depths[0]} |")
            print("| --: | --: | --: | --: |")
            for depth in depths:
                print(f"| {depth} | {times[depth]:.2f} | {len(group.files) / times[depth]:.0f} "
                      f"| {times[depth] / base:.2f}x |")


if __name__ == "__main__":
    main()
