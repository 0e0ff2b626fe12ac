package io.github.listing;

import java.io.File;
import java.io.IOException;
import java.lang.reflect.Constructor;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.TaskAttemptID;
import org.apache.hadoop.mapreduce.TaskType;
import org.apache.hadoop.mapreduce.task.TaskAttemptContextImpl;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.execution.datasources.OutputWriter;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

import scala.Product;

/**
 * A listing write's tasks: Spark's Parquet writer writes a task's rows (sorted by partition,
 * {@link StagedParquetWrites}) as local files, one open at a time (a new one per partition
 * value and after {@code maxRecordsPerFile} rows; task 0 of an unpartitioned write writes
 * one even with no rows, so an empty table keeps its schema); then the task's Python writer
 * gets one row per file, its partition values then {@code _listing_staged_file} and {@code
 * _listing_staged_rows} (listing.spark.writer.STAGED_FILE), uploads each as the job's file
 * of that partition and returns the task's commit message. Invariant: every local file goes
 * when the task ends, whether it succeeded or not.
 */
final class StagedParquetWriter implements DataWriterFactory {

  private static final long serialVersionUID = 1L;

  /** The columns after the partition columns of the rows the Python writer gets. */
  static final String STAGED_FILE = "_listing_staged_file";
  static final String STAGED_ROWS = "_listing_staged_rows";

  private final DataWriterFactory python;
  private final StructType schema;
  private final int[] partitions;
  private final StagedParquetWrites.Factory parquet;
  private final long maxRecordsPerFile;

  /**
   * @param python the Python writer's factory (Spark's {@code PythonBatchWriterFactory}), its
   *     input schema replaced here by the staged files' rows
   * @param ordinals the partition columns' positions in {@code schema}
   */
  StagedParquetWriter(DataWriterFactory python, StructType schema, List<Integer> ordinals,
      StagedParquetWrites.Factory parquet, long maxRecordsPerFile)
      throws ReflectiveOperationException {
    this.schema = schema;
    this.partitions = ordinals.stream().mapToInt(Integer::intValue).toArray();
    this.python = withInput(python, stagedSchema(schema, partitions));
    this.parquet = parquet;
    this.maxRecordsPerFile = maxRecordsPerFile;
  }

  /** The partition columns, then the staged file's path and rows. */
  static StructType stagedSchema(StructType schema, int[] partitions) {
    List<StructField> out = new ArrayList<>();
    for (int i : partitions) {
      out.add(schema.fields()[i]);
    }
    out.add(DataTypes.createStructField(STAGED_FILE, DataTypes.StringType, false));
    out.add(DataTypes.createStructField(STAGED_ROWS, DataTypes.LongType, false));
    return DataTypes.createStructType(out);
  }

  /** The columns a file holds: all but the partition columns. */
  static StructType dataSchema(StructType schema, List<Integer> partitions) {
    List<StructField> out = new ArrayList<>();
    StructField[] fields = schema.fields();
    for (int i = 0; i < fields.length; i++) {
      if (!partitions.contains(i)) {
        out.add(fields[i]);
      }
    }
    return DataTypes.createStructType(out);
  }

  /** {@code factory} (a case class) rebuilt with {@code input} for its StructType field. */
  private static DataWriterFactory withInput(DataWriterFactory factory, StructType input)
      throws ReflectiveOperationException {
    Product product = (Product) factory;
    Constructor<?>[] constructors = factory.getClass().getConstructors();
    if (constructors.length != 1 || constructors[0].getParameterCount()
        != product.productArity()) {
      throw new NoSuchMethodException(factory.getClass().getName() + ": no single constructor");
    }
    Object[] args = new Object[product.productArity()];
    int swapped = 0;
    for (int i = 0; i < args.length; i++) {
      args[i] = product.productElement(i);
      if (args[i] instanceof StructType) {
        args[i] = input;
        swapped++;
      }
    }
    if (swapped != 1) {
      throw new NoSuchFieldException(factory.getClass().getName() + ": no single schema");
    }
    return (DataWriterFactory) constructors[0].newInstance(args);
  }

