"""The README's five-minute tour runs as pasted: it starts its own S3 server and table, and
its ``listing.session()`` is the test session."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

from listing.testing import datasets

README = Path(__file__).resolve().parents[2] / "README.md"


def tour_code() -> str:
    text = README.read_text()
    section = text.split("## Five-minute tour", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    assert len(blocks) == 1
    return blocks[0]


def test_the_tour_runs_and_prunes(spark):
    """Pasted as it is: it starts its own S3 server and writes its own table."""
    code = tour_code()
    assert "S3Server().start()" in code and "s3://lake/events/" in code
    out = io.StringIO()
    namespace: dict[str, Any] = {"__name__": "tour"}
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, str(README), "exec"), namespace)  # noqa: S102
    finally:
        if "server" in namespace:
            namespace["server"].stop()
    printed = out.getvalue()
    want = datasets.daily.__kwdefaults__["rows_per_file"]  # one file in that partition
    assert namespace["rows"].num_rows == want  # the Python API's read
    assert want > 0 and f"\n{want}\n" in printed  # the Spark count
    # the Python API's plan, and listing.explain's: the filter prunes the listing exactly
    # (on the Python engine a second plan; handed to Spark's S3A reader, its fed file index)
    pruned = printed.count("partition filter (exact): date = ")
    assert pruned >= 1, printed[-3000:]
    assert pruned >= 2 or ("engine: native" in printed
                           and "files: from the listing planner" in printed), printed[-3000:]
    assert re.search(rf"\|\s*us\s*\|\s*{want}\s*\|", printed), printed[-2000:]  # SQL
    spark.catalog.dropTempView("events")
