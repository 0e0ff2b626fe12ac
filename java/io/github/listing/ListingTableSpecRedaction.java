package io.github.listing;

import java.lang.reflect.Constructor;
import java.util.HashMap;
import java.util.Map;

import org.apache.spark.SparkConf;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.Command;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.TableSpec;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.internal.SQLConf;

import scala.jdk.javaapi.CollectionConverters;

/**
 * Gives the options of a {@code CREATE TABLE ... USING listing} (or REPLACE, or either AS
 * SELECT) the session's redaction pattern, so Spark masks them as it masks every other option.
 *
 * <p>WHY: Spark prints a command's options through {@code SQLConf.redactOptions}, which masks
 * each option whose name or value matches {@code spark.redaction.regex} or {@code
 * spark.sql.redaction.options.regex}; but a {@code TableSpec}'s options are printed through
 * {@code Utils.redact(Map)}, which reads the pattern from the map itself ({@code
 * spark.redaction.regex} among its keys) or falls back to Spark's default. That text is the
 * CREATE TABLE node of the SQL tab's plan graph and of the event log's plan info, and the
 * default misses {@code storage.key} and nested secrets such as {@code SSECustomerKey}. This
 * rule puts the session's two patterns, joined, into the spec's options under that key (the
 * catalog then stores it too; the source ignores it, listing.options.registry).
 */
public final class ListingTableSpecRedaction extends Rule<LogicalPlan> {

  /** The key {@code Utils.redact(Map)} reads a map's own pattern from. */
  static final String PATTERN_KEY = "spark.redaction.regex";

  private final SparkSession session;
  private final NodeRewrite redact = new NodeRewrite(this::withPattern);

  public ListingTableSpecRedaction(SparkSession session) {
    this.session = session;
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    return plan.transformUp(redact);
  }

  /** The session's patterns as one: what {@code SQLConf.redactOptions} applies in turn. */
  private String pattern() {
    SparkConf conf = session.sparkContext().conf();
    String secrets = conf.get(PATTERN_KEY,
        org.apache.spark.internal.config.package$.MODULE$.SECRET_REDACTION_PATTERN()
            .defaultValueString());
    String options = SQLConf.get().getConfString(
        SQLConf.SQL_OPTIONS_REDACTION_PATTERN().key(),
        SQLConf.SQL_OPTIONS_REDACTION_PATTERN().defaultValueString());
    return "(?:" + secrets + ")|(?:" + options + ")";
  }

  /** {@code plan} with its listing table spec carrying the pattern, or null. */
  private LogicalPlan withPattern(LogicalPlan plan) {
    if (!(plan instanceof Command)) {
      return null;  // a table spec belongs to a command (CREATE/REPLACE TABLE [AS SELECT])
    }
    Object[] args = new Object[plan.productArity()];
    boolean changed = false;
    for (int i = 0; i < args.length; i++) {
      Object arg = plan.productElement(i);
      if (arg instanceof TableSpec && needsPattern((TableSpec) arg)) {
        arg = withOption((TableSpec) arg, PATTERN_KEY, pattern());
        changed = true;
      }
      args[i] = arg;
    }
    return changed ? (LogicalPlan) plan.makeCopy(args) : null;
  }

  private static boolean needsPattern(TableSpec spec) {
    return spec.provider().isDefined()
        && ListingColumnPruning.SOURCE.equalsIgnoreCase(spec.provider().get())
        && !spec.options().contains(PATTERN_KEY);
  }

  /** {@code spec} with one more option (its other fields as they are, whatever Spark adds). */
  private static TableSpec withOption(TableSpec spec, String key, String value) {
    Map<String, String> options = new HashMap<>(CollectionConverters.asJava(spec.options()));
    options.put(key, value);
    Object[] args = new Object[spec.productArity()];
    for (int i = 0; i < args.length; i++) {
      Object arg = spec.productElement(i);
      args[i] = arg == spec.options()
          ? scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(options))
          : arg;
    }
    for (Constructor<?> c : TableSpec.class.getConstructors()) {
      if (c.getParameterCount() == args.length) {
        try {
          return (TableSpec) c.newInstance(args);
        } catch (ReflectiveOperationException e) {
          throw new IllegalStateException("cannot copy " + spec, e);
        }
      }
    }
    throw new IllegalStateException("no TableSpec constructor of " + args.length + " fields");
  }
}
