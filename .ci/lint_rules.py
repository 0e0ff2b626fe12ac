"""Rules `make lint` holds the package to that no off-the-shelf linter states (run by .ci/lint).

1. **Option values are parsed only in ``listing/options``.** A raw option value becomes a
   typed one in one place: the kind parsers of ``listing.options.kinds``, called by the
   registry (``registry.parse``, ``Option.parse``, ``parse_format``, ``kind_value``) and the
   storage allowlist. Everywhere else (``listing/``, ``formats/``, ``fixtures/``):

   - no module imports a kind parser: a name ``parse_*`` or ``KINDS`` from
     ``listing.options`` or ``listing.options.kinds``, or that module itself;
   - no value read out of an options mapping is converted on the spot: ``int(...)``,
     ``float(...)`` or ``bool(...)`` of, or ``.lower()``, ``.upper()``, ``.casefold()``,
     ``.strip()`` or ``.split(...)`` called on, ``m[key]``, ``m.get(...)`` or ``m.pop(...)``
     where ``m`` is a name spelled ``options``, ``opts``, ``kwargs`` or ending in
     ``_options``/``_opts``. (A value passed on untouched, or read by the registry, is fine.)

   Precise rather than exhaustive: it names the forms every former copy took (``_choice``
   lowering ``kwargs["mode"]``, ``int(opts["limit"])``), not every way to parse text.

2. **No module imports the package it is in** (``listing.options.registry`` importing
   ``listing.options``), at the top, inside a function or under ``TYPE_CHECKING``: such a
   pair is a cycle the acyclic_siblings contract cannot see (a package and its own module
   are no siblings).

    python .ci/lint_rules.py [ROOT]     # prints each violation; exit status 1 if any
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

#: the folders checked, and the package each installs as (pyproject's package-dir)
PACKAGES = {"listing": "listing", "formats": "listing.formats", "fixtures": "listing.testing"}
OPTIONS_PACKAGE = "listing.options"
_KIND_MODULES = {"listing.options", "listing.options.kinds"}
_OPTIONS_NAME = re.compile(r"(options|opts|kwargs|_options|_opts)$")
_CONVERTERS = {"int", "float", "bool"}
_TEXT_METHODS = {"lower", "upper", "casefold", "strip", "split"}


def module_name(path: Path, root: Path) -> str:
    """The dotted name ``path`` installs as (``formats/csv.py`` -> ``listing.formats.csv``)."""
    rel = path.relative_to(root).with_suffix("")
    parts = [PACKAGES[rel.parts[0]], *rel.parts[1:]]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imported(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module of a ``from ... import`` (relative ones resolved)."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def _options_read(node: ast.expr) -> bool:
    """``m[key]``, ``m.get(...)`` or ``m.pop(...)`` of an options mapping ``m``."""
    if isinstance(node, ast.Subscript):
        target = node.value
    elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
          and node.func.attr in ("get", "pop")):
        target = node.func.value
    else:
        return False
    return isinstance(target, ast.Name) and bool(_OPTIONS_NAME.search(target.id))


def violations(source: str, module: str, is_package: bool = False) -> Iterator[str]:
    """Each breach of the rules in ``source`` (the module ``module``), as ``line: why``."""
    inside_options = module == OPTIONS_PACKAGE or module.startswith(OPTIONS_PACKAGE + ".")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            imported = _imported(node, module, is_package)
            names = [a.name for a in node.names]
            if not inside_options and imported in _KIND_MODULES:
                parsers = [n for n in names if n.startswith("parse_") or n == "KINDS"]
                if imported == "listing.options" and "kinds" in names:
                    parsers.append("kinds")
                if imported == "listing.options.kinds" or parsers:
                    what = ", ".join(parsers) or imported
                    yield (f"{node.lineno}: imports option parsing ({what}) outside "
                           "listing/options: type values through the registry")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if not inside_options and alias.name == "listing.options.kinds":
                    yield f"{node.lineno}: imports listing.options.kinds outside listing/options"
        elif isinstance(node, ast.Call) and not inside_options:
            func = node.func
            if (isinstance(func, ast.Name) and func.id in _CONVERTERS and node.args
                    and _options_read(node.args[0])):
                yield f"{node.lineno}: {func.id}() of a raw option value"
            elif (isinstance(func, ast.Attribute) and func.attr in _TEXT_METHODS
                  and _options_read(func.value)):
                yield f"{node.lineno}: .{func.attr}() of a raw option value"


def imports(source: str, module: str, is_package: bool = False) -> set[str]:
    """Every module ``source`` imports, anywhere in it (lazy and ``TYPE_CHECKING`` ones
    too): ``from p import n`` is an import of ``p.n`` when that is a module, else of ``p``."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported = _imported(node, module, is_package)
            for alias in node.names:
                out.add(f"{imported}.{alias.name}" if _is_submodule(imported, alias.name)
                        else imported)
    return out


def package_cycles(edges: dict[str, set[str]], packages: set[str]) -> list[str]:
    """Each package that imports a module below it which imports the package back."""
    return [f"{package} and {child} import each other"
            for package in sorted(packages) for child in sorted(edges.get(package, ()))
            if child.startswith(package + ".") and package in edges.get(child, ())]


#: set by main: the checked tree, to tell a submodule (``from listing.options import
#: registry``) from a name the package defines
_ROOT: Path | None = None


def _is_submodule(package: str, name: str) -> bool:
    """Whether ``package.name`` is a module in the checked tree (longest mapping first:
    ``listing.formats`` lives in ``formats/``)."""
    if _ROOT is None:
        return False
    if f"{package}.{name}" in PACKAGES.values():
        return True
    for on_disk, installed in sorted(PACKAGES.items(), key=lambda kv: -len(kv[1])):
        if package == installed or package.startswith(installed + "."):
            below = [p for p in package[len(installed):].split(".") if p]
            base = _ROOT.joinpath(on_disk, *below)
            return (base / f"{name}.py").is_file() or (base / name / "__init__.py").is_file()
    return False


def check(root: Path) -> list[str]:
    """Every violation under ``root``'s checked folders, as ``path:line: why`` (rule 1)
    or ``a and b import each other`` (rule 2)."""
    global _ROOT
    _ROOT = root
    out: list[str] = []
    edges: dict[str, set[str]] = {}
    packages: set[str] = set()
    for folder in PACKAGES:
        for path in sorted((root / folder).rglob("*.py")):
            module = module_name(path, root)
            is_package = path.name == "__init__.py"
            source = path.read_text(encoding="utf-8")
            for found in violations(source, module, is_package):
                out.append(f"{path.relative_to(root)}:{found}")
            edges[module] = imports(source, module, is_package)
            if is_package:
                packages.add(module)
    return out + package_cycles(edges, packages)


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    found = check(root)
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
