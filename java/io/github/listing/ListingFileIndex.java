package io.github.listing;

import java.net.URI;
import java.net.URISyntaxException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.BasePredicate;
import org.apache.spark.sql.catalyst.expressions.BindReferences$;
import org.apache.spark.sql.catalyst.expressions.Cast;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.InSet;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Literal$;
import org.apache.spark.sql.catalyst.expressions.Predicate$;
import org.apache.spark.sql.catalyst.expressions.package$;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.execution.datasources.DataSourceStrategy$;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.FileStatusWithMetadata;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.BooleanType$;
import org.apache.spark.sql.types.ByteType$;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType$;
import org.apache.spark.sql.types.IntegerType$;
import org.apache.spark.sql.types.LongType$;
import org.apache.spark.sql.types.ShortType$;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StringType$;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

import scala.Option;

/**
 * The file index of a scan handed to Spark's own reader: its files come from our listing
 * planner, asked through PySpark's py4j callback server, instead of Spark listing the table.
 *
 * <p>WHY a file index, and why it asks Python at query time: Spark's {@code InMemoryFileIndex}
 * lists the whole root when the relation is built and prunes partitions afterwards, by its
 * own discovery rules; on a large table that is the listing our planner exists to avoid. A
 * {@link FileIndex} is the one place Spark's file source takes files from without listing:
 * {@code FileSourceScanExec} calls {@link #listFiles} with the query's partition filters
 * (static ones; dynamic pruning filters are evaluated by Spark afterwards), so the filters
 * reach our planner, which lists only the matching folders and answers with paths, sizes,
 * modification times and partition values. The planner lives in the driver's Python (it is
 * {@code listing.spark.file_index.ListingPlanner}, registered in {@link #register} by
 * {@code listing.spark.session}); the index runs on the driver only, so the callback does too.
 *
 * <p>WHY the JVM re-checks every partition filter: for a {@code HadoopFsRelation},
 * {@code FileSourceStrategy} keeps partition filters out of the post-scan {@code Filter}, so
 * the index must return exactly the partitions that pass. Filters go to the planner as
 * structure, not text: each conjunct as the data source filter Spark's own push-down makes of
 * it ({@code DataSourceStrategy.translateFilter}, what a Python source's {@code pushFilters}
 * receives), with {@code And}/{@code Or}, as JSON ({@link #filter}) that
 * {@code listing.spark.filters.from_json} turns into our expressions; only conjuncts whose
 * columns and literals are strings, integers, booleans or dates go (their text is exact, where
 * a timestamp's or a decimal's would need a zone or a scale), and the planner may still leave
 * any out (its types). Then Spark's own interpreted predicate over the returned partition
 * values decides, as Spark's file index does: leaving a conjunct out costs pruning, never
 * rows.
 *
 * <p>{@link #sizeInBytes} and {@link #inputFiles} (statistics, {@code df.inputFiles()}) come
 * from one unfiltered plan, made when first needed and kept until
 * {@link #refresh}. Without a registered planner (Spark Connect servers, sessions without the
 * callback) {@link ListingNativeEngine} keeps Spark's own file index.
 */
public final class ListingFileIndex extends ScalaFileIndex {

  /** What the index asks; implemented in Python. Every answer is JSON. */
  public interface Planner {
    /**
     * {@code {"partition_columns": [names], "not_native": why Spark's reader cannot read the
     * files, or null}} or {@code {"error": text}}; with an empty {@code schemaJson}, also
     * {@code "schema"}: the relation's schema the planner infers, as Spark's JSON.
     */
    String describe(String optionsJson, String schemaJson);

