"""``listing.explain(df)``: our scan plans for the ``listing`` scans of a DataFrame.

Spark prints a Python source's scan as ``BatchScan listing[cols] (Python)`` and shows none
of its pruning. This walks the DataFrame's plan, and for each ``listing`` scan re-plans it
in the driver from the relation's options, the columns the optimizer kept and the filters
written above it (those our SQL front end understands; Spark evaluates the rest), then
returns each :meth:`ScanPlan.explain` text, request counts included. Re-planning lists
again: explain costs what the scan's planning costs.

Each text starts with the engine that reads the scan. A scan handed to Spark's own file
source (``engine=auto|native``, the extension's ListingNativeEngine) names Spark's reader and
the columns and filters Spark was given; when our listing planner feeds it
(``ListingFileIndex``), the text also holds what that planner lists for the query, as the
index asks it (the same filters, translated by the index itself; the same planner, in this
driver): its partition filter, listing plan, files, partitions, bytes and requests. Spark
reads those files and shows its own pruning in the ``FileScan`` line of ``df.explain()``.
Both engines' texts end with the same ``files``, ``partitions`` and ``metrics`` lines.
"""

from __future__ import annotations

import json
from typing import Any

from listing.errors import FilterError
from listing.spark.config import SourceConfig
from listing.spark.extension import is_guard_active
from listing.spark.filters import from_jvm
from listing.spark.source import open_table

#: the option ListingNativeEngine.MARK puts on a handed-off relation ("native parquet")
NATIVE_MARK = "listing.engine"

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
    # the filters as written, in the form push-down sees them: runtime-replaceable forms
    # (BETWEEN) replaced and constants (casts of literals) folded, by Spark's own rules
    rules = df.sparkSession._jvm.org.apache.spark.sql.catalyst.optimizer
    written = qe.analyzed()
    for rule in ("ReplaceExpressions$", "RewriteWithExpression$", "ConstantFolding$"):
        if _has_class(df.sparkSession, f"org.apache.spark.sql.catalyst.optimizer.{rule}"):
            # RewriteWithExpression: Spark 4 only (3.5 has no With expression to rewrite)
            written = getattr(getattr(rules, rule), "MODULE$").apply(written)
    filters = [f for _, f in _listing_scans(written, [])]
    if len(filters) != len(scans):
        filters = [[] for _ in scans]
    package = df.sparkSession._jvm.org.apache.spark.sql.execution.datasources
    # Spark's own translation of a Catalyst predicate into a data source filter (the
    # companion object's method: py4j reaches it through MODULE$)
    translate = getattr(getattr(package, "DataSourceStrategy$"), "MODULE$").translateFilter
    why = _python_reason(df.sparkSession)
    unpushed = _why_no_pushdown(df.sparkSession)
    # the native hand-off's file index translates its filters for our planner so
    index_filter = df.sparkSession._jvm.io.github.listing.ListingFileIndex.filter
    texts = [_explain_scan(node, cond, translate, why, unpushed, index_filter)
             for (node, _), cond in zip(scans, filters, strict=True)]
    if show:
        print("\n\n".join(texts) if texts else "(no listing scan in this plan)")
    return texts


def _has_class(spark: Any, name: str) -> bool:
    """Whether the session's JVM has class ``name``."""
    try:
        spark._jvm.java.lang.Class.forName(name)  # noqa: SLF001 - classic sessions only
    except Exception:  # noqa: BLE001 - py4j's wrapped ClassNotFoundException
        return False
    return True


def _listing_scans(node: Any, filters: list[Any]) -> list[tuple[Any, list[Any]]]:
    """(scan node, the filter conjuncts right above it) per listing scan, in plan order;
    a scan node is a DataSourceV2ScanRelation (optimized plan) or a relation."""
    name = node.nodeName()
    if _native_format(node) is not None:
        return [(node, filters)]
    if name in ("DataSourceV2ScanRelation", "RelationV2", "DataSourceV2Relation"):
        table = _relation(node).table()
        if table.getClass().getSimpleName().endswith("PythonTable") and table.name() == "listing":
            return [(node, filters)]
        return []
    if name == "Filter":
        filters = [*filters, *_conjuncts(node.condition())]
    elif name not in _PASS_THROUGH:
        filters = []
    found: list[tuple[Any, list[Any]]] = []
    children = node.children()
    for i in range(children.size()):
        found += _listing_scans(children.apply(i), filters)
    return found


def _native_format(node: Any) -> str | None:
    """Spark's format name for a relation ListingNativeEngine handed off, else None."""
    if node.getClass().getSimpleName() != "LogicalRelation":
        return None
    relation = node.relation()
    if relation.getClass().getSimpleName() != "HadoopFsRelation":
        return None
    mark = relation.options().get(NATIVE_MARK)
    if not mark.isDefined():
        return None
    return str(mark.get()).removeprefix("native ").strip()


def _explain_native(node: Any, fmt: str, filters: list[Any], index_filter: Any) -> str:
    relation = node.relation()
    location = relation.location()
    roots = location.rootPaths()
    root = ", ".join(str(roots.apply(i).toString()) for i in range(roots.size()))
    output = node.output()
    columns = [str(output.apply(i).name()) for i in range(output.size())]
    lines = [f"engine: native (Spark's {fmt} reader)",
             f"  table: {root}",
             f"  columns: {', '.join(columns)}"]
    if filters:
        lines.append(f"  filters given to Spark: {'; '.join(str(c.sql()) for c in filters)}")
    if location.getClass().getSimpleName() != "ListingFileIndex":
        lines.append("  Spark lists, prunes and reads these files itself: the FileScan line "
                     "of df.explain() shows its PartitionFilters and PushedFilters")
        return "\n".join(lines)
    lines.append("  listed by: the listing planner (ListingFileIndex), which lists only the "
                 "partitions Spark's partition filters keep; Spark reads the files: the "
                 "FileScan line of df.explain() shows its PartitionFilters and PushedFilters")
    return "\n".join(lines + _planned_for_spark(location, filters, index_filter))


