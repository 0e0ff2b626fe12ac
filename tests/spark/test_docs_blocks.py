"""Every Python, SQL and shell block of the README and the documentation runs as pasted
after its page's own setup, or says why not.

A block preceded by ``<!-- not run: REASON -->`` is skipped for that reason; one preceded by
``<!-- run: pytest -->`` is a test module, run with pytest (the ``listing_s3`` plugin's
fixtures). A page whose examples need the local S3 server states it: a shell block preceded
by ``<!-- setup: serve -->`` holds the ``export`` lines ``python -m listing.testing.serve``
prints. Each page runs in ONE fresh interpreter (``tests/jobs/docs_blocks_job.py``), its
blocks in order sharing their names, in an empty folder and a clean environment: a fresh
shell's ``PATH`` (the virtualenv's ``bin`` first, as activated) and ``HOME``, and for a
page with that setup what the server printed, from a server started for that page as the
page says. The one rewrite: the server binds a free port, and the documented
``127.0.0.1:5000`` in the blocks is replaced by it. The reference tables are generated at
build time (``docs_hooks/generated.py``); this module checks that each page's markers name
a table that renders.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUN_LANGS = ("python", "sql", "bash")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
MARKER = re.compile(r"<!--\s*(not run|run|setup):\s*(.*?)\s*-->\s*$")
DOCUMENTED_ENDPOINT = "http://127.0.0.1:5000"
#: what a fresh shell holds besides the page's exports (JAVA_HOME only where it is set)
SHELL_VARS = ("HOME", "JAVA_HOME", "LANG", "TMPDIR")


def pages() -> list[Path]:
    """The README and every page of the site (docs/incoming/ is the lead's inbox)."""
    docs = sorted(p for p in (ROOT / "docs").rglob("*.md")
                  if "incoming" not in p.relative_to(ROOT / "docs").parts)
    return [ROOT / "README.md", *docs]


def blocks() -> list[dict[str, Any]]:
    """Every fenced block in a runnable language: its page, id, code and how it runs
    (``run``, ``skip``, ``pytest`` or ``setup``)."""
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
            elif marker and marker.group(1) == "setup":
                assert marker.group(2) == "serve", f"{rel}: unknown setup {marker.group(2)!r}"
                mode = "setup"
            line = text[:m.start()].count("\n") + 1
            found.append({"page": rel, "id": f"{rel}:{line}", "lang": m.group(1),
                          "code": m.group(2), "mode": mode, "reason": reason, "n": n})
    return found


BLOCKS = blocks()
RUNNABLE = [b for b in BLOCKS if b["mode"] in ("run", "pytest")]


def exports(code: str) -> dict[str, str]:
    """The ``NAME=VALUE`` pairs of a shell block's ``export`` lines."""
    pairs: dict[str, str] = {}
    for line in code.splitlines():
        if line.startswith("export "):
            pairs.update(kv.split("=", 1) for kv in line.split()[1:])
    return pairs


def test_blocks_are_found_and_skips_give_a_reason():
    assert len(RUNNABLE) >= 10  # the control
    assert any(b["lang"] == "sql" for b in RUNNABLE)
    assert any(b["lang"] == "bash" for b in RUNNABLE)
    assert any(b["mode"] == "pytest" for b in BLOCKS)
    for b in BLOCKS:
        if b["mode"] == "skip":
            assert len(b["reason"]) > 10, b["id"]  # a reason, not a bare marker


def test_a_page_that_reads_the_test_server_states_its_setup():
    """A page whose blocks name the documented endpoint (or read ``s3://lake/``) has the
    setup block, before its first such block, and its exports are the server's."""
    from listing.testing import serve

    documented = serve.environment(DOCUMENTED_ENDPOINT)
    checked = 0
    for page in sorted({b["page"] for b in RUNNABLE}):
        mine = [b for b in BLOCKS if b["page"] == page]
        setup = [b for b in mine if b["mode"] == "setup"]
        needs = [b for b in mine if b["mode"] == "run"
                 and ("127.0.0.1:5000" in b["code"] or "s3://lake/events" in b["code"]
                      or "s3://my-bucket/" in b["code"])]
        if not needs:
            continue
        assert len(setup) == 1, f"{page}: its blocks read the test server; no setup block"
        assert setup[0]["n"] < needs[0]["n"], f"{page}: the setup comes after {needs[0]['id']}"
        assert exports(setup[0]["code"]) == documented, setup[0]["id"]
        checked += 1
    assert checked >= 6


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


def shell_env() -> dict[str, str]:
    """A fresh shell's environment: this virtualenv's ``bin`` first on ``PATH``."""
    env = {k: os.environ[k] for k in SHELL_VARS if k in os.environ}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])
    return env


