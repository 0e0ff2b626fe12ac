package io.github.listing;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.execution.datasources.DataSourceStrategy$;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.python.PythonScanBuilder;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import scala.Option;

/**
 * Hands a {@code listing} scan the filters written above it, where Spark hands Python data
 * sources none (Spark 4.0: its {@code PythonScanBuilder} has no {@code pushFilters}).
 *
 * <p>WHY: without filters the Python reader lists and reads the whole table. This rule puts the
 * conjuncts of the {@code Filter} right above a {@code listing} relation, as Spark's own data
 * source filters ({@code DataSourceStrategy.translateFilter}, the translation push-down uses),
 * into the relation's option {@value #OPTION} as JSON; the source applies them as its
 * {@code pushFilters} would (partition filters prune exactly, the rest prune row groups), and
 * the {@code Filter} stays above, so Spark still checks every row. The relation is a copy
 * (cached plans keep theirs), and {@link StalePushdownGuard}, which runs after this rule,
 * gives it a data source of its own, created in Python from these options: no other scan
 * sees them. Where Spark pushes filters itself, the rule does nothing.
 */
public final class ListingFilterOption extends Rule<LogicalPlan> {

  /** The relation option carrying the filters (read by listing/spark/source.py). */
  static final String OPTION = "listing.filters";

  /** Whether this Spark pushes filters into Python data sources itself. */
  static final boolean SPARK_PUSHES =
      SupportsPushDownFilters.class.isAssignableFrom(PythonScanBuilder.class);

  private final NodeRewrite rewrite = new NodeRewrite(ListingFilterOption::withFilters);

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (SPARK_PUSHES || StalePushdownGuard.excluded()) {
      return plan;  // without the guard's private data sources the option could leak
    }
    return plan.transformDown(rewrite);
  }

  private static LogicalPlan withFilters(LogicalPlan plan) {
    if (!(plan instanceof Filter)) {
      return null;
    }
    Filter filter = (Filter) plan;
    DataSourceV2Relation rel = ListingColumnPruning.listingRelation(filter.child());
    if (rel == null || rel.options().containsKey(OPTION)) {
      return null;
    }
    List<String> parts = new ArrayList<>();
    for (Expression e : conjuncts(filter.condition(), new ArrayList<>())) {
      if (!e.deterministic()) {
        continue;
      }
      Option<org.apache.spark.sql.sources.Filter> translated =
          DataSourceStrategy$.MODULE$.translateFilter(e, true);
      String json = translated.isDefined() ? FilterJson.json(translated.get()) : null;
      if (json != null) {
        parts.add(json);
      }
    }
    if (parts.isEmpty()) {
      return null;
    }
    Map<String, String> options = new HashMap<>(rel.options().asCaseSensitiveMap());
    options.put(OPTION, "[" + String.join(",", parts) + "]");
    return ListingColumnPruning.withChild(filter, SparkShim.copyRelation(
        rel, rel.table(), rel.output(), new CaseInsensitiveStringMap(options)));
  }

  private static List<Expression> conjuncts(Expression e, List<Expression> out) {
    if (e instanceof And) {
      conjuncts(((And) e).left(), out);
      conjuncts(((And) e).right(), out);
    } else {
      out.add(e);
    }
    return out;
  }
}
