"""File formats: the FileFormat / FileSource / FileOpener layer and a registry by name.

>>> from listing import formats
>>> formats.get("parquet")              # a built-in, by name
>>> formats.register("tsv", TsvFormat)  # a user's own format, usable as format="tsv"

A format *name* (an option string from Spark, SQL or the CLI) only ever selects from the
registry: the built-ins, formats registered in this process with :func:`register`, and
formats that installed packages declare as entry points in the ``listing.formats`` group.
It never names code to import. Code is given as code: a FileFormat class or instance,
through the Python API.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from listing.errors import OptionError
from listing.formats.base import (
    CorruptFileError,
    FileFormat,
    FileOpener,
    FileSource,
    Inferred,
    MissingFileError,
)

__all__ = [
    "CorruptFileError", "FileFormat", "FileOpener", "FileSource", "Inferred", "MissingFileError",
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


ENTRY_POINT_GROUP = "listing.formats"


def _installed() -> dict[str, Any]:
    """Formats installed packages declare (entry points in the ``listing.formats`` group)."""
    return {ep.name.lower(): ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _factory(name: str) -> Callable[..., FileFormat]:
    key = name.lower()
    if key in _REGISTRY:
        return _REGISTRY[key]
    if key in _BUILTIN:
        module, _, attr = _BUILTIN[key].partition(":")
        return getattr(importlib.import_module(module), attr)
    installed = _installed()
    if key in installed:
        factory = installed[key].load()
        if not (isinstance(factory, type) and issubclass(factory, FileFormat)):
            raise OptionError(f"format {name!r} (entry point {installed[key].value!r}) is "
                              "not a FileFormat subclass")
        return factory
    raise OptionError(f"unknown format {name!r}; known: {', '.join(names())} (register "
                      "your own with listing.formats.register, or pass the FileFormat "
                      "class or instance through the Python API)")


def get(fmt: str | FileFormat, **options: Any) -> FileFormat:
    """A FileFormat instance from a registered name, a FileFormat class, or an instance."""
    if isinstance(fmt, FileFormat):
        if options:
            return type(fmt)(**{**fmt.options, **options})
        return fmt
    if isinstance(fmt, type) and issubclass(fmt, FileFormat):
        return fmt(**options)
    if not isinstance(fmt, str):
        raise OptionError(f"format must be a name or a FileFormat, got {fmt!r}")
    return _factory(fmt)(**options)


def option_names(fmt: str | FileFormat | type[FileFormat]) -> list[str]:
    """The option names the format ``fmt`` (as :func:`get` takes it) accepts, built with
    no option when its factory does not declare them."""
    if isinstance(fmt, FileFormat):
        return sorted(fmt.option_defaults)
    factory = fmt if isinstance(fmt, type) else _factory(fmt) if isinstance(fmt, str) else None
    if factory is None:
        raise OptionError(f"format must be a name or a FileFormat, got {fmt!r}")
    declared = getattr(factory, "option_defaults", None)
    return sorted(declared if isinstance(declared, dict) else factory().option_defaults)


def label(fmt: str | FileFormat | type[FileFormat]) -> str:
    """How messages name the format ``fmt``: its name, else ``format``."""
    return fmt if isinstance(fmt, str) else (getattr(fmt, "name", "") or "format")


def names() -> list[str]:
    return sorted(set(_BUILTIN) | set(_REGISTRY) | set(_installed()))


def for_path(path: str) -> FileFormat | None:
    """The built-in or registered format whose extensions match ``path``."""
    for name in names():
        try:
            fmt = get(name)
        except (OptionError, ImportError):
            continue
        if fmt.has_extension(path):
            return fmt
    return None
