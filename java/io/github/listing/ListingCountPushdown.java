package io.github.listing;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Coalesce;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Literal$;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression$;
import org.apache.spark.sql.catalyst.expressions.aggregate.Complete$;
import org.apache.spark.sql.catalyst.expressions.aggregate.Count;
import org.apache.spark.sql.catalyst.expressions.aggregate.Sum$;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Pushes {@code count(*)} into {@code listing} scans: the Python reader sends one row per
 * distinct combination of the columns the query still needs, in each batch it reads, with the
 * number of rows it stands for, and the aggregate sums those numbers.
 *
 * <p>WHY: a {@code count()} over the Python engine reads no data column (column pruning), but
 * Spark still turns every counted row into an (empty) row in the JVM, about 60 ns a row: most of
 * a Parquet {@code count()}'s time. Spark's own readers have the same idea behind
 * {@code spark.sql.parquet.aggregatePushdown}. Here it is exact for any deterministic filter:
 * rows with the same values of the columns a filter and the grouping read are kept or dropped
 * together, so {@code Aggregate(groups, count(*)) <- [Project] <- [Filter] <- scan} becomes
 * {@code Aggregate(groups, coalesce(sum(rows), 0)) <- [Project] <- [Filter] <- scan'} where
 * {@code scan'} reads the same columns plus {@link #ROWS}. The aggregate keeps its output
 * attributes (exprIds), so nothing above changes; a batch of no rows sends nothing, so no group
 * appears that counting rows would not make.
 *
 * <p>Runs among the pre-CBO rules after {@link ListingColumnPruning} (the scan is already as
 * narrow as the query) and before {@link StalePushdownGuard}, which gives the new table its own
 * data source. The flag travels in the schema, not in an option: the pickled Python data source
 * was created from the relation's options when the DataFrame was loaded.
 */
public final class ListingCountPushdown extends Rule<LogicalPlan> {

  /** The column of per-batch row counts; listing.spark.reader knows the same name. */
  static final String ROWS = "__listing_rows";

  private final NodeRewrite push = new NodeRewrite(ListingCountPushdown::pushed);

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    // without the guard, the new scan would share the loaded relation's cached Python reader
    return StalePushdownGuard.excluded() ? plan : plan.transformDown(push);
  }

  private static LogicalPlan pushed(LogicalPlan plan) {
    if (!(plan instanceof Aggregate)) {
      return null;
    }
    Aggregate agg = (Aggregate) plan;
    LogicalPlan child = agg.child();
    Project project = child instanceof Project ? (Project) child : null;
    LogicalPlan below = project != null ? project.child() : child;
    Filter filter = below instanceof Filter ? (Filter) below : null;
    DataSourceV2Relation rel = ListingColumnPruning.listingRelation(
        filter != null ? filter.child() : below);
    if (rel == null) {
      return null;
    }
    if (project != null) {
      for (NamedExpression e : CollectionConverters.asJava(project.projectList())) {
        if (!(e instanceof Attribute)) {
          return null;  // a computed column: leave the plan as it is
        }
      }
    }
    if (filter != null && !filter.condition().deterministic()) {
      return null;
    }
    for (Expression g : CollectionConverters.asJava(agg.groupingExpressions())) {
      if (!(g instanceof Attribute)) {
        return null;
      }
    }
    List<AttributeReference> kept = new ArrayList<>();
    for (AttributeReference a : CollectionConverters.asJava(rel.output())) {
      if (a.name().equalsIgnoreCase(ROWS) || a.dataType() instanceof StructType
          || a.dataType() instanceof ArrayType || a.dataType() instanceof MapType) {
        return null;  // already pushed, or values the reader cannot group by
      }
      kept.add(a);
    }
    StructField rowsField = new StructField(ROWS, DataTypes.LongType, false, Metadata.empty());
    AttributeReference rows = CollectionConverters.asJava(
        DataTypeUtils.toAttributes(new StructType(new StructField[] {rowsField}))).get(0);
    List<NamedExpression> aggregates = new ArrayList<>();
    for (NamedExpression e : CollectionConverters.asJava(agg.aggregateExpressions())) {
      NamedExpression summed = summed(e, rows);
      if (summed == null) {
        return null;
      }
      aggregates.add(summed);
    }
    List<AttributeReference> output = new ArrayList<>(kept);
    output.add(rows);
    LogicalPlan newLeaf = ListingColumnPruning.reading(rel, output);
    if (newLeaf == null) {
      return null;  // cannot rebuild the table: count rows as before
    }
    LogicalPlan newBelow = filter != null
        ? ListingColumnPruning.withChild(filter, newLeaf) : newLeaf;
    LogicalPlan newChild = newBelow;
    if (project != null) {
      List<NamedExpression> list = new ArrayList<>(
          CollectionConverters.asJava(project.projectList()));
      list.add(rows);
      newChild = new Project(CollectionConverters.asScala(list).toList(), newBelow);
    }
    return agg.copy(agg.groupingExpressions(), CollectionConverters.asScala(aggregates).toList(),
        newChild, agg.hint());
  }

  /**
   * A grouping attribute as it is, {@code count(*)} (or {@code count(1)}) as
   * {@code coalesce(sum(rows), 0)} under the same alias; null for anything else.
   */
  private static NamedExpression summed(NamedExpression e, AttributeReference rows) {
    if (e instanceof Attribute) {
      return e;
    }
    if (!(e instanceof Alias) || !(((Alias) e).child() instanceof AggregateExpression)) {
      return null;
    }
    AggregateExpression count = (AggregateExpression) ((Alias) e).child();
    if (!(count.aggregateFunction() instanceof Count) || count.isDistinct()
        || count.filter().isDefined() || !(count.mode() == Complete$.MODULE$)) {
      return null;
    }
    for (Expression arg : CollectionConverters.asJava(count.aggregateFunction().children())) {
      if (!(arg instanceof Literal) || arg.nullable()) {
        return null;  // count(column) counts non-null values: not a row count
      }
    }
    AggregateExpression sum = AggregateExpression$.MODULE$.apply(
        Sum$.MODULE$.apply(rows, Sum$.MODULE$.apply$default$2()), Complete$.MODULE$, false,
        Option.empty());
    Expression zero = Literal$.MODULE$.apply(0L);
    Expression total = new Coalesce(CollectionConverters.asScala(List.of(sum, zero)).toList());
    return (NamedExpression) ((Alias) e).withNewChildren(
        CollectionConverters.asScala(List.<Expression>of(total)).toList());
  }
}
