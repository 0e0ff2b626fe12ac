package io.github.listing;

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.Job;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Ascending$;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.NullsFirst$;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.catalyst.plans.logical.AppendData;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.OverwriteByExpression;
import org.apache.spark.sql.catalyst.plans.logical.Sort;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.SparkStrategy;
import org.apache.spark.sql.execution.datasources.OutputWriterFactory;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Strategy;
import org.apache.spark.sql.execution.datasources.v2.python.PythonBatchWriterFactory;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.PythonWrite;
import org.apache.spark.sql.execution.datasources.v2.python.PythonWriterCommitMessage;
import org.apache.spark.sql.execution.datasources.v2.python.UserDefinedPythonDataSource;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;

import scala.Option;
import scala.collection.immutable.Seq;

/**
 * The planner strategy that runs a {@code listing} batch write's job in the driver's Python
 * process and, for Parquet, has Spark's own Parquet writer write its files in the tasks
 * ({@link StagedParquetWriter}), where Spark would start a Python worker to set the job up
 * and another to commit it, and our Python writer would be handed every row converted to
 * Arrow and encode Parquet again. The Python task then only uploads the finished files, and
 * the job commits them as any of its files (manifest, publish, recovery unchanged).
 *
 * <p>It matches an {@code AppendData} or {@code OverwriteByExpression} whose write is a
 * listing {@code PythonWrite} (V2Writes built it from the options Python gets), asks the
 * planner which columns the write partitions by ({@code stagedOrder}: the options' one
 * parser, no request), sorts the query's rows by them within each task (as Spark's own file
 * writers do) and wraps the write. When the write runs, the planner sets the job up as
 * Spark's planning worker would ({@code stagedSetup}: the source's writer, an existing
 * table's partition columns included, and the function its tasks run) and commits it
 * ({@code stagedCommit}). Our Python writer writes the rows where the job differs from the
 * plan, for another format or its options, or a column type Spark's Parquet writer does not
 * write as ours. Spark's own path runs the job where the planner's set-up fails (and raises
 * its error), with no planner (Spark Connect), or with {@link #CONF} false.
 *
 * <p>WHY a strategy: V2Writes runs in the optimizer after every rule an extension can inject
 * there, and the physical write takes the logical node's {@code Write}; a strategy sees
 * both, then hands the node to Spark's own {@link DataSourceV2Strategy}.
 */
public final class StagedParquetWrites extends SparkStrategy {

  /** The session conf that, false, leaves every write to Spark's Python data source path. */
  static final String CONF = "spark.listing.sparkParquetWrites";

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final org.slf4j.Logger LOG =
      org.slf4j.LoggerFactory.getLogger(StagedParquetWrites.class);

  private final SparkSession session;

  public StagedParquetWrites(SparkSession session) {
    this.session = session;
  }

  @Override
  public Seq<SparkPlan> apply(LogicalPlan plan) {
    LogicalPlan staged = staged(plan);
    if (staged == null) {
      return Scala.list(List.of());
    }
    return new DataSourceV2Strategy((org.apache.spark.sql.classic.SparkSession) session)
        .apply(staged);
  }

