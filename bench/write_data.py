"""The write benches' table: one schema and its rows built in chunks (``bench.write``,
``bench.write_spark_s3``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

DAYS = 30
REGIONS = ("eu-west", "us-east", "ap-south", "sa-east")
CHUNK_ROWS = 250_000
SCHEMA = pa.schema([("id", pa.int64()), ("amount", pa.float64()), ("name", pa.string()),
                    ("date", pa.date32()), ("region", pa.string())])


def chunk(rng: np.random.Generator, start: int, n: int, days: int = DAYS,
          regions: tuple[str, ...] = REGIONS) -> pa.RecordBatch:
    """``n`` rows from id ``start``: random amounts, 16-character hex names, and a random
    (date, region) per row; built with numpy and pyarrow, no Python loop per row."""
    offsets = pa.py_buffer(np.arange(0, 16 * (n + 1), 16, dtype=np.int32).tobytes())
    names = pa.StringArray.from_buffers(n, offsets, pa.py_buffer(rng.bytes(8 * n).hex()
                                                                  .encode()))
    first = np.datetime64("2025-06-01", "D").astype(np.int32)
    dates = pa.array(first + rng.integers(0, days, n, dtype=np.int32), pa.int32())
    region = pa.DictionaryArray.from_arrays(
        pa.array(rng.integers(0, len(regions), n, dtype=np.int32)), pa.array(regions))
    return pa.RecordBatch.from_arrays(
        [pa.array(np.arange(start, start + n, dtype=np.int64)),
         pa.array(np.round(rng.random(n) * 1000, 2)), names, dates.cast(pa.date32()),
         region.cast(pa.string())], schema=SCHEMA)
