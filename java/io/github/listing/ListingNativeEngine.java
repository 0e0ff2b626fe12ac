package io.github.listing;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.UnaryOperator;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal$;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.Limit$;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.plans.logical.Project$;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.trees.TreeNodeTag;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.execution.datasources.DataSource;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation$;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.internal.SessionState;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.types.StructType;

import scala.Option;

/**
 * The {@code engine} option of the {@code listing} source: hands a scan Spark's JVM can read
 * itself (local files in Parquet, CSV or JSON) to Spark's own file source.
 *
 * <p>A {@code listing} (or {@code listing_table}) relation becomes
 * {@code DataSource(format, paths = [root], userSpecifiedSchema = the relation's schema,
 * options = our options in Spark's names + basePath).resolveRelation()} in a
 * {@link LogicalRelation} whose output keeps the old attributes' exprIds, under a {@code Filter}
 * for the {@code where} option (parsed by the session's parser) and a {@code Limit} for
 * {@code limit}. Spark's vectorized reader, column, row-group and partition pruning, file-index
 * statistics (broadcast joins) and its {@code _metadata} column then all apply; its
 * {@code FileScan parquet} line in {@code df.explain()} says who read the table.
 *
 * <p>When the driver's Python has registered its listing planner ({@link ListingFileIndex},
 * the classic PySpark session does), the relation is built the same way but over
 * {@link ListingFileIndex} instead of {@code resolveRelation()}'s {@code InMemoryFileIndex}:
 * Spark then lists nothing, and its query-time partition filters reach our planner. Without
 * one (Spark Connect servers, no callback server) Spark's own file index lists the root.
 *
 * <p>WHY a resolution rule ({@code injectResolutionRule}): {@code _metadata} (and
 * {@code input_file_name()}'s file source) only exist on a file source relation, and the
 * analyzer resolves {@code df.select("_metadata.file_path")} (AddMetadataColumns) against the
 * relation it sees while analyzing; a pre-CBO rule would swap the relation only after analysis
 * had already failed on {@code _metadata}. Analysis also happens once per DataFrame (at
 * {@code load()}), so errors for {@code engine=native} surface at load, and the replaced plan
 * is what every later query on the DataFrame builds on; the column pruning and guard rules
 * (pre-CBO) then never see a handed-off relation.
 *
 * <p>WHY the decision lives here, in one place: only the JVM knows that this rule is installed
 * (Python's {@code reader()} runs only when nothing handed the scan off) and it sees the
 * relation's options as Spark passes them, catalog options included. The Python side decides
 * nothing: with {@code engine=native} its reader raises "needs the listing Spark extension",
 * because reaching it means this rule is absent. {@code auto} hands off only when every option
 * has a Spark equivalent with the same meaning (see {@link #plan}); otherwise the reason is
 * the error text of {@code engine=native}.
 */
public final class ListingNativeEngine extends Rule<LogicalPlan> {

  /** HadoopFsRelation option naming the listing relation it replaced (listing.explain). */
  static final String MARK = "listing.engine";

  static final Set<String> SOURCES = Set.of("listing", "listing_table");

  /** Session conf naming the formats registered from Python (set by listing.spark.session). */
  static final String PYTHON_FORMATS_CONF = "spark.listing.pythonFormats";

  /** Why a scan stays on the Python engine; the message of {@code engine=native}'s error. */
  static final class NotNative extends Exception {
    NotNative(String why) {
      super(why, null, false, false);
    }
  }

  /** What Spark's own source needs to read the table as ours would. */
  static final class NativePlan {
    String format;
    String path;
    final Map<String, String> options = new LinkedHashMap<>();
    String where;
    Integer limit;
    /** Per-bucket S3A settings from the table's storage options (also in options). */
    final Map<String, String> s3a = new LinkedHashMap<>();
    /** The relation's options as Spark passed them (lower-cased): the planner's input. */
    Map<String, String> source = Map.of();
  }

  private final SparkSession session;
  /** A catalog table's own options into its relation (Spark 4's ListingCatalogOptions). */
  private final UnaryOperator<LogicalPlan> catalog;
  private final NodeRewrite handOff = new NodeRewrite(this::handedOff);

  public ListingNativeEngine(SparkSession session) {
    this.session = session;
    this.catalog = SparkShim.catalogOptions(session);
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    return plan.resolveOperatorsUp(handOff);
  }