    /**
     * {@code {"partition_columns", "used": [filter], "list_requests", "dirs": [[url,
     * [values], names]], "sizes", "mtimes", "more"}} for partition filters given as a JSON
     * list of conjuncts, each a data source filter as JSON ({@link #filter}); {@code used}:
     * those it pruned with. The files, in the planner's order, come a directory at a time:
     * its URL (with its slash), its partition values as text (null: the Hive null) and its
     * files' names joined by {@code /}, a file's path being {@code url + name};
     * {@code sizes} and {@code mtimes} (milliseconds) hold every file's, in that order, as
     * base64 of little-endian int64s ({@code listing.spark.file_index.answer_chunks});
     * {@code etags}, when the listing has any, every file's ETag (unquoted) joined by
     * {@code /}, empty where unknown. That is the first chunk of the files: {@code more}, when not null, is the id to ask
     * {@link #more} the next one with.
     */
    String plan(String optionsJson, String schemaJson, String filtersJson);

    /**
     * The next chunk of a {@link #plan} answer: {@code {"dirs", "sizes", "mtimes", "more"}}
     * as there, {@code more} null on the last. Every chunk is bounded (a number of files
     * and of characters), so no string grows with the table.
     */
    String more(long answerId);

    /** Forget a {@link #plan} answer whose chunks are no longer wanted. */
    void release(long answerId);

    /**
     * {@code {"path": first data file or null, "header": its CSV header's column names, or
     * null when the table's format reads none}}: one LIST, not a listing (and for a CSV
     * header, one read of the file's first line, by our CSV format).
     */
    String sample(String optionsJson, String schemaJson);

    /**
     * {@code {"partition_by": [names]}}: the columns a listing write with these options
     * (those its Python writer gets) and schema partitions by, from the options alone (no
     * request), or {@code {"not_staged": why}} for a write only the Python writer writes
     * ({@link StagedParquetWrites}).
     */
    String stagedOrder(String optionsJson, String schemaJson, boolean overwrite);

    /**
     * A write's set-up in the driver's Python process, as Spark's planning worker would do
     * it: the source class {@code source} (its pickled command, base64) named {@code
     * provider} builds its writer for the options and schema; {@code {"writer", "command"}}
     * (pickled, base64: the writer, and the function its tasks run returning {@code
     * returnTypeJson}'s one binary column) with {@code {"partition_by", "compression",
     * "max_records_per_file"}} of the job it resolved, or {@code "not_staged": why};
     * {@code {"error": text}} when the set-up fails.
     */
    String stagedSetup(String source, String provider, String optionsJson, String schemaJson,
        boolean overwrite, String returnTypeJson);

    /**
     * Commit (or, with {@code abort}, abort) a staged write's job with its tasks' commit
     * messages (each pickled, base64; null for a task that sent none): {@code {}}, or
     * {@code {"error": text}}, which fails the write.
     */
    String stagedCommit(String pickledWriter, String[] pickledMessages, boolean abort);
  }

  private static volatile Planner registered;

  /** Set (or with null, clear) the planner later hand-offs use. Called from Python. */
  public static void register(Planner planner) {
    registered = planner;
  }

  static Planner planner() {
    return registered;
  }

  /** One planner answer: its directories' data files, in the planner's order. */
  private static final class Listing {
    final List<Dir> dirs = new ArrayList<>();
    final List<String> used = new ArrayList<>();
    long listRequests;
    long bytes;

    /** The directories grouped by partition values, in order of each one's first. */
    Map<List<String>, List<Dir>> partitions() {
      Map<List<String>, List<Dir>> out = new LinkedHashMap<>();
      for (Dir d : dirs) {
        out.computeIfAbsent(d.values, k -> new ArrayList<>()).add(d);
      }
      return out;
    }
  }

