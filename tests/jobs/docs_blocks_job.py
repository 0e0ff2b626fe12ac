"""Runs the documentation's code blocks as a user would (``tests/spark/test_docs_blocks.py``).

One process, one moto S3 server, one Spark session for every block. The server holds what
the pages read (``s3://lake/events/``, ``s3://my-bucket/events/``), and the process has the
environment a user sets to reach it without naming it in code: ``AWS_ENDPOINT_URL`` and
dummy credentials, set before Spark starts. A page's ``http://127.0.0.1:5000`` (the
documented local server) is this server's endpoint. The blocks of one page share a
namespace, in order. Usage: ``python docs_blocks_job.py BLOCKS.json RESULTS.json``.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

DOCUMENTED_ENDPOINT = "http://127.0.0.1:5000"


def sql_statements(code: str) -> list[str]:
    """The statements of a SQL block (``--`` comments dropped)."""
    text = "\n".join(re.sub(r"--.*$", "", line) for line in code.splitlines())
    return [s.strip() for s in text.split(";") if s.strip()]


def run_block(block: dict[str, Any], namespace: dict[str, Any], endpoint: str,
              workdir: Path) -> str:
    """Run one block; what it printed."""
    code = block["code"].replace(DOCUMENTED_ENDPOINT, endpoint)
    out = io.StringIO()
    if block["mode"] == "pytest":
        test = workdir / f"test_{block['id'].replace('/', '_').replace('.', '_')}.py"
        test.write_text(code)
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly",
                               "-p", "no:cacheprovider", str(test)], cwd=workdir,
                              capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise AssertionError(f"pytest failed:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
        return proc.stdout
    with contextlib.redirect_stdout(out):
        if block["lang"] == "python":
            exec(compile(code, block["id"], "exec"), namespace)  # noqa: S102
        else:
            import listing

            spark = listing.session()
            for statement in sql_statements(code):
                spark.sql(statement).show(truncate=False)
    return out.getvalue()


def main(blocks_file: str, results_file: str) -> None:
    from listing.testing import datasets
    from listing.testing.s3 import S3Server

    blocks = json.loads(Path(blocks_file).read_text())
    server = S3Server().start()
    try:
        for bucket in ("lake", "my-bucket"):
            server.create_bucket(bucket)
            datasets.daily(f"s3://{bucket}/events", server.storage_options, days=730,
                           put=datasets.fast_writer(server))
        os.environ.update(AWS_ENDPOINT_URL=server.endpoint_url, AWS_ACCESS_KEY_ID="testing",
                          AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1")
        workdir = Path(tempfile.mkdtemp(prefix="docs-blocks-"))
        os.chdir(workdir)
        import listing

        listing.session(ui=False, conf={"spark.sql.shuffle.partitions": "2"})
        results: dict[str, Any] = {}
        namespaces: dict[str, dict[str, Any]] = {}
        for block in blocks:
            namespace = namespaces.setdefault(block["page"], {"__name__": "__docs__"})
            try:
                printed = run_block(block, namespace, server.endpoint_url, workdir)
                results[block["id"]] = {"ok": True, "printed": printed[-2000:]}
            except BaseException:  # noqa: BLE001 - reported per block
                results[block["id"]] = {"ok": False, "error": traceback.format_exc()[-4000:]}
            Path(results_file).write_text(json.dumps(results))
    finally:
        server.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
