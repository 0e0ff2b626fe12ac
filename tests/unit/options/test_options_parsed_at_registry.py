"""Options are parsed at the registry only: no module of the package outside
``listing/options`` reaches for a kind's parser (``parse_bool``, ``KINDS``, …); callers
receive typed values from ``registry.parse`` / ``registry.parse_format``.

Pure: reads the package's source with ``ast`` and calls the registry, no store, no Spark.
"""

from __future__ import annotations

import ast
import datetime as dt
from pathlib import Path

import pytest

import listing.options
from listing.errors import OptionError
from listing.options import KINDS, MB, registry

ROOT = Path(__file__).resolve().parents[3]
#: the package's source (``formats/`` installs as ``listing.formats``)
PACKAGE = [ROOT / "listing", ROOT / "formats"]
#: the one place kinds are parsed
OWNER = ROOT / "listing" / "options"
#: names that parse a raw option value: the kinds' parsers and their table
PARSERS = frozenset({name for name in vars(listing.options)
                     if name.startswith("parse_")} | {"KINDS", "kind_of_default"})


def parser_uses(source: str) -> list[str]:
    """``name (line)`` of each import or attribute use of a :data:`PARSERS` name taken from
    ``listing.options`` in ``source``."""
    tree = ast.parse(source)
    module = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
              for a in node.names if a.name == "listing.options"}
    module |= {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
               and node.module == "listing" for a in node.names if a.name == "options"}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("listing.options"):
            found += [f"{a.name} ({node.lineno})" for a in node.names if a.name in PARSERS]
        elif (isinstance(node, ast.Attribute) and node.attr in PARSERS
              and ast.unparse(node.value) in module):
            found.append(f"{node.attr} ({node.lineno})")
    return found


def _modules(under: list[Path]) -> list[Path]:
    return sorted(p for root in under for p in root.rglob("*.py"))


def test_the_parsers_are_what_the_check_looks_for() -> None:
    assert {"parse_bool", "parse_int", "parse_size", "parse_duration", "parse_timestamp",
            "parse_char", "parse_list", "parse_glob", "KINDS"} <= PARSERS
    assert "did_you_mean" not in PARSERS and "compile_glob" not in PARSERS  # not parsers


def test_the_check_finds_a_parser_taken_outside_the_registry() -> None:
    """The positive control: each way of reaching a parser is found, in written code and
    in the option package's own modules (which may)."""
    assert parser_uses("from listing.options import parse_bool, registry\n") == [
        "parse_bool (1)"]
    assert parser_uses("import listing.options as o\nx = o.parse_size('1m')\n") == [
        "parse_size (2)"]
    assert parser_uses("from listing.options import KINDS\n") == ["KINDS (1)"]
    assert parser_uses("from listing import options\noptions.parse_int('1')\n") == [
        "parse_int (2)"]
    assert parser_uses("import botocore.utils as u\nu.parse_timestamp('x')\n") == []
    assert parser_uses("from listing.options import registry\nregistry.parse({}, 'listing')\n"
                       ) == []
    owners = {p.name: parser_uses(p.read_text()) for p in _modules([OWNER])}
    assert owners["storage_options.py"] and owners["registry.py"], owners


def test_no_module_outside_the_registry_parses_an_option() -> None:
    modules = [p for p in _modules(PACKAGE) if OWNER not in p.parents]
    assert len(modules) > 50  # the package was found
    found = {str(p.relative_to(ROOT)): uses for p in modules
             if (uses := parser_uses(p.read_text()))}
    assert found == {}, ("parse options with listing.options.registry.parse (or "
                         f"parse_format), not a kind's parser: {found}")


# --- the one function: every scope, typed values, today's errors -----------------------------

def test_every_scope_gets_typed_values() -> None:
    assert registry.parse({"max_partition_bytes": "64m", "ignore_corrupt_files": "on",
                           "modified_after": "2026-03-01T10:00:00", "min_partitions": None},
                          "listing") == {
        "max_partition_bytes": 64 * MB, "ignore_corrupt_files": True,
        "modified_after": dt.datetime(2026, 3, 1, 10, tzinfo=dt.UTC)}
    assert registry.parse({"lookback": "3", "max_file_age": "2h", "starting": "LATEST"},
                          "stream") == {"lookback": 3, "max_file_age": 7200.0,
                                        "starting": "latest"}
    assert registry.parse({"lookback": "90m"}, "stream") == {"lookback": 5400.0}
    assert registry.parse({"engine": " Native", "limit": "7", "recursivefilelookup": "no"},
                          "source") == {"engine": "native", "limit": 7,
                                        "recursivefilelookup": False}
    assert registry.parse({"partition_overwrite_mode": "DYNAMIC", "part_size": "8m",
                           "overwrite_without_lock": "yes"}, "write") == {
        "partition_overwrite_mode": "dynamic", "part_size": 8 * MB,
        "overwrite_without_lock": True}


def test_a_format_s_options_are_typed_with_its_defaults() -> None:
    got = registry.parse_format("csv", {"header": True, "delimiter": ",", "quote": '"',
                                        "null_values": ("",), "sample_bytes": 1 << 20},
                                {"header": "no", "delimiter": "tab", "quote": "none",
                                 "null_values": "NA,-", "sample_bytes": "64k"},
                                {"quote": "char or off"})
    assert got == {"header": False, "delimiter": "\t", "quote": "", "null_values": ["NA", "-"],
                   "sample_bytes": 64 * 1024}
    assert registry.parse_format("mine", {"width": 3}, {})["width"] == 3  # the default


@pytest.mark.parametrize(("scope", "raw", "message"), [
    ("listing", {"ignore_corupt_files": 1}, "unknown listing option(s) ignore_corupt_files "
                                            "(did you mean 'ignore_corrupt_files'?); known: "),
    ("stream", {"lookbak": 1}, "unknown streaming option(s) lookbak (did you mean "
                               "'lookback'?); known: "),
    ("source", {"engin": "python"}, "(did you mean 'engine'?)"),
    ("listing", {"batch_size": "lots"}, "option batch_size='lots' must be a size in bytes"),
    ("stream", {"reconcile_every": "-1"}, "option reconcile_every=-1 must be at least 0"),
    ("stream", {"lookback": "soon"}, "option lookback='soon': a number of newest partitions"),
    ("source", {"engine": "jvm"}, "option engine='jvm' must be one of auto, python, native"),
    ("write", {"max_records_per_file": "0"}, "max_records_per_file=0 must be at least 1"),
])
def test_errors_name_the_option_and_value(scope, raw, message) -> None:
    with pytest.raises(OptionError) as err:
        registry.parse(raw, scope)
    assert message in str(err.value)


def test_options_are_data_never_code() -> None:
    """A kind's parser converts text to a value; none evaluates or imports it."""
    evil = "__import__('os').system('false')"
    assert KINDS["string"](evil, "x") == evil and KINDS["json"](evil, "x") == evil
    for kind in ("bool", "int", "size", "duration", "timestamp", "char"):
        with pytest.raises(OptionError):
            KINDS[kind](evil, "x")
