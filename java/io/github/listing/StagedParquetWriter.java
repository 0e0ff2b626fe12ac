package io.github.listing;

import java.io.File;
import java.io.IOException;
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
  /** The positions in {@code schema} of the columns a file holds: all but the partitions. */
  private final int[] data;
  /** The schema of a file: {@link #data}'s columns. */
  private final StructType fileSchema;
  private final StagedParquetWrites.Factory parquet;
  private final long maxRecordsPerFile;

  /**
   * @param python the Python writer's factory (Spark's {@code PythonBatchWriterFactory}) over
   *     rows of {@link #stagedSchema}
   * @param ordinals the partition columns' positions in {@code schema}
   */
  StagedParquetWriter(DataWriterFactory python, StructType schema, List<Integer> ordinals,
      StagedParquetWrites.Factory parquet, long maxRecordsPerFile) {
    this.python = python;
    this.schema = schema;
    this.partitions = ordinals.stream().mapToInt(Integer::intValue).toArray();
    this.data = dataOrdinals(schema, ordinals);
    this.fileSchema = dataSchema(schema, ordinals);
    this.parquet = parquet;
    this.maxRecordsPerFile = maxRecordsPerFile;
  }

  /** The partition columns, then the staged file's path and rows. */
  static StructType stagedSchema(StructType schema, List<Integer> partitions) {
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
    for (int i : dataOrdinals(schema, partitions)) {
      out.add(schema.fields()[i]);
    }
    return DataTypes.createStructType(out);
  }

  private static int[] dataOrdinals(StructType schema, List<Integer> partitions) {
    return java.util.stream.IntStream.range(0, schema.fields().length)
        .filter(i -> !partitions.contains(i)).toArray();
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
      UnsafeProjection key = UnsafeProjection.create(references(partitions));
      UnsafeProjection values = partitions.length == 0 ? null
          : UnsafeProjection.create(references(data));
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
            out = open(context);
            written = 0;
          }
          out.write(values == null ? row : values.apply(row));
          written++;
        }
        if (out == null && partitions.length == 0 && partitionId == 0) {
          current = key.apply(new GenericInternalRow(0));
          out = open(context);  // an empty table keeps its schema
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

    private OutputWriter open(TaskAttemptContextImpl context) {
      File file = new File(SparkEnv.get().blockManager().diskBlockManager()
          .createTempLocalBlock()._2().getPath() + ".parquet");
      files.add(file);
      return parquet.files().newInstance(file.toURI().toString(), fileSchema, context);
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
