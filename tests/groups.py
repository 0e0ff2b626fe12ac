"""Test groups by what a test needs: ``spark`` (a Spark JVM), ``s3`` (a moto S3 server),
``install`` (builds and installs the wheel); a test needing none of them is ``unit``.

Each test gets its markers at collection (declared in pyproject.toml, selected with ``-m``;
the Makefile's ``test-unit``, ``test-s3``, ``test-spark-only`` and ``test-install`` targets):
from the fixtures it requests (:data:`FIXTURE_GROUPS`), from markers it carries
(:data:`MARKER_GROUPS`, or ``pytestmark = pytest.mark.spark`` in a module), and from
:data:`STARTS_ITSELF` for tests that start Spark or a server on their own (in a subprocess,
or in code they run).

While a test runs it may start only what its groups allow: starting a Spark JVM or an S3
server without the marker raises :class:`NeedsMarkerError` in this process, and fails in a
subprocess too, outside the spark and install groups (``JAVA_HOME`` then names a ``java``
that refuses to run, and ``PYTHONPATH`` a ``moto`` that refuses to import). So a test
missing its marker fails in ``make test-unit`` instead of slowing it down.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

#: the groups a test may need; ``unit`` is the rest
GROUPS = ("spark", "s3", "install")
UNIT = "unit"
#: fixtures that put a test (or a fixture it requests, at any depth) in a group
FIXTURE_GROUPS = {"spark": "spark", "s3_server": "s3"}
#: the older markers, and the group each implies
MARKER_GROUPS = {"distributed": "spark", "clean_install": "install"}
#: tests that start Spark or an S3 server themselves, keyed ``module``, ``module::test``, or
#: either with ``[param]``: the cases whose parameter id has that part (``s3`` in ``s3-remove``)
STARTS_ITSELF: dict[str, tuple[str, ...]] = {
    "test_store.py[s3]": ("s3",),  # request.getfixturevalue("s3_server")
    "test_hostile_manifest.py[s3]": ("s3",),
    "test_demo.py": ("spark", "s3"),
    "test_examples.py": ("s3",),
    "test_readme_tour.py": ("s3",),
    "test_docs_blocks.py::test_block_runs": ("spark", "s3"),
    "test_docs_blocks.py::test_the_read_your_own_table_block_reads_through_the_environment":
        ("spark", "s3"),
    "test_docs_blocks.py::test_the_formats_tsv_block_prints_its_columns": ("spark", "s3"),
    "test_docs_blocks.py::test_the_local_store_page_reads_what_it_wrote": ("spark", "s3"),
    "test_docs_blocks.py::test_the_layouts_blocks_print_what_their_comments_say":
        ("spark", "s3"),
    "test_fixtures.py::test_second_server_and_reset_in_a_subprocess": ("s3",),
    "test_formats_fresh_session.py": ("spark",),
    "test_spark_catalog.py": ("spark",),
    "test_spark_connect.py": ("spark",),
    "test_spark_secrets.py": ("spark",),  # its module fixture runs tests/jobs/secrets_job.py
    "test_install.py": ("install", "s3"),
    "test_clean_install.py": ("install", "spark", "s3"),
}
#: the fixture that grants each group, named in the error
_GRANTED_BY = {"spark": "the `spark` fixture", "s3": "the `s3_server` fixture (or `s3_bucket`)"}


class NeedsMarkerError(RuntimeError):
    """A test started Spark or an S3 server without the group marker that allows it."""


def groups_of(item: pytest.Item) -> frozenset[str]:
    """The groups ``item`` needs, ``{"unit"}`` when none."""
    found = {group for group in GROUPS if item.get_closest_marker(group)}
    found |= {g for m, g in MARKER_GROUPS.items() if item.get_closest_marker(m)}
    found |= {g for f, g in FIXTURE_GROUPS.items() if f in getattr(item, "fixturenames", ())}
    for key, groups in STARTS_ITSELF.items():
        if _matches(key, item):
            found |= set(groups)
    return frozenset(found or {UNIT})


#: the folders of tests/ by need, and the groups a test in each may have: a module lives in
#: the folder of the most its tests need (``unit/<layer>/``, ``s3/``, ``spark/``, ``install/``)
FOLDER_GROUPS = {
    "unit": frozenset({UNIT}),
    "s3": frozenset({UNIT, "s3"}),
    "spark": frozenset({UNIT, "s3", "spark"}),
    "install": frozenset({UNIT, "s3", "spark", "install"}),
}


def misplaced(items: list[pytest.Item]) -> list[str]:
    """``module: groups`` of each module under tests/ whose tests need more than its folder
    allows (a test needing Spark in ``tests/s3/``), or that lies in no folder by need."""
    found: dict[str, set[str]] = {}
    for item in items:
        parts = item.nodeid.split("::")[0].split("/")
        if parts[0] != "tests":
            continue
        folder = parts[1] if len(parts) > 2 else ""
        groups = groups_of(item)
        extra = groups - FOLDER_GROUPS.get(folder, frozenset())
        if extra or folder not in FOLDER_GROUPS:
            found.setdefault("/".join(parts), set()).update(extra or groups)
    return [f"{module}: {'+'.join(sorted(groups))}" for module, groups in sorted(found.items())]


def _node(item: pytest.Item) -> str:
    """``module.py::test`` of an item, without the folder and parameters."""
    return item.nodeid.split("[")[0].rsplit("/", 1)[-1]


def _matches(key: str, item: pytest.Item) -> bool:
    """Whether a STARTS_ITSELF key names ``item``."""
    where, _, param = key.removesuffix("]").partition("[")
    node = _node(item)
    if where not in (node, node.split("::")[0]):
        return False
    callspec = getattr(item, "callspec", None)
    return not param or (callspec is not None and param in callspec.id.split("-"))


def _stale_keys(items: list[pytest.Item]) -> list[str]:
    """``module::test`` keys of STARTS_ITSELF whose module was collected but holds no such
    test (renamed or removed)."""
    modules = {_node(item).split("::")[0]: getattr(item, "module", None) for item in items}
    stale = []
    for key in STARTS_ITSELF:
        module, _, test = key.split("[")[0].partition("::")
        if test and modules.get(module) is not None and not hasattr(modules[module], test):
            stale.append(key)
    return stale


# --- the guard ---------------------------------------------------------------------------

_running: tuple[str, frozenset[str]] | None = None  # (node id, groups) of the running test


def _refuse(group: str, what: str) -> None:
    if _running is None:
        return
    nodeid, groups = _running
    if group not in groups:
        raise NeedsMarkerError(
            f"{nodeid} {what} but is not in the `{group}` group (this test needs the {group} "
            f"marker): request {_GRANTED_BY[group]}, or list it in STARTS_ITSELF in "
            f"tests/groups.py, or mark it `pytest.mark.{group}`")


def _guarded(group: str, what: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        _refuse(group, what)
        return fn(*args, **kwargs)

    guarded.__wrapped_by_groups__ = True  # type: ignore[attr-defined]
    return guarded


def _install_in_process_guards() -> None:
    """Wrap the two ways this process starts what a group allows: pyspark's JVM launch
    and :meth:`S3Server.start`."""
    try:
        import pyspark.core.context as spark_context
    except ImportError:  # Spark 3.5: SparkContext lives in pyspark.context
        import pyspark.context as spark_context  # type: ignore[no-redef]

    from listing.testing.s3 import S3Server

    if not getattr(spark_context.launch_gateway, "__wrapped_by_groups__", False):
        spark_context.launch_gateway = _guarded(
            "spark", "starts a Spark JVM", spark_context.launch_gateway)
    if not getattr(S3Server.start, "__wrapped_by_groups__", False):
        S3Server.start = _guarded(  # type: ignore[method-assign]
            "s3", "starts an S3 server", S3Server.start)


def _write_subprocess_guards(folder: Path) -> tuple[Path, Path]:
    """A JAVA_HOME whose ``java`` refuses to run and a PYTHONPATH entry whose ``moto``
    refuses to import, each saying which marker is missing."""
    java = folder / "java_home" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\necho \"NeedsMarkerError: $LISTING_TEST_NODE started a JVM "
                    "(Spark) but is not in the spark group (this test needs the spark marker; "
                    "see tests/groups.py)\" >&2\nexit 86\n")
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    moto = folder / "python" / "moto" / "__init__.py"
    moto.parent.mkdir(parents=True)
    moto.write_text("import os\nraise RuntimeError(\n    'NeedsMarkerError: ' + "
                    "os.environ.get('LISTING_TEST_NODE', '?') + ' imports moto (an S3 server) '"
                    "\n    'but is not in the s3 group (this test needs the s3 marker; see '"
                    "\n    'tests/groups.py)')\n")
    return java.parent.parent, moto.parent.parent


@contextmanager
def _subprocess_guards(nodeid: str, groups: frozenset[str], folders: tuple[Path, Path]
                       ) -> Iterator[None]:
    """Point subprocesses at the refusing ``java``/``moto`` for the groups not granted,
    except in a ``spark`` or ``install`` test: the JVM a spark test may start keeps its
    environment for the run (its Python workers would inherit the refusing ``moto``), and
    building the wheel runs Maven and the JDK."""
    java_home, python = folders
    saved = {name: os.environ.get(name)
             for name in ("JAVA_HOME", "PYTHONPATH", "LISTING_TEST_NODE")}
    os.environ["LISTING_TEST_NODE"] = nodeid
    if not groups & {"spark", "install"}:
        os.environ["JAVA_HOME"] = str(java_home)
    if not groups & {"s3", "spark", "install"}:
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(python),
                                                                 saved["PYTHONPATH"]]))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


# --- pytest hooks ------------------------------------------------------------------------

def pytest_configure(config: pytest.Config) -> None:
    folder = Path(tempfile.mkdtemp(prefix="listing-test-groups-"))
    config.stash[_FOLDERS] = _write_subprocess_guards(folder)
    config.add_cleanup(lambda: shutil.rmtree(folder, ignore_errors=True))
    _install_in_process_guards()


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by these markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    stale = _stale_keys(items)
    if stale:
        raise pytest.UsageError(f"tests/groups.py STARTS_ITSELF names tests that do not exist: "
                                f"{', '.join(stale)}")
    wrong = misplaced(items)
    if wrong:
        raise pytest.UsageError("test modules in a folder of tests/ that does not allow what "
                                f"they need (see FOLDER_GROUPS): {'; '.join(wrong)}")
    for item in items:
        for group in sorted(groups_of(item)):
            item.add_marker(group)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """Set-up, call and tear-down of ``item`` start only what its groups allow."""
    global _running
    groups = groups_of(item)
    _running = (item.nodeid, groups)
    try:
        with _subprocess_guards(item.nodeid, groups, item.config.stash[_FOLDERS]):
            return (yield)
    finally:
        _running = None


_FOLDERS = pytest.StashKey[tuple[Path, Path]]()
