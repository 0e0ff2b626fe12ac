package io.github.listing;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.sql.SparkSession;

/**
 * The {@code listing} source's options as Python's {@code listing.options.registry} declares
 * them: names, Spark's spellings, defaults, what the native hand-off does with each, and the
 * file extensions of the formats Spark also reads.
 *
 * <p>WHY a session conf: this package keeps no copy of option names, defaults or extension
 * lists, so the two languages cannot drift apart. {@code listing.register(spark)} (and
 * {@code listing.session()}) puts the table, as JSON, in the session conf {@link #CONF} when
 * it registers the source; a session without it has no {@code listing} source to read
 * either. The conf's name does not start with {@code spark.}: Spark copies those confs into
 * the properties of every task it runs.
 *
 * <p>The code refers by name only to the options whose meaning it implements ({@link
 * #ACTED_ON}); a table that lacks one of them is refused when parsed. It names no storage
 * option: the table carries the s3 options' S3A mapping ({@link #s3Options}), and one that
 * asks for a role or conversion {@link S3ASettings} does not implement is refused too.
 *
 * <p>The table also carries the other rules the extension must spell as Python does: the
 * catalog-copy and storage prefixes, the glob wildcards ({@link #isGlob}) and the marks
 * around the text read out of pickled partitions ({@link DescribedPythonTable},
 * {@link KeyGroupedScans}). What the extension must still compute itself (paths, character
 * options, a CSV header over Spark's own file index) is held to Python's answers by the
 * shared test vectors in {@code tests/vectors/}.
 */
public final class OptionRegistry {

  /** Session conf holding the table (listing.spark.session sets it). */
  static final String CONF = "listing.optionRegistry";

  /** The options ListingNativeEngine acts on by name (each must be in the table). */
  static final Set<String> ACTED_ON = Set.of("path", "paths", "format", "engine", "where",
      "limit", "storage_options", "basepath", "recursivefilelookup",
      "path_glob_filter", "quote", "key_grouped");

  private static final ObjectMapper JSON = new ObjectMapper();
  private static volatile OptionRegistry cached;
  private static volatile String cachedText;

  /** One option, as the table declares it. */
  static final class Option {
    final String name;
    final String scope;
    final String kind;
    final List<String> spellings;
    final JsonNode defaultValue;
    /** planner, ignore, false_only, python or spark (listing.options.registry.Native). */
    final String nativeUse;
    final String why;
    final String sparkOption;
    final Set<String> nativeFormats;

    Option(JsonNode o) {
      name = o.path("name").asText();
      scope = o.path("scope").asText();
      kind = o.path("kind").asText();
      List<String> names = new ArrayList<>();
      o.path("spellings").forEach(s -> names.add(s.asText().toLowerCase(Locale.ROOT)));
      spellings = Collections.unmodifiableList(names);
      defaultValue = o.path("default");
      nativeUse = o.path("native").asText();
      why = o.path("why").asText("");
      sparkOption = o.path("spark_option").isNull() ? null : o.path("spark_option").asText();
      Set<String> formats = new LinkedHashSet<>();
      o.path("native_formats").forEach(f -> formats.add(f.asText()));
      nativeFormats = Collections.unmodifiableSet(formats);
    }
  }

  /**
   * One s3 storage option of the allowlist (listing.options.storage_options.StorageOption)
   * and how it maps to S3A ({@link S3ASettings}; storage_options.S3A): a setting of its own
   * ({@code to}, {@code convert}), a role ({@code to}), skipped, keys mapped one by one, or
   * a reason to stay on the Python engine ({@code why}); {@code values}: when not empty, the
   * only values mapped, to S3A's text.
   */
  static final class StorageOption {
    final String name;
    final String kind;
    final boolean secret;
    final String use;
    final String to;
    final String convert;
    final Map<String, String> values;
    final String why;
    final Map<String, StorageOption> keys;
    /** The least value of an int option (the allowlist's), or null. */
    final Integer minimum;

    StorageOption(JsonNode o) {
      name = o.path("name").asText();
      kind = o.path("kind").asText();
      secret = o.path("secret").asBoolean();
      minimum = o.path("minimum").isInt() ? Integer.valueOf(o.path("minimum").intValue()) : null;
      JsonNode s3a = o.path("s3a");
      use = s3a.path("use").asText();
      to = s3a.path("to").asText();
      convert = s3a.path("convert").asText();
      Map<String, String> vs = new LinkedHashMap<>();
      s3a.path("values").fields().forEachRemaining(f -> vs.put(f.getKey(), f.getValue().asText()));
      values = Collections.unmodifiableMap(vs);
      why = s3a.path("why").asText();
      keys = storageOptions(o.path("keys"));
      if (!S3ASettings.USES.contains(use) || !S3ASettings.CONVERTS.contains(convert)
          || (use.equals("role") && !S3ASettings.ROLES.contains(to))
          || (use.equals("setting") && to.isEmpty())
          || use.equals("keys") != kind.equals("object")) {
        throw new IllegalArgumentException("the option registry maps storage option " + name
            + " to S3A as " + use + " " + to + " (" + convert + "), which this extension "
            + "does not implement");
      }
    }