  private LogicalPlan handedOff(LogicalPlan plan) {
    if (!(plan instanceof DataSourceV2Relation)) {
      return null;
    }
    DataSourceV2Relation rel = (DataSourceV2Relation) plan;
    String sourceName = SparkShim.pythonSource(rel.table());
    if (sourceName == null || !SOURCES.contains(sourceName.toLowerCase(Locale.ROOT))) {
      return null;
    }
    LogicalPlan filled = catalog.apply(rel);  // a catalog table's own options
    if (filled instanceof DataSourceV2Relation) {
      rel = (DataSourceV2Relation) filled;
    }
    Map<String, String> options = lowerCased(rel.options().asCaseSensitiveMap());
    String engine = OptionValues.choice(options.getOrDefault("engine", "auto"));
    if (!engine.equals("auto") && !engine.equals("native")) {
      return null;  // python, or a bad value the source itself reports
    }
    NativePlan target;
    try {
      target = decide(options, sourceName.toLowerCase(Locale.ROOT));
    } catch (NotNative why) {
      if (engine.equals("native")) {
        throw new IllegalArgumentException("listing source: engine=native cannot hand "
            + options.getOrDefault("path", "this table") + " to Spark's own reader: "
            + why.getMessage() + ". Use engine=auto (falls back to the Python engine) or "
            + "engine=python.");
      }
      log().debug("listing: Python engine for " + options.get("path") + ": " + why.getMessage());
      return null;
    }
    target.source = options;
    try {
      return nativeRelation(rel, target);
    } catch (NotNative why) {
      if (engine.equals("native")) {
        throw new IllegalArgumentException("listing source: engine=native cannot hand "
            + target.path + " to Spark's own reader: " + why.getMessage());
      }
      log().debug("listing: Python engine for " + target.path + ": " + why.getMessage());
      return null;
    }
  }

  /**
   * Why a {@code listing} relation with these options stays on the Python engine, or null
   * when this session hands it to Spark's reader (for {@code listing.explain}). The same
   * decision as the rule's, short of opening the table.
   */
  public static String pythonReason(SparkSession session, Map<String, String> options,
      String source) {
    Map<String, String> lower = lowerCased(options);
    String engine = OptionValues.choice(lower.getOrDefault("engine", "auto"));
    if (!engine.equals("auto") && !engine.equals("native")) {
      return "engine=" + engine;
    }
    try {
      new ListingNativeEngine(session).decide(lower, source.toLowerCase(Locale.ROOT));
      return null;
    } catch (NotNative why) {
      return why.getMessage();
    }
  }

  /** The hand-off's plan for these (lower-cased) options, or why there is none. */
  private NativePlan decide(Map<String, String> options, String source) throws NotNative {
    NativePlan target = plan(options, source, OptionRegistry.of(session), pythonFormats(),
        s3aConnector());
    if (target.path.startsWith("s3a://") && !target.s3a.isEmpty()) {
      checkS3AFileSystem(target);
    }
    return target;
  }

  /** Null when the session's JVM can load Spark's S3A connector, else why it cannot. */
  private String s3aConnector() {
    try {
      org.apache.hadoop.fs.FileSystem.getFileSystemClass("s3a",
          sessionState().newHadoopConf());
      return null;
    } catch (java.io.IOException | RuntimeException | LinkageError e) {
      return "Spark's JVM here has no S3A connector (" + e.getClass().getSimpleName() + ": "
          + String.valueOf(e.getMessage()).split("\n", 2)[0] + "; fetch it with python -m "
          + "listing.spark.s3a and build the session with listing.session() before any other "
          + "in this process: the driver's classpath is fixed when its JVM starts)";
    }
  }

  /**
   * WHY: Hadoop keeps one S3A filesystem per bucket in a JVM, configured by whoever opened it
   * first, and a scan's per-bucket settings do not reach a filesystem opened before. The
   * driver's filesystem for the bucket is opened here with the table's settings (no request:
   * S3A probes no bucket by default) and must hold them; otherwise Spark would read with
   * another table's endpoint or credentials. Names the settings that differ, not values.
   */
  private void checkS3AFileSystem(NativePlan target) throws NotNative {
    org.apache.hadoop.conf.Configuration conf =
        sessionState().newHadoopConfWithOptions(scalaMap(target.s3a));
    org.apache.hadoop.conf.Configuration opened;
    try {
      opened = org.apache.hadoop.fs.FileSystem.get(new java.net.URI(target.path), conf)
          .getConf();
    } catch (Exception e) {
      throw new NotNative("Spark's S3A connector cannot open " + target.path + ": "
          + e.getClass().getSimpleName());
    }
    List<String> differ = new ArrayList<>();
    for (Map.Entry<String, String> e : target.s3a.entrySet()) {
      if (!e.getValue().equals(opened.get(e.getKey()))) {
        differ.add(e.getKey());
      }
    }
    if (!differ.isEmpty()) {
      throw new NotNative("Spark's S3A filesystem for " + target.path + " was opened earlier "
          + "in this JVM with other settings (" + String.join(", ", differ) + "), and S3A "
          + "keeps one per bucket");
    }
  }