@contextmanager
def served() -> Iterator[dict[str, str]]:
    """``python -m listing.testing.serve`` started as a page says (on a free port): what it
    printed to export, once it is ready; stopped on leaving."""
    proc = subprocess.Popen([sys.executable, "-m", "listing.testing.serve", "--port", "0"],
                            stdout=subprocess.PIPE, text=True, env=shell_env())
    try:
        printed = []
        assert proc.stdout is not None
        for line in proc.stdout:
            printed.append(line)
            if line.startswith("# ready"):
                break
        else:
            raise AssertionError(f"the server stopped before it was ready: {printed}")
        yield exports("".join(printed))
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def run_page(page: str, tmp: Path) -> dict[str, Any]:
    """Every runnable block of ``page``, in one fresh interpreter after the page's setup."""
    mine = [b for b in BLOCKS if b["page"] == page]
    with contextlib.ExitStack() as stack:
        env = shell_env()
        code_of: dict[str, str] = {}
        if any(b["mode"] == "setup" for b in mine):
            printed = stack.enter_context(served())
            env.update(printed)
            code_of = {b["id"]: b["code"].replace(DOCUMENTED_ENDPOINT, printed["AWS_ENDPOINT_URL"])
                       for b in mine}
        todo = [{**b, "code": code_of.get(b["id"], b["code"])} for b in mine
                if b["mode"] in ("run", "pytest")]
        work = tmp / re.sub(r"\W", "_", page)
        work.mkdir()
        (tmp / f"{work.name}.json").write_text(json.dumps(todo))
        out = tmp / f"{work.name}.results.json"
        started = time.monotonic()
        proc = subprocess.run([sys.executable, str(ROOT / "tests" / "jobs" / "docs_blocks_job.py"),
                               str(tmp / f"{work.name}.json"), str(out)],
                              capture_output=True, text=True, timeout=900, env=env, cwd=work)
    done: dict[str, Any] = json.loads(out.read_text()) if out.exists() else {}
    for b in todo:
        done.setdefault(b["id"], {"ok": False, "error": f"the page's job stopped "
                                  f"(exit {proc.returncode}):\n{proc.stderr[-5000:]}"})
    print(f"{page}: {len(todo)} blocks in {time.monotonic() - started:.1f} s")
    return done


#: pages run at once (each its own interpreter); of those, pages starting a Spark session:
#: two Spark sessions at once on two cores had a Python worker fail to connect back
PAGES_AT_ONCE, SPARK_PAGES_AT_ONCE = 2, 1


def uses_spark(page: str) -> bool:
    """Whether a runnable block of ``page`` names Spark (it may start a session)."""
    return any(re.search(r"spark", b["code"], re.I) for b in RUNNABLE if b["page"] == page)


def in_turns(pages: list[str]) -> list[str]:
    """``pages``, those using Spark and the others alternating, so that the others run
    beside a Spark page."""
    heavy = [p for p in pages if uses_spark(p)]
    light = [p for p in pages if not uses_spark(p)]
    out = []
    for i in range(max(len(heavy), len(light))):
        out += heavy[i:i + 1] + light[i:i + 1]
    return out


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every runnable block's result: each page run once."""
    tmp = tmp_path_factory.mktemp("docs")
    done: dict[str, Any] = {}
    spark_turn = threading.Semaphore(SPARK_PAGES_AT_ONCE)

    def run(page: str) -> dict[str, Any]:
        if not uses_spark(page):
            return run_page(page, tmp)
        with spark_turn:
            return run_page(page, tmp)

    pages = in_turns(list(dict.fromkeys(b["page"] for b in RUNNABLE)))
    with ThreadPoolExecutor(PAGES_AT_ONCE) as pool:
        for page_results in pool.map(run, pages):
            done.update(page_results)
    return done


def test_pages_without_spark_are_told_apart():
    """The control of the page order: some pages run beside a Spark page, none of them
    names Spark, and every page is run once."""
    pages = list(dict.fromkeys(b["page"] for b in RUNNABLE))
    light = [p for p in pages if not uses_spark(p)]
    assert light and len(light) < len(pages)
    assert "docs/spark.md" not in light and "docs/stores/local.md" in light
    assert sorted(in_turns(pages)) == sorted(pages)


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: b["id"])
def test_block_runs(block: dict[str, Any], results: dict[str, Any]) -> None:
    result = results[block["id"]]
    assert result["ok"], f"{block['id']}:\n{block['code']}\n{result.get('error')}"


def _code(code: str) -> list[str]:
    return [re.sub(r"\s*#.*$", "", line) for line in code.splitlines() if line.strip()]


