"""The rules .ci/lint_rules.py holds the package to (run by `make lint`): option values are
parsed only in listing/options, and no package imports a module that imports it back."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[3]


def _rules() -> ModuleType:
    spec = importlib.util.spec_from_file_location("lint_rules", ROOT / ".ci" / "lint_rules.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


rules = _rules()


def test_the_package_keeps_the_rules() -> None:
    assert rules.check(ROOT) == []


@pytest.mark.parametrize("line", [
    "from listing.options import parse_bool",
    "from listing.options import KINDS, registry",
    "from listing.options.kinds import parse_duration",
    "from listing.options import kinds",
    "import listing.options.kinds",
    "from ..options import parse_int",
    "def f(kwargs):\n    return kwargs['mode'].strip().lower()",
    "def f(opts):\n    return int(opts.get('limit'))",
    "def f(storage_options):\n    return float(storage_options['read_timeout'])",
    "def f(options):\n    return options.pop('partition_by', '').split(',')",
])
def test_each_planted_parse_outside_listing_options_is_caught(line: str) -> None:
    """Positive control: every form the rule names, planted in a module of the Spark edge."""
    assert list(rules.violations(line, "listing.spark.planted")), line


@pytest.mark.parametrize(("line", "module"), [
    ("from listing.options.kinds import parse_bool, KINDS", "listing.options.registry"),
    ("def f(opts):\n    return registry.option('engine').parse(opts['engine'])",
     "listing.spark.planted"),
    ("def f(opts):\n    return opts['path']", "listing.spark.planted"),
    ("def f(row):\n    return int(row['n'])", "listing.spark.planted"),
    ("from listing.options import MB, ListingOptions, registry", "listing.table"),
])
def test_reads_through_the_registry_are_not_violations(line: str, module: str) -> None:
    assert list(rules.violations(line, module)) == [], line


def test_a_package_and_its_module_importing_each_other_is_caught(tmp_path: Path) -> None:
    """The cycle the acyclic_siblings contract cannot see, lazy import included (the one
    listing.options had with its registry)."""
    options = tmp_path / "listing" / "options"
    options.mkdir(parents=True)
    (tmp_path / "listing" / "__init__.py").write_text("")
    (options / "registry.py").write_text("from listing.options import TRUE\n")
    (options / "__init__.py").write_text(
        "TRUE = 1\ndef f():\n    from listing.options import registry\n")
    assert rules.check(tmp_path) == [
        "listing.options and listing.options.registry import each other"]
    (options / "__init__.py").write_text("TRUE = 1\n")  # the package no longer imports it
    assert rules.check(tmp_path) == []
