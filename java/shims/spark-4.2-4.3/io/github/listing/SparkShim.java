package io.github.listing;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.execution.datasources.DataSource;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.python.UserDefinedPythonDataSource;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.execution.python.MapInBatchEvaluatorFactory;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

import scala.Option;
import scala.collection.immutable.Map;
import scala.collection.immutable.Seq;

/**
 * The calls whose signatures differ between Spark lines, for Spark 4.2.x and 4.3.x.
 *
 * <p>One class of this name per line under {@code java/shims/}; a jar holds the common sources
 * and exactly one of them, compiled against that line's Spark (listing/spark/lines.py), so the
 * compiler finds the next API change.
 */
final class SparkShim {

  /** The Spark line this jar was compiled for. */
  static final String LINE = "spark-4.2-4.3";

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
        DataSource.apply$default$6(), options, DataSource.apply$default$8(),
        DataSource.apply$default$9());
  }

  /** The relation {@code ds} resolves to, with Spark's default arguments. */
  static BaseRelation resolveRelation(DataSource ds) {
    return ds.resolveRelation(ds.resolveRelation$default$1(), ds.resolveRelation$default$2(),
        ds.resolveRelation$default$3());
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
}
