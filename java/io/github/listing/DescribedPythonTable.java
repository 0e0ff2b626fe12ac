package io.github.listing;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.Statistics;
import org.apache.spark.sql.connector.read.partitioning.Partitioning;
import org.apache.spark.sql.connector.read.SupportsReportPartitioning;
import org.apache.spark.sql.connector.read.SupportsReportStatistics;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.streaming.ContinuousStream;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.PythonInputPartition;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.internal.connector.SupportsMetadata;
import org.apache.spark.sql.sources.Filter;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A {@code listing} table whose scans say what they prune: the table's path and the filters
 * the source applied exactly while listing, in Spark's own one-line scan description
 * ({@code BatchScan listing[...] (Python) s3://lake/events/ PartitionFilters: [...]}).
 *
 * <p>WHY: a Python data source's scan describes itself as "(Python)" only, so the partition
 * filters it consumed vanish from {@code df.explain()}. Everything is delegated to Spark's own
 * Python scan builder and scan; only the description (and the formatted explain's metadata)
 * gain what the source kept. Filters the source hands back are still shown by Spark as filters
 * above the scan, as before.
 *
 * <p>Once Spark has planned the scan's partitions (when the query runs; {@code df.explain()}
 * after an action shows the final plan), the description also says how many files the listing
 * chose, its LIST requests and its listing plan. WHY read them from the first
 * partition's bytes: the plan lives in the Python planning worker, which hands the JVM only
 * pickled partitions; {@code listing.spark.reader} puts a summary string between the
 * registry's summary and end marks ({@link OptionRegistry#summaryMark}, Python's
 * {@code listing.options.registry.PARTITION_MARKS}) in the first one, and a pickled str is
 * its UTF-8 bytes.
 *
 * <p>Scans also report their size to Spark's optimizer, as Spark's own file scans do: the
 * listed files' bytes, scaled by the share of the row the query reads. WHY: a Python source's
 * size is otherwise unknown (Spark assumes {@code spark.sql.defaultSizeInBytes}), so a small
 * table was never broadcast in a join. The size is known only once the listing ran, so asking
 * for it plans the scan's partitions at optimization time (Spark's file source lists when its
 * relation is created); the first {@code toBatch()} then reuses that planned batch, so one
 * query lists once.
 *
 * <p>With the {@code key_grouped} option the scan also reports the key-grouped partitioning
 * its partitions state ({@link KeyGroupedScans}); that too is decided from the partitions
 * planned at optimization time.
 */
final class DescribedPythonTable extends PythonTable {

  /** The UTF-8 text between {@code mark} and the next {@code end} byte in pickled partition
   * bytes (a pickled str is its UTF-8 bytes), or null when the mark or the end is missing. */
  static String between(byte[] bytes, String mark, byte end) {
    byte[] m = mark.getBytes(StandardCharsets.UTF_8);
    outer:
    for (int i = 0; i + m.length <= bytes.length; i++) {
      for (int j = 0; j < m.length; j++) {
        if (bytes[i + j] != m[j]) {
          continue outer;
        }
      }
      int start = i + m.length;
      for (int stop = start; stop < bytes.length; stop++) {
        if (bytes[stop] == end) {
          return new String(bytes, start, stop - start, StandardCharsets.UTF_8);
        }
      }
      return null;
    }
    return null;
  }

  /** The table's schema before column pruning narrowed it: the width a file's bytes hold. */
  private final StructType fullSchema;

  DescribedPythonTable(PythonDataSourceV2 ds, String shortName, StructType schema,
      StructType fullSchema) {
    super(ds, shortName, schema);
    this.fullSchema = fullSchema;
  }

  /** The schema a table's files hold, whether or not the table was narrowed. */
  static StructType fullSchemaOf(PythonTable table) {
    return table instanceof DescribedPythonTable
        ? ((DescribedPythonTable) table).fullSchema
        : table.schema();
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    ScanBuilder inner = super.newScanBuilder(options);
    if (!(inner instanceof SupportsPushDownFilters)) {
      return inner;
    }
    OptionRegistry registry = OptionRegistry.ofActive();
    return new Builder((SupportsPushDownFilters) inner, options.get("path"), fullSchema,
        registry, KeyGroupedScans.requested(options, registry));
  }

