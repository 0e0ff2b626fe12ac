package io.github.listing;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownFilters;
import org.apache.spark.sql.connector.read.streaming.ContinuousStream;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.PythonInputPartition;
import org.apache.spark.sql.execution.datasources.v2.python.PythonTable;
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
 * pickled partitions; {@code listing.spark.source} puts a summary string between
 * {@link #MARK} and {@link #END} in the first one, and a pickled str is its UTF-8 bytes.
 */
final class DescribedPythonTable extends PythonTable {

  /** Start and end of the scan summary inside a pickled partition (see source.py). */
  static final String MARK = "\u001elisting-scan:";
  static final byte END = 0x1e;

  DescribedPythonTable(PythonDataSourceV2 ds, String shortName, StructType schema) {
    super(ds, shortName, schema);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    ScanBuilder inner = super.newScanBuilder(options);
    if (!(inner instanceof SupportsPushDownFilters)) {
      return inner;
    }
    return new Builder((SupportsPushDownFilters) inner, options.get("path"));
  }

  /** Delegates push-down, remembering the filters the source kept (not handed back). */
  static final class Builder implements SupportsPushDownFilters {
    private final SupportsPushDownFilters inner;
    private final String path;
    private Filter[] kept = new Filter[0];

    Builder(SupportsPushDownFilters inner, String path) {
      this.inner = inner;
      this.path = path;
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
      return new Described(inner.build(), path, kept);
    }
  }

  /** Spark's Python scan with a description naming the path and the filters kept. */
  static final class Described implements Scan, SupportsMetadata {
    private final Scan inner;
    private final String extra;
    private volatile String planned = "";  // what planning chose, once it has run

    Described(Scan inner, String path, Filter[] kept) {
      this.inner = inner;
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
    public Batch toBatch() {
      Batch batch = inner.toBatch();
      return new Batch() {
        @Override
        public InputPartition[] planInputPartitions() {
          InputPartition[] parts = batch.planInputPartitions();
          planned = summary(parts);
          return parts;
        }

        @Override
        public PartitionReaderFactory createReaderFactory() {
          return batch.createReaderFactory();
        }
      };
    }

    /** " Files: …; LIST requests: …; listing: …" from the first partition, or "". */
    static String summary(InputPartition[] parts) {
      if (parts.length == 0 || !(parts[0] instanceof PythonInputPartition)) {
        return "";
      }
      byte[] bytes = ((PythonInputPartition) parts[0]).pickedPartition();
      byte[] mark = MARK.getBytes(StandardCharsets.UTF_8);
      outer:
      for (int i = 0; i + mark.length <= bytes.length; i++) {
        for (int j = 0; j < mark.length; j++) {
          if (bytes[i + j] != mark[j]) {
            continue outer;
          }
        }
        int start = i + mark.length;
        for (int end = start; end < bytes.length; end++) {
          if (bytes[end] == END) {
            return " " + new String(bytes, start, end - start, StandardCharsets.UTF_8);
          }
        }
        return "";
      }
      return "";
    }

    @Override
    public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
      return inner.toMicroBatchStream(checkpointLocation);
    }

    @Override
    public ContinuousStream toContinuousStream(String checkpointLocation) {
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

    @Override
    public Scan.ColumnarSupportMode columnarSupportMode() {
      return inner.columnarSupportMode();
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
