package io.github.listing;

import java.nio.charset.StandardCharsets;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.expressions.Expression;
import org.apache.spark.sql.connector.expressions.Expressions;
import org.apache.spark.sql.connector.read.HasPartitionKey;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.partitioning.KeyGroupedPartitioning;
import org.apache.spark.sql.connector.read.partitioning.Partitioning;
import org.apache.spark.sql.connector.read.partitioning.UnknownPartitioning;
import org.apache.spark.sql.execution.datasources.v2.python.PythonInputPartition;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Key-grouped {@code listing} scans: a scan whose every task reads files of one value of the
 * table's partition columns tells Spark so, through DSv2's {@link KeyGroupedPartitioning}
 * (reported by {@link DescribedPythonTable}'s scan) and {@link HasPartitionKey} on each input
 * partition. Spark's {@code EnsureRequirements} then plans no {@code Exchange} for an
 * aggregation or a join clustered on those columns (storage-partitioned join).
 *
 * <p>WHY the keys come from the pickled partitions: the files are planned in the Python
 * planning worker, which hands the JVM only pickled partitions. {@code listing.spark.input_partition}
 * writes each partition's key between the registry's key and end marks
 * ({@link OptionRegistry#keyMark}, Python's {@code listing.options.registry.PARTITION_MARKS})
 * (JSON {@code {"names": [...], "values": [...]}}, ASCII-escaped, so the end byte cannot occur
 * inside); a pickled str is its UTF-8 bytes.
 *
 * <p>Invariant: a partitioning is reported only when every partition states a key and every
 * key column the scan reads has a type converted here; otherwise the scan reports {@link
 * UnknownPartitioning} and its partitions stay as they are (Spark shuffles, as before).
 */
final class KeyGroupedScans {

  /** The reader option (listing.options.ListingOptions.key_grouped) asking for key grouping. */
  static final String OPTION = "key_grouped";

  private static final ObjectMapper JSON = new ObjectMapper();

  private KeyGroupedScans() {
  }

  /**
   * Whether the scan's options ask for key grouping: an option the session's registry files
   * under {@link #OPTION}, true as the registry spells booleans (Python's parse_bool). A
   * session without the registry has no listing source to scan, so asks for none.
   */
  static boolean requested(Map<String, String> options, OptionRegistry registry) {
    if (registry == null) {
      return false;
    }
    for (Map.Entry<String, String> e : options.entrySet()) {
      OptionRegistry.Option option = registry.lookup(e.getKey());
      if (option != null && option.name.equals(OPTION)) {
        return Boolean.TRUE.equals(registry.bool(e.getValue()));
      }
    }
    return false;
  }

  /** Spark's Python partition that also states its partition key. */
  static final class KeyedPythonInputPartition extends PythonInputPartition
      implements HasPartitionKey {
    private final InternalRow key;

    KeyedPythonInputPartition(PythonInputPartition partition, InternalRow key) {
      super(partition.index(), partition.pickedPartition());
      this.key = key;
    }

    @Override
    public InternalRow partitionKey() {
      return key;
    }
  }

  /** The key columns and each partition's key row, or null when the scan is not keyed. */
  record Keys(List<String> columns, List<InternalRow> rows) {
  }

  /**
   * The key of every partition, restricted to the partition columns the scan reads (in the
   * scan's spelling); null when there are no partitions, a partition states no key, the scan
   * reads none of the key columns, or a key column's type is not converted here.
   */
  static Keys keys(InputPartition[] parts, StructType readSchema, OptionRegistry registry) {
    if (parts.length == 0 || registry == null) {
      return null;
    }
    List<String> columns = null;
    List<Integer> positions = new ArrayList<>();
    List<DataType> types = new ArrayList<>();
    List<InternalRow> rows = new ArrayList<>();
    for (InputPartition part : parts) {
      JsonNode key = part instanceof PythonInputPartition
          ? marked(((PythonInputPartition) part).pickedPartition(), registry)
          : null;
      if (key == null || !key.path("names").isArray() || !key.path("values").isArray()) {
        return null;
      }
      if (columns == null) {  // the same table: every partition names the same columns
        columns = new ArrayList<>();
        JsonNode names = key.get("names");
        for (int i = 0; i < names.size(); i++) {
          StructField field = field(readSchema, names.get(i).asText());
          if (field != null) {
            if (!supported(field.dataType())) {
              return null;
            }
            columns.add(field.name());
            positions.add(i);
            types.add(field.dataType());
          }
        }
        if (columns.isEmpty()) {
          return null;
        }
      }
      JsonNode values = key.get("values");
      Object[] row = new Object[positions.size()];
      for (int i = 0; i < row.length; i++) {
        JsonNode value = values.get(positions.get(i));
        if (value == null) {
          return null;
        }
        row[i] = value.isNull() ? null : convert(value, types.get(i));
      }
      rows.add(new GenericInternalRow(row));
    }
    return new Keys(columns, rows);
  }

  /** What the scan reports: key-grouped on its key columns, or unknown. */
  static Partitioning partitioning(Keys keys, int numPartitions) {
    if (keys == null) {
      return new UnknownPartitioning(numPartitions);
    }
    Expression[] exprs = new Expression[keys.columns().size()];
    for (int i = 0; i < exprs.length; i++) {
      exprs[i] = Expressions.column("`" + keys.columns().get(i).replace("`", "``") + "`");
    }
    return new KeyGroupedPartitioning(exprs, numPartitions);
  }

  /** The partitions, each stating its key when the scan is keyed; as they are otherwise. */
  static InputPartition[] withKeys(InputPartition[] parts, Keys keys) {
    if (keys == null) {
      return parts;
    }
    InputPartition[] out = new InputPartition[parts.length];
    for (int i = 0; i < parts.length; i++) {
      out[i] = new KeyedPythonInputPartition((PythonInputPartition) parts[i], keys.rows().get(i));
    }
    return out;
  }

  private static StructField field(StructType schema, String name) {
    for (StructField f : schema.fields()) {
      if (f.name().equalsIgnoreCase(name)) {
        return f;
      }
    }
    return null;
  }

  private static boolean supported(DataType type) {
    return type instanceof StringType || type instanceof IntegerType || type instanceof LongType
        || type instanceof ShortType || type instanceof ByteType || type instanceof DateType
        || type instanceof BooleanType;
  }

  /** A JSON partition value as Spark's internal value of {@code type}. */
  private static Object convert(JsonNode value, DataType type) {
    if (type instanceof StringType) {
      return UTF8String.fromString(value.asText());
    }
    if (type instanceof DateType) {
      return (int) LocalDate.parse(value.asText()).toEpochDay();
    }
    if (type instanceof BooleanType) {
      return value.asBoolean();
    }
    long number = value.isNumber() ? value.asLong() : Long.parseLong(value.asText().trim());
    if (type instanceof LongType) {
      return number;
    }
    if (type instanceof IntegerType) {
      return Math.toIntExact(number);
    }
    if (type instanceof ShortType) {
      return (short) number;
    }
    return (byte) number;
  }

  /** The JSON between the key mark and the end byte in a pickled partition, or null. */
  static JsonNode marked(byte[] bytes, OptionRegistry registry) {
    String text = DescribedPythonTable.between(bytes, registry.keyMark, registry.endByte());
    if (text == null) {
      return null;
    }
    try {
      return JSON.readTree(text);
    } catch (java.io.IOException e) {
      return null;
    }
  }
}