  /**
   * A directory's data files as the planner sent them: its URL, its partition values as
   * text, and per file its name, size and modification time. A file's {@link FileStatus}
   * is made when Spark is handed its partition (one that passes the partition filters):
   * a kept plan ({@link #sizeInBytes}, {@link #inputFiles}) holds a name a file, not one.
   */
  private record Dir(List<String> values, String url, String[] names, long[] sizes,
      long[] mtimes, String[] etags) {

    Path path(int i) {
      return qualified(url + names[i]);
    }

    /** Each file's status, with its listed ETag (when known) as metadata the hand-off's
     * formats open it with ({@link ListedOpens}). */
    void addStatuses(List<FileStatusWithMetadata> out) {
      for (int i = 0; i < names.length; i++) {
        FileStatus status = new FileStatus(sizes[i], false, 0, 0, mtimes[i], 0,
            FILE_PERMISSION, null, null, path(i));
        String etag = etags == null ? "" : etags[i];
        out.add(new FileStatusWithMetadata(status, etag.isEmpty() ? NO_METADATA
            : new scala.collection.immutable.Map.Map1<>(ListedOpens.ETAG, etag)));
      }
    }
  }

  private static final scala.collection.immutable.Map<String, Object> NO_METADATA =
      scala.collection.immutable.Map$.MODULE$.empty();

  /** What every file's {@link FileStatus} holds as its permission (Hadoop's file default),
   * one object shared by all. */
  private static final FsPermission FILE_PERMISSION = FsPermission.getFileDefault();

  private static final ObjectMapper JSON = new ObjectMapper();

  private final Planner planner;
  private final String optionsJson;
  private final String schemaJson;
  private final StructType schema;
  private final Path root;
  private final StructType partitionSchema;
  private volatile Listing everything;  // the unfiltered plan, until refresh()
  private final AtomicInteger asks = new AtomicInteger();
  private volatile List<String> lastSent = List.of();
  private volatile List<String> lastUsed = List.of();
  private volatile long lastListRequests;

  private ListingFileIndex(Planner planner, String optionsJson, StructType schema,
      String schemaJson, Path root, StructType partitionSchema) {
    this.planner = planner;
    this.optionsJson = optionsJson;
    this.schemaJson = schemaJson;
    this.schema = schema;
    this.root = root;
    this.partitionSchema = partitionSchema;
  }

  /**
   * The index of a relation with {@code schema} (its columns and our types), read with the
   * source's {@code options}; the planner names the partition columns (those in the schema).
   * A null {@code schema}: the planner's, inferred as the Python source infers it (Spark 3.5's
   * JVM source, which has no Python source to ask).
   */
  static ListingFileIndex open(Planner planner, Map<String, String> options, StructType schema,
      String root) throws ListingNativeEngine.NotNative {
    String optionsJson;
    try {
      // timestamp partition values are read in the session's zone, as Spark reads them
      optionsJson = JSON.writeValueAsString(SessionTimeZone.withZone(options));
    } catch (Exception e) {
      throw new ListingNativeEngine.NotNative("options are not JSON: " + e.getMessage());
    }
    JsonNode answer;
    try {
      answer = answer(planner.describe(optionsJson, schema == null ? "" : schema.json()));
    } catch (RuntimeException e) {  // the planner's error, or a callback that failed
      throw new ListingNativeEngine.NotNative("the listing planner cannot open the table: "
          + String.valueOf(e.getMessage()).split("\n", 2)[0]);
    }
    if (answer.path("not_native").isTextual()) {
      throw new ListingNativeEngine.NotNative(answer.get("not_native").asText());
    }
    String schemaJson = schema == null ? null : schema.json();
    if (schema == null) {  // the planner's text, which it keeps the opened table under
      if (!answer.path("schema").isTextual()) {
        throw new ListingNativeEngine.NotNative("the listing planner named no schema");
      }
      schemaJson = answer.get("schema").asText();
      schema = (StructType) DataType.fromJson(schemaJson);
    }
    List<StructField> parts = new ArrayList<>();
    for (JsonNode name : answer.path("partition_columns")) {
      for (StructField f : schema.fields()) {
        if (f.name().equalsIgnoreCase(name.asText())) {
          parts.add(f);
        }
      }
    }
    return new ListingFileIndex(planner, optionsJson, schema, schemaJson,
        qualified(root), new StructType(parts.toArray(new StructField[0])));
  }

