"""``listing.explain(df)``: our scan plans for the ``listing`` scans of a DataFrame.

Spark prints a Python source's scan as ``BatchScan listing[cols] (Python)`` and shows none
of its pruning. This walks the DataFrame's plan, and for each ``listing`` scan re-plans it
in the driver from the relation's options, the columns the optimizer kept and the filters
written above it (those our SQL front end understands; Spark evaluates the rest), then
returns each :meth:`ScanPlan.explain` text, request counts included. Re-planning lists
again: explain costs what the scan's planning costs.
"""

from __future__ import annotations

from typing import Any

from listing.errors import FilterError
from listing.expressions import parse_predicate
from listing.spark.source import SourceConfig

_PASS_THROUGH = {"Project", "SubqueryAlias", "View", "Filter"}


def explain(df: Any, *, show: bool = True) -> list[str]:
    """The ScanPlan explain() of every ``listing`` scan in ``df``'s plan (printed unless
    ``show`` is false). Needs a classic session (a JVM on this side)."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        raise TypeError("listing.explain needs a classic Spark DataFrame (not Spark Connect)")
    qe = jdf.queryExecution()
    # columns as the optimizer narrowed them; filters as written (pushed ones vanish later)
    scans = _listing_scans(qe.optimizedPlan(), [])
    filters = [f for _, f in _listing_scans(qe.analyzed(), [])]
    if len(filters) != len(scans):
        filters = [[] for _ in scans]
    texts = [_explain_scan(node, cond) for (node, _), cond in zip(scans, filters, strict=True)]
    if show:
        print("\n\n".join(texts) if texts else "(no listing scan in this plan)")
    return texts


def _listing_scans(node: Any, filters: list[str]) -> list[tuple[Any, list[str]]]:
    """(scan node, SQL of the filter conjuncts right above it) per listing scan, in plan
    order; a scan node is a DataSourceV2ScanRelation (optimized plan) or a relation."""
    name = node.nodeName()
    if name in ("DataSourceV2ScanRelation", "RelationV2", "DataSourceV2Relation"):
        table = _relation(node).table()
        if table.getClass().getSimpleName() == "PythonTable" and table.name() == "listing":
            return [(node, filters)]
        return []
    if name == "Filter":
        filters = [*filters, *_conjuncts(node.condition())]
    elif name not in _PASS_THROUGH:
        filters = []
    found: list[tuple[Any, list[str]]] = []
    children = node.children()
    for i in range(children.size()):
        found += _listing_scans(children.apply(i), filters)
    return found


def _relation(node: Any) -> Any:
    return node.relation() if node.nodeName() == "DataSourceV2ScanRelation" else node


def _conjuncts(expr: Any) -> list[str]:
    """SQL text of each top-level AND part of a JVM expression."""
    if expr.nodeName() == "And":
        return _conjuncts(expr.left()) + _conjuncts(expr.right())
    return [expr.sql()]


def _explain_scan(node: Any, filters: list[str]) -> str:
    options = dict(_relation(node).options().asCaseSensitiveMap())
    config = SourceConfig.parse(options)
    table = config.open()
    output = node.output()
    columns = [output.apply(i).name() for i in range(output.size())]
    where: list[Any] = list(config.where or [])
    skipped = []
    for text in filters:
        try:
            table.bind(parse_predicate(text))
        except FilterError:
            skipped.append(text)  # Spark evaluates it; it prunes nothing below
            continue
        where.append(text)
    plan = table.scan(columns=[c for c in columns if c in table.schema.names],
                      where=where or None, limit=config.limit)
    note = f"\n  filters left to Spark: {'; '.join(skipped)}" if skipped else ""
    return plan.explain() + note
