package io.github.listing;

import java.util.HashMap;
import java.util.Map;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.catalog.CatalogStorageFormat;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogUtils;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Gives a {@code listing} relation read from a catalog table the options the table was created
 * with.
 *
 * <p>WHY: for {@code CREATE TABLE t USING listing OPTIONS (path ..., ...)} Spark 4.3 stores the
 * options in the catalog and passes them when it loads the table, but the relation built for
 * {@code SELECT ... FROM t} carries the query's options only (none), and the Python reader is
 * created from the relation's options at scan time: the scan failed for want of a path. This rule
 * copies the stored options (the storage properties and the location as {@code path}) into the
 * relation, the query's own options winning, before push-down builds the scan.
 */
public final class ListingCatalogOptions extends Rule<LogicalPlan> {

  private final SparkSession session;

  public ListingCatalogOptions(SparkSession session) {
    this.session = session;
  }

  private final NodeRewrite fill = new NodeRewrite(this::withCatalogOptions);

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    return plan.transformUp(fill);
  }

  /** The relation with its catalog table's options, or null (also used by ListingNativeEngine). */
  LogicalPlan withCatalogOptions(LogicalPlan plan) {
    if (!(plan instanceof DataSourceV2Relation)) {
      return null;
    }
    DataSourceV2Relation rel = (DataSourceV2Relation) plan;
    if (!(rel.table() instanceof PythonTable)
        || !ListingColumnPruning.SOURCE.equalsIgnoreCase(((PythonTable) rel.table()).name())
        || rel.identifier().isEmpty() || rel.options().containsKey("path")) {
      return null;  // not a catalog table of ours, or already has its options
    }
    CatalogTable table = catalogTable(rel.identifier().get());
    if (table == null) {
      return null;
    }
    Map<String, String> options = new HashMap<>();
    CatalogStorageFormat storage = table.storage();
    options.putAll(CollectionConverters.asJava(storage.properties()));
    if (storage.locationUri().isDefined()) {
      options.put("path", CatalogUtils.URIToString(storage.locationUri().get()));
    }
    if (options.isEmpty()) {
      return null;
    }
    options.putAll(rel.options().asCaseSensitiveMap());  // the query's own options win
    return SparkShim.copyRelation(rel, rel.table(), rel.output(),
        new CaseInsensitiveStringMap(options));
  }

  private CatalogTable catalogTable(Identifier ident) {
    String[] namespace = ident.namespace();
    Option<String> database = namespace.length == 1 ? Option.apply(namespace[0]) : Option.empty();
    try {
      org.apache.spark.sql.classic.SparkSession classic =
          (org.apache.spark.sql.classic.SparkSession) session;
      return classic.sessionState().catalog().getTableMetadata(
          new TableIdentifier(ident.name(), database));
    } catch (Exception e) {  // no such table or namespace: nothing to copy
      log().debug("no catalog table for " + ident, e);
      return null;
    }
  }
}