  /** {@code plan} with its listing write wrapped (its rows sorted by partition when Spark's
   * Parquet writer writes them), or null. */
  LogicalPlan staged(LogicalPlan plan) {
    Option<Write> write;
    LogicalPlan query;
    if (plan instanceof AppendData append) {
      write = append.write();
      query = append.query();
    } else if (plan instanceof OverwriteByExpression overwrite) {
      write = overwrite.write();
      query = overwrite.query();
    } else {
      return null;
    }
    if (write.isEmpty() || !(write.get() instanceof PythonWrite python)
        || !python.toString().toLowerCase(Locale.ROOT).startsWith(ListingColumnPruning.SOURCE)) {
      return null;
    }
    ListingFileIndex.Planner planner = ListingFileIndex.planner();
    if (planner == null
        || !"true".equalsIgnoreCase(SQLConf.get().getConfString(CONF, "true").trim())) {
      return null;
    }
    try {
      LogicalWriteInfo info = (LogicalWriteInfo) field(python, "info");
      boolean truncate = (Boolean) field(python, "isTruncate");
      StructType schema = info.schema();
      String optionsJson = JSON.writeValueAsString(info.options().asCaseSensitiveMap());
      String unsupported = unsupported(schema);
      JsonNode order = unsupported != null ? null : ListingFileIndex.answer(
          planner.stagedOrder(optionsJson, schema.json(), truncate));
      boolean stage = order != null && !order.hasNonNull("not_staged");
      if (!stage) {
        LOG.debug("listing: Python writes the rows: "
            + (order == null ? unsupported : order.get("not_staged").asText()));
      }
      List<String> partitionBy = stage ? names(order.get("partition_by")) : List.of();
      List<Integer> ordinals = new ArrayList<>();
      for (String name : partitionBy) {
        ordinals.add(schema.fieldIndex(name));
      }
      List<Attribute> output = Scala.java(query.output());
      List<SortOrder> sortBy = new ArrayList<>();
      for (int i : ordinals) {
        sortBy.add(new SortOrder(output.get(i), Ascending$.MODULE$, NullsFirst$.MODULE$,
            Scala.list(List.<Expression>of())));
      }
      LogicalPlan sorted = sortBy.isEmpty() ? query
          : new Sort(Scala.list(sortBy), false, query, Option.empty());
      Option<Write> wrapped = Option.apply(
          new Staged(python, schema, stage, ordinals, partitionBy, session, optionsJson,
              truncate));
      Object[] args = new Object[plan.productArity()];
      for (int i = 0; i < args.length; i++) {
        Object arg = plan.productElement(i);
        args[i] = arg == query ? sorted : arg == write ? wrapped : arg;
      }
      return (LogicalPlan) plan.makeCopy(args);
    } catch (ReflectiveOperationException | RuntimeException
        | com.fasterxml.jackson.core.JsonProcessingException e) {
      LOG.debug("listing: Spark plans the write (" + e + ")");  // its own path raises
      return null;
    }
  }

  /** Why Spark's Parquet writer cannot write {@code schema} as our writer would, or null. */
  static String unsupported(StructType schema) {
    ParquetFileFormat parquet = new ParquetFileFormat();
    for (StructField f : schema.fields()) {
      if (!writable(f.dataType()) || !parquet.supportDataType(f.dataType())) {
        return "column " + f.name() + " of type " + f.dataType().simpleString();
      }
    }
    return null;
  }

  /** The types both writers write alike: atomic ones, and arrays, maps, structs of them. */
  private static boolean writable(DataType type) {
    if (type instanceof ArrayType array) {
      return writable(array.elementType());
    }
    if (type instanceof MapType map) {
      return writable(map.keyType()) && writable(map.valueType());
    }
    if (type instanceof StructType struct) {
      for (StructField f : struct.fields()) {
        if (!writable(f.dataType())) {
          return false;
        }
      }
      return true;
    }
    return type instanceof DecimalType || type.equals(DataTypes.StringType)
        || type.equals(DataTypes.BooleanType) || type.equals(DataTypes.ByteType)
        || type.equals(DataTypes.ShortType) || type.equals(DataTypes.IntegerType)
        || type.equals(DataTypes.LongType) || type.equals(DataTypes.FloatType)
        || type.equals(DataTypes.DoubleType) || type.equals(DataTypes.BinaryType)
        || type.equals(DataTypes.DateType) || type.equals(DataTypes.TimestampType)
        || type.equals(DataTypes.TimestampNTZType);
  }

  private static List<String> names(JsonNode array) {
    List<String> out = new ArrayList<>();
    if (array != null) {
      array.forEach(n -> out.add(n.asText()));
    }
    return out;
  }

