package io.github.listing;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import org.apache.spark.sql.types.StructType;

import scala.jdk.javaapi.CollectionConverters;

/**
 * Narrows each scan of the {@code listing} Python data source to the columns its query uses.
 *
 * <p>WHY: Spark 4.3 gives Python data sources no column pruning: {@code reader(schema)} receives
 * the table's full schema, so every query decodes every column (a {@code count()} included).
 * {@code PythonScanBuilder} is built from the {@link PythonTable}'s schema, so a relation whose
 * table and output are narrowed to the attributes the plan above it references makes the Python
 * reader read only those. By the time pre-CBO rules run, Spark's own ColumnPruning has put a
 * {@code Project} (with the needed attributes only) right above the relation, or above a
 * {@code Filter} on it. The narrowed output keeps the same attributes (same exprIds), so nothing
 * above changes. Runs before {@link StalePushdownGuard}, which then gives the narrowed table its
 * own private data source: two scans of one DataFrame with different columns never share a
 * planned read.
 */
public final class ListingColumnPruning extends Rule<LogicalPlan> {

  static final String SOURCE = "listing";

  private final NodeRewrite prune = new NodeRewrite(ListingColumnPruning::narrowed);

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    return plan.transformDown(prune);
  }

  /** {@code Project [Filter] relation} with the relation narrowed, or null if nothing to do. */
  private static LogicalPlan narrowed(LogicalPlan plan) {
    if (!(plan instanceof Project)) {
      return null;
    }
    Project project = (Project) plan;
    LogicalPlan child = project.child();
    Filter filter = child instanceof Filter ? (Filter) child : null;
    DataSourceV2Relation rel = listingRelation(filter != null ? filter.child() : child);
    if (rel == null) {
      return null;
    }
    AttributeSet used = project.references();
    if (filter != null) {
      used = used.$plus$plus(filter.references());
    }
    List<AttributeReference> keep = new ArrayList<>();
    for (AttributeReference a : CollectionConverters.asJava(rel.output())) {
      if (used.contains(a)) {
        keep.add(a);
      }
    }
    if (keep.isEmpty() && !SparkShim.ZERO_COLUMN_PYTHON_SCANS) {
      keep.add(rel.output().head());  // rows without columns read as no rows there
    }
    if (keep.size() == rel.output().size()) {
      return null;  // already as narrow as the query: also what makes the rule idempotent
    }
    LogicalPlan newLeaf = reading(rel, keep);
    if (newLeaf == null) {
      return null;  // cannot rebuild the table: leave the scan as wide as it was
    }
    LogicalPlan newChild = filter != null ? withChild(filter, newLeaf) : newLeaf;
    return withChild(project, newChild);
  }

  /** {@code plan} when it is a relation of the {@code listing} source, else null. */
  static DataSourceV2Relation listingRelation(LogicalPlan plan) {
    if (!(plan instanceof DataSourceV2Relation)) {
      return null;
    }
    DataSourceV2Relation rel = (DataSourceV2Relation) plan;
    return rel.table() instanceof PythonTable
        && SOURCE.equalsIgnoreCase(((PythonTable) rel.table()).name()) ? rel : null;
  }

  /**
   * {@code rel} reading exactly {@code output}: a described table of that schema on the same
   * data source, sized from the table's full width (only listing tables get here); null when
   * the data source cannot be read to rebuild the table.
   */
  static LogicalPlan reading(DataSourceV2Relation rel, List<AttributeReference> output) {
    PythonTable table = (PythonTable) rel.table();
    Object ds = StalePushdownGuard.dsOf(table);
    if (!(ds instanceof PythonDataSourceV2)) {
      return null;
    }
    List<Attribute> attrs = new ArrayList<>(output);
    StructType schema = DataTypeUtils.fromAttributes(CollectionConverters.asScala(attrs).toList());
    PythonTable narrow = new DescribedPythonTable(
        (PythonDataSourceV2) ds, table.name(), schema, DescribedPythonTable.fullSchemaOf(table));
    return SparkShim.copyRelation(rel, narrow, CollectionConverters.asScala(output).toList(),
        rel.options());
  }

  /** {@code node} with {@code child} as its one child. */
  static LogicalPlan withChild(LogicalPlan node, LogicalPlan child) {
    return node.withNewChildren(CollectionConverters.asScala(List.of(child)).toList());
  }
}