  // --- FileIndex -------------------------------------------------------------------------

  @Override
  protected List<Path> roots() {
    return List.of(root);
  }

  /** The relation's columns: data and partition columns, with our types. */
  public StructType schema() {
    return schema;
  }

  @Override
  public StructType partitionSchema() {
    return partitionSchema;
  }

  @Override
  protected List<PartitionDirectory> files(List<Expression> partitionFilters,
      List<Expression> dataFilters) {
    List<Expression> filters = new ArrayList<>(partitionFilters);
    List<String> sent = new ArrayList<>();
    for (Expression filter : filters) {
      for (Expression conjunct : conjuncts(filter)) {
        String structure = filter(conjunct);
        if (structure != null) {
          sent.add(structure);
        }
      }
    }
    Listing listing = ask(sent);
    BasePredicate check = filters.isEmpty() ? null : predicate(filters);
    List<PartitionDirectory> out = new ArrayList<>();
    for (Map.Entry<List<String>, List<Dir>> p : listing.partitions().entrySet()) {
      InternalRow values = row(p.getKey());
      if (check == null || check.eval(values)) {
        List<FileStatusWithMetadata> files = new ArrayList<>();
        for (Dir d : p.getValue()) {
          d.addStatuses(files);
        }
        out.add(PartitionDirectory.apply(values, Scala.list(files)));
      }
    }
    return out;
  }

  @Override
  public String[] inputFiles() {
    List<String> paths = new ArrayList<>();
    for (Dir d : everything().dirs) {
      for (int i = 0; i < d.names.length; i++) {
        paths.add(d.path(i).toUri().toString());
      }
    }
    return paths.toArray(new String[0]);
  }

  @Override
  public long sizeInBytes() {
    return everything().bytes;
  }

  @Override
  public void refresh() {
    everything = null;
  }

  @Override
  public String toString() {
    return "ListingFileIndex[" + root + ", files from the listing planner]";
  }

  /**
   * The table's first data file (null: it has none), for a check that needs one file and
   * not the list (the CSV header): the planner's first page, not {@link #inputFiles}'s
   * unfiltered listing.
   */
  public String firstFile() {
    return firstSample().path();
  }

  /** The table's first data file (null: none) and its CSV header as our CSV format reads it
   * (null: the planner read none). */
  record Sample(String path, List<String> header) {
  }

  /** {@link #firstFile} with the header our planner read of it, in one ask. */
  Sample firstSample() {
    JsonNode answer = answer(planner.sample(optionsJson, schemaJson));
    JsonNode path = answer.path("path");
    List<String> header = null;
    if (answer.path("header").isArray()) {
      header = new ArrayList<>();
      for (JsonNode name : answer.path("header")) {
        header.add(name.asText());
      }
    }
    return new Sample(path.isTextual() ? qualified(path.asText()).toUri().toString() : null,
        header);
  }

  // --- for tests and explain -------------------------------------------------------------

  /** How many times the planner was asked. */
  public int asks() {
    return asks.get();
  }

  /** The conjuncts last sent to the planner: a JSON list of filters ({@link #filter}). */
  public String lastSent() {
    return array(lastSent);
  }

  /** The conjuncts the planner last pruned its listing with, as {@link #lastSent}. */
  public String lastUsed() {
    return array(lastUsed);
  }

  /** LIST requests of the planner's last listing. */
  public long lastListRequests() {
    return lastListRequests;
  }

  /** The relation's options as the planner is given them (JSON; listing.explain re-plans
   * with them in the driver's Python). */
  public String optionsJson() {
    return optionsJson;
  }

  /** The relation's schema as the planner is given it (Spark's JSON). */
  public String schemaJson() {
    return schemaJson;
  }

  // --- asking the planner ----------------------------------------------------------------

