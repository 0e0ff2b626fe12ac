package io.github.listing;

import java.lang.reflect.Field;

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;


/**
 * Gives every Python-data-source scan in a plan its own {@link PythonDataSourceV2} before V2
 * filter push-down runs.
 *
 * <p>WHY: in Spark 4.3.0 the planned read (pickled reader + partitions, a
 * {@code PythonDataSourceReadInfo}) is cached on the {@code PythonDataSourceV2} held by the
 * {@link PythonTable} of a loaded relation. {@code PythonScanBuilder.pushFilters} overwrites that
 * cache when the reader accepts a filter, and {@code PythonBatch} reads it back lazily at
 * execution via {@code getOrCreateReadInfo}, which re-uses whatever is cached. Every query on the
 * same DataFrame / temp view shares that one object, so:
 * <ul>
 *   <li>{@code df.where("p = 1").count(); df.count()} re-uses the pruned reader (silent data
 *       loss);</li>
 *   <li>{@code df.where("p = 1").union(df.where("p = 2"))} or a self-join reads the LAST pushed
 *       reader for every scan of the plan, even within a single query.</li>
 * </ul>
 * Merely calling {@code setReadInfo(null)} before push-down fixes the first case only. Swapping in
 * a fresh, private {@code PythonDataSourceV2} per relation occurrence fixes both: the shared
 * original is never written by push-down, and each scan only ever sees its own reader.
 *
 * <p>Runs as a pre-CBO rule: that batch is {@code Once} and comes right before the "Early Filter
 * and Projection Push-Down" batch holding {@code V2ScanRelationPushDown} (see
 * {@link ListingSparkExtensions}).
 */
public final class StalePushdownGuard extends Rule<LogicalPlan> {

  /** Marker subclass so the rule is idempotent: already-isolated tables are left alone. */
  static final class IsolatedPythonDataSourceV2 extends PythonDataSourceV2 {}

  /**
   * Private {@code PythonDataSourceV2.dataSourceInPython}: the pickled Python DataSource instance.
   * Copying it only saves one Python round trip per scan (a copy without it recreates the instance
   * from the same options), so correctness never depends on this reflection succeeding.
   */
  private static final Field DATA_SOURCE_IN_PYTHON =
      findField(PythonDataSourceV2.class, "dataSourceInPython");

  /** Private {@code PythonTable.ds}, read to recognise tables this rule already isolated. */
  private static final Field TABLE_DS = findField(PythonTable.class, "ds");

  private static Field findField(Class<?> owner, String name) {
    try {
      Field f = owner.getDeclaredField(name);
      f.setAccessible(true);
      return f;
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  private final NodeRewrite isolate = new NodeRewrite(this::isolated);

  /** The relation with a private data source, or null when it has one already. */
  private LogicalPlan isolated(LogicalPlan plan) {
    PythonTable shared = sharedPythonTable(plan);
    if (shared == null) {
      return null;
    }
    DataSourceV2Relation rel = (DataSourceV2Relation) plan;
    boolean listing = ListingColumnPruning.SOURCE.equalsIgnoreCase(shared.name());
    // a listing scan reads timestamp partition values in the session's time zone (Python
    // workers cannot see the session): that zone as the relation's option, unless it is UTC,
    // the source's default, or the relation names a zone itself
    CaseInsensitiveStringMap options = listing
        ? SessionTimeZone.withZone(rel.options(), true) : rel.options();
    // options ListingFilterOption (or the zone) added must reach Python: the data source is
    // created anew
    PythonDataSourceV2 fresh = copyOf(shared,
        !options.containsKey(ListingFilterOption.OPTION) && options == rel.options());
    // listing scans also say what they prune (DescribedPythonTable); others stay plain
    PythonTable isolated = listing
        ? new DescribedPythonTable(fresh, shared.name(), shared.schema(),
            DescribedPythonTable.fullSchemaOf(shared))
        : new PythonTable(fresh, shared.name(), shared.schema());
    return SparkShim.copyRelation(rel, isolated, rel.output(), options);
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    // Subquery plans need no special walk: the optimizer's "Subquery" batch runs the whole
    // optimizer (this rule included) on them before this batch sees the outer plan.
    return plan.transformUp(isolate);
  }

  /** The PythonTable of a read relation still sharing its original data source, else null. */
  private static PythonTable sharedPythonTable(LogicalPlan plan) {
    if (!(plan instanceof DataSourceV2Relation)) {
      return null;
    }
    Table table = ((DataSourceV2Relation) plan).table();
    if (!(table instanceof PythonTable)) {
      return null;
    }
    return dsOf((PythonTable) table) instanceof IsolatedPythonDataSourceV2
        ? null
        : (PythonTable) table;
  }

  /**
   * The table's data source, or null when unreadable. Then every table counts as shared and is
   * isolated again on each run, which is still correct (the batch runs Once per optimization).
   */
  static Object dsOf(PythonTable table) {
    try {
      return TABLE_DS == null ? null : TABLE_DS.get(table);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  /**
   * Whether this rule is switched off ({@code spark.sql.optimizer.excludedRules} names it).
   * Rules that give a scan a new schema on the same data source rely on the isolation.
   */
  static boolean excluded() {
    String rules = org.apache.spark.sql.internal.SQLConf.get().getConfString(
        "spark.sql.optimizer.excludedRules", "");
    return rules != null && rules.contains(StalePushdownGuard.class.getName());
  }

  /** A fresh data source with the same short name and no cached reader (and the same Python
   * instance when {@code keepPythonInstance}: else it is created from the relation's options). */
  private PythonDataSourceV2 copyOf(PythonTable shared, boolean keepPythonInstance) {
    IsolatedPythonDataSourceV2 fresh = new IsolatedPythonDataSourceV2();
    fresh.setShortName(shared.name());
    Object original = dsOf(shared);
    if (keepPythonInstance && DATA_SOURCE_IN_PYTHON != null && original != null) {
      try {
        DATA_SOURCE_IN_PYTHON.set(fresh, DATA_SOURCE_IN_PYTHON.get(original));
      } catch (ReflectiveOperationException | RuntimeException e) {
        log().debug("could not copy dataSourceInPython; it will be recreated", e);
      }
    }
    return fresh;
  }
}
