"""Runs one page's code blocks as a reader pastes them (``tests/spark/test_docs_blocks.py``).

A fresh interpreter, started by the test in a clean environment (what the page's setup
exports, nothing else inherited) and an empty working directory. The page's blocks run in
order: Python blocks in one namespace (a reader's one ``python`` session), SQL blocks
through ``listing.session().sql``, shell blocks in ``bash -e`` with this environment,
pytest modules with pytest. Nothing is prepared here: a block that needs a server, a
session or a table gets it from the page. Usage:
``python docs_blocks_job.py BLOCKS.json RESULTS.json``.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any


def sql_statements(code: str) -> list[str]:
    """The statements of a SQL block (``--`` comments dropped)."""
    text = "\n".join(re.sub(r"--.*$", "", line) for line in code.splitlines())
    return [s.strip() for s in text.split(";") if s.strip()]


def _run(argv: list[str], timeout: int = 600) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise AssertionError(f"{argv[0]} exited {proc.returncode}:\n"
                             f"{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
    return proc.stdout


def run_block(block: dict[str, Any], namespace: dict[str, Any]) -> str:
    """Run one block; what it printed."""
    code = block["code"]
    if block["mode"] == "pytest":
        test = Path(f"test_{re.sub(r'[^0-9A-Za-z]', '_', block['id'])}.py")
        test.write_text(code)
        return _run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly",
                     "-p", "no:cacheprovider", str(test)])
    if block["lang"] in ("bash", "sh", "shell"):
        return _run(["bash", "-e", "-o", "pipefail", "-c", code])
    out = io.StringIO()
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
    blocks = json.loads(Path(blocks_file).read_text())
    results: dict[str, Any] = {}
    namespace: dict[str, Any] = {"__name__": "__main__"}
    for block in blocks:
        try:
            printed = run_block(block, namespace)
            results[block["id"]] = {"ok": True, "printed": printed[-4000:]}
        except BaseException:  # noqa: BLE001 - reported per block
            results[block["id"]] = {"ok": False, "error": traceback.format_exc()[-4000:]}
        Path(results_file).write_text(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
