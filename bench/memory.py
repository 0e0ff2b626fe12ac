"""Peak memory of one task reading one big file through a format's opener.

    python -m bench.memory                 # ~1 GB CSV and ~1 GB Parquet, limit 300 MB
    python -m bench.memory --size-mb 50    # quick run
    python -m bench.memory --formats csv,csv.gz,ndjson,arrow,parquet

Why: a Spark task's Python worker must stream a file batch by batch; a reader that holds
the whole file (or a whole decompressed stream) in memory works on test data and dies on
a real lake. Files are generated in a temp dir chunk by chunk (the generator never holds
more than one chunk), then each is read in a fresh child process (one "task": schema
inference, then every batch through ``FileOpener.open``) whose peak RSS
(``ru_maxrss``) is reported. The exit code is 1 when any peak reaches ``--limit-mb``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

CHUNK_ROWS = 250_000
ROW_GROUP_ROWS = 1_000_000
SCHEMA = pa.schema([("id", pa.int64()), ("amount", pa.float64()), ("name", pa.string()),
                    ("tag", pa.string())])
FORMATS = {"csv": "csv", "csv.gz": "csv", "ndjson": "json", "arrow": "arrow",
           "parquet": "parquet"}


# --- generating ----------------------------------------------------------------------------

def chunks() -> Iterator[pa.Table]:
    """Endless chunks of random-ish rows, built with pyarrow only (no Python loop per row),
    random enough that Parquet cannot compress them to nothing."""
    n = CHUNK_ROWS
    base = pa.array(range(n), pa.int64())
    offsets = pa.array(range(0, 16 * (n + 1), 16), pa.int32()).buffers()[1]
    tags = pa.array(["alpha", "beta", "gamma", "delta", "epsilon"] * (n // 5))
    start = 0
    while True:
        cents = pa.Array.from_buffers(pa.uint32(), n, [None, pa.py_buffer(os.urandom(4 * n))])
        names = pa.StringArray.from_buffers(n, offsets, pa.py_buffer(os.urandom(8 * n).hex()
                                                                     .encode()))
        yield pa.table([pc.add(base, start), pc.divide(cents.cast(pa.float64()), 100.0),
                        names, tags], schema=SCHEMA)
        start += n


def _ndjson(t: pa.Table) -> bytes:
    cols = [c.to_pylist() for c in t.columns]
    names = t.schema.names
    return "".join(json.dumps(dict(zip(names, row, strict=True))) + "\n"
                   for row in zip(*cols, strict=True)).encode()


def generate(kind: str, path: Path, target: int) -> int:
    """Write ``kind`` to ``path`` until it holds ``target`` bytes; returns rows written."""
    rows = 0
    source = chunks()
    if kind == "parquet":
        import pyarrow.parquet as pq

        with pq.ParquetWriter(path, SCHEMA) as writer:
            while not path.exists() or path.stat().st_size < target:
                batch = pa.concat_tables([next(source) for _ in
                                          range(ROW_GROUP_ROWS // CHUNK_ROWS)])
                writer.write_table(batch, row_group_size=ROW_GROUP_ROWS)
                rows += batch.num_rows
        return rows
    if kind == "arrow":
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, SCHEMA) as writer:
            while sink.tell() < target:
                t = next(source)
                writer.write_table(t, max_chunksize=65_536)
                rows += t.num_rows
        return rows
    import pyarrow.csv as pacsv

    opener: Callable[..., object] = gzip.open if kind.endswith(".gz") else open
    with opener(path, "wb") as out:  # type: ignore[operator]
        first = True
        written = 0
        while (written if kind.endswith(".gz") else out.tell()) < target:  # type: ignore[attr-defined]
            t = next(source)
            if kind == "ndjson":
                data = _ndjson(t)
            else:
                sink = pa.BufferOutputStream()
                pacsv.write_csv(t, sink, pacsv.WriteOptions(include_header=first))
                data = sink.getvalue().to_pybytes()
            out.write(data)  # type: ignore[attr-defined]
            written += len(data)
            first = False
            rows += t.num_rows
    return rows


# --- one task in a child process -----------------------------------------------------------

def rss_mb() -> float:
    """This process's peak RSS in MB. On Linux, ``VmHWM`` of the process's own memory:
    ``ru_maxrss`` would also count the parent's peak before ``exec`` (it is inherited
    across fork/exec), which made a child look as big as the generator that started it."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def child(fmt_name: str, path: str) -> dict:
    """Infer the schema and read every batch, as one Spark task would; report the peak."""
    from listing import formats
    from listing.files import PartitionedFile
    from listing.storage import StorageSpec

    baseline = rss_mb()
    storage = StorageSpec("file")
    file = PartitionedFile(path, os.path.getsize(path))
    fmt = formats.get(fmt_name)
    t0 = time.perf_counter()
    schema = fmt.infer_schema([file], storage)
    rows = batches = 0
    for batch in fmt.file_source(schema, storage=storage).create_opener().open(file):
        rows += batch.num_rows
        batches += 1
    seconds = time.perf_counter() - t0
    return {"rows": rows, "batches": batches, "seconds": seconds, "baseline_mb": baseline,
            "peak_mb": rss_mb()}