  /** Spark's relation over the same root, with the old attributes (exprIds) on top. */
  private LogicalPlan nativeRelation(DataSourceV2Relation rel, NativePlan target)
      throws NotNative {
    List<Attribute> old = new ArrayList<>(Scala.java(rel.output()));
    StructType schema = DataTypeUtils.fromAttributes(Scala.list(old));
    Map<String, String> options = new HashMap<>(target.options);
    options.put(MARK, "native " + target.format);
    DataSource ds = SparkShim.dataSource(session, target.format,
        Scala.list(List.of(target.path)), Option.apply(schema),
        scalaMap(options));
    BaseRelation base;
    ListingFileIndex.Planner planner = ListingFileIndex.planner();
    if (planner != null) {  // our listing feeds Spark's reader: Spark lists nothing
      base = fedRelation(ListingFileIndex.open(planner, target.source, schema, target.path), ds,
          target, schema, options);
    } else if (target.source.containsKey("list_cache_ttl")) {
      throw new NotNative("option list_cache_ttl (the listing cache) needs the listing "
          + "planner to feed Spark's reader, and this session has none (a classic PySpark "
          + "session registers it)");
    } else {
      try {
        base = SparkShim.resolveRelation(ds);
      } catch (RuntimeException e) {  // e.g. a layout Spark's partition discovery refuses
        String text = String.valueOf(e.getMessage());
        throw new NotNative("Spark's " + target.format + " source cannot open the table: "
            + text.split("\n", 2)[0]);
      }
    }
    if (target.format.equals("csv") && "true".equals(target.options.get("header"))) {
      checkCsvHeader((HadoopFsRelation) base, target.options.get("sep"),
          target.options.get("quote"), options);
    }
    LogicalRelation fresh = LogicalRelation$.MODULE$.apply(base, false);
    // the new attributes take the exprIds of the old ones, so the plan above still resolves
    List<AttributeReference> output = new ArrayList<>();
    boolean sameOrder = fresh.output().size() == old.size();
    int i = 0;
    for (AttributeReference a : Scala.java(fresh.output())) {
      Attribute before = null;
      for (Attribute o : old) {
        if (o.name().equalsIgnoreCase(a.name())) {
          before = o;
        }
      }
      if (before != null && !before.dataType().sameType(a.dataType())) {
        throw new NotNative("Spark's " + target.format + " source would type column "
            + a.name() + " as " + a.dataType().simpleString() + ", not "
            + before.dataType().simpleString());
      }
      output.add(before == null ? a : a.withExprId(before.exprId()));
      sameOrder &= before != null && old.get(i).exprId().equals(before.exprId());
      i++;
    }
    for (Attribute o : old) {
      boolean found = false;
      for (AttributeReference a : output) {
        found |= a.exprId().equals(o.exprId());
      }
      if (!found) {
        throw new NotNative("Spark's " + target.format + " source has no column " + o.name());
      }
    }
    LogicalPlan top = SparkShim.withOutput(fresh, output);
    if (!sameOrder) {  // the relation's columns in its old order; _metadata still visible
      LogicalPlan child = top;
      List<NamedExpression> list = new ArrayList<>(old);
      Project project = new Project(Scala.list(list), child);
      @SuppressWarnings({"unchecked", "rawtypes"})
      TreeNodeTag<Object> hidden = (TreeNodeTag) Project$.MODULE$.hiddenOutputTag();
      project.setTagValue(hidden, child.metadataOutput());
      top = project;
    }
    if (target.where != null) {
      Expression condition;
      try {
        condition = sessionState().sqlParser().parseExpression(target.where);
      } catch (Exception e) {  // ParseException, a checked exception to javac
        throw new NotNative("Spark's SQL parser cannot read where=" + target.where + " ("
            + e.getMessage().split("\n", 2)[0] + ")");
      }
      top = new Filter(condition, top);
    }
    if (target.limit != null) {
      Object limited = Limit$.MODULE$.apply(Literal$.MODULE$.apply(target.limit), top);
      top = (LogicalPlan) limited;  // a GlobalLimit over a LocalLimit
    }
    return top;
  }

