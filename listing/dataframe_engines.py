"""Engines that turn a table into another system's DataFrame, found by name.

An engine is an entry point of the group ``listing.engines`` (this project declares
``spark``: :func:`listing.spark.source.to_spark`), so the core never imports an edge: the
edge depends on the core, and package metadata ties a name to it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from importlib.metadata import entry_points
from typing import Any

from listing.errors import OptionError

ENTRY_POINT_GROUP = "listing.engines"


@cache
def engine(name: str) -> Callable[..., Any]:
    """The engine registered as ``name`` (loaded once); an :class:`OptionError` naming the
    installed engines when there is none by that name."""
    found = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    if name not in found:
        installed = ", ".join(sorted(found)) or "none"
        raise OptionError(f"no {name!r} engine is installed (entry points of group "
                          f"{ENTRY_POINT_GROUP!r}: {installed}); reinstall spark-listing")
    loaded: Callable[..., Any] = found[name].load()
    return loaded
