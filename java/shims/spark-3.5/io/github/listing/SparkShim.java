package io.github.listing;

import java.util.List;
import java.util.function.UnaryOperator;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.execution.datasources.DataSource;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.internal.SessionState;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.types.StructType;

import scala.Option;
import scala.collection.Seq;
import scala.collection.immutable.Map;

/**
 * The calls whose signatures differ between Spark lines, for Spark 3.5.x: Scala 2.12, no
 * Python data sources (so no Python table to hand off and no catalog options to fill in).
 *
 * <p>One class of this name per line under {@code java/shims/}; a jar holds the common sources
 * it names and exactly one of them, compiled against that line's Spark
 * (listing/spark/lines.py), so the compiler finds the next API change.
 */
final class SparkShim {

  /** The Spark line this jar was compiled for. */
  static final String LINE = "spark-3.5";

  private SparkShim() {
  }

  /** Spark's file source {@code format} over {@code paths}, Spark's defaults elsewhere. */
  static DataSource dataSource(SparkSession session, String format, Seq<String> paths,
      Option<StructType> schema, Map<String, String> options) {
    return DataSource.apply(session, format, paths, schema, DataSource.apply$default$5(),
        DataSource.apply$default$6(), options, DataSource.apply$default$8());
  }

  /** The relation {@code ds} resolves to, with Spark's default arguments. */
  static BaseRelation resolveRelation(DataSource ds) {
    return ds.resolveRelation(ds.resolveRelation$default$1());
  }

  /** The name of the Python data source {@code table} reads: none on Spark 3.5. */
  static String pythonSource(Table table) {
    return null;
  }

  /** The rule putting a catalog table's own options into its relation: Spark 3.5's catalog
   * tables of the JVM source carry them already. */
  static UnaryOperator<LogicalPlan> catalogOptions(SparkSession session) {
    return plan -> plan;
  }

  /** The session's state. */
  static SessionState sessionState(SparkSession session) {
    return session.sessionState();
  }

  /** {@code rel} with another output; every other field kept. */
  static LogicalRelation withOutput(LogicalRelation rel, List<AttributeReference> output) {
    return rel.copy(rel.relation(), Scala.list(output), rel.catalogTable(), rel.isStreaming());
  }
}