def run_child(fmt_name: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "bench.memory", "--child", fmt_name, str(path)],
                         capture_output=True, text=True, check=False,
                         cwd=Path(__file__).resolve().parents[1])
    if out.returncode != 0:
        raise SystemExit(f"reading {path} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# --- main ----------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.memory", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=int, default=1024, help="size of each file (default 1024)")
    ap.add_argument("--limit-mb", type=float, default=300, help="peak RSS that fails (300)")
    ap.add_argument("--formats", default="csv,parquet",
                    help=f"comma-separated, from {', '.join(FORMATS)}")
    ap.add_argument("--dir", help="where to write the files (default: a temp dir, removed)")
    ap.add_argument("--child", nargs=2, metavar=("FORMAT", "PATH"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0

    kinds = [k.strip() for k in args.formats.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in FORMATS]
    if unknown:
        ap.error(f"unknown format(s) {unknown}; choose from {list(FORMATS)}")
    workdir = Path(args.dir or tempfile.mkdtemp(prefix="bench-memory-"))
    workdir.mkdir(parents=True, exist_ok=True)
    results = []
    try:
        for kind in kinds:
            path = workdir / f"data.{kind}"
            t0 = time.perf_counter()
            written = generate(kind, path, args.size_mb << 20)
            size = path.stat().st_size
            print(f"generated {path.name}: {size / 2**20:,.0f} MB, {written:,} rows in "
                  f"{time.perf_counter() - t0:.1f}s", file=sys.stderr)
            r = run_child(FORMATS[kind], path)
            if r["rows"] != written:
                raise SystemExit(f"{kind}: read {r['rows']:,} rows, wrote {written:,}")
            results.append((kind, size, r))
            if not args.dir:
                path.unlink()
    finally:
        if not args.dir:
            shutil.rmtree(workdir, ignore_errors=True)

    header = (f"{'format':<8} {'file MB':>8} {'rows':>12} {'batches':>8} {'seconds':>8} "
              f"{'rows/s':>11} {'MB/s':>7} {'base MB':>8} {'peak MB':>8}")
    print(header)
    print("-" * len(header))
    failed = False
    for kind, size, r in results:
        over = r["peak_mb"] >= args.limit_mb
        failed |= over
        print(f"{kind:<8} {size / 2**20:>8,.0f} {r['rows']:>12,} {r['batches']:>8,} "
              f"{r['seconds']:>8.1f} {r['rows'] / r['seconds']:>11,.0f} "
              f"{size / 2**20 / r['seconds']:>7.1f} {r['baseline_mb']:>8.0f} "
              f"{r['peak_mb']:>8.0f}{'  <-- over limit' if over else ''}")
    print(f"limit: peak RSS < {args.limit_mb:.0f} MB per task: {'FAIL' if failed else 'ok'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
