"""The one metrics type: declared counter names, thread-safe counts, views in declared order.

No server and no Spark: the counters alone, and every counter name the code spells checked
against the declarations (read from the source, so a name in a path no test runs counts).
"""

from __future__ import annotations

import ast
import pickle
import re
import threading
from pathlib import Path

import pytest

from listing.metrics import COUNTERS, Counters, CountersView, declare

ROOT = Path(__file__).resolve().parents[3]
#: a counter name as the code spells one (lower snake case): ``str.count("%")`` and
#: ``cap.count("HEAD")`` are no counters
_NAME = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")
#: calls whose first argument is a counter name
_COUNTING = {"add", "start", "count"}


def counter_names(source: str) -> set[str]:
    """Counter names spelled in ``source``: the first argument of ``.add(…)``,
    ``.start(…)`` and ``.count(…)`` calls, every argument of ``.start(…)``, and the names
    of module constants ending in ``METRICS``, ``LISTED``, ``SKIPS`` or ``ALWAYS``."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in _COUNTING and node.args:
            args = node.args if node.func.attr == "start" else node.args[:1]
            found |= {a.value for a in args if isinstance(a, ast.Constant)
                      and isinstance(a.value, str) and _NAME.fullmatch(a.value)}
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple) and any(
                isinstance(t, ast.Name) and t.id.endswith(("METRICS", "LISTED", "SKIPS",
                                                           "ALWAYS"))
                for t in node.targets):
            found |= {e.value for e in node.value.elts
                      if isinstance(e, ast.Constant) and isinstance(e.value, str)}
    return found


def test_every_counter_the_code_names_is_declared() -> None:
    sources = sorted((ROOT / "listing").rglob("*.py")) + sorted((ROOT / "formats").glob("*.py"))
    used = {name: path for path in sources
            for name in counter_names(path.read_text())}
    undeclared = {name: str(path.relative_to(ROOT)) for name, path in used.items()
                  if name not in COUNTERS}
    assert not undeclared, f"declare these in listing/metrics.py COUNTERS: {undeclared}"
    # the scan sees the code's counters (not vacuously empty): the listing's, the write's
    assert {"list_requests", "files_matched", "files_written", "row_groups_read",
            "files_skipped_missing", "jobs_recovered"} <= used.keys()


def test_the_check_finds_an_undeclared_name() -> None:
    """Positive control: a new counter spelled in code, not declared, is found."""
    source = ('self.metrics.add("files_frobbed")\nstore.metrics.start("list_requests", '
              '"keys_frobbed")\nWRITE_METRICS = ("rows_frobbed",)\n"%".count("%")\n')
    found = counter_names(source)
    assert found == {"files_frobbed", "list_requests", "keys_frobbed", "rows_frobbed"}
    assert found - COUNTERS.keys() == {"files_frobbed", "keys_frobbed", "rows_frobbed"}


def test_every_counter_has_a_one_line_meaning() -> None:
    for name, meaning in COUNTERS.items():
        assert _NAME.fullmatch(name), name
        assert meaning and "\n" not in meaning and len(meaning) < 120, name


def test_an_undeclared_name_is_refused_and_a_declared_one_counted() -> None:
    counts = Counters()
    with pytest.raises(ValueError, match="'files_frobbed' is not declared"):
        counts.add("files_frobbed")
    assert "files_frobbed" not in counts
    counts.add("files_listed", 3)  # control: a declared name counts
    counts.start("files_matched", "files_listed")
    assert dict(counts) == {"files_listed": 3, "files_matched": 0}
    with pytest.raises(ValueError, match="not declared"):
        CountersView(counts, always=("files_frobbed",))


def test_a_format_declares_its_own_counter() -> None:
    """A user's opener declares its counters on its class; an undeclared one is refused."""
    from listing.formats.base import FileOpener

    name = "frobs_read_by_test_format"

    class Plain(FileOpener):
        pass

    class Frobbing(FileOpener):
        counters = {name: "frobs a test format read"}

    assert name not in COUNTERS
    try:
        with pytest.raises(ValueError, match="not declared"):
            Plain(None).count(name)  # no source needed to count
        opener = Frobbing(None)
        opener.count(name, 2)
        Frobbing(None)  # declared again, the same: no error
        assert dict(opener.metrics) == {name: 2}
        with pytest.raises(ValueError, match="declared already"):
            declare(name, "something else")
        with pytest.raises(ValueError, match="declared already"):
            declare("list_requests", "a toolkit counter, redefined")
    finally:
        COUNTERS.pop(name, None)


def test_counts_from_many_threads_are_exact() -> None:
    counts = Counters()
    barrier = threading.Barrier(8)

    def work() -> None:
        barrier.wait()
        for _ in range(5000):
            counts.add("list_requests")
            counts.add("bytes_read", 3)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counts == {"list_requests": 40000, "bytes_read": 120000}


def test_counters_pickle_as_their_counts_and_may_count_into_a_dict() -> None:
    counts = Counters()
    counts.add("put_requests", 2)
    again = pickle.loads(pickle.dumps(counts))  # a task's counts sent to the driver
    again.add("put_requests")
    assert (dict(counts), dict(again)) == ({"put_requests": 2}, {"put_requests": 3})
    mine: dict[str, int] = {}
    Counters(mine).add("renames")  # a caller's own dict holds the counts
    assert mine == {"renames": 1}


def test_a_view_shows_its_names_in_declared_order() -> None:
    counts = Counters()
    counts.add("bytes", 10)
    counts.add("files_listed", 2)
    counts.add("put_requests")
    view = CountersView(counts, always=("list_requests",), names=("bytes", "files_listed"))
    assert list(view.items()) == [("list_requests", 0), ("files_listed", 2), ("bytes", 10)]
    assert "put_requests" not in view and view.get("put_requests") is None
    counts.add("list_requests", 4)  # a view of live counters reads them as they are
    assert view["list_requests"] == 4
    order = list(COUNTERS)
    assert order.index("list_requests") < order.index("files_listed") < order.index("bytes")
