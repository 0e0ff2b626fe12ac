package io.github.listing;

import java.math.BigInteger;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * A table's storage options (s3fs's names, as the {@code listing} source takes them) as the
 * per-bucket settings of Hadoop's S3A connector, {@code fs.s3a.bucket.<bucket>.<key>}.
 *
 * <p>WHY per bucket, and as the relation's options: Spark copies a file source relation's
 * options into the Hadoop configuration its scan reads with (driver and executors), and S3A
 * takes {@code fs.s3a.bucket.<b>.*} over {@code fs.s3a.*} for that bucket only, so one table's
 * endpoint and credentials never reach another bucket. Relation options are not printed in
 * plans.
 *
 * <p>WHY no option names here: the storage allowlist (Python's {@code
 * listing.options.storage_options}, handed over in the option registry, {@link
 * OptionRegistry#s3Options}) says for each s3 option whether it maps to an S3A setting of its
 * own (and how its value converts), gives one of the {@link #ROLES} that code combines
 * (credentials, endpoint, region, anonymous access, addressing, encryption), changes nothing
 * a read returns (skipped), or is a reason to stay on the Python engine ({@link
 * ListingNativeEngine.NotNative}). This class implements the roles and conversions only;
 * reasons name the option, never its value.
 */
final class S3ASettings {

  /** The roles this class builds settings from (listing.options.storage_options.S3A_ROLES). */
  static final Set<String> ROLES = Set.of("access_key", "secret_key", "session_token",
      "anonymous", "endpoint", "region", "addressing_style", "encryption_algorithm",
      "encryption_kms_key", "encryption_customer_key");
  /** How an option maps (listing.options.storage_options.S3AUse). */
  static final Set<String> USES = Set.of("setting", "role", "skip", "keys", "python");
  /** How a value becomes a setting's text (listing.options.storage_options.S3AConvert). */
  static final Set<String> CONVERTS = Set.of("text", "count", "millis",
      "retries_of_attempts", "flag");

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String SIMPLE = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider";
  private static final String TEMPORARY =
      "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider";
  private static final String ANONYMOUS =
      "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider";
  private static final Set<String> ADDRESSING = Set.of("auto", "path", "virtual");

  private S3ASettings() {
  }

  /** The bucket of an {@code s3://} or {@code s3a://} URL. */
  static String bucket(String url) throws ListingNativeEngine.NotNative {
    String rest = url.substring(url.indexOf("://") + 3);
    int slash = rest.indexOf('/');
    String bucket = slash < 0 ? rest : rest.substring(0, slash);
    if (bucket.isEmpty() || bucket.contains("@") || bucket.contains(":")) {
      throw new ListingNativeEngine.NotNative("path " + url.substring(0, url.indexOf("://") + 3)
          + "… has no plain bucket name");
    }
    return bucket;
  }

  /**
   * The S3A settings for {@code bucket}, from the {@code storage_options} JSON object and the
   * {@code storage.<name>} options (values as Spark passes them: text, JSON when it parses).
   */
  static Map<String, String> map(String bucket, String storageOptionsJson,
      Map<String, String> storageDotOptions, OptionRegistry registry)
      throws ListingNativeEngine.NotNative {
    Map<String, String> out = new LinkedHashMap<>();
    for (Map.Entry<String, String> e
        : settings(storageOptionsJson, storageDotOptions, registry).entrySet()) {
      out.put("fs.s3a.bucket." + bucket + "." + e.getKey(), e.getValue());
    }
    return out;
  }

  /** The S3A settings (names below {@code fs.s3a.bucket.<bucket>.}) the options make. */
  static Map<String, String> settings(String storageOptionsJson,
      Map<String, String> storageDotOptions, OptionRegistry registry)
      throws ListingNativeEngine.NotNative {
    Map<String, JsonNode> given = new LinkedHashMap<>();
    String text = storageOptionsJson == null ? "" : storageOptionsJson.trim();
    if (!text.isEmpty()) {
      JsonNode node;
      try {
        node = JSON.readTree(text);
      } catch (Exception e) {
        throw new ListingNativeEngine.NotNative("option storage_options is not a JSON object");
      }
      if (!node.isObject()) {
        throw new ListingNativeEngine.NotNative("option storage_options is not a JSON object");
      }
      node.fields().forEachRemaining(f -> given.put(f.getKey(), f.getValue()));
    }
    for (Map.Entry<String, String> e : storageDotOptions.entrySet()) {
      given.put(e.getKey(), value(e.getValue()));  // storage.<name> wins, as in SourceConfig
    }
    Map<String, String> s3a = new LinkedHashMap<>();
    Roles roles = new Roles();
    for (Map.Entry<String, JsonNode> e : given.entrySet()) {
      if (e.getValue() != null && !e.getValue().isNull()) {
        apply(registry.s3Options.get(e.getKey()), e.getKey(), e.getValue(), s3a, roles,
            registry);
      }
    }
    roles.credentials(s3a);
    roles.endpoint(s3a);
    roles.encryption(s3a);
    return s3a;
  }

  /** One option (or key) {@code path} with value {@code v}, as {@code option} maps it. */
  private static void apply(OptionRegistry.StorageOption option, String path, JsonNode v,
      Map<String, String> s3a, Roles roles, OptionRegistry registry)
      throws ListingNativeEngine.NotNative {
    if (option == null) {
      throw new ListingNativeEngine.NotNative("storage option " + path + " is not in the s3 "
          + "storage allowlist");
    }
    switch (option.use) {
      case "keys" -> {
        for (Map.Entry<String, JsonNode> c : fields(path, v).entrySet()) {
          apply(option.keys.get(c.getKey()), path + "." + c.getKey(), c.getValue(), s3a, roles,
              registry);
        }
      }
      case "python" -> throw new ListingNativeEngine.NotNative("storage option " + path + " "
          + option.why);
      case "skip" -> mapped(option, path, v, registry);
      case "role" -> roles.give(option.to, path, mapped(option, path, v, registry), option);
      default -> {  // setting
        String setting = convert(option, path, v, registry);
        if (setting != null) {
          s3a.put(option.to, setting);
        }
      }
    }
  }

  /**
   * The value as text ({@code true}/{@code false} for a bool), through the option's value
   * table when it has one: a value not in it keeps the Python engine.
   */
  private static String mapped(OptionRegistry.StorageOption option, String path, JsonNode v,
      OptionRegistry registry) throws ListingNativeEngine.NotNative {
    String t = option.kind.equals("bool") ? String.valueOf(bool(path, v, registry))
        : text(option, path, v);
    if (option.values.isEmpty()) {
      return t;
    }
    if (!option.values.containsKey(t)) {
      throw new ListingNativeEngine.NotNative("storage option " + path
          + (option.secret ? "" : "=" + t) + " " + option.why);
    }
    return option.values.get(t);
  }

  /** A setting's text, or null when the option sets nothing (a false flag). */
  private static String convert(OptionRegistry.StorageOption option, String path, JsonNode v,
      OptionRegistry registry) throws ListingNativeEngine.NotNative {
    return switch (option.convert) {
      case "count" -> integer(option, path, v).toString();
      case "millis" -> millis(path, v, registry);
      // botocore counts the first attempt in total_max_attempts; S3A's setting does not
      case "retries_of_attempts" ->
          integer(option, path, v).subtract(BigInteger.ONE).max(BigInteger.ZERO).toString();
      case "flag" -> bool(path, v, registry) ? "true" : null;
      default -> mapped(option, path, v, registry);
    };
  }

  /** What the options give each role, and the option that gave it (for reasons). */
  private static final class Roles {
    private final Map<String, String> values = new LinkedHashMap<>();
    private final Map<String, String> from = new LinkedHashMap<>();

    void give(String role, String path, String value, OptionRegistry.StorageOption option)
        throws ListingNativeEngine.NotNative {
      if (role.equals("addressing_style") && !ADDRESSING.contains(value)) {
        throw new ListingNativeEngine.NotNative("storage option " + path + "=" + value + " "
            + option.why);
      }
      values.put(role, value);
      from.put(role, path);
    }

    private String get(String role) {
      return values.get(role);
    }

    /** The credentials provider and its keys; anonymous access takes none. */
    void credentials(Map<String, String> s3a) throws ListingNativeEngine.NotNative {
      String key = get("access_key");
      String secret = get("secret_key");
      String token = get("session_token");
      String given = key != null ? from.get("access_key") : secret != null
          ? from.get("secret_key") : from.get("session_token");
      if ("true".equals(get("anonymous")) && given != null) {
        throw new ListingNativeEngine.NotNative("storage options " + from.get("anonymous")
            + " and " + given + " together");
      }
      if ((key == null) != (secret == null)) {
        throw new ListingNativeEngine.NotNative("storage option " + given + " needs "
            + (key == null ? "an access key" : "a secret key") + " too");
      }
      if (token != null && key == null) {
        throw new ListingNativeEngine.NotNative("storage option " + given + " needs an access "
            + "key and a secret key too");
      }
      if ("true".equals(get("anonymous"))) {
        s3a.put("aws.credentials.provider", ANONYMOUS);
      } else if (key != null) {
        s3a.put("access.key", key);
        s3a.put("secret.key", secret);
        if (token != null) {
          s3a.put("session.token", token);
        }
        s3a.put("aws.credentials.provider", token != null ? TEMPORARY : SIMPLE);
      }
    }

    /** The endpoint, TLS from its scheme, addressing style and region. */
    void endpoint(Map<String, String> s3a) throws ListingNativeEngine.NotNative {
      String endpoint = get("endpoint");
      String addressing = get("addressing_style");
      if (endpoint != null) {
        String lower = endpoint.toLowerCase(Locale.ROOT);
        if (!lower.startsWith("http://") && !lower.startsWith("https://")) {
          throw new ListingNativeEngine.NotNative("storage option " + from.get("endpoint")
              + " is not an http(s) URL");
        }
        if (lower.substring(lower.indexOf("://") + 3).contains("@")) {
          throw new ListingNativeEngine.NotNative("storage option " + from.get("endpoint")
              + " holds credentials");
        }
        s3a.put("endpoint", endpoint);
        s3a.put("connection.ssl.enabled", String.valueOf(lower.startsWith("https://")));
      }
      // botocore addresses a custom endpoint path-style unless told "virtual"; AWS's own
      // endpoints virtual-host style unless told "path"
      boolean pathStyle = addressing == null || addressing.equals("auto")
          ? endpoint != null : addressing.equals("path");
      if (addressing != null || endpoint != null) {
        s3a.put("path.style.access", String.valueOf(pathStyle));
      }
      if (get("region") != null) {
        s3a.put("endpoint.region", get("region"));
      }
    }

    /** Server-side encryption: S3A's algorithm name (the option's value table) and key. */
    void encryption(Map<String, String> s3a) throws ListingNativeEngine.NotNative {
      String algorithm = get("encryption_algorithm");
      String kmsKey = get("encryption_kms_key");
      String customerKey = get("encryption_customer_key");
      if (algorithm == null) {
        if (kmsKey != null || customerKey != null) {
          throw new ListingNativeEngine.NotNative("storage option " + from.get(
              kmsKey != null ? "encryption_kms_key" : "encryption_customer_key")
              + " needs an encryption algorithm too");
        }
        return;
      }
      boolean customer = algorithm.equals("SSE-C");
      if (customer && customerKey == null) {
        throw new ListingNativeEngine.NotNative("storage option "
            + from.get("encryption_algorithm") + " needs an SSE-C key too");
      }
      s3a.put("encryption.algorithm", algorithm);
      String key = customer ? customerKey : kmsKey;
      if (key != null) {
        s3a.put("encryption.key", key);
      }
    }
  }

  private static JsonNode value(String text) {
    String t = text.trim();
    if (t.startsWith("{") || t.startsWith("[") || t.equals("true") || t.equals("false")
        || t.equals("null")) {
      try {
        return JSON.readTree(t);
      } catch (Exception e) {
        // a plain string, as listing.spark.option_values.storage_value keeps it
      }
    }
    return JSON.getNodeFactory().textNode(text);
  }

  private static Map<String, JsonNode> fields(String name, JsonNode v)
      throws ListingNativeEngine.NotNative {
    if (!v.isObject()) {
      throw new ListingNativeEngine.NotNative("storage option " + name + " is not an object");
    }
    Map<String, JsonNode> out = new LinkedHashMap<>();
    Iterator<Map.Entry<String, JsonNode>> it = v.fields();
    while (it.hasNext()) {
      Map.Entry<String, JsonNode> f = it.next();
      if (!f.getValue().isNull()) {
        out.put(f.getKey(), f.getValue());
      }
    }
    return out;
  }

  /** The value as the option's kind reads it (Python's kind parser; {@link OptionValues}):
   * text for a string or a choice, a URL for a url. */
  private static String text(OptionRegistry.StorageOption option, String name, JsonNode v)
      throws ListingNativeEngine.NotNative {
    String t = option.kind.equals("url") ? OptionValues.url(v) : OptionValues.text(v);
    if (t == null) {
      throw new ListingNativeEngine.NotNative("storage option " + name + " is not "
          + (option.kind.equals("url") ? "an http(s) URL" : "a string"));
    }
    return t;
  }

  private static boolean bool(String name, JsonNode v, OptionRegistry registry)
      throws ListingNativeEngine.NotNative {
    Boolean b = registry.values.bool(v);
    if (b == null) {
      throw new ListingNativeEngine.NotNative("storage option " + name + " is not a boolean");
    }
    return b;
  }

  /** An integer as Python's parse_int reads it, at least the option's minimum. */
  private static BigInteger integer(OptionRegistry.StorageOption option, String name,
      JsonNode v) throws ListingNativeEngine.NotNative {
    BigInteger n = OptionValues.integer(v);
    if (n == null || (option.minimum != null
        && n.compareTo(BigInteger.valueOf(option.minimum)) < 0)) {
      throw new ListingNativeEngine.NotNative("storage option " + name + " is not a count"
          + (option.minimum == null ? "" : " of at least " + option.minimum));
    }
    return n;
  }

  /** A duration as Python's parse_duration reads it (seconds: 30, 5s, 250ms) as a plain
   * count of milliseconds: Hadoop 3.3's S3A (Spark 3.5) reads its timeouts with getInt and
   * refuses a unit suffix such as "5000ms"; 3.4 and later read a plain number as
   * milliseconds, the unit these settings default to. */
  private static String millis(String name, JsonNode v, OptionRegistry registry)
      throws ListingNativeEngine.NotNative {
    Double seconds = registry.values.seconds(v);
    if (seconds == null) {
      throw new ListingNativeEngine.NotNative("storage option " + name + " is not a duration");
    }
    return String.valueOf(Math.round(seconds * 1000));
  }
}
