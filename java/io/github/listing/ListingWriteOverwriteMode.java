package io.github.listing;

import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.AppendData;
import org.apache.spark.sql.catalyst.plans.logical.OverwriteByExpression;
import org.apache.spark.sql.catalyst.plans.logical.OverwritePartitionsDynamic;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import scala.jdk.javaapi.CollectionConverters;

/**
 * Gives an overwrite through the {@code listing} source the session's partition overwrite mode
 * in force when the write is planned, as its {@code partition_overwrite_mode} option, and every
 * write the session's time zone (the zone timestamp partition values are spelled in), as its
 * {@code timeZone} option, unless the write names the option itself (any spelling the option
 * registry knows).
 *
 * <p>WHY: Spark's own file writers read {@code spark.sql.sources.partitionOverwriteMode} from
 * the session when they plan, so a user changes it with {@code spark.conf.set} at any time.
 * A Python data source's writer is built in a Python worker from the write's options alone and
 * cannot see the session. This rule runs before {@code V2Writes} builds the write from those
 * options.
 */
public final class ListingWriteOverwriteMode extends Rule<LogicalPlan> {

  /** Our option (listing.options.registry) and Spark's session conf it follows. */
  static final String OPTION = "partition_overwrite_mode";

  private final SparkSession session;
  private final NodeRewrite fill = new NodeRewrite(this::withSessionMode);

  public ListingWriteOverwriteMode(SparkSession session) {
    this.session = session;
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    return plan.transformUp(fill);
  }

  /**
   * The write with the session's settings as its options, or null: the time zone of
   * timestamp partition values ({@link SessionTimeZone}) on every write, and an overwrite's
   * partition overwrite mode; an option the write names itself wins.
   */
  private LogicalPlan withSessionMode(LogicalPlan plan) {
    scala.collection.immutable.Map<String, String> writeOptions;
    Object target;
    if (plan instanceof OverwriteByExpression) {
      writeOptions = ((OverwriteByExpression) plan).writeOptions();
      target = ((OverwriteByExpression) plan).table();
    } else if (plan instanceof AppendData) {
      writeOptions = ((AppendData) plan).writeOptions();
      target = ((AppendData) plan).table();
    } else if (plan instanceof OverwritePartitionsDynamic) {
      writeOptions = ((OverwritePartitionsDynamic) plan).writeOptions();
      target = ((OverwritePartitionsDynamic) plan).table();
    } else {
      return null;
    }
    if (!(target instanceof DataSourceV2Relation)) {
      return null;
    }
    DataSourceV2Relation rel = (DataSourceV2Relation) target;
    if (!(rel.table() instanceof PythonTable)
        || !((PythonTable) rel.table()).name().toLowerCase(Locale.ROOT).startsWith(
            ListingColumnPruning.SOURCE)) {
      return null;  // listing and listing_table only
    }
    OptionRegistry registry;
    try {
      registry = OptionRegistry.of(session);
    } catch (ListingNativeEngine.NotNative e) {
      return null;  // the source was never registered here: nothing reads the option
    }
    Map<String, String> options = new HashMap<>(CollectionConverters.asJava(writeOptions));
    Map<String, String> added = new HashMap<>();
    boolean modeNamed = false;
    for (String key : options.keySet()) {
      OptionRegistry.Option known = registry.lookup(key);
      modeNamed |= known != null && known.name.equals(OPTION);
    }
    if (plan instanceof OverwriteByExpression && !modeNamed) {
      added.put(OPTION, SQLConf.get().getConfString(SQLConf.PARTITION_OVERWRITE_MODE().key(),
          SQLConf.PARTITION_OVERWRITE_MODE().defaultValueString()).toLowerCase(Locale.ROOT));
    }
    if (!SessionTimeZone.named(options)) {
      added.put(SessionTimeZone.OPTION, SessionTimeZone.zone());
    }
    if (added.isEmpty()) {
      return null;  // the write's own options win (and the rule has run)
    }
    options.putAll(added);
    scala.collection.immutable.Map<String, String> updated =
        scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(options));
    // Spark's V2Writes requires a relation's options, when it has any, to equal the write's
    LogicalPlan table = rel;
    if (!rel.options().isEmpty()) {
      Map<String, String> relOptions = new HashMap<>(rel.options().asCaseSensitiveMap());
      relOptions.putAll(added);
      table = replaced(rel, rel.options(), new CaseInsensitiveStringMap(relOptions));
    }
    Object[] args = new Object[plan.productArity()];
    for (int i = 0; i < args.length; i++) {
      Object arg = plan.productElement(i);
      args[i] = arg == writeOptions ? updated : arg == rel ? table : arg;
    }
    return (LogicalPlan) plan.makeCopy(args);
  }

  /** {@code plan} with its field {@code old} (the same object) replaced by {@code value}. */
  private static LogicalPlan replaced(LogicalPlan plan, Object old, Object value) {
    Object[] args = new Object[plan.productArity()];
    for (int i = 0; i < args.length; i++) {
      Object arg = plan.productElement(i);
      args[i] = arg == old ? value : arg;
    }
    return (LogicalPlan) plan.makeCopy(args);
  }
}