    ObjectNode describe() {
      ObjectNode n = JSON.createObjectNode();
      n.put("name", name).put("kind", kind).put("secret", secret);
      if (minimum == null) {
        n.putNull("minimum");
      } else {
        n.put("minimum", minimum);
      }
      ObjectNode s3a = n.putObject("s3a");
      s3a.put("use", use).put("to", to).put("convert", convert);
      ObjectNode vs = s3a.putObject("values");
      values.forEach(vs::put);
      s3a.put("why", why);
      ArrayNode ks = n.putArray("keys");
      keys.values().forEach(k -> ks.add(k.describe()));
      return n;
    }
  }

  private static Map<String, StorageOption> storageOptions(JsonNode list) {
    Map<String, StorageOption> out = new LinkedHashMap<>();
    list.forEach(o -> out.put(o.path("name").asText(), new StorageOption(o)));
    return Collections.unmodifiableMap(out);
  }

  final String storagePrefix;
  final String catalogCopyPrefix;
  /** The characters that make a path a glob (listing.options.registry.GLOB_WILDCARDS). */
  final String globWildcards;
  /** The marks around text in a pickled partition (registry.PARTITION_MARKS): a scan's
   * summary, a partition's key, and the one-byte end of either. */
  final String summaryMark;
  final String keyMark;
  final String endMark;
  private final List<Option> options = new ArrayList<>();
  private final Map<String, Option> bySpelling = new LinkedHashMap<>();
  /** Our format names Spark also reads, mapped to Spark's. */
  final Map<String, String> nativeFormats = new LinkedHashMap<>();
  /** File extensions (no leading dot, lower case) our listing keeps, by our format name. */
  final Map<String, List<String>> extensions = new LinkedHashMap<>();
  /** The s3 storage options and their S3A mapping, by name (the allowlist's). */
  final Map<String, StorageOption> s3Options;
  /** Option values read as Python's kind parsers read them (booleans, durations, ...). */
  final OptionValues values;

  private OptionRegistry(JsonNode root) {
    storagePrefix = root.path("prefixes").path("storage").asText();
    catalogCopyPrefix = root.path("prefixes").path("catalog_copy").asText();
    globWildcards = root.path("glob_wildcards").asText();
    JsonNode marks = root.path("partition_marks");
    summaryMark = marks.path("summary").asText();
    keyMark = marks.path("key").asText();
    endMark = marks.path("end").asText();
    if (globWildcards.isEmpty() || summaryMark.isEmpty() || keyMark.isEmpty()
        || endMark.length() != 1 || endMark.charAt(0) >= 0x80) {
      throw new IllegalArgumentException("the option registry has no glob wildcards or "
          + "partition marks (an end mark of one ASCII byte)");
    }
    for (JsonNode o : root.path("options")) {
      Option option = new Option(o);
      options.add(option);
      for (String s : option.spellings) {
        if (bySpelling.put(s, option) != null) {
          throw new IllegalArgumentException("option spelling " + s + " names two options");
        }
      }
    }
    root.path("native_formats").fields().forEachRemaining(
        f -> nativeFormats.put(f.getKey(), f.getValue().asText()));
    root.path("extensions").fields().forEachRemaining(f -> {
      List<String> exts = new ArrayList<>();
      f.getValue().forEach(e -> exts.add(e.asText()));
      extensions.put(f.getKey(), Collections.unmodifiableList(exts));
    });
    s3Options = storageOptions(root.path("s3a"));
    if (s3Options.isEmpty()) {
      throw new IllegalArgumentException("the option registry has no s3 storage options");
    }
    values = new OptionValues(root.path("booleans"), root.path("durations"));
    if (storagePrefix.isEmpty() || catalogCopyPrefix.isEmpty()) {
      throw new IllegalArgumentException("the option registry has no prefixes");
    }
    for (String name : ACTED_ON) {
      if (!bySpelling.containsKey(name) || !bySpelling.get(name).name.equals(name)) {
        throw new IllegalArgumentException("the option registry has no option " + name);
      }
    }
  }

