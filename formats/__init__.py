"""File formats: the FileFormat / FileSource / FileOpener layer and a registry by name.

>>> import formats
>>> formats.get("parquet")              # a built-in, by name
>>> formats.register("tsv", TsvFormat)  # a user's own format, usable as format="tsv"
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

# listing's package init imports formats.base (via its plan/table modules); importing it
# first makes ``import formats.csv`` work as a process's first import (Spark executors
# unpickling a FileSource), instead of failing on a half-initialised formats.base.
import listing  # noqa: F401
from listing.formats.base import (
    CorruptFileError,
    FileFormat,
    FileOpener,
    FileSource,
    MissingFileError,
)
from listing.errors import OptionError

__all__ = [
    "CorruptFileError", "FileFormat", "FileOpener", "FileSource", "MissingFileError",
    "for_path", "get", "names", "on_register", "register", "registered",
]

_BUILTIN = {
    "parquet": "listing.formats.parquet:ParquetFormat",
    "csv": "listing.formats.csv:CsvFormat",
    "json": "listing.formats.json:JsonFormat",
    "ndjson": "listing.formats.json:JsonFormat",
    "arrow": "listing.formats.arrow:ArrowFormat",
    "ipc": "listing.formats.arrow:ArrowFormat",
}
_REGISTRY: dict[str, Callable[..., FileFormat]] = {}
_LISTENERS: list[Callable[[], None]] = []


def register(name: str, factory: Callable[..., FileFormat]) -> None:
    """Make ``format=name`` (Python API and the Spark option) build ``factory(**options)``."""
    known = _REGISTRY.get(name.lower())
    _REGISTRY[name.lower()] = factory
    if known is not factory:
        for listener in list(_LISTENERS):
            listener()


def registered() -> dict[str, Callable[..., FileFormat]]:
    """Users' formats (not the built-ins), e.g. to ship them to Spark's Python workers."""
    return dict(_REGISTRY)


def on_register(listener: Callable[[], None]) -> None:
    """Call ``listener`` whenever a format is (re)registered; Spark sessions use it to
    re-register the data source with the new format list."""
    _LISTENERS.append(listener)


def _factory(name: str) -> Callable[..., FileFormat]:
    key = name.lower()
    if key in _REGISTRY:
        return _REGISTRY[key]
    if key in _BUILTIN:
        module, _, attr = _BUILTIN[key].partition(":")
        return getattr(importlib.import_module(module), attr)
    if ":" in name or "." in name:  # "package.module:Class" or "package.module.Class"
        module, _, attr = name.replace(":", ".").rpartition(".")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as err:
            raise OptionError(f"format {name!r} cannot be imported: {err}") from None
    raise OptionError(f"unknown format {name!r}; known: {', '.join(names())} "
                      "(or register one with formats.register, or give 'module:Class')")


def get(fmt: str | FileFormat, **options: Any) -> FileFormat:
    """A FileFormat instance from a name, a 'module:Class' path, or an instance."""
    if isinstance(fmt, FileFormat):
        if options:
            return type(fmt)(**{**fmt.options, **options})
        return fmt
    if isinstance(fmt, type) and issubclass(fmt, FileFormat):
        return fmt(**options)
    if not isinstance(fmt, str):
        raise OptionError(f"format must be a name or a FileFormat, got {fmt!r}")
    return _factory(fmt)(**options)


def names() -> list[str]:
    return sorted(set(_BUILTIN) | set(_REGISTRY))


def for_path(path: str) -> FileFormat | None:
    """The built-in or registered format whose extensions match ``path``."""
    for name in names():
        try:
            fmt = get(name)
        except (OptionError, ImportError):
            continue
        if fmt.extensions and fmt.matches(path):
            return fmt
    return None
