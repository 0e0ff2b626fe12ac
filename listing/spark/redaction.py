"""Secrets out of Spark's texts: the redaction settings a session needs, derived from the
storage allowlist's secret names (:func:`listing.options.storage_options.all_secret_names`).

Spark masks options in three ways, each with its own setting (Java regular expressions):

- ``spark.sql.redaction.options.regex`` (with ``spark.redaction.regex``): an option whose
  name or value matches has its whole value masked wherever Spark prints an options map
  (a read's or write's options, ``CREATE TEMPORARY VIEW ... USING``, ``INSERT ... WITH``).
  :func:`options_pattern` matches ``storage.<secret>`` names and JSON values holding a secret
  name as a key (``storage_options``, ``storage.client_kwargs``, ...).
- ``spark.sql.redaction.string.regex``: matched text is masked in ``EXPLAIN`` output and in
  the plan description the SQL tab and the event log keep (the parsed plan of a ``CREATE
  TABLE`` among them, which no options pattern reaches). :func:`string_pattern` matches the
  value after ``storage.<secret>`` and after a JSON ``"<secret>":``, keeping the names.
- a ``CREATE TABLE``'s options in the SQL tab's plan graph and the event log's plan info
  follow a pattern Spark reads from the options themselves; the extension's
  ``ListingTableSpecRedaction`` puts the session's two patterns there.

:func:`apply` sets the two SQL settings on a running session (``listing.register`` calls it);
``spark.redaction.regex`` is static, so :func:`secrets_conf` is for a session's builder.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from listing.options.registry import STORAGE_PREFIX
from listing.options.storage_options import all_secret_names
from listing.redact import SecretFilter

OPTIONS_CONF = "spark.sql.redaction.options.regex"
STRING_CONF = "spark.sql.redaction.string.regex"
SECRETS_CONF = "spark.redaction.regex"
#: Spark's defaults, kept alongside ours
SPARK_OPTIONS_DEFAULT = "(?i)url"
SPARK_SECRETS_DEFAULT = "(?i)secret|password|token|access[.]?key"
#: how Spark writes an option's name before its value: ``k -> v`` (a map), ``(k,v)`` (a
#: parsed OPTIONS list), ``k=v`` (a Java map), ``k: v``
_SEPARATOR = r"\s{0,2}(?:->|=|,|:)\s{0,2}"


def _names() -> str:
    return "|".join(re.escape(n) for n in sorted(all_secret_names(), key=lambda n: (-len(n), n)))


def options_pattern() -> str:
    """An option to mask whole: named ``storage.<secret>`` (``option.`` copies too), or a
    value holding ``"<secret>":`` (a JSON object of storage options)."""
    prefix = re.escape(STORAGE_PREFIX)
    return rf'(?i)(?:^|\.){prefix}(?:{_names()})$|"(?:{_names()})"\s*:'


def string_pattern() -> str:
    """The value text after ``storage.<secret>`` and after a JSON ``"<secret>":`` (quotes
    escaped or not), up to the value's end; a value Spark has masked already is left as is."""
    prefix = re.escape(STORAGE_PREFIX)
    return (rf'(?i)(?<={prefix}(?:{_names()}){_SEPARATOR})(?!\*)[^,)\s}}]+'
            rf'|(?<=\\?"(?:{_names()})\\?"\s{{0,2}}:\s{{0,2}}\\?")(?!\*)[^"\\]+')


def joined(current: str | None, ours: str) -> str:
    """``current`` (a setting's value) extended with ``ours``, unless it holds it already."""
    if not current:
        return ours
    if ours in current:
        return current
    return f"(?:{current})|(?:{ours})"


def secrets_conf() -> dict[str, str]:
    """Builder settings: ``spark.redaction.regex`` (static) with Spark's default and ours."""
    return {SECRETS_CONF: joined(SPARK_SECRETS_DEFAULT, options_pattern())}


def apply(spark: Any) -> None:
    """Set the SQL redaction settings on ``spark`` (runtime settings), each kept with what
    it held (Spark's default for the options pattern) and ours added."""
    current = spark.conf.get(OPTIONS_CONF, None) or SPARK_OPTIONS_DEFAULT
    spark.conf.set(OPTIONS_CONF, joined(current, options_pattern()))
    spark.conf.set(STRING_CONF, joined(spark.conf.get(STRING_CONF, None), string_pattern()))


#: the loggers that echo what the Python side sends to Spark's JVM (py4j logs every
#: command at DEBUG, a ``CREATE TABLE``'s text and every ``.option(...)`` among them)
ECHOING_LOGGERS = ("py4j.clientserver", "py4j.java_gateway", "py4j.protocol", "pyspark")


def log_pattern() -> str:
    """A Python pattern for the value after a secret option's name in any text: the name
    (``storage.<secret>``, or ``"<secret>"`` as a JSON key), the separator (``->``, ``=``,
    ``,``, ``:``, blanks, quotes, py4j's line break and string marker), the value (its
    last group: up to a blank, a quote, ``,``, ``)``, ``}`` or a backslash)."""
    prefix = re.escape(STORAGE_PREFIX)
    return (rf"(?i)({prefix}(?:{_names()})|\\?\"(?:{_names()})\\?\")"
            r"(['\"]?(?:\s{0,2}(?:->|=|,|:)\s{0,2}|\ns|\s{1,2})['\"\\]*)"
            r"((?!\*{9}|->)[^\s'\",)}\\]+)")


def install_log_filter() -> None:
    """Mask secret option values in the records of :data:`ECHOING_LOGGERS` (once per
    process): with py4j at DEBUG, its "Command to send" records carry every option a
    session is given. botocore's own DEBUG output is not masked (docs/security.md)."""
    global _log_filter
    if _log_filter is None:
        _log_filter = SecretFilter(log_pattern())
    for name in ECHOING_LOGGERS:
        logger = logging.getLogger(name)
        if _log_filter not in logger.filters:
            logger.addFilter(_log_filter)


_log_filter: SecretFilter | None = None
