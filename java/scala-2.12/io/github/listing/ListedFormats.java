package io.github.listing;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.execution.datasources.FileFormat;
import org.apache.spark.sql.execution.datasources.PartitionedFile;
import org.apache.spark.sql.execution.datasources.csv.CSVFileFormat;
import org.apache.spark.sql.execution.datasources.json.JsonFileFormat;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;

import scala.Function1;
import scala.collection.Iterator;
import scala.collection.immutable.Map;
import scala.collection.Seq;

/**
 * Spark's Parquet, CSV and JSON file formats, reading a handed-off S3 table's files with
 * their listed status ({@link ListedOpens}): each is Spark's own format (a subclass, so
 * every check Spark makes of the format holds), its reader function Spark's, given the
 * scan's configuration through {@link ListedOpens#prepare} and run per file through
 * {@link ListedOpens#reader}. The override names {@code buildReaderWithPartitionValues}'s
 * sequence type exactly: Scala 2.12's (Spark 3.5); one class of this name per Scala version.
 */
final class ListedFormats {

  private ListedFormats() {
  }

  /** {@code format} reading with listed statuses, or {@code format} itself when it is not
   * exactly one of Spark's three. */
  static FileFormat of(FileFormat format) {
    if (format.getClass() == ParquetFileFormat.class) {
      return new Parquet();
    }
    if (format.getClass() == CSVFileFormat.class) {
      return new Csv();
    }
    if (format.getClass() == JsonFileFormat.class) {
      return new Json();
    }
    return format;
  }

  /** Spark's Parquet format, opening files with their listed status. */
  static final class Parquet extends ParquetFileFormat {
    private static final long serialVersionUID = 1L;

    @Override
    public Function1<PartitionedFile, Iterator<InternalRow>> buildReaderWithPartitionValues(
        SparkSession session, StructType data, StructType partitions, StructType required,
        Seq<Filter> filters, Map<String, String> options, Configuration conf) {
      return ListedOpens.reader(super.buildReaderWithPartitionValues(session, data, partitions,
          required, filters, options, ListedOpens.prepare(conf)));
    }
  }

  /** Spark's CSV format, opening files with their listed status. */
  static final class Csv extends CSVFileFormat {
    private static final long serialVersionUID = 1L;

    @Override
    public Function1<PartitionedFile, Iterator<InternalRow>> buildReaderWithPartitionValues(
        SparkSession session, StructType data, StructType partitions, StructType required,
        Seq<Filter> filters, Map<String, String> options, Configuration conf) {
      return ListedOpens.reader(super.buildReaderWithPartitionValues(session, data, partitions,
          required, filters, options, ListedOpens.prepare(conf)));
    }
  }

  /** Spark's JSON format, opening files with their listed status. */
  static final class Json extends JsonFileFormat {
    private static final long serialVersionUID = 1L;

    @Override
    public Function1<PartitionedFile, Iterator<InternalRow>> buildReaderWithPartitionValues(
        SparkSession session, StructType data, StructType partitions, StructType required,
        Seq<Filter> filters, Map<String, String> options, Configuration conf) {
      return ListedOpens.reader(super.buildReaderWithPartitionValues(session, data, partitions,
          required, filters, options, ListedOpens.prepare(conf)));
    }
  }
}