  /**
   * The relation {@code resolveRelation} would build, over {@link ListingFileIndex} instead of
   * Spark's {@code InMemoryFileIndex}: partition columns as our planner names them, with the
   * relation's types; data columns the rest of the relation's schema, in its order; Spark's
   * {@code FileFormat} for the format; the same options. No bucketing (ours has none).
   */
  private HadoopFsRelation fedRelation(ListingFileIndex index, DataSource ds,
      NativePlan target, StructType schema, Map<String, String> options) throws NotNative {
    StructType partitions = index.partitionSchema();
    Set<String> partitionNames = new HashSet<>();
    for (String name : partitions.fieldNames()) {
      partitionNames.add(name.toLowerCase(Locale.ROOT));
    }
    List<org.apache.spark.sql.types.StructField> data = new ArrayList<>();
    for (org.apache.spark.sql.types.StructField f : schema.fields()) {
      if (!partitionNames.contains(f.name().toLowerCase(Locale.ROOT))) {
        data.add(f);
      }
    }
    Object provider;
    try {
      provider = ds.providingInstance();
    } catch (RuntimeException e) {
      throw new NotNative("Spark has no " + target.format + " source: " + e.getMessage());
    }
    if (provider instanceof org.apache.spark.sql.execution.datasources.v2.FileDataSourceV2) {
      try {
        provider = ((org.apache.spark.sql.execution.datasources.v2.FileDataSourceV2) provider)
            .fallbackFileFormat().getDeclaredConstructor().newInstance();
      } catch (ReflectiveOperationException e) {
        throw new NotNative("Spark's " + target.format + " file format: " + e.getMessage());
      }
    }
    if (!(provider instanceof org.apache.spark.sql.execution.datasources.FileFormat)) {
      throw new NotNative("Spark's " + target.format + " source is not a file format");
    }
    org.apache.spark.sql.execution.datasources.FileFormat format =
        (org.apache.spark.sql.execution.datasources.FileFormat) provider;
    if (target.path.startsWith("s3a://")) {  // opened with the listed status: no HEAD a file
      format = ListedFormats.of(format);
    }
    return new HadoopFsRelation(index, partitions,
        new StructType(data.toArray(new org.apache.spark.sql.types.StructField[0])),
        Option.empty(), format, scalaMap(options), session);
  }

  /**
   * The relation of the JVM {@code listing} source (Spark 3.5, which has no Python data
   * sources: {@code ListingRelationProvider} there): Spark's file source for the format over
   * {@link ListingFileIndex}, as the hand-off builds it, with the same decision on the
   * options ({@link #plan}). {@code schema}: the user's, or null for the one our planner
   * infers (data and partition columns, our types and options). Needs the registered
   * planner; {@code where} and {@code limit}, which the hand-off applies as plan nodes above
   * the relation, are refused (a relation cannot hold them).
   */
  public static HadoopFsRelation fileRelation(SparkSession session, Map<String, String> given,
      StructType schema) throws NotNative {
    Map<String, String> options = lowerCased(given);
    String engine = OptionValues.choice(options.getOrDefault("engine", "auto"));
    if (!engine.equals("auto") && !engine.equals("native")) {
      throw new NotNative("option engine=" + options.get("engine") + ": this Spark has no "
          + "Python data source, so the listing source reads with Spark's own reader only "
          + "(engine=auto or native)");
    }
    ListingFileIndex.Planner planner = ListingFileIndex.planner();
    if (planner == null) {
      throw new NotNative("the listing planner is not registered in this session (build it "
          + "with listing.session(), or call listing.register(spark) on it)");
    }
    ListingNativeEngine engineRule = new ListingNativeEngine(session);
    NativePlan target = engineRule.decide(options, "listing");
    target.source = options;
    if (target.where != null) {
      throw new NotNative("option where: filter the DataFrame instead (df.where(...) or SQL "
          + "WHERE); Spark hands its partition filters to the listing planner");
    }
    if (target.limit != null) {
      throw new NotNative("option limit: use df.limit(n) or SQL LIMIT instead");
    }
    ListingFileIndex index = ListingFileIndex.open(planner, options, schema, target.path);
    StructType full = index.schema();
    Map<String, String> sparkOptions = new HashMap<>(target.options);
    sparkOptions.put(MARK, "native " + target.format);
    DataSource ds = SparkShim.dataSource(session, target.format,
        Scala.list(List.of(target.path)), Option.apply(full), scalaMap(sparkOptions));
    HadoopFsRelation relation = engineRule.fedRelation(index, ds, target, full, sparkOptions);
    if (target.format.equals("csv") && "true".equals(target.options.get("header"))) {
      engineRule.checkCsvHeader(relation, target.options.get("sep"),
          target.options.get("quote"), sparkOptions);
    }
    return relation;
  }

