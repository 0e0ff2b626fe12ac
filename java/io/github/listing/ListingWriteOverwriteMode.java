package io.github.listing;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
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
 *
 * <p>Dynamic overwrites planned by Spark itself: with the session's mode {@code dynamic}, {@code
 * INSERT OVERWRITE t} (and {@code df.writeTo("t").overwritePartitions()}) plan an {@code
 * OverwritePartitionsDynamic}, which Spark's capability check refuses for a Python table
 * ("does not support dynamic overwrite"): a Python data source cannot declare it. {@link
 * #dynamicAsOption} turns such a write to a {@code listing} table into the overwrite Python
 * sources do support, with {@code partition_overwrite_mode=dynamic}: the writer then replaces
 * only the partitions it writes. It runs as a post-hoc resolution rule, before that check.
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

  /** The post-hoc resolution rule: {@link #dynamicAsOption} on every node. */
  static Rule<LogicalPlan> dynamicOverwrites(SparkSession session) {
    ListingWriteOverwriteMode rule = new ListingWriteOverwriteMode(session);
    NodeRewrite rewrite = new NodeRewrite(rule::dynamicAsOption);
    return new Rule<LogicalPlan>() {
      @Override
      public LogicalPlan apply(LogicalPlan plan) {
        return plan.transformUp(rewrite);
      }
    };
  }

  /**
   * A dynamic overwrite of a {@code listing} table as an overwrite of the whole table whose
   * option {@code partition_overwrite_mode=dynamic} narrows it to the partitions written, or
   * null. Built with {@code OverwriteByExpression}'s own {@code byName}/{@code byPosition}
   * (found by name, their trailing arguments at Spark's defaults: their number differs
   * between Spark lines).
   */
  LogicalPlan dynamicAsOption(LogicalPlan plan) {
    if (!(plan instanceof OverwritePartitionsDynamic)) {
      return null;
    }
    OverwritePartitionsDynamic write = (OverwritePartitionsDynamic) plan;
    if (listingRelation(write.table()) == null) {
      return null;
    }
    Map<String, String> options = new HashMap<>(CollectionConverters.asJava(write.writeOptions()));
    options.keySet().removeIf(this::namesTheOption);  // overwritePartitions() is dynamic
    options.put(OPTION, "dynamic");
    String factory = write.isByName() ? "byName" : "byPosition";
    try {
      for (Method m : OverwriteByExpression.class.getMethods()) {
        Class<?>[] params = m.getParameterTypes();
        if (!m.getName().equals(factory) || !Modifier.isStatic(m.getModifiers())
            || params.length < 4 || params[2] != Expression.class) {
          continue;
        }
        Object[] args = new Object[params.length];
        args[0] = write.table();
        args[1] = write.query();
        args[2] = Literal.TrueLiteral();
        args[3] = scala.collection.immutable.Map$.MODULE$.from(
            CollectionConverters.asScala(options));
        for (int i = 4; i < args.length; i++) {
          args[i] = OverwriteByExpression.class.getMethod(factory + "$default$" + (i + 1))
              .invoke(null);
        }
        return (LogicalPlan) m.invoke(null, args);
      }
    } catch (ReflectiveOperationException e) {
      log().warn("listing: cannot plan a dynamic overwrite as an option", e);
    }
    return null;  // Spark's own error then says dynamic overwrite is not supported
  }

  /** The listing (or listing_table) relation {@code table} is, or null. */
  private static DataSourceV2Relation listingRelation(Object table) {
    if (!(table instanceof DataSourceV2Relation)) {
      return null;
    }
    DataSourceV2Relation rel = (DataSourceV2Relation) table;
    if (!(rel.table() instanceof PythonTable)
        || !((PythonTable) rel.table()).name().toLowerCase(Locale.ROOT).startsWith(
            ListingColumnPruning.SOURCE)) {
      return null;
    }
    return rel;
  }

  /** Whether {@code key} is a spelling of {@link #OPTION} (with no registry: ours only). */
  private boolean namesTheOption(String key) {
    try {
      OptionRegistry.Option known = OptionRegistry.of(session).lookup(key);
      return known != null && known.name.equals(OPTION);
    } catch (ListingNativeEngine.NotNative e) {
      return key.equalsIgnoreCase(OPTION) || key.equalsIgnoreCase("partitionOverwriteMode");
    }
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
    DataSourceV2Relation rel = listingRelation(target);
    if (rel == null) {
      return null;  // listing and listing_table only
    }
    try {
      OptionRegistry.of(session);
    } catch (ListingNativeEngine.NotNative e) {
      return null;  // the source was never registered here: nothing reads the option
    }
    // Spark's V2Writes asserts a write's options and its relation's are equal or one side is
    // empty (DataFrame writes carry both, writeTo only the command's, SQL's INSERT ... WITH
    // only the relation's): the settings go to each side that carries options
    Map<String, String> command = new HashMap<>(CollectionConverters.asJava(writeOptions));
    Map<String, String> relOptions = new HashMap<>(rel.options().asCaseSensitiveMap());
    Map<String, String> options = new HashMap<>(relOptions);
    options.putAll(command);
    Map<String, String> added = new HashMap<>();
    boolean modeNamed = options.keySet().stream().anyMatch(this::namesTheOption);
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
    Object updated = writeOptions;
    if (!command.isEmpty() || relOptions.isEmpty()) {
      command.putAll(added);
      updated = scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(command));
    }
    LogicalPlan table = rel;
    if (!relOptions.isEmpty()) {
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
