"""Spark session helpers: ``listing.session()`` and ``listing.register(spark)``.

The ``listing`` source prunes files with Spark's pushed filters only when the
stale-pushdown guard (a small optimizer rule, see :mod:`listing.spark.extension`) is in the
session: without it Spark 4.1–4.3 can replay a pruned read for a later unfiltered query.
``session()`` builds a session with everything in place; ``register()`` adapts to a
session built elsewhere and says what it could not configure.

Spark 3.5 has no Python data sources (``pyspark.sql.datasource``): there ``listing`` is the
extension jar's JVM source (``ListingRelationProvider``), which reads with Spark's own file
readers over the files our planner lists; ``register()`` then registers no Python source, only
the planner that JVM source asks (:mod:`listing.spark.file_index`).
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from listing import formats
from listing.spark import redaction
from listing.spark.config import hand_registry_to_jvm
from listing.spark.extension import (
    add_to_running_driver,
    check_supported,
    extension_conf,
    extension_jar,
    is_guard_active,
    jvm_source_loaded,
)
from listing.spark.file_index import register_planner
from listing.spark.java_runtime import require_java
from listing.spark.s3a import connector_jars

log = logging.getLogger("listing.spark")
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
_LIST_CONFS = {"spark.jars", "spark.sql.extensions"}
UNIX_SOCKETS_CONF = "spark.python.unix.domain.socket.enabled"


@dataclass
class Registration:
    """What ``register`` set up, and what it could not."""

    guarded: bool
    pushdown: bool
    problems: list[str] = field(default_factory=list)

    @property
    def prunes_with_spark_filters(self) -> bool:
        return self.guarded and self.pushdown


def session(app_name: str = "listing", master: str | None = None,
            conf: dict[str, str] | None = None, guard: bool = True,
            ui: bool = True) -> SparkSession:
    """A SparkSession ready for the toolkit: Python workers run this interpreter and talk
    to the JVM over Unix sockets where the platform has them, filter pushdown is on, the
    extension is installed (the wheel's jar; compiled on first use in a source checkout),
    Spark's S3A connector is on the classpath when it was fetched (:mod:`listing.spark.s3a`;
    never fetched here), and the ``listing`` source is registered. Spark's UI and console
    progress bar stay as Spark sets them; ``ui=False`` turns both off (tests). ``conf``
    overrides any of these settings. With no Java 17 to start, a
    :class:`~listing.spark.java_runtime.JavaMissingError` says how to install one. Secret
    option values are masked in the records of the loggers that echo commands to the JVM
    (py4j's; :func:`redaction.install_log_filter`)."""
    redaction.install_log_filter()
    check_supported()
    if SparkContext._active_spark_context is None:  # a JVM is to start: say if it cannot
        require_java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if master or not os.environ.get("MASTER"):
        builder = builder.master(master or "local[2]")
    settings = {
        "spark.pyspark.python": os.environ["PYSPARK_PYTHON"],
        PUSHDOWN_CONF: "true",
        # errors raised in Python workers (a bad option, file or value) reach the user with
        # our message on the first line instead of under a worker traceback
        "spark.sql.execution.pyspark.udf.hideTraceback.enabled": "true",
        # secrets given as storage options must not show in plans, the UI or the event log
        # (the SQL settings are set by register: listing.spark.redaction)
        **redaction.secrets_conf(),
    }
    if not ui:
        settings.update({"spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"})
    if hasattr(socket, "AF_UNIX"):
        # the JVM talks to Python workers over TCP loopback by default, and a task's last
        # small writes then wait out a delayed ACK at the end of every Python read's task
        # (docs/spark.md gives the figure measured on local[2])
        settings[UNIX_SOCKETS_CONF] = "true"
    for key, value in (conf or {}).items():
        settings[key] = value
    s3a = ",".join(str(j) for j in connector_jars())
    if s3a:  # Spark's S3A connector, fetched by `make s3a` / python -m listing.spark.s3a
        settings["spark.jars"] = ",".join(filter(None, (settings.get("spark.jars"), s3a)))
    if guard:
        jar = extension_jar()
        if add_to_running_driver(jar):  # spark-submit started the driver JVM: keep its
            running = SparkConf()       # --jars and extensions, joined with ours below
            for key in _LIST_CONFS:
                if running.get(key) and not settings.get(key):
                    settings[key] = str(running.get(key))
        for key, value in extension_conf(jar).items():
            if key in _LIST_CONFS and settings.get(key):  # keep the caller's jars and
                listed = [v.strip() for v in settings[key].split(",")]  # extensions, once
                value = ",".join(listed + [value] if value not in listed else listed)
            settings[key] = value
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    register(spark)
    return spark


_warned = False


def register(spark: SparkSession) -> Registration:
    """Register the ``listing`` source on ``spark``, and set its SQL redaction settings so
    storage secrets are masked in Spark's texts (:mod:`listing.spark.redaction`).

    With the guard and pushdown on, the source prunes with Spark's filters. Otherwise it is
    registered without ``pushFilters`` (correct, never stale, but it lists the whole table
    unless the filter is given as the ``where`` option or through ``to_spark``), and a
    one-time warning says how to enable pruning.
    """
    global _warned
    python_sources = check_supported(spark.version).python_sources
    if not python_sources:  # Spark 3.5: the JVM source prunes with Spark's partition filters
        result = Registration(guarded=jvm_source_loaded(spark), pushdown=True)
    else:
        result = Registration(guarded=is_guard_active(spark),
                              pushdown=(spark.conf.get(PUSHDOWN_CONF, "false")
                                        or "").lower() == "true")
    if not result.guarded and not python_sources:
        result.problems.append(
            f"the listing extension jar is not on this session's classpath, so Spark "
            f"{spark.version} has no listing source (spark.jars is a static conf: build the "
            "session with listing.session(), or add "
            "listing.spark.extension.extension_conf(extension_jar()) to its builder)")
    elif not result.guarded:
        result.problems.append(
            "the stale-pushdown guard is not installed (spark.sql.extensions is a static "
            "conf: build the session with listing.session(), or add "
            "listing.spark.extension.extension_conf(extension_jar()) to its builder)")
    if not result.pushdown:
        result.problems.append(f"{PUSHDOWN_CONF} is false; set it to true")
    redaction.install_log_filter()  # and in py4j's DEBUG records of commands
    try:  # storage secrets masked in plans, the SQL tab and the event log
        redaction.apply(spark)
    except Exception as err:  # noqa: BLE001 - a session that refuses them still reads
        warnings.warn(f"listing could not set Spark's SQL redaction settings ({err}): storage "
                      "secrets given as options may show in Spark's plans", stacklevel=2)
    _register_source(spark, result.prunes_with_spark_filters, python_sources)
    if result.guarded:  # the extension's native hand-off asks our planner for its files
        register_planner(spark)
    session_ref = weakref.ref(spark)

    def refresh() -> None:
        live = session_ref()
        if live is not None:
            _register_source(live, result.prunes_with_spark_filters, python_sources)

    formats.on_register(refresh)
    if result.problems and not _warned:
        _warned = True
        warnings.warn("listing source registered without pruning by Spark filters: "
                      + "; ".join(result.problems), stacklevel=2)
    return result


#: formats registered from Python, for the extension's hand-off rule: a user's class under
#: a built-in name ("csv") must stay on our reader (ListingNativeEngine.java)
PYTHON_FORMATS_CONF = "spark.listing.pythonFormats"
#: whether the registered ``listing`` source takes Spark's filters ("true"/"false"), for
#: listing.explain, which must not claim pruning the source does not do
SOURCE_PRUNES_CONF = "spark.listing.sourcePrunes"


def _register_source(spark: SparkSession, pruning: bool, python_sources: bool = True) -> None:
    """The ``listing`` source on ``spark`` and the confs the extension reads; where Spark has
    no Python data sources (3.5), the extension's JVM source is it, and only the confs are
    set."""
    if python_sources:  # pyspark.sql.datasource, polymorphic UDTFs: Spark 4 only
        from listing.spark.partitions import register_partitions_function
        from listing.spark.source import (
            ListingDataSource,
            UnguardedListingDataSource,
            with_formats,
        )

        base: type[Any] = ListingDataSource if pruning else UnguardedListingDataSource
        spark.dataSource.register(with_formats(base, spark))
    spark.conf.set(SOURCE_PRUNES_CONF, str(pruning).lower())
    spark.conf.set(PYTHON_FORMATS_CONF, ",".join(sorted(formats.registered())))
    hand_registry_to_jvm(spark)
    if python_sources:
        register_partitions_function(spark)
