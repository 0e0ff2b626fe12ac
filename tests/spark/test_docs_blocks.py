"""Every Python and SQL block of the README and the documentation runs, or says why not.

A block preceded by ``<!-- not run: REASON -->`` is skipped for that reason; one preceded by
``<!-- run: pytest -->`` is a test module, run with pytest (the ``listing_s3`` plugin's
fixtures). The others run in one subprocess (``tests/jobs/docs_blocks_job.py``: one moto S3
server, one Spark session, the environment variables a user sets to reach a server), the
blocks of a page in order, sharing their names. The reference tables are generated at
build time (``docs_hooks/generated.py``); this module checks that each page's markers name
a table that renders.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN_LANGS = ("python", "sql")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
MARKER = re.compile(r"<!--\s*(not run|run):\s*(.*?)\s*-->\s*$")


def pages() -> list[Path]:
    """The README and every page of the site (docs/incoming/ is the lead's inbox)."""
    docs = sorted(p for p in (ROOT / "docs").rglob("*.md")
                  if "incoming" not in p.relative_to(ROOT / "docs").parts)
    return [ROOT / "README.md", *docs]


def blocks() -> list[dict[str, Any]]:
    """Every fenced block in a runnable language: its page, id, code and how it runs."""
    found = []
    for page in pages():
        text = page.read_text()
        rel = str(page.relative_to(ROOT))
        for n, m in enumerate(FENCE.finditer(text)):
            if m.group(1) not in RUN_LANGS:
                continue
            before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marker = MARKER.search(before)
            mode = "run"
            reason = ""
            if marker and marker.group(1) == "not run":
                mode, reason = "skip", marker.group(2)
            elif marker and marker.group(2) == "pytest":
                mode = "pytest"
            line = text[:m.start()].count("\n") + 1
            found.append({"page": rel, "id": f"{rel}:{line}", "lang": m.group(1),
                          "code": m.group(2), "mode": mode, "reason": reason, "n": n})
    return found


BLOCKS = blocks()


def test_blocks_are_found_and_skips_give_a_reason():
    assert len([b for b in BLOCKS if b["mode"] != "skip"]) >= 10  # the control
    assert any(b["lang"] == "sql" for b in BLOCKS)
    assert any(b["mode"] == "pytest" for b in BLOCKS)
    for b in BLOCKS:
        if b["mode"] == "skip":
            assert len(b["reason"]) > 10, b["id"]  # a reason, not a bare marker


def test_the_readme_tour_is_run_by_its_own_test():
    tour = [b for b in BLOCKS if b["page"] == "README.md" and "S3Server().start()" in b["code"]]
    assert len(tour) == 1 and tour[0]["mode"] == "skip"
    assert "test_readme_tour.py" in tour[0]["reason"]
    assert (ROOT / "tests" / "spark" / "test_readme_tour.py").exists()


def test_the_readme_is_a_short_front_door():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 160, len(lines)
    for heading in ("## Two commands", "## Install", "## Read your own S3 table",
                    "## Five-minute tour", "## Where next"):
        assert heading in lines, heading


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every runnable block's result, from one run of the job."""
    tmp = tmp_path_factory.mktemp("docs")
    (tmp / "blocks.json").write_text(json.dumps([b for b in BLOCKS if b["mode"] != "skip"]))
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    for name in ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                 "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        env.pop(name, None)  # the job sets what a user would; nothing inherited
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "jobs" / "docs_blocks_job.py"),
                           str(tmp / "blocks.json"), str(tmp / "results.json")],
                          capture_output=True, text=True, timeout=1500, env=env, cwd=tmp)
    out = tmp / "results.json"
    assert out.exists(), proc.stderr[-5000:]
    done: dict[str, Any] = json.loads(out.read_text())
    assert proc.returncode == 0 or done, proc.stderr[-5000:]
    return done


@pytest.mark.parametrize("block", [b for b in BLOCKS if b["mode"] != "skip"],
                         ids=lambda b: b["id"])
def test_block_runs(block: dict[str, Any], results: dict[str, Any]) -> None:
    assert block["id"] in results, f"the job stopped before {block['id']}"
    result = results[block["id"]]
    assert result["ok"], f"{block['id']}:\n{block['code']}\n{result.get('error')}"


def test_the_read_your_own_table_block_reads_through_the_environment(results):
    """The block meant for AWS names no endpoint: it reached the test server through
    AWS_ENDPOINT_URL, and printed the per-region counts of one day."""
    block = next(b for b in BLOCKS if b["page"] == "README.md"
                 and 's3://my-bucket/events/' in b["code"])
    assert "endpoint" not in block["code"]
    printed = results[block["id"]]["printed"]
    assert re.search(r"\|\s*us\s*\|\s*3\s*\|", printed), printed  # 3 rows a file
    assert "partition filter" in printed or "engine: native" in printed, printed


# --- generated reference tables --------------------------------------------------------

def _hook() -> Any:
    sys.path.insert(0, str(ROOT / "docs_hooks"))
    try:
        import generated
    finally:
        sys.path.pop(0)
    return generated


def test_every_marker_renders_and_the_reference_tables_are_the_codes():
    hook = _hook()
    used = set()
    for page in pages():
        used |= set(hook.MARKER.findall(page.read_text()))
    assert used <= set(hook.GENERATORS), used - set(hook.GENERATORS)
    for name in ("storage-allowlist", "storage-withheld", "s3a-mapping", "source-options",
                 "listing-options", "stream-options", "write-options", "errors", "cli-help"):
        assert name in used, name  # each reference table is on a page
    from listing.options import storage_options

    assert hook.render("storage-allowlist") == storage_options.markdown_table()
    assert hook.render("s3a-mapping") == storage_options.s3a_markdown_table()
    assert "| `s3://` | `profile` | an option string may not choose an AWS profile" in \
        hook.render("storage-withheld")
    with pytest.raises(KeyError, match="unknown generated table"):
        hook.render("no-such-table")


def test_every_option_and_error_is_in_the_reference():
    from listing import errors
    from listing.options import registry

    hook = _hook()
    tables = "\n".join(hook.render(n) for n in hook.GENERATORS if not n.startswith("bench"))
    for o in registry.OPTIONS:
        if o.listed:
            assert f"`{o.name}`" in tables, o.name
    for name in dir(errors):
        cls = getattr(errors, name)
        if isinstance(cls, type) and issubclass(cls, errors.ListingError):
            assert f"`{name}`" in tables, name
    help_text = hook.render("cli-help")
    for command in ("schema", "ls", "explain", "watch", "recover", "cleanup", "demo"):
        assert f"listing {command} --help" in help_text, command


def test_every_public_name_has_a_reference_entry():
    """Each name ``import listing`` offers is rendered from its docstring: on the API page
    (``::: …``), errors on the errors page (``::: listing.errors``)."""
    import listing
    from listing import errors

    api = (ROOT / "docs" / "reference" / "api.md").read_text()
    rendered = set(re.findall(r"^::: ([\w.]+)$", api, re.M))
    short = {name.rsplit(".", 1)[-1] for name in rendered}
    assert "::: listing.errors" in (ROOT / "docs" / "reference" / "errors.md").read_text()
    missing = [n for n in listing.__all__ if n not in short and not hasattr(errors, n)]
    assert missing == [], missing