  private Listing everything() {
    Listing all = everything;
    if (all == null) {
      all = ask(List.of());
      everything = all;
    }
    return all;
  }

  private Listing ask(List<String> filters) {
    JsonNode answer = answer(planner.plan(optionsJson, schemaJson, array(filters)));
    asks.incrementAndGet();
    Listing listing = new Listing();
    List<String> names = new ArrayList<>();
    answer.path("partition_columns").forEach(n -> names.add(n.asText().toLowerCase(Locale.ROOT)));
    int[] position = new int[partitionSchema.size()];  // our partition column i -> answer's
    for (int i = 0; i < position.length; i++) {
      position[i] = names.indexOf(partitionSchema.fields()[i].name().toLowerCase(Locale.ROOT));
    }
    answer.path("used").forEach(s -> listing.used.add(s.toString()));
    listing.listRequests = answer.path("list_requests").asLong();
    JsonNode chunk = answer;
    long more = 0;  // the answer's id while chunks remain to be asked for
    try {
      while (true) {
        addChunk(listing, chunk, position);
        JsonNode next = chunk.path("more");
        if (!next.canConvertToLong()) {
          more = 0;
          break;
        }
        more = next.asLong();
        chunk = answer(planner.more(more));
      }
    } finally {
      if (more != 0) {  // stopped before the last chunk: the planner forgets the rest
        try {
          planner.release(more);
        } catch (RuntimeException e) {
          // the error being raised says more; the planner keeps only a few answers
        }
      }
    }
    lastSent = List.copyOf(filters);
    lastUsed = List.copyOf(listing.used);
    lastListRequests = listing.listRequests;
    return listing;
  }

  /**
   * The files of one chunk of the planner's answer, added to {@code listing}: its
   * directories, each with its share of the chunk's sizes and times, in order.
   */
  private static void addChunk(Listing listing, JsonNode chunk, int[] position) {
    long[] sizes = longs(chunk.path("sizes").asText());
    long[] mtimes = longs(chunk.path("mtimes").asText());
    // every file's ETag joined by "/" ("": none), when the listing has any
    String[] etags = chunk.path("etags").isTextual()
        ? chunk.get("etags").asText().split("/", -1) : null;
    if (etags != null && etags.length != sizes.length) {
      throw new IllegalStateException("listing planner: " + sizes.length + " sizes but "
          + etags.length + " ETags in a chunk");
    }
    if (sizes.length != mtimes.length) {
      throw new IllegalStateException("listing planner: " + sizes.length + " sizes but "
          + mtimes.length + " modification times in a chunk");
    }
    int file = 0;
    for (JsonNode dir : chunk.path("dirs")) {
      String url = dir.path(0).asText();
      JsonNode texts = dir.path(1);
      List<String> values = new ArrayList<>();
      for (int i : position) {
        JsonNode v = i < 0 ? null : texts.get(i);
        values.add(v == null || v.isNull() ? null : v.asText());
      }
      String[] files = dir.path(2).asText().split("/", -1);
      if (file + files.length > sizes.length) {
        throw new IllegalStateException("listing planner: more files than sizes and times "
            + "in a chunk (" + sizes.length + " sizes)");
      }
      int from = file;
      int kept = 0;
      for (int k = 0; k < files.length; k++) {
        if (sizes[from + k] > 0) {  // as Spark's file index: an empty file is no data file
          files[kept] = files[k];
          sizes[from + kept] = sizes[from + k];
          mtimes[from + kept] = mtimes[from + k];
          if (etags != null) {
            etags[from + kept] = etags[from + k];
          }
          listing.bytes += sizes[from + k];
          kept++;
        }
      }
      file += files.length;
      if (kept > 0) {
        listing.dirs.add(new Dir(values, url, Arrays.copyOf(files, kept),
            Arrays.copyOfRange(sizes, from, from + kept),
            Arrays.copyOfRange(mtimes, from, from + kept),
            etags == null ? null : Arrays.copyOfRange(etags, from, from + kept)));
      }
    }
    if (file != sizes.length) {
      throw new IllegalStateException("listing planner: " + file + " files but "
          + sizes.length + " sizes and times in a chunk");
    }
  }