  /**
   * Spark's CSV reader maps a file's columns to the schema by position, ours by header name:
   * the same rows only when the files' header is the relation's data columns in order (a
   * user schema with fewer or reordered columns is not). Checked on one file here; with
   * {@code enforceSchema=false} Spark checks every file's header again as it reads. Over
   * {@link ListingFileIndex}, our planner reads the header with our CSV format (Python's
   * {@code formats.csv}); only over Spark's own file index does {@link #csvFields} read it.
   */
  private void checkCsvHeader(HadoopFsRelation relation, String sep, String quote,
      Map<String, String> options) throws NotNative {
    String file;
    List<String> header = null;
    try {
      if (relation.location() instanceof ListingFileIndex index) {
        ListingFileIndex.Sample sample = index.firstSample();  // one LIST, not a listing
        file = sample.path();
        header = sample.header();
      } else {
        String[] files = relation.location().inputFiles();
        file = files.length == 0 ? null : files[0];
      }
    } catch (RuntimeException e) {
      throw new NotNative("cannot find a CSV file to read the header of: " + e.getMessage());
    }
    if (file == null) {
      return;
    }
    if (header == null) {
      header = readCsvHeader(file, sep, quote, options);
    }
    compareCsvHeader(relation, file, header);
  }

  /** The header of CSV {@code file}, read by Spark's Hadoop filesystem (no planner here). */
  private List<String> readCsvHeader(String file, String sep, String quote,
      Map<String, String> options) throws NotNative {
    List<String> header;
    try {
      org.apache.hadoop.fs.Path path = new org.apache.hadoop.fs.Path(file);
      org.apache.hadoop.conf.Configuration conf =
          sessionState().newHadoopConfWithOptions(scalaMap(options));
      org.apache.hadoop.fs.FileSystem fs = path.getFileSystem(conf);
      org.apache.hadoop.io.compress.CompressionCodec codec =
          new org.apache.hadoop.io.compress.CompressionCodecFactory(conf).getCodec(path);
      try (java.io.InputStream raw = fs.open(path);
           java.io.BufferedReader lines = new java.io.BufferedReader(
               new java.io.InputStreamReader(codec == null ? raw : codec.createInputStream(raw),
                   java.nio.charset.StandardCharsets.UTF_8))) {
        String first = lines.readLine();
        header = first == null ? List.of() : csvFields(first, sep == null ? ',' : sep.charAt(0),
            quote == null ? '"' : quote.charAt(0));
      }
    } catch (java.io.IOException | RuntimeException e) {
      throw new NotNative("cannot read the CSV header of " + file + ": " + e.getMessage());
    }
    return header;
  }

  private static void compareCsvHeader(HadoopFsRelation relation, String file,
      List<String> header) throws NotNative {
    List<String> columns = new ArrayList<>();
    for (String name : relation.dataSchema().fieldNames()) {
      columns.add(name.toLowerCase(Locale.ROOT));
    }
    List<String> names = new ArrayList<>();
    for (String name : header) {
      names.add(name.toLowerCase(Locale.ROOT));
    }
    if (!header.isEmpty() && !names.equals(columns)) {
      throw new NotNative("the CSV header of " + file + " (" + String.join(", ", header)
          + ") is not the relation's data columns in order (" + String.join(", ", columns)
          + "): Spark's CSV reader maps columns by position, ours by name");
    }
  }