def _planned_for_spark(location: Any, filters: list[Any], index_filter: Any) -> list[str]:
    """What ListingFileIndex's planner lists for ``filters``: each conjunct as the index
    sends it (``index_filter``: ``ListingFileIndex.filter``), planned by the driver's
    planner."""
    from listing.spark.file_index import _PLANNER  # the driver's planner (imports pyspark)

    sent = []
    for conjunct in filters:
        text = index_filter(conjunct)
        if text is not None:
            sent.append(json.loads(str(text)))
    table, plan, _ = _PLANNER.scan_plan(str(location.optionsJson()),
                                        str(location.schemaJson()), sent)
    lines = [line for line in plan.explain().splitlines()
             if line.startswith(("  partition filter (exact): ", "  listing plan:", "    ",
                                 "  metrics: "))
             and not line.startswith("    group ") and not line.startswith("    … ")]
    at = next(i for i, line in enumerate(lines) if line.startswith("  metrics: "))
    lines.insert(at, f"  files: {plan.file_count}, {plan.metrics['bytes']:,} bytes")
    lines.insert(at + 1, f"  partitions: {_partitions(plan, table.partition_names)}")
    return lines


def _partitions(plan: Any, names: list[str]) -> int:
    """How many partitions (sets of partition values) the plan's files lie in."""
    planned = plan.planned  # a run's files share its values
    values = (v for run, v in zip(planned.runs, planned.values, strict=True) if len(run))
    return len({tuple(repr(v.get(n)) for n in names) for v in values})


def _relation(node: Any) -> Any:
    return node.relation() if node.nodeName() == "DataSourceV2ScanRelation" else node


def _conjuncts(expr: Any) -> list[Any]:
    """The top-level AND parts of a JVM expression."""
    if expr.nodeName() == "And":
        return _conjuncts(expr.left()) + _conjuncts(expr.right())
    return [expr]


def _python_reason(spark: Any) -> Any:
    """``options -> why this scan is not Spark's`` (ListingNativeEngine's decision), or a
    function answering None when the session has no extension (nothing to hand off to)."""
    jsession = spark._jsparkSession  # noqa: SLF001 - classic sessions only
    engine = spark._jvm.io.github.listing.ListingNativeEngine  # noqa: SLF001

    def why(options: Any) -> str | None:
        try:
            reason = engine.pythonReason(jsession, options, "listing")
        except Exception:  # noqa: BLE001 - no extension jar on this session's classpath
            return None
        return None if reason is None else str(reason)
    return why


def _why_no_pushdown(spark: Any) -> str | None:
    """Why the session's ``listing`` source is handed no filters (None: it is): it then
    prunes with its ``where`` option only, and so does this explain."""
    from listing.spark.compat import HAS_FILTER_PUSHDOWN
    from listing.spark.session import SOURCE_PRUNES_CONF

    if (spark.conf.get(SOURCE_PRUNES_CONF, "false") or "").lower() != "true":
        return ("the session's listing source takes no filters (registered without the "
                "stale-pushdown guard, or with Python filter pushdown off)")
    if not HAS_FILTER_PUSHDOWN and not _filter_rule_on(spark):
        return ("this Spark hands Python sources no filters, and the extension's "
                "ListingFilterOption (which does) is off")
    return None


def _filter_rule_on(spark: Any) -> bool:
    """Whether the extension's ListingFilterOption hands the source its filters (it stands
    down with the guard, whose private data sources it needs)."""
    excluded = spark.conf.get("spark.sql.optimizer.excludedRules", "") or ""
    return is_guard_active(spark) and "io.github.listing.ListingFilterOption" not in excluded


def _explain_scan(node: Any, filters: list[Any], translate: Any, why: Any,
                  unpushed: str | None, index_filter: Any) -> str:
    fmt = _native_format(node)
    if fmt is not None:
        return _explain_native(node, fmt, filters, index_filter)
    java_options = _relation(node).options().asCaseSensitiveMap()
    reason = why(java_options)
    options = dict(java_options)
    config = SourceConfig.parse(options)
    table = open_table(config)
    output = node.output()
    columns = [output.apply(i).name() for i in range(output.size())]
    where: list[Any] = list(config.where or [])
    skipped = []
    for condition in filters if unpushed is None else []:
        translated = translate(condition, True)  # Spark's own filter translation
        expr = from_jvm(translated.get()) if translated.isDefined() else None
        try:
            if expr is None:
                raise FilterError("not a data source filter")
            table.bind(expr)
        except FilterError:
            skipped.append(condition.sql())  # Spark evaluates it; it prunes nothing below
            continue
        where.append(expr)
    known = set(table.schema.names)
    plan = table.scan(columns=[c for c in columns if c in known],
                      where=where or None, limit=config.limit)
    note = f"\n  filters left to Spark: {'; '.join(skipped)}" if skipped else ""
    if unpushed is not None and filters:
        note += (f"\n  filters Spark applies after reading (no pushdown: {unpushed}; the "
                 f"'where' option prunes): {'; '.join(str(c.sql()) for c in filters)}")
    head = "engine: python (the listing reader)"
    if reason:  # names options, never their values (ListingNativeEngine.NotNative)
        head += f"\n  not Spark's reader: {reason}"
    text = plan.explain()
    cut = text.rindex("\n  metrics: ")
    partitions = f"\n  partitions: {_partitions(plan, table.partition_names)}"
    return head + "\n" + text[:cut] + partitions + text[cut:] + note
