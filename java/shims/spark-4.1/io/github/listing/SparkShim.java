package io.github.listing;

import java.util.List;
import java.util.function.UnaryOperator;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.execution.datasources.DataSource;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import org.apache.spark.sql.execution.datasources.v2.python.UserDefinedPythonDataSource;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.execution.python.MapInBatchEvaluatorFactory;
import org.apache.spark.sql.internal.SessionState;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import scala.Option;
import scala.collection.immutable.Map;
import scala.collection.immutable.Seq;

/**
 * The calls whose signatures differ between Spark lines, for Spark 4.1.x.
 *
 * <p>One class of this name per line under {@code java/shims/}; a jar holds the common sources
 * and exactly one of them, compiled against that line's Spark (listing/spark/lines.py), so the
 * compiler finds the next API change.
 */
final class SparkShim {

  /** The Spark line this jar was compiled for. */
  static final String LINE = "spark-4.1";

  /** Whether a Python data source scan may read no columns:
   * a Python scan of no columns reads its rows' count. */
  static final boolean ZERO_COLUMN_PYTHON_SCANS = true;

  private SparkShim() {
  }

  /** {@code rel} with another table, output and options; every other field kept. */
  static DataSourceV2Relation copyRelation(DataSourceV2Relation rel, Table table,
      Seq<AttributeReference> output, CaseInsensitiveStringMap options) {
    return rel.copy(table, output, rel.catalog(), rel.identifier(), options, rel.timeTravelSpec());
  }

  /** Spark's file source {@code format} over {@code paths}, Spark's defaults elsewhere. */
  static DataSource dataSource(SparkSession session, String format, Seq<String> paths,
      Option<StructType> schema, Map<String, String> options) {
    return DataSource.apply(session, format, paths, schema, DataSource.apply$default$5(),
        DataSource.apply$default$6(), options, DataSource.apply$default$8());
  }

  /** The relation {@code ds} resolves to, with Spark's default arguments. */
  static BaseRelation resolveRelation(DataSource ds) {
    return ds.resolveRelation(ds.resolveRelation$default$1(), ds.resolveRelation$default$2());
  }

  /** The evaluator factory Spark's Python data source reader runs a read function with
   * ({@code sessionUUID} is ignored where Spark has none). */
  static MapInBatchEvaluatorFactory mapInBatchFactory(UserDefinedPythonDataSource source,
      byte[] pickledReadFunc, String funcName, StructType inputSchema, StructType outputSchema,
      Map<String, SQLMetric> metrics, Option<String> jobArtifactUUID,
      Option<String> sessionUUID) {
    return source.createMapInBatchEvaluatorFactory(pickledReadFunc, funcName, inputSchema,
        outputSchema, metrics, jobArtifactUUID, sessionUUID);
  }

  /** The name of the Python data source {@code table} reads, or null when it is none. */
  static String pythonSource(Table table) {
    return table instanceof PythonTable python ? python.name() : null;
  }

  /** The rule putting a catalog table's own options into its relation. */
  static UnaryOperator<LogicalPlan> catalogOptions(SparkSession session) {
    return new ListingCatalogOptions(session)::withCatalogOptions;
  }

  /** The session's state (Spark 4: on the classic session). */
  static SessionState sessionState(SparkSession session) {
    return ((org.apache.spark.sql.classic.SparkSession) session).sessionState();
  }

  /** {@code rel} with another output; every other field kept. */
  static LogicalRelation withOutput(LogicalRelation rel, List<AttributeReference> output) {
    return rel.copy(rel.relation(), Scala.list(output), rel.catalogTable(), rel.isStreaming(),
        rel.stream());
  }
}
