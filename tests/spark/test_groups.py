"""The test groups (tests/groups.py): the Makefile's targets run the whole suite between
them, each test once, and a test may start only what its groups allow."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from _pytest.mark.expression import Expression  # how `-m` evaluates its expression
from groups import GROUPS, UNIT, NeedsMarkerError, _stale_keys, groups_of, misplaced

ROOT = Path(__file__).resolve().parents[2]
TARGETS = ("test-unit", "test-s3", "test-spark-only", "test-install")


def target_expressions() -> dict[str, str]:
    """The ``-m`` expression of each group target of the Makefile."""
    makefile = (ROOT / "Makefile").read_text()
    found = {}
    for target in TARGETS:
        match = re.search(rf'^{target}:.*\n\t.*-m pytest -m "([^"]+)"', makefile, re.M)
        assert match, f"the Makefile has no `{target}` target running pytest -m"
        found[target] = match.group(1)
    return found


def selected_by(groups: frozenset[str]) -> list[str]:
    """The targets whose expression selects a test of ``groups``."""
    return [target for target, expr in target_expressions().items()
            if Expression.compile(expr).evaluate(lambda name, **_: name in groups)]


def possible_groups() -> list[frozenset[str]]:
    """Every set of groups a test can have: unit alone, or any non-empty mix of the rest."""
    mixes = [frozenset(c) for n in range(1, len(GROUPS) + 1)
             for c in itertools.combinations(GROUPS, n)]
    return [frozenset({UNIT}), *mixes]


@pytest.mark.parametrize("groups", possible_groups(), ids=lambda g: "+".join(sorted(g)))
def test_each_kind_of_test_runs_in_exactly_one_target(groups: frozenset[str]) -> None:
    """So the targets together are `make test`, and none runs a test another runs."""
    assert len(selected_by(groups)) == 1, (sorted(groups), selected_by(groups))


def make_test_parts() -> list[str]:
    """The ``-m`` expressions of `make test`'s pytest runs, in order."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^test:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert recipe, "the Makefile has no `test` target"
    return re.findall(r'-m pytest (?:-n \d+ )?-m "([^"]+)"', recipe.group(1))


@pytest.mark.parametrize("groups", possible_groups(), ids=lambda g: "+".join(sorted(g)))
def test_make_test_runs_each_kind_of_test_once(groups: frozenset[str]) -> None:
    """`make test`'s two parts (the tests starting no Spark in two processes, then the
    rest) select every kind of test, each in one part."""
    parts = make_test_parts()
    assert len(parts) == 2, parts  # the control: both parts are found
    chosen = [e for e in parts
              if Expression.compile(e).evaluate(lambda name, **_: name in groups)]
    assert len(chosen) == 1, (sorted(groups), chosen)


def test_a_target_missing_a_kind_would_be_seen() -> None:
    """Positive control: an expression forgetting install-with-s3 tests selects neither."""
    forgetful = Expression.compile("s3 and not spark and not install")
    assert not forgetful.evaluate(lambda name, **_: name in {"s3", "install"})
    assert "test-install" in selected_by(frozenset({"s3", "install"}))


def test_every_collected_test_has_its_groups_as_markers(request: pytest.FixtureRequest) -> None:
    """Every test of this run (the suite, in `make test` or `make test-unit`): unit alone or
    some of the other groups, carried as the markers ``-m`` selects by."""
    items = request.session.items
    assert request.node in items
    for item in items:
        groups = groups_of(item)
        assert groups == {UNIT} or (groups and UNIT not in groups), (item.nodeid, groups)
        marked = {g for g in (UNIT, *GROUPS) if item.get_closest_marker(g)}
        assert marked == groups, (item.nodeid, marked, groups)


class FakeItem:
    """What groups_of reads of a test."""

    def __init__(self, nodeid: str, fixtures: tuple[str, ...] = (), markers: tuple[str, ...] = (),
                 param: str | None = None) -> None:
        self.nodeid, self.fixturenames, self.markers = nodeid, fixtures, markers
        if param is not None:
            self.callspec = SimpleNamespace(id=param)

    def get_closest_marker(self, name: str) -> object:
        return name if name in self.markers else None


