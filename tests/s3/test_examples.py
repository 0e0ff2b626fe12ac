"""The README's Python example runs as shown (its own S3 server, in a subprocess)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quickstart_prints_a_pruned_plan():
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "quickstart.py")],
                         capture_output=True, text=True, check=True, timeout=300).stdout
    assert "list 'lake/events/date=2026-03-0' from date=2026-03-01 to date=2026-03-07" in out
    assert "list_requests=1" in out and "files: 7 in 1 groups" in out
    assert "21 rows" in out


def test_formats_tour_reads_gzip_csv_and_writes_a_custom_format():
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "formats_tour.py")],
                         capture_output=True, text=True, check=True, timeout=300).stdout
    assert "csv.gz: ['id', 'amount', 'name', 'date', 'region']" in out
    assert "tsv: True [{'id': 1, 'note': 'day 2026-03-02', 'day': datetime.date(2026, 3, 2)}" in out
    assert re.search(r"^fixed_width: [1-4] files, 4 rows$", out, re.M)  # written, read back