  /**
   * The fields of one CSV header line as Python's {@code formats.csv.CsvOptions.split_fields}
   * reads them (Python's csv module, lenient): a leading BOM dropped, {@code sep}-separated; a
   * {@code quote} opens a quoted field only at a field's start, a doubled one inside is one
   * quote, and text after the closing quote joins the field. Held to Python's reading by the
   * shared vectors in {@code tests/vectors/csv_headers.json}.
   */
  static List<String> csvFields(String line, char sep, char quote) {
    List<String> out = new ArrayList<>();
    StringBuilder field = new StringBuilder();
    boolean start = true;  // at a field's start
    boolean quoted = false;
    String text = line.startsWith("\uFEFF") ? line.substring(1) : line;
    text = text.replaceFirst("[\r\n]+$", "");
    if (text.isEmpty()) {
      return out;  // an empty first line names no column
    }
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (quoted) {
        if (c == quote && i + 1 < text.length() && text.charAt(i + 1) == quote) {
          field.append(quote);
          i++;
        } else if (c == quote) {
          quoted = false;
        } else {
          field.append(c);
        }
      } else if (c == sep) {
        out.add(field.toString());
        field.setLength(0);
        start = true;
        continue;
      } else if (c == quote && start) {
        quoted = true;
      } else {
        field.append(c);
      }
      start = false;
    }
    out.add(field.toString());
    return out;
  }

  private SessionState sessionState() {
    return SparkShim.sessionState(session);
  }

  // --- the decision ----------------------------------------------------------------------

  /**
   * Format names the session's Python side registered itself (listing.formats.register, set by
   * listing.spark.session as {@link #PYTHON_FORMATS_CONF}). WHY: a user's class registered
   * under a built-in name ("csv") replaces ours in Python, and Spark's reader would not be it.
   */
  private Set<String> pythonFormats() {
    String names = session.conf().get(PYTHON_FORMATS_CONF, "");
    Set<String> out = new HashSet<>();
    for (String name : names.split(",")) {
      if (!name.isBlank()) {
        out.add(name.trim().toLowerCase(Locale.ROOT));
      }
    }
    return out;
  }

  /**
   * Spark's reading of the table, or why there is none that means the same. Every option our
   * source takes is either mapped to Spark's name (same meaning), ignored (it changes tasks,
   * never rows: packing, batch size, schema-sampling options, since the schema is passed), or
   * a reason to stay on the Python engine: {@code registry} says which ({@link
   * OptionRegistry}). {@code noS3A}: null when Spark's JVM can read {@code s3a://} (S3A),
   * else why not; an {@code s3://} or {@code s3a://} table is then read as {@code s3a://},
   * its storage options mapped by {@link S3ASettings}. A {@code listing_table} relation's
   * {@code table_spec} is not read here: {@code to_spark} states what this needs of it as
   * plain options (listing.spark.dataframe.stated_options), and the source refuses a spec
   * they disagree with.
   */
  static NativePlan plan(Map<String, String> given, String source, OptionRegistry registry,
      Set<String> pythonFormats, String noS3A) throws NotNative {
    Map<String, String> opts = withoutCatalogCopies(given, registry.catalogCopyPrefix);
    NativePlan plan = new NativePlan();
    String format = opts.getOrDefault("format", registry.defaultOf("format")).trim()
        .toLowerCase(Locale.ROOT);
    Map<String, String> formatOptions = new LinkedHashMap<>();
    List<String> where = new ArrayList<>();
    if (pythonFormats.contains(format)) {
      throw new NotNative("format " + format + " is registered from Python "
          + "(listing.formats.register): Spark's own reader is not that class");
    }
    if (!registry.nativeFormats.containsKey(format)) {
      throw new NotNative("format " + format + " is ours only (Spark's own readers: "
          + String.join(", ", new java.util.LinkedHashSet<>(registry.nativeFormats.values()))
          + ")");
    }
    plan.format = registry.nativeFormats.get(format);
    if (plan.format.equals("csv") && source.equals("listing_table")) {
      // Spark's CSV reader maps columns by position, so it needs every column of the files
      // in their order; to_spark's relation holds the projected columns only
      throw new NotNative("to_spark's projected CSV columns: Spark's CSV reader maps columns "
          + "by position");
    }
    String path = opts.get("path");
    if (path == null || path.isEmpty()) {
      throw new NotNative("no path");
    }
    if (opts.containsKey("paths")) {
      throw new NotNative("option paths is ours only");
    }
    boolean s3 = isS3(path);
    if (s3 && noS3A != null) {
      throw new NotNative("storage " + scheme(path) + ":// is read by our storage layer: "
          + noS3A);
    }
    plan.path = sparkPath(path, "path", s3, registry);
    plan.options.put("basePath", plan.path);
    if (opts.containsKey("basepath")) {  // a partition folder below its table root
      plan.options.put("basePath", sparkPath(opts.get("basepath"), "basePath", s3, registry));
    }
    String storageOptions = opts.getOrDefault("storage_options", "{}").trim();
    Map<String, String> storageDot = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : opts.entrySet()) {
      if (e.getKey().startsWith(registry.storagePrefix)) {
        storageDot.put(e.getKey().substring(registry.storagePrefix.length()), e.getValue());
      }
    }
    if (s3) {
      plan.s3a.putAll(S3ASettings.map(S3ASettings.bucket(plan.path), storageOptions,
          storageDot, registry));
      plan.options.putAll(plan.s3a);
    } else if (!storageOptions.isEmpty() && !storageOptions.equals("{}")) {
      throw new NotNative("option storage_options configures our storage layer, which Spark's "
          + "reader does not use");
    }
    String userGlob = null;
    for (Map.Entry<String, String> e : opts.entrySet()) {
      String key = e.getKey();
      String value = e.getValue();
      if (key.startsWith(registry.storagePrefix)) {
        if (s3) {
          continue;  // mapped above
        }
        throw new NotNative("option " + key + " configures our storage layer, which Spark's "
            + "reader does not use");
      }
      OptionRegistry.Option option = registry.lookup(key);
      String use = option == null ? "spark" : option.nativeUse;
      switch (use) {
        case "planner":
          switch (option.name) {
            case "where":
              if (!value.trim().isEmpty()) {
                where.add(value);
              }
              break;
            case "limit":
              java.math.BigInteger limit = OptionValues.integer(value);
              if (limit == null || limit.bitLength() > 31) {
                throw new NotNative("option limit=" + value + (limit == null
                    ? " is not an integer" : " is larger than Spark's limit takes"));
              }
              plan.limit = limit.intValue();
              break;
            case "recursivefilelookup":
              if (!Boolean.FALSE.equals(registry.bool(value))) {
                throw new NotNative("recursiveFileLookup is not supported");
              }
              break;
            case "path_glob_filter":
              userGlob = value;
              break;
            default:  // read above: path, paths, format, engine, storage options
              break;
          }
          break;
        case "ignore":
          break;
        case "false_only":
          if (!Boolean.FALSE.equals(registry.bool(value))) {
            throw new NotNative("option " + key + "=" + value + " is honoured by the Python "
                + "engine only " + option.why);
          }
          break;
        case "python":
          throw new NotNative("option " + key + " " + option.why);
        default:  // a format's option: Spark's name for it, or a reason (formatOptions)
          formatOptions.put(key, value);
      }
    }
    if (where.size() == 1) {
      plan.where = where.get(0);
    }
    if (userGlob != null) {  // our planner applies it; without one, Spark's index does
      plan.options.put("pathGlobFilter", userGlob);
    }
    if (registry.extensions.get(format) == null) {  // a Python registration replaced it
      throw new NotNative("the option registry has no file extensions of format " + format);
    }
    // no name filter: Spark's reader, as ours, reads every file that is not hidden
    formatOptions(plan, formatOptions, registry);
    return plan;
  }

  /** Our format options in Spark's names, when the meaning is the same. */
  private static void formatOptions(NativePlan plan, Map<String, String> given,
      OptionRegistry registry) throws NotNative {
    Map<String, String> out = plan.options;
    if (plan.format.equals("csv")) {
      out.put("header", "true");
      out.put("escape", "\"");  // ours: no escape character, a doubled quote is a quote
      out.put("enforceSchema", "false");  // a header that disagrees fails, never shifts
    }
    if (!plan.format.equals("parquet")) {
      out.put("mode", "FAILFAST");  // ours raises on a malformed record, never nulls it
    }
    for (Map.Entry<String, String> e : given.entrySet()) {
      String key = e.getKey();
      String value = e.getValue();
      OptionRegistry.Option option = registry.lookup(key);
      if (option != null && option.nativeUse.equals("ignore")) {
        continue;  // schema inference and read buffers: the schema is passed as it is
      }
      if (option == null || !option.nativeFormats.contains(plan.format)) {
        throw new NotNative("option " + key + " has no Spark equivalent for " + plan.format);
      }
      String spark = switch (option.kind) {
        case "bool" -> {
          Boolean b = registry.bool(value);
          if (b == null) {
            throw new NotNative("option " + option.name + "=" + value + " is not a boolean");
          }
          yield b.toString();
        }
        case "char" -> character(value, key);
        case "list" -> {
          if (value.contains(",")) {
            throw new NotNative("option " + option.name + "=" + value + ": Spark takes one "
                + option.sparkOption);
          }
          yield value;
        }
        default -> value;
      };
      out.put(option.sparkOption, spark);
      if (option.name.equals("quote")) {
        out.put("escape", spark);  // ours doubles the quote character to escape it
      }
    }
  }

  /** The one character Spark takes for our character option {@code value}, as Python's
   * {@code listing.options.parse_char} reads it; why not, when ours reads none or refuses it.
   * Held to Python's reading by the shared vectors in {@code tests/vectors/characters.json}. */
  static String character(String value, String key) throws NotNative {
    String lower = value.toLowerCase(Locale.ROOT);
    String c = switch (lower) {
      case "\\t", "tab" -> "\t";
      case "\\n" -> "\n";
      default -> value;
    };
    if (c.length() != 1 || lower.equals("none") || lower.equals("null")
        || lower.equals("false")) {
      throw new NotNative("option " + key + "=" + value + " is not one character");
    }
    return c;
  }

  /**
   * {@code given} with the options Spark's catalog copies ({@code option.path}) under their
   * own names, and {@code location} (a catalog table's) as the path when none is given, as
   * {@code listing.spark.config.SourceConfig.parse} reads them: an option given under its own
   * name wins over its copy, whatever their order. Held to Python's reading by the shared
   * vectors in {@code tests/vectors/catalog_copies.json}.
   */
  static Map<String, String> withoutCatalogCopies(Map<String, String> given, String copy) {
    Map<String, String> opts = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : given.entrySet()) {
      if (!e.getKey().startsWith(copy)) {
        opts.put(e.getKey(), e.getValue());
      }
    }
    for (Map.Entry<String, String> e : given.entrySet()) {
      if (e.getKey().startsWith(copy)) {
        opts.putIfAbsent(e.getKey().substring(copy.length()), e.getValue());
      }
    }
    String path = opts.get("path");
    if ((path == null || path.isEmpty()) && opts.get("location") != null
        && !opts.get("location").isEmpty()) {
      opts.put("path", opts.get("location"));
    }
    return opts;
  }

  /**
   * The path Spark's reader reads for our {@code path} (or {@code basePath}) option: the
   * location {@code listing.url.TableUrl.parse} reads, as {@code s3a://bucket/key} when
   * {@code s3} (the table is on S3), else a local absolute path; why not, when Spark's
   * spelling could name another location than ours (a glob, a relative path, {@code .} or
   * {@code ..} segments, an empty segment, credentials in the URL, no bucket). Held to
   * Python's reading by the shared vectors in {@code tests/vectors/table_paths.json}.
   */
  static String sparkPath(String path, String option, boolean s3, OptionRegistry registry)
      throws NotNative {
    String out = s3 ? s3a(path, option) : local(path, option);
    if (registry.isGlob(out)) {
      throw new NotNative("a path with glob characters is listed by our rules only");
    }
    String below;  // the path after the scheme and its slashes: bucket/key or abs/path
    if (s3) {
      below = out.substring("s3a://".length());
      String bucket = below.split("/", 2)[0];
      if (bucket.isEmpty() || bucket.contains("@")) {
        throw new NotNative("option " + option + " is no s3://bucket/key URL our storage "
            + "reads (no bucket, or credentials in it)");
      }
    } else {
      below = (out.startsWith("file:") ? out.substring("file:".length()) : out)
          .replaceFirst("^/+", "");
    }
    for (String segment : below.split("/", -1)) {
      if (segment.equals(".") || segment.equals("..")) {
        throw new NotNative("option " + option + "=" + path + " has . or .. segments");
      }
    }
    if (below.replaceFirst("/+$", "").contains("//")) {
      throw new NotNative("option " + option + "=" + path + " has an empty segment");
    }
    return out;
  }

  static boolean isS3(String path) {
    String p = path.trim().toLowerCase(Locale.ROOT);
    return p.startsWith("s3://") || p.startsWith("s3a://");
  }

  private static String scheme(String path) {
    String p = path.trim();
    return p.substring(0, Math.max(0, p.indexOf("://")));
  }

  /** An {@code s3://} or {@code s3a://} URL as S3A's {@code s3a://}. */
  static String s3a(String path, String option) throws NotNative {
    if (!isS3(path)) {
      throw new NotNative("option " + option + " is not on S3 like the table's path");
    }
    String p = path.trim();
    return "s3a://" + p.substring(p.indexOf("://") + 3);
  }

  /** A local path Spark's JVM reads itself ({@code /abs}, {@code file:/x}, {@code file:///x}). */
  static String local(String path, String option) throws NotNative {
    String p = path.trim();
    if (p.startsWith("file:///") || (p.startsWith("file:/") && !p.startsWith("file://"))) {
      return p;
    }
    if (p.startsWith("/")) {
      return p;
    }
    int colon = p.indexOf("://");
    throw new NotNative(colon > 0
        ? "storage " + p.substring(0, colon) + ":// is read by our storage layer (Spark's "
            + "JVM here has no connector for it)"
        : "option " + option + "=" + path + " is not an absolute local path");
  }

  private static Map<String, String> lowerCased(Map<String, String> options) {
    Map<String, String> out = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : options.entrySet()) {
      out.put(e.getKey().toLowerCase(Locale.ROOT), e.getValue());
    }
    return out;
  }

  private static scala.collection.immutable.Map<String, String> scalaMap(Map<String, String> m) {
    return Scala.map(m);
  }
}
