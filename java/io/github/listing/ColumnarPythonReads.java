package io.github.listing;

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.spark.ContextAwareIterator;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.InternalRow$;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.v2.python.PythonCustomMetric$;
import org.apache.spark.sql.execution.datasources.v2.python.PythonInputPartition;
import org.apache.spark.sql.execution.datasources.v2.python.PythonPartitionReaderFactory;
import org.apache.spark.sql.execution.datasources.v2.python.UserDefinedPythonDataSource;
import org.apache.spark.sql.execution.datasources.v2.python.UserDefinedPythonDataSource$;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.execution.python.MapInBatchEvaluatorFactory;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

import scala.Option;
import scala.collection.Iterator;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Hands a {@code listing} scan's Arrow batches to Spark as columnar batches, instead of rows.
 *
 * <p>WHY: Spark 4.3 reads a Python data source through {@code MapInBatchEvaluatorFactory},
 * whose Arrow runner yields {@link ColumnarBatch}es of {@link ArrowColumnVector}s and then turns
 * every row into an {@code UnsafeRow} one at a time, through an interpreted iterator: 45-75% of
 * a Parquet scan's time in the benchmark's profile. Spark's own Parquet reader hands columnar
 * batches to the plan, which reads them with generated code ({@code ColumnarToRow} fused into
 * whole-stage codegen). This factory runs the very same runner (the evaluator's own Arrow
 * runner, built from the same pickled read function) and returns its batches as they are, with
 * the struct column the runner wraps them in unwrapped into the scan's columns, exactly as the
 * evaluator does before it iterates rows.
 *
 * <p>Spark's classes are reached as they are laid out in 4.3 (the runner is an anonymous
 * subclass; the factory's fields are Scala's private vals). If any piece is not where it is
 * expected, or {@code spark.listing.columnarReads} is false, the scan reads rows through
 * Spark's own factory, as before: correctness never depends on this class.
 */
final class ColumnarPythonReads implements PartitionReaderFactory {

  static final String CONF = "spark.listing.columnarReads";

  private static final String PREFIX =
      "org$apache$spark$sql$execution$datasources$v2$python$PythonPartitionReaderFactory$$";
  private static final Constructor<?> EVALUATOR = evaluator();
  private static final Constructor<?> RUNNER = runner();

  private final PartitionReaderFactory rows;
  private final UserDefinedPythonDataSource source;
  private final byte[] pickledReadFunc;
  private final StructType outputSchema;
  private final Option<String> jobArtifactUUID;
  private final Option<String> sessionUUID;

  /** Reads what Spark's factory was built with (its private vals, see {@link #FIELDS}). */
  private ColumnarPythonReads(PartitionReaderFactory rows) throws ReflectiveOperationException {
    this.rows = rows;
    this.source = (UserDefinedPythonDataSource) FIELDS.get("source").get(rows);
    this.pickledReadFunc = (byte[]) FIELDS.get("pickledReadFunc").get(rows);
    this.outputSchema = (StructType) FIELDS.get("outputSchema").get(rows);
    @SuppressWarnings("unchecked")
    Option<String> job = (Option<String>) FIELDS.get("jobArtifactUUID").get(rows);
    Field sessionField = FIELDS.get("sessionUUID");  // absent before Spark 4.1
    @SuppressWarnings("unchecked")
    Option<String> session = sessionField == null ? Option.empty()
        : (Option<String>) sessionField.get(rows);
    this.jobArtifactUUID = job;
    this.sessionUUID = session;
  }

  private static final Map<String, Field> FIELDS = fields();

  private static Map<String, Field> fields() {
    Map<String, Field> out = new HashMap<>();
    for (String name : List.of("source", "pickledReadFunc", "outputSchema", "jobArtifactUUID",
        "sessionUUID")) {
      try {
        Field f = PythonPartitionReaderFactory.class.getDeclaredField(PREFIX + name);
        f.setAccessible(true);
        out.put(name, f);
      } catch (ReflectiveOperationException | RuntimeException e) {
        if (!name.equals("sessionUUID")) {  // Spark 4.0's factory has none
          return null;
        }
      }
    }
    return out;
  }

  /** Whether batch scans can be read as columnar batches here (Spark's classes as expected,
   * and {@link #CONF} not false). Decided before partitions are planned: Spark asks a scan
   * whether it is columnar while it prepares the physical plan. */
  static boolean available() {
    return EVALUATOR != null && RUNNER != null && FIELDS != null
        && "true".equalsIgnoreCase(SQLConf.get().getConfString(CONF, "true").trim());
  }

  /**
   * Spark's own factory, wrapped so that it can also read columnar batches (row reads still
   * go through it); as it is when it is not Spark's Python factory or its fields are not
   * where 4.3 keeps them.
   */
  static PartitionReaderFactory of(PartitionReaderFactory factory) {
    if (!(factory instanceof PythonPartitionReaderFactory) || FIELDS == null) {
      return factory;
    }
    try {
      return new ColumnarPythonReads(factory);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("listing: cannot read Spark's Python reader factory", e);
    }
  }

