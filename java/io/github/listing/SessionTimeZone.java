package io.github.listing;

import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.util.Map;

import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The session time zone as a {@code listing} relation's or write's {@code timeZone} option.
 *
 * <p>WHY: Spark reads and writes a timestamp partition value ({@code ts=2026-01-01 06%3A00%3A00})
 * as a local time in {@code spark.sql.session.timeZone}; the Python source is created in a
 * Python worker from its options alone and cannot see the session. Spark's own file sources
 * take the same option ({@code timeZone}) over the session's zone, so a relation or write that
 * names one keeps it.
 */
final class SessionTimeZone {

  /** Spark's option name (DateTimeUtils.TIMEZONE_OPTION); ours is time_zone. */
  static final String OPTION = "timeZone";

  private SessionTimeZone() {}

  /** The session's zone id, as Spark's SQLConf spells it. */
  static String zone() {
    return SQLConf.get().sessionLocalTimeZone();
  }

  /** Whether {@code options} name a zone already (either spelling, any case). */
  static boolean named(Map<String, String> options) {
    for (String key : options.keySet()) {
      if (key.equalsIgnoreCase(OPTION) || key.equalsIgnoreCase("time_zone")) {
        return true;
      }
    }
    return false;
  }

  /** Whether {@code zone} is UTC (the listing source's default). */
  static boolean isUtc(String zone) {
    try {
      return ZoneId.of(zone, ZoneId.SHORT_IDS).normalized().equals(ZoneOffset.UTC);
    } catch (RuntimeException e) {
      return false;
    }
  }

  /**
   * {@code options} with the session's zone, or {@code options} itself when they name a
   * zone or (with {@code unlessUtc}) the session is on UTC.
   */
  static CaseInsensitiveStringMap withZone(CaseInsensitiveStringMap options, boolean unlessUtc) {
    String zone = zone();
    if (named(options.asCaseSensitiveMap()) || (unlessUtc && isUtc(zone))) {
      return options;
    }
    Map<String, String> out = new HashMap<>(options.asCaseSensitiveMap());
    out.put(OPTION, zone);
    return new CaseInsensitiveStringMap(out);
  }

  /** A copy of {@code options} with the session's zone unless they name one. */
  static Map<String, String> withZone(Map<String, String> options) {
    Map<String, String> out = new HashMap<>(options);
    if (!named(options)) {
      out.put(OPTION, zone());
    }
    return out;
  }
}
