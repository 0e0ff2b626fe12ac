"""The README's five-minute tour runs as shown, against the S3 server and the test session
(only the server's address and the table's root are replaced)."""

from __future__ import annotations

import contextlib
import datetime as dt
import io
import re
import uuid
from pathlib import Path

from listing.testing import datasets

README = Path(__file__).resolve().parents[1] / "README.md"


def tour_code() -> str:
    text = README.read_text()
    section = text.split("## Five-minute tour", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1
    return blocks[0]


def test_the_tour_runs_and_prunes(spark, s3_server):
    bucket = s3_server.create_bucket(f"tour-{uuid.uuid4().hex[:8]}")
    ds = datasets.daily(f"s3://{bucket}/events", s3_server.storage_options,
                        start=dt.date(2026, 2, 27), days=4,
                        put=datasets.fast_writer(s3_server))
    code = tour_code()
    assert "http://127.0.0.1:5000" in code and "s3://lake/events/" in code
    code = code.replace("http://127.0.0.1:5000", s3_server.endpoint_url)
    code = code.replace("s3://lake/events/", f"{ds.root}/")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(README), "exec"), {"__name__": "tour"})  # noqa: S102
    printed = out.getvalue()
    want = sum(f.num_rows for f in ds.files if str(f.partition_values["date"]) == "2026-03-01"
               and f.partition_values["region"] == "us")
    assert want > 0 and f"\n{want}\n" in printed  # the Spark count
    # the Python API's plan, and listing.explain's: the filter prunes the listing exactly
    # (on the Python engine a second plan; handed to Spark's S3A reader, its fed file index)
    pruned = printed.count("partition filter (exact): date = ")
    assert pruned >= 1, printed[-3000:]
    assert pruned >= 2 or ("engine: native" in printed
                           and "files: from the listing planner" in printed), printed[-3000:]
    assert re.search(rf"\|\s*us\s*\|\s*{want}\s*\|", printed), printed[-2000:]  # SQL
    spark.catalog.dropTempView("events")