  /** The little-endian int64s of base64 {@code text}. */
  private static long[] longs(String text) {
    ByteBuffer bytes = ByteBuffer.wrap(Base64.getDecoder().decode(text))
        .order(ByteOrder.LITTLE_ENDIAN);
    long[] out = new long[bytes.remaining() / Long.BYTES];
    bytes.asLongBuffer().get(out);
    return out;
  }

  /** Characters of an answer an error quotes at most. */
  static final int QUOTED_CHARS = 200;

  /**
   * The planner's answer {@code text} read as JSON; its {@code error}, or a text that is
   * not JSON, raised. The error is short whatever the answer's length: it quotes at most
   * {@link #QUOTED_CHARS} characters of it (file URLs and values, which hold no secret: the
   * planner refuses a table URL with credentials), and keeps the parser's exception as its
   * cause.
   */
  static JsonNode answer(String text) {
    JsonNode node;
    try {
      node = JSON.readTree(text);
    } catch (Exception e) {
      String why = String.valueOf(e.getMessage()).split("\n", 2)[0];
      throw new IllegalStateException("listing planner: its answer is not JSON ("
          + quoted(why) + "); it begins: " + quoted(text), e);
    }
    if (node == null || !node.isObject()) {
      throw new IllegalStateException("listing planner: its answer is not a JSON object; "
          + "it begins: " + quoted(text));
    }
    if (node.hasNonNull("error")) {
      throw new IllegalStateException("listing planner: " + node.get("error").asText());
    }
    return node;
  }

  /** {@code text}, cut to {@link #QUOTED_CHARS} characters (then saying how long it was). */
  static String quoted(String text) {
    if (text == null) {
      return "null";
    }
    return text.length() <= QUOTED_CHARS ? text
        : text.substring(0, QUOTED_CHARS) + "… (" + text.length() + " characters)";
  }

  /**
   * Our planner reads local paths without a scheme as local files: so does Spark here. Its
   * {@code s3://} files are read by Spark's S3A connector, as {@code s3a://}.
   */
  private static Path qualified(String path) {
    if (path.startsWith("/")) {
      if (Path.WINDOWS || path.contains("//") || path.endsWith("/")) {
        return new Path("file", null, path);
      }
      // what that constructor makes of a path its normalizing leaves as it is (no doubled
      // or trailing slash), without its regular expressions for every file
      try {
        return new Path(new URI("file", null, path, null, null));
      } catch (URISyntaxException e) {
        return new Path("file", null, path);  // which raises its own error
      }
    }
    if (path.startsWith("s3://")) {
      return new Path("s3a://" + path.substring("s3://".length()));
    }
    return new Path(path);
  }

  /** The JSON list of JSON texts {@code items}. */
  private static String array(List<String> items) {
    return "[" + String.join(",", items) + "]";
  }

  // --- partition values and Spark's check --------------------------------------------------

  /** The planner's partition values (text) as Spark's row of the partition schema's types. */
  private InternalRow row(List<String> texts) {
    Object[] values = new Object[texts.size()];
    Option<String> zone = Option.apply(SQLConf.get().sessionLocalTimeZone());
    for (int i = 0; i < values.length; i++) {
      String text = texts.get(i);
      DataType type = partitionSchema.fields()[i].dataType();
      if (text == null) {
        values[i] = null;
      } else if (type instanceof StringType) {
        values[i] = UTF8String.fromString(text);
      } else {
        Literal literal = Literal$.MODULE$.create(text, StringType$.MODULE$);
        values[i] = new Cast(literal, type, zone).eval(InternalRow.empty());
      }
    }
    return new GenericInternalRow(values);
  }

