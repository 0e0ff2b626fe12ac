package io.github.listing;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * The extension's answers to the shared test vectors (tests/vectors/*.json): run as
 * {@code java SharedVectors <registry.json> <vectors folder>}, it prints one JSON object
 * holding, per vector file, the Java method's answer to each case in order; the pytest that
 * runs it (tests/unit/options/test_shared_vectors.py) holds them to the cases' expected answers, and
 * Python's functions to the same.
 */
public final class SharedVectors {

  private static final ObjectMapper JSON = new ObjectMapper();

  private SharedVectors() {
  }

  public static void main(String[] args) throws Exception {
    OptionRegistry registry = OptionRegistry.parse(
        Files.readString(Path.of(args[0]), StandardCharsets.UTF_8));
    Path folder = Path.of(args[1]);
    ObjectNode out = JSON.createObjectNode();

    ArrayNode copies = out.putArray("catalog_copies");
    for (JsonNode c : cases(folder, "catalog_copies.json")) {
      Map<String, String> given = new LinkedHashMap<>();
      c.path("options").fields().forEachRemaining(
          f -> given.put(f.getKey().toLowerCase(java.util.Locale.ROOT), f.getValue().asText()));
      Map<String, String> opts =
          ListingNativeEngine.withoutCatalogCopies(given, registry.catalogCopyPrefix);
      copies.addObject().put("path", opts.get("path"))
          .put("format", opts.getOrDefault("format", registry.defaultOf("format")));
    }

    ArrayNode paths = out.putArray("table_paths");
    for (JsonNode c : cases(folder, "table_paths.json")) {
      String path = c.path("path").asText();
      try {
        paths.add(ListingNativeEngine.sparkPath(path, "path", ListingNativeEngine.isS3(path),
            registry));
      } catch (ListingNativeEngine.NotNative why) {
        paths.addNull();
      }
    }

    ArrayNode chars = out.putArray("characters");
    for (JsonNode c : cases(folder, "characters.json")) {
      try {
        chars.add(ListingNativeEngine.character(c.path("value").asText(), "delimiter"));
      } catch (ListingNativeEngine.NotNative why) {
        chars.addNull();
      }
    }

    ArrayNode headers = out.putArray("csv_headers");
    for (JsonNode c : cases(folder, "csv_headers.json")) {
      ArrayNode fields = headers.addArray();
      ListingNativeEngine.csvFields(c.path("line").asText(), c.path("sep").asText().charAt(0),
          c.path("quote").asText().charAt(0)).forEach(fields::add);
    }
    ArrayNode values = out.putArray("option_values");
    for (JsonNode c : cases(folder, "option_values.json")) {
      JsonNode v = c.path("value");
      Object typed = switch (c.path("kind").asText()) {
        case "bool" -> registry.values.bool(v);
        case "int" -> OptionValues.integer(v);
        case "duration" -> registry.values.seconds(v);
        case "url" -> OptionValues.url(v);
        case "string" -> OptionValues.text(v);
        case "choice" -> OptionValues.choice(v.asText());
        default -> throw new IllegalArgumentException("no kind " + c.path("kind"));
      };
      values.add(JSON.valueToTree(typed));
    }
    new java.util.TreeSet<>(OptionValues.KINDS).forEach(out.putArray("value_kinds")::add);
    System.out.println(out);
  }

  private static JsonNode cases(Path folder, String name) throws java.io.IOException {
    return JSON.readTree(Files.readString(folder.resolve(name), StandardCharsets.UTF_8))
        .path("cases");
  }
}
