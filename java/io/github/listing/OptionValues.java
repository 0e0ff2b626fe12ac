package io.github.listing;

import java.math.BigInteger;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * Option values of the kinds the extension reads, parsed exactly as Python's
 * {@code listing.options} parses them (its kind parsers, {@code KINDS}): a boolean, an
 * integer, a duration in seconds, a URL and text. Each method answers Python's typed value,
 * or null where Python refuses the value.
 *
 * <p>WHY here and not at each call site: the JVM sees Spark's raw options before any Python
 * runs, so it must read them as Python will; a value Python accepts that the JVM refused kept
 * the read on the Python engine without a word ({@code "5s"}, {@code "1_000"}). The spellings
 * (booleans, the duration pattern and its units) come from the option registry's JSON; the
 * shared vectors ({@code tests/vectors/option_values.json}) hold these methods and Python's
 * parsers to the same answers for every kind in {@link #KINDS}.
 */
final class OptionValues {

  /** The option kinds (listing.options.KINDS) this class reads as Python does. */
  static final Set<String> KINDS = Set.of("bool", "int", "duration", "url", "string",
      "choice");

  private static final Pattern INTEGER = Pattern.compile("[+-]?\\d+",
      Pattern.UNICODE_CHARACTER_CLASS);
  private static final Pattern SCHEME = Pattern.compile("[A-Za-z][A-Za-z0-9+.-]*");

  private final Set<String> trueSpellings;
  private final Set<String> falseSpellings;
  private final Pattern duration;
  private final Map<String, Double> durationUnits;

  OptionValues(JsonNode booleans, JsonNode durations) {
    Set<String> t = new LinkedHashSet<>();
    Set<String> f = new LinkedHashSet<>();
    booleans.path("true").forEach(n -> t.add(n.asText()));
    booleans.path("false").forEach(n -> f.add(n.asText()));
    trueSpellings = Collections.unmodifiableSet(t);
    falseSpellings = Collections.unmodifiableSet(f);
    Map<String, Double> units = new LinkedHashMap<>();
    durations.path("units").fields().forEachRemaining(
        u -> units.put(u.getKey(), u.getValue().asDouble()));
    durationUnits = Collections.unmodifiableMap(units);
    String pattern = durations.path("pattern").asText();
    if (t.isEmpty() || f.isEmpty() || pattern.isEmpty() || units.isEmpty()) {
      throw new IllegalArgumentException("the option registry has no boolean spellings or "
          + "duration pattern and units");
    }
    // Python's str patterns match Unicode digits and spaces for \d and \s
    duration = Pattern.compile(pattern, Pattern.UNICODE_CHARACTER_CLASS);
  }

  Set<String> trueSpellings() {
    return trueSpellings;
  }

  Set<String> falseSpellings() {
    return falseSpellings;
  }

  String durationPattern() {
    return duration.pattern();
  }

  Map<String, Double> durationUnits() {
    return durationUnits;
  }

  /** listing.options.parse_bool: a JSON boolean, or a spelling of one (any case). */
  Boolean bool(JsonNode v) {
    if (v.isBoolean()) {
      return v.booleanValue();
    }
    return v.isValueNode() && !v.isNull() ? bool(v.asText()) : null;
  }

  /** listing.options.parse_bool of text. */
  Boolean bool(String value) {
    String v = strip(value).toLowerCase(Locale.ROOT);
    if (trueSpellings.contains(v)) {
      return Boolean.TRUE;
    }
    return falseSpellings.contains(v) ? Boolean.FALSE : null;
  }

  /** listing.options.parse_int: a JSON integer, or text {@code int()} reads once every
   * {@code _} is dropped; never a boolean or a fraction. */
  static BigInteger integer(JsonNode v) {
    if (v.isIntegralNumber()) {
      return v.bigIntegerValue();
    }
    return v.isTextual() ? integer(v.textValue()) : null;
  }

  /** listing.options.parse_int of text. */
  static BigInteger integer(String value) {
    String t = strip(strip(value).replace("_", ""));
    return INTEGER.matcher(t).matches() ? new BigInteger(asciiDigits(t)) : null;
  }

  /** listing.options.parse_duration: seconds, from a JSON number or text such as
   * {@code 30}, {@code 5s}, {@code 250ms} (the registry's pattern and units); never negative. */
  Double seconds(JsonNode v) {
    if (v.isNumber()) {
      double s = v.doubleValue();
      return s < 0 || Double.isNaN(s) ? null : s;
    }
    if (!v.isValueNode() || v.isNull()) {
      return null;
    }
    Matcher m = duration.matcher(strip(v.asText()).toLowerCase(Locale.ROOT));
    if (!m.matches()) {
      return null;
    }
    String unit = m.group(2);
    if (!unit.isEmpty() && !durationUnits.containsKey(unit)) {
      return null;
    }
    return Double.parseDouble(asciiDigits(m.group(1))) * durationUnits.getOrDefault(unit, 1.0);
  }

  /** A registry option's choice as Python's Option.parse folds it (spaces around, any
   * case), before it is checked against the choices. */
  static String choice(String value) {
    return strip(value).toLowerCase(Locale.ROOT);
  }

  /** A text value (Python's storage allowlist takes strings only for text kinds). */
  static String text(JsonNode v) {
    return v.isTextual() ? v.textValue() : null;
  }

  /** listing.options.parse_url: an {@code http://} or {@code https://} URL with a host part
   * (as Python's {@code urlsplit} reads its scheme and network location), kept as given. */
  static String url(JsonNode v) {
    String given = text(v);
    if (given == null) {
      return null;
    }
    StringBuilder b = new StringBuilder();  // urlsplit drops tabs and newlines anywhere ...
    for (char c : given.toCharArray()) {
      if (c != '\t' && c != '\n' && c != '\r') {
        b.append(c);
      }
    }
    String u = b.toString();
    int start = 0;  // ... and C0 controls and spaces in front
    while (start < u.length() && u.charAt(start) <= ' ') {
      start++;
    }
    u = u.substring(start);
    int colon = u.indexOf(':');
    if (colon < 0 || !SCHEME.matcher(u.substring(0, colon)).matches()) {
      return null;
    }
    String scheme = u.substring(0, colon).toLowerCase(Locale.ROOT);
    String rest = u.substring(colon + 1);
    if (!(scheme.equals("http") || scheme.equals("https")) || !rest.startsWith("//")) {
      return null;
    }
    String netloc = rest.substring(2).split("[/?#]", -1)[0];
    // an IPv6 address's brackets open and close, or urlsplit fails
    boolean brackets = netloc.replaceAll("[^\\[]", "").isEmpty()
        == netloc.replaceAll("[^\\]]", "").isEmpty();
    return netloc.isEmpty() || !brackets ? null : given;
  }

  /** Python's {@code str.strip()}: every character {@code str.isspace} calls a space. */
  static String strip(String s) {
    int from = 0;
    int to = s.length();
    while (from < to && isSpace(s.charAt(from))) {
      from++;
    }
    while (to > from && isSpace(s.charAt(to - 1))) {
      to--;
    }
    return s.substring(from, to);
  }

  private static boolean isSpace(char c) {
    return Character.isWhitespace(c) || Character.isSpaceChar(c) || c == '\u0085';
  }

  /** Unicode decimal digits (which Python's {@code int} and {@code float} read) as ASCII. */
  private static String asciiDigits(String s) {
    StringBuilder b = new StringBuilder(s.length());
    for (char c : s.toCharArray()) {
      b.append(Character.isDigit(c) ? (char) ('0' + Character.digit(c, 10)) : c);
    }
    return b.toString();
  }
}
