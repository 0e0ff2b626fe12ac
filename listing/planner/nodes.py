"""Listing plans: trees of requests the runner executes, and their explain() text."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

END = "\U0010ffff"  # sorts after every key: "up to the end of this prefix"


@dataclass
class Flat:
    prefix: str
    depth: int
    known: dict[str, Any]
    est: float
    start_after: str | None = None
    stop_after: str | None = None

    def describe(self) -> str:
        bounds = ""
        if self.start_after or self.stop_after:
            lo = (self.start_after or "").rsplit("/", 1)[-1]
            hi = (self.stop_after or "").rstrip(END).rstrip("/").rsplit("/", 1)[-1]
            bounds = f" from {lo or '…'} to {hi or '…'}"
        return f"list {self.prefix!r}{bounds}"


@dataclass
class Enumerate:
    children: list[Node]
    est: float

    def describe(self) -> str:
        return f"enumerate {len(self.children)} prefixes"


@dataclass
class Walk:
    prefix: str
    depth: int
    known: dict[str, Any]
    est: float

    def describe(self) -> str:
        return f"walk {self.prefix!r} level by level"


Node = Flat | Enumerate | Walk


def describe(node: Node, indent: str = "") -> list[str]:
    """Readable plan tree for explain(); long enumerations are elided."""
    # an open range or an unlisted table has no estimate: say so rather than "inf"/"nan"
    est = f"est. {node.est:g} requests" if math.isfinite(node.est) else "size unknown"
    lines = [f"{indent}{node.describe()} ({est})"]
    if isinstance(node, Enumerate):
        for child in node.children[:5]:
            lines += describe(child, indent + "  ")
        if len(node.children) > 5:
            lines.append(f"{indent}  … {len(node.children) - 5} more")
    return lines
