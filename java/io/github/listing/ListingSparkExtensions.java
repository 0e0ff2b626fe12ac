package io.github.listing;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.SparkStrategy;

import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * {@code spark.sql.extensions} entry point installing the listing rules: {@link
 * ListingNativeEngine} (analysis), {@link ListingWriteOverwriteMode#dynamicOverwrites} (post-hoc
 * resolution), then {@link ListingCatalogOptions}, {@link
 * ListingTableSpecRedaction}, {@link ListingWriteOverwriteMode}, {@link ListingColumnPruning},
 * {@link ListingCountPushdown}, {@link ListingFilterOption} and {@link StalePushdownGuard}
 * (pre-CBO), then the planner strategy {@link StagedParquetWrites}.
 *
 * <p>WHY injectPreCBORule: in Spark 4.3.0 SparkOptimizer's batches run, in order, ... "Operator
 * Optimization before/after Inferring Filters" (FixedPoint; where injectOptimizerRule rules go),
 * ..., "Pre CBO Rules" (Once; injectPreCBORule), "Early Filter and Projection Push-Down" (Once;
 * V2ScanRelationPushDown, which calls PythonScanBuilder.pushFilters). Both injection points are
 * before push-down, but the guard rewrites the plan (fresh tables), so a Once batch that runs
 * after every operator-optimization pass and immediately before push-down is the right spot.
 * Planner strategies and resolution rules are wrong: the former run after push-down, the latter
 * only when a Dataset is analyzed, not each time a query is optimized and executed.
 *
 * <p>The one resolution rule, {@link ListingNativeEngine}, is the exception on purpose: it
 * replaces a whole relation by Spark's own file source, which must happen while the query is
 * analyzed so that Spark's {@code _metadata} column resolves against it (see that class).
 */
public final class ListingSparkExtensions
    extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {

  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    // engine=auto|native: hand local scans to Spark's own file source, at analysis
    extensions.injectResolutionRule(
        new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
          @Override
          public Rule<LogicalPlan> apply(SparkSession session) {
            return new ListingNativeEngine(session);
          }
        });
    // a dynamic overwrite of a listing table, before Spark's capability check refuses it
    extensions.injectPostHocResolutionRule(
        new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
          @Override
          public Rule<LogicalPlan> apply(SparkSession session) {
            return ListingWriteOverwriteMode.dynamicOverwrites(session);
          }
        });
    // catalog options first (a relation must know its table before anything reads it), then
    // column pruning, count push-down (on the narrowed scan), then the guard, which isolates
    // the narrowed table (rules run in order)
    extensions.injectPreCBORule(
        new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
          @Override
          public Rule<LogicalPlan> apply(SparkSession session) {
            return new ListingCatalogOptions(session);
          }
        });
    // commands: a listing table spec's redaction pattern, a listing overwrite's session mode
    extensions.injectPreCBORule(
        new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
          @Override
          public Rule<LogicalPlan> apply(SparkSession session) {
            return new ListingTableSpecRedaction(session);
          }
        });
    extensions.injectPreCBORule(
        new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
          @Override
          public Rule<LogicalPlan> apply(SparkSession session) {
            return new ListingWriteOverwriteMode(session);
          }
        });
    extensions.injectPreCBORule(
        new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
          @Override
          public Rule<LogicalPlan> apply(SparkSession session) {
            return new ListingColumnPruning();
          }
        });
    extensions.injectPreCBORule(
        new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
          @Override
          public Rule<LogicalPlan> apply(SparkSession session) {
            return new ListingCountPushdown();
          }
        });
    // where Spark pushes no filters into Python sources (4.0): the filters as an option
    extensions.injectPreCBORule(
        new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
          @Override
          public Rule<LogicalPlan> apply(SparkSession session) {
            return new ListingFilterOption();
          }
        });
    extensions.injectPreCBORule(
        new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
          @Override
          public Rule<LogicalPlan> apply(SparkSession session) {
            return new StalePushdownGuard();
          }
        });
    // a listing write's Parquet files written by Spark's own writer in its tasks
    extensions.injectPlannerStrategy(
        new AbstractFunction1<SparkSession, SparkStrategy>() {
          @Override
          public SparkStrategy apply(SparkSession session) {
            return new StagedParquetWrites(session);
          }
        });
    return BoxedUnit.UNIT;
  }
}