  @Override
  public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
    return new Task(python.createWriter(partitionId, taskId), partitionId);
  }

  /** One task: local Parquet files, then the Python writer's upload of them. */
  private final class Task implements DataWriter<InternalRow> {
    private final DataWriter<InternalRow> python;
    private final int partitionId;
    private final List<File> files = new ArrayList<>();

    Task(DataWriter<InternalRow> python, int partitionId) {
      this.python = python;
      this.partitionId = partitionId;
    }

    @Override
    public void write(InternalRow row) {
      throw new UnsupportedOperationException("a listing write takes a task's rows at once");
    }

    /**
     * The Python writer's rows, written when it first asks for one: Spark starts the Python
     * worker (and it imports our writer) before it reads its input, so that start overlaps
     * Spark's encoding of the files instead of following it.
     */
    @Override
    public void writeAll(Iterator<InternalRow> rows) throws IOException {
      Iterator<InternalRow> staged = new Iterator<InternalRow>() {
        private Iterator<InternalRow> written;

        @Override
        public boolean hasNext() {
          if (written == null) {
            try {
              written = writeFiles(rows).iterator();
            } catch (IOException e) {
              throw new java.io.UncheckedIOException(e);
            }
          }
          return written.hasNext();
        }

        @Override
        public InternalRow next() {
          if (!hasNext()) {
            throw new java.util.NoSuchElementException();
          }
          return written.next();
        }
      };
      try {
        python.writeAll(staged);
      } finally {
        for (File f : files) {
          f.delete();
        }
      }
    }

    /** The task's rows as local files: one staged row for each. */
    private List<InternalRow> writeFiles(Iterator<InternalRow> rows) throws IOException {
      Configuration conf = new Configuration(parquet.conf().value());
      TaskContext ctx = TaskContext.get();
      TaskAttemptContextImpl context = new TaskAttemptContextImpl(conf, new TaskAttemptID(
          "listing", ctx == null ? 0 : ctx.stageId(), TaskType.MAP, partitionId,
          ctx == null ? 0 : ctx.attemptNumber()));
      StructType data = dataSchema(schema, java.util.Arrays.stream(partitions).boxed().toList());
      UnsafeProjection key = UnsafeProjection.create(references(partitions));
      UnsafeProjection values = partitions.length == 0 ? null
          : UnsafeProjection.create(references(dataOrdinals()));
      List<InternalRow> staged = new ArrayList<>();
      OutputWriter out = null;
      UnsafeRow current = null;
      long written = 0;
      try {
        while (rows.hasNext()) {
          InternalRow row = rows.next();
          UnsafeRow rowKey = key.apply(row);
          if (out == null || !rowKey.equals(current)
              || (maxRecordsPerFile > 0 && written >= maxRecordsPerFile)) {
            if (out != null) {
              out.close();
              staged.add(stagedRow(current, written));
            }
            current = rowKey.copy();
            out = open(data, context);
            written = 0;
          }
          out.write(values == null ? row : values.apply(row));
          written++;
        }
        if (out == null && partitions.length == 0 && partitionId == 0) {
          current = key.apply(new GenericInternalRow(0));
          out = open(data, context);  // an empty table keeps its schema
        }
        if (out != null) {
          OutputWriter last = out;
          out = null;
          last.close();
          staged.add(stagedRow(current, written));
        }
      } finally {
        if (out != null) {
          try {
            out.close();
          } catch (RuntimeException e) {
            // the error that stopped the task is the one raised
          }
        }
      }
      return staged;
    }

    private OutputWriter open(StructType data, TaskAttemptContextImpl context) {
      File file = new File(SparkEnv.get().blockManager().diskBlockManager()
          .createTempLocalBlock()._2().getPath() + ".parquet");
      files.add(file);
      return parquet.files().newInstance(file.toURI().toString(), data, context);
    }

    /** The Python writer's row for the file just closed (the last of {@link #files}). */
    private InternalRow stagedRow(UnsafeRow key, long rows) {
      Object[] row = new Object[partitions.length + 2];
      for (int i = 0; i < partitions.length; i++) {
        DataType type = schema.fields()[partitions[i]].dataType();
        row[i] = key.isNullAt(i) ? null : key.get(i, type);
      }
      row[partitions.length] = UTF8String.fromString(files.get(files.size() - 1).getPath());
      row[partitions.length + 1] = rows;
      return new GenericInternalRow(row);
    }

    private int[] dataOrdinals() {
      List<Integer> parts = java.util.Arrays.stream(partitions).boxed().toList();
      List<Integer> out = new ArrayList<>();
      for (int i = 0; i < schema.fields().length; i++) {
        if (!parts.contains(i)) {
          out.add(i);
        }
      }
      return out.stream().mapToInt(Integer::intValue).toArray();
    }

    private scala.collection.immutable.Seq<Expression> references(int[] ordinals) {
      List<Expression> out = new ArrayList<>();
      for (int i : ordinals) {
        StructField f = schema.fields()[i];
        out.add(new BoundReference(i, f.dataType(), f.nullable()));
      }
      return Scala.list(out);
    }

    @Override
    public WriterCommitMessage commit() throws IOException {
      return python.commit();
    }

    @Override
    public void abort() throws IOException {
      python.abort();
    }

    @Override
    public void close() throws IOException {
      python.close();
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
      return python.currentMetricsValues();
    }
  }
}
