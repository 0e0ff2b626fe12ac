"""Every ``listing.…`` name a docstring or a docs page cites exists: a module renamed or a
function moved fails here instead of leaving readers a dead reference."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
#: Sphinx roles in docstrings, and backticked names in Markdown
ROLE = re.compile(r":(?:mod|class|func|meth|attr|data|exc):`~?(listing\.[A-Za-z0-9_.]+)`")
TICKED = re.compile(r"`(listing(?:\.[A-Za-z_][A-Za-z0-9_]*)+)`")
#: names that are not Python objects: the DataFrame engines' entry point group, a logger
NOT_OBJECTS = {"listing.engines", "listing.progress"}


def resolves(name: str) -> bool:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            if not hasattr(obj, attr):  # a field without a class-level default still counts
                return isinstance(obj, type) and attr == parts[-1] and any(
                    attr in getattr(k, "__annotations__", {}) for k in obj.__mro__)
            obj = getattr(obj, attr)
        return True
    return False


def cited() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    sources = [p for d in ("listing", "formats", "fixtures") for p in (ROOT / d).rglob("*.py")]
    for path in sources:
        for name in ROLE.findall(path.read_text()):
            found.setdefault(name.rstrip("."), set()).add(str(path.relative_to(ROOT)))
    for path in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]:
        for name in TICKED.findall(path.read_text()):
            found.setdefault(name, set()).add(str(path.relative_to(ROOT)))
    return {k: v for k, v in found.items() if k not in NOT_OBJECTS}


def test_every_cited_listing_name_exists():
    names = cited()
    assert len(names) > 40  # the scan finds the references it is meant to check
    dead = {name: sorted(where) for name, where in names.items() if not resolves(name)}
    assert not dead, f"references to names that do not exist: {dead}"


@pytest.mark.parametrize("name", ["listing.storage.listing", "listing.table.NoSuchThing",
                                  "listing.planner.url_glob.folders_partition_filter",
                                  "listing.options.registry.Option.no_such_field"])
def test_a_dead_reference_is_found(name):
    assert not resolves(name)
    assert resolves("listing.planner.glob_filter.folders_partition_filter")
    assert resolves("listing.options.registry.Option.kind")  # a dataclass field


#: a repository path of a test, a job or a vector file, as pages and comments cite them
CITED_PATH = re.compile(r"(?<![\w/.-])((?:tests|bench|examples)/[\w./-]+\.(?:py|json|md))")


def cited_paths(text: str) -> set[str]:
    return set(CITED_PATH.findall(text))


def test_every_cited_repository_path_exists() -> None:
    """``tests/spark/test_x.py`` in a page, the README, a Makefile or CI script names a file
    that is there: tests moved between folders leave no reader a dead path."""
    sources = [ROOT / "README.md", ROOT / "Makefile", *(ROOT / "docs").rglob("*.md"),
               *(ROOT / ".ci").iterdir(), ROOT / "pyproject.toml"]
    dead = sorted(f"{path.relative_to(ROOT)}: {cited}" for path in sources if path.is_file()
                  for cited in cited_paths(path.read_text(errors="replace"))
                  if not (ROOT / cited).exists())
    assert dead == []


def test_a_dead_cited_path_is_found() -> None:
    """Positive control of the above: the pattern finds a path in the forms pages use."""
    assert cited_paths("see `tests/spark/test_gone.py` and tests/vectors/x.json.") == {
        "tests/spark/test_gone.py", "tests/vectors/x.json"}
    assert not (ROOT / "tests/spark/test_gone.py").exists()