  /** The private field {@code name} of {@code target} (Spark's Python write classes). */
  static Object field(Object target, String name) throws ReflectiveOperationException {
    for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
      for (Field f : c.getDeclaredFields()) {
        if (f.getName().equals(name) || f.getName().endsWith("$$" + name)) {
          f.setAccessible(true);
          return f.get(target);
        }
      }
    }
    throw new NoSuchFieldException(target.getClass().getName() + "." + name);
  }

  /** A listing {@code PythonWrite} run by the planner, its rows written by Spark's Parquet
   * writer when {@code stage}. */
  static final class Staged implements Write {
    private final PythonWrite python;
    private final StructType schema;
    private final List<Integer> ordinals;
    private final List<String> partitionBy;
    private final SparkSession session;
    private final String optionsJson;
    private final boolean truncate;

    /** Whether Spark's Parquet writer may write the rows (else our Python writer does). */
    private final boolean stage;

    Staged(PythonWrite python, StructType schema, boolean stage, List<Integer> ordinals,
        List<String> partitionBy, SparkSession session, String optionsJson, boolean truncate) {
      this.python = python;
      this.stage = stage;
      this.optionsJson = optionsJson;
      this.truncate = truncate;
      this.schema = schema;
      this.ordinals = ordinals;
      this.partitionBy = partitionBy;
      this.session = session;
    }

    @Override
    public String toString() {
      return python.toString();
    }

    @Override
    public String description() {
      return python.description();
    }

    @Override
    public CustomMetric[] supportedCustomMetrics() {
      return python.supportedCustomMetrics();
    }

    @Override
    public CustomTaskMetric[] reportDriverMetrics() {
      return python.reportDriverMetrics();
    }

    @Override
    public StreamingWrite toStreaming() {
      return python.toStreaming();
    }

    @Override
    public BatchWrite toBatch() {
      return new StagedBatch(python.toBatch(), this);
    }
  }

  /**
   * The Python batch write, set up and committed in the driver's Python process (the
   * planner's), its tasks' writer factory staged when the job it resolved allows it. Where
   * the planner's set-up fails (a bad option, no planner), Spark's own path runs, with its
   * planning and commit workers, and raises the error as it would.
   */
  static final class StagedBatch implements BatchWrite {
    private final BatchWrite python;
    private final Staged write;
    /** The pickled writer the planner set up (null: Spark's own path runs the job). */
    private byte[] writer;

    StagedBatch(BatchWrite python, Staged write) {
      this.python = python;
      this.write = write;
    }

    @Override
    public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
      ListingFileIndex.Planner planner = ListingFileIndex.planner();
      if (planner == null) {
        return python.createBatchWriterFactory(info);
      }
      try {
        UserDefinedPythonDataSource source =
            ((PythonDataSourceV2) field(python, "ds")).source();
        List<Object> command = Scala.java(source.dataSourceCls().command());
        byte[] cls = new byte[command.size()];
        for (int i = 0; i < cls.length; i++) {
          cls[i] = (Byte) command.get(i);
        }
        Base64.Encoder b64 = Base64.getEncoder();
        JsonNode setup = ListingFileIndex.answer(planner.stagedSetup(b64.encodeToString(cls),
            write.python.toString(), write.optionsJson, write.schema.json(), write.truncate,
            UserDefinedPythonDataSource.writeOutputSchema().json()));
        Base64.Decoder d64 = Base64.getDecoder();
        byte[] func = d64.decode(setup.get("command").asText());
        boolean staged = write.stage && !setup.hasNonNull("not_staged")
            && names(setup.get("partition_by")).equals(write.partitionBy);
        if (write.stage && !staged) {
          LOG.debug("listing: Python writes the rows: " + (setup.hasNonNull("not_staged")
              ? setup.get("not_staged").asText() : "the job partitions by "
              + setup.get("partition_by") + ", not by " + write.partitionBy));
        }
        DataWriterFactory factory = pythonFactory(source, func, staged
            ? StagedParquetWriter.stagedSchema(write.schema, write.ordinals) : write.schema);
        writer = d64.decode(setup.get("writer").asText());
        if (!staged) {
          return factory;
        }
        return new StagedParquetWriter(factory, write.schema, write.ordinals,
            parquetConf(setup.get("compression").asText()),
            setup.get("max_records_per_file").asLong());
      } catch (ReflectiveOperationException | RuntimeException e) {
        LOG.debug("listing: Spark's planning worker sets the write up (" + e + ")");
        writer = null;
        return python.createBatchWriterFactory(info);
      }
    }

    /** Spark's factory of Python writer tasks running {@code func} over rows of {@code
     * input}, with this write's job artifact (and, where Spark has one, session) id. */
    private DataWriterFactory pythonFactory(UserDefinedPythonDataSource source, byte[] func,
        StructType input) throws ReflectiveOperationException {
      Constructor<?>[] constructors = PythonBatchWriterFactory.class.getConstructors();
      if (constructors.length != 1) {
        throw new NoSuchMethodException("PythonBatchWriterFactory: no single constructor");
      }
      Class<?>[] params = constructors[0].getParameterTypes();
      Object[] args = new Object[params.length];
      args[0] = source;
      args[1] = func;
      args[2] = input;
      args[3] = field(python, "jobArtifactUUID");
      if (args.length == 5) {
        args[4] = field(python, "sessionUUID");
      } else if (args.length != 4) {
        throw new NoSuchMethodException("PythonBatchWriterFactory: " + args.length
            + " arguments");
      }
      return (DataWriterFactory) constructors[0].newInstance(args);
    }

    /** Spark's Parquet writer's settings for the data columns, as our writer writes. */
    private Factory parquetConf(String compression) {
      StructType data = StagedParquetWriter.dataSchema(write.schema, write.ordinals);
      try {
        Job job = Job.getInstance(SparkShim.sessionState(write.session).newHadoopConf());
        Map<String, String> options = new HashMap<>();
        options.put("compression", compression);
        OutputWriterFactory files = new ParquetFileFormat().prepareWrite(write.session, job,
            Scala.map(options), data);
        Configuration conf = job.getConfiguration();
        // our Parquet: INT64 microsecond timestamps (never INT96), proleptic dates as they
        // are, standard (non-legacy) decimals and lists; local files with no checksum file
        conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS");
        conf.set("spark.sql.parquet.datetimeRebaseModeInWrite", "CORRECTED");
        conf.set("spark.sql.parquet.int96RebaseModeInWrite", "CORRECTED");
        conf.set("spark.sql.parquet.writeLegacyFormat", "false");
        conf.set("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem");
        conf.set("fs.file.impl.disable.cache", "true");
        return new Factory(files, new SerializableConfiguration(conf));
      } catch (java.io.IOException e) {
        throw new IllegalStateException("listing: cannot set up Spark's Parquet writer", e);
      }
    }

    @Override
    public boolean useCommitCoordinator() {
      return python.useCommitCoordinator();
    }

    @Override
    public void onDataWriterCommit(WriterCommitMessage message) {
      python.onDataWriterCommit(message);
    }

    /** The job's commit in the driver's Python process, where the planner set it up. */
    @Override
    public void commit(WriterCommitMessage[] messages) {
      if (writer == null) {
        python.commit(messages);
      } else {
        inDriver(messages, false);
      }
    }

    @Override
    public void abort(WriterCommitMessage[] messages) {
      if (writer == null) {
        python.abort(messages);
      } else {
        inDriver(messages, true);
      }
    }

    private void inDriver(WriterCommitMessage[] messages, boolean abort) {
      ListingFileIndex.Planner planner = ListingFileIndex.planner();
      if (planner == null) {
        throw new IllegalStateException("listing: the planner that set the write up is gone");
      }
      Base64.Encoder b64 = Base64.getEncoder();
      List<String> pickled = new ArrayList<>();
      for (WriterCommitMessage m : messages) {
        pickled.add(m instanceof PythonWriterCommitMessage python
            ? b64.encodeToString(python.pickledMessage()) : null);
      }
      ListingFileIndex.answer(planner.stagedCommit(b64.encodeToString(writer),
          pickled.toArray(new String[0]), abort));
    }
  }

  /** Spark's Parquet file factory and the Hadoop settings its tasks open files with. */
  record Factory(OutputWriterFactory files, SerializableConfiguration conf)
      implements java.io.Serializable {
  }

}
