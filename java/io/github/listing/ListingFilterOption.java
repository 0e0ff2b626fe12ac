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
import org.apache.spark.sql.sources.IsNotNull;
import org.apache.spark.sql.sources.IsNull;
import org.apache.spark.sql.sources.Not;
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
      String json = translated.isDefined() ? json(translated.get()) : null;
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

  /**
   * {@code {"kind": "EqualTo", "attribute": "date", "value": "2025-01-03"}} for a leaf filter
   * pyspark's form has, {@code {"kind": "Not", "child": ...}}; null for any other filter.
   * Values other than numbers, booleans and strings travel as their text, as py4j hands them
   * to {@code listing.spark.filters.from_jvm}.
   */
  static String json(org.apache.spark.sql.sources.Filter f) {
    if (f instanceof Not) {
      String child = json(((Not) f).child());
      return child == null ? null : "{\"kind\":\"Not\",\"child\":" + child + "}";
    }
    String kind = f.getClass().getSimpleName();
    String[] refs = f.references();
    if (refs.length != 1) {
      return null;
    }
    String head = "{\"kind\":\"" + kind + "\",\"attribute\":" + string(refs[0]);
    if (f instanceof IsNull || f instanceof IsNotNull) {
      return head + "}";
    }
    Object value;
    try {
      value = f.getClass().getMethod(kind.equals("In") ? "values" : "value").invoke(f);
    } catch (ReflectiveOperationException e) {
      return null;  // And, Or, AlwaysTrue, ...: not a leaf pyspark's form has
    }
    if (kind.equals("In")) {
      StringBuilder values = new StringBuilder("[");
      for (Object v : (Object[]) value) {
        String text = literal(v);
        if (text == null) {
          return null;
        }
        values.append(values.length() > 1 ? "," : "").append(text);
      }
      return head + ",\"value\":" + values + "]}";
    }
    String text = literal(value);
    return text == null ? null : head + ",\"value\":" + text + "}";
  }

  private static String literal(Object v) {
    if (v == null) {
      return "null";
    }
    if (v instanceof Boolean || v instanceof Integer || v instanceof Long
        || v instanceof Short || v instanceof Byte) {
      return v.toString();
    }
    if (v instanceof Double || v instanceof Float) {
      double d = ((Number) v).doubleValue();
      return Double.isFinite(d) ? v.toString() : null;
    }
    if (v instanceof java.sql.Timestamp) {  // an instant: its text in the JVM's zone is not
      return string(((java.sql.Timestamp) v).toInstant().toString());
    }
    return string(v.toString());
  }

  private static String string(String s) {
    StringBuilder out = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < 0x20) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    return out.append('"').toString();
  }
}
