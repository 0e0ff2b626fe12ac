package io.github.listing;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.execution.streaming.Source;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.CreatableRelationProvider;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.sources.RelationProvider;
import org.apache.spark.sql.sources.SchemaRelationProvider;
import org.apache.spark.sql.sources.StreamSourceProvider;
import org.apache.spark.sql.types.StructType;

import scala.Option;
import scala.Tuple2;
import scala.collection.immutable.Map;

/**
 * The {@code listing} source of Spark 3.5 ({@code spark.read.format("listing")},
 * {@code CREATE TABLE ... USING listing}): Spark 3.5 has no Python data sources, so the name
 * is this JVM source, registered by this jar's {@code META-INF/services} file (Spark 4's jars
 * register none: there the name is the Python source). A read is Spark's own file source for
 * the table's format over {@link ListingFileIndex}, whose files come from our planner in the
 * driver's Python ({@link ListingNativeEngine#fileRelation}); the schema is the user's or our
 * planner's. Streams and writes are refused in one line naming what to use instead.
 */
public final class ListingRelationProvider implements DataSourceRegister, RelationProvider,
    SchemaRelationProvider, CreatableRelationProvider, StreamSourceProvider {

  @Override
  public String shortName() {
    return "listing";
  }

  @Override
  public BaseRelation createRelation(SQLContext context, Map<String, String> parameters) {
    return relation(context, parameters, null);
  }

  @Override
  public BaseRelation createRelation(SQLContext context, Map<String, String> parameters,
      StructType schema) {
    return relation(context, parameters, schema);
  }

  private static BaseRelation relation(SQLContext context, Map<String, String> parameters,
      StructType schema) {
    try {
      return ListingNativeEngine.fileRelation(context.sparkSession(), Scala.java(parameters),
          schema);
    } catch (ListingNativeEngine.NotNative why) {
      String text = why.getMessage();
      if (text.startsWith("format ")) {  // ours only, or registered from Python
        text += "; read it with ListingTable.to_spark(...) instead";
      }
      throw new IllegalArgumentException("listing source on Spark " + context.sparkSession()
          .version() + ": " + text);
    }
  }

  @Override
  public BaseRelation createRelation(SQLContext context, SaveMode mode,
      Map<String, String> parameters, Dataset<Row> data) {
    throw new UnsupportedOperationException("df.write.format(\"listing\") needs Spark 4's "
        + "Python data source API, which Spark " + context.sparkSession().version()
        + " lacks: write with listing.write_spark(df, path, ...)");
  }

  @Override
  public Tuple2<String, StructType> sourceSchema(SQLContext context, Option<StructType> schema,
      String providerName, Map<String, String> parameters) {
    throw noStreams(context);
  }

  @Override
  public Source createSource(SQLContext context, String metadataPath,
      Option<StructType> schema, String providerName, Map<String, String> parameters) {
    throw noStreams(context);
  }

  private static UnsupportedOperationException noStreams(SQLContext context) {
    return new UnsupportedOperationException("spark.readStream.format(\"listing\") needs "
        + "Spark 4's Python streaming data source API, which Spark "
        + context.sparkSession().version() + " lacks: use Spark 4.x for streams");
  }
}