  /** Delegates push-down, remembering the filters the source kept (not handed back). */
  static final class Builder implements SupportsPushDownFilters {
    private final SupportsPushDownFilters inner;
    private final String path;
    private final StructType fullSchema;
    private final OptionRegistry registry;  // null: no marks to read (no listing source)
    private final boolean keyGrouped;
    private Filter[] kept = new Filter[0];

    Builder(SupportsPushDownFilters inner, String path, StructType fullSchema,
        OptionRegistry registry, boolean keyGrouped) {
      this.inner = inner;
      this.path = path;
      this.fullSchema = fullSchema;
      this.registry = registry;
      this.keyGrouped = keyGrouped;
    }

    @Override
    public Filter[] pushFilters(Filter[] filters) {
      Filter[] rest = inner.pushFilters(filters);
      List<Filter> handedBack = Arrays.asList(rest);
      List<Filter> exact = new ArrayList<>();
      for (Filter f : filters) {
        if (!handedBack.contains(f)) {
          exact.add(f);
        }
      }
      kept = exact.toArray(new Filter[0]);
      return rest;
    }

    @Override
    public Filter[] pushedFilters() {
      return inner.pushedFilters();
    }

    @Override
    public Scan build() {
      return new Described(inner.build(), path, kept, fullSchema, registry, keyGrouped);
    }
  }

