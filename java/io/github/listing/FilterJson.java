package io.github.listing;

import org.apache.spark.sql.sources.IsNotNull;
import org.apache.spark.sql.sources.IsNull;
import org.apache.spark.sql.sources.Not;

/**
 * A data source filter as the JSON {@code listing.spark.filters.from_jvm} reads: what
 * {@link ListingFilterOption} hands the source and {@link ListingFileIndex} its planner.
 */
final class FilterJson {

  private FilterJson() {
  }

  /**
   * {@code {"kind": "EqualTo", "attribute": "date", "value": "2025-01-03"}} for a leaf filter
   * pyspark's form has, {@code {"kind": "Not", "child": ...}}; null for any other filter.
   * Values other than numbers, booleans and strings travel as their text, as py4j hands them
   * to {@code listing.spark.filters.from_jvm}.
   */
  static String json(org.apache.spark.sql.sources.Filter f) {
    if (f instanceof Not) {
      String child = json(((Not) f).child());
      return child == null ? null : "{\"kind\":\"Not\",\"child\":" + child + "}";
    }
    String kind = f.getClass().getSimpleName();
    String[] refs = f.references();
    if (refs.length != 1) {
      return null;
    }
    String head = "{\"kind\":\"" + kind + "\",\"attribute\":" + string(refs[0]);
    if (f instanceof IsNull || f instanceof IsNotNull) {
      return head + "}";
    }
    Object value;
    try {
      value = f.getClass().getMethod(kind.equals("In") ? "values" : "value").invoke(f);
    } catch (ReflectiveOperationException e) {
      return null;  // And, Or, AlwaysTrue, ...: not a leaf pyspark's form has
    }
    if (kind.equals("In")) {
      StringBuilder values = new StringBuilder("[");
      for (Object v : (Object[]) value) {
        String text = literal(v);
        if (text == null) {
          return null;
        }
        values.append(values.length() > 1 ? "," : "").append(text);
      }
      return head + ",\"value\":" + values + "]}";
    }
    String text = literal(value);
    return text == null ? null : head + ",\"value\":" + text + "}";
  }

  private static String literal(Object v) {
    if (v == null) {
      return "null";
    }
    if (v instanceof Boolean || v instanceof Integer || v instanceof Long
        || v instanceof Short || v instanceof Byte) {
      return v.toString();
    }
    if (v instanceof Double || v instanceof Float) {
      double d = ((Number) v).doubleValue();
      return Double.isFinite(d) ? v.toString() : null;
    }
    if (v instanceof java.sql.Timestamp) {  // an instant: its text in the JVM's zone is not
      return string(((java.sql.Timestamp) v).toInstant().toString());
    }
    return string(v.toString());
  }

  private static String string(String s) {
    StringBuilder out = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < 0x20) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    return out.append('"').toString();
  }
}
