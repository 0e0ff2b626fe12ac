"""Each custom-format scenario in a Spark session of its own: a new process, a new JVM, a
new ``listing.session()``, and the custom format the first thing it reads (no built-in
format read before, no Python worker that saw the format: where a format name once failed
with ``unknown format`` until a built-in format had been read in the session).

The scenarios: a format registered by name (the README's recipe, before and after the
session is built), an instance through ``to_spark``, and an installed package's
``listing.formats`` entry point read by name, in SQL too. Each process reads this test
run's moto server; ``tests/spark/test_spark_formats.py`` covers the same formats in the shared
session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DAYS = ("2026-03-01", "2026-03-02", "2026-03-03")
TIMEOUT = 300.0  # a JVM start and one query on a busy 2-core machine

#: run in a new process: argv = scenario, storage options JSON, table URL
SCRIPT = r'''
import json, sys
sys.path.insert(0, sys.argv[4])  # the user's project folder (examples/)
scenario, opts, url = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
import listing
from listing import ListingTable, formats

def reader(spark, name):
    return (spark.read.format("listing").option("format", name)
            .option("storage_options", json.dumps(opts)))

if scenario == "registered before the session":
    from examples.tsv_format import TsvFormat
    formats.register("tsvx", TsvFormat)
    spark = listing.session(ui=False)
    rows = reader(spark, "tsvx").load(url).where("day = '2026-03-02'").collect()
elif scenario == "registered after the session":
    spark = listing.session(ui=False)
    from examples.tsv_format import TsvFormat
    formats.register("tsvx", TsvFormat)
    rows = reader(spark, "tsvx").load(url).where("day = '2026-03-02'").collect()
elif scenario == "instance through to_spark":
    from examples.fixed_width_format import FixedWidthFormat
    spark = listing.session(ui=False)
    table = ListingTable.open(url, format=FixedWidthFormat(), storage_options=opts)
    rows = listing.to_spark(table, spark, where="day = '2026-03-02'").collect()
elif scenario == "entry point by name":
    spark = listing.session(ui=False)
    assert "pipex" not in formats.registered()
    rows = reader(spark, "pipex").load(url).where("day = '2026-03-02'").collect()
    spark.sql(f"""CREATE TEMPORARY VIEW t USING listing OPTIONS (path '{url}',
                  format 'pipex', storage_options '{json.dumps(opts)}')""")
    assert spark.sql("SELECT count(*) AS n FROM t WHERE day = '2026-03-02'").first().n \
        == len(rows)
print("ROWS " + json.dumps(sorted(str(r.id) for r in rows)))
'''

#: an installed package declaring format ``pipex``, as pip leaves one in site-packages
PLUGIN = """
from listing.formats.csv import CsvFormat


class PipeFormat(CsvFormat):
    name = "pipex"
    extensions = (".pipex",)
    option_defaults = {**CsvFormat.option_defaults, "delimiter": "|"}
"""


def tsv(day: str) -> bytes:
    return ("id\tnote\n" + "".join(f"{i}\t{day} {i}\n" for i in range(4))).encode()


def fixed_width(day: str) -> bytes:
    return ("id  code amount\n" + "".join(f"{i:<4}{'abcd'[i % 4]:<5}{i * 2:>6}\n"
                                          for i in range(4))).encode()


def pipe(day: str) -> bytes:
    return ("id|note\n" + "".join(f"{i}|{day} {i}\n" for i in range(4))).encode()


#: scenario -> (file name, body per day)
LAYOUTS = {
    "registered before the session": ("part-0.tsv", tsv),
    "registered after the session": ("part-0.tsv", tsv),
    "instance through to_spark": ("part-0.txt", fixed_width),
    "entry point by name": ("part-0.pipex", pipe),
}


def site_with_plugin(folder: Path) -> Path:
    """A folder holding the plugin package and its dist-info, as pip installs one."""
    site = folder / "site"
    (site / "pipex_plugin").mkdir(parents=True)
    (site / "pipex_plugin" / "__init__.py").write_text(PLUGIN)
    dist = site / "pipex_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: pipex-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[listing.formats]\npipex = pipex_plugin:PipeFormat\n")
    return site


@pytest.mark.parametrize("scenario", list(LAYOUTS))
def test_custom_format_in_a_fresh_session(s3_server, s3_bucket, tmp_path, scenario):
    name, body = LAYOUTS[scenario]
    prefix = f"fresh-{uuid.uuid4().hex[:8]}"
    s3_server.put_objects_fast(s3_bucket, {f"{prefix}/day={d}/{name}": body(d) for d in DAYS})
    script = tmp_path / "job.py"
    script.write_text(SCRIPT)
    env = dict(os.environ)
    if scenario == "entry point by name":  # installed for the driver and its workers alike
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(site_with_plugin(tmp_path)), env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, str(script), scenario, json.dumps(s3_server.storage_options),
         f"s3://{s3_bucket}/{prefix}", str(ROOT)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    out = [line for line in done.stdout.splitlines() if line.startswith("ROWS ")]
    assert done.returncode == 0 and out, (done.returncode, done.stdout[-2000:],
                                          done.stderr[-4000:])
    assert json.loads(out[0][5:]) == ["0", "1", "2", "3"]  # one day's four rows
