"""py4j's DEBUG records never carry a storage secret: ``listing.session()`` puts a filter
on the loggers that echo commands to the JVM (issue 44: with the root logger at DEBUG,
py4j's "Command to send" record held a ``CREATE TABLE``'s whole text).

The positive control runs the same commands with the filter taken off: the values then
show, so the test sees the records it checks."""

from __future__ import annotations

import json
import logging
import uuid

import pytest

from listing.redact import MASK, SecretFilter
from listing.spark import redaction

SECRETS = {"secret": f"s3cr3t-{uuid.uuid4().hex}", "key": f"AKIA{uuid.uuid4().hex[:16]}",
           "SSECustomerKey": f"sse-{uuid.uuid4().hex}", "token": f"tok-{uuid.uuid4().hex}"}


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(self.format(record))


def commands(spark) -> list[str]:
    """Send commands carrying every secret through py4j with py4j at DEBUG; its records."""
    handler, logger = Collect(), logging.getLogger("py4j")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        spark.sql(f"EXPLAIN CREATE TABLE t_{uuid.uuid4().hex[:8]} USING listing OPTIONS ("
                  f"path '/nowhere', 'storage.secret' '{SECRETS['secret']}', "
                  f"'storage.key' '{SECRETS['key']}', 'storage.s3_additional_kwargs' "
                  f"'{json.dumps({'SSECustomerKey': SECRETS['SSECustomerKey']})}')")
        (spark.read.format("listing").option("storage.token", SECRETS["token"])
         .option("storage_options", json.dumps({"secret": SECRETS["secret"]})))
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    return [t for t in handler.texts if "Command to send" in t]


def test_py4j_records_carry_no_secret(spark):
    texts = commands(spark)
    assert any("storage.secret" in t for t in texts)  # the records checked are there
    assert any("storage.token" in t for t in texts)
    for text in texts:
        for name, value in SECRETS.items():
            assert value not in text, (name, text)
    assert any(MASK in t for t in texts)


def test_without_the_filter_the_secrets_show(spark):
    """Positive control: the same commands with the filter off leak every value."""
    loggers = [logging.getLogger(n) for n in redaction.ECHOING_LOGGERS]
    taken = [(lg, f) for lg in loggers for f in list(lg.filters)
             if isinstance(f, SecretFilter)]
    assert taken, "listing.session() installed no filter"
    for lg, f in taken:
        lg.removeFilter(f)
    try:
        joined = "\n".join(commands(spark))
    finally:
        for lg, f in taken:
            lg.addFilter(f)
    for name, value in SECRETS.items():
        assert value in joined, name


@pytest.mark.parametrize(("text", "kept"), [
    ("Map(storage.key -> *********(redacted))", "Map(storage.key -> *********(redacted))"),
    ("storage.secret=abc, path=/x", "storage.secret=*********(redacted), path=/x"),
    ("sstorage.secret\nsabc\ne", "sstorage.secret\ns*********(redacted)\ne"),
    ("no option here: secret key token", "no option here: secret key token"),
])
def test_the_log_pattern_masks_values_only(text, kept):
    record = logging.LogRecord("py4j.clientserver", logging.DEBUG, "", 0, text, None, None)
    SecretFilter(redaction.log_pattern()).filter(record)
    assert record.getMessage() == kept