  /** Spark's Python scan with a description naming the path and the filters kept. */
  static final class Described
      implements Scan, SupportsMetadata, SupportsReportStatistics, SupportsReportPartitioning {
    private static final Pattern BYTES = Pattern.compile("\\(([0-9,]+) bytes\\)");

    private final Scan inner;
    private final String extra;
    private final StructType fullSchema;
    private final boolean keyGrouped;  // the key_grouped option: report partition keys
    private final OptionRegistry registry;  // the marks in the partitions' bytes (or null)
    private volatile String planned = "";  // what planning chose, once it has run
    private Batch plannedEarly;  // planned at optimization; handed to the first toBatch()
    private InputPartition[] earlyParts;
    private Statistics statistics;
    private Partitioning partitioning;
    private volatile boolean streaming;  // a stream's scan: its reader factory is Spark's

    Described(Scan inner, String path, Filter[] kept, StructType fullSchema,
        OptionRegistry registry, boolean keyGrouped) {
      this.inner = inner;
      this.fullSchema = fullSchema;
      this.registry = registry;
      this.keyGrouped = keyGrouped;
      StringBuilder text = new StringBuilder();
      if (path != null) {
        text.append(' ').append(path);
      }
      text.append(" PartitionFilters: ").append(Arrays.toString(kept));
      this.extra = text.toString();
    }

    @Override
    public StructType readSchema() {
      return inner.readSchema();
    }

    @Override
    public String description() {
      return inner.description() + extra + planned;
    }

    @Override
    public synchronized Statistics estimateStatistics() {
      if (statistics == null) {
        InputPartition[] parts = planEarly();
        statistics = sized(parts.length == 0 ? OptionalLong.of(0) : bytesOf(planned));
      }
      return statistics;
    }

    /** The partitions, planned once at optimization time (statistics, partitioning). */
    private synchronized InputPartition[] planEarly() {
      if (earlyParts == null) {
        Batch batch = inner.toBatch();
        earlyParts = batch.planInputPartitions();
        planned = summary(earlyParts, registry);
        plannedEarly = batch;
      }
      return earlyParts;
    }

    /** Key-grouped when asked for and every planned partition states its key; else unknown.
     * Asked by Spark's optimizer (V2ScanPartitioningAndOrdering) after push-down. */
    @Override
    public synchronized Partitioning outputPartitioning() {
      if (partitioning == null) {
        if (keyGrouped && !streaming) {
          InputPartition[] parts = planEarly();
          partitioning = KeyGroupedScans.partitioning(
              KeyGroupedScans.keys(parts, readSchema(), registry), parts.length);
        } else {
          partitioning = KeyGroupedScans.partitioning(null, 0);
        }
      }
      return partitioning;
    }

    /** Spark's file-scan estimate: file bytes times the share of a row's width read. */
    private Statistics sized(OptionalLong fileBytes) {
      OptionalLong size = OptionalLong.empty();
      if (fileBytes.isPresent()) {
        double factor = SQLConf.get().fileCompressionFactor();
        double share = (double) readSchema().defaultSize() / Math.max(1, fullSchema.defaultSize());
        size = OptionalLong.of((long) (factor * fileBytes.getAsLong() * Math.min(1.0, share)));
      }
      OptionalLong bytes = size;
      return new Statistics() {
        @Override
        public OptionalLong sizeInBytes() {
          return bytes;
        }

        @Override
        public OptionalLong numRows() {
          return OptionalLong.empty();
        }
      };
    }

    /** The files' bytes a summary states ("Files: 3 in 2 groups (1,234 bytes), ..."). */
    static OptionalLong bytesOf(String summary) {
      Matcher m = BYTES.matcher(summary);
      return m.find()
          ? OptionalLong.of(Long.parseLong(m.group(1).replace(",", "")))
          : OptionalLong.empty();
    }

    @Override
    public Batch toBatch() {
      Batch plannedBatch;
      synchronized (this) {
        plannedBatch = plannedEarly;
        plannedEarly = null;
      }
      Batch batch = plannedBatch != null ? plannedBatch : inner.toBatch();
      return new Batch() {
        @Override
        public InputPartition[] planInputPartitions() {
          InputPartition[] parts = batch.planInputPartitions();
          planned = summary(parts, registry);
          return keyGrouped
              ? KeyGroupedScans.withKeys(parts, KeyGroupedScans.keys(parts, readSchema(), registry))
              : parts;
        }

        @Override
        public PartitionReaderFactory createReaderFactory() {
          return ColumnarPythonReads.of(batch.createReaderFactory());
        }
      };
    }

    /** " Files: …; LIST requests: …; listing: …" from the first partition, or "". */
    static String summary(InputPartition[] parts, OptionRegistry registry) {
      if (registry == null || parts.length == 0
          || !(parts[0] instanceof PythonInputPartition)) {
        return "";
      }
      String text = between(((PythonInputPartition) parts[0]).pickedPartition(),
          registry.summaryMark, registry.endByte());
      return text == null ? "" : " " + text;
    }

    @Override
    public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
      streaming = true;
      return inner.toMicroBatchStream(checkpointLocation);
    }

    @Override
    public ContinuousStream toContinuousStream(String checkpointLocation) {
      streaming = true;
      return inner.toContinuousStream(checkpointLocation);
    }

    @Override
    public CustomMetric[] supportedCustomMetrics() {
      return inner.supportedCustomMetrics();
    }

    @Override
    public CustomTaskMetric[] reportDriverMetrics() {
      return inner.reportDriverMetrics();
    }

    /** Batch scans hand Spark columnar batches (ColumnarPythonReads); streams read rows. */
    @Override
    public Scan.ColumnarSupportMode columnarSupportMode() {
      return !streaming && ColumnarPythonReads.available()
          ? Scan.ColumnarSupportMode.SUPPORTED
          : inner.columnarSupportMode();
    }

    @Override
    public scala.collection.immutable.Map<String, String> getMetaData() {
      scala.collection.immutable.Map<String, String> base = inner instanceof SupportsMetadata
          ? ((SupportsMetadata) inner).getMetaData()
          : scala.collection.immutable.Map$.MODULE$.empty();
      return base.updated("Listing", (extra + planned).trim());
    }
  }
}