  private static final String EVALUATOR_CLASS =
      "org.apache.spark.sql.execution.python.MapInBatchEvaluatorFactory$MapInBatchEvaluator";

  /** The evaluator's constructor (a private inner class of its factory). */
  private static Constructor<?> evaluator() {
    try {
      Constructor<?> c = Class.forName(EVALUATOR_CLASS)
          .getDeclaredConstructor(MapInBatchEvaluatorFactory.class);
      c.setAccessible(true);
      return c;
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return null;
    }
  }

  /** The evaluator's Arrow runner (an anonymous subclass of ArrowPythonRunner). */
  private static Constructor<?> runner() {
    try {
      Class<?> evaluator = Class.forName(EVALUATOR_CLASS);
      Constructor<?> c = Class.forName(EVALUATOR_CLASS + "$$anon$1")
          .getDeclaredConstructor(evaluator, int[][].class);
      c.setAccessible(true);
      return c;
    } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
      return null;
    }
  }

  @Override
  public boolean supportColumnarReads(InputPartition partition) {
    return partition instanceof PythonInputPartition;
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    return rows.createReader(partition);
  }

  @Override
  public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
    return new Reader((PythonInputPartition) partition);
  }

  /**
   * A column of the runner's batch. WHY: {@code ColumnarToRow} calls {@code closeIfFreeable()}
   * on every batch it is done with, and closing an Arrow struct vector drops its children, so
   * the runner could not load its next batch into it; the runner owns and closes these vectors.
   */
  private static final class RunnerOwned extends ArrowColumnVector {
    RunnerOwned(org.apache.arrow.vector.ValueVector vector) {
      super(vector);
    }

    @Override
    public void closeIfFreeable() {
    }
  }

  /** One task's batches, from the evaluator's own Arrow runner. */
  private final class Reader implements PartitionReader<ColumnarBatch> {
    private final scala.collection.immutable.Map<String, SQLMetric> metrics =
        PythonCustomMetric$.MODULE$.pythonMetrics();
    private final Iterator<ColumnarBatch> batches;
    private ColumnarBatch current;

    Reader(PythonInputPartition partition) {
      MapInBatchEvaluatorFactory factory = SparkShim.mapInBatchFactory(source,
          pickledReadFunc, "read_from_data_source",
          UserDefinedPythonDataSource$.MODULE$.readInputSchema(), outputSchema, metrics,
          jobArtifactUUID, sessionUUID);
      Object runner;
      try {
        runner = RUNNER.newInstance(EVALUATOR.newInstance(factory), new int[][] {{0}});
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException("listing: cannot start the Python reader", e);
      }
      TaskContext context = TaskContext.get();
      // the input the evaluator builds: the pickled partition as a row, wrapped in a row
      InternalRow input = InternalRow$.MODULE$.apply(CollectionConverters.asScala(
          List.<Object>of(partition.pickedPartition())).toSeq());
      InternalRow wrapped = InternalRow$.MODULE$.apply(CollectionConverters.asScala(
          List.<Object>of(input)).toSeq());
      Iterator<InternalRow> rowsIn = new ContextAwareIterator<>(context,
          CollectionConverters.asScala(List.of(wrapped).iterator()));
      Iterator<Iterator<InternalRow>> groups =
          CollectionConverters.asScala(List.of(rowsIn).iterator());
      @SuppressWarnings("unchecked")
      Iterator<ColumnarBatch> out = ((org.apache.spark.sql.execution.python.ArrowPythonRunner)
          runner).compute(groups, context.partitionId(), context);
      this.batches = out;
    }

    @Override
    public boolean next() {
      if (!batches.hasNext()) {
        return false;
      }
      ColumnarBatch batch = batches.next();
      ArrowColumnVector struct = (ArrowColumnVector) batch.column(0);
      int n = outputSchema.fields().length;
      ColumnVector[] columns = new ColumnVector[n];
      for (int i = 0; i < n; i++) {
        columns[i] = new RunnerOwned(struct.getChild(i).getValueVector());
      }
      current = new ColumnarBatch(columns, batch.numRows());
      return true;
    }

    @Override
    public ColumnarBatch get() {
      return current;
    }

    @Override
    public void close() {
    }

    @Override
    public CustomTaskMetric[] currentMetricsValues() {
      Map<String, Object> values = new HashMap<>();
      for (Map.Entry<String, SQLMetric> e : CollectionConverters.asJava(metrics).entrySet()) {
        values.put(e.getKey(), e.getValue().value());
      }
      return source.createPythonTaskMetrics(
          scala.collection.immutable.Map.from(CollectionConverters.asScala(values)));
    }
  }
}