  /** Spark's interpreted check of all partition filters, bound to the partition schema. */
  private BasePredicate predicate(List<Expression> filters) {
    Expression all = filters.get(0);
    for (Expression f : filters.subList(1, filters.size())) {
      all = new And(all, f);
    }
    // the filters' own attributes where they name a partition column, fresh ones elsewhere
    List<Attribute> input = new ArrayList<>();
    List<AttributeReference> fresh = Scala.java(
        DataTypeUtils.toAttributes(partitionSchema));
    for (AttributeReference column : fresh) {
      Attribute found = column;
      for (Attribute a : Scala.java(all.references().toSeq())) {
        if (a.name().equalsIgnoreCase(column.name())) {
          found = a;
        }
      }
      input.add(found);
    }
    Expression bound = BindReferences$.MODULE$.bindReference(all,
        package$.MODULE$.AttributeSeq(Scala.list(input)), false);
    BasePredicate p = Predicate$.MODULE$.createInterpreted(bound);
    p.initialize(0);
    return p;
  }

  // --- filters as SQL text ---------------------------------------------------------------

  private static List<Expression> conjuncts(Expression e) {
    List<Expression> out = new ArrayList<>();
    if (e instanceof And) {
      out.addAll(conjuncts(((And) e).left()));
      out.addAll(conjuncts(((And) e).right()));
    } else {
      out.add(e);
    }
    return out;
  }

  /**
   * The conjunct {@code e} as JSON {@code listing.spark.filters.from_json} reads: Spark's data
   * source filter of it ({@code DataSourceStrategy.translateFilter}, top-level column names),
   * leaves as {@link ListingFilterOption#json} writes them, {@code {"kind": "And"|"Or",
   * "left": ..., "right": ...}} above them; null where Spark has no such filter or a column or
   * literal is not a non-null string, integer, boolean or date.
   */
  public static String filter(Expression e) {
    if (!exactText(e)) {
      return null;
    }
    Option<org.apache.spark.sql.sources.Filter> translated =
        DataSourceStrategy$.MODULE$.translateFilter(e, false);
    return translated.isDefined() ? structure(translated.get()) : null;
  }

  private static String structure(org.apache.spark.sql.sources.Filter f) {
    org.apache.spark.sql.sources.Filter left = null;
    org.apache.spark.sql.sources.Filter right = null;
    if (f instanceof org.apache.spark.sql.sources.And and) {
      left = and.left();
      right = and.right();
    } else if (f instanceof org.apache.spark.sql.sources.Or or) {
      left = or.left();
      right = or.right();
    }
    if (left == null) {
      if (f instanceof org.apache.spark.sql.sources.Not not) {
        String child = structure(not.child());
        return child == null ? null : "{\"kind\":\"Not\",\"child\":" + child + "}";
      }
      return FilterJson.json(f);
    }
    String l = structure(left);
    String r = structure(right);
    return l == null || r == null ? null : "{\"kind\":\"" + f.getClass().getSimpleName()
        + "\",\"left\":" + l + ",\"right\":" + r + "}";
  }

  /** Whether every column and literal of {@code e} has a type whose value's text is exact. */
  private static boolean exactText(Expression e) {
    if (e instanceof Literal literal && (literal.value() == null || !exact(e.dataType()))) {
      return false;
    }
    if (e instanceof AttributeReference && !exact(e.dataType())) {
      return false;
    }
    if (e instanceof InSet in && !exact(in.child().dataType())) {
      return false;
    }
    for (Expression child : Scala.java(e.children())) {
      if (!exactText(child)) {
        return false;
      }
    }
    return true;
  }

  private static boolean exact(DataType type) {
    return type instanceof StringType || type == IntegerType$.MODULE$
        || type == LongType$.MODULE$ || type == ShortType$.MODULE$ || type == ByteType$.MODULE$
        || type == BooleanType$.MODULE$ || type == DateType$.MODULE$;
  }
}