def test_the_read_your_own_table_block_reads_through_the_environment(results):
    """The block meant for AWS names no endpoint: it reached the test server through
    AWS_ENDPOINT_URL, and printed the per-region counts of one day. The README's copy
    (not run: one Spark session less) is the same code."""
    block = next(b for b in BLOCKS if b["page"] == "docs/getting-started.md"
                 and 's3://my-bucket/events/' in b["code"] and b["lang"] == "python")
    readme = next(b for b in BLOCKS if b["page"] == "README.md"
                  and 's3://my-bucket/events/' in b["code"] and b["lang"] == "python")
    assert _code(readme["code"]) == _code(block["code"])
    assert "endpoint" not in block["code"]
    printed = results[block["id"]]["printed"]
    assert re.search(r"\|\s*us\s*\|\s*3\s*\|", printed), printed  # 3 rows a file
    assert "partition filter" in printed or "engine: native" in printed, printed


# --- generated reference tables --------------------------------------------------------

def _docs_hook(name: str) -> Any:
    """The module ``docs_hooks/<name>.py``, imported as mkdocs imports it."""
    sys.path.insert(0, str(ROOT / "docs_hooks"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)


def _hook() -> Any:
    return _docs_hook("generated")


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

    api = "\n".join(p.read_text() for p in (ROOT / "docs" / "reference" / "api").glob("*.md"))
    rendered = set(re.findall(r"^::: ([\w.]+)$", api, re.M))
    short = {name.rsplit(".", 1)[-1] for name in rendered}
    assert "::: listing.errors" in (ROOT / "docs" / "reference" / "errors.md").read_text()
    missing = [n for n in listing.__all__ if n not in short and not hasattr(errors, n)]
    assert missing == [], missing


def test_the_formats_tsv_block_prints_its_columns(results):
    """The TSV example prints the file's column and the folder's, typed, as it says."""
    block = next(b for b in BLOCKS if b["page"] == "docs/formats.md"
                 and 'format="tsv"' in b["code"])
    printed = results[block["id"]]["printed"]
    assert "id: int64" in printed and "day: date32[day]" in printed, printed
    assert "[[1],[2]]" in printed.replace(" ", ""), printed


def test_the_layouts_blocks_print_what_their_comments_say(results):
    printed = {b["id"]: results[b["id"]]["printed"] for b in BLOCKS
               if b["page"] == "docs/layouts.md" and b["mode"] == "run"}
    firehose, cloudtrail = (next(v for k, v in printed.items() if word in
                                 next(b["code"] for b in BLOCKS if b["id"] == k))
                            for word in ("firehose(", "cloudtrail("))
    assert firehose.split()[-2:] == ["1", "6"], firehose  # 1 LIST, 6 rows
    assert cloudtrail.split() == ["1", "4"], cloudtrail  # 1 LIST (one page), 4 files


def test_the_local_store_page_reads_what_it_wrote(results):
    block = next(b for b in BLOCKS if b["page"] == "docs/stores/local.md"
                 and b["lang"] == "python")
    assert results[block["id"]]["printed"].split() == ["1", "2"]  # 1 file, 2 rows


# --- the benchmark figures: one source, bench/results/ ----------------------------------

def _figures() -> Any:
    return _docs_hook("bench_figures")


def test_every_figure_the_readme_quotes_is_its_saved_result():
    """The README's table is the one rendered from bench/results (each row naming its
    saved file, command and commit); `python docs_hooks/bench_figures.py` rewrites it."""
    figures = _figures()
    readme = (ROOT / "README.md").read_text()
    assert figures.readme_copy(readme) == figures.readme_table(), \
        "README.md's benchmark table differs from bench/results: python docs_hooks/bench_figures.py"
    for row in figures.ROWS:
        assert (figures.RESULTS / row.path).exists(), row.path
        assert figures.run_of(row.path)[1] in figures.summary_table()
    # a control: a changed saved figure changes the table
    row = figures.ROWS[0]
    data = figures.load(row.path)
    data["sections"]["listing"]["tables"]["hourly"]["queries"]["point"]["readers"][
        "listing"]["plan_s"] = 9.87
    assert row.ours(data) == "1 LIST, 9.87 s"


def test_the_benchmarks_page_renders_its_figures_from_the_saved_runs():
    hook = _hook()
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    assert "<!-- generated: bench-summary -->" in page
    assert hook.render("bench-summary") == _figures().summary_table()
    assert "0.90 s" not in page and "3.20 s" not in page  # the older run's, typed by hand
    linked = hook.link_charts("![a](bench/x-y.png)")
    assert linked == "[![a](bench/x-y.png)](bench/x-y.png){ .chart }"
    assert hook.link_charts(linked) == linked  # already a link: kept


def test_reference_pages_say_in_a_clone_how_to_build_them():
    hook = _hook()
    for page in (ROOT / "docs" / "reference").rglob("*.md"):
        text = page.read_text()
        assert "<!-- clone-note -->" in text and "make docs" in text, page
        assert "clone-note" not in hook.CLONE_NOTE.sub("", text), page
