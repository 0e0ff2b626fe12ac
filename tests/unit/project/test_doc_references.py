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
