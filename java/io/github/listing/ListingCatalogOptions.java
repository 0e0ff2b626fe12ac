package io.github.listing;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.catalog.CatalogStorageFormat;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogUtils;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.V2WriteCommand;
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
 *
 * <p>Writes too: {@code INSERT INTO t}, {@code INSERT OVERWRITE t} and {@code
 * df.writeTo("t").append()} plan a write command ({@code AppendData}, {@code
 * OverwriteByExpression}, {@code OverwritePartitionsDynamic}) whose table relation is no child
 * of the plan, and Spark builds the Python writer from the command's write options alone (none
 * for SQL): the writer failed for want of a path. This rule copies the same stored options into
 * the command's write options, and a partitioned catalog table's partition columns as the
 * {@code partition_by} option (unless the write names one), the write's own options winning.
 * It runs before {@code V2Writes} builds the write, and before {@link
 * ListingWriteOverwriteMode} adds the session's overwrite mode.
 */
public final class ListingCatalogOptions extends Rule<LogicalPlan> {

  /** The write option naming a write's partition columns (listing.options.registry). */
  static final String PARTITION_BY = "partition_by";
  /** The write option naming the options the catalog stored (listing.spark.config). */
  static final String CATALOG_OPTIONS = "listing.catalog_options";

  private final SparkSession session;

  public ListingCatalogOptions(SparkSession session) {
    this.session = session;
  }

  private final NodeRewrite fill = new NodeRewrite(this::withCatalogOptions);

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    return plan.transformUp(fill);
  }

  /**
   * The relation (or write command) with its catalog table's options, or null (also used by
   * ListingNativeEngine).
   */
  LogicalPlan withCatalogOptions(LogicalPlan plan) {
    if (plan instanceof V2WriteCommand) {
      return writeWithCatalogOptions((V2WriteCommand) plan);
    }
    if (!(plan instanceof DataSourceV2Relation)) {
      return null;
    }
    DataSourceV2Relation rel = (DataSourceV2Relation) plan;
    if (!isCatalogTableOfOurs(rel) || rel.options().containsKey("path")) {
      return null;  // not a catalog table of ours, or already has its options
    }
    CatalogTable table = catalogTable(rel.identifier().get());
    if (table == null) {
      return null;
    }
    Map<String, String> options = storedOptions(table);
    if (options.isEmpty()) {
      return null;
    }
    options.putAll(rel.options().asCaseSensitiveMap());  // the query's own options win
    return SparkShim.copyRelation(rel, rel.table(), rel.output(),
        new CaseInsensitiveStringMap(options));
  }

  /** A {@code listing} relation that names a catalog table. */
  private static boolean isCatalogTableOfOurs(DataSourceV2Relation rel) {
    return rel.table() instanceof PythonTable
        && ListingColumnPruning.SOURCE.equalsIgnoreCase(((PythonTable) rel.table()).name())
        && rel.identifier().isDefined();
  }

  /** The options {@code CREATE TABLE ... USING listing OPTIONS (...)} stored, with its path. */
  private static Map<String, String> storedOptions(CatalogTable table) {
    Map<String, String> options = new HashMap<>();
    CatalogStorageFormat storage = table.storage();
    options.putAll(CollectionConverters.asJava(storage.properties()));
    if (storage.locationUri().isDefined()) {
      options.put("path", CatalogUtils.URIToString(storage.locationUri().get()));
    }
    return options;
  }

  /**
   * The write command with its catalog table's stored options (and partition columns as {@code
   * partition_by}) among its write options, or null when it is no write to a catalog table of
   * ours or already names a path. Every write command has exactly one field holding its write
   * options (a Scala map), on every Spark line: it is found by type and replaced.
   */
  private LogicalPlan writeWithCatalogOptions(V2WriteCommand write) {
    if (!(write.table() instanceof DataSourceV2Relation)) {
      return null;
    }
    DataSourceV2Relation rel = (DataSourceV2Relation) write.table();
    if (!isCatalogTableOfOurs(rel)) {
      return null;
    }
    LogicalPlan node = (LogicalPlan) write;
    int field = -1;
    for (int i = 0; i < node.productArity(); i++) {
      if (node.productElement(i) instanceof scala.collection.immutable.Map) {
        field = i;
        break;
      }
    }
    if (field < 0) {
      return null;
    }
    @SuppressWarnings("unchecked")
    Map<String, String> command = CollectionConverters.asJava(
        (scala.collection.immutable.Map<String, String>) node.productElement(field));
    // SQL's INSERT INTO t WITH (...) carries its options on the relation, not the command,
    // and V2Writes asserts the two are equal or one is empty: fill the side that has them
    boolean onRelation = command.isEmpty() && !rel.options().isEmpty();
    Map<String, String> given = onRelation ? rel.options().asCaseSensitiveMap() : command;
    if (given.keySet().stream().anyMatch(k -> k.equalsIgnoreCase("path"))) {
      return null;  // filled already, or the write's own
    }
    CatalogTable table = catalogTable(rel.identifier().get());
    if (table == null) {
      return null;
    }
    Map<String, String> options = storedOptions(table);
    if (options.isEmpty()) {
      return null;
    }
    if (!table.partitionColumnNames().isEmpty() && !namesPartitionBy(options)
        && !namesPartitionBy(given)) {
      options.put(PARTITION_BY, String.join(",",
          CollectionConverters.asJava(table.partitionColumnNames())));
    }
    Set<String> stored = new TreeSet<>(options.keySet());
    stored.removeAll(given.keySet());
    stored.remove(PARTITION_BY);
    options.putAll(given);  // the write's own options win
    options.put(CATALOG_OPTIONS, String.join(",", stored));
    Object[] args = new Object[node.productArity()];
    for (int i = 0; i < args.length; i++) {
      Object arg = node.productElement(i);
      if (onRelation && arg == rel) {
        args[i] = SparkShim.copyRelation(rel, rel.table(), rel.output(),
            new CaseInsensitiveStringMap(options));
      } else if (!onRelation && i == field) {
        args[i] = scala.collection.immutable.Map$.MODULE$.from(
            CollectionConverters.asScala(options));
      } else {
        args[i] = arg;
      }
    }
    return (LogicalPlan) node.makeCopy(args);
  }

  /** Whether {@code options} name the write's partition columns (any spelling registered). */
  private boolean namesPartitionBy(Map<String, String> options) {
    OptionRegistry registry;
    try {
      registry = OptionRegistry.of(session);
    } catch (ListingNativeEngine.NotNative e) {
      return options.keySet().stream().anyMatch(k -> k.equalsIgnoreCase(PARTITION_BY));
    }
    for (String key : options.keySet()) {
      OptionRegistry.Option known = registry.lookup(key);
      if (known != null && known.name.equals(PARTITION_BY)) {
        return true;
      }
    }
    return false;
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
