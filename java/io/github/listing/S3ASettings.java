package io.github.listing;

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
 * plans. Every option either maps to a setting with the same meaning, changes nothing a read
 * returns and is skipped, or is a reason to stay on the Python engine ({@link
 * ListingNativeEngine.NotNative}); reasons name the option, never its value.
 */
final class S3ASettings {

  private static final ObjectMapper JSON = new ObjectMapper();
  private static final String SIMPLE = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider";
  private static final String TEMPORARY =
      "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider";
  private static final String ANONYMOUS =
      "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider";
  /** Options that change how requests are retried, never what a read returns. */
  private static final Set<String> RETRY_MODES = Set.of("standard", "legacy");

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
    String endpoint = null;
    String addressing = null;
    boolean anon = false;
    String key = null;
    String secret = null;
    String token = null;
    String region = null;
    for (Map.Entry<String, JsonNode> e : given.entrySet()) {
      String name = e.getKey();
      JsonNode v = e.getValue();
      if (v == null || v.isNull()) {
        continue;
      }
      switch (name) {
        case "key": case "aws_access_key_id":
          key = text(name, v);
          break;
        case "secret": case "aws_secret_access_key":
          secret = text(name, v);
          break;
        case "token": case "aws_session_token":
          token = text(name, v);
          break;
        case "anon":
          anon = bool(name, v, registry);
          break;
        case "endpoint_url":
          endpoint = text(name, v);
          break;
        case "region": case "region_name":
          region = text(name, v);
          break;
        case "use_ssl":
          if (!bool(name, v, registry)) {
            throw new ListingNativeEngine.NotNative("storage option use_ssl=false has no S3A "
                + "equivalent (S3A takes the scheme from the endpoint URL)");
          }
          break;
        case "requester_pays":
          if (bool(name, v, registry)) {
            s3a.put("requester.pays.enabled", "true");
          }
          break;
        case "client_kwargs":
          for (Map.Entry<String, JsonNode> c : fields(name, v).entrySet()) {
            switch (c.getKey()) {
              case "endpoint_url" -> endpoint = text("client_kwargs.endpoint_url", c.getValue());
              case "region_name" -> region = text("client_kwargs.region_name", c.getValue());
              case "aws_access_key_id" -> key = text("client_kwargs.aws_access_key_id",
                  c.getValue());
              case "aws_secret_access_key" -> secret = text(
                  "client_kwargs.aws_secret_access_key", c.getValue());
              case "aws_session_token" -> token = text("client_kwargs.aws_session_token",
                  c.getValue());
              default -> throw unmapped("client_kwargs." + c.getKey());
            }
          }
          break;
        case "config_kwargs":
          addressing = config(fields(name, v), s3a, addressing);
          break;
        case "s3_additional_kwargs":
          encryption(fields(name, v), s3a);
          break;
        case "max_retries":  // ours: retries after the first attempt, as S3A's SDK setting
          s3a.put("attempts.maximum", String.valueOf(integer(name, v)));
          break;
        case "retry_mode":
          if (!text(name, v).equals("standard")) {
            throw unmapped("retry_mode=" + text(name, v));
          }
          break;
        default:
          // on_file_change (reads checked against the listed ETag), retry_max_backoff,
          // listing settings of ours, and anything else: Python's storage layer only
          throw unmapped(name);
      }
    }
    if (anon && (key != null || secret != null || token != null)) {
      throw new ListingNativeEngine.NotNative("storage options anon and credentials together");
    }
    if ((key == null) != (secret == null)) {
      throw new ListingNativeEngine.NotNative("storage options key and secret come together");
    }
    if (token != null && key == null) {
      throw new ListingNativeEngine.NotNative("storage option token without key and secret");
    }
    if (anon) {
      s3a.put("aws.credentials.provider", ANONYMOUS);
    } else if (key != null) {
      s3a.put("access.key", key);
      s3a.put("secret.key", secret);
      if (token != null) {
        s3a.put("session.token", token);
      }
      s3a.put("aws.credentials.provider", token != null ? TEMPORARY : SIMPLE);
    }
    if (endpoint != null) {
      String lower = endpoint.toLowerCase(Locale.ROOT);
      if (!lower.startsWith("http://") && !lower.startsWith("https://")) {
        throw new ListingNativeEngine.NotNative("storage option endpoint_url is not an http(s) "
            + "URL");
      }
      if (lower.substring(lower.indexOf("://") + 3).contains("@")) {
        throw new ListingNativeEngine.NotNative("storage option endpoint_url holds credentials");
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
    if (region != null) {
      s3a.put("endpoint.region", region);
    }
    Map<String, String> out = new LinkedHashMap<>();
    for (Map.Entry<String, String> e : s3a.entrySet()) {
      out.put("fs.s3a.bucket." + bucket + "." + e.getKey(), e.getValue());
    }
    return out;
  }

  /** botocore's Config as S3A settings; returns the addressing style, if given. */
  private static String config(Map<String, JsonNode> config, Map<String, String> s3a,
      String addressing) throws ListingNativeEngine.NotNative {
    String style = addressing;
    for (Map.Entry<String, JsonNode> c : config.entrySet()) {
      String name = "config_kwargs." + c.getKey();
      JsonNode v = c.getValue();
      switch (c.getKey()) {
        case "s3":
          for (Map.Entry<String, JsonNode> s : fields(name, v).entrySet()) {
            if (!s.getKey().equals("addressing_style")) {
              throw unmapped(name + "." + s.getKey());
            }
            style = text(name + ".addressing_style", s.getValue());
            if (!Set.of("auto", "path", "virtual").contains(style)) {
              throw unmapped(name + ".addressing_style=" + style);
            }
          }
          break;
        case "retries":
          for (Map.Entry<String, JsonNode> r : fields(name, v).entrySet()) {
            switch (r.getKey()) {
              // botocore counts the first attempt in total_max_attempts, not in max_attempts
              case "max_attempts" -> s3a.put("attempts.maximum",
                  String.valueOf(integer(name + ".max_attempts", r.getValue())));
              case "total_max_attempts" -> s3a.put("attempts.maximum", String.valueOf(
                  Math.max(0, integer(name + ".total_max_attempts", r.getValue()) - 1)));
              case "mode" -> {
                if (!RETRY_MODES.contains(text(name + ".mode", r.getValue()))) {
                  throw unmapped(name + ".mode=" + r.getValue().asText());
                }
              }
              default -> throw unmapped(name + "." + r.getKey());
            }
          }
          break;
        case "connect_timeout":
          s3a.put("connection.establish.timeout", millis(name, v));
          break;
        case "read_timeout":
          s3a.put("connection.timeout", millis(name, v));
          break;
        case "max_pool_connections":
          s3a.put("connection.maximum", String.valueOf(integer(name, v)));
          break;
        case "region_name":
          s3a.put("endpoint.region", text(name, v));
          break;
        default:
          throw unmapped(name);
      }
    }
    return style;
  }

  /** s3fs's SSE request parameters as S3A's encryption settings. */
  private static void encryption(Map<String, JsonNode> extra, Map<String, String> s3a)
      throws ListingNativeEngine.NotNative {
    String algorithm = null;
    String keyId = null;
    String customerKey = null;
    for (Map.Entry<String, JsonNode> e : extra.entrySet()) {
      String name = "s3_additional_kwargs." + e.getKey();
      switch (e.getKey()) {
        case "ServerSideEncryption" -> algorithm = text(name, e.getValue());
        case "SSEKMSKeyId" -> keyId = text(name, e.getValue());
        case "SSECustomerAlgorithm" -> {
          if (!text(name, e.getValue()).equals("AES256")) {
            throw unmapped(name);
          }
          algorithm = "SSE-C";
        }
        case "SSECustomerKey" -> customerKey = text(name, e.getValue());
        default -> throw unmapped(name);
      }
    }
    if (algorithm == null) {
      if (keyId != null || customerKey != null) {
        throw new ListingNativeEngine.NotNative("storage options SSEKMSKeyId or SSECustomerKey "
            + "without an algorithm");
      }
      return;
    }
    switch (algorithm) {
      case "AES256" -> s3a.put("encryption.algorithm", "SSE-S3");
      case "aws:kms" -> s3a.put("encryption.algorithm", "SSE-KMS");
      case "aws:kms:dsse" -> s3a.put("encryption.algorithm", "DSSE-KMS");
      case "SSE-C" -> {
        if (customerKey == null) {
          throw new ListingNativeEngine.NotNative("storage option SSECustomerAlgorithm without "
              + "SSECustomerKey");
        }
        s3a.put("encryption.algorithm", "SSE-C");
      }
      default -> throw unmapped("s3_additional_kwargs.ServerSideEncryption");
    }
    String key = "SSE-C".equals(algorithm) ? customerKey : keyId;
    if (key != null) {
      s3a.put("encryption.key", key);
    }
  }

  private static ListingNativeEngine.NotNative unmapped(String name) {
    return new ListingNativeEngine.NotNative("storage option " + name + " has no equivalent in "
        + "Spark's S3A connector (the Python engine's storage layer honours it)");
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

  private static String text(String name, JsonNode v) throws ListingNativeEngine.NotNative {
    if (!v.isValueNode()) {
      throw new ListingNativeEngine.NotNative("storage option " + name + " is not a value");
    }
    return v.asText();
  }

  private static boolean bool(String name, JsonNode v, OptionRegistry registry)
      throws ListingNativeEngine.NotNative {
    Boolean b = v.isBoolean() ? Boolean.valueOf(v.booleanValue()) : registry.bool(v.asText());
    if (b == null) {
      throw new ListingNativeEngine.NotNative("storage option " + name + " is not a boolean");
    }
    return b;
  }

  private static int integer(String name, JsonNode v) throws ListingNativeEngine.NotNative {
    try {
      int n = v.isInt() ? v.intValue() : Integer.parseInt(v.asText().trim());
      if (n < 0) {
        throw new NumberFormatException();
      }
      return n;
    } catch (NumberFormatException e) {
      throw new ListingNativeEngine.NotNative("storage option " + name + " is not a count");
    }
  }

  /** botocore's seconds (a number) as S3A's duration text in milliseconds. */
  private static String millis(String name, JsonNode v) throws ListingNativeEngine.NotNative {
    try {
      double seconds = v.isNumber() ? v.doubleValue() : Double.parseDouble(v.asText().trim());
      if (seconds < 0 || Double.isNaN(seconds)) {
        throw new NumberFormatException();
      }
      return Math.round(seconds * 1000) + "ms";
    } catch (NumberFormatException e) {
      throw new ListingNativeEngine.NotNative("storage option " + name + " is not seconds");
    }
  }
}