@pytest.mark.parametrize(("item", "groups"), [
    (FakeItem("tests/test_x.py::test_pure"), {"unit"}),
    (FakeItem("tests/test_x.py::test_y", fixtures=("s3_bucket", "s3_server")), {"s3"}),
    (FakeItem("tests/test_x.py::test_y", fixtures=("spark", "s3_server")), {"spark", "s3"}),
    (FakeItem("tests/test_x.py::test_y", markers=("spark",)), {"spark"}),
    (FakeItem("tests/test_x.py::test_y", markers=("distributed",)), {"spark"}),
    (FakeItem("tests/spark/test_demo.py::test_any"), {"spark", "s3"}),
    (FakeItem("tests/s3/test_store.py::test_z[s3]", param="s3"), {"s3"}),
    (FakeItem("tests/s3/test_store.py::test_z[memory]", param="memory"), {"unit"}),
    (FakeItem("tests/spark/test_docs_blocks.py::test_block_runs[docs/a.md:1]", param="docs/a.md:1"),
     {"spark", "s3"}),
    (FakeItem("tests/spark/test_docs_blocks.py::test_blocks_are_found"), {"unit"}),
], ids=lambda v: v.nodeid.split("/")[-1] if isinstance(v, FakeItem) else "")
def test_groups_come_from_fixtures_markers_and_the_table(item: FakeItem, groups: set[str]
                                                         ) -> None:
    assert groups_of(item) == groups  # type: ignore[arg-type]


def test_a_renamed_test_in_the_table_is_reported() -> None:
    key = "test_fixtures.py::test_second_server_and_reset_in_a_subprocess"
    without = SimpleNamespace(nodeid="tests/s3/test_fixtures.py::test_other", module=object())
    with_it = SimpleNamespace(nodeid="tests/s3/test_fixtures.py::test_other",
                              module=SimpleNamespace(**{key.split("::")[1]: None}))
    assert key in _stale_keys([without])  # type: ignore[list-item]
    assert key not in _stale_keys([with_it])  # type: ignore[list-item]


@pytest.mark.parametrize(("nodeid", "fixtures", "wrong"), [
    ("tests/unit/planner/test_x.py::t", (), False),
    ("tests/unit/planner/test_x.py::t", ("s3_server",), True),
    ("tests/s3/test_x.py::t", ("s3_server",), False),
    ("tests/s3/test_x.py::t", ("spark",), True),
    ("tests/spark/test_x.py::t", ("spark", "s3_server"), False),
    ("tests/test_x.py::t", (), True),  # in no folder by need
    ("tests/jobs/test_x.py::t", (), True),
])
def test_a_module_lies_in_the_folder_of_what_its_tests_need(
        nodeid: str, fixtures: tuple[str, ...], wrong: bool) -> None:
    item = SimpleNamespace(nodeid=nodeid, fixturenames=fixtures,
                           get_closest_marker=lambda name: None)
    assert bool(misplaced([item])) is wrong  # type: ignore[list-item]


# --- the guard: a unit test starts neither Spark nor an S3 server ----------------------

def test_a_unit_test_may_not_start_an_s3_server() -> None:
    from listing.testing.s3 import S3Server

    with pytest.raises(NeedsMarkerError, match="this test needs the s3 marker"):
        S3Server().start()


@pytest.mark.s3
def test_an_s3_test_may_start_an_s3_server() -> None:
    """Positive control of the above."""
    from listing.testing.s3 import S3Server

    with S3Server() as server:
        assert server.client().list_buckets()["Buckets"] is not None


def test_a_unit_test_may_not_start_a_spark_jvm(request: pytest.FixtureRequest) -> None:
    """pyspark's JVM launch refuses (checked before it launches anything)."""
    import pyspark.core.context

    with pytest.raises(NeedsMarkerError, match="this test needs the spark marker") as err:
        pyspark.core.context.launch_gateway()
    assert request.node.nodeid in str(err.value)


def _spark_submit_version() -> subprocess.CompletedProcess[str]:
    from pyspark.find_spark_home import _find_spark_home

    return subprocess.run([str(Path(_find_spark_home()) / "bin" / "spark-submit"), "--version"],
                          capture_output=True, text=True, timeout=120)


def test_a_unit_test_s_subprocess_may_not_start_a_jvm_or_import_moto() -> None:
    spark = _spark_submit_version()
    assert spark.returncode != 0 and "this test needs the spark marker" in spark.stderr
    moto = subprocess.run([sys.executable, "-c", "import moto"], capture_output=True, text=True,
                          timeout=60)
    assert moto.returncode != 0 and "this test needs the s3 marker" in moto.stderr


@pytest.mark.spark
@pytest.mark.s3
def test_a_spark_and_s3_test_s_subprocess_may() -> None:
    """Positive control of the above: the same commands succeed with the markers."""
    spark = _spark_submit_version()
    assert spark.returncode == 0, spark.stderr[-2000:]
    assert "version" in spark.stdout + spark.stderr
    moto = subprocess.run([sys.executable, "-c", "import moto.s3"], capture_output=True,
                          text=True, timeout=60)
    assert moto.returncode == 0, moto.stderr