  /** The table in {@code json} (as listing.spark.config.registry_json writes it). */
  static OptionRegistry parse(String json) {
    if (json.equals(cachedText)) {
      return cached;
    }
    JsonNode root;
    try {
      root = JSON.readTree(json);
    } catch (Exception e) {
      throw new IllegalArgumentException("the listing option registry is not JSON", e);
    }
    OptionRegistry parsed = new OptionRegistry(root);
    cached = parsed;
    cachedText = json;
    return parsed;
  }

  /** The session's table, or why the hand-off cannot know the options. */
  static OptionRegistry of(SparkSession session) throws ListingNativeEngine.NotNative {
    String text = session.conf().get(CONF, "");
    if (text.isEmpty()) {
      throw new ListingNativeEngine.NotNative("the session has no listing option registry "
          + "(listing.register(spark) hands it to the JVM)");
    }
    return parse(text);
  }

  /** The active session's table, or null where it has none (then no listing source runs). */
  static OptionRegistry ofActive() {
    try {
      return of(SparkSession.active());
    } catch (ListingNativeEngine.NotNative | IllegalStateException none) {
      return null;
    }
  }

  /** Whether {@code path} holds a glob wildcard, as Python's listing.url.is_glob says. */
  boolean isGlob(String path) {
    for (char c : globWildcards.toCharArray()) {
      if (path.indexOf(c) >= 0) {
        return true;
      }
    }
    return false;
  }

  /** The byte ending a marked text in a pickled partition. */
  byte endByte() {
    return (byte) endMark.charAt(0);
  }

  /** The option {@code key} names (ours or a Spark spelling, any case), or null. */
  Option lookup(String key) {
    return bySpelling.get(key.toLowerCase(Locale.ROOT));
  }

  /** A boolean as listing.options.parse_bool reads it (any case); null when it is none. */
  Boolean bool(String value) {
    return values.bool(value);
  }

  /** The default of the option named {@code name}, as text. */
  String defaultOf(String name) {
    return bySpelling.get(name).defaultValue.asText();
  }

  /**
   * What this class parsed from {@code json}, written back as JSON in the registry's own
   * shape (plus {@code acted_on}): a test holds it equal to Python's table.
   */
  public static String describe(String json) {
    OptionRegistry r = parse(json);
    ObjectNode out = JSON.createObjectNode();
    out.putObject("prefixes").put("storage", r.storagePrefix)
        .put("catalog_copy", r.catalogCopyPrefix);
    out.put("glob_wildcards", r.globWildcards);
    out.putObject("partition_marks").put("summary", r.summaryMark).put("key", r.keyMark)
        .put("end", r.endMark);
    ObjectNode booleans = out.putObject("booleans");
    r.values.trueSpellings().forEach(booleans.putArray("true")::add);
    r.values.falseSpellings().forEach(booleans.putArray("false")::add);
    ObjectNode durations = out.putObject("durations");
    durations.put("pattern", r.values.durationPattern());
    ObjectNode units = durations.putObject("units");
    r.values.durationUnits().forEach(units::put);
    ObjectNode formats = out.putObject("native_formats");
    r.nativeFormats.forEach(formats::put);
    ObjectNode exts = out.putObject("extensions");
    r.extensions.forEach((k, v) -> {
      ArrayNode a = exts.putArray(k);
      v.forEach(a::add);
    });
    ArrayNode list = out.putArray("options");
    for (Option o : r.options) {
      ObjectNode n = list.addObject();
      n.put("name", o.name).put("scope", o.scope).put("kind", o.kind);
      o.spellings.forEach(n.putArray("spellings")::add);
      n.set("default", o.defaultValue);
      n.put("native", o.nativeUse).put("why", o.why).put("spark_option", o.sparkOption);
      o.nativeFormats.forEach(n.putArray("native_formats")::add);
    }
    ArrayNode s3a = out.putArray("s3a");
    r.s3Options.values().forEach(o -> s3a.add(o.describe()));
    new java.util.TreeSet<>(ACTED_ON).forEach(out.putArray("acted_on")::add);
    new java.util.TreeSet<>(S3ASettings.ROLES).forEach(out.putArray("s3a_roles")::add);
    return out.toString();
  }

  /**
   * The S3A settings (names below {@code fs.s3a.bucket.<bucket>.}) that {@link S3ASettings}
   * makes of {@code storageOptionsJson} under the table in {@code json}, as a JSON object,
   * or {@code {"python": why}}: a test holds them to what the allowlist declares.
   */
  public static String s3aSettings(String json, String storageOptionsJson) {
    ObjectNode out = JSON.createObjectNode();
    try {
      S3ASettings.settings(storageOptionsJson, Map.of(), parse(json)).forEach(out::put);
    } catch (ListingNativeEngine.NotNative why) {
      return JSON.createObjectNode().put("python", why.getMessage()).toString();
    }
    return out.toString();
  }
}
